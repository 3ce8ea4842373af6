//! ConWeave's hooks into the switch (`fabric::lb::conweave`): under
//! `path_selection = "conweave"`, `switch_receive_balanced` hands every packet to
//! [`receive`], and a reorder queue's timer comes to [`on_flush`]. The decisions are the
//! balancer's (functions of its per-ToR state and the packet); these functions sequence them
//! into actions (`mech::actions`) the switch's carry-out applies: a control packet consumed
//! at its source ToR, the control packets a destination ToR sends back, a data packet
//! admitted by the switch's one admission and then held in a reorder queue instead of its
//! egress queue, a queue released into the egress queue behind the TAIL or when its timer
//! fires.
//!
//! A held packet has been admitted (it counts against its ingress's buffer and PFC
//! thresholds, as packets in a paused egress queue of the Tofino2 implementation do); it is
//! released in arrival order, each into the egress queue of the class it was admitted in.
//! Under `lb.conweave_admit_on_release` (the ns-3 artifact's order) it is held
//! outside the buffer and admitted when released.

use super::actions::{Action, SwitchView};
use crate::fabric::lb::conweave::{FlushTimer, RxAction};
use crate::fabric::lb::LoadBalancer;
use crate::fabric::{PacketKind, PacketRef};
use crate::ids::{NodeId, PortId};
use crate::sim::Event;
use crate::units::Time;

/// Hook "switch ingress" under ConWeave: the packet parked at `r` arrived at switch `node`
/// on `at` (it has a route: the caller checked).
#[cold]
#[inline(never)]
pub(in crate::sim) fn receive(
    lb: &mut LoadBalancer,
    v: &mut SwitchView<'_>,
    (at, node, r): (PortId, NodeId, PacketRef),
    out: &mut Vec<Action>,
) {
    let now = v.now;
    let hops = v.routes.next_hops(node, v.packets.get(r).dst);
    let cw = lb.conweave().expect("conweave state under conweave");
    let pkt = v.packets.get(r);
    if pkt.kind == PacketKind::LbControl && cw.at_destination(node, pkt) {
        let pkt = v.packets.take(r);
        cw.on_control(now, node, &pkt);
        return;
    }
    let at_destination = pkt.kind == PacketKind::Data && cw.at_destination(node, pkt);
    let egress = lb.route(now, node, hops, v.packets.get_mut(r), v.ports);
    if !at_destination {
        return out.push(Action::Enqueue { at, egress, r, queue: None });
    }
    let mut timer = None;
    let mut tally = lb.tally;
    let cw = lb.conweave().expect("conweave state under conweave");
    let action = cw.destination(now, node, egress, v.packets.get_mut(r), &mut timer, &mut tally);
    if let RxAction::Hold(_) = action {
        tally.held += 1;
    }
    let mut controls = std::mem::take(&mut cw.outbox);
    lb.tally = tally;
    for c in controls.drain(..) {
        send_control(lb, v, (at, node), c, out);
    }
    if let Some(cw) = lb.conweave() {
        cw.outbox = controls;
    }
    if let Some(FlushTimer { queue, generation, at: when }) = timer {
        out.push(Action::Timer(when.max(now), Event::ReorderFlush(queue, generation)));
    }
    match action {
        RxAction::Forward => out.push(Action::Enqueue { at, egress, r, queue: None }),
        RxAction::Hold(q) => hold(lb, v, (at, egress, r), q, out),
        RxAction::ForwardThenRelease(q) => {
            out.push(Action::Enqueue { at, egress, r, queue: None });
            release(lb, v, q, out);
        }
    }
}

/// Control packet `c` from switch `node` towards its source ToR (the ECMP hash), in the
/// control class: no admission, ahead of data.
fn send_control(
    lb: &mut LoadBalancer,
    v: &mut SwitchView<'_>,
    (at, node): (PortId, NodeId),
    c: crate::fabric::Packet,
    out: &mut Vec<Action>,
) {
    let hops = v.routes.next_hops(node, c.dst);
    if hops.is_empty() {
        return;
    }
    let r = v.packets.park(c);
    // A control packet's route is the hash: it reads no port, so it may be taken before
    // the actions ahead of it are carried out.
    let egress = lb.route(v.now, node, hops, v.packets.get_mut(r), v.ports);
    out.push(Action::Enqueue { at, egress, r, queue: None });
}

/// Holds data packet `r` (arrived on `at`, bound for `egress`) in reorder queue `q`: the
/// switch admits it first (`Action::Hold`, then [`held`]), or, under admit-on-release, it
/// waits outside the buffer, stamped with its ingress. A special egress (its own admission
/// or arbiter) or a failed one forwards it instead.
fn hold(
    lb: &mut LoadBalancer,
    v: &mut SwitchView<'_>,
    (at, egress, r): (PortId, PortId, PacketRef),
    q: u32,
    out: &mut Vec<Action>,
) {
    let port = &v.ports[egress.idx()];
    if port.special || port.down {
        return out.push(Action::Enqueue { at, egress, r, queue: None });
    }
    let cw = lb.conweave().expect("conweave state under conweave");
    if !cw.admit_on_release() {
        return out.push(Action::Hold { at, egress, r, queue: q });
    }
    let local = v.ports[at.idx()].local;
    let pkt = v.packets.get_mut(r);
    pkt.ingress = at;
    pkt.ingress_local = local;
    cw.hold(v.now, q, r, pkt.pg, pkt.wire);
}

/// After the switch admitted the packet `Action::Hold` named (class `class`, `wire` bytes):
/// into its reorder queue.
pub(in crate::sim) fn held(lb: &mut LoadBalancer, now: Time, q: u32, r: PacketRef, class: u8, wire: u32) {
    if let Some(cw) = lb.conweave() {
        cw.hold(now, q, r, class, wire);
    }
}

/// Releases reorder queue `q` into its host port's egress queues, in arrival order, then
/// starts that port.
fn release(lb: &mut LoadBalancer, v: &SwitchView<'_>, q: u32, out: &mut Vec<Action>) {
    let Some(cw) = lb.conweave() else { return };
    let mut released = std::mem::take(&mut cw.released);
    let egress = cw.release(v.now, q, &mut released);
    let later = cw.admit_on_release();
    for (r, class, wire) in released.drain(..) {
        out.push(if later {
            // Admitted now, at its own ingress (stamped when held).
            Action::AdmitReleased { at: v.packets.get(r).ingress, egress, r }
        } else {
            Action::Requeue { egress, class, r, wire }
        });
    }
    cw.released = released;
    out.push(Action::Kick(egress));
}

/// Hook "timer": reorder queue `q`'s deadline; released unless the TAIL did it first or the
/// deadline moved.
pub(in crate::sim) fn on_flush(
    lb: &mut LoadBalancer,
    v: &SwitchView<'_>,
    (q, generation): (u32, u32),
    out: &mut Vec<Action>,
) {
    if lb.conweave().is_some_and(|cw| cw.timer_live(q, generation)) {
        lb.tally.timeouts += 1;
        release(lb, v, q, out);
    }
}

/// The port whose reorder queue `q` is (the origin of its timer).
pub(in crate::sim) fn queue_port(lb: Option<&mut LoadBalancer>, q: u32) -> PortId {
    lb.and_then(|l| l.conweave()).map_or(PortId::NONE, |cw| cw.queue_port(q))
}
