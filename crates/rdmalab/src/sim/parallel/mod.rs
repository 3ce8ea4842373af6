//! The parallel engine: conservative synchronous windows over partitions of the fabric.
//!
//! Every partition is a whole `Simulation` built from the same scenario, in the origin
//! event order (`sim::order`), that handles only the events of the nodes it owns. Time
//! advances in windows no longer than the lookahead, the smallest link delay between two
//! partitions: a packet sent in a window reaches another partition no earlier than the
//! window's end. Each thread runs its partition's queue to the end of the window; at a
//! barrier the packets on wires that cross a cut move to the receiving partition's copy of
//! the wire, keyed as they would have been in one partition; the next window starts at the
//! earliest pending event of any partition. The order of every node's events, hence every
//! result, is the same for any number of partitions (`docs/physics.md`, "Parallel engine").
//!
//! Memory grows with the partition count: each holds the whole topology, routes and flow
//! list (but only its own nodes' packets and events).

mod apps;
mod deadlock;
mod exchange;
mod observe;
mod partition;
mod runner;

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};

pub(in crate::sim) use apps::sort_app_tables;
pub use exchange::Crossing;
pub use partition::{auto_map, lookahead, Partition};
pub use runner::Runner;

use crate::sim::watch::WaitShare;
use deadlock::WatchMarks;

use super::{Results, RunLimit, Simulation, StopReason};
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::units::Time;

/// A run stops as stalled when flows are unfinished and nothing was delivered for this long,
/// over at least `BUSY_WINDOWS` windows (re-arming timers would otherwise keep a deadlocked
/// run going forever; one partition cannot tell, so the driver watches the sum). The window
/// count keeps a quiet stretch between flows, skipped in one window, from counting.
const NO_PROGRESS: Time = Time::from_ms(100);
const BUSY_WINDOWS: u64 = 1000;

/// A scenario cut into partitions, run by one thread each.
#[derive(Debug)]
pub struct ParallelRun {
    parts: Vec<Simulation>,
    part_of: Vec<u16>,
    lookahead: Time,
    stop_time: Time,
    flows_total: usize,
    stall_cause: Option<String>,
    /// Where the windows stand between calls to `run`.
    state: Window,
    /// How the run ended, once it has.
    over: Option<StopReason>,
    /// The partitions' trace spools, while a trace is written.
    trace: Option<Box<observe::TraceSpools>>,
    /// PFC deadlock detection over the whole fabric (`deadlock`).
    watch: deadlock::DeadlockWatch,
}

impl ParallelRun {
    /// Cuts `s` into at most `threads` partitions (the automatic map, `auto_map`) and builds
    /// one simulation per partition.
    pub fn new(s: Scenario, threads: u32) -> Result<ParallelRun> {
        let (part_of, _) = auto_map(&s.topology, threads.max(1));
        ParallelRun::with_map(s, part_of)
    }

    /// Like `new`, with a given partition of every node (partitions numbered from 0).
    pub fn with_map(mut s: Scenario, part_of: Vec<u16>) -> Result<ParallelRun> {
        if let Some(what) = apps::unsupported(&s) {
            return Err(Error::scenario("threads", format!("--threads > 1 does not support {what} yet")));
        }
        if part_of.len() != s.topology.nodes.len() {
            return Err(Error::scenario(
                "threads",
                format!("the partition map names {} nodes, the topology has {}", part_of.len(), s.topology.nodes.len()),
            ));
        }
        let parts = part_of.iter().map(|&p| p as usize + 1).max().unwrap_or(1);
        let lookahead = lookahead(&s.topology, &part_of)?;
        s.config.threads = Some(1); // each partition runs in the origin order on its own
        s.config.partition_map = None; // (and is not itself cut again)
        let stop_time = s.config.stop_time;
        let watch = deadlock::DeadlockWatch {
            timeout: s.config.deadlock_timeout,
            on_deadlock: s.config.on_deadlock,
            ..Default::default()
        };
        let mut sims = Vec::with_capacity(parts);
        for me in 0..parts {
            let mut sim = s.clone().simulation()?;
            sim.make_partition(Partition::new(&s.topology, me as u16, part_of.clone()));
            sim.monitor_own_switches();
            sim.drop_foreign_setup_events();
            sims.push(sim);
        }
        let flows_total = sims[0].work_total(); // flows and multipath messages
        Ok(ParallelRun {
            parts: sims,
            part_of,
            lookahead,
            stop_time,
            flows_total,
            stall_cause: None,
            state: Window::default(),
            over: None,
            trace: None,
            watch,
        })
    }

