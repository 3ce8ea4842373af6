//! The world and its event loop: one way in (`Simulation::new` with a topology, flows and a
//! config), one loop (`run`), one way out (`results`).
//!
//! Components live in arenas indexed by typed ids. Events are a small `Copy` enum handled
//! by one `match`. Per-packet work allocates nothing: packets are values moved between
//! `VecDeque`s that keep their capacity, and INT headers live in a recycled slab.
//!
//! The handlers are split by where they run: `wire` (a port's transmitter and its link),
//! `host` (RNIC: transmit arbitration, receiver, ACK processing, timeouts, the CC glue),
//! `switch` (forwarding, MMU, PFC, ECN, INT). Optional mechanisms sit in `mech` behind the
//! hook points ARCHITECTURE.md lists; observers (trace, samplers, watch) in `observe`.

mod apps;
#[cfg(feature = "event-profile")]
mod event_profile;
mod from_scenario;
mod host;
pub mod mech;
pub mod observe;
mod order;
pub mod parallel;
mod pfc;
mod records;
mod results;
mod setup;
mod switch;
mod validate;
mod wire;

// Paths kept from before the observers and mechanisms had folders of their own.
pub use mech::failures;
pub use observe::{qlen_monitor, trace};
use observe::{qp_names, sampling, warnings, watch};

/// The settings `Simulation::new` takes (they live in `config`, a leaf that `scenario` and
/// `sim` both read).
pub use crate::config::{OnDeadlock, SimConfig, WindowConfig};
pub use apps::AppPost;
pub use failures::{GaveUp, UnreachableFlow};
pub use results::{ClassRecord, Results, StopReason};
pub use watch::{CycleHop, Deadlock};

use crate::cc::CcGroup;
use crate::engine::{EventQueue, Rng};
use crate::fabric::{IntSlab, PacketPool, PortState, SwitchMmu, TxClock};
use crate::ids::{CcGroupId, FlowId, LinkId, NicId, PortId, QpId, SwitchId};
use crate::rnic::{Nic, Qp};
use crate::stats::{Counters, FlowRecord, PfcEvent};
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;
use crate::workload::FlowSpec;

/// Everything that can happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// Admit the next flows of the (time-sorted) flow list.
    FlowArrival,
    /// A port finished serialising a packet.
    TxDone(PortId),
    /// The head packet on the wire leaving this port reaches the peer.
    Arrive(PortId),
    /// A NIC's pacing timer.
    NicWake(NicId),
    /// A QP's retransmission timer (for the occupant of that generation of the slot).
    Rto(QpId, u16),
    /// Periodic queue-length sampling.
    Sample,
    /// A congestion-control timer of a group (kind as the algorithm numbers them).
    CcTimer(CcGroupId, u8),
    /// A shared group's linger time may have run out (`sim::cc`).
    GroupLinger(CcGroupId),
    /// A link fails (`failures`).
    LinkDown(LinkId),
    /// A failed link is repaired.
    LinkUp(LinkId),
    /// The control plane recomputes every node's routes over the links that are up.
    Reroute,
    /// A sample of the reference's queue-length monitor (`qlen_monitor`).
    QlenMonitor,
    /// A host application's timer (its row in the application table, its token): every
    /// application's own steps, an attack generator's next chunk, a DRUM scheduler's
    /// release, poll and control period, and DRUM's network-wide rounds among them.
    App(crate::ids::AppId, u32),
    /// A NIC's WQE engine finished the WQE at the head of its FIFO (`sim::apps`): the
    /// RNIC's own hardware, not an application.
    WqeDone(NicId),
    /// IOFD: the switch of this port retries the packets its re-sequencer could not yet
    /// hand to the MMU (`sim::iofd`).
    IofdRetry(PortId),
    /// The QP's host learns that its application connection closed (`sim::apps`).
    CloseQp(QpId),
    /// ConWeave: a destination ToR's reorder queue (index, generation) reaches its
    /// deadline (`sim::mech::conweave`).
    ReorderFlush(u32, u32),
    /// A mechanism's timer at a switch port (`sim::mech::Timer`: each mechanism's own
    /// variants, dispatched by `sim::mech::on_timer`).
    Mech(mech::Timer),
    /// The deadline of a switch's dequeues that wait without events (origin order only,
    /// `mech::deferred_dequeues`): whatever of them is due by now runs.
    Dequeues(SwitchId),
}

// Twelve bytes, so that with its time, its key and a link an event fills half a cache line in
// the queue's lists (`engine::queue::lists`): a larger variant costs every event a line.
const _: () = assert!(std::mem::size_of::<Event>() == 12);

/// Limits for one call to `run`.
#[derive(Clone, Copy, Debug)]
pub struct RunLimit {
    /// Do not run events after this time.
    pub until: Time,
    /// Run at most this many events in this call.
    pub max_events: u64,
}

impl Default for RunLimit {
    fn default() -> Self {
        RunLimit { until: Time::MAX, max_events: u64::MAX }
    }
}

