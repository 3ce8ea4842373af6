//! One training iteration of a SimAI workload as a dependency-driven job: each communication
//! of the layer table becomes one collective per group (`app::collective`), and the
//! collectives are chained at each rank in the order SimAI's transformer loop issues them
//! (`Workload::iterate_hybrid_parallel_Transformer` and its `_fwd_in_bckwd` twin in
//! aliyun/SimAI's `astra-sim-alibabacloud/astra-sim/workload/Workload.cc`):
//!
//! - forward, layer 0 to L−1: compute, then the forward communication; the rank waits for it
//!   (SimAI issues it `Blocking`);
//! - backward, layer L−1 down to 0: compute, the input-gradient communication, waited for;
//!   then compute, and the weight-gradient communication, *not* waited for (`Non_Blocking`):
//!   the next layer's input-gradient compute starts as soon as it is issued;
//! - the iteration is over when every communication has completed.
//!
//! In rdmalab's terms: the first transfers a rank sends in a collective (those the algorithm
//! gives no dependency) depend on that rank's whole part of the last communication it waited
//! for — its sends completed (`Sent`) and its receives placed (`Received`), as a repeated
//! collective's iterations do — plus, as their compute delay, every compute time since (and
//! the update time SimAI adds after a communication completes). That post is the rank's
//! *join*. Every other transfer the rank sends in the collective also waits for the join
//! (`Trigger::Posted`), as NCCL's kernel forwards nothing before it is launched: a ring's later
//! steps wait for the rank's own first step, not only for the data they forward. A rank's
//! first communication has no dependency; its delay counts from the layout's `start`.
//! Compute is the same at every rank, as SimAI's is.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use super::nvls::{nvls_schedule, NVLS_MIN_RANKS};
use super::{Group, SimaiWorkload};
use crate::app::collective::{Algorithm, Collective, Kind, RecordedPart};
use crate::app::deps::{Dep, Transfer, TransferGraph, Trigger};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// Where and how the iteration runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// SimAI rank i runs on `hosts[i]` (as many as `all_gpus`).
    pub hosts: Vec<NodeId>,
    /// The allreduce algorithm (allgather and reduce-scatter are rings, all-to-all direct).
    pub algorithm: Algorithm,
    /// Channels of every collective (unless `rings` gives SimAI's).
    pub channels: u16,
    /// SimAI's channels, from its GPUs per server: `Some(gps)` gives a tensor-parallel ring
    /// min(TP, gps) channels and a data-parallel ring gps / TP (1 where TP > gps), as SimAI
    /// builds one ring per starting GPU of its local rings (`Sys::mock_nccl_grobal_group_init`);
    /// EP and DP_EP rings, which SimAI's NCCL model does not build, one. `None`: `channels`.
    pub rings: Option<u32>,
    /// Pipelining unit of every collective.
    pub chunk: u64,
    /// When the first compute starts.
    pub start: Time,
    /// Each rank's NVSwitch where SimAI runs a tensor-parallel group's allreduce as NVLS
    /// (`AS_NVLS_ENABLE=1` on H100 or H800: `nvls_enabled`); empty otherwise. A group of at
    /// least 8 ranks then runs its allreduces through its NVSwitch (`nvls_schedule`).
    pub nvls: Vec<NodeId>,
}

/// One communication of the iteration, over all its groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimaiOp {
    /// Layer index (file order).
    pub layer: usize,
    /// `fwd`, `ig` or `wg`.
    pub phase: &'static str,
    /// The collective.
    pub kind: Kind,
    /// Its group.
    pub group: Group,
    /// Bytes per rank (NCCL-tests' size).
    pub bytes: u64,
    /// How many groups run it side by side.
    pub groups: usize,
    /// Whether the ranks wait for it before going on.
    pub blocking: bool,
    /// Compute (and update) time between the last waited-for communication and its issue.
    pub delay: Time,
    /// Its transfers in the job.
    pub transfers: Range<usize>,
}

/// The iteration: the job and its communications in issue order.
#[derive(Clone, Debug)]
pub struct Iteration {
    /// The transfers, started at time 0.
    pub graph: TransferGraph,
    /// Each communication that moves bytes, in the order the ranks issue them.
    pub ops: Vec<SimaiOp>,
}

