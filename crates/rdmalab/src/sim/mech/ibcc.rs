//! InfiniBand congestion control's glue to the loop (`cc = "ib"`, Blitz's `ib` fall-back):
//! FECN marking at switch egress, where RED ECN would mark (`switch.rs::mark_ecn`, which
//! calls it only when ECN is off). The receiver echoes FECN as a BECN on an immediate ACK
//! (`host/rx.rs`), the sender's algorithm is `cc::ib`.

use crate::fabric::PacketRef;
use crate::ids::PortId;
use crate::sim::Simulation;

impl Simulation {
    /// FECN on the data packet parked at `r` leaving class `class` of `port`, as the
    /// port's switch decides (`fabric::fecn`). `SPECIAL`: Blitz's edge rule applies.
    #[inline]
    pub(in crate::sim) fn mark_fecn<const SPECIAL: bool>(&mut self, port: PortId, class: usize, r: PacketRef) {
        let Some(marker) = self.mech.fecn.as_deref_mut() else { return };
        let st = &self.ports[port.idx()];
        if SPECIAL && self.mech.no_edge_ecn && st.peer_on_host {
            return; // Blitz: receiver congestion is DASR's (`dasr_edge_ecn`)
        }
        let pkt = self.packets.get_mut(r);
        if marker.should_mark(port.idx(), class, st.queue_bytes[class], pkt.wire) {
            pkt.ce = true;
            self.counters.fecn_marks += 1;
            if self.trace.is_some() {
                let pkt = *self.packets.get(r);
                self.trace_event(crate::sim::trace::TraceEvent::Ecn, port, &pkt);
            }
        }
    }
}