/// A simulation in progress.
#[derive(Debug)]
pub struct Simulation {
    now: Time,
    /// Origin order: the time of the latest event that was not an observer's (`Sample`,
    /// `QlenMonitor`), whose chains a partition may run past the run's end (`sim::parallel`).
    real_now: Time,
    queue: EventQueue<Event>,
    /// Ties are broken in the origin order (`sim::order`; `SimConfig::threads` set), not FIFO.
    origin_order: bool,
    /// The nodes this simulation owns when it is one partition of a parallel run
    /// (`sim::parallel`); `None`: all of them.
    part: Option<Box<parallel::Partition>>,
    cfg: SimConfig,
    topo: Topology,
    routes: Routes,
    ports: Vec<PortState>,
    /// Transmission times per link rate and packet size.
    clock: TxClock,
    /// ECN thresholds per link rate, by the clock's rate index (`PortState::rate_class`):
    /// looked up once at setup, not per marked packet.
    ecn_of_class: Vec<Option<crate::fabric::EcnParams>>,
    /// Switch of each node (`NONE` for hosts).
    switch_of: Vec<SwitchId>,
    /// NIC of each node (`NONE` for switches).
    nic_of: Vec<NicId>,
    mmus: Vec<SwitchMmu>,
    ecn_rngs: Vec<Rng>,
    nics: Vec<Nic>,
    qps: Vec<Qp>,
    /// Released QP slots, reused by the next QP opened.
    free_qps: Vec<QpId>,
    /// QPs opened and not yet released.
    live_qps: u64,
    /// QPs opened while running, renamed in the outputs (`sim::qp_names`).
    runtime_qps: qp_names::RuntimeQps,
    groups: Vec<CcGroup>,
    /// Retired group slots.
    free_groups: Vec<CcGroupId>,
    /// Shared groups by (sender, destination) key (see `sim::cc`); QP creation only.
    group_of: std::collections::HashMap<host::GroupKey, CcGroupId>,
    /// Chunks posted by applications, with `SimConfig::trace_apps`.
    app_posts: Vec<AppPost>,
    int: IntSlab,
    /// Packets waiting in egress queues and on wires.
    packets: PacketPool,
    flows: Vec<FlowSpec>,
    ideal: Vec<Time>,
    next_flow: usize,
    flows_done: usize,
    /// Completed flows' records held in memory (at most `SimConfig::records_in_memory`).
    records: Vec<FlowRecord>,
    /// Those written out to disk (`sim::records`), once more completed than that.
    spill: Option<crate::stats::spill::Spill>,
    /// Flows given up because their destination became unreachable (`failures`).
    unreachable: Vec<UnreachableFlow>,
    /// When the last flow completed (or was given up).
    last_completion: Time,
    /// The flow each QP was opened for (`trace`).
    qp_flow: Vec<FlowId>,
    /// The per-packet trace, when one is being written.
    trace: Option<Box<trace::Trace>>,
    /// The reference's queue-length monitor, when asked for.
    qlen_monitor: Option<Box<qlen_monitor::QlenMonitor>>,
    pfc_events: Vec<PfcEvent>,
    counters: Counters,
    queue_samples: Vec<(Time, PortId, u64)>,
    sampler: sampling::Sampler,
    /// (base RTT, BDP bytes) used for every QP when the window is global.
    global_rtt_bdp: (Time, u64),
    /// Which of DCQCN's timers may skip their events (`mech::dcqcn_timers`).
    dcqcn: mech::dcqcn_timers::DcqcnShortcuts,
    /// A host port skips the `TxDone` of a packet that leaves its RNIC quiet (`host::tx`):
    /// not with a mechanism that acts on the RNIC or its QPs between kicks.
    host_tx_skips: bool,
    /// PFC deadlock detection and the stall watchdog (`sim::watch`).
    watch: watch::Watch,
    /// What the scenario sets that is valid but probably unintended (`sim::warnings`).
    warnings: Vec<String>,
    /// The application table (every kind of host application; `sim::apps`) and their
    /// headers in flight.
    apps: apps::Apps,
    /// Every flow and message is complete but some application connection is still open
    /// (`run` returns `Finished` at its next event instead of idling through timers).
    all_done_but_idle_apps: bool,
    /// The DRUM paper's host model (`None` unless the scenario has `[[app]]`).
    hostm: Option<Box<apps::HostModel>>,
    /// The receivers' per-flow counts (out of order, CNPs by cause), by flow; grown on the
    /// first count, so a run that counts none keeps it empty.
    flow_rx: Vec<crate::stats::RxFlowCounts>,
    /// The senders' retransmission timeouts by flow (the oldest unacknowledged message's at
    /// each timeout that resent something); grown on the first, empty in a run without one.
    flow_timeouts: Vec<u32>,
    /// Every optional mechanism's state (`mech::Mechanisms`).
    mech: mech::Mechanisms,
    /// Events by kind (`sim::event_profile`, cargo feature `event-profile` only).
    #[cfg(feature = "event-profile")]
    profile: event_profile::EventProfile,
}

