//! The partition-independent event order (`--threads N`, `SimConfig::threads`).
//!
//! The reference breaks ties at equal time by one global insertion counter. A parallel run
//! cannot keep that counter: which partition pushed first is an accident of the cut. In
//! the origin order (`engine::queue`) an event's tie key is instead its *origin*, the node
//! whose handler pushed it, and that node's own counter. Once every handler touches only
//! its own node's state (`docs/model/determinism.md`, "Parallel engine"), the order in which one
//! node's handlers run, and so every result, is then the same however the nodes are
//! spread over partitions.
//!
//! Origins are the nodes `0..N`, then a few pseudo-origins for what no node owns: arrivals
//! (keyed by their wire, not by a counter: the event that delivers the head packet of a
//! wire is pushed by the sender when the wire was empty and by the receiver otherwise, and
//! its key must not depend on which), flow admission, sampling, link events, the queue
//! monitor, host applications, DRUM's coordinator, and setup. They sort after every node's
//! events at the same picosecond, and among ties by kind, then by their own counter. An
//! application event acts at one host, and a partition runs only its own hosts' (the
//! others' are dropped after setup), so two hosts' application events that tie cannot
//! change each other's outcome, whichever partition's counter orders them.
//!
//! In the FIFO order (the default) nothing here runs: `run` has a loop for each order, and
//! the one place that pushes differently (`push_arrive`) tests one flag per packet-hop.

use super::{Event, Simulation};
use crate::engine::queue::origin_key;
use crate::ids::PortId;
use crate::units::Time;

/// Pseudo-origins, numbered after the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum Global {
    /// Keys of `Arrive` events (low bits: the port whose wire delivers).
    Arrivals,
    /// The flow list (`FlowArrival`).
    Flows,
    /// Queue, rate and link sampling.
    Samples,
    /// Link failures, repairs and rerouting.
    Links,
    /// The reference's queue-length monitor.
    Monitor,
    /// Host applications (staggered transfers, multipath, closed loops, Virtuoso).
    Apps,
    /// DRUM's schedulers and control loop (application events of those rows: they keep the
    /// origin they had as events of their own, so that no tie changes).
    Drum,
    /// Events pushed while the world is built.
    Setup,
    /// Deadlines of switches' dequeues that wait without events (`mech::deferred_dequeues`;
    /// low bits: the switch's index).
    Dequeues,
}

/// Pseudo-origins in all.
const GLOBALS: u32 = Global::Dequeues as u32 + 1;

impl Simulation {
    /// Switches a freshly built simulation's queue to the origin order (before any push).
    pub(super) fn use_origin_order(&mut self) {
        let nodes = self.topo.nodes.len() as u32;
        self.queue.use_origin_order(nodes + GLOBALS);
        self.origin_order = true;
        self.set_global_origin(Global::Setup);
    }

    #[inline]
    fn global_origin(&self, g: Global) -> u32 {
        self.topo.nodes.len() as u32 + g as u32
    }

    /// Events pushed from now on come from the pseudo-origin `g` (origin order only).
    #[inline]
    pub(super) fn set_global_origin(&mut self, g: Global) {
        let o = self.global_origin(g);
        self.queue.set_origin(o);
    }

    /// Events pushed from now on come from node `node` (origin order only). Its decrease
    /// checks due before the event being handled take their keys first
    /// (`mech::dcqcn_checks`).
    #[inline]
    pub(super) fn set_node_origin(&mut self, node: u32) {
        self.queue.set_origin(node);
        if let Some(checks) = self.mech.idle_checks.as_deref_mut() {
            if checks.may_be_due(node, self.now) {
                let (now, key) = (self.now, self.queue.popped_seq());
                checks.catch_up(node, now, key, &mut self.queue);
            }
        }
    }

    /// The queue is empty: a decrease check waiting without an event becomes one, if any
    /// does (`mech::dcqcn_checks::when_queue_empty`). False: none does. (The checks due
    /// before it ran with the last event.)
    #[cold]
    pub(super) fn wake_waiting_check(&mut self) -> bool {
        let key = self.queue.popped_seq();
        match self.mech.idle_checks.as_deref_mut() {
            Some(c) => super::mech::dcqcn_checks::when_queue_empty(c, &mut self.groups, &mut self.queue, self.now, key),
            None => false,
        }
    }

