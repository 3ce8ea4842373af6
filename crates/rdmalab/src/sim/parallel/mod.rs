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
//! result, is the same for any number of partitions (`docs/model/determinism.md`, "Parallel engine").
//!
//! Memory grows with the partition count: each holds the whole topology, routes and flow
//! list (but only its own nodes' packets and events).

mod apps;
mod balance;
mod barrier;
mod deadlock;
mod estimate;
mod exchange;
mod marks;
mod memory;
mod merge;
mod observe;
mod partition;
mod peak;
mod runner;
mod stall;
mod window;

use std::panic::resume_unwind;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

pub(in crate::sim) use apps::sort_app_tables;
pub use balance::work_map;
pub use estimate::Estimate;
pub use exchange::{Crossing, Mail};
pub use partition::{auto_map, lookahead, weighted_map, Partition};
pub use runner::Runner;

use crate::sim::watch::{stall_cause, WaitShare};
use barrier::SpinBarrier;
pub use barrier::ThreadTimes;
pub use marks::SPREAD_BUCKETS;
use marks::{Mark, Window};
pub use memory::AVAILABLE_ENV;
use stall::StallRule;
use window::Shared;

use super::{Results, RunLimit, Simulation, StopReason};
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::units::Time;

/// What `ParallelRun::within_memory` built: the cut, or the scenario back (for one thread)
/// with why the cut would not fit.
#[derive(Debug)]
pub enum Built {
    /// Every partition built.
    Parallel(Box<ParallelRun>),
    /// The scenario for one thread, and why the partitions were not all built.
    TooBig(Box<Scenario>, String),
}

/// A scenario cut into partitions, run by one thread each.
#[derive(Debug)]
pub struct ParallelRun {
    parts: Vec<Simulation>,
    part_of: Vec<u16>,
    lookahead: Time,
    stop_time: Time,
    flows_total: usize,
    /// The stall watchdog's window and counts (`stall`).
    stall_rule: StallRule,
    /// QPs opened at setup, alike in every partition (applications' connections).
    setup_qps: u64,
    stall_cause: Option<String>,
    /// Where the windows stand between calls to `run`.
    state: Window,
    /// How the run ended, once it has.
    over: Option<StopReason>,
    /// The partitions' trace spools, while a trace is written.
    trace: Option<Box<observe::TraceSpools>>,
    /// PFC deadlock detection over the whole fabric (`deadlock`).
    watch: deadlock::DeadlockWatch,
    /// Per partition's thread, summed over the calls of `run`: CPU used, time waited.
    times: Vec<ThreadTimes>,
    /// The run's live QPs and their peak, merged from the partitions' logs (`peak`).
    live_qps: peak::LiveQps,
}

/// Partition `me` of `s` cut by `part_of`: the whole world built, then told which part of it
/// is its own.
fn build_partition(s: &Scenario, part_of: &[u16], me: usize) -> Result<Simulation> {
    let mut sim = s.clone().simulation()?;
    sim.make_partition(Partition::new(&s.topology, me as u16, part_of.to_vec()));
    sim.monitor_own_switches();
    sim.drop_foreign_setup_events();
    Ok(sim)
}

impl ParallelRun {
    /// Cuts `s` into at most `threads` partitions of about equal expected work (`work_map`)
    /// and builds one simulation per partition.
    pub fn new(s: Scenario, threads: u32) -> Result<ParallelRun> {
        let (part_of, _) = work_map(&s, threads.max(1));
        ParallelRun::with_map(s, part_of)
    }

    /// Like `new`, with a given partition of every node (partitions numbered from 0).
    pub fn with_map(s: Scenario, part_of: Vec<u16>) -> Result<ParallelRun> {
        match ParallelRun::build(s, part_of, false)? {
            Built::Parallel(run) => Ok(*run),
            Built::TooBig(..) => unreachable!("built without a memory check"),
        }
    }