    /// Partitions (and threads) of the run.
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Events each partition ran (how evenly the map split the work).
    pub fn events_per_partition(&self) -> Vec<u64> {
        self.parts.iter().map(|p| p.counters.events).collect()
    }

    /// The critical path in events: per window, the most events one partition ran.
    pub fn critical_path_events(&self) -> u64 {
        self.state.critical
    }

    /// Windows run so far (two barrier waits each).
    pub fn windows(&self) -> u64 {
        self.state.windows
    }

    /// The window length.
    pub fn lookahead(&self) -> Time {
        self.lookahead
    }

    /// One line on the cut: partitions and window length.
    pub fn describe_cut(&self) -> String {
        format!("parallel: {} partitions, windows of {} ps", self.partitions(), self.lookahead.0)
    }

    /// One line on how the work split: events per partition, windows, and the speed-up the
    /// critical path allows (total events over the critical path; synchronisation aside).
    pub fn describe_split(&self) -> String {
        let (events, critical) = (self.events_per_partition(), self.critical_path_events());
        let total: u64 = events.iter().sum();
        format!(
            "parallel: events per partition {events:?}, {} windows, critical path {critical} events \
             (speed-up bound {:.2}x)",
            self.windows(),
            total as f64 / critical.max(1) as f64
        )
    }

    /// Runs every partition to the end: every flow done, the stop time, or no progress.
    pub fn run_to_end(&mut self) -> StopReason {
        self.run(RunLimit::default())
    }

    /// Runs windows until the run is over or a window ends past `limit.until` or after
    /// `limit.max_events` events (summed over partitions; checked once per window), then
    /// `Paused` (call again to go on).
    pub fn run(&mut self, limit: RunLimit) -> StopReason {
        if let Some(done) = self.over {
            return done;
        }
        let n = self.parts.len();
        if self.state.progress == u64::MAX && self.state.start == Time::ZERO {
            self.state.start = self.parts.iter_mut().filter_map(|p| p.next_event_time()).min().unwrap_or(Time::MAX);
        }
        let events_before: u64 = self.parts.iter().map(|p| p.counters.events).sum();
        let shared = Shared {
            barrier: Barrier::new(n),
            mail: (0..n * n).map(|_| Mutex::new(Vec::new())).collect(),
            next: (0..n).map(|_| Mutex::new(Mark::default())).collect(),
            lookahead: self.lookahead,
            stop_time: self.stop_time,
            flows_total: self.flows_total,
            until: limit.until,
            budget: limit.max_events,
            events_before,
            failed: AtomicBool::new(false),
            panic: Mutex::new(None),
            watch_timeout: self.watch.timeout,
            shares: (0..n).map(|_| Mutex::new(WaitShare::default())).collect(),
            watch: Mutex::new(std::mem::take(&mut self.watch)),
            verdict: Mutex::new(false),
        };
        let state = self.state;
        let ends: Vec<Window> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .parts
                .iter_mut()
                .enumerate()
                .map(|(me, sim)| {
                    let shared = &shared;
                    scope.spawn(move || shared.work(me, sim, state))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a partition's thread panicked")).collect()
        });
        // A partition that panicked made every thread leave at the same window's end; the
        // panic goes on from here, as it would in the sequential engine.
        if let Some(payload) = shared.panic.lock().expect("panic slot").take() {
            resume_unwind(payload);
        }
        self.watch = shared.watch.into_inner().expect("watch");
        self.state = ends[0];
        if self.state.paused {
            return StopReason::Paused;
        }
        if self.state.deadlock_at.is_some() {
            self.over = Some(StopReason::PfcDeadlock);
            return StopReason::PfcDeadlock;
        }
        let done: usize = self.parts.iter().map(|p| p.flows_done).sum();
        let reason = if done == self.flows_total {
            StopReason::Finished
        } else if self.state.start > self.stop_time {
            StopReason::StopTime
        } else {
            let left = self.flows_total - done;
            let why = if self.state.stalled { "nothing delivered for 100 ms" } else { "nothing left to simulate" };
            self.stall_cause = Some(format!("{why} with {left} flow(s) unfinished (parallel run)"));
            StopReason::Stalled
        };
        self.over = Some(reason);
        reason
    }

    /// Flows completed so far and flows in the scenario.
    pub fn progress(&self) -> (usize, usize) {
        (self.parts.iter().map(|p| p.flows_done).sum(), self.flows_total)
    }

