//! The carry-out: what mechanisms' hooks asked for (`mech::actions::Action`), applied in
//! the order they asked, with the switch's own admission, queues and schedulers. A hook
//! sees a `SwitchView` (split borrows built here) and appends to `Mechanisms::actions`; a
//! caller runs the hook, then `carry_out` from the length the list had before it. An action
//! may start a transmitter whose hooks append and carry out their own actions: each call
//! handles the range past its start and cuts the list back to it, so the list keeps its
//! capacity and nothing is allocated per packet.

use crate::fabric::{PacketKind, PacketRef};
use crate::ids::PortId;
use crate::sim::mech::actions::{Action, SwitchView};
use crate::sim::mech::iofd;
use crate::sim::mech::Mechanisms;
use crate::sim::Simulation;
use crate::stats::Counters;

impl Simulation {
    /// The view a switch-side hook reads, the mechanisms' state (its own, and the action
    /// list it appends to) and the run's counters, as disjoint borrows.
    pub(in crate::sim) fn switch_view(&mut self) -> (SwitchView<'_>, &mut Mechanisms, &mut Counters) {
        let Simulation { now, ports, packets, routes, topo, mmus, clock, mech, counters, .. } = self;
        let view = SwitchView { now: *now, ports, packets, routes, topo, mmus, clock };
        (view, mech, counters)
    }

