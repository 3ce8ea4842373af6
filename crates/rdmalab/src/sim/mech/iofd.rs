//! IOFD's hooks into the switch handlers (`fabric::deflection`, `fabric::resequencer`):
//! `switch_receive` hands data packets here when IOFD is on, and `switch_send` calls
//! [`on_dequeue`] for a packet carrying one of the IOFD flags. Everything read or written is
//! the current switch's: its ports' queues, its pins, its re-sequencer. After such a packet
//! has left, `switch_send` calls [`Simulation::iofd_wake`]: its departure freed MMU space
//! that packets waiting in the re-sequencer may need.
//!
//! The mechanism's decisions are functions of the IOFD state and what they read of the
//! switch (its ports, its MMU, the routes), never of the simulation. What it decides to
//! forward re-enters the switch's own admission (`switch_enqueue_to`), so the handlers under
//! `impl Simulation` below only sequence those decisions with that admission.

use crate::config::SimConfig;
use crate::engine::EventQueue;
use crate::fabric::deflection::{
    choose, Choice, Iofd, Load, CLASS_MASK, CLASS_SHIFT, COUNT_MASK, ESCAPE, ON_DEQUEUE, PINNED, WAKE,
};
use crate::fabric::resequencer::Verdict;
use crate::fabric::{Packet, PortState, SwitchMmu, TxClock, NUM_PRIOS};
use crate::ids::{NodeId, PortId};
use crate::sim::{Event, Simulation};
use crate::stats::Counters;
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;

/// What the deflection decision reads of the fabric at one switch.
struct SwitchView<'a> {
    /// Every port's state (queue lengths, which face hosts).
    pub ports: &'a [PortState],
    /// The routing tables (equal-cost next hops).
    pub routes: &'a Routes,
    /// The graph (a port's peer, a node's ports).
    pub topo: &'a Topology,
}

