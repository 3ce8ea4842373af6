//! A set of Chakra traces (one per rank) as one dependency-driven job
//! (`app::deps::TransferGraph`), as a SimAI iteration is (`formats::simai::iteration`):
//!
//! - a collective node is matched with the collective nodes of the other ranks of its
//!   process group in the order each rank's file lists them (the k-th collective of group
//!   `pg_name` at every rank that names it; without `pg_name`, the k-th at every rank), and
//!   carried out by the chosen algorithm (`app::collective`), cut into `splits` pieces of
//!   which at most `active` are in flight at a rank (ASTRA-sim's `preferred-dataset-splits`
//!   and `active-chunks-per-dimension`); each step that forwards what a rank received waits
//!   `endpoint_delay` more;
//! - a send node is matched with the receive node of its destination that names it as source
//!   with the same tag, the k-th with the k-th, and becomes one transfer;
//! - a compute node takes its recorded duration, or under the system file's roofline model a
//!   GPU node its time from `num_ops` and `tensor_size` (times `compute_scale`); a metadata or
//!   invalid node takes none;
//! - a node starts once all its data and control dependencies are done. A rank's
//!   collective is done when its part of it is (its sends acknowledged, its receives placed),
//!   a send once posted (the rank goes on, as NCCL's and MSCCL's kernels do once the data is
//!   handed to the network), a receive once its message is placed, a compute node its
//!   duration after it started. A transfer starts when the events it waits on have happened
//!   and then the longest chain of compute since has run: exact when a node's compute
//!   follows one event, longer than ASTRA-sim's when two branches of unequal compute end at
//!   different times (docs/chakra.md).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;

use super::dims::{self, Dims};
use super::schema::CollectiveCommType;
use super::system::Roofline;
use super::{ChakraTrace, NodeKind};
use crate::app::collective::{share, Algorithm, Collective, Kind, RecordedPart};
use crate::app::deps::{Dep, Transfer, TransferGraph, Trigger};
use crate::app::trace_nodes::{NodeWork, TraceNode, TraceNodes};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;

/// How the traces run.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Rank i runs on `hosts[i]` (one host per trace file).
    pub hosts: Vec<NodeId>,
    /// The algorithm of each kind (`Kind::algorithms`' first where not given).
    pub algorithms: Vec<(Kind, Algorithm)>,
    /// Pieces a collective is cut into (ASTRA-sim's `preferred-dataset-splits`).
    pub splits: u32,
    /// Pieces of one collective in flight at a rank (`active-chunks-per-dimension`).
    pub active: u32,
    /// Added before every transfer that forwards what its rank received (`endpoint-delay`).
    pub endpoint_delay: Time,
    /// Channels of every piece.
    pub channels: u16,
    /// Pipelining unit of every piece.
    pub chunk: u64,
    /// Compute durations are multiplied by this (1: as recorded; 0: no compute).
    pub compute_scale: f64,
    /// When the traces start.
    pub start: Time,
    /// The system file's roofline model: a GPU compute node's time from its `num_ops` and
    /// `tensor_size` instead of its recorded duration.
    pub roofline: Option<Roofline>,
    /// The network's dimensions (ASTRA-sim's `logical-dims`): `None` for one.
    pub dims: Option<Dims>,
}

impl Plan {
    /// The algorithm that carries `kind` out.
    pub fn algorithm(&self, kind: Kind) -> Algorithm {
        self.algorithms.iter().find(|(k, _)| *k == kind).map_or(kind.algorithms()[0], |&(_, a)| a)
    }
}

/// Which node of which rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct At {
    /// The rank.
    pub rank: u32,
    /// The node's place in its file.
    pub node: u32,
}

/// The traces as a job.
#[derive(Clone, Debug)]
pub struct ChakraJob {
    /// The transfers.
    pub graph: TransferGraph,
    /// Each collective (over all its ranks), recorded in `res.collectives`.
    pub parts: Vec<RecordedPart>,
    /// Which node made each transfer (a send node, or a collective node of its sender).
    pub made_by: Vec<At>,
    /// Every node of every rank, for the per-node records (`res.chakra`).
    pub nodes: TraceNodes,
}

