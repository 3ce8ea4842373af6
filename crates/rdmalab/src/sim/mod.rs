//! The world and its event loop: one way in (`Simulation::new` with a topology, flows and a
//! config), one loop (`run`), one way out (`results`).
//!
//! Components live in arenas indexed by typed ids. Events are a small `Copy` enum handled
//! by one `match`. Per-packet work allocates nothing: packets are values moved between
//! `VecDeque`s that keep their capacity, and INT headers live in a recycled slab.
//!
//! The handlers are split by where they run: `host` (RNIC: transmit arbitration, receiver,
//! ACK processing, timeouts) and `switch` (forwarding, MMU, PFC, ECN, INT).

mod apps;
mod blitz;
mod cc;
pub mod config;
pub mod failures;
mod host;
mod iofd;
mod order;
pub mod parallel;
pub mod qlen_monitor;
mod qp_names;
mod results;
mod retry;
mod sampling;
mod setup;
mod switch;
pub mod trace;
mod warnings;
mod watch;

pub use apps::AppPost;
pub use config::{SimConfig, WindowConfig};
pub use failures::{LinkEvent, UnreachableFlow};
pub use results::{ClassRecord, Results, StopReason};
pub use watch::{CycleHop, Deadlock, OnDeadlock};

use crate::cc::CcGroup;
use crate::engine::{EventQueue, Rng};
use crate::fabric::{IntSlab, Packet, PacketPool, PacketRef, PortState, SwitchMmu, TxClock};
use crate::formats::pfc::PfcEvent;
use crate::ids::{CcGroupId, LinkId, PortId, QpId};
use crate::rnic::{Nic, Qp};
use crate::stats::{Counters, FlowRecord};
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
    NicWake(u32),
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
    /// A host application's timer (application, its token): every application's own
    /// steps, an attack generator's next chunk among them.
    App(crate::ids::AppId, u32),
    /// A NIC's WQE engine finished the WQE at the head of its FIFO (`sim::apps`).
    WqeDone(u32),
    /// A DRUM scheduler's release, poll or control period (`sim::apps`).
    Drum(u32, u8),
    /// IOFD: the switch of this port retries the packets its re-sequencer could not yet
    /// hand to the MMU (`sim::iofd`).
    IofdRetry(PortId),
    /// The QP's host learns that its application connection closed (`sim::apps`).
    CloseQp(QpId),
}

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
    /// Switch index of each node (`u32::MAX` for hosts).
    switch_of: Vec<u32>,
    /// NIC index of each node (`u32::MAX` for switches).
    nic_of: Vec<u32>,
    mmus: Vec<SwitchMmu>,
    ecn_rngs: Vec<Rng>,
    error_rngs: Vec<Option<Rng>>,
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
    group_of: std::collections::HashMap<cc::GroupKey, CcGroupId>,
    /// Host applications (staggered transfers, overlay members).
    host_apps: Vec<apps::AppRun>,
    /// Chunks posted by applications, with `SimConfig::trace_apps`.
    app_posts: Vec<AppPost>,
    /// Per receiving NIC: payload delivered per tenant over time.
    meters: Vec<crate::tenancy::TenantMeter>,
    /// Per sending NIC, per tenant: the defense's budget of line-rate starts.
    start_budgets: Vec<Vec<crate::tenancy::StartBudget>>,
    /// Tenant names, by index.
    tenant_names: Vec<String>,
    int: IntSlab,
    /// Packets waiting in egress queues and on wires.
    packets: PacketPool,
    flows: Vec<FlowSpec>,
    ideal: Vec<Time>,
    next_flow: usize,
    flows_done: usize,
    records: Vec<FlowRecord>,
    /// Flows given up because their destination became unreachable (`failures`).
    unreachable: Vec<UnreachableFlow>,
    /// When the last flow completed (or was given up).
    last_completion: Time,
    /// The flow each QP was opened for (`trace`).
    qp_flow: Vec<u32>,
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
    /// PFC deadlock detection and the stall watchdog (`sim::watch`).
    watch: watch::Watch,
    /// What the scenario sets that is valid but probably unintended (`sim::warnings`).
    warnings: Vec<String>,
    /// Host applications (multipath connections) and their headers in flight.
    apps: apps::Apps,
    /// Every flow and message is complete but some application connection is still open
    /// (`run` returns `Finished` at its next event instead of idling through timers).
    all_done_but_idle_apps: bool,
    /// Blitz's DASR receivers (`None` unless `cc = "blitz"`: no state, one test per packet).
    dasr: Option<Box<crate::cc::dasr::DasrReceivers>>,
    /// Switches do not ECN-mark at host-facing ports (Blitz with `dasr_edge_ecn = false`).
    no_edge_ecn: bool,
    /// In-order flow deflection (`None` unless `[fabric.iofd]`: one test per packet).
    iofd: Option<Box<crate::fabric::deflection::Iofd>>,
    /// Seed 000's host model (`None` unless the scenario has `[[app]]`).
    hostm: Option<Box<apps::HostModel>>,
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
            let Some(t) = self.queue.peek_time() else {
                return self.idle_reason();
            };
            if t > until {
                return if until == self.cfg.stop_time { StopReason::StopTime } else { StopReason::Paused };
            }
            if budget == 0 {
                return StopReason::Paused;
            }
            if self.all_done_but_idle_apps {
                // Everything posted is complete; connections left open keep only their idle
                // timers (congestion control) alive, which would run forever.
                self.all_done_but_idle_apps = false;
                return StopReason::Finished;
            }
            if t >= self.watch.next_check {
                if let Some(stop) = self.on_watch(t) {
                    return stop;
                }
            }
            budget -= 1;
            let Some((t, ev)) = self.queue.pop() else { unreachable!() };
            self.now = t;
            self.counters.events += 1;
            if ORIGIN_ORDER {
                self.enter_origin(ev);
            }
            self.dispatch(ev);
        }
    }

    /// Runs to the end (stop time, or every flow done).
    pub fn run_to_end(&mut self) -> StopReason {
        self.run(RunLimit::default())
    }

    #[inline]
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
            Event::LinkDown(l) => self.on_link_down(l),
            Event::LinkUp(l) => self.on_link_up(l),
            Event::Reroute => self.on_reroute(),
            Event::QlenMonitor => self.on_qlen_monitor(),
            Event::App(a, t) => self.on_app_timer(a, t),
            Event::WqeDone(n) => self.on_wqe_done(n),
            Event::IofdRetry(p) => self.on_iofd_retry(p),
            Event::Drum(a, k) => self.on_drum(a, k),
            Event::CloseQp(q) => self.close_app_qp(q),
        }
    }

    /// Settings of the scenario that are valid but probably unintended, each saying what the
    /// run will do (see `sim::warnings`).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Flows plus multipath messages: what must complete for the run to finish.
    fn work_total(&self) -> usize {
        self.flows.len() + self.apps.message_count()
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

    /// Puts `pkt` on the wire of `port`, which must be idle.
    #[inline]
    ///
    /// The `TxDone` event that ends the transmission takes its place in the event order now,
    /// but a switch port with nothing queued does not push it: it would only find the port
    /// empty. Such a port is still busy until `tx_end` (see `switch_kick`), and the first
    /// packet queued before then pushes the event with the reserved sequence number, so
    /// every event runs exactly where it would have run. About half the TxDone events of a
    /// fabric at moderate load are skipped this way. Host ports always push it: the RNIC's
    /// arbiter runs at each one.
    fn transmit(&mut self, port: PortId, pkt: Packet) {
        let r = self.packets.park(pkt);
        self.transmit_parked(port, r);
    }

    /// `transmit` for the packet parked at `r`.
    #[inline(always)]
    fn transmit_parked(&mut self, port: PortId, r: PacketRef) {
        if self.trace.is_some() {
            let pkt = *self.packets.get(r);
            self.trace_event(trace::TraceEvent::Dequeue, port, &pkt);
        }
        let (wire, dst) = {
            let pkt = self.packets.get(r);
            (pkt.wire, pkt.dst)
        };
        let seq = self.queue.reserve_seq();
        let st = &mut self.ports[port.idx()];
        debug_assert!(!st.busy);
        let tx = self.clock.tx(st.rate_class, st.rate, wire);
        let done = self.now + tx;
        let arrival = done + st.delay;
        st.tx_bytes += wire as u64;
        st.tx_packets += 1;
        let was_empty = st.in_flight.is_empty();
        st.in_flight.push_back((arrival, r, dst));
        self.counters.packet_hops += 1;
        st.tx_end = (done, seq);
        if st.on_host || st.has_queued() {
            st.busy = true;
            self.queue.push_reserved(done, seq, Event::TxDone(port));
        }
        if was_empty {
            self.push_arrive(arrival, port);
        }
    }

    fn on_tx_done(&mut self, port: PortId) {
        self.ports[port.idx()].busy = false;
        self.kick(port);
    }

    /// Lets the transmitter of `port` send its next packet if it is idle.
    #[inline]
    fn kick(&mut self, port: PortId) {
        let st = &self.ports[port.idx()];
        if st.on_host {
            self.nic_kick(st.unit);
        } else {
            self.switch_kick(port);
        }
    }

    fn on_arrive(&mut self, port: PortId) {
        let st = &mut self.ports[port.idx()];
        // A wire emptied by a link failure leaves its `Arrive` event behind: it finds the
        // wire empty, or a packet sent after the repair that is not due yet.
        let Some(&(due, parked, dst)) = st.in_flight.front() else {
            return;
        };
        if due != self.now {
            return;
        }
        st.in_flight.pop_front();
        let next = st.in_flight.front().map(|&(next, next_pkt, _)| (next, next_pkt));
        let (at, to_host, lossy) = (st.peer, st.peer_on_host, st.peer_lossy);
        if let Some((next, next_pkt)) = next {
            self.packets.prefetch(next_pkt); // that arrival reads it, a packet time from now
            self.push_arrive(next, port);
        }
        if lossy && self.lost_on_link(at) {
            self.counters.link_error_losses += 1;
            let pkt = self.packets.take(parked);
            self.drop_packet(at, &pkt);
            return;
        }
        if self.packets.get(parked).is_pfc() {
            let pkt = self.packets.take(parked);
            self.on_pfc(at, pkt);
        } else if to_host {
            let pkt = self.packets.take(parked);
            self.host_receive(pkt);
        } else {
            self.switch_receive(at, parked, dst); // stays parked: a switch moves only the reference
        }
    }

    /// The link's error model: true if the packet arriving at `at` is corrupted.
    #[inline]
    fn lost_on_link(&mut self, at: PortId) -> bool {
        use crate::engine::rng::RngExt;
        match &mut self.error_rngs[at.idx()] {
            None => false,
            Some(rng) => {
                let link = self.topo.ports[at.idx()].link;
                rng.gen::<f64>() < self.topo.links[link.idx()].error_rate
            }
        }
    }

    /// Accounts a packet lost in the network (buffer overflow, link error or failure, no
    /// route).
    fn drop_packet(&mut self, at: PortId, pkt: &Packet) {
        if self.trace.is_some() {
            self.trace_event(trace::TraceEvent::Drop, at, pkt);
        }
        self.counters.drops += 1;
        self.ports[at.idx()].counters.drops += 1;
        if matches!(
            pkt.kind,
            crate::fabric::PacketKind::Data | crate::fabric::PacketKind::Ack | crate::fabric::PacketKind::Nack
        ) {
            // Only the sender's partition has the QP's count (a parallel run reuses no slot,
            // so the others need none).
            if self.holds_sender_of(pkt) {
                self.qps[pkt.qp.idx()].in_flight = self.qps[pkt.qp.idx()].in_flight.wrapping_sub(1);
                self.release_if_quiet(pkt.qp);
            }
        }
        if pkt.kind == crate::fabric::PacketKind::Data {
            self.counters.payload_bytes_dropped += pkt.payload as u64;
        }
        if pkt.int_slot != crate::fabric::packet::NO_INT {
            self.int.release(pkt.int_slot);
        }
    }
}