/// Hook "switch ingress", the deflection decision for a data packet at switch `sw` (node
/// `node`, arrived on `at`) whose ECMP port is `ecmp`: a pinned flow follows its pin, else
/// the least loaded port under the thresholds. Returns the egress; marks the packet's
/// flags.
fn deflect(
    iofd: &mut Iofd,
    view: SwitchView<'_>,
    counters: &mut Counters,
    (at, node, sw): (PortId, NodeId, usize),
    ecmp: PortId,
    pkt: &mut Packet,
) -> PortId {
    let SwitchView { ports, routes, topo } = view;
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
    counters.deflections += 1;
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
fn retry_later(
    iofd: &mut Iofd,
    sw: usize,
    (egress, st): (PortId, &PortState),
    wire: u32,
    (clock, now): (&TxClock, Time),
    queue: &mut EventQueue<Event>,
) {
    if std::mem::replace(&mut iofd.switches[sw].retry_pending, true) {
        return;
    }
    queue.push(now + clock.tx(st.rate_class, st.rate, wire), Event::IofdRetry(egress));
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

impl Simulation {
    /// A data packet at switch node `node` arrived on `at`, whose ECMP port is `ecmp`:
    /// re-sequenced at the last hop, possibly deflected elsewhere. Out of line, so that the
    /// forwarding path of a run without IOFD carries none of its code.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn iofd_receive(&mut self, at: PortId, node: NodeId, ecmp: PortId, mut pkt: Packet) {
        let sw = self.ports[at.idx()].unit as usize;
        if self.ports[ecmp.idx()].peer_on_host {
            return self.iofd_last_hop(at, sw, ecmp, pkt);
        }
        let Simulation { mech, ports, routes, topo, counters, .. } = self;
        let egress = match mech.iofd.as_deref_mut() {
            Some(iofd) => deflect(iofd, SwitchView { ports, routes, topo }, counters, (at, node, sw), ecmp, &mut pkt),
            None => ecmp,
        };
        let queue = queue_after_deflection(self.mech.iofd.as_deref(), &pkt);
        self.iofd_enqueue(at, egress, pkt, queue);
    }

    /// The last hop: forward in order, hold what is ahead, release what now follows.
    fn iofd_last_hop(&mut self, at: PortId, sw: usize, egress: PortId, mut pkt: Packet) {
        let Some(iofd) = self.mech.iofd.as_deref_mut() else { return };
        if !iofd.cfg.resequence {
            pkt.deflections |= WAKE;
            return self.iofd_enqueue(at, egress, pkt, last_hop_queue(&pkt));
        }
        pkt.ingress = at;
        pkt.ingress_local = self.ports[at.idx()].local;
        let (cap, timeout) = (iofd.cfg.resequence_bytes, iofd.timeout);
        match iofd.switches[sw].reseq.arrive(&pkt, self.now, cap, timeout) {
            Verdict::Held => {}
            Verdict::Forward => {
                self.iofd_admit(sw, at, egress, pkt);
                self.forward_released(sw, egress, false);
            }
            Verdict::Escape => {
                self.counters.reseq_escapes += 1;
                self.forward_released(sw, egress, true);
                self.iofd_admit(sw, at, egress, pkt);
            }
        }
    }

    /// Forwards the packets the last `arrive` released (`escaped`: out of order).
    fn forward_released(&mut self, sw: usize, egress: PortId, escaped: bool) {
        let Some(iofd) = self.mech.iofd.as_deref_mut() else { return };
        let released = iofd.switches[sw].reseq.take_released();
        for p in &released {
            if escaped {
                self.counters.reseq_escapes += 1;
            } else {
                self.counters.resequenced += 1;
            }
            self.iofd_admit(sw, p.ingress, egress, *p);
        }
        if let Some(iofd) = self.mech.iofd.as_deref_mut() {
            iofd.switches[sw].reseq.restore_released(released);
        }
    }

    /// A packet the re-sequencer lets go at switch `sw` enters the MMU at its ingress `at`
    /// like any arrival, unless its class is lossless and the MMU has no room for it below
    /// the PFC threshold (or packets already wait: order): then it waits in the
    /// re-sequencer instead of being dropped or taking headroom. Upstream was never paused
    /// for it while it was held, so a burst released by a filled gap can exceed the
    /// ingress's headroom; dropping it would make a lossless fabric lossy (issue 12's rule:
    /// held packets must not cause drops either). It is flagged `WAKE` so that its own
    /// departure retries the waiting line.
    fn iofd_admit(&mut self, sw: usize, at: PortId, egress: PortId, mut pkt: Packet) {
        pkt.deflections |= WAKE;
        let Some(iofd) = self.mech.iofd.as_deref_mut() else { return };
        let st = &mut iofd.switches[sw];
        if st.reseq.has_waiting() || refused_losslessly(&self.mmus[sw], &self.ports, at, egress, &pkt) {
            st.reseq.wait(pkt, egress);
            let egress_state = (egress, &self.ports[egress.idx()]);
            return retry_later(iofd, sw, egress_state, pkt.wire, (&self.clock, self.now), &mut self.queue);
        }
        self.iofd_enqueue(at, egress, pkt, last_hop_queue(&pkt));
    }

    /// A `WAKE` packet has left switch `sw` (after `transmit`, so every port's scheduler is
    /// at rest): offers the waiting line to the MMU, head first, until it refuses one. A
    /// packet admitted here may start another port, whose departure calls this again: the
    /// head is taken out before it is offered, so no packet is offered twice.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn iofd_wake(&mut self, sw: usize) {
        loop {
            let Some(iofd) = self.mech.iofd.as_deref_mut() else { return };
            let Some((pkt, egress)) = iofd.switches[sw].reseq.next_waiting() else { return };
            if refused_losslessly(&self.mmus[sw], &self.ports, pkt.ingress, egress, &pkt) {
                iofd.switches[sw].reseq.put_back(pkt, egress);
                let egress_state = (egress, &self.ports[egress.idx()]);
                return retry_later(iofd, sw, egress_state, pkt.wire, (&self.clock, self.now), &mut self.queue);
            }
            self.iofd_enqueue(pkt.ingress, egress, pkt, last_hop_queue(&pkt));
        }
    }

    /// The retry `retry_later` scheduled.
    pub(in crate::sim) fn on_iofd_retry(&mut self, egress: PortId) {
        let sw = self.ports[egress.idx()].unit as usize;
        if let Some(iofd) = self.mech.iofd.as_deref_mut() {
            iofd.switches[sw].retry_pending = false;
        }
        self.iofd_wake(sw);
    }

    /// `switch_enqueue_to` for IOFD's paths, into egress queue `queue`: one out-of-line
    /// copy, so that the forwarding fast path alone inlines the admission.
    #[inline(never)]
    fn iofd_enqueue(&mut self, at: PortId, egress: PortId, pkt: Packet, queue: u8) {
        self.switch_enqueue_to(at, egress, pkt, queue);
    }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{ecn::EcnOverrides, EcnConfig, IofdConfig};
    use crate::topology::builders;
    use crate::units::Rate;

    fn thresholds(sim: &SimConfig, threshold: u64) -> Vec<u64> {
        let topo = builders::star(3, Rate::gbps(100), Time::from_us(1)).expect("star");
        let cfg = IofdConfig { threshold, ..IofdConfig::default() };
        build(cfg, &topo, sim, 1).thresholds
    }

    #[test]
    fn iofd_threshold_defaults_to_the_ports_kmin_with_the_fabric_override() {
        // The reference's 100 Gb/s Kmin, then `fabric.ecn_kmin` (issue 11) where it is set:
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
