//! PyO3 bindings: scenario in, columnar results out. No simulation logic lives here.
use pyo3::prelude::*;

mod drum;
mod sim;

/// The compiled core of the `rdmalab` Python package.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    drum::register(m)?;
    sim::register(m)?;
    Ok(())
}
