//! A collective's records: one per iteration, from the times of its transfers.

use std::collections::HashMap;
use std::ops::Range;

use super::{Algorithm, Collective, Kind};
use crate::app::deps::{TransferGraph, Trigger};
use crate::ids::NodeId;
use crate::units::Time;

/// When each transfer of a job was posted, completed at its sender and placed at its
/// receiver (`Time::MAX`: not yet), by job index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferTimes {
    /// Posted on its QP.
    pub posted: Vec<Time>,
    /// Its send completion (last byte acknowledged).
    pub acked: Vec<Time>,
    /// Its receive completion (last byte placed in order).
    pub received: Vec<Time>,
}

/// One iteration of a collective.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveRecord {
    /// `name#k` for iteration k.
    pub name: String,
    /// The kind's name (`allreduce`, ...).
    pub kind: &'static str,
    /// The algorithm's name (`ring`, ...).
    pub algorithm: &'static str,
    /// Number of ranks.
    pub ranks: u32,
    /// Bytes per rank (NCCL-tests' size).
    pub size: u64,
    /// The iteration's first post.
    pub start: Time,
    /// When its last rank was done (`None`: not every rank was): a rank is done at its
    /// last receive completion, or a rank that receives nothing at its last send completion.
    pub end: Option<Time>,
    /// NCCL-tests' algorithm bandwidth, size / (end − start), in Gbit/s.
    pub algbw_gbps: f64,
    /// NCCL-tests' bus bandwidth, algbw × the kind's factor, in Gbit/s.
    pub busbw_gbps: f64,
    /// The host that was done last (`NodeId::NONE` when unfinished).
    pub slowest_rank: NodeId,
    /// Steps of the schedule (dependency depths).
    pub steps: u32,
    /// The largest spread, over steps, between a step's first and last receive completion.
    pub step_spread: Time,
    /// Per step (dependency depth), its first receive completion (`Time::MAX`: none yet).
    pub step_first: Vec<Time>,
    /// Per step, its last receive completion so far (`Time::MAX`: none yet). The figure of
    /// completion by step draws these two; `step_spread` is their largest gap.
    pub step_last: Vec<Time>,
}

/// The records of every iteration of `c` (scheduled as `graph`, `m` transfers an
/// iteration) from its transfers' times.
pub fn records(c: &Collective, graph: &TransferGraph, m: usize, t: &TransferTimes) -> Vec<CollectiveRecord> {
    // A step is a depth in one iteration's schedule (iteration 0's, which waits on nothing
    // before it): every iteration repeats it.
    (0..c.repeat as usize)
        .map(|k| {
            let mut r = record(c, graph, k * m..(k + 1) * m, |i| graph.depth(i % m), t);
            r.name = format!("{}#{k}", c.name);
            r
        })
        .collect()
}