impl Simulation {
    /// Runs until the limit, the stop time, or until nothing is left to do.
    pub fn run(&mut self, limit: RunLimit) -> StopReason {
        // One loop per tie order, so that the reference's pays nothing for the other.
        if self.origin_order {
            self.run_loop::<true>(limit)
        } else {
            self.run_loop::<false>(limit)
        }
    }

    #[inline(always)]
    fn run_loop<const ORIGIN_ORDER: bool>(&mut self, limit: RunLimit) -> StopReason {
        let until = limit.until.min(self.cfg.stop_time);
        let mut budget = limit.max_events;
        loop {
            let Some((t, seq, ev)) = self.queue.peek() else {
                if ORIGIN_ORDER && self.wake_waiting_check() {
                    continue;
                }
                return self.idle_reason();
            };
            if t > until {
                if ORIGIN_ORDER && self.dequeues_before(until, u64::MAX) {
                    continue; // what they pushed may come by `until`
                }
                self.clock_at_pause(until);
                return if until == self.cfg.stop_time { StopReason::StopTime } else { StopReason::Paused };
            }
            if budget == 0 {
                self.dequeues_before(self.now, self.queue.popped_seq());
                return StopReason::Paused;
            }
            if self.all_done_but_idle_apps {
                self.dequeues_before(self.now, self.queue.popped_seq());
                // Everything posted is complete; connections left open keep only their idle
                // timers (congestion control) alive, which would run forever.
                self.all_done_but_idle_apps = false;
                return StopReason::Finished;
            }
            let watched = t >= self.watch.next_check;
            if watched {
                if ORIGIN_ORDER && self.dequeues_before(self.watch.next_check, 0) {
                    continue; // what they pushed may come before the watch
                }
                let at = self.watch_time(if ORIGIN_ORDER { t.min(self.first_deferred_dequeue()) } else { t });
                if let Some(stop) = self.on_watch(at) {
                    return stop;
                }
                if at < t && self.watch.next_check > at {
                    continue; // the watch ran at the time of a timer left out (`mech::dcqcn_grids`)
                }
            }
            budget -= 1;
            // The event peeked above, unless the watch has pushed since.
            let (t, ev) = if watched {
                self.queue.pop().expect("peeked")
            } else {
                self.queue.take_peeked(seq);
                (t, ev)
            };
            self.counters.events += 1;
            #[cfg(feature = "event-profile")]
            self.profile.count(&ev);
            if ORIGIN_ORDER {
                if let Event::Dequeues(sw) = ev {
                    self.on_dequeues_due(t, sw); // moves the clock only as far as it runs
                    continue;
                }
                self.now = t;
                self.enter_origin(ev);
            } else {
                self.now = t;
            }
            self.prefetch_ahead(); // `wire.rs`: hints only
            self.dispatch(ev);
        }
    }

    /// Runs to the end (stop time, or every flow done).
    pub fn run_to_end(&mut self) -> StopReason {
        self.run(RunLimit::default())
    }

    /// Always inlined into the loop: as a call of its own it saved and restored the
    /// registers of every handler inlined into it on each event.
    #[inline(always)]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::FlowArrival => self.on_flow_arrival(),
            Event::TxDone(p) => self.on_tx_done(p),
            Event::Arrive(p) => self.on_arrive(p),
            Event::NicWake(n) => self.on_nic_wake(n),
            Event::Rto(q, gen) => self.on_rto(q, gen),
            Event::Sample => self.on_sample(),
            Event::CcTimer(g, k) => self.on_cc_timer(g, k),
            Event::GroupLinger(g) => self.on_group_linger(g),
            Event::LinkDown(l) => self.on_link_event(l, true),
            Event::LinkUp(l) => self.on_link_event(l, false),
            Event::Reroute => self.on_reroute(),
            Event::QlenMonitor => self.on_qlen_monitor(),
            Event::App(a, t) => self.on_app_timer(a, t),
            Event::WqeDone(n) => self.on_wqe_done(n),
            Event::IofdRetry(p) => self.on_iofd_retry(p),
            Event::CloseQp(q) => self.close_app_qp(q),
            Event::ReorderFlush(q, g) => self.on_reorder_flush(q, g),
            Event::Mech(t) => self.on_mech_timer(t),
            Event::Dequeues(_) => unreachable!("the origin order's loop takes deadlines"),
        }
    }

    /// Settings of the scenario that are valid but probably unintended, each saying what the
    /// run will do (see `sim::warnings`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Flows plus multipath messages and jobs' transfers: what must complete for the run to
    /// finish.
    fn work_total(&self) -> usize {
        self.flows.len() + self.apps.message_count() + self.apps.transfers
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Flows completed so far and flows in the scenario.
    pub fn progress(&self) -> (usize, usize) {
        (self.flows_done, self.work_total())
    }

    /// Start time of the first flow (for progress displays).
    pub fn first_start(&self) -> Time {
        self.flows.first().map_or(Time::ZERO, |f| f.start)
    }

    /// QP slots the run has made (its QP table's length): released slots are reused, so
    /// this follows the QPs alive at once where reuse is on.
    pub fn qp_slots(&self) -> usize {
        self.qps.len()
    }
}
