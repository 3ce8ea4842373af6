//! What a run is asked to do: the validated scenario and its settings.
//!
//! A leaf above the domain types (topology, fabric, congestion control, workload,
//! applications, multipath) and below everything that reads it: `sim` runs a [`Scenario`],
//! and `scenario` (TOML, JSON), `hpcc_compat` (the reference's config) and the Python
//! bindings produce one. It never imports `sim` or `scenario` (`tests/layers.rs` checks),
//! so the parser and the simulator depend on it and not on each other.

mod observe;
mod scenario;
pub mod sim_config;

pub use observe::{OnDeadlock, QlenMonitorConfig, TraceConfig, DEFAULT_TRACE_MAX_BYTES, SAMPLE_MAX_BYTES};
pub use scenario::Scenario;
pub use sim_config::{
    LinkEvent, RnrConfig, SimConfig, WindowConfig, RECORDS_IN_MEMORY, RNR_RETRY_FOREVER, RNR_TIMER_US,
};