/// The collective a `comm_type` is, or why it cannot run.
pub fn kind_of(op: CollectiveCommType) -> std::result::Result<Kind, String> {
    Ok(match op {
        CollectiveCommType::AllReduce => Kind::Allreduce,
        CollectiveCommType::AllGather => Kind::Allgather,
        CollectiveCommType::ReduceScatter | CollectiveCommType::ReduceScatterBlock => Kind::ReduceScatter,
        CollectiveCommType::AllToAll => Kind::Alltoall,
        CollectiveCommType::Broadcast => Kind::Broadcast,
        other => {
            return Err(format!(
                "{} has no schedule here (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL and BROADCAST do)",
                other.schema_name()
            ))
        }
    })
}

/// One collective across its ranks.
struct Instance {
    /// Its process group's place among the groups (its QPs' lanes).
    group: u16,
    kind: Kind,
    bytes: u64,
    members: Vec<At>,
    /// Per piece: its transfers, and its roots (transfers without dependencies in its schedule).
    pieces: Vec<(Range<usize>, Vec<bool>)>,
}

/// The job of `traces` under `plan` (see the module's documentation). Errors name the file,
/// the rank and the node.
pub fn job(traces: &[ChakraTrace], plan: &Plan) -> Result<ChakraJob> {
    let n = traces.len();
    if plan.hosts.len() != n {
        return Err(Error::scenario("ranks", format!("{} host(s) for {n} trace file(s)", plan.hosts.len())));
    }
    let field = |at: At| {
        let node = &traces[at.rank as usize].nodes[at.node as usize];
        format!("rank {}, node {} ({})", at.rank, node.id, node.name)
    };
    let err = |at: At, msg: String| Error::input(&traces[at.rank as usize].path, 0, field(at), msg);
    // Collectives by group, then sends and receives by (src, dst, tag), in file order.
    let mut groups: BTreeMap<String, Vec<Vec<At>>> = BTreeMap::new();
    let mut sends: BTreeMap<(u32, u32, i64), Vec<At>> = BTreeMap::new();
    let mut recvs: BTreeMap<(u32, u32, i64), Vec<At>> = BTreeMap::new();
    for (r, t) in traces.iter().enumerate() {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, node) in t.nodes.iter().enumerate() {
            let at = At { rank: r as u32, node: i as u32 };
            let peer = |p: u32| {
                if p as usize >= n || p as usize == r {
                    let why = if p as usize == r {
                        "is this rank".to_string()
                    } else {
                        format!("has no trace file (the set has {n} ranks)")
                    };
                    Err(err(at, format!("rank {p} {why}")))
                } else {
                    Ok(p)
                }
            };
            match &node.kind {
                NodeKind::Collective { op, pg } => {
                    kind_of(*op).map_err(|m| err(at, m))?;
                    let key = pg.clone().unwrap_or_default();
                    let k = seen.entry(pg.as_deref().unwrap_or("")).or_insert(0);
                    let list = groups.entry(key).or_default();
                    if list.len() <= *k {
                        list.push(Vec::new());
                    }
                    list[*k].push(at);
                    *k += 1;
                }
                NodeKind::Send { dst, tag } => sends.entry((r as u32, peer(*dst)?, *tag)).or_default().push(at),
                NodeKind::Recv { src, tag } => recvs.entry((peer(*src)?, r as u32, *tag)).or_default().push(at),
                NodeKind::MemLoad | NodeKind::MemStore => {
                    return Err(err(at, format!("a {} node is read but not modelled in a run", node.kind.name())))
                }
                NodeKind::Compute | NodeKind::Skipped => {}
            }
        }
    }
    let node = |at: At| &traces[at.rank as usize].nodes[at.node as usize];
    // Collectives: every instance of a group has the same ranks, kind and size.
    let mut instances: Vec<Instance> = Vec::new();
    let lanes = communicators(&groups, n);
    for (g, (pg, list)) in groups.iter().enumerate() {
        let ranks: Vec<u32> =
            if pg.is_empty() { (0..n as u32).collect() } else { list[0].iter().map(|a| a.rank).collect() };
        for (k, members) in list.iter().enumerate() {
            let have: Vec<u32> = members.iter().map(|a| a.rank).collect();
            if let Some(&miss) = ranks.iter().find(|r| !have.contains(r)) {
                let name = if pg.is_empty() { "without pg_name".to_string() } else { format!("of group {pg}") };
                return Err(err(
                    members[0],
                    format!(
                        "collective {k} {name} has no partner at rank {miss}, whose trace holds {} such collective(s)",
                        list.iter().filter(|m| m.iter().any(|a| a.rank == miss)).count()
                    ),
                ));
            }
            if let Some(extra) = members.iter().find(|a| !ranks.contains(&a.rank)) {
                return Err(err(*extra, format!("collective {k} of group {pg} has rank {} in it, which the group's first collective does not have", extra.rank)));
            }
            let kind_bytes = |a: At| match &node(a).kind {
                NodeKind::Collective { op, .. } => (*op, node(a).bytes),
                _ => unreachable!("grouped as a collective"),
            };
            let first = kind_bytes(members[0]);
            if let Some(&other) = members.iter().find(|&&a| kind_bytes(a) != first) {
                let (op, b) = kind_bytes(other);
                return Err(err(
                    other,
                    format!(
                        "{} of {b} B, where rank {} runs {} of {} B as the same collective",
                        op.schema_name(),
                        members[0].rank,
                        first.0.schema_name(),
                        first.1
                    ),
                ));
            }
            let kind = kind_of(first.0).expect("checked");
            instances.push(Instance {
                group: lanes[g],
                kind,
                bytes: first.1,
                members: members.clone(),
                pieces: Vec::new(),
            });
        }
    }
    // In the order the ranks reach them (a node's place in its file; ties in group order), as
    // a workload issues its collectives: the QPs open in that order.
    instances.sort_by_key(|inst| inst.members.iter().map(|a| a.node).min());
    // Point-to-point: the k-th send of (src, dst, tag) meets the k-th receive.
    let mut pairs: Vec<(At, At)> = Vec::new();
    for (key, s) in &sends {
        let r = recvs.get(key).map_or(&[][..], |v| &v[..]);
        if s.len() > r.len() {
            return Err(err(s[r.len()], format!("a send without its receive: rank {} has {} receive(s) from rank {} with comm_tag {} for {} send(s)", key.1, r.len(), key.0, key.2, s.len())));
        }
        pairs.extend(s.iter().copied().zip(r.iter().copied()));
    }
    for (key, r) in &recvs {
        let s = sends.get(key).map_or(0, |v| v.len());
        if r.len() > s {
            return Err(err(
                r[s],
                format!(
                    "a receive without its send: rank {} has {s} send(s) to rank {} with comm_tag {}",
                    key.0, key.1, key.2
                ),
            ));
        }
    }
    for &(s, r) in &pairs {
        if node(s).bytes != node(r).bytes {
            return Err(err(
                r,
                format!(
                    "receives {} B where rank {}'s node {} sends {} B",
                    node(r).bytes,
                    s.rank,
                    node(s).id,
                    node(s).bytes
                ),
            ));
        }
        if node(s).bytes == 0 {
            return Err(err(s, "sends 0 bytes".to_string()));
        }
    }
    // Every transfer, dependencies left for the ranks to fill.
    let mut transfers: Vec<Transfer> = Vec::new();
    let mut made_by: Vec<At> = Vec::new();
    let mut parts = Vec::new();
    let active = plan.active.max(1);
    let used = lanes.iter().max().map_or(0, |&l| l + 1);
    if (u64::from(used) + 1) * u64::from(active) * u64::from(plan.channels) > u64::from(u16::MAX) {
        return Err(Error::scenario(
            "active_chunks",
            format!(
                "{used} sets of overlapping process groups × {active} pieces × {} channels need too many QPs a pair",
                plan.channels
            ),
        ));
    }
    for inst in &mut instances {
        // A collective of one rank (a process group of one, as a converted trace's data-parallel
        // group is without data parallelism) or of no bytes moves nothing: it has no pieces,
        // and each rank's node is done once its dependencies are.
        if inst.members.len() < 2 || inst.bytes == 0 {
            continue;
        }
        let hosts: Vec<NodeId> = inst.members.iter().map(|a| plan.hosts[a.rank as usize]).collect();
        let from = transfers.len();
        let composed = plan.dims.as_ref().filter(|d| d.composes(inst.kind));
        let algorithm = match composed {
            // Recorded as its first phase's.
            Some(d) => d.phases(inst.kind, inst.bytes).first().and_then(|p| d.algorithm(inst.kind, p).ok()),
            None => None,
        }
        .unwrap_or_else(|| plan.algorithm(inst.kind));
        for j in 0..plan.splits {
            let size = share(inst.bytes, u64::from(plan.splits), u64::from(j));
            let why = |e: String| {
                let (kind, ranks) = (inst.kind.name(), hosts.len());
                err(inst.members[0], format!("{kind} over {ranks} ranks in {} piece(s): {e}", plan.splits))
            };
            if let Some(d) = composed {
                let name = &node(inst.members[0]).name;
                let ts = dims::piece(d, inst.kind, size, &hosts, name, plan.channels, plan.chunk).map_err(why)?;
                let base = transfers.len();
                inst.pieces.push((base..base + ts.len(), ts.iter().map(|t| t.deps.is_empty()).collect()));
                for mut t in ts {
                    t.deps.iter_mut().for_each(|d| d.on += base as u32);
                    t.lane += (inst.group * active as u16 + (j % active) as u16) * plan.channels;
                    if !t.deps.is_empty() {
                        t.delay = plan.endpoint_delay;
                    }
                    made_by.push(inst.members[hosts.iter().position(|&h| h == t.src).expect("a member")]);
                    transfers.push(t);
                }
                continue;
            }
            let c = Collective {
                name: node(inst.members[0]).name.clone(),
                kind: inst.kind,
                algorithm,
                ranks: hosts.clone(),
                size,
                channels: plan.channels,
                chunk: plan.chunk,
                start: Time::ZERO,
                repeat: 1,
                transport: Default::default(), // the schedule alone is used
            };
            let s = c.schedule().map_err(|e| why(e.to_string()))?;
            let base = transfers.len();
            let mut roots = Vec::new();
            for t in s.graph.transfers() {
                let mut t = t.clone();
                roots.push(t.deps.is_empty());
                t.deps.iter_mut().for_each(|d| d.on += base as u32);
                // Each group's pieces in flight on QPs of their own, as NCCL's communicators.
                t.lane += (inst.group * active as u16 + (j % active) as u16) * plan.channels;
                if !t.deps.is_empty() {
                    t.delay = plan.endpoint_delay;
                }
                let rank = inst.members[hosts.iter().position(|&h| h == t.src).expect("a member")];
                made_by.push(rank);
                transfers.push(t);
            }
            inst.pieces.push((base..transfers.len(), roots));
        }
        parts.push(RecordedPart {
            name: node(inst.members[0]).name.clone(),
            index: 0,
            kind: inst.kind,
            algorithm,
            ranks: hosts.clone(),
            group: hosts.len(),
            size: inst.bytes,
            transfers: from..transfers.len(),
        });
    }
    let p2p_lane = used * active as u16 * plan.channels;
    let mut send_of: HashMap<At, u32> = HashMap::new();
    let mut recv_of: HashMap<At, u32> = HashMap::new();
    for &(s, r) in &pairs {
        let i = transfers.len() as u32;
        transfers.push(Transfer {
            src: plan.hosts[s.rank as usize],
            dst: plan.hosts[r.rank as usize],
            bytes: node(s).bytes,
            lane: p2p_lane,
            delay: Time::ZERO,
            deps: Vec::new(),
        });
        made_by.push(s);
        send_of.insert(s, i);
        recv_of.insert(r, i);
    }
    if transfers.is_empty() {
        return Err(Error::input(&traces[0].path, 0, "nodes", "no node of any rank communicates: nothing to run"));
    }
    // Each rank fills in its own sends, its nodes in dependency order.
    let mut inst_of: HashMap<At, usize> = HashMap::new();
    for (k, inst) in instances.iter().enumerate() {
        for &a in &inst.members {
            inst_of.insert(a, k);
        }
    }
    let mut nodes = TraceNodes { rows: Vec::new(), start: plan.start };
    for (r, t) in traces.iter().enumerate() {
        let host = plan.hosts[r];
        let ix = t.index();
        let mut row_of = vec![0u32; t.nodes.len()];
        let mut done: Vec<Option<(Vec<Dep>, Time)>> = vec![None; t.nodes.len()];
        for i in order(t, &ix) {
            let nd = &t.nodes[i];
            let at = At { rank: r as u32, node: i as u32 };
            let (mut deps, mut delay) = (Vec::new(), if nd.deps().next().is_none() { plan.start } else { Time::ZERO });
            for d in nd.deps() {
                let (ds, dl) = done[ix[&d]].as_ref().expect("dependencies first");
                deps.extend_from_slice(ds);
                delay = delay.max(*dl);
            }
            dedup(&mut deps);
            let took = match (plan.roofline, &nd.kind, nd.is_cpu_op) {
                // A CPU operator is replayed, as ASTRA-sim replays it.
                (Some(rf), NodeKind::Compute, None | Some(false)) => {
                    let (Some(ops), Some(bytes)) = nd.roofline else {
                        return Err(err(
                            at,
                            "the system file's roofline model needs a GPU compute node's `num_ops` and `tensor_size`"
                                .to_string(),
                        ));
                    };
                    rf.time(ops, bytes)
                }
                _ => nd.duration,
            };
            let compute = Time((took.0 as f64 * plan.compute_scale).round() as u64);
            let work = match &nd.kind {
                NodeKind::Compute => NodeWork::Compute(compute),
                NodeKind::Skipped => NodeWork::Compute(Time::ZERO),
                NodeKind::Send { .. } => NodeWork::Send(send_of[&at]),
                NodeKind::Recv { .. } => NodeWork::Recv(recv_of[&at]),
                _ => match &instances[inst_of[&at]].pieces[..] {
                    [] => NodeWork::Compute(Time::ZERO),
                    p => NodeWork::Collective(p[0].0.start..p[p.len() - 1].0.end),
                },
            };
            row_of[i] = nodes.rows.len() as u32;
            nodes.rows.push(TraceNode {
                rank: r as u32,
                host,
                id: nd.id,
                name: nd.name.clone(),
                kind: nd.kind.name(),
                bytes: nd.bytes,
                deps: nd.deps().map(|d| row_of[ix[&d]]).collect(),
                work,
            });
            done[i] = Some(match &nd.kind {
                NodeKind::Compute => (deps, delay + compute),
                NodeKind::Skipped => (deps, delay),
                NodeKind::Send { .. } => {
                    let k = send_of[&at];
                    let tr = &mut transfers[k as usize];
                    (tr.deps, tr.delay) = (deps, delay);
                    (vec![Dep { on: k, when: Trigger::Posted }], Time::ZERO)
                }
                NodeKind::Recv { .. } => {
                    deps.push(Dep { on: recv_of[&at], when: Trigger::Received });
                    (deps, delay)
                }
                NodeKind::Collective { .. } if instances[inst_of[&at]].pieces.is_empty() => (deps, delay),
                NodeKind::Collective { .. } => {
                    let inst = &instances[inst_of[&at]];
                    let mut part: Vec<Vec<Dep>> = Vec::new();
                    for (j, (range, roots)) in inst.pieces.iter().enumerate() {
                        let join = join(&transfers[range.clone()], roots, host).map(|k| (range.start + k) as u32);
                        let (before, wait) = if j < active as usize {
                            (deps.clone(), delay)
                        } else {
                            (part[j - active as usize].clone(), Time::ZERO)
                        };
                        let mut mine = Vec::new();
                        for k in range.clone() {
                            let tr = &mut transfers[k];
                            if tr.src == host {
                                if roots[k - range.start] || Some(k as u32) == join {
                                    tr.deps.extend_from_slice(&before);
                                    tr.delay = tr.delay.max(wait);
                                } else if let Some(jn) = join {
                                    tr.deps.push(Dep { on: jn, when: Trigger::Posted });
                                }
                                mine.push(Dep { on: k as u32, when: Trigger::Sent });
                            }
                            if tr.dst == host {
                                mine.push(Dep { on: k as u32, when: Trigger::Received });
                            }
                        }
                        part.push(mine);
                    }
                    (part.concat(), Time::ZERO)
                }
                NodeKind::MemLoad | NodeKind::MemStore => unreachable!("refused above"),
            });
        }
    }
    check_acyclic(&transfers, |k| field(made_by[k]), |k| traces[made_by[k].rank as usize].path.clone())?;
    let graph = TransferGraph::new(transfers)?;
    Ok(ChakraJob { graph, parts, made_by, nodes })
}