    /// The run stops or pauses after `until`: the waiting checks due by then are taken (origin
    /// order), and the clock stands at the last timer left out of the queue by then, if that
    /// is later than the last event (one simulation would have run it last;
    /// `mech::dcqcn_grids`).
    #[cold]
    pub(super) fn clock_at_pause(&mut self, until: Time) {
        let mut last = self.mech.dcqcn_grids.last_by(until);
        if let Some(c) = self.mech.idle_checks.as_deref_mut() {
            last = last.max(super::mech::dcqcn_checks::catch_up_all(c, &mut self.queue, until, u64::MAX));
        }
        self.now = self.now.max(last);
        self.real_now = self.real_now.max(last);
    }

    /// When the run's watch runs, for an event at `t` past its check time: at the first
    /// timer left out of the queue that is due from that time, if one comes before `t` (one
    /// simulation would have run the watch before that timer's event).
    #[cold]
    pub(super) fn watch_time(&self, t: Time) -> Time {
        let from = self.watch.next_check;
        let checks = self.mech.idle_checks.as_deref().map_or(Time::MAX, |c| c.first_due_from(from));
        self.mech.dcqcn_grids.first_from(from).min(checks).min(t)
    }

    /// Before handling `ev`: its handler runs at this origin.
    #[cold]
    pub(super) fn enter_origin(&mut self, ev: Event) {
        if !matches!(ev, Event::Sample | Event::QlenMonitor) {
            self.real_now = self.now;
        }
        // Events at a port: its node, and a switch's dequeues that wait
        // (`mech::deferred_dequeues`) run before its handler.
        let port = match ev {
            Event::TxDone(p) | Event::IofdRetry(p) => Some(p),
            Event::Mech(t) => Some(t.port()),
            Event::Arrive(p) => Some(self.ports[p.idx()].peer),
            Event::ReorderFlush(q, _) => Some(super::mech::conweave::queue_port(self.mech.lb.as_deref_mut(), q)),
            _ => None,
        };
        if let Some(p) = port {
            let st = &self.ports[p.idx()];
            let (node, at_switch, sw) = (st.node.0, !st.on_host, st.unit as usize);
            self.set_node_origin(node);
            if at_switch {
                self.catch_up_at_switch(sw);
            }
            return;
        }
        let node = match ev {
            Event::NicWake(n) | Event::WqeDone(n) => Some(self.nics[n.idx()].node.0),
            Event::Rto(q, _) | Event::CloseQp(q) => Some(self.qps[q.idx()].src.0),
            Event::CcTimer(g, _) | Event::GroupLinger(g) => Some(self.groups[g.idx()].owner),
            _ => None,
        };
        match node {
            Some(n) => self.set_node_origin(n),
            None => {
                let g = match ev {
                    Event::FlowArrival => Global::Flows,
                    Event::Sample => Global::Samples,
                    Event::LinkDown(_) | Event::LinkUp(_) | Event::Reroute => Global::Links,
                    Event::QlenMonitor => Global::Monitor,
                    Event::App(app, _) if self.apps.is_drum(app) => Global::Drum,
                    Event::App(..) => Global::Apps,
                    _ => unreachable!("every other event acts at a node"),
                };
                self.set_global_origin(g);
                if !matches!(g, Global::Flows | Global::Apps) {
                    // It reads, or changes, switches: their waiting dequeues run first.
                    self.catch_up_switches(self.now, self.queue.popped_seq());
                }
            }
        }
    }

    /// The pseudo-origin of the switches' deadlines (`mech::deferred_dequeues`).
    pub(super) fn dequeues_origin(&self) -> u32 {
        self.global_origin(Global::Dequeues)
    }

    /// Schedules the arrival of the head packet of `port`'s wire at `at`. In the origin
    /// order its key is the wire's own, whoever pushes it.
    #[inline(always)]
    pub(super) fn push_arrive(&mut self, at: Time, port: PortId) {
        if self.origin_order {
            if self.part.is_some() && !self.owns(self.ports[self.ports[port.idx()].peer.idx()].node) {
                return; // the packet crosses a cut: the receiving partition schedules it
            }
            let key = origin_key(self.global_origin(Global::Arrivals), port.0 as u64);
            self.queue.push_reserved(at, key, Event::Arrive(port));
        } else {
            self.queue.push(at, Event::Arrive(port));
        }
    }
}
