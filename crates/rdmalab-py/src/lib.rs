//! PyO3 bindings: scenario in, columnar results out. No simulation logic lives here.
use pyo3::prelude::*;
use rdmalab_alloc as _; // jemalloc on huge pages for the engine's memory (why: `rdmalab_alloc`)

mod chakra;
mod columns;
mod drum;
mod drum_network;
mod outcome;
mod results;
mod sim;

/// The compiled core of the `rdmalab` Python package.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    chakra::register(m)?;
    drum::register(m)?;
    drum_network::register(m)?;
    sim::register(m)?;
    Ok(())
}
