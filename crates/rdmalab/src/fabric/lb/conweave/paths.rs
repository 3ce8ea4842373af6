//! ConWeave's paths across tiers: a leaf-spine or a fat tree, any layered fabric
//! whose switches sit in tiers above the leaves (the ToRs, tier 0), each link joining two
//! adjacent tiers. A path between two leaves is the choice made at each upward hop; the
//! source ToR names it by one number, its *tag* (4 bits in the header):
//!
//! `tag = uplink + uplinks(source leaf) × upper`, `upper = c1 + n1 × (c2 + n2 × ...)`
//!
//! where `uplink` is the source leaf's uplink in port order and `c_t` the choice at the tier-t
//! switch among its `n_t` next hops upwards. The switches above the leaves follow it: at a
//! tier-t switch the choice is `upper / (n1 × ... × n_(t-1)) mod` its next hops
//! (`ConWeave::follow`). The ns-3 artifact does the same with one byte per hop, the egress
//! port of each hop (`conweave-routing.cc:195-202`, `GetOutPortFromPath`; a switch that is no
//! ToR forwards by the hop's byte, `conweave-routing.cc:1031-1056`; the path set per
//! destination ToR built in `scratch/network-load-balance.cc:1544-1650`). On a leaf-spine
//! `upper` is always 0 and the tag is the uplink.
//!
//! The base RTT between two leaves is twice the longest propagation over their shortest
//! paths (up to the lowest tier they share, then down): the artifact's
//! `m_rxToRId2BaseRTT` is 4, 6 or 8 one-hop delays by the path's length
//! (`network-load-balance.cc:1572`, `:1604`, `:1640`; `one_hop_delay` the 1 µs link delay, `:80`).

use crate::ids::{NodeId, PortId};
use crate::topology::Topology;
use crate::units::Time;

/// Most paths between two leaves: tags 0..=15 in a 4-bit field.
pub const MAX_PATHS: usize = 16;
const NO_LEAF: u16 = u16::MAX;
const NO_TIER: u8 = u8::MAX;

/// The structure ConWeave reads from the topology.
pub(super) struct Layout {
    /// Leaf index of each leaf switch and of each host's leaf; `NO_LEAF` for other switches.
    pub leaf_of: Vec<u16>,
    pub is_leaf: Vec<bool>,
    /// Each leaf's uplinks in port order.
    pub uplinks: Vec<Vec<PortId>>,
    /// Per node: the divisor of a tag's upper part at this switch (tiers above the leaves),
    /// 0 for leaves, hosts and switches off the layers.
    pub stride: Vec<u8>,
    /// Per (leaf, leaf): the number of upper choices between them (1 within a leaf-spine or
    /// a pod).
    pub upper: Vec<u8>,
    /// Per (leaf, leaf): the base RTT between them.
    pub base_rtt: Vec<Time>,
}