    /// Where the run stands: the start of the next window.
    pub fn now(&self) -> Time {
        self.parts.iter().map(|p| p.now).max().unwrap_or(Time::ZERO)
    }

    /// The topology being simulated.
    pub fn topology(&self) -> &crate::topology::Topology {
        &self.parts[0].topo
    }

    /// Settings of the scenario that are valid but probably unintended.
    pub fn warnings(&self) -> &[String] {
        self.parts[0].warnings()
    }

    /// The partitions' results merged in an order that does not depend on the partition
    /// count, with the conservation check over the whole fabric.
    pub fn results(&mut self) -> Result<Results> {
        let (r, anomalies) = self.merged();
        if anomalies > 0 {
            let n = anomalies;
            return Err(Error::Invariant(format!("{n} multipath chunk(s) placed beyond their message")));
        }
        let c = &r.counters;
        if c.payload_bytes_sent != c.payload_bytes_delivered + c.payload_bytes_dropped + r.payload_in_flight {
            return Err(Error::Invariant(format!(
                "byte conservation (parallel run): sent {} != delivered {} + dropped {} + in flight {}",
                c.payload_bytes_sent, c.payload_bytes_delivered, c.payload_bytes_dropped, r.payload_in_flight
            )));
        }
        let buffer_drops = c.drops - c.link_error_losses - c.link_down_losses - c.no_route_drops;
        if self.parts[0].cfg.lossless && self.parts[0].cfg.classes.is_none() && buffer_drops > 0 {
            return Err(Error::Invariant(format!("{buffer_drops} packets dropped in lossless mode")));
        }
        Ok(r)
    }

    /// The merged results so far, without the conservation check.
    pub fn snapshot(&mut self) -> Results {
        self.merged().0
    }

    /// The merged results, and the multipath chunks placed beyond their message (0 in a
    /// correct run).
    fn merged(&mut self) -> (Results, u64) {
        let end_time = self.end_time();
        let mut snaps: Vec<Results> = self.parts.iter_mut().map(|p| p.snapshot()).collect();
        let names: Vec<_> = self.parts.iter().map(|p| &p.runtime_qps).collect();
        let mut rows: Vec<_> = snaps.iter_mut().map(|r| &mut r.rate_samples).collect();
        crate::sim::qp_names::rename_runtime_qps(&names, &mut rows);
        let (first, others) = snaps.split_first_mut().expect("at least one partition");
        observe::merge_samples(first, others);
        let anomalies = apps::merge_app_tables(&mut self.parts, &self.part_of, &mut snaps);
        let mut it = snaps.into_iter();
        let mut r = it.next().expect("at least one partition");
        let topo = &self.parts[0].topo;
        let owner = |port: usize| self.part_of[topo.ports[port].node.idx()] as usize;
        let mut ports = r.ports.clone();
        let mut tenant_bins = std::mem::take(&mut r.tenant_bins);
        // Every partition runs the same link events: count them once.
        let (link_failures, reroutes) = (r.counters.link_failures, r.counters.reroutes);
        for (i, other) in it.enumerate() {
            let me = i + 1;
            r.counters.add(&other.counters);
            r.records.extend(other.records);
            r.pfc_events.extend(other.pfc_events);
            r.unreachable.extend(other.unreachable);
            r.last_completion = r.last_completion.max(other.last_completion);
            r.payload_in_flight += other.payload_in_flight;
            tenant_bins.extend(other.tenant_bins);
            for (p, c) in ports.iter_mut().enumerate() {
                if owner(p) == me {
                    *c = other.ports[p];
                }
            }
        }
        r.ports = ports;
        (r.counters.link_failures, r.counters.reroutes) = (link_failures, reroutes);
        r.tenant_bins = crate::tenancy::meter::merge(tenant_bins);
        r.records.sort_by_key(|x| (x.start + x.fct, x.flow));
        r.pfc_events.sort_by_key(|e| (e.time, e.node, e.ifindex, e.pause));
        r.unreachable.sort_by_key(|u| u.flow);
        r.stall_cause = self.stall_cause.clone();
        // A run stopped for a deadlock ends when it was found, as one simulation does.
        r.end_time = self.state.deadlock_at.unwrap_or(end_time);
        r.deadlock = self.watch.found.first.clone();
        r.deadlocks = self.watch.found.count;
        (r, anomalies)
    }
}