/// The job of one iteration of `w` over `layout` (see the module's documentation). A
/// communication of `NONE`, of 0 bytes or in groups of one rank moves nothing; its compute
/// still counts. Errors name `path`, the layer's line and the field.
pub fn iteration(w: &SimaiWorkload, path: &Path, layout: &Layout) -> Result<Iteration> {
    if layout.hosts.len() != w.all_gpus as usize {
        return Err(Error::scenario(
            "ranks",
            format!(
                "{} host(s) for the workload's all_gpus = {}: give one host per rank",
                layout.hosts.len(),
                w.all_gpus
            ),
        ));
    }
    let stride = lane_stride(w, layout);
    if stride > u16::MAX / 4 {
        return Err(Error::scenario("channels", format!("at most {} (four communicators' QPs each)", u16::MAX / 4)));
    }
    let n = w.all_gpus as usize;
    let mut transfers: Vec<Transfer> = Vec::new();
    let mut ops = Vec::new();
    // Each rank's part of the last communication it waited for.
    let mut waited: Vec<Vec<Dep>> = vec![Vec::new(); n];
    let mut pending = layout.start;
    for (i, l, phase, blocking, p) in w.iteration() {
        pending += p.compute;
        let Some((kind, group)) = p.comm else { continue };
        if p.bytes == 0 || w.group_size(group) < 2 {
            continue;
        }
        let from = transfers.len();
        let mut part: Vec<Vec<Dep>> = vec![Vec::new(); n];
        let groups = w.groups(group);
        let algorithm = op_algorithm(kind, group, w, layout);
        for g in &groups {
            let ranks: Vec<NodeId> = g.iter().map(|&r| layout.hosts[r as usize]).collect();
            let schedule = if algorithm == Algorithm::Nvls {
                let sw = layout.nvls[g[0] as usize];
                if let Some(&r) = g.iter().find(|&&r| layout.nvls[r as usize] != sw) {
                    let msg = format!(
                        "NVLS over the GPUs of several servers (ranks {} and {r}; SimAI's NVLS_TREE) is not modelled",
                        g[0]
                    );
                    return Err(Error::input(path, l.line, format!("{phase}_comm"), msg));
                }
                nvls_schedule(&ranks, sw, p.bytes)
                    .map_err(|e| Error::input(path, l.line, format!("{phase}_size"), e.to_string()))?
            } else {
                let ch = channels_of(group, w, layout);
                collective_schedule(kind, &ranks, p.bytes, layout, ch, path, l.line, phase, g.len())?
            };
            let base = transfers.len() as u32;
            let rank = |h: NodeId| ranks.iter().position(|&x| x == h).map(|i| g[i] as usize);
            let rank_of = |h: NodeId| rank(h).expect("a rank of the group");
            let joins = joins(&schedule, base);
            for t in &schedule {
                let mut t = t.clone();
                // One set of QPs per communicator, as NCCL opens its connections per group.
                t.lane += stride * group_lane(group);
                let root = t.deps.is_empty();
                t.deps.iter_mut().for_each(|d| d.on += base);
                let j = transfers.len() as u32;
                if rank(t.src).is_none() {
                    // The NVSwitch's sends: they wait for its group's chunk alone.
                    part[rank_of(t.dst)].push(Dep { on: j, when: Trigger::Received });
                    transfers.push(t);
                    continue;
                }
                let join = joins[&t.src];
                if root || j == join {
                    // The rank joins: after its part of the last communication it waited
                    // for, and the compute since.
                    t.deps.extend_from_slice(&waited[rank_of(t.src)]);
                    t.delay = pending;
                } else {
                    // Its other sends wait for the join too: NCCL's kernel, not yet
                    // launched, forwards nothing.
                    t.deps.push(Dep { on: join, when: Trigger::Posted });
                }
                part[rank_of(t.src)].push(Dep { on: j, when: Trigger::Sent });
                if let Some(r) = rank(t.dst) {
                    part[r].push(Dep { on: j, when: Trigger::Received });
                }
                transfers.push(t);
            }
        }
        ops.push(SimaiOp {
            layer: i,
            phase,
            kind,
            group,
            bytes: p.bytes,
            groups: groups.len(),
            blocking,
            delay: pending,
            transfers: from..transfers.len(),
        });
        if blocking {
            waited = part;
            pending = l.update;
        }
    }
    if transfers.is_empty() {
        return Err(Error::input(path, 2, "layers", "no layer communicates: the iteration has no transfer to run"));
    }
    let graph = TransferGraph::new(transfers)?;
    Ok(Iteration { graph, ops })
}

/// The transfers of one group's collective (`Collective::schedule`); errors name the row.
#[allow(clippy::too_many_arguments)]
fn collective_schedule(
    kind: Kind,
    ranks: &[NodeId],
    bytes: u64,
    layout: &Layout,
    channels: u16,
    path: &Path,
    line: usize,
    phase: &str,
    n: usize,
) -> Result<Vec<Transfer>> {
    let c = Collective {
        name: String::new(),
        kind,
        algorithm: algorithm_of(kind, layout),
        ranks: ranks.to_vec(),
        size: bytes,
        channels,
        chunk: layout.chunk,
        start: Time::ZERO,
        repeat: 1,
        transport: Default::default(), // the schedule alone is used
    };
    let s = c.schedule().map_err(|e| match e {
        // Too few bytes for the group: the row's size is at fault.
        Error::Scenario { field, msg } if field == "size" => {
            let msg = format!("{} in groups of {n}: {msg}", kind.name());
            Error::input(path, line, format!("{phase}_size"), msg)
        }
        // The layout's algorithm does not fit the group.
        Error::Scenario { field, msg } => Error::scenario(
            if field == "ranks" { "algorithm".to_string() } else { field },
            format!("{} (line {line}, {phase}_comm, groups of {n}): {msg}", path.display()),
        ),
        other => other,
    })?;
    Ok(s.graph.transfers().to_vec())
}

