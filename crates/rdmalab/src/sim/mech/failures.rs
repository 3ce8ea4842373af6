//! Link failures: a link goes down (and maybe up again) at a scheduled time.
//!
//! What happens when link `l` goes down at `t` (docs/model/loss-and-failures.md, "Link failures"):
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
//! one QP), each handed only that; its hooks ([`link_down`], [`link_up`], [`reroute`])
//! turn an event into actions the carry-out applies with what the simulator itself does to
//! a lost packet (`wire.rs::lose_wire`, `switch/carry_out.rs::discard_queued`: the drop, a
//! RESUME) and to a flow given up (`host/completions.rs::abandon_qp`).

use crate::config::LinkEvent;
use crate::engine::EventQueue;
use crate::error::{Error, Result};
use crate::fabric::PortState;
use crate::ids::{FlowId, LinkId, NodeId, PortId, QpId};
use crate::rnic::Qp;
use crate::sim::mech::actions::Action;
use crate::sim::Event;
use crate::topology::routing::Routes;

/// The failures' counts (`res.counters`, zero in runs without link events); a parallel run's
/// partitions all run the same link events, so its merge keeps one partition's.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    /// Links that went down.
    pub link_failures: u64,
    /// Route recomputations by the control plane.
    pub reroutes: u64,
}
use crate::topology::{links_between, Topology};
use crate::units::Time;
use crate::workload::FlowSpec;

/// Why a flow was given up before it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaveUp {
    /// Its destination was cut off by link failures.
    Unreachable,
    /// Its WR exhausted the retry limit (`fabric.retry_limit`, `rnic.retry_cnt`).
    RetryExceeded,
    /// Its SEND exhausted `rnic.rnr_retry` (RNR NAKs without progress).
    RnrRetryExceeded,
}

impl GaveUp {
    /// Its name in the flows table's `status` column.
    pub fn name(self) -> &'static str {
        match self {
            GaveUp::Unreachable => "unreachable",
            GaveUp::RetryExceeded => "retry_exceeded",
            GaveUp::RnrRetryExceeded => "rnr_retry_exceeded",
        }
    }
}

/// A flow given up before it completed: its destination became unreachable, or its WR
/// failed a retry limit (`why`).
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
    /// When its source gave it up.
    pub at: Time,
    /// Why.
    pub why: GaveUp,
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
pub(in crate::sim) fn unreachable_flow(flow: FlowId, f: &FlowSpec, now: Time, why: GaveUp) -> UnreachableFlow {
    UnreachableFlow { flow: flow.0, src: f.src, dst: f.dst, size: f.size, start: f.start, at: now, why }
}

/// Gives up every message of `qp` (its destination is partitioned away): returns their
/// flows, the QP finished. A QP carrying messages of an application that learns of failed
/// WRs (`learns`) is left alone (`None`): such an application hears of failures only
/// through `fabric.retry_limit` (`mech::retry`), so without it such a run ends stalled or at
/// its stop time instead.
pub(in crate::sim) fn abandon(qp: &mut Qp, learns: impl Fn(crate::ids::AppId) -> bool) -> Option<Vec<FlowId>> {
    // An empty QP has nothing to give up, and one an application keeps open (a Virtuoso
    // path's reverse QP, waiting for READs) must still take what is posted on it later.
    if qp.messages.is_empty() || qp.messages.iter().any(|m| learns(m.app)) {
        return None;
    }
    let flows = qp.messages.drain_all().map(|m| m.flow).collect();
    qp.finished = true;
    qp.rto_deadline = Time::MAX;
    Some(flows)
}

/// Hook "link down" (`Event::LinkDown`): link `l` fails at `now`; both ends lose what is
/// on the wire and what is queued for it (the carry-out's `LoseWire` and `DiscardQueued`),
/// and the control plane recomputes routes `reroute_delay` later.
pub(in crate::sim) fn link_down(
    ports: &mut [PortState],
    tally: &mut Tally,
    (now, reroute_delay): (Time, Time),
    l: LinkId,
    out: &mut Vec<Action>,
) {
    let Some(ends) = set_carrier(ports, l, true, now) else { return };
    out.extend(ends.map(Action::LoseWire));
    out.extend(ends.map(Action::DiscardQueued));
    tally.link_failures += 1;
    out.push(Action::Timer(now + reroute_delay, Event::Reroute));
}

/// Hook "link up" (`Event::LinkUp`): link `l` is repaired; its ends may send again at once,
/// routes take it back after the delay. Returns whether the link came up (false: it was up
/// already, and nothing is appended).
pub(in crate::sim) fn link_up(
    ports: &mut [PortState],
    (now, reroute_delay): (Time, Time),
    l: LinkId,
    out: &mut Vec<Action>,
) -> bool {
    let Some(ends) = set_carrier(ports, l, false, now) else { return false };
    out.push(Action::Timer(now + reroute_delay, Event::Reroute));
    out.extend(ends.map(Action::Kick));
    true
}

/// Hook "control plane" (`Event::Reroute`): new routes over the links that are up; the QPs
/// whose source has no route left are given up (the host's carry-out, `AbandonQp`).
pub(in crate::sim) fn reroute(
    (routes, topo, ports): (&mut Routes, &Topology, &[PortState]),
    qps: &[Qp],
    tally: &mut Tally,
    out: &mut Vec<Action>,
) {
    reroute_over_live_links(routes, topo, ports);
    tally.reroutes += 1;
    out.extend(stranded(qps, routes).into_iter().map(Action::AbandonQp));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    /// Link 0: its two ends, ports 0 and 1, on nodes 0 and 1.
    fn one_link() -> Vec<PortState> {
        (0..2u32).map(|i| PortState::new(NodeId(i), PortId(i), 0, Rate::gbps(100), Time::from_us(1))).collect()
    }

    /// `link_up` says whether the link came up: not for a link that is up (nothing
    /// appended), yes once after it went down (the reroute timer, a kick at each end), not
    /// for a second repair.
    #[test]
    fn link_up_reports_whether_the_link_came_up() {
        let mut ports = one_link();
        let (mut tally, mut out) = (Tally::default(), Vec::new());
        let times = (Time::from_us(5), Time::from_us(1));
        assert!(!link_up(&mut ports, times, LinkId(0), &mut out));
        assert!(out.is_empty(), "{out:?}");
        link_down(&mut ports, &mut tally, times, LinkId(0), &mut out);
        assert!(ports.iter().all(|p| p.down) && tally.link_failures == 1);
        out.clear();
        assert!(link_up(&mut ports, times, LinkId(0), &mut out));
        assert!(ports.iter().all(|p| !p.down));
        assert!(
            matches!(out[..], [Action::Timer(t, Event::Reroute), Action::Kick(_), Action::Kick(_)] if t == Time::from_us(6)),
            "{out:?}"
        );
        out.clear();
        assert!(!link_up(&mut ports, times, LinkId(0), &mut out));
        assert!(out.is_empty(), "{out:?}");
    }
}
