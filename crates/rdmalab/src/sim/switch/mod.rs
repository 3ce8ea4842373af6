//! Switch-side handlers: forwarding with ECMP, the one admission (MMU or per-port buffers,
//! PAUSE when a threshold is crossed), egress scheduling, ECN marking and INT stamping at
//! dequeue (the marks themselves: `marks.rs`). PFC frames themselves are `pfc.rs`.

mod carry_out;
mod deferred;
mod marks;
mod trim;

use super::Simulation;
use crate::fabric::deflection::ON_DEQUEUE;
use crate::fabric::packet::NO_INT;
use crate::fabric::{Admission, PacketKind, PacketRef};
use crate::ids::{NodeId, PortId};

impl Simulation {
    /// A packet for host `dst` arrived at a switch through port `at`; it stays parked in
    /// the pool (`r`) from the wire to the egress queue: only its reference moves.
    pub(super) fn switch_receive(&mut self, at: PortId, r: PacketRef, dst: NodeId) {
        let node = self.ports[at.idx()].node;
        // One test for both forwarding hooks (a balancer, IOFD), so that plain ECMP pays one.
        if self.mech.switch_hooks {
            return self.switch_receive_hooked(at, r, dst, node);
        }
        if let Some(egress) = self.ecmp_egress(at, r, node, dst) {
            self.switch_enqueue_parked(at, egress, r, None);
        }
    }

    /// The egress ECMP picks at `node` for parked packet `r`; `None` after dropping a
    /// packet with no route.
    #[inline(always)]
    fn ecmp_egress(&mut self, at: PortId, r: PacketRef, node: NodeId, dst: NodeId) -> Option<PortId> {
        let hops = self.routes.next_hops(node, dst);
        let pkt = self.packets.get(r);
        match hops.len() {
            0 => {
                self.counters.no_route_drops += 1;
                let pkt = self.packets.take(r);
                self.drop_packet(at, &pkt);
                None
            }
            1 => Some(hops[0]),
            n => {
                let key = self.routes.path_selection().key(pkt.sip, pkt.dip, pkt.sport, pkt.dport, node);
                Some(hops[crate::topology::routing::pick(key, n)])
            }
        }
    }

    /// `switch_receive` with a forwarding hook: a switch-side balancer picks the egress, or
    /// IOFD decides what becomes of ECMP's pick for a data packet.
    #[cold]
    #[inline(never)]
    fn switch_receive_hooked(&mut self, at: PortId, r: PacketRef, dst: NodeId, node: NodeId) {
        if self.mech.lb.is_some() {
            return self.switch_receive_balanced(at, r, dst, node);
        }
        let Some(egress) = self.ecmp_egress(at, r, node, dst) else { return };
        if self.mech.iofd.is_some() && self.packets.get(r).kind == PacketKind::Data {
            return self.iofd_receive(at, node, egress, r);
        }
        self.switch_enqueue_parked(at, egress, r, None);
    }

    /// `switch_receive` with a switch-side balancer (`fabric::lb`, never with IOFD): its
    /// hook picks the egress at every hop (one next hop included, for CONGA's DREs).
    fn switch_receive_balanced(&mut self, at: PortId, r: PacketRef, dst: NodeId, node: NodeId) {
        let hops = self.routes.next_hops(node, dst);
        if hops.is_empty() {
            self.counters.no_route_drops += 1;
            let pkt = self.packets.take(r);
            return self.drop_packet(at, &pkt);
        }
        let lb = self.mech.lb.as_deref_mut().expect("tested by the caller");
        if lb.runs_conweave() {
            let from = self.mech.actions.len();
            let (mut view, mech, _) = self.switch_view();
            let lb = mech.lb.as_deref_mut().expect("tested by the caller");
            super::mech::conweave::receive(lb, &mut view, (at, node, r), &mut mech.actions);
            return self.carry_out(from);
        }
        let egress = lb.route(self.now, node, hops, self.packets.get_mut(r), &self.ports);
        self.switch_enqueue_parked(at, egress, r, None);
    }

