//! IOFD's hooks into the switch handlers (`fabric::deflection`, `fabric::resequencer`):
//! `switch_receive` hands data packets to [`receive`] when IOFD is on, and `switch_send`
//! calls [`on_dequeue`] for a packet carrying one of the IOFD flags. Everything read or
//! written is the current switch's: its ports' queues, its pins, its re-sequencer. After a
//! `WAKE` packet has left, the switch offers the re-sequencer's waiting line to its buffer
//! again, one packet per [`wake_one`]: that departure freed space those packets may need.
//!
//! The mechanism's decisions are functions of the IOFD state and what they read of the
//! switch (a `SwitchView`: its ports, its MMU, the routes), never of the simulation. What it
//! decides to forward re-enters the switch's one admission as an `Action::Enqueue`.
//!
//! The last hop's packets that the re-sequencer lets go are offered in order, each only
//! once the previous one is admitted (an admission changes the buffer the next is tested
//! against): they join the waiting line and an `Action::WakeIofd` offers it, head first,
//! until the buffer refuses one, exactly as if each had been offered on its own.

use super::actions::{Action, SwitchView};
use crate::config::SimConfig;
use crate::fabric::deflection::{
    choose, Choice, Iofd, Load, CLASS_MASK, CLASS_SHIFT, COUNT_MASK, ESCAPE, ON_DEQUEUE, PINNED, WAKE,
};
use crate::fabric::resequencer::Verdict;
use crate::fabric::{Packet, PortState, SwitchMmu, NUM_PRIOS};
use crate::ids::{NodeId, PortId};
use crate::sim::Event;
use crate::topology::Topology;

/// Hook "switch ingress", the deflection decision for a data packet at switch `sw` (node
/// `node`, arrived on `at`) whose ECMP port is `ecmp`: a pinned flow follows its pin, else
/// the least loaded port under the thresholds. Returns the egress; marks the packet's
/// flags.
fn deflect(
    iofd: &mut Iofd,
    view: &SwitchView<'_>,
    (at, node, sw): (PortId, NodeId, usize),
    ecmp: PortId,
    pkt: &mut Packet,
) -> PortId {
    let (ports, routes, topo) = (view.ports, view.routes, view.topo);
    let class = pkt.pg as usize;
    let count = pkt.deflections & COUNT_MASK;
    let max = iofd.cfg.max_deflections;
    let state = &mut iofd.switches[sw];
    let choice = match state.pin(pkt.qp_key()) {
        Some((port, _)) if port == ecmp => Choice::Ecmp,
        Some((port, escape)) if count < max => Choice::Deflect { port, escape },
        _ => {
            let th = &iofd.thresholds;
            let load = |p: PortId| Load { port: p, queued: ports[p.idx()].queue_bytes[class], threshold: th[p.idx()] };
            let hops = routes.next_hops(node, pkt.dst);
            let far = iofd.cfg.nonminimal.then(|| {
                topo.nodes[node.idx()].ports.iter().copied().filter(|&p| {
                    let peer = topo.ports[p.idx()].peer_node;
                    p != at
                        && !ports[p.idx()].peer_on_host
                        && !hops.contains(&p)
                        && routes.next_hops(peer, pkt.dst).iter().any(|q| topo.ports[q.idx()].peer_node != node)
                })
            });
            choose(load(ecmp), count, max, hops.iter().map(|&p| load(p)), far.into_iter().flatten().map(load))
        }
    };
    let (port, escape) = match choice {
        Choice::Ecmp => {
            if state.pin(pkt.qp_key()).is_some_and(|(p, _)| p == ecmp) {
                state.hold_pin(pkt.qp_key(), ecmp, false);
                pkt.deflections |= PINNED;
            }
            return ecmp;
        }
        Choice::Deflect { port, escape } => (port, escape),
    };
    iofd.tally.deflections += 1;
    state.hold_pin(pkt.qp_key(), port, escape);
    pkt.deflections = (count + 1) | (pkt.deflections & !COUNT_MASK) | PINNED | if escape { ESCAPE } else { 0 };
    port
}