/// The algorithm SimAI runs a communication of `kind` in `group` with: NVLS for a
/// tensor-parallel allreduce of at least 8 ranks where the layout has NVLS (SimAI's
/// `get_algo_proto_info`), else `algorithm_of`.
fn op_algorithm(kind: Kind, group: Group, w: &SimaiWorkload, layout: &Layout) -> Algorithm {
    let nvls = !layout.nvls.is_empty() && kind == Kind::Allreduce && group == Group::Tp;
    if nvls && w.group_size(group) as usize >= NVLS_MIN_RANKS {
        Algorithm::Nvls
    } else {
        algorithm_of(kind, layout)
    }
}

/// The channels of a ring in `group` (`Layout::rings`).
fn channels_of(group: Group, w: &SimaiWorkload, layout: &Layout) -> u16 {
    let Some(gps) = layout.rings else { return layout.channels };
    let tp = w.group_size(Group::Tp).max(1);
    let n = match group {
        Group::Tp => tp.min(gps),
        Group::Dp if tp <= gps => gps / tp,
        _ => 1,
    };
    u16::try_from(n.max(1)).unwrap_or(u16::MAX)
}

/// Lanes each communicator's QPs take: the most channels of any group.
fn lane_stride(w: &SimaiWorkload, layout: &Layout) -> u16 {
    [Group::Tp, Group::Dp, Group::Ep, Group::DpEp].into_iter().map(|g| channels_of(g, w, layout)).max().unwrap_or(1)
}

/// The algorithm a communication of `kind` runs: the layout's for allreduces, rings for
/// allgather and reduce-scatter, direct for all-to-all.
fn algorithm_of(kind: Kind, layout: &Layout) -> Algorithm {
    match kind {
        Kind::Allreduce => layout.algorithm,
        Kind::Alltoall => Algorithm::Direct,
        _ => Algorithm::Ring,
    }
}

impl Iteration {
    /// Each communication as a part of the job recorded in `res.collectives`, named
    /// `layer.phase#k` (`grad_norm.wg#0`), k counting the earlier ones of that name (a
    /// workload repeats a layer's name once per transformer layer), with every rank of its
    /// groups.
    pub fn parts(&self, w: &SimaiWorkload, layout: &Layout) -> Vec<RecordedPart> {
        let host = |r: &u32| layout.hosts[*r as usize];
        let mut seen: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        self.ops
            .iter()
            .map(|op| {
                let name = format!("{}.{}", w.layers[op.layer].name, op.phase);
                let k = seen.entry(name.clone()).or_insert(0);
                *k += 1;
                (op, name, *k - 1)
            })
            .map(|(op, name, index)| RecordedPart {
                name,
                index,
                kind: op.kind,
                algorithm: op_algorithm(op.kind, op.group, w, layout),
                ranks: w.groups(op.group).iter().flat_map(|g| g.iter().map(host)).collect(),
                group: w.group_size(op.group) as usize,
                size: op.bytes,
                transfers: op.transfers.clone(),
            })
            .collect()
    }
}

/// Each sender's join in one group's schedule (`transfers`, to be placed from job index
/// `base`): its first transfer without dependencies, or, where it has none (an inner node
/// of both trees of a double binary tree over an odd number of ranks), its first transfer.
/// A join's dependencies lie in earlier communications or before it in the schedule, and
/// every other send of the rank depends on its post, so the job stays acyclic.
fn joins(transfers: &[Transfer], base: u32) -> HashMap<NodeId, u32> {
    let mut first: HashMap<NodeId, (bool, u32)> = HashMap::new();
    for (k, t) in transfers.iter().enumerate() {
        let root = t.deps.is_empty();
        let e = first.entry(t.src).or_insert((root, k as u32));
        if root && !e.0 {
            *e = (true, k as u32);
        }
    }
    first.into_iter().map(|(h, (_, k))| (h, base + k)).collect()
}

/// Which communicator's QPs a group's transfers use.
fn group_lane(g: Group) -> u16 {
    match g {
        Group::Tp => 0,
        Group::Dp => 1,
        Group::Ep => 2,
        Group::DpEp => 3,
    }
}