/// The layout of `topo`; an error (a sentence) when it is not a layered fabric or has more
/// paths between two leaves than the tag names.
pub(super) fn layout(topo: &Topology) -> Result<Layout, String> {
    let n = topo.nodes.len();
    let peer = |p: PortId| topo.ports[p.idx()].peer_node;
    let peer_is_host = |p: &PortId| topo.is_host(peer(*p));
    let mut leaf_of = vec![NO_LEAF; n];
    let mut is_leaf = vec![false; n];
    let mut leaves = Vec::new();
    for s in topo.switches() {
        if topo.nodes[s.idx()].ports.iter().any(peer_is_host) {
            is_leaf[s.idx()] = true;
            leaf_of[s.idx()] = leaves.len() as u16;
            leaves.push(s);
        }
    }
    // Tiers: the leaves are 0, every other switch one more than its nearest lower neighbour.
    let mut tier = vec![NO_TIER; n];
    let mut line: Vec<NodeId> = leaves.clone();
    for &l in &leaves {
        tier[l.idx()] = 0;
    }
    let mut i = 0;
    while i < line.len() {
        let s = line[i];
        i += 1;
        for &p in topo.nodes[s.idx()].ports.iter().filter(|p| !peer_is_host(p)) {
            let o = peer(p);
            if tier[o.idx()] == NO_TIER {
                tier[o.idx()] = tier[s.idx()].saturating_add(1);
                line.push(o);
            }
        }
    }
    let up = |s: NodeId| -> Vec<PortId> {
        let t = tier[s.idx()];
        topo.nodes[s.idx()]
            .ports
            .iter()
            .copied()
            .filter(|&p| !peer_is_host(&p) && tier[peer(p).idx()] == t + 1)
            .collect()
    };
    for &s in &line {
        for &p in topo.nodes[s.idx()].ports.iter().filter(|p| !peer_is_host(p)) {
            if tier[peer(p).idx()] == tier[s.idx()] {
                return Err(format!(
                    "ConWeave names a path by its upward hops, on a layered fabric (leaf-spine, fat tree); switch {} links to switch {} of the same tier",
                    s.0,
                    peer(p).0
                ));
            }
        }
    }
    for h in topo.hosts() {
        let sw: Vec<NodeId> = topo.nodes[h.idx()].ports.iter().map(|&p| peer(p)).collect();
        if sw.is_empty() || sw.iter().any(|&x| x != sw[0] || !is_leaf[x.idx()]) {
            return Err(format!("ConWeave needs every host on one leaf; host {} is not", h.0));
        }
        leaf_of[h.idx()] = leaf_of[sw[0].idx()];
    }
    // Choices per tier above the leaves: the same at every switch of a tier.
    let top = line.iter().map(|s| tier[s.idx()]).max().unwrap_or(0) as usize;
    let mut choices = vec![0usize; top + 1];
    for &s in line.iter().filter(|s| tier[s.idx()] > 0) {
        let (t, k) = (tier[s.idx()] as usize, up(s).len());
        if choices[t] != 0 && choices[t] != k && k != 0 {
            return Err(format!(
                "ConWeave names a path by the choice at each upward hop; switch {} has {k} links up where others of its tier have {}",
                s.0, choices[t]
            ));
        }
        choices[t] = choices[t].max(k);
    }
    let mut stride = vec![0u8; n];
    for &s in line.iter().filter(|s| tier[s.idx()] > 0) {
        let below: usize = choices[1..tier[s.idx()] as usize].iter().map(|&c| c.max(1)).product();
        stride[s.idx()] = below.min(MAX_PATHS) as u8;
    }
    let uplinks: Vec<Vec<PortId>> = leaves.iter().map(|&l| up(l)).collect();
    // Per leaf: the longest upward propagation to each switch it reaches going up, and
    // those switches by tier.
    let delay = |p: PortId| topo.links[topo.ports[p.idx()].link.idx()].delay;
    let mut reach: Vec<Vec<Option<Time>>> = Vec::with_capacity(leaves.len());
    let mut above: Vec<Vec<Vec<NodeId>>> = Vec::with_capacity(leaves.len());
    for &l in &leaves {
        let mut d = vec![None; n];
        d[l.idx()] = Some(Time::ZERO);
        let mut levels = vec![vec![l]];
        loop {
            let level = levels.last().cloned().unwrap_or_default();
            if level.is_empty() {
                break;
            }
            let mut next = Vec::new();
            for &s in &level {
                let here = d[s.idx()].unwrap_or(Time::ZERO);
                for p in up(s) {
                    let (o, t) = (peer(p), here + delay(p));
                    if d[o.idx()].is_none() {
                        next.push(o);
                    }
                    d[o.idx()] = Some(d[o.idx()].map_or(t, |x: Time| x.max(t)));
                }
            }
            levels.push(next);
        }
        reach.push(d);
        above.push(levels);
    }
    let m = leaves.len();
    let mut upper = vec![1u8; m * m];
    let mut base_rtt = vec![Time::ZERO; m * m];
    for a in 0..m {
        for b in 0..m {
            if a == b {
                continue;
            }
            // The lowest tier where the two meet; the longest way through it.
            for t in 1..=top {
                let Some(level) = above[a].get(t) else { break };
                let meet = level.iter().filter_map(|s| Some(reach[a][s.idx()]? + reach[b][s.idx()]?)).max();
                if let Some(one_way) = meet {
                    let u: usize = choices[1..t].iter().map(|&c| c.max(1)).product();
                    let paths = uplinks[a].len() * u;
                    if paths > MAX_PATHS {
                        return Err(format!(
                            "leaf switch {} has {paths} paths to leaf switch {}; ConWeave's 4-bit path tag names at most {MAX_PATHS}",
                            leaves[a].0, leaves[b].0
                        ));
                    }
                    upper[a * m + b] = u as u8;
                    base_rtt[a * m + b] = Time::from_ps(2 * one_way.ps());
                    break;
                }
            }
        }
    }
    Ok(Layout { leaf_of, is_leaf, uplinks, stride, upper, base_rtt })
}