/// The egress queue of a deflected packet: an escaping packet queues in the escape class,
/// so that the next switch's PAUSE of that class (the class it arrives in there) holds it;
/// it is admitted here in the class it came in, whose PAUSE holds its upstream.
fn queue_after_deflection(iofd: Option<&Iofd>, pkt: &Packet) -> u8 {
    match iofd {
        Some(i) if pkt.deflections & ESCAPE != 0 => i.cfg.escape_pg,
        _ => pkt.pg,
    }
}

/// Whether `mmu` (a switch's) has no room below the PFC threshold for `pkt` arriving on
/// `at` in a lossless class: the headroom is for what upstream sends after a PAUSE, not for
/// packets already in the switch. (A lossy class drops as it would without IOFD; a failed
/// egress loses the packet as always.)
fn refused_losslessly(mmu: &SwitchMmu, ports: &[PortState], at: PortId, egress: PortId, pkt: &Packet) -> bool {
    let class = pkt.pg as usize;
    class != 0
        && !ports[egress.idx()].down
        && mmu.lossless(class)
        && mmu.over_threshold(ports[at.idx()].local as usize, class, pkt.wire as u64)
}

/// Schedules on `queue` a retry of the waiting line of switch `sw` one packet time (`wire`
/// bytes at `egress`, whose state is `st`) after `now`, unless one is pending. The
/// departures of `WAKE` packets retry as soon as they free space; this covers room freed by
/// any other packet (the dynamic threshold rises whenever the switch's shared buffer
/// drains), which carries no flag.
fn retry_later(iofd: &mut Iofd, sw: usize, v: &SwitchView<'_>, egress: PortId, wire: u32, out: &mut Vec<Action>) {
    if std::mem::replace(&mut iofd.switches[sw].retry_pending, true) {
        return;
    }
    let st = &v.ports[egress.idx()];
    out.push(Action::Timer(v.now + v.clock.tx(st.rate_class, st.rate, wire), Event::IofdRetry(egress)));
}

/// Hook "switch egress, on dequeue": a packet with IOFD flags leaves switch `sw` (or is
/// dropped there): its pin is released; an escaping packet takes the escape class and no
/// more deflections. Out of line and by value, so that the scheduler's fast path keeps its
/// packet in registers.
#[cold]
#[inline(never)]
pub(in crate::sim) fn on_dequeue(iofd: Option<&mut Iofd>, sw: usize, queue: usize, mut pkt: Packet) -> Packet {
    let Some(iofd) = iofd else { return pkt };
    if pkt.deflections & PINNED != 0 {
        iofd.switches[sw].release_pin(pkt.qp_key());
    }
    if pkt.deflections & ESCAPE != 0 {
        let saved = (pkt.pg << CLASS_SHIFT) & CLASS_MASK;
        pkt.pg = iofd.cfg.escape_pg;
        pkt.deflections = iofd.cfg.max_deflections | saved;
    } else if pkt.pg as usize != queue {
        // The last hop: admitted in the escape class it came in, sent in its own.
        pkt.pg = queue as u8;
        pkt.deflections &= !CLASS_MASK;
    }
    pkt.deflections &= !ON_DEQUEUE;
    pkt
}

/// The queue of a packet at its last hop: its own class, which an escaped packet carries in
/// its flags (it is admitted in the escape class it arrives in, and leaves in its own, so
/// that all of a QP's packets leave through one queue, in order).
fn last_hop_queue(pkt: &Packet) -> u8 {
    match (pkt.deflections & CLASS_MASK) >> CLASS_SHIFT {
        0 => pkt.pg,
        saved => saved,
    }
}

