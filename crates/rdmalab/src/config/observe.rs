//! What a run watches and records besides its results: the per-packet trace, the
//! reference's queue-length monitor, and what to do on a PFC deadlock. The observers
//! themselves live in `sim` (`sim::trace`, `sim::qlen_monitor`, `sim::watch`).

use crate::ids::{NodeId, PortId};
use crate::units::Time;

/// Default cap of a trace: 1 GB of records.
pub const DEFAULT_TRACE_MAX_BYTES: u64 = 1_000_000_000;

/// The most memory a run's queue, link and rate samples may take together (256 MiB, about
/// ten million rows): a scenario whose sampling implies more is refused before the run
/// (`scenario::limits`), and a run that reaches it anyway stops sampling with a warning.
/// Our choice: Python turns the rows into arrays and then tables, about four times this at
/// the peak, which a shared machine with a few GB per user still holds.
pub const SAMPLE_MAX_BYTES: u64 = 1 << 28;

/// What to trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceConfig {
    /// Only packets of these flows (indices in the scenario's sorted flow list); empty: all.
    pub flows: Vec<u32>,
    /// Only events at these nodes or ports (either matches); both empty: everywhere.
    pub nodes: Vec<NodeId>,
    /// Ports (both ends of the links named in `[trace] ports`).
    pub ports: Vec<PortId>,
    /// From this time on.
    pub start: Time,
    /// Until this time (exclusive).
    pub end: Time,
    /// Cap on the trace, bytes counted at `sim::trace::RECORD_BYTES` per record.
    pub max_bytes: u64,
}

/// What the queue-length monitor samples (`rdmalab hpcc` QLEN_MON_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QlenMonitorConfig {
    /// First sample.
    pub start: Time,
    /// No sample after this time.
    pub end: Time,
}

/// What a run does when it finds a PFC deadlock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDeadlock {
    /// End the run, stop reason `pfc_deadlock` (default).
    #[default]
    Stop,
    /// Count it and keep running to the stop time (or until the run stalls).
    Continue,
}
