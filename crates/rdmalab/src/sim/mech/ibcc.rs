//! InfiniBand congestion control's glue to the loop (`cc = "ib"`, Blitz's `ib` fall-back):
//! FECN marking at switch egress, where RED ECN would mark (`switch/mod.rs::mark_fecn`, called
//! only when ECN is off). The receiver echoes FECN as a BECN on an immediate ACK
//! (`host/rx.rs`), the sender's algorithm is `cc::ib`.

use crate::fabric::fecn::FecnMarker;
use crate::fabric::{Packet, PortState};
use crate::ids::PortId;

/// InfiniBand CC's counts (`res.counters`, zero in runs without it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    /// FECN marks set by switches.
    pub fecn_marks: u64,
    /// ACKs carrying a BECN that reached their sender.
    pub becns: u64,
}

/// FECN on data packet `pkt` leaving class `class` of `port` (`st`), as the port's switch
/// decides (`fabric::fecn`); true when it is marked (the caller counts and traces it).
/// `SPECIAL`: Blitz's edge rule applies (`no_edge_ecn`: host-facing ports never mark).
#[inline]
pub(in crate::sim) fn mark<const SPECIAL: bool>(
    marker: &mut FecnMarker,
    no_edge_ecn: bool,
    port: PortId,
    st: &PortState,
    class: usize,
    pkt: &mut Packet,
) -> bool {
    if SPECIAL && no_edge_ecn && st.peer_on_host {
        return false; // Blitz: receiver congestion is DASR's (`dasr_edge_ecn`)
    }
    let marked = marker.should_mark(port.idx(), class, st.queue_bytes[class], pkt.wire);
    pkt.ce |= marked;
    marked
}
