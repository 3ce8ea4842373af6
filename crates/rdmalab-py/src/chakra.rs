//! Chakra traces written from a scenario's workload (`scenario::chakra_export`).
use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use rdmalab::scenario::chakra_export::{export_json, export_toml};

use crate::sim::to_py;

/// Writes the workload of a scenario (TOML text and its path, or with `json` the JSON text
/// and the folder of its relative paths) as `<prefix>.<rank>.et`; returns the files, each
/// rank's host, the `[[traffic]]` entry that runs them and notes on what was rounded.
#[pyfunction]
#[pyo3(signature = (text, path, prefix, json=false))]
fn chakra_export<'py>(
    py: Python<'py>,
    text: &str,
    path: &str,
    prefix: &str,
    json: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (p, prefix) = (Path::new(path), Path::new(prefix));
    let e = if json { export_json(text, p, prefix) } else { export_toml(text, p, prefix) }.map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("files", e.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>())?;
    d.set_item("hosts", e.hosts)?;
    d.set_item("traffic", e.traffic)?;
    d.set_item("notes", e.notes)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(chakra_export, m)?)
}
