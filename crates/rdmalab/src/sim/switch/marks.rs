//! What a switch writes into a packet as it leaves: the ECN mark (RED on the queue, or
//! InfiniBand CC's FECN when RED is off) and the INT hop record.

use crate::engine::rng::RngExt;
use crate::fabric::int::IntHop;
use crate::fabric::PacketRef;
use crate::ids::PortId;
use crate::sim::Simulation;

impl Simulation {
    /// RED-style marking on the queue the packet leaves (its own bytes excluded), with the
    /// class's thresholds when the run has a class table and Blitz's edge rule (`SPECIAL`).
    /// Always inlined: it runs on every data packet a switch sends.
    #[inline(always)]
    pub(super) fn mark_ecn<const SPECIAL: bool>(&mut self, port: PortId, sw: usize, class: usize, r: PacketRef) {
        let Some(ecn) = &self.cfg.ecn else {
            return self.mark_fecn::<SPECIAL>(port, class, r); // InfiniBand CC, if it runs
        };
        let st = &self.ports[port.idx()];
        if SPECIAL && self.mech.no_edge_ecn && st.peer_on_host {
            return; // Blitz: receiver congestion is DASR's (`dasr_edge_ecn`)
        }
        let params = match self.ecn_of_class.get(st.rate_class as usize) {
            Some(&p) => p,
            None => ecn.for_rate_or_scaled(st.rate),
        };
        let Some(mut params) = params else {
            return;
        };
        if let (true, Some(t)) = (SPECIAL, &self.cfg.classes) {
            params = t.classes[class].ecn.apply(params);
        }
        let p = params.mark_probability(st.queue_bytes[class]);
        if p > 0.0 && (p >= 1.0 || self.ecn_rngs[sw].gen::<f64>() < p) {
            self.packets.get_mut(r).ce = true;
            self.counters.ecn_marks += 1;
            let st = &mut self.ports[port.idx()];
            st.counters.ecn_marks += 1;
            if let (true, Some(c)) = (SPECIAL, st.classes.as_deref_mut()) {
                c.stats[class].ecn_marks += 1;
            }
            if self.trace.is_some() {
                let pkt = *self.packets.get(r);
                self.trace_event(crate::sim::trace::TraceEvent::Ecn, port, &pkt);
            }
        }
    }

    /// InfiniBand CC's FECN where RED ECN is off, if it runs: the decision is the
    /// mechanism's (`mech::ibcc::mark`), the count and the trace the switch's.
    #[inline]
    fn mark_fecn<const SPECIAL: bool>(&mut self, port: PortId, class: usize, r: PacketRef) {
        let Some(marker) = self.mech.fecn.as_deref_mut() else { return };
        let (st, pkt) = (&self.ports[port.idx()], self.packets.get_mut(r));
        if crate::sim::mech::ibcc::mark::<SPECIAL>(marker, self.mech.no_edge_ecn, port, st, class, pkt) {
            self.mech.ibcc.fecn_marks += 1;
            if self.trace.is_some() {
                let pkt = *self.packets.get(r);
                self.trace_event(crate::sim::trace::TraceEvent::Ecn, port, &pkt);
            }
        }
    }

    /// Appends this hop's INT record (the reference's field units and widths).
    #[inline]
    pub(super) fn stamp_int(&mut self, port: PortId, r: PacketRef) {
        let st = &self.ports[port.idx()];
        let multi = self.cfg.int_multi as u64;
        // INT_MULTI is 1 in every reference config: constant divisors there (a shift and a
        // multiply) instead of two 64-bit divisions per hop.
        let (tx_units, q_units) = if multi == 1 {
            (st.tx_bytes / 128, st.total_queued() / 80)
        } else {
            (st.tx_bytes / (128 * multi), st.total_queued() / (80 * multi))
        };
        let hop = IntHop {
            line_rate: st.rate.0,
            time_ns: (self.now.ns() & 0xFF_FFFF) as u32,
            tx_bytes: (tx_units & 0xF_FFFF) as u32,
            qlen: (q_units & 0x1_FFFF) as u32,
        };
        let pkt = self.packets.get_mut(r);
        self.int.get_mut(pkt.int_slot).put(pkt.int_hops, hop);
        pkt.int_hops += 1;
    }
}
