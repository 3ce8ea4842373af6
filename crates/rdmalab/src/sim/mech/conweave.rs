//! ConWeave's hooks into the switch handlers (`fabric::lb::conweave`): under
//! `path_selection = "conweave"`, `switch_receive_balanced` hands every packet here. The
//! decisions are the balancer's (functions of its per-ToR state and the packet); this file
//! only sequences them with what the simulator carries out: a control packet consumed at
//! its source ToR, the control packets a destination ToR sends back, a data packet admitted
//! by the MMU and then held in a reorder queue instead of its egress queue, a queue
//! released into the egress queue behind the TAIL or when its timer fires.
//!
//! A held packet has been admitted (it counts against its ingress's buffer and PFC
//! thresholds, as packets in a paused egress queue of the Tofino2 implementation do); it is
//! released in arrival order, each into the egress queue of the class it was admitted in.

use crate::fabric::lb::conweave::{FlushTimer, RxAction};
use crate::fabric::{PacketKind, PacketRef};
use crate::ids::{NodeId, PortId};
use crate::sim::{Event, Simulation};

impl Simulation {
    /// A packet at switch `node`, arrived on `at`, parked at `r`, whose next hops are
    /// `hops` (not empty), under ConWeave.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn conweave_receive(&mut self, at: PortId, r: PacketRef, node: NodeId) {
        let dst = self.packets.get(r).dst;
        let hops = self.routes.next_hops(node, dst);
        let lb = self.mech.lb.as_deref_mut().expect("tested by the caller");
        let pkt = self.packets.get_mut(r);
        let cw = lb.conweave().expect("conweave state under conweave");
        if pkt.kind == PacketKind::LbControl && cw.at_destination(node, pkt) {
            let now = self.now;
            let pkt = self.packets.take(r);
            if let Some(cw) = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()) {
                cw.on_control(now, node, &pkt);
            }
            return;
        }
        let at_destination = pkt.kind == PacketKind::Data && cw.at_destination(node, pkt);
        let egress = lb.route(self.now, node, hops, pkt, &self.ports);
        if !at_destination {
            return self.switch_enqueue_parked(at, egress, r, None);
        }
        let mut timer = None;
        let lb = self.mech.lb.as_deref_mut().expect("tested above");
        let mut tally = lb.tally;
        let cw = lb.conweave().expect("conweave state under conweave");
        let action = cw.destination(self.now, node, egress, self.packets.get_mut(r), &mut timer, &mut tally);
        if let RxAction::Hold(_) = action {
            tally.held += 1;
        }
        let mut out = std::mem::take(&mut cw.outbox);
        lb.tally = tally;
        for c in out.drain(..) {
            self.conweave_send_control(at, node, c);
        }
        if let Some(cw) = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()) {
            cw.outbox = out;
        }
        if let Some(FlushTimer { queue, generation, at: when }) = timer {
            self.queue.push(when.max(self.now), Event::ReorderFlush(queue, generation));
        }
        match action {
            RxAction::Forward => self.switch_enqueue_parked(at, egress, r, None),
            RxAction::Hold(q) => self.conweave_hold(at, egress, r, q),
            RxAction::ForwardThenRelease(q) => {
                self.switch_enqueue_parked(at, egress, r, None);
                self.conweave_release(q);
            }
        }
    }

    /// Sends control packet `c` from switch `node` towards its source ToR (the ECMP hash),
    /// in the control class: no admission, ahead of data.
    fn conweave_send_control(&mut self, at: PortId, node: NodeId, c: crate::fabric::Packet) {
        let hops = self.routes.next_hops(node, c.dst);
        if hops.is_empty() {
            return;
        }
        let r = self.packets.park(c);
        let lb = self.mech.lb.as_deref_mut().expect("conweave runs");
        let egress = lb.route(self.now, node, hops, self.packets.get_mut(r), &self.ports);
        self.switch_enqueue_parked(at, egress, r, None);
    }

    /// Admits the data packet `r` at ingress `at` by the switch's one admission
    /// (`switch.rs::admit`), then holds it in reorder queue `q` rather than in `egress`'s
    /// queue. A special egress (its own admission or arbiter) or a failed one forwards it
    /// instead.
    fn conweave_hold(&mut self, at: PortId, egress: PortId, r: PacketRef, q: u32) {
        if self.ports[egress.idx()].special || self.ports[egress.idx()].down {
            return self.switch_enqueue_parked(at, egress, r, None);
        }
        let later = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()).is_some_and(|cw| cw.admit_on_release());
        let (class, wire) = if later {
            // Held outside the buffer and admitted at release (issue 46: the artifact's order).
            let local = self.ports[at.idx()].local;
            let pkt = self.packets.get_mut(r);
            pkt.ingress = at;
            pkt.ingress_local = local;
            (pkt.pg as usize, pkt.wire)
        } else {
            let Some((class, wire, _)) = self.admit::<false>(at, egress, r) else { return };
            (class, wire)
        };
        let now = self.now;
        if let Some(cw) = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()) {
            cw.hold(now, q, r, class as u8, wire);
        }
    }

    /// Releases reorder queue `q` into its host port's egress queues, in arrival order.
    fn conweave_release(&mut self, q: u32) {
        let now = self.now;
        let Some(cw) = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()) else { return };
        let mut released = std::mem::take(&mut cw.released);
        let port = cw.release(now, q, &mut released);
        let later = cw.admit_on_release();
        for (r, class, wire) in released.drain(..) {
            if later {
                // Admitted now, at its own ingress (issue 46: the ns-3 artifact's order).
                let at = self.packets.get(r).ingress;
                self.switch_enqueue_parked(at, port, r, None);
            } else {
                self.ports[port.idx()].enqueue_parked(class as usize, r, wire);
            }
        }
        if let Some(cw) = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()) {
            cw.released = released;
        }
        self.switch_kick(port);
    }

    /// A reorder queue's timer: released unless the TAIL did it first or the deadline moved.
    pub(in crate::sim) fn on_reorder_flush(&mut self, q: u32, generation: u32) {
        let live =
            self.mech.lb.as_deref_mut().and_then(|l| l.conweave()).is_some_and(|cw| cw.timer_live(q, generation));
        if live {
            if let Some(lb) = self.mech.lb.as_deref_mut() {
                lb.tally.timeouts += 1;
            }
            self.conweave_release(q);
        }
    }

    /// The node whose reorder queue `q` is (the origin of its timer).
    pub(in crate::sim) fn reorder_queue_node(&mut self, q: u32) -> NodeId {
        let port = self.mech.lb.as_deref_mut().and_then(|l| l.conweave()).map_or(PortId::NONE, |cw| cw.queue_port(q));
        self.ports[port.idx()].node
    }
}
