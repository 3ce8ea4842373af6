//! Switch-side handlers: forwarding with ECMP, MMU admission and PFC, egress scheduling,
//! ECN marking and INT stamping at dequeue; and PFC frames received by any node.

use super::Simulation;
use crate::engine::rng::RngExt;
use crate::fabric::deflection::ON_DEQUEUE;
use crate::fabric::int::IntHop;
use crate::fabric::packet::NO_INT;
use crate::fabric::{Admission, Packet, PacketKind};
use crate::formats::pfc::PfcEvent;
use crate::ids::PortId;

impl Simulation {
    /// A packet arrived at a switch through port `at`.
    pub(super) fn switch_receive(&mut self, at: PortId, pkt: Packet) {
        let node = self.ports[at.idx()].node;
        let hops = self.routes.next_hops(node, pkt.dst);
        let egress = match hops.len() {
            0 => {
                self.counters.no_route_drops += 1;
                self.drop_packet(at, &pkt);
                return;
            }
            1 => hops[0],
            n => {
                let key = self.routes.path_selection().key(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node);
                hops[key % n]
            }
        };
        if self.iofd.is_some() && pkt.kind == PacketKind::Data {
            return self.iofd_receive(at, node, egress, pkt);
        }
        self.switch_enqueue(at, egress, pkt);
    }

    /// MMU admission (PFC, or a drop) at ingress `at`, then the egress queue of `egress`.
    /// Always inlined: on every switch hop, and a call would copy the packet twice.
    #[inline(always)]
    pub(super) fn switch_enqueue(&mut self, at: PortId, egress: PortId, mut pkt: Packet) {
        let (sw, local) = {
            let st = &self.ports[at.idx()];
            (st.unit as usize, st.local)
        };
        if self.ports[egress.idx()].down {
            // Routes still point at a failed link (`failures`): the packet is lost.
            self.counters.link_down_losses += 1;
            if pkt.deflections & ON_DEQUEUE != 0 {
                pkt = self.iofd_dequeue(sw, pkt);
            }
            self.drop_packet(at, &pkt);
            return;
        }
        let ack_first = self.cfg.ack_high_prio && self.cfg.ack_prio_at_switches;
        let class = if pkt.is_ack() && ack_first { 0 } else { pkt.pg as usize };
        if class != 0 {
            match self.mmus[sw].admit(local as usize, class, pkt.wire as u64) {
                Admission::Drop => {
                    if pkt.deflections & ON_DEQUEUE != 0 {
                        pkt = self.iofd_dequeue(sw, pkt);
                    }
                    self.count_class_drop(at, class);
                    self.drop_packet(at, &pkt);
                    return;
                }
                Admission::Accept { pause } => {
                    if pause {
                        self.send_pfc(at, PacketKind::Pause, class as u8);
                    }
                }
            }
        }
        pkt.ingress = at;
        pkt.ingress_local = local;
        if self.trace.is_some() {
            self.trace_event(super::trace::TraceEvent::Enqueue, egress, &pkt);
        }
        self.ports[egress.idx()].enqueue(class, pkt, &mut self.packets);
        self.switch_kick(egress);
    }

    /// A packet of `class` refused at ingress `at`: counted for the class table, if any.
    #[cold]
    #[inline(never)]
    fn count_class_drop(&mut self, at: PortId, class: usize) {
        if let Some(c) = self.ports[at.idx()].classes.as_deref_mut() {
            c.stats[class].drops += 1;
        }
    }

    /// Sends a PFC frame out of `port` (queue 0: ahead of all data); none crosses a
    /// failed link.
    pub(super) fn send_pfc(&mut self, port: PortId, kind: PacketKind, class: u8) {
        if self.ports[port.idx()].down {
            return;
        }
        let frame = Packet::pfc(kind, class, self.cfg.pfc_bytes);
        let st = &mut self.ports[port.idx()];
        if kind == PacketKind::Pause {
            st.counters.pause_sent += 1;
            self.counters.pauses += 1;
            if let Some(c) = st.classes.as_deref_mut() {
                c.stats[class as usize].pauses += 1;
            }
        } else {
            self.counters.resumes += 1;
        }
        st.enqueue(0, frame, &mut self.packets);
        self.switch_kick(port);
    }

    /// The egress scheduler of a switch port.
    pub(super) fn switch_kick(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        if st.busy {
            return;
        }
        if st.tx_end > (self.now, self.queue.popped_seq()) {
            // Still serialising, its TxDone skipped (`transmit`): schedule it in its place.
            if st.has_queued() {
                st.busy = true;
                self.queue.push_reserved(st.tx_end.0, st.tx_end.1, super::Event::TxDone(port));
            }
            return;
        }
        if st.special {
            return self.switch_send_special(port);
        }
        let sw = st.unit as usize;
        let Some((class, pkt)) = st.dequeue(&mut self.packets) else {
            return;
        };
        self.switch_send::<false>(port, sw, class, pkt);
    }