    /// Like `new`, for `auto`: stops after the first partition when the memory available
    /// would not hold the others (`memory::CopyBudget`), handing the scenario back (set for
    /// one thread in the origin order, whose results the cut would give) with the reason.
    pub fn within_memory(s: Scenario, threads: u32) -> Result<Built> {
        let (part_of, _) = work_map(&s, threads.max(1));
        ParallelRun::build(s, part_of, true)
    }

    fn build(mut s: Scenario, part_of: Vec<u16>, check_memory: bool) -> Result<Built> {
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
        let budget = if check_memory { memory::CopyBudget::start() } else { None };
        let mut sims = vec![build_partition(&s, &part_of, 0)?];
        if let Some(why) = budget.as_ref().filter(|_| parts > 1).and_then(|b| b.refuse(&sims[0], parts - 1)) {
            drop(sims);
            return Ok(Built::TooBig(Box::new(s), why));
        }
        // The others at once, a thread each: every partition copies the whole fabric, which
        // at 250,000 hosts takes about 1.7 s, so sixteen built in turn spent 26.6 s of set-up.
        // Each is built from the same scenario alone, so the order they finish in changes
        // nothing; errors are taken in partition order.
        let (scenario, map) = (&s, &part_of);
        let rest: Vec<Result<Simulation>> = std::thread::scope(|scope| {
            let builders: Vec<_> =
                (1..parts).map(|me| scope.spawn(move || build_partition(scenario, map, me))).collect();
            builders.into_iter().map(|b| b.join().unwrap_or_else(|e| resume_unwind(e))).collect()
        });
        for sim in rest {
            sims.push(sim?);
        }
        let flows_total = sims[0].work_total(); // flows and multipath messages
        let setup_qps = sims[0].counters.qps_opened;
        let stall_rule = StallRule {
            window: sims[0].stall_schedule().1,
            flows_listed: sims[0].flows.len(),
            work_total: flows_total,
            stop_time,
            open_conns: sims[0].apps.conns.iter().any(|c| !c.disconnected),
        };
        // Every partition opened the setup's QPs alike; each logs only what it changes later.
        let live_qps = peak::LiveQps::new(sims[0].live_qps, sims[0].counters.qps_peak);
        Ok(Built::Parallel(Box::new(ParallelRun {
            live_qps,
            times: vec![ThreadTimes::default(); sims.len()],
            parts: sims,
            part_of,
            lookahead,
            stop_time,
            flows_total,
            stall_rule,
            setup_qps,
            stall_cause: None,
            state: Window::default(),
            over: None,
            trace: None,
            watch,
        })))
    }

    /// Partitions (and threads) of the run.
    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Events each partition ran (how evenly the map split the work).
    pub fn events_per_partition(&self) -> Vec<u64> {
        self.parts.iter().map(|p| p.counters.events).collect()
    }

    /// Most QPs alive at once in each partition: their sum bounds the run's `qps_peak`.
    pub fn qps_peak_per_partition(&self) -> Vec<u64> {
        self.parts.iter().map(|p| p.counters.qps_peak).collect()
    }

    /// Packets (and pushed events) each partition sent across the cut: what the barriers move.
    pub fn crossings_per_partition(&self) -> Vec<u64> {
        self.parts.iter().map(|p| p.part.as_ref().map_or(0, |q| q.crossed)).collect()
    }

    /// The critical path in events: per window, the most events one partition ran.
    pub fn critical_path_events(&self) -> u64 {
        self.state.critical
    }

    /// Windows by how unevenly the partitions' events fell in them: entry `i` counts the
    /// windows where the most events one partition ran exceeded the fewest by [2^i, 2^(i+1))
    /// (entry 0: by 0 or 1; the last entry: by 2^15 or more). Does not depend on the load.
    pub fn window_spread(&self) -> [u64; marks::SPREAD_BUCKETS] {
        self.state.spread
    }