/// The record of `c`'s transfers `range` of `graph`, `step(i)` being transfer i's step.
fn record(
    c: &Collective,
    graph: &TransferGraph,
    range: Range<usize>,
    step: impl Fn(usize) -> u32,
    t: &TransferTimes,
) -> CollectiveRecord {
    let ts = graph.transfers();
    let start = range.clone().map(|i| t.posted[i]).min().unwrap_or(Time::MAX);
    // Per host: its last receive completion and last send completion (one pass).
    let mut last: HashMap<NodeId, (Option<Time>, Option<Time>)> = HashMap::new();
    for i in range.clone() {
        let r = &mut last.entry(ts[i].dst).or_default().0;
        *r = (*r).max(Some(t.received[i]));
        let s = &mut last.entry(ts[i].src).or_default().1;
        *s = (*s).max(Some(t.acked[i]));
    }
    let mut end = Some(Time::ZERO);
    let mut slowest = NodeId::NONE;
    for &r in &c.ranks {
        let (recv, sent) = last.get(&r).copied().unwrap_or_default();
        let done = recv.or(sent);
        match done {
            Some(d) if d != Time::MAX => {
                if end.is_some_and(|e| d > e) {
                    (end, slowest) = (Some(d), r);
                }
            }
            _ => end = None,
        }
    }
    let steps = range.clone().map(&step).max().map_or(0, |d| d + 1);
    let mut first = vec![Time::MAX; steps as usize];
    let mut last = vec![Time::MAX; steps as usize];
    for i in range.clone().filter(|&i| t.received[i] != Time::MAX) {
        let d = step(i) as usize;
        first[d] = first[d].min(t.received[i]);
        // MAX marks a step without a receive yet, so the first one replaces it.
        last[d] = if last[d] == Time::MAX { t.received[i] } else { last[d].max(t.received[i]) };
    }
    let spread = first.iter().zip(&last).filter(|(f, _)| **f != Time::MAX).map(|(f, l)| *l - *f).max();
    let took = end.filter(|&e| e > start).map(|e| (e - start).ps() as f64);
    let algbw = took.map_or(0.0, |ps| c.size as f64 * 8.0 * 1000.0 / ps);
    CollectiveRecord {
        name: String::new(),
        kind: c.kind.name(),
        algorithm: c.algorithm.name(),
        ranks: c.ranks.len() as u32,
        size: c.size,
        start,
        end,
        algbw_gbps: algbw,
        busbw_gbps: algbw * c.kind.busbw_factor(c.ranks.len()),
        slowest_rank: if end.is_some() { slowest } else { NodeId::NONE },
        steps,
        step_spread: spread.unwrap_or(Time::ZERO),
        step_first: first,
        step_last: last,
    }
}

/// A part of a job recorded as one collective: one SimAI communication over all its groups
/// side by side (`formats::simai::iteration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedPart {
    /// Its record's name before `#` (`name#index`).
    pub name: String,
    /// Its record's number after `#`: 0, or for a SimAI communication the count of the
    /// iteration's earlier ones of its name (a workload repeats a layer's name per layer).
    pub index: u32,
    /// The collective each group runs.
    pub kind: Kind,
    /// Its algorithm.
    pub algorithm: Algorithm,
    /// Every rank of every group (hosts).
    pub ranks: Vec<NodeId>,
    /// Ranks per group: NCCL-tests' factor is the group's.
    pub group: usize,
    /// Bytes per rank.
    pub size: u64,
    /// Its transfers in the job.
    pub transfers: Range<usize>,
}

/// The record of part `p` of a job scheduled as `graph`. Its steps are the depths of its own
/// schedule: over the dependencies between its transfers on receipts and sends, not those on
/// earlier parts nor a rank's join (`Trigger::Posted`); `ranks` counts one group's ranks.
pub fn part_record(p: &RecordedPart, graph: &TransferGraph, t: &TransferTimes) -> CollectiveRecord {
    let (ts, from) = (graph.transfers(), p.transfers.start);
    let mut depth = vec![0u32; p.transfers.len()];
    for i in p.transfers.clone() {
        // A schedule's dependencies point back to transfers before it (`Collective::schedule`).
        let inner = ts[i].deps.iter().filter(|d| d.when != Trigger::Posted && p.transfers.contains(&(d.on as usize)));
        depth[i - from] = inner.map(|d| depth[d.on as usize - from] + 1).max().unwrap_or(0);
    }
    let c = Collective {
        name: String::new(),
        kind: p.kind,
        algorithm: p.algorithm,
        ranks: p.ranks.clone(),
        size: p.size,
        channels: 1,
        chunk: 1,
        start: Time::ZERO,
        repeat: 1,
        transport: Default::default(),
    };
    let mut r = record(&c, graph, p.transfers.clone(), |i| depth[i - from], t);
    r.name = format!("{}#{}", p.name, p.index);
    r.ranks = p.group as u32;
    r.busbw_gbps = r.algbw_gbps * p.kind.busbw_factor(p.group);
    r
}