    /// MMU admission (PFC, or a drop) at ingress `at`, then the egress queue of `egress`
    /// (its class's, or `queue`: IOFD's class changes set it apart from the class the packet
    /// is admitted in, which it keeps in `pg` while queued, for its departure to release),
    /// for the packet parked at `r`. An egress with a
    /// mechanism's hook (`special`), or whose link is down, takes the out-of-line path: the
    /// common one tests both flags once.
    #[inline(always)]
    pub(super) fn switch_enqueue_parked(&mut self, at: PortId, egress: PortId, r: PacketRef, queue: Option<u8>) {
        let e = &self.ports[egress.idx()];
        if e.special | e.down {
            return self.switch_enqueue_cold(at, egress, r, queue);
        }
        self.switch_enqueue_as::<false>(at, egress, r, queue);
    }

    /// `switch_enqueue_parked` on a `special` egress or a failed link, out of line.
    #[cold]
    #[inline(never)]
    fn switch_enqueue_cold(&mut self, at: PortId, egress: PortId, r: PacketRef, queue: Option<u8>) {
        if self.ports[egress.idx()].down {
            // Routes still point at a failed link (`failures`): the packet is lost.
            self.counters.link_down_losses += 1;
            let sw = self.ports[at.idx()].unit as usize;
            return self.drop_at_ingress(at, sw, None, r);
        }
        self.switch_enqueue_as::<true>(at, egress, r, queue);
    }

    /// `switch_enqueue_parked`'s work, on an egress whose link is up. `SPECIAL`: the hooks
    /// of a special egress run (per-port buffers in place of the MMU, the input-port
    /// arbiter); without, none is tested.
    #[inline(always)]
    fn switch_enqueue_as<const SPECIAL: bool>(&mut self, at: PortId, egress: PortId, r: PacketRef, queue: Option<u8>) {
        if SPECIAL && self.mech.egress_filter && self.refused_at_egress(at, egress, r) {
            return;
        }
        if !SPECIAL && queue.is_none() && self.send_unbuffered(at, egress, r) {
            return;
        }
        let Some((class, wire, local)) = self.admit::<SPECIAL>(at, egress, r) else { return };
        if self.trace.is_some() {
            let pkt = *self.packets.get(r);
            self.trace_event(super::trace::TraceEvent::Enqueue, egress, &pkt);
        }
        let queue = queue.map_or(class, usize::from);
        let st = &mut self.ports[egress.idx()];
        if SPECIAL {
            st.enqueue_special(queue, r, wire, local, &mut self.packets); // the input-port arbiter's hook
        } else {
            // An idle egress with nothing queued sends the packet at once: the queue and the
            // dequeue `switch_kick` would do are skipped (`PortState::pass_through`).
            let idle = !st.busy && !st.serialising(self.now, self.queue.popped_seq());
            if idle && st.pass_through(queue) {
                let sw = st.unit as usize;
                return self.switch_send::<false>(egress, sw, queue, r, true);
            }
            st.enqueue_parked(queue, r, wire, &mut self.packets);
            if st.busy {
                return; // its TxDone (or waiting dequeue) will send: `switch_kick`'s first test, without the call
            }
        }
        self.switch_kick(egress);
    }

    /// A packet that an idle egress with nothing queued sends at once, and whose admission
    /// and release would leave the switch's buffer counts as they found them (no PAUSE, no
    /// headroom, no RESUME: `SwitchMmu::passes`), goes straight out: the admission, the queue
    /// and the release are skipped, and all they change is left as they would have left it.
    /// False: nothing changed, the packet takes the common path.
    #[inline(always)]
    fn send_unbuffered(&mut self, at: PortId, egress: PortId, r: PacketRef) -> bool {
        let (sw, local) = {
            let st = &self.ports[at.idx()];
            (st.unit as usize, st.local)
        };
        let pkt = self.packets.get(r);
        let (class, wire) = (self.switch_class(pkt), pkt.wire);
        // The egress first: it is busy more often than the buffer is near a threshold.
        let (now, key) = (self.now, self.queue.popped_seq());
        let st = &self.ports[egress.idx()];
        if st.busy || st.serialising(now, key) || !st.would_pass(class) {
            return false;
        }
        if class != 0 && !self.mmus[sw].passes(local as usize, class, wire as u64) {
            return false;
        }
        let passed = self.ports[egress.idx()].pass_through(class);
        debug_assert!(passed, "would_pass said so");
        let pkt = self.packets.get_mut(r);
        pkt.ingress = at;
        pkt.ingress_local = local;
        if self.trace.is_some() {
            let pkt = *self.packets.get(r);
            self.trace_event(super::trace::TraceEvent::Enqueue, egress, &pkt);
        }
        self.switch_send::<false>(egress, sw, class, r, false);
        true
    }

