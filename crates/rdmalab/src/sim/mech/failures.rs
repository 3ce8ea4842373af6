//! Link failures: a link goes down (and maybe up again) at a scheduled time.
//!
//! What happens when link `l` goes down at `t` (docs/physics.md, "Link failures"):
//! * both ends lose carrier at once: the packets on the wire in either direction are lost,
//!   the packets queued for the link at a switch are discarded (their buffer released), and
//!   the PFC state of the two ports is cleared (no PAUSE or RESUME can cross any more);
//! * until routes change, a switch that picks the dead port for a packet drops it, and a
//!   host whose only link is dead holds its packets (the RNIC sees no carrier);
//! * after `SimConfig::reroute_delay` the control plane recomputes the routes the change
//!   affects (`topology::routing::update`; every route when a link comes back) over the
//!   links that are up (the reference does it at once, delay 0), and every flow
//!   resumes on the remaining paths, its losses repaired by go-back-N (NACK or timeout);
//! * a host that then has no route to a destination reports its flows to it as
//!   `unreachable` and abandons them, as an RC queue pair goes to the error state when its
//!   retries run out; the run ends instead of waiting for them.
//!
//! A link coming up is usable by its ends at once; routes include it again after the same
//! delay. Route recomputation is the control plane's one global act: every node's table
//! changes at the same instant, reached by an event with a delay, never from a packet
//! handler. A run without link events schedules nothing here and pays one flag test per
//! packet forwarded by a switch.
//!
//! The mechanism's steps are functions of the state they change (the ports, the routes,
//! one QP), each handed only that; the event handlers (`on_link_down`, `on_link_up`,
//! `on_reroute`) sequence them with what the simulator itself does to a lost packet
//! (`drop_packet`, a RESUME, a kick) and to a flow given up.

use crate::config::LinkEvent;
use crate::engine::EventQueue;
use crate::error::{Error, Result};
use crate::fabric::PortState;
use crate::ids::{FlowId, LinkId, NodeId, PortId, QpId};
use crate::rnic::Qp;
use crate::sim::{Event, Simulation};
use crate::topology::routing::Routes;
use crate::topology::{links_between, Topology};
use crate::units::Time;
use crate::workload::FlowSpec;

/// A flow abandoned because its destination became unreachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnreachableFlow {
    /// Flow index (position in the scenario's sorted flow list).
    pub flow: u32,
    /// Source host.
    pub src: NodeId,
    /// Destination host.
    pub dst: NodeId,
    /// Bytes of the flow.
    pub size: u64,
    /// When the flow started.
    pub start: Time,
    /// When its source found no route and gave it up.
    pub at: Time,
}

/// Checks the link events against the topology and schedules them on `queue` (from `new`).
pub(in crate::sim) fn schedule_link_events(
    events: &[LinkEvent],
    topo: &Topology,
    queue: &mut EventQueue<Event>,
) -> Result<()> {
    for (i, ev) in events.iter().enumerate() {
        let links = links_between(topo, ev.a, ev.b);
        if links.is_empty() {
            return Err(Error::scenario(format!("events[{i}]"), format!("no link joins nodes {} and {}", ev.a, ev.b)));
        }
        for l in links {
            let e = if ev.up { Event::LinkUp(l) } else { Event::LinkDown(l) };
            queue.push(ev.at, e);
        }
    }
    Ok(())
}

/// The two ends of link `l`: carrier goes (`down`) or comes back at both at once; a port
/// losing carrier forgets its PFC state (no PAUSE or RESUME can cross any more). Returns
/// the ends, or `None` if the link already was in that state.
pub(in crate::sim) fn set_carrier(ports: &mut [PortState], l: LinkId, down: bool, now: Time) -> Option<[PortId; 2]> {
    let ends = [PortId::new(2 * l.idx()), PortId::new(2 * l.idx() + 1)];
    if ports[ends[0].idx()].down == down {
        return None;
    }
    for p in ends {
        ports[p.idx()].down = down;
        if down {
            for q in 0..crate::fabric::NUM_PRIOS {
                ports[p.idx()].set_paused(q, false, now);
            }
        }
    }
    Some(ends)
}

/// The control plane's routes brought to the links that are up: only what the failures
/// since the last routes change (`Routes::reroute`), every route when a link came back.
pub(in crate::sim) fn reroute_over_live_links(routes: &mut Routes, topo: &Topology, ports: &[PortState]) {
    let up = |l: usize| !ports[2 * l].down;
    if let Err(e) = routes.reroute(topo, &up) {
        // The same topology built the first tables: this cannot fail on size or shape.
        unreachable!("routes were computable at start: {e}")
    }
}

/// The open QPs whose source has no route to their destination any more.
pub(in crate::sim) fn stranded(qps: &[Qp], routes: &Routes) -> Vec<QpId> {
    (0..qps.len())
        .map(QpId::new)
        .filter(|&q| {
            let qp = &qps[q.idx()];
            // (A slot never opened, as the origin order sets them up per flow, has no group.)
            !qp.finished && !qp.cc_group.is_none() && routes.next_hops(qp.src, qp.dst).is_empty()
        })
        .collect()
}