/// Where the windows stand between calls: the next window's start, the progress mark
/// and when it last moved, and why the last call returned.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: Time,
    progress: u64,
    progress_at: Time,
    /// Windows run since the progress mark last moved.
    idle_windows: u64,
    /// The caller's limit was reached.
    paused: bool,
    /// No progress for `NO_PROGRESS`.
    stalled: bool,
    /// Windows run so far.
    windows: u64,
    /// Sum over windows of the most events one partition ran in it: the run's critical
    /// path in events (total events / this = the speed-up the map allows, sync aside).
    critical: u64,
    /// Every flow is done and the partitions know when the last completed (`observe`).
    flows_ended: bool,
    /// The next PFC deadlock check (`deadlock`; `Time::MAX`: none armed).
    check: Time,
    /// The run stopped for a PFC deadlock found at this time.
    deadlock_at: Option<Time>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            start: Time::ZERO,
            progress: u64::MAX,
            progress_at: Time::ZERO,
            idle_windows: 0,
            paused: false,
            stalled: false,
            windows: 0,
            critical: 0,
            flows_ended: false,
            check: Time::MAX,
            deadlock_at: None,
        }
    }
}

/// A partition's numbers after a window's exchange.
#[derive(Clone, Copy, Debug)]
struct Mark {
    /// Its next event.
    next: Time,
    /// Its progress mark (`progress_mark`).
    progress: u64,
    /// Events it ran so far.
    events: u64,
    /// Flows it completed (or gave up), and when the last of them did.
    done: usize,
    last_completion: Time,
    /// The deadlock check its own pauses armed, the switch (port, class) pairs it has
    /// paused, and its latest event (`deadlock`).
    check_due: Time,
    paused_pairs: u32,
    now: Time,
}

impl Default for Mark {
    fn default() -> Self {
        Mark {
            next: Time::MAX,
            progress: 0,
            events: 0,
            done: 0,
            last_completion: Time::ZERO,
            check_due: Time::MAX,
            paused_pairs: 0,
            now: Time::ZERO,
        }
    }
}

/// What the threads share: the barrier, the mailboxes (`mail[from * n + to]`), each
/// partition's `Mark` after the exchange, and the limits of this call.
struct Shared {
    barrier: Barrier,
    mail: Vec<Mutex<Vec<Crossing>>>,
    next: Vec<Mutex<Mark>>,
    lookahead: Time,
    stop_time: Time,
    flows_total: usize,
    until: Time,
    budget: u64,
    events_before: u64,
    /// Some partition panicked: every thread leaves after this window's exchange instead of
    /// waiting at a barrier the panicked thread would never reach.
    failed: AtomicBool,
    /// The first panic's payload, re-raised by the driver once every thread has left.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// PFC deadlock detection: the timeout, each partition's part of the wait-for graph,
    /// what was found, and thread 0's verdict (`deadlock`).
    watch_timeout: Time,
    shares: Vec<Mutex<WaitShare>>,
    watch: Mutex<deadlock::DeadlockWatch>,
    verdict: Mutex<bool>,
}

impl Shared {
    /// Runs a partition's step; a panic is kept for the driver and flags the run as failed,
    /// and the thread goes on to the barriers so that the others are not left waiting.
    fn guard(&self, step: impl FnOnce()) {
        if self.failed.load(Ordering::Acquire) {
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(step)) {
            self.failed.store(true, Ordering::Release);
            self.panic.lock().expect("panic slot").get_or_insert(payload);
        }
    }