    /// `switch_kick` on a port with a mechanism's egress hook (`PortState::special`): a
    /// class table (`fabric::classes`), IOFD's flags, Blitz's edge rule. A copy of its
    /// second half out of line, so that runs without them carry none of their code.
    #[cold]
    #[inline(never)]
    fn switch_send_special(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        let sw = st.unit as usize;
        let next = if st.classes.is_some() {
            st.dequeue_by_class(&mut self.packets)
        } else {
            st.dequeue(&mut self.packets)
        };
        let Some((class, pkt)) = next else {
            return;
        };
        self.switch_send::<true>(port, sw, class, pkt);
    }

    /// Sends the packet `switch_kick` took from class `class` of `port` (of switch `sw`):
    /// buffer release (and RESUME), ECN, IOFD, INT. `SPECIAL`: the port's mechanism hooks
    /// (class table, IOFD, Blitz's edge rule) run; without, none of them is tested.
    #[inline(always)]
    fn switch_send<const SPECIAL: bool>(&mut self, port: PortId, sw: usize, class: usize, mut pkt: Packet) {
        let mut resume = false;
        if class != 0 {
            resume = self.mmus[sw].release(pkt.ingress_local as usize, class, pkt.wire as u64);
            if pkt.kind == PacketKind::Data {
                self.mark_ecn::<SPECIAL>(port, sw, class, &mut pkt);
            }
            if SPECIAL && pkt.deflections & ON_DEQUEUE != 0 {
                pkt = self.iofd_dequeue(sw, pkt);
            }
        }
        if pkt.int_slot != NO_INT && pkt.kind == PacketKind::Data && self.cfg.cc.needs_int() {
            self.stamp_int(port, &mut pkt);
        }
        self.transmit(port, pkt);
        if resume {
            self.send_pfc(pkt.ingress, PacketKind::Resume, class as u8);
        }
    }

    /// RED-style marking on the queue the packet leaves (its own bytes excluded), with the
    /// class's thresholds when the run has a class table and Blitz's edge rule (`SPECIAL`).
    #[inline]
    fn mark_ecn<const SPECIAL: bool>(&mut self, port: PortId, sw: usize, class: usize, pkt: &mut Packet) {
        let Some(ecn) = &self.cfg.ecn else { return };
        let st = &self.ports[port.idx()];
        if SPECIAL && self.no_edge_ecn && st.peer_on_host {
            return; // Blitz: receiver congestion is DASR's (`dasr_edge_ecn`)
        }
        let Some(mut params) = ecn.for_rate_or_scaled(st.rate) else {
            return;
        };
        if let (true, Some(t)) = (SPECIAL, &self.cfg.classes) {
            params = t.classes[class].ecn.apply(params);
        }
        let p = params.mark_probability(st.queue_bytes[class]);
        if p > 0.0 && (p >= 1.0 || self.ecn_rngs[sw].gen::<f64>() < p) {
            pkt.ce = true;
            self.counters.ecn_marks += 1;
            let st = &mut self.ports[port.idx()];
            st.counters.ecn_marks += 1;
            if let (true, Some(c)) = (SPECIAL, st.classes.as_deref_mut()) {
                c.stats[class].ecn_marks += 1;
            }
            if self.trace.is_some() {
                self.trace_event(super::trace::TraceEvent::Ecn, port, pkt);
            }
        }
    }

    /// Appends this hop's INT record (the reference's field units and widths).
    #[inline]
    fn stamp_int(&mut self, port: PortId, pkt: &mut Packet) {
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
        self.int.get_mut(pkt.int_slot).put(pkt.int_hops, hop);
        pkt.int_hops += 1;
    }

    /// A PFC frame arrived at port `at`: pause or resume that port's transmitter.
    pub(super) fn on_pfc(&mut self, at: PortId, pkt: Packet) {
        let pause = pkt.kind == PacketKind::Pause;
        if self.trace.is_some() {
            use super::trace::TraceEvent::{Pause, Resume};
            self.trace_event(if pause { Pause } else { Resume }, at, &pkt);
        }
        let st = &mut self.ports[at.idx()];
        let q = pkt.pg as usize;
        let changed = st.paused[q] != pause;
        st.set_paused(q, pause, self.now);
        if changed && !st.on_host {
            self.watch.pause_changed(at, q, pause, self.now, self.cfg.deadlock_timeout);
        }
        let st = &mut self.ports[at.idx()];
        if pause {
            st.counters.pause_received += 1;
        }
        let node = st.node;
        self.pfc_events.push(PfcEvent {
            time: self.now,
            node,
            node_is_switch: self.switch_of[node.idx()] != u32::MAX,
            ifindex: self.topo.ports[at.idx()].ifindex,
            pause,
        });
        if !pause {
            self.kick(at);
        }
    }
}
