//! Trimming at the switch's one admission (`[fabric.trimming]`; the rules and counts are
//! `mech::trimming`'s): out of line, reached only when the run trims.

use crate::fabric::{Admission, PacketKind, PacketRef};
use crate::ids::PortId;
use crate::sim::mech::trimming;
use crate::sim::Simulation;

impl Simulation {
    /// Packet `r` of `class` bound for `egress`: trimmed when its class's queue there would
    /// pass the threshold with it. The class it is admitted in.
    #[inline(never)]
    pub(super) fn trim_over_threshold(&mut self, egress: PortId, r: PacketRef, class: usize) -> usize {
        let t = self.mech.trimming.as_deref_mut().expect("trimming");
        let pkt = self.packets.get_mut(r);
        let queued = self.ports[egress.idx()].queue_bytes[class];
        if !trimming::trimmable(pkt) || !trimming::over_threshold(t, queued, pkt) {
            return class;
        }
        self.counters.payload_bytes_dropped += trimming::trim(t, pkt, egress.idx());
        t.cfg.class as usize
    }

    /// The buffer refused packet `r` (arrived on `at`, of `class`, bound for `egress`): a
    /// UET data packet goes on as its header, admitted in the trimmed class (class 0 takes
    /// no buffer, as ACKs; any other class is admitted against the shared MMU); anything
    /// else, or a header refused too, is dropped. As `admit`.
    #[cold]
    #[inline(never)]
    pub(super) fn trim_refused(
        &mut self,
        at: PortId,
        egress: PortId,
        r: PacketRef,
        class: usize,
    ) -> Option<(usize, u32, u16)> {
        let (sw, local) = (self.ports[at.idx()].unit as usize, self.ports[at.idx()].local);
        let t = self.mech.trimming.as_deref_mut().expect("trimming");
        let pkt = self.packets.get_mut(r);
        // Per-port buffers (`fabric.buffer_model`) admit no header here: the packet is lost.
        if !trimming::trimmable(pkt) || self.mech.port_buffers.is_some() {
            self.drop_at_ingress(at, sw, Some(class), r);
            return None;
        }
        self.counters.payload_bytes_dropped += trimming::trim(t, pkt, egress.idx());
        let (class, wire) = (pkt.pg as usize, pkt.wire);
        if class != 0 {
            match self.mmus[sw].admit(local as usize, class, wire as u64) {
                Admission::Drop => {
                    self.drop_at_ingress(at, sw, Some(class), r);
                    return None;
                }
                Admission::Accept { pause: true } => self.send_pfc(at, PacketKind::Pause, class as u8),
                Admission::Accept { pause: false } => {}
            }
        }
        Some((class, wire, local))
    }
}