    /// One partition's thread: window after window until every partition is idle, past the
    /// stop time, stuck, or at the caller's limit. Every thread computes the same decisions
    /// from the same shared numbers, so they stop together.
    fn work(&self, me: usize, sim: &mut Simulation, mut w: Window) -> Window {
        let n = self.next.len();
        let mut out: Vec<Vec<Crossing>> = vec![Vec::new(); n];
        // Every partition's events so far, for the critical path (one more wait per call).
        *self.next[me].lock().expect("next") = Mark { events: sim.counters.events, ..Mark::default() };
        self.barrier.wait();
        let mut last: Vec<u64> = self.next.iter().map(|s| s.lock().expect("next").events).collect();
        w.paused = false;
        loop {
            if w.start == Time::MAX || w.start > self.stop_time {
                return w;
            }
            let end = w.end(w.start, self.lookahead, self.watch_timeout);
            w.windows += 1;
            self.guard(|| {
                sim.run(RunLimit { until: Time(end.0 - 1), max_events: u64::MAX });
                sim.export_crossings(&mut out);
            });
            for (to, v) in out.iter_mut().enumerate().filter(|(_, v)| !v.is_empty()) {
                self.mail[me * n + to].lock().expect("mailbox").append(v);
            }
            self.barrier.wait();
            self.guard(|| {
                for from in 0..n {
                    let mut inbox = self.mail[from * n + me].lock().expect("mailbox");
                    for c in inbox.drain(..) {
                        sim.import_crossing(c);
                    }
                }
            });
            let mine = Mark {
                next: sim.next_event_time().unwrap_or(Time::MAX),
                progress: sim.progress_mark(),
                events: sim.counters.events,
                done: sim.flows_done,
                last_completion: sim.last_completion,
                check_due: sim.deadlock_check_due(),
                paused_pairs: sim.paused_pairs(),
                now: sim.now,
            };
            *self.next[me].lock().expect("next") = mine;
            self.barrier.wait();
            // No third wait: nobody writes `next` or a mailbox again before the next
            // window's first wait, which every thread reaches only after reading these.
            if self.failed.load(Ordering::Acquire) {
                return w;
            }
            let (mut next, mut mark, mut events, mut most) = (Time::MAX, 0u64, 0u64, 0u64);
            let (mut done, mut last_completion) = (0usize, Time::ZERO);
            let mut watch =
                WatchMarks { due: Time::MAX, paused: 0, last_event: Time::ZERO, next: Time::MAX, unfinished: false };
            for (i, slot) in self.next.iter().enumerate() {
                let m = *slot.lock().expect("next");
                watch.due = watch.due.min(m.check_due);
                watch.paused += m.paused_pairs;
                watch.last_event = watch.last_event.max(m.now);
                next = next.min(m.next);
                mark = mark.wrapping_add(m.progress);
                events += m.events;
                most = most.max(m.events - last[i]);
                last[i] = m.events;
                done += m.done;
                last_completion = last_completion.max(m.last_completion);
            }
            w.critical += most;
            (watch.next, watch.unfinished) = (next, done < self.flows_total);
            if self.deadlock_check(me, sim, &mut w, watch) {
                return w;
            }
            w.check = sim.deadlock_check_due();
            // The sample and monitor chains end once every flow is done (`observe`).
            if !w.flows_ended {
                w.flows_ended = done == self.flows_total;
                let end = w.flows_ended.then_some(last_completion);
                self.guard(|| sim.observers_at_window_end(end));
            }
            if mark != w.progress {
                (w.progress, w.progress_at, w.idle_windows) = (mark, end, 0);
            } else if next != Time::MAX
                && next.0.saturating_sub(w.progress_at.0) > NO_PROGRESS.0
                && w.idle_windows >= BUSY_WINDOWS
            {
                w.stalled = true;
                w.start = next;
                return w;
            }
            w.idle_windows += 1;
            w.start = if next == Time::MAX { Time::MAX } else { next.max(end) };
            if w.start != Time::MAX && (w.start > self.until || events - self.events_before >= self.budget) {
                w.paused = w.start <= self.stop_time;
                if w.paused {
                    return w;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(n: usize) -> Shared {
        Shared {
            barrier: Barrier::new(n),
            mail: (0..n * n).map(|_| Mutex::new(Vec::new())).collect(),
            next: (0..n).map(|_| Mutex::new(Mark::default())).collect(),
            lookahead: Time::from_ns(1),
            stop_time: Time::MAX,
            flows_total: 0,
            until: Time::MAX,
            budget: u64::MAX,
            events_before: 0,
            failed: AtomicBool::new(false),
            panic: Mutex::new(None),
            watch_timeout: Time::from_ms(1),
            shares: (0..n).map(|_| Mutex::new(WaitShare::default())).collect(),
            watch: Mutex::new(deadlock::DeadlockWatch::default()),
            verdict: Mutex::new(false),
        }
    }

    /// A panic in one thread's step is kept, and the other thread still gets through the
    /// same barriers and sees the failure after them (before the fix it waited forever).
    #[test]
    fn a_panicking_partition_releases_the_others() {
        let s = shared(2);
        let seen: Vec<bool> = std::thread::scope(|scope| {
            let hs: Vec<_> = (0..2)
                .map(|me| {
                    let s = &s;
                    scope.spawn(move || {
                        s.guard(|| {
                            if me == 1 {
                                panic!("partition 1 fails");
                            }
                        });
                        s.barrier.wait();
                        s.guard(|| {});
                        s.barrier.wait();
                        s.failed.load(Ordering::Acquire)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("no thread may die")).collect()
        });
        assert_eq!(seen, vec![true, true]);
        let payload = s.panic.lock().unwrap().take().expect("the panic is kept");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"partition 1 fails"));
    }
}
