//! Cutting the fabric into partitions: the automatic map, and the lookahead it allows.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId, QpId};
use crate::topology::Topology;
use crate::units::Time;

/// What one partition of a parallel run owns.
#[derive(Debug)]
pub struct Partition {
    /// This partition's number.
    pub me: u16,
    /// Partition of every node.
    pub part_of: Vec<u16>,
    /// Ports this partition owns whose peer another one owns: (port, the peer's partition).
    pub cut_out: Vec<(PortId, u16)>,
    /// QP slots below this were opened at setup, which every partition runs alike, so a slot
    /// names the same QP in each. A slot opened while running is the sender partition's own.
    pub shared_qps: u32,
    /// The receiver's slot of each QP opened while running by a host of another partition,
    /// keyed by (sending host, the sender's slot): the receiver half of the connection.
    pub mirrors: HashMap<(NodeId, QpId), QpId>,
    /// Events pushed for nodes of other partitions since the last barrier: (their
    /// partition, time, tie key, event) (`Simulation::push_to_node`).
    pub(in crate::sim) outbox: Vec<(u16, Time, u64, super::super::Event)>,
}

impl Partition {
    /// Partition `me` of the map `part_of`.
    pub fn new(topo: &Topology, me: u16, part_of: Vec<u16>) -> Partition {
        let cut_out = topo
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| part_of[p.node.idx()] == me && part_of[p.peer_node.idx()] != me)
            .map(|(i, p)| (PortId(i as u32), part_of[p.peer_node.idx()]))
            .collect();
        Partition { me, part_of, cut_out, shared_qps: 0, mirrors: HashMap::new(), outbox: Vec::new() }
    }

    /// True if this partition owns `node`.
    #[inline]
    pub fn owns(&self, node: NodeId) -> bool {
        self.part_of[node.idx()] == self.me
    }
}

/// Up to `parts` partitions: each host with the switch it hangs from (its edge switch),
/// edge switches in id order cut into blocks of about equal host counts (so a fat tree's
/// pod or a leaf with its hosts stays whole), then every other switch, nearest first, with
/// the partition most of its links lead to (ties: the one with fewest nodes). Returns the
/// map (partitions numbered from 0, all used) and how many partitions it has: at most the
/// number of edge switches.
pub fn auto_map(topo: &Topology, parts: u32) -> (Vec<u16>, u32) {
    const NONE: u16 = u16::MAX;
    let n = topo.nodes.len();
    let mut part_of = vec![NONE; n];
    let neighbors = |v: usize| topo.nodes[v].ports.iter().map(|p| topo.ports[p.idx()].peer_node.idx());
    let edge_of = |h: usize| neighbors(h).find(|&s| !topo.is_host(NodeId(s as u32)));
    let mut hosts_at = vec![0u64; n];
    for h in (0..n).filter(|&v| topo.is_host(NodeId(v as u32))) {
        if let Some(s) = edge_of(h) {
            hosts_at[s] += 1;
        }
    }
    let edges: Vec<usize> = (0..n).filter(|&s| hosts_at[s] > 0).collect();
    let parts = parts.clamp(1, edges.len().max(1) as u32).min(u16::MAX as u32 - 1);
    let total: u64 = hosts_at.iter().sum();
    let mut before = 0u64;
    for &s in &edges {
        part_of[s] = ((before * parts as u64) / total.max(1)) as u16;
        before += hosts_at[s];
    }
    for h in (0..n).filter(|&v| topo.is_host(NodeId(v as u32))) {
        part_of[h] = edge_of(h).map_or(0, |s| part_of[s]);
    }
    let mut load = vec![0u64; parts as usize];
    for &p in part_of.iter().filter(|&&p| p != NONE) {
        load[p as usize] += 1;
    }
    // Breadth first from what is placed: a switch joins the partition most of its placed
    // neighbours are in.
    loop {
        let mut placed_any = false;
        for v in 0..n {
            if part_of[v] != NONE {
                continue;
            }
            let mut votes = vec![0u32; parts as usize];
            for u in neighbors(v) {
                if part_of[u] != NONE {
                    votes[part_of[u] as usize] += 1;
                }
            }
            let best =
                (0..parts as usize).filter(|&p| votes[p] > 0).max_by_key(|&p| (votes[p], std::cmp::Reverse(load[p])));
            if let Some(p) = best {
                part_of[v] = p as u16;
                load[p] += 1;
                placed_any = true;
            }
        }
        if !placed_any {
            break;
        }
    }
    for p in part_of.iter_mut().filter(|p| **p == NONE) {
        *p = 0; // isolated nodes
    }
    (part_of, parts)
}

/// The smallest propagation delay of a link between two partitions (`Time::MAX` when no
/// link crosses): how far every partition may run ahead of the others.
pub fn lookahead(topo: &Topology, part_of: &[u16]) -> Result<Time> {
    let mut min = Time::MAX;
    for l in &topo.links {
        if part_of[l.a.idx()] != part_of[l.b.idx()] {
            min = min.min(l.delay);
        }
    }
    if min == Time::ZERO {
        return Err(Error::scenario(
            "threads",
            "a link of zero delay joins two partitions: the parallel engine needs a positive delay on every cut",
        ));
    }
    Ok(min)
}