    /// Per partition's thread, summed over the calls of `run` so far: the CPU seconds it
    /// used and the wall seconds it waited at barriers (where the threads wait).
    pub fn thread_times(&self) -> &[ThreadTimes] {
        &self.times
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
        let cpu: Vec<String> = self.times.iter().map(|t| format!("{:.2}", t.cpu_s)).collect();
        let wait: Vec<String> = self.times.iter().map(|t| format!("{:.2}", t.wait_s)).collect();
        format!(
            "parallel: events per partition {events:?}, {} windows, critical path {critical} events \
             (speed-up bound {:.2}x); CPU s per thread [{}], s waited at barriers [{}]; \
             sent across the cut {:?}",
            self.windows(),
            total as f64 / critical.max(1) as f64,
            cpu.join(", "),
            wait.join(", "),
            self.crossings_per_partition()
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
        if self.state.windows == 0 && self.state.start == Time::ZERO {
            self.state.start = self.parts.iter_mut().filter_map(|p| p.next_event_time()).min().unwrap_or(Time::MAX);
        }
        let events_before: u64 = self.parts.iter().map(|p| p.counters.events).sum();
        let shared = Shared {
            barrier: SpinBarrier::new(n),
            times: (0..n).map(|_| Mutex::new(ThreadTimes::default())).collect(),
            mail: (0..n * n).map(|_| Mutex::new(Mail::default())).collect(),
            next: (0..n).map(|_| Mutex::new(Mark::default())).collect(),
            lookahead: self.lookahead,
            stop_time: self.stop_time,
            flows_total: self.flows_total,
            stall_rule: self.stall_rule,
            until: limit.until,
            budget: limit.max_events,
            events_before,
            failed: AtomicBool::new(false),
            panic: Mutex::new(None),
            watch_timeout: self.watch.timeout,
            shares: (0..n).map(|_| Mutex::new(WaitShare::default())).collect(),
            watch: Mutex::new(std::mem::take(&mut self.watch)),
            verdict: AtomicBool::new(false),
            peak: peak::PeakMerge::new(n, std::mem::take(&mut self.live_qps)),
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
        self.live_qps = shared.peak.into_count();
        for (sum, t) in self.times.iter_mut().zip(&shared.times) {
            let t = *t.lock().expect("times");
            (sum.cpu_s, sum.wait_s) = (sum.cpu_s + t.cpu_s, sum.wait_s + t.wait_s);
        }
        self.state = ends[0];
        if self.state.paused {
            return StopReason::Paused;
        }
        if self.state.deadlock_at.is_some() {
            self.over = Some(StopReason::PfcDeadlock);
            return StopReason::PfcDeadlock;
        }
        // The reasons one simulation gives, in its order (`Simulation::run_loop`).
        let done: usize = self.parts.iter().map(|p| p.flows_done).sum();
        let left = self.flows_total - done;
        let reason = if let Some(t) = self.state.stall_at {
            let formed = self.watch.found.first.as_ref().map(|d| d.formed);
            self.stall_cause = Some(stall_cause(self.stall_rule.window, t, left, formed));
            StopReason::Stalled
        } else if self.state.idle_apps_at.is_some() {
            StopReason::Finished
        } else if self.state.start != Time::MAX {
            StopReason::StopTime // the next event is past the stop time
        } else if left == 0 {
            StopReason::Finished
        } else {
            self.stall_cause = Some(self.idle_cause(left));
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
        let (r, e) = self.checked_results();
        e.map_or(Ok(r), Err)
    }

    /// The merged results, and the conservation check's error when it fails: a failed run
    /// keeps what it measured.
    pub fn checked_results(&mut self) -> (Results, Option<Error>) {
        let (r, anomalies) = self.merged();
        let e = self.check(&r, anomalies).err();
        (r, e)
    }

    /// The merged results so far, without the conservation check.
    pub fn snapshot(&mut self) -> Results {
        self.merged().0
    }
}
