//! What a run shows of itself beside its results: the per-packet trace, the samplers, the
//! reference's queue-length monitor, the PFC deadlock and stall watch, the warnings about a
//! scenario, and the names of QPs opened while running. None of them changes the physics:
//! a run with every observer off computes the same events.

pub(crate) mod deadlock;
pub mod first_loss;
mod probes;
pub mod qlen_monitor;
pub(crate) mod qp_names;
pub(crate) mod sampling;
pub mod trace;
pub mod trace_merge;
mod trace_points;
pub(crate) mod warnings;
pub(crate) mod watch;