    /// The one admission of a packet into a switch: parked packet `r`, arrived on `at`, bound
    /// for `egress`, is stamped with its ingress and admitted against the shared MMU (or, on
    /// a `SPECIAL` egress, its per-port buffer), sending PAUSE upstream when a threshold is
    /// crossed. Returns (class, wire bytes, ingress index) once admitted; `None` after
    /// dropping it. Serves the switch's enqueue and every hold (ConWeave's reorder queues).
    #[inline(always)]
    pub(super) fn admit<const SPECIAL: bool>(
        &mut self,
        at: PortId,
        egress: PortId,
        r: PacketRef,
    ) -> Option<(usize, u32, u16)> {
        let (sw, local) = {
            let st = &self.ports[at.idx()];
            (st.unit as usize, st.local)
        };
        let mut class = self.switch_class(self.packets.get(r));
        if SPECIAL && self.mech.trimming.is_some() && class != 0 {
            class = self.trim_over_threshold(egress, r, class); // `switch/trim.rs`
        }
        let pkt = self.packets.get_mut(r);
        let wire = pkt.wire;
        pkt.ingress = at;
        pkt.ingress_local = local;
        if class != 0 {
            let admission = if SPECIAL && self.mech.port_buffers.is_some() {
                let buffers = self.mech.port_buffers.as_deref_mut().expect("per-port buffers");
                super::mech::port_buffers::admit(buffers, &self.ports, sw, local, egress, class, wire)
            } else if SPECIAL {
                self.mmus[sw].admit(local as usize, class, wire as u64)
            } else {
                self.mmus[sw].admit_shared(local as usize, class, wire as u64)
            };
            match admission {
                Admission::Drop => {
                    if SPECIAL && self.mech.trimming.is_some() {
                        return self.trim_refused(at, egress, r, class); // `switch/trim.rs`
                    }
                    self.drop_at_ingress(at, sw, Some(class), r);
                    return None;
                }
                Admission::Accept { pause } => {
                    if pause {
                        self.send_pfc(at, PacketKind::Pause, class as u8);
                    }
                }
            }
        }
        Some((class, wire, local))
    }

    /// The class a switch queues `pkt` in: its own, or 0 for an ACK when ACKs go first at
    /// switches.
    #[inline(always)]
    pub(super) fn switch_class(&self, pkt: &crate::fabric::Packet) -> usize {
        let ack_first = self.cfg.ack_high_prio && self.cfg.ack_prio_at_switches;
        if pkt.is_ack() && ack_first {
            0
        } else {
            pkt.pg as usize
        }
    }

    /// The packet parked at `r` is lost at ingress `at` of switch `sw`: its egress link is
    /// down (`class` None) or the MMU refused it.
    #[cold]
    #[inline(never)]
    pub(super) fn drop_at_ingress(&mut self, at: PortId, sw: usize, class: Option<usize>, r: PacketRef) {
        let mut pkt = self.packets.take(r);
        if pkt.deflections & ON_DEQUEUE != 0 {
            pkt = super::mech::iofd::on_dequeue(self.mech.iofd.as_deref_mut(), sw, pkt.pg as usize, pkt);
        }
        if let Some(class) = class {
            self.count_admission_drop(at, class);
        }
        self.drop_packet(at, &pkt);
        if let Some(ib) = self.mech.ib.as_deref_mut() {
            let from = self.mech.actions.len();
            super::mech::ib::on_switch_discard(ib, at, &pkt, &mut self.mech.actions);
            self.carry_out(from);
        }
    }

    /// A packet of `class` refused at ingress `at`: counted for the class table, if any, and
    /// the first such loss of a lossless class noted for the end-of-run check.
    #[cold]
    #[inline(never)]
    fn count_admission_drop(&mut self, at: PortId, class: usize) {
        if let Some(c) = self.ports[at.idx()].classes.as_deref_mut() {
            c.stats[class].drops += 1;
        }
        let (node, port, class) = (self.ports[at.idx()].node, self.topo.ports[at.idx()].ifindex - 1, class as u8);
        let site = super::observe::first_loss::LossSite { time: self.now, node, port, class };
        if self.cfg.pfc_on(class as usize) {
            super::observe::first_loss::note(&mut self.watch.first_loss, site);
        }
    }

