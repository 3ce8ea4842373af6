//! What a parallel run observes: queue, rate and link samples, the queue-length monitor and
//! the packet trace. Each partition observes its own switches, ports and QPs; the parts are
//! merged in an order that does not depend on the cut, the one a single simulation in the
//! origin order writes (`--threads 1`).
//!
//! The sample and monitor chains end at their first event after the last flow completed, a
//! fact no partition knows. Every partition runs them on the same schedule until the driver,
//! at the end of the window in which the last flow completed, says when that was; each then
//! drops what it sampled past the chain's end (`Simulation::end_sampling`, `end_monitor`).

use std::path::{Path, PathBuf};

use super::{ParallelRun, Runner};
use crate::error::{Error, Result};
use crate::sim::observe::trace_merge::merge_spools;
use crate::sim::qlen_monitor::QlenMonitor;
use crate::sim::{Results, Simulation};
use crate::units::Time;

/// The partitions' trace spools and the file they become.
#[derive(Debug)]
pub(super) struct TraceSpools {
    dest: PathBuf,
    parts: Vec<PathBuf>,
    max_bytes: u64,
}

impl Simulation {
    /// A partition at the end of a window: `flows_end` is when the run's last flow completed,
    /// once every flow has (said once); `None` while flows remain.
    pub(super) fn observers_at_window_end(&mut self, flows_end: Option<Time>) {
        match flows_end {
            Some(t) => {
                self.end_sampling(t);
                self.end_monitor(t);
            }
            None => self.monitor_goes_on(),
        }
    }

    /// The time of the partition's last event that counts: observer events past their
    /// chain's end do not (one simulation would not have run them).
    fn partition_end_time(&self) -> Time {
        self.real_now.max(self.last_sample_fired()).max(self.last_monitor_sample())
    }
}

impl ParallelRun {
    /// True when the scenario asks for a trace (then call `start_trace`).
    pub fn trace_requested(&self) -> bool {
        self.parts[0].trace_requested()
    }

    /// Starts the trace into `path`: every partition writes a spool beside it (`path.p<k>`),
    /// merged into `path` by `finish_trace`. Returns the estimated size in bytes.
    pub fn start_trace(&mut self, path: &Path) -> Result<u64> {
        let Some(cfg) = self.parts[0].cfg.trace.as_ref() else {
            return Err(Error::scenario("trace", "the scenario has no [trace] table"));
        };
        let max_bytes = cfg.max_bytes;
        let mut spools = Vec::with_capacity(self.parts.len());
        let mut estimate = 0;
        for (k, sim) in self.parts.iter_mut().enumerate() {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".p{k}"));
            let spool = PathBuf::from(name);
            estimate = sim.start_trace(&spool)?;
            spools.push(spool);
        }
        self.trace = Some(Box::new(TraceSpools { dest: path.to_path_buf(), parts: spools, max_bytes }));
        Ok(estimate)
    }

    /// Closes the partitions' spools and merges them into the trace file: `(records written,
    /// truncated at the cap)`.
    pub fn finish_trace(&mut self) -> Result<(u64, bool)> {
        let Some(t) = self.trace.take() else { return Ok((0, false)) };
        let mut truncated = false;
        for sim in &mut self.parts {
            truncated |= sim.finish_trace()?.1;
        }
        let merged = merge_spools(&t.parts, &t.dest, t.max_bytes, truncated);
        for spool in &t.parts {
            let _ = std::fs::remove_file(spool);
        }
        merged
    }

    /// The queue-length monitor's file (empty when the monitor is off), its last block at
    /// the end of the run.
    pub fn qlen_monitor_text(&self) -> Vec<u8> {
        let monitors: Vec<&QlenMonitor> = self.parts.iter().filter_map(|p| p.qlen_monitor()).collect();
        if monitors.is_empty() {
            return Vec::new();
        }
        QlenMonitor::render(&monitors, self.end_time())
    }

    /// The time of the run's last event that counts (the latest over partitions).
    pub(super) fn end_time(&self) -> Time {
        self.parts.iter().map(|p| p.partition_end_time()).max().unwrap_or(Time::ZERO)
    }
}

impl Runner {
    /// True when the scenario asks for a trace (then call `start_trace`).
    pub fn trace_requested(&self) -> bool {
        match self {
            Runner::One(s) => s.trace_requested(),
            Runner::Many(p) => p.trace_requested(),
        }
    }

    /// Starts the trace into the CSV file `path` (`Simulation::start_trace`).
    pub fn start_trace(&mut self, path: &Path) -> Result<u64> {
        match self {
            Runner::One(s) => s.start_trace(path),
            Runner::Many(p) => p.start_trace(path),
        }
    }

    /// Closes the trace: `(records written, truncated at the cap)`.
    pub fn finish_trace(&mut self) -> Result<(u64, bool)> {
        match self {
            Runner::One(s) => s.finish_trace(),
            Runner::Many(p) => p.finish_trace(),
        }
    }

    /// The queue-length monitor's file (empty when it is off).
    pub fn qlen_monitor_text(&mut self) -> Vec<u8> {
        match self {
            Runner::One(s) => s.qlen_monitor_text(),
            Runner::Many(p) => p.qlen_monitor_text(),
        }
    }
}

/// Merges what the partitions sampled into `r` (the first partition's results), each
/// table in the order one simulation gives it: time, then port or QP.
pub(super) fn merge_samples(r: &mut Results, others: &mut [Results]) {
    for o in others.iter_mut() {
        r.queue_samples.append(&mut o.queue_samples);
        r.rate_samples.append(&mut o.rate_samples);
        r.link_samples.append(&mut o.link_samples);
        r.app_posts.append(&mut o.app_posts);
    }
    // The mechanisms' tables, each merged by its key columns.
    let parts = std::iter::once(&mut *r).chain(others.iter_mut()).map(|x| std::mem::take(&mut x.tables)).collect();
    r.tables = crate::stats::table::merge_by_name(parts).expect("every partition emits the same tables");
    r.queue_samples.sort_by_key(|s| (s.0, s.1));
    r.rate_samples.sort_by_key(|s| (s.time, s.qp));
    r.link_samples.sort_by_key(|s| (s.0, s.1));
    r.app_posts.sort_by_key(|p| (p.time, p.app, p.chunk));
}