/// Each process group's communicator (its QPs' lanes), in name order: the first that no
/// earlier group sharing a rank with it uses. Groups without a rank in common (the
/// tensor-parallel pairs of a workload) share one, as NCCL's communicators of one kind are
/// created alike at every rank; their QPs still differ, as their hosts do.
fn communicators(groups: &BTreeMap<String, Vec<Vec<At>>>, n: usize) -> Vec<u16> {
    let mut taken: Vec<Vec<u16>> = vec![Vec::new(); n];
    groups
        .iter()
        .map(|(pg, list)| {
            let ranks: Vec<usize> =
                if pg.is_empty() { (0..n).collect() } else { list[0].iter().map(|a| a.rank as usize).collect() };
            let lane = (0u16..).find(|l| ranks.iter().all(|&r| !taken[r].contains(l))).expect("a free lane");
            ranks.iter().for_each(|&r| taken[r].push(lane));
            lane
        })
        .collect()
}

/// A rank's join of one piece: its first transfer without dependencies in the schedule, or
/// its first transfer (as `formats::simai::iteration` chooses).
fn join(ts: &[Transfer], roots: &[bool], host: NodeId) -> Option<usize> {
    let mine = || ts.iter().enumerate().filter(|(_, t)| t.src == host).map(|(k, _)| k);
    mine().find(|&k| roots[k]).or_else(|| mine().next())
}

