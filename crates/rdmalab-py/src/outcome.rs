//! A run's outcome without its tables: the counters, how it stopped, the deadlock cycle and
//! the slowdown rows of the summary, all as plain Python values. `rdmalab hpcc` prints its
//! summary from this, so that it converts no record into a column and loads no numpy.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use rdmalab::sim::Results;
use rdmalab::stats::slowdown::slowdown_rows;

/// The outcome of `r` (see the module's note). `needs_tables`: the run has a block the
/// summary reads from a table (tenant meters, closed-loop applications, a class table,
/// collectives), so the caller should take the full results instead.
pub fn outcome_dict<'py>(py: Python<'py>, r: &Results) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("counters", crate::results::counter_dict(py, r)?)?;
    d.set_item("stall_cause", r.stall_cause.clone())?;
    let needs_tables =
        !r.tenant_bins.is_empty() || !r.host_apps.is_empty() || !r.classes.is_empty() || !r.collectives.is_empty();
    d.set_item("needs_tables", needs_tables)?;
    let records = r.all_records().map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("flow records: {e}")))?;
    let rows = PyList::empty(py);
    for row in slowdown_rows(&records) {
        let x = PyDict::new(py);
        x.set_item("bucket", row.bucket)?;
        x.set_item("flows", row.flows)?;
        x.set_item("p50", row.p50)?;
        x.set_item("p95", row.p95)?;
        x.set_item("p99", row.p99)?;
        x.set_item("mean", row.mean)?;
        rows.append(x)?;
    }
    d.set_item("slowdown_rows", rows)?;
    let hops = PyList::empty(py);
    if let Some(dl) = &r.deadlock {
        for h in &dl.cycle {
            let x = PyDict::new(py);
            x.set_item("node", h.node.0)?;
            x.set_item("port", h.ifindex)?;
            x.set_item("priority", h.priority)?;
            x.set_item("formed_ns", dl.formed.0 as f64 / 1000.0)?;
            x.set_item("detected_ns", dl.detected.0 as f64 / 1000.0)?;
            hops.append(x)?;
        }
    }
    d.set_item("deadlock", hops)?;
    Ok(d)
}
