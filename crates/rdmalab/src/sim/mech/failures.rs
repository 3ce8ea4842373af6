//! Link failures: a link goes down (and maybe up again) at a scheduled time.
//!
//! What happens when link `l` goes down at `t` (docs/physics.md, "Link failures"):
//! * both ends lose carrier at once: the packets on the wire in either direction are lost,
//!   the packets queued for the link at a switch are discarded (their buffer released), and
//!   the PFC state of the two ports is cleared (no PAUSE or RESUME can cross any more);
//! * until routes change, a switch that picks the dead port for a packet drops it, and a
//!   host whose only link is dead holds its packets (the RNIC sees no carrier);
//! * after `SimConfig::reroute_delay` the control plane recomputes every node's routes over
//!   the links that are up (the reference does it at once, delay 0), and every flow
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

use crate::error::{Error, Result};
use crate::ids::{LinkId, NodeId, PortId, QpId};
use crate::sim::{Event, Simulation};
use crate::topology::links_between;
use crate::topology::routing::Routes;
use crate::units::Time;

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

impl Simulation {
    /// Checks the link events against the topology and schedules them (from `new`).
    pub(in crate::sim) fn schedule_link_events(&mut self) -> Result<()> {
        for (i, ev) in self.cfg.link_events.clone().iter().enumerate() {
            let links = links_between(&self.topo, ev.a, ev.b);
            if links.is_empty() {
                return Err(Error::scenario(
                    format!("events[{i}]"),
                    format!("no link joins nodes {} and {}", ev.a, ev.b),
                ));
            }
            for l in links {
                let e = if ev.up { Event::LinkUp(l) } else { Event::LinkDown(l) };
                self.queue.push(ev.at, e);
            }
        }
        Ok(())
    }

    /// Link `l` fails: both ends lose what is on the wire and what is queued for it.
    pub(in crate::sim) fn on_link_down(&mut self, l: LinkId) {
        let (pa, pb) = (PortId::new(2 * l.idx()), PortId::new(2 * l.idx() + 1));
        if self.ports[pa.idx()].down {
            return;
        }
        for p in [pa, pb] {
            self.ports[p.idx()].down = true;
            self.lose_wire(p);
            for q in 0..crate::fabric::NUM_PRIOS {
                self.ports[p.idx()].set_paused(q, false, self.now);
            }
        }
        for p in [pa, pb] {
            self.discard_queued(p);
        }
        self.counters.link_failures += 1;
        self.queue.push(self.now + self.cfg.reroute_delay, Event::Reroute);
    }

    /// Link `l` is repaired: its ends may send again; routes take it back after the delay.
    pub(in crate::sim) fn on_link_up(&mut self, l: LinkId) {
        let (pa, pb) = (PortId::new(2 * l.idx()), PortId::new(2 * l.idx() + 1));
        if !self.ports[pa.idx()].down {
            return;
        }
        for p in [pa, pb] {
            self.ports[p.idx()].down = false;
        }
        self.queue.push(self.now + self.cfg.reroute_delay, Event::Reroute);
        for p in [pa, pb] {
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
                resume = if self.port_buffers.is_none() {
                    self.mmus[sw].release(pkt.ingress_local as usize, class, pkt.wire as u64)
                } else {
                    self.port_buffer_release(sw, pkt.ingress_local, p, class, pkt.wire)
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
        let ports = &self.ports;
        let up = |l: usize| !ports[2 * l].down;
        match Routes::compute_without_down_links(&self.topo, self.cfg.neighbor_order, &up) {
            Ok(r) => self.routes = r,
            // The same topology built the first tables: this cannot fail on size or shape.
            Err(e) => unreachable!("routes were computable at start: {e}"),
        }
        self.counters.reroutes += 1;
        let stranded: Vec<QpId> = (0..self.qps.len())
            .map(QpId::new)
            .filter(|&q| {
                let qp = &self.qps[q.idx()];
                // (A slot never opened, as the origin order sets them up per flow, has no group.)
                !qp.finished && qp.cc_group.0 != u32::MAX && self.routes.next_hops(qp.src, qp.dst).is_empty()
            })
            .collect();
        for q in stranded {
            self.abandon_qp(q);
            self.last_completion = self.now;
        }
    }

    /// True if `src` has a route to `dst` now (checked when a flow starts).
    pub(in crate::sim) fn reachable(&self, src: NodeId, dst: NodeId) -> bool {
        !self.routes.next_hops(src, dst).is_empty()
    }

    /// Records flow `flow` as unreachable now.
    pub(in crate::sim) fn record_unreachable(&mut self, flow: u32) {
        let f = &self.flows[flow as usize];
        self.unreachable.push(UnreachableFlow {
            flow,
            src: f.src,
            dst: f.dst,
            size: f.size,
            start: f.start,
            at: self.now,
        });
        self.flows_done += 1;
        self.note_work_done();
    }

    /// Gives up every message of `q` (its destination is partitioned away). A QP carrying
    /// an application's messages (multipath) is left alone here: an application learns of
    /// failed WRs only through `fabric.retry_limit` (`sim::retry`), so without it such a run
    /// ends stalled or at its stop time instead.
    fn abandon_qp(&mut self, q: QpId) {
        if self.qps[q.idx()].messages.iter().any(|m| self.apps.learns_of_failures(m.app)) {
            return;
        }
        let flows: Vec<u32> = self.qps[q.idx()].messages.drain(..).map(|m| m.flow).collect();
        for f in flows {
            self.record_unreachable(f);
        }
        let qp = &mut self.qps[q.idx()];
        qp.finished = true;
        qp.rto_deadline = Time::MAX;
        self.nics[qp.nic as usize].has_finished = true;
        self.leave_group(q);
    }
}