    /// IOFD's hook for a data packet parked at `r` (arrived on `at` at switch `node`, ECMP's
    /// pick `ecmp`), then its actions. Out of line, with the hook: a run without IOFD carries
    /// none of it on the forwarding path.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn iofd_receive(&mut self, at: PortId, node: crate::ids::NodeId, ecmp: PortId, r: PacketRef) {
        let from = self.mech.actions.len();
        let sw = self.ports[at.idx()].unit as usize;
        let (mut view, mech, _) = self.switch_view();
        let pkt = view.packets.take(r);
        if let Some(iofd) = mech.iofd.as_deref_mut() {
            iofd::receive(iofd, &mut view, (at, node, sw), ecmp, pkt, &mut mech.actions);
        }
        self.carry_out(from);
    }

    /// IOFD: offers switch `sw`'s waiting line to its buffer, one packet at a time, each
    /// admitted (and maybe sent, which may offer the line again) before the next is tested.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn iofd_wake(&mut self, sw: usize) {
        loop {
            let from = self.mech.actions.len();
            let (mut view, mech, _) = self.switch_view();
            let Some(iofd) = mech.iofd.as_deref_mut() else { return };
            let admitted = iofd::wake_one(iofd, &mut view, sw, &mut mech.actions);
            self.carry_out(from);
            if !admitted {
                return;
            }
        }
    }

    /// IOFD's retry timer (`Event::IofdRetry`) at the switch of `egress`.
    pub(in crate::sim) fn on_iofd_retry(&mut self, egress: PortId) {
        let sw = self.ports[egress.idx()].unit as usize;
        if let Some(i) = self.mech.iofd.as_deref_mut() {
            iofd::on_retry(i, sw);
        }
        self.iofd_wake(sw);
    }

    /// ConWeave's reorder-queue timer (`Event::ReorderFlush`): its hook, then its actions.
    pub(in crate::sim) fn on_reorder_flush(&mut self, q: u32, generation: u32) {
        let from = self.mech.actions.len();
        let (view, mech, _) = self.switch_view();
        if let Some(lb) = mech.lb.as_deref_mut() {
            crate::sim::mech::conweave::on_flush(lb, &view, (q, generation), &mut mech.actions);
        }
        self.carry_out(from);
    }

    /// The mechanisms' egress filter (`mech::refuses_at_egress`) for the packet parked at `r`,
    /// arrived on `at` for `egress`: true after dropping it on purpose, before admission.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn refused_at_egress(&mut self, at: PortId, egress: PortId, r: PacketRef) -> bool {
        let class = self.switch_class(self.packets.get(r)) as u8;
        if !crate::sim::mech::refuses_at_egress(&mut self.mech, egress, class) {
            return false;
        }
        self.mech.deliberate_drops += 1;
        let pkt = self.packets.take(r);
        self.drop_packet(at, &pkt);
        true
    }

    /// A mechanism's timer (`Event::Mech`): its hook (`mech::on_timer`), then its actions.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn on_mech_timer(&mut self, t: crate::sim::mech::Timer) {
        let from = self.mech.actions.len();
        let (view, mech, _) = self.switch_view();
        crate::sim::mech::on_timer(mech, &view, t);
        self.carry_out(from);
    }

    /// Applies the actions from index `from` on, in order, then cuts the list back to `from`.
    pub(in crate::sim) fn carry_out(&mut self, from: usize) {
        let mut i = from;
        while let Some(&a) = self.mech.actions.get(i) {
            i += 1;
            self.apply(a);
        }
        self.mech.actions.truncate(from);
    }

    /// One action.
    fn apply(&mut self, a: Action) {
        match a {
            Action::Enqueue { at, egress, r, queue } => self.switch_enqueue_parked(at, egress, r, queue),
            Action::AdmitReleased { at, egress, r } => {
                let before = self.counters.drops;
                self.switch_enqueue_parked(at, egress, r, None);
                let refused = self.counters.drops - before;
                if let Some(lb) = self.mech.lb.as_deref_mut() {
                    lb.tally.release_drops += refused;
                }
            }
            Action::Requeue { egress, class, r, wire } => {
                self.ports[egress.idx()].enqueue_parked(class as usize, r, wire, &mut self.packets);
            }
            Action::Hold { at, egress, r, queue } => {
                let Some((class, wire, _)) = self.admit::<false>(at, egress, r) else { return };
                let now = self.now;
                if let Some(lb) = self.mech.lb.as_deref_mut() {
                    crate::sim::mech::conweave::held(lb, now, queue, r, class as u8, wire);
                }
            }
            Action::Kick(port) => self.kick(port),
            Action::Timer(at, ev) => self.queue.push(at, ev),
            Action::Frame { port, frame } => self.send_frame(port, frame),
            Action::WakeIofd { sw } => self.iofd_wake(sw),
            Action::LoseWire(port) => self.lose_wire(port),
            Action::DiscardQueued(port) => self.discard_queued(port),
            Action::DiscardClass { port, class } => self.discard_class(port, class),
            Action::Unpause { port, class } => {
                self.ports[port.idx()].set_paused(class as usize, false, self.now);
                self.kick(port);
            }
            Action::Pfc { port, class } => self.send_pfc(port, crate::fabric::PacketKind::Pause, class),
            Action::PauseExpired { port, class } => self.pause_expired(port, class),
            Action::AbandonQp(q) => {
                self.abandon_qp(q);
                self.last_completion = self.now;
            }
        }
    }

    /// A switch discards the packets queued for a dead port, releasing their buffer (which
    /// may resume an upstream port); a PFC frame queued there is simply gone.
    fn discard_queued(&mut self, p: PortId) {
        if self.ports[p.idx()].on_host {
            return;
        }
        while let Some((class, pkt)) = self.ports[p.idx()].dequeue(&mut self.packets) {
            let resume = self.release_discarded(p, class, &pkt);
            self.lose(p, &pkt);
            self.resume_after_discard(p, class, &pkt, resume);
            self.free_input_after_discard(&pkt);
        }
        if let Some(c) = self.ports[p.idx()].classes.as_deref_mut() {
            c.all_emptied(); // DWRR classes that empty lose their deficit
        }
    }

    /// A mechanism drops, on purpose, what switch port `p` holds in egress queue `class`
    /// (`Action::DiscardClass`).
    fn discard_class(&mut self, p: PortId, class: u8) {
        if self.ports[p.idx()].on_host {
            return;
        }
        while let Some(pkt) = self.ports[p.idx()].take_from_class(class as usize, &mut self.packets) {
            let resume = self.release_discarded(p, class as usize, &pkt);
            self.mech.deliberate_drops += 1;
            self.drop_packet(p, &pkt);
            self.resume_after_discard(p, class as usize, &pkt, resume);
            self.free_input_after_discard(&pkt);
        }
        if let Some(c) = self.ports[p.idx()].classes.as_deref_mut() {
            c.all_emptied();
        }
    }

    /// A packet taken out of switch port `p`'s egress queue `class` without being sent:
    /// its buffer is released; true when that should resume the port it came in on.
    fn release_discarded(&mut self, p: PortId, class: usize, pkt: &crate::fabric::Packet) -> bool {
        if class == 0 {
            return false;
        }
        let sw = self.ports[p.idx()].unit as usize;
        match self.mech.port_buffers.as_deref_mut() {
            None => self.mmus[sw].release(pkt.ingress_local as usize, class, pkt.wire as u64),
            Some(buffers) => {
                crate::sim::mech::port_buffers::release(buffers, &self.ports, sw, pkt.ingress_local, p, class, pkt.wire)
            }
        }
    }

    /// Under InfiniBand, a discarded packet's blocks in its ingress's input buffer are freed
    /// and the upstream is told (`mech::ib::on_switch_discard`; the actions run after the
    /// caller's, in the carry-out that applies it).
    fn free_input_after_discard(&mut self, pkt: &crate::fabric::Packet) {
        if let Some(ib) = self.mech.ib.as_deref_mut() {
            crate::sim::mech::ib::on_switch_discard(ib, pkt.ingress, pkt, &mut self.mech.actions);
        }
    }

    /// The RESUME a discard's release asked for (`release_discarded`), once the packet is gone.
    fn resume_after_discard(&mut self, p: PortId, class: usize, pkt: &crate::fabric::Packet, resume: bool) {
        if resume {
            let sw = self.ports[p.idx()].unit as usize;
            self.send_resumes(sw, p, pkt.ingress, class as u8);
        }
    }

    /// A link-level frame out of `port`, ahead of data: a switch's queue 0, or the front
    /// of an RNIC's ACK queue (an RCCC credit goes there too); none crosses a failed link.
    fn send_frame(&mut self, port: PortId, frame: crate::fabric::Packet) {
        debug_assert!(matches!(frame.kind, PacketKind::FlowControl | PacketKind::Credit));
        let st = &mut self.ports[port.idx()];
        if st.down {
            return;
        }
        if st.on_host {
            self.nics[st.unit as usize].acks.push_front(frame);
        } else {
            st.enqueue(0, frame, &mut self.packets);
        }
        self.kick(port);
    }
}
