//! The first packet a lossless class lost at a switch's admission: where and when. The
//! end-of-run check names it in its message, and a failed run's record carries it, so that a
//! user sees which port's headroom ran out without a trace.

use crate::error::Error;
use crate::ids::NodeId;
use crate::units::Time;

/// Where and when a lossless class first dropped a packet. Ordered by time, then place, so
/// that the earliest over a parallel run's partitions does not depend on the cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LossSite {
    /// When the packet was refused.
    pub time: Time,
    /// The switch.
    pub node: NodeId,
    /// The ingress port's index on the switch (its ifindex less one, as `ports.parquet`).
    pub port: u16,
    /// The packet's class (priority group).
    pub class: u8,
}

/// Keeps the earlier of `first` and `site`.
pub(crate) fn note(first: &mut Option<LossSite>, site: LossSite) {
    if first.is_none_or(|f| site < f) {
        *first = Some(site);
    }
}

/// The end-of-run check's error for `n` packets dropped where nothing may drop (`what`:
/// "lossless mode", "lossless classes"), naming the first drop when it was seen.
pub(crate) fn lossless_drop_error(n: u64, what: &str, first: Option<&LossSite>) -> Error {
    let Some(s) = first else {
        return Error::Invariant(format!("{n} packets dropped in {what}"));
    };
    Error::Invariant(format!(
        "{n} packets dropped in {what}; the first at switch {} ingress port {} class {} at {:.6} us \
         (the PFC headroom of that port ran out)",
        s.node.0,
        s.port,
        s.class,
        s.time.0 as f64 / 1e6
    ))
}
