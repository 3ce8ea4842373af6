//! `Runner`: a scenario run on the engine its `threads` asks for, sequential or parallel.

use super::{lookahead, work_map, Built, Estimate, ParallelRun};
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::sim::{Results, RunLimit, Simulation, StopReason};
use crate::topology::Topology;
use crate::Time;

/// A scenario run as its `threads` asks: one simulation (absent or 1), or partitions.
// One per run, never in a collection: the driver's few hundred bytes inline cost nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Runner {
    /// The sequential engine (`threads` absent: the reference's order; 1: the origin order).
    One(Box<Simulation>),
    /// The parallel engine.
    Many(ParallelRun),
}

impl Runner {
    /// Builds the run `s.config.threads` asks for (`Some(0)`: `"auto"`, [`Runner::auto`]).
    pub fn new(mut s: Scenario) -> Result<Runner> {
        match s.config.threads {
            Some(0) => {
                // `threads = "auto"` in the scenario.
                s.config.threads = None;
                Runner::auto(s)
            }
            Some(n) if n > 1 => match s.config.partition_map.clone() {
                Some(map) => Ok(Runner::Many(ParallelRun::with_map(s, map)?)),
                None => Ok(Runner::Many(ParallelRun::new(s, n)?)),
            },
            _ => Ok(Runner::One(Box::new(s.simulation()?))),
        }
    }

    /// The run a caller's thread count asks for: `None` keeps the scenario's own `threads`,
    /// `Some(0)` the command line's default ([`Runner::auto`]), `Some(n)` overrides it.
    pub fn with_threads(mut s: Scenario, threads: Option<u32>) -> Result<Runner> {
        match threads {
            Some(0) => Runner::auto(s),
            Some(n) => {
                s.config.threads = Some(n);
                Runner::new(s)
            }
            None => Runner::new(s),
        }
    }

    /// What the command line runs when no thread count is given: the scenario's own
    /// `threads` if it names one; else, in the origin order (so the results do not depend on
    /// the machine nor on the choice), the machine's cores capped by the partitions the
    /// automatic map makes when that cut is expected to run faster than one thread
    /// ([`Estimate`]), one thread otherwise; and the sequential engine, in the reference's
    /// order, when the parallel engine refuses a mechanism of the scenario.
    pub fn auto(s: Scenario) -> Result<Runner> {
        if s.config.threads.is_some() {
            return Runner::new(s);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let (map, mut parts) = work_map(&s, cores);
        if parts > 1 && s.config.partition_map.is_none() {
            // A zero-delay cut is refused below; a cut not expected to pay runs whole.
            let pays = lookahead(&s.topology, &map).map_or(true, |l| Estimate::new(&s, &map, l).cut_pays());
            parts = if pays { parts } else { 1 };
        }
        let mut parallel = s.clone();
        // A user map decides the partitions itself; any count above 1 selects it.
        parallel.config.threads = Some(if s.config.partition_map.is_some() { 2 } else { parts.max(1) });
        let built = if parts > 1 && s.config.partition_map.is_none() {
            ParallelRun::within_memory(parallel, parts).and_then(Runner::from_built)
        } else {
            Runner::new(parallel)
        };
        match built {
            Err(Error::Scenario { field, .. }) if field == "threads" => Runner::new(s),
            built => built,
        }
    }

    /// The cut, or one thread in the origin order where the cut would not fit in memory
    /// (the reason becomes the run's first warning).
    fn from_built(built: Built) -> Result<Runner> {
        match built {
            Built::Parallel(run) => Ok(Runner::Many(*run)),
            Built::TooBig(mut one, why) => {
                one.config.input_warnings.insert(0, why);
                Ok(Runner::One(Box::new(one.simulation()?)))
            }
        }
    }

    /// One line on the engine: sequential (and its order) or the parallel cut.
    pub fn describe(&self) -> String {
        match self {
            Runner::One(s) if s.origin_order => "sequential, origin order (--threads 1)".to_string(),
            Runner::One(_) => "sequential, the reference's event order".to_string(),
            Runner::Many(p) => p.describe_cut(),
        }
    }

    /// Runs until `limit` or the end, whichever comes first (so a caller can show progress
    /// and stop between slices).
    pub fn run(&mut self, limit: RunLimit) -> StopReason {
        match self {
            Runner::One(s) => s.run(limit),
            Runner::Many(p) => p.run(limit),
        }
    }

    /// Runs to the end.
    pub fn run_to_end(&mut self) -> StopReason {
        match self {
            Runner::One(s) => s.run_to_end(),
            Runner::Many(p) => p.run_to_end(),
        }
    }

    /// The results, conservation checked.
    pub fn results(&mut self) -> Result<Results> {
        match self {
            Runner::One(s) => s.results(),
            Runner::Many(p) => p.results(),
        }
    }

    /// The results, and the conservation check's error when it fails: a failed run keeps
    /// what it measured (`Results::first_loss` says where a lossless class first dropped).
    pub fn checked_results(&mut self) -> (Results, Option<crate::error::Error>) {
        match self {
            Runner::One(s) => {
                let e = s.check_conservation().err();
                (s.snapshot(), e)
            }
            Runner::Many(p) => p.checked_results(),
        }
    }

    /// The results so far, unchecked (what a paused or stopped run has).
    pub fn snapshot(&mut self) -> Results {
        match self {
            Runner::One(s) => s.snapshot(),
            Runner::Many(p) => p.snapshot(),
        }
    }

    /// Settings that are valid but probably unintended, each saying what the run will do.
    pub fn warnings(&self) -> &[String] {
        match self {
            Runner::One(s) => s.warnings(),
            Runner::Many(p) => p.warnings(),
        }
    }

    /// (flows completed, flows total).
    pub fn progress(&self) -> (usize, usize) {
        match self {
            Runner::One(s) => s.progress(),
            Runner::Many(p) => p.progress(),
        }
    }

    /// The simulated time reached.
    pub fn now(&self) -> Time {
        match self {
            Runner::One(s) => s.now(),
            Runner::Many(p) => p.now(),
        }
    }

    /// The topology the run simulates.
    pub fn topology(&self) -> &Topology {
        match self {
            Runner::One(s) => s.topology(),
            Runner::Many(p) => p.topology(),
        }
    }
}
