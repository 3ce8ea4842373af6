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
    /// Packets and events it sent across the cut so far (counted at the barriers).
    pub crossed: u64,
    /// Its QPs opened and released in the current window (`peak`).
    pub(in crate::sim) qp_log: Vec<super::peak::QpChange>,
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
        Partition {
            me,
            part_of,
            cut_out,
            shared_qps: 0,
            mirrors: HashMap::new(),
            outbox: Vec::new(),
            crossed: 0,
            qp_log: Vec::new(),
        }
    }

    /// True if this partition owns `node`.
    #[inline]
    pub fn owns(&self, node: NodeId) -> bool {
        self.part_of[node.idx()] == self.me
    }
}

/// Up to `parts` partitions of about equal host counts ([`weighted_map`] with every node
/// weighing the same): the cut before partitions were balanced by work ([`super::work_map`],
/// what runs use), kept to compare with (`examples/partition_balance.rs`) and for tests that
/// want pods whole.
pub fn auto_map(topo: &Topology, parts: u32) -> (Vec<u16>, u32) {
    weighted_map(topo, parts, &vec![1.0; topo.nodes.len()])
}

/// Up to `parts` partitions of about equal expected work, `weight[v]` being node `v`'s: each
/// host with the switch it hangs from (its edge switch), edge switches in id order cut into
/// contiguous blocks of about equal weight of their hosts (so a fat tree's pod or a leaf with
/// its hosts stays whole but where a block's end falls), then every other switch, nearest
/// first: with the one partition its placed neighbours are in (its work follows theirs, and
/// its own weight is not counted), or, where they are in several (a core switch, an
/// aggregation switch of a pod that the cut splits), with the least loaded of those, loaded
/// with its weight. Returns the map (partitions numbered from 0, all used) and how many
/// partitions it has: at most the number of edge switches.
pub fn weighted_map(topo: &Topology, parts: u32, weight: &[f64]) -> (Vec<u16>, u32) {
    const NONE: u16 = u16::MAX;
    let n = topo.nodes.len();
    let mut part_of = vec![NONE; n];
    let neighbors = |v: usize| topo.nodes[v].ports.iter().map(|p| topo.ports[p.idx()].peer_node.idx());
    let edge_of = |h: usize| neighbors(h).find(|&s| !topo.is_host(NodeId(s as u32)));
    let mut weight_at = vec![0f64; n];
    let mut has_hosts = vec![false; n];
    for h in (0..n).filter(|&v| topo.is_host(NodeId(v as u32))) {
        if let Some(s) = edge_of(h) {
            (weight_at[s], has_hosts[s]) = (weight_at[s] + weight[h], true);
        }
    }
    let edges: Vec<usize> = (0..n).filter(|&s| has_hosts[s]).collect();
    let parts = parts.clamp(1, edges.len().max(1) as u32).min(u16::MAX as u32 - 1);
    let blocks = contiguous_blocks(&edges.iter().map(|&s| weight_at[s]).collect::<Vec<_>>(), parts);
    for (&s, &b) in edges.iter().zip(&blocks) {
        part_of[s] = b;
    }
    for h in (0..n).filter(|&v| topo.is_host(NodeId(v as u32))) {
        part_of[h] = edge_of(h).map_or(0, |s| part_of[s]);
    }
    let mut load = vec![0f64; parts as usize];
    for v in (0..n).filter(|&v| topo.is_host(NodeId(v as u32))) {
        load[part_of[v] as usize] += weight[v];
    }
    place_switches(topo, &mut part_of, &mut load, weight);
    for p in part_of.iter_mut().filter(|p| **p == NONE) {
        *p = 0; // isolated nodes
    }
    (part_of, parts)
}

/// Breadth first from what `part_of` has placed (`u16::MAX`: not yet): a switch joins the
/// partition its placed neighbours are in, the least loaded of them where they are in
/// several, which then carries its weight. Nodes no placed node leads to stay unplaced.
fn place_switches(topo: &Topology, part_of: &mut [u16], load: &mut [f64], weight: &[f64]) {
    let (n, parts) = (topo.nodes.len(), load.len());
    let neighbors = |v: usize| topo.nodes[v].ports.iter().map(|p| topo.ports[p.idx()].peer_node.idx());
    loop {
        let mut placed_any = false;
        for v in 0..n {
            if part_of[v] != u16::MAX {
                continue;
            }
            let mut voted = vec![false; parts];
            for u in neighbors(v).filter(|&u| part_of[u] != u16::MAX) {
                voted[part_of[u] as usize] = true;
            }
            let least = |a: &usize, b: &usize| load[*a].total_cmp(&load[*b]).then(a.cmp(b));
            let shared = voted.iter().filter(|&&x| x).count() > 1;
            if let Some(p) = (0..parts).filter(|&p| voted[p]).min_by(least) {
                part_of[v] = p as u16;
                load[p] += if shared { weight[v] } else { 0.0 };
                placed_any = true;
            }
        }
        if !placed_any {
            break;
        }
    }
}

/// `weights` in order cut into `parts` contiguous blocks of about equal weight: each item goes
/// to the block its weight's midpoint falls in, never skipping a block, and leaving at least
/// one item for each block after it (so every block is used when there are enough items).
fn contiguous_blocks(weights: &[f64], parts: u32) -> Vec<u16> {
    let total: f64 = weights.iter().sum();
    let (mut before, mut last) = (0f64, 0u32);
    let mut blocks = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let wanted = if total > 0.0 { ((before + w / 2.0) * parts as f64 / total) as u32 } else { 0 };
        let must = (parts as usize).saturating_sub(weights.len() - i) as u32;
        last = if i == 0 { 0 } else { wanted.clamp(last, last + 1).max(must).min(parts - 1) };
        blocks.push(last as u16);
        before += w;
    }
    blocks
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
