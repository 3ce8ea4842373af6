//! Bindings of the DRUM solver.
use pyo3::prelude::*;

/// Adds the DRUM functions to the module.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