/// Hook "switch ingress" under IOFD: data packet `pkt` at switch `sw` (node `node`),
/// arrived on `at`, whose ECMP port is `ecmp`: re-sequenced at the last hop, possibly
/// deflected elsewhere before it. Out of line, so that the forwarding path of a run without
/// IOFD carries none of its code.
#[cold]
#[inline(never)]
pub(in crate::sim) fn receive(
    iofd: &mut Iofd,
    v: &mut SwitchView<'_>,
    (at, node, sw): (PortId, NodeId, usize),
    ecmp: PortId,
    mut pkt: Packet,
    out: &mut Vec<Action>,
) {
    if v.ports[ecmp.idx()].peer_on_host {
        return last_hop(iofd, v, (at, sw), ecmp, pkt, out);
    }
    let egress = deflect(iofd, v, (at, node, sw), ecmp, &mut pkt);
    let queue = queue_after_deflection(Some(iofd), &pkt);
    let r = v.packets.park(pkt);
    out.push(Action::Enqueue { at, egress, r, queue: Some(queue) });
}

/// The last hop: forward in order, hold what is ahead, release what now follows.
fn last_hop(
    iofd: &mut Iofd,
    v: &mut SwitchView<'_>,
    (at, sw): (PortId, usize),
    egress: PortId,
    mut pkt: Packet,
    out: &mut Vec<Action>,
) {
    if !iofd.cfg.resequence {
        pkt.deflections |= WAKE;
        let queue = last_hop_queue(&pkt);
        let r = v.packets.park(pkt);
        return out.push(Action::Enqueue { at, egress, r, queue: Some(queue) });
    }
    pkt.ingress = at;
    pkt.ingress_local = v.ports[at.idx()].local;
    let (cap, timeout) = (iofd.cfg.resequence_bytes, iofd.timeout);
    let mut offer = Offer::start(iofd, sw);
    match iofd.switches[sw].reseq.arrive(&pkt, v.now, cap, timeout) {
        Verdict::Held => {}
        Verdict::Forward => {
            offer.add(iofd, v, egress, pkt, out);
            take_released(iofd, v, (sw, egress), false, (&mut offer, out));
        }
        Verdict::Escape => {
            iofd.tally.reseq_escapes += 1;
            take_released(iofd, v, (sw, egress), true, (&mut offer, out));
            offer.add(iofd, v, egress, pkt, out);
        }
    }
    offer.finish(out);
}

/// Offers the packets the last `arrive` released (`escaped`: out of order).
fn take_released(
    iofd: &mut Iofd,
    v: &SwitchView<'_>,
    (sw, egress): (usize, PortId),
    escaped: bool,
    (offer, out): (&mut Offer, &mut Vec<Action>),
) {
    let released = iofd.switches[sw].reseq.take_released();
    for p in &released {
        if escaped {
            iofd.tally.reseq_escapes += 1;
        } else {
            iofd.tally.resequenced += 1;
        }
        offer.add(iofd, v, egress, *p, out);
    }
    iofd.switches[sw].reseq.restore_released(released);
}

/// The packets one arrival lets go at switch `sw`, offered to the buffer in order. Each
/// joins the waiting line (flagged `WAKE`, so that its own departure retries the line):
/// behind packets already waiting it stays there until a retry; otherwise the line is
/// offered at once (`Action::WakeIofd`), head first, until the buffer refuses one.
///
/// Why wait at all: a packet the re-sequencer lets go enters the buffer at its ingress like
/// any arrival, unless its class is lossless and the buffer has no room below the PFC
/// threshold. Upstream was never paused for it while it was held, so a burst released by a
/// filled gap can exceed the ingress's headroom; dropping it would make a lossless fabric
/// lossy (IOFD's rule: held packets must not cause drops either).
struct Offer {
    sw: usize,
    /// Packets waited before this arrival: the new ones queue behind them.
    behind: bool,
    /// Some packet was added and the line is to be offered now.
    wake: bool,
}

impl Offer {
    fn start(iofd: &Iofd, sw: usize) -> Offer {
        Offer { sw, behind: iofd.switches[sw].reseq.has_waiting(), wake: false }
    }

    fn add(&mut self, iofd: &mut Iofd, v: &SwitchView<'_>, egress: PortId, mut pkt: Packet, out: &mut Vec<Action>) {
        pkt.deflections |= WAKE;
        iofd.switches[self.sw].reseq.wait(pkt, egress);
        if self.behind {
            retry_later(iofd, self.sw, v, egress, pkt.wire, out);
        } else {
            self.wake = true;
        }
    }

