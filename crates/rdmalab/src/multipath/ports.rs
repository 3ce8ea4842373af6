//! Source ports for the QPs of a connection, and the paths they name.
//!
//! The switches' ECMP hash is known (`topology::ecmp`, the reference's MurmurHash3 seeded
//! by switch id), so a host can predict which path a source port takes and pick ports
//! whose paths are pairwise different: `sport_policy = "distinct_paths"`. Runs once per
//! connection, at setup.

use std::collections::HashMap;

use crate::ids::{NodeId, PortId};
use crate::topology::routing::Routes;
use crate::topology::Topology;

/// First port tried, as the NIC's own counter starts.
const FIRST_PORT: u16 = 10000;

/// Number of distinct shortest paths from `src` to `dst` that ECMP can produce (a host
/// always leaves by its first next hop, as the simulator's hosts do).
pub fn count_equal_cost_paths(topo: &Topology, routes: &Routes, src: NodeId, dst: NodeId) -> u64 {
    fn count(topo: &Topology, routes: &Routes, n: NodeId, dst: NodeId, memo: &mut HashMap<NodeId, u64>) -> u64 {
        if n == dst {
            return 1;
        }
        if let Some(&c) = memo.get(&n) {
            return c;
        }
        let hops = routes.next_hops(n, dst);
        let hops = if topo.is_host(n) { &hops[..hops.len().min(1)] } else { hops };
        let c = hops.iter().map(|p| count(topo, routes, topo.ports[p.idx()].peer_node, dst, memo)).sum();
        memo.insert(n, c);
        c
    }
    count(topo, routes, src, dst, &mut HashMap::new())
}

/// Egress ports of the path a packet of this 5-tuple takes.
fn ecmp_ports(topo: &Topology, routes: &Routes, tuple: (u32, u32, u16, u16), src: NodeId, dst: NodeId) -> Vec<PortId> {
    let (sip, dip, sport, dport) = tuple;
    routes.ecmp_path(topo, sip, dip, sport, dport, src, dst)
}

/// Nodes of the path a packet of this 5-tuple takes from `src` to `dst`, `src` first.
pub fn path_nodes(
    topo: &Topology,
    routes: &Routes,
    tuple: (u32, u32, u16, u16),
    src: NodeId,
    dst: NodeId,
) -> Vec<NodeId> {
    let ports = ecmp_ports(topo, routes, tuple, src, dst);
    std::iter::once(src).chain(ports.iter().map(|p| topo.ports[p.idx()].peer_node)).collect()
}

/// `qps` source ports, the lowest from 10000 up, whose ECMP paths from `src` to `dst` are
/// pairwise different. The error says how many equal-cost paths there are.
#[allow(clippy::too_many_arguments)]
pub fn distinct_path_ports(
    topo: &Topology,
    routes: &Routes,
    src: NodeId,
    dst: NodeId,
    sip: u32,
    dip: u32,
    dport: u16,
    qps: u32,
) -> std::result::Result<Vec<u16>, String> {
    let paths = count_equal_cost_paths(topo, routes, src, dst);
    if (qps as u64) > paths {
        return Err(format!(
            "distinct_paths needs {qps} different paths but host {src} has {paths} equal-cost path(s) to host {dst}"
        ));
    }
    let mut chosen: Vec<(u16, Vec<PortId>)> = Vec::with_capacity(qps as usize);
    for sport in FIRST_PORT..=u16::MAX {
        let path = ecmp_ports(topo, routes, (sip, dip, sport, dport), src, dst);
        if chosen.iter().all(|(_, p)| *p != path) {
            chosen.push((sport, path));
            if chosen.len() == qps as usize {
                return Ok(chosen.into_iter().map(|(s, _)| s).collect());
            }
        }
    }
    Err(format!(
        "distinct_paths found only {} different paths over source ports {FIRST_PORT}..65535 (of {paths} equal-cost paths)",
        chosen.len()
    ))
}