/// The record of flow `flow` (its spec `f`) given up at `now`.
pub(in crate::sim) fn unreachable_flow(flow: FlowId, f: &FlowSpec, now: Time) -> UnreachableFlow {
    UnreachableFlow { flow: flow.0, src: f.src, dst: f.dst, size: f.size, start: f.start, at: now }
}

/// Gives up every message of `qp` (its destination is partitioned away): returns their
/// flows, the QP finished. A QP carrying messages of an application that learns of failed
/// WRs (`learns`) is left alone (`None`): such an application hears of failures only
/// through `fabric.retry_limit` (`mech::retry`), so without it such a run ends stalled or at
/// its stop time instead.
pub(in crate::sim) fn abandon(qp: &mut Qp, learns: impl Fn(crate::ids::AppId) -> bool) -> Option<Vec<FlowId>> {
    if qp.messages.iter().any(|m| learns(m.app)) {
        return None;
    }
    let flows = qp.messages.drain(..).map(|m| m.flow).collect();
    qp.finished = true;
    qp.rto_deadline = Time::MAX;
    Some(flows)
}

impl Simulation {
    /// Link `l` fails: both ends lose what is on the wire and what is queued for it.
    pub(in crate::sim) fn on_link_down(&mut self, l: LinkId) {
        let Some(ends) = set_carrier(&mut self.ports, l, true, self.now) else { return };
        for p in ends {
            self.lose_wire(p);
        }
        for p in ends {
            self.discard_queued(p);
        }
        self.counters.link_failures += 1;
        self.queue.push(self.now + self.cfg.reroute_delay, Event::Reroute);
    }

    /// Link `l` is repaired: its ends may send again; routes take it back after the delay.
    pub(in crate::sim) fn on_link_up(&mut self, l: LinkId) {
        let Some(ends) = set_carrier(&mut self.ports, l, false, self.now) else { return };
        self.queue.push(self.now + self.cfg.reroute_delay, Event::Reroute);
        for p in ends {
            self.kick(p);
        }
    }

    /// The packets on the wire leaving `p` never arrive (their `Arrive` event finds the
    /// wire empty, or a later packet not yet due, and does nothing).
    fn lose_wire(&mut self, p: PortId) {
        if self.trace.is_some() && self.part.is_some() {
            self.trace_cut_wire_lost(p);
        }
        while let Some((_, parked, _)) = self.ports[p.idx()].in_flight.pop_front() {
            let pkt = self.packets.take(parked);
            self.lose(p, &pkt);
        }
    }

    /// A switch discards the packets queued for a dead port, releasing their buffer (which
    /// may resume an upstream port); a PFC frame queued there is simply gone.
    fn discard_queued(&mut self, p: PortId) {
        if self.ports[p.idx()].on_host {
            return;
        }
        let sw = self.ports[p.idx()].unit as usize;
        while let Some((class, pkt)) = self.ports[p.idx()].dequeue(&mut self.packets) {
            let mut resume = false;
            if class != 0 {
                resume = if self.mech.port_buffers.is_none() {
                    self.mmus[sw].release(pkt.ingress_local as usize, class, pkt.wire as u64)
                } else {
                    let buffers = self.mech.port_buffers.as_deref_mut().expect("per-port buffers");
                    super::port_buffers::release(buffers, &self.ports, sw, pkt.ingress_local, p, class, pkt.wire)
                };
            }
            self.lose(p, &pkt);
            if resume {
                self.send_resumes(sw, p, pkt.ingress, class as u8);
            }
        }
        if let Some(c) = self.ports[p.idx()].classes.as_deref_mut() {
            c.all_emptied(); // DWRR classes that empty lose their deficit
        }
    }

    /// Accounts a packet lost to a link failure.
    fn lose(&mut self, p: PortId, pkt: &crate::fabric::Packet) {
        self.counters.link_down_losses += 1;
        self.drop_packet(p, pkt);
    }

    /// The control plane: new routes over the links that are up; flows whose source has
    /// no route left are given up.
    pub(in crate::sim) fn on_reroute(&mut self) {
        reroute_over_live_links(&mut self.routes, &self.topo, &self.ports);
        self.counters.reroutes += 1;
        for q in stranded(&self.qps, &self.routes) {
            self.abandon_qp(q);
            self.last_completion = self.now;
        }
    }

    /// True if `src` has a route to `dst` now (checked when a flow starts).
    pub(in crate::sim) fn reachable(&self, src: NodeId, dst: NodeId) -> bool {
        !self.routes.next_hops(src, dst).is_empty()
    }

    /// Records flow `flow` as unreachable now.
    pub(in crate::sim) fn record_unreachable(&mut self, flow: FlowId) {
        self.unreachable.push(unreachable_flow(flow, &self.flows[flow.idx()], self.now));
        self.flows_done += 1;
        self.note_work_done();
    }

    /// Gives up the messages of `q` ([`abandon`]) and takes it out of its group.
    fn abandon_qp(&mut self, q: QpId) {
        let apps = &self.apps;
        let Some(flows) = abandon(&mut self.qps[q.idx()], |a| apps.learns_of_failures(a)) else { return };
        for f in flows {
            self.record_unreachable(f);
        }
        let nic = self.qps[q.idx()].nic;
        self.nics[nic.idx()].has_finished = true;
        self.leave_group(q);
    }
}