/// The nodes of `t` with every node after its dependencies (file order where free).
fn order(t: &ChakraTrace, ix: &HashMap<u64, usize>) -> Vec<usize> {
    let n = t.nodes.len();
    let mut waiting: Vec<usize> = t.nodes.iter().map(|x| x.deps().count()).collect();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, x) in t.nodes.iter().enumerate() {
        x.deps().for_each(|d| after[ix[&d]].push(i));
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> =
        (0..n).filter(|&i| waiting[i] == 0).map(std::cmp::Reverse).collect();
    let mut out = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        out.push(i);
        for &j in &after[i] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(std::cmp::Reverse(j));
            }
        }
    }
    out // the reader refused cycles, so every node is here
}

fn dedup(deps: &mut Vec<Dep>) {
    let mut seen = HashSet::with_capacity(deps.len());
    deps.retain(|d| seen.insert((d.on, d.when as u8)));
}

/// Ranks that wait on each other (rank 0 receives from 1 before sending to it, and 1 from 0)
/// make a cycle of transfers: refused with the nodes that made them.
fn check_acyclic(
    ts: &[Transfer],
    name: impl Fn(usize) -> String,
    path: impl Fn(usize) -> std::path::PathBuf,
) -> Result<()> {
    let mut waiting: Vec<usize> = ts.iter().map(|t| t.deps.len()).collect();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); ts.len()];
    for (i, t) in ts.iter().enumerate() {
        t.deps.iter().for_each(|d| after[d.on as usize].push(i));
    }
    let mut stack: Vec<usize> = (0..ts.len()).filter(|&i| waiting[i] == 0).collect();
    let mut left = ts.len();
    while let Some(i) = stack.pop() {
        left -= 1;
        for &j in &after[i] {
            waiting[j] -= 1;
            if waiting[j] == 0 {
                stack.push(j);
            }
        }
    }
    if left == 0 {
        return Ok(());
    }
    // Walk back from a transfer still waiting until one repeats: that is a cycle.
    let mut at = (0..ts.len()).find(|&i| waiting[i] > 0).expect("one is left");
    let mut path_seen: Vec<usize> = Vec::new();
    while !path_seen.contains(&at) {
        path_seen.push(at);
        at = ts[at].deps.iter().map(|d| d.on as usize).find(|&d| waiting[d] > 0).expect("a waiting dependency");
    }
    let from = path_seen.iter().position(|&k| k == at).expect("repeated");
    let mut names: Vec<String> = path_seen[from..].iter().rev().map(|&k| name(k)).collect();
    names.dedup();
    Err(Error::input(
        path(at),
        0,
        name(at),
        format!("the ranks wait on each other and would hang: {} (each waits on the next)", names.join(" -> ")),
    ))
}