    fn finish(self, out: &mut Vec<Action>) {
        if self.wake {
            out.push(Action::WakeIofd { sw: self.sw });
        }
    }
}

/// Hook "space freed" (a `WAKE` packet left switch `sw`, a retry fired, or an arrival's
/// packets joined an empty line): offers the head of the waiting line to the buffer. True
/// when it was admitted (an `Action::Enqueue`: the caller carries it out and offers the
/// next); false when the line is empty or the buffer refuses the head, which goes back and
/// is retried one packet time later. The head is taken out before it is offered, so a
/// departure it causes, which offers the line again, never offers it twice.
pub(in crate::sim) fn wake_one(iofd: &mut Iofd, v: &mut SwitchView<'_>, sw: usize, out: &mut Vec<Action>) -> bool {
    let Some((pkt, egress)) = iofd.switches[sw].reseq.next_waiting() else { return false };
    if refused_losslessly(&v.mmus[sw], v.ports, pkt.ingress, egress, &pkt) {
        iofd.switches[sw].reseq.put_back(pkt, egress);
        retry_later(iofd, sw, v, egress, pkt.wire, out);
        return false;
    }
    let (at, queue) = (pkt.ingress, last_hop_queue(&pkt));
    let r = v.packets.park(pkt);
    out.push(Action::Enqueue { at, egress, r, queue: Some(queue) });
    true
}

/// Hook "timer": the retry `retry_later` scheduled at switch `sw` is due (the caller then
/// offers the line).
pub(in crate::sim) fn on_retry(iofd: &mut Iofd, sw: usize) {
    iofd.switches[sw].retry_pending = false;
}

/// IOFD's per-port thresholds (the given one, or the port's ECN Kmin: deflect before
/// marking; without ECN, the Kmin marking would use) and an empty state per switch.
pub(super) fn build(cfg: crate::fabric::IofdConfig, topo: &Topology, sim: &SimConfig, switches: usize) -> Iofd {
    let ecn = sim.ecn.clone().unwrap_or_else(crate::fabric::EcnConfig::hpcc_default);
    let thresholds = topo
        .ports
        .iter()
        .map(|p| match cfg.threshold {
            0 => ecn.for_rate_or_scaled(topo.links[p.link.idx()].rate).map_or(u64::MAX, |e| e.kmin),
            t => t,
        })
        .collect();
    let lossy = !(1..NUM_PRIOS).all(|q| sim.pfc_on(q)) || topo.links.iter().any(|l| l.error_rate > 0.0);
    Iofd {
        cfg,
        thresholds,
        switches: vec![Default::default(); switches],
        timeout: lossy.then_some(cfg.resequence_timeout),
        tally: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{ecn::EcnOverrides, EcnConfig, IofdConfig};
    use crate::topology::builders;
    use crate::units::{Rate, Time};

    fn thresholds(sim: &SimConfig, threshold: u64) -> Vec<u64> {
        let topo = builders::star(3, Rate::gbps(100), Time::from_us(1)).expect("star");
        let cfg = IofdConfig { threshold, ..IofdConfig::default() };
        build(cfg, &topo, sim, 1).thresholds
    }

    #[test]
    fn iofd_threshold_defaults_to_the_ports_kmin_with_the_fabric_override() {
        // The reference's 100 Gb/s Kmin, then `fabric.ecn_kmin` where it is set:
        // IOFD deflects before the port would mark.
        let plain = SimConfig::default();
        assert!(thresholds(&plain, 0).iter().all(|&t| t == 400_000));
        let o = EcnOverrides { kmin: Some(20_000), kmax: None, pmax: None };
        let overridden = SimConfig { ecn: Some(EcnConfig::hpcc_default().with_overrides(o)), ..SimConfig::default() };
        assert!(thresholds(&overridden, 0).iter().all(|&t| t == 20_000));
        // An explicit threshold wins over both.
        assert!(thresholds(&overridden, 7_000).iter().all(|&t| t == 7_000));
    }
}