    /// The egress scheduler of a switch port.
    pub(super) fn switch_kick(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        if st.busy {
            return;
        }
        if st.serialising(self.now, self.queue.popped_seq()) {
            // Still serialising, its TxDone skipped (`transmit`): schedule it in its place.
            if st.has_queued() {
                st.busy = true;
                self.schedule_switch_tx_done(port);
            }
            return;
        }
        if st.special {
            return self.switch_send_special(port);
        }
        let sw = st.unit as usize;
        let Some((class, r)) = st.dequeue_parked(&self.packets) else {
            return;
        };
        self.switch_send::<false>(port, sw, class, r, true);
    }

    /// `switch_kick` on a port with a mechanism's egress hook (`PortState::special`): a
    /// class table (`fabric::classes`), IOFD's flags, Blitz's edge rule. A copy of its
    /// second half out of line, so that runs without them carry none of their code.
    #[cold]
    #[inline(never)]
    fn switch_send_special(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        let sw = st.unit as usize;
        let next =
            if st.classes.is_some() { st.dequeue_by_class(&mut self.packets) } else { st.dequeue(&mut self.packets) };
        let Some((class, pkt)) = next else {
            return;
        };
        let r = self.packets.park(pkt);
        self.switch_send::<true>(port, sw, class, r, true);
    }

    /// Sends the packet `switch_kick` took from class `class` of `port` (of switch `sw`),
    /// parked at `r`: buffer release (and RESUME), ECN, INT. `SPECIAL`: the port's
    /// mechanism hooks (class table, IOFD's flags, Blitz's edge rule) run; without, none
    /// is tested. `release`: false for a packet `send_unbuffered` never admitted.
    #[inline(always)]
    fn switch_send<const SPECIAL: bool>(&mut self, port: PortId, sw: usize, class: usize, r: PacketRef, release: bool) {
        let pkt = self.packets.get(r);
        let (ingress, ingress_local, wire, kind, int_slot) =
            (pkt.ingress, pkt.ingress_local, pkt.wire, pkt.kind, pkt.int_slot);
        // The class it was admitted in: its queue's, but for IOFD's class changes (which
        // need a special port).
        let admitted = if SPECIAL { pkt.pg as usize } else { class };
        let mut resume = false;
        let mut iofd = false;
        if class != 0 {
            resume = if SPECIAL && self.mech.port_buffers.is_some() {
                let buffers = self.mech.port_buffers.as_deref_mut().expect("per-port buffers");
                super::mech::port_buffers::release(buffers, &self.ports, sw, ingress_local, port, admitted, wire)
            } else if SPECIAL {
                self.mmus[sw].release(ingress_local as usize, admitted, wire as u64)
            } else if release {
                self.mmus[sw].release_shared(ingress_local as usize, admitted, wire as u64)
            } else {
                false
            };
            if kind == PacketKind::Data {
                self.mark_ecn::<SPECIAL>(port, sw, class, r);
            }
            if SPECIAL && self.packets.get(r).deflections & ON_DEQUEUE != 0 {
                let pkt = super::mech::iofd::on_dequeue(self.mech.iofd.as_deref_mut(), sw, class, *self.packets.get(r));
                *self.packets.get_mut(r) = pkt;
                iofd = true;
            }
        }
        if int_slot != NO_INT && kind == PacketKind::Data && self.cfg.cc.needs_int() {
            self.stamp_int(port, r);
        }
        self.transmit_parked(port, r);
        if SPECIAL && self.mech.ib.is_some() {
            // InfiniBand: this port spends credits, the input buffer's return (after the
            // send: the ingress may be this very port, whose transmitter must be busy).
            self.ib_switch_send(port, ingress, r);
        }
        if resume {
            if SPECIAL {
                self.send_resumes(sw, port, ingress, admitted as u8); // per-port buffers may free several
            } else {
                self.send_pfc(ingress, PacketKind::Resume, admitted as u8);
            }
        }
        if SPECIAL && iofd {
            self.iofd_wake(sw); // the space it freed may admit packets the re-sequencer holds
        }
    }

    /// InfiniBand's hook at a switch's send (`mech::ib::on_switch_send`), then its frame.
    #[cold]
    #[inline(never)]
    fn ib_switch_send(&mut self, port: PortId, ingress: PortId, r: PacketRef) {
        let mech = &mut self.mech;
        let from = mech.actions.len();
        if let Some(ib) = mech.ib.as_deref_mut() {
            let pkt = *self.packets.get(r);
            super::mech::ib::on_switch_send(ib, &mut self.ports, self.now, (port, ingress), &pkt, &mut mech.actions);
        }
        self.carry_out(from);
    }
}
