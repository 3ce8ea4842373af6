//! Shortest-path routing tables with every equal-cost next hop (ECMP), built the way the
//! reference simulator builds them.
//!
//! For each destination host a breadth-first search runs from that host over the graph,
//! never passing through another host. When the search takes node `now` (at hop distance
//! `d`) off its queue, every neighbour at distance `d+1` gets `now` appended to its list of
//! next hops. The order of a list is therefore the order in which the search dequeued the
//! nodes one hop closer, and that order decides which path `hash % len` picks. The order in
//! which a node's neighbours are visited is the only free choice: see [`NeighborOrder`].
//!
//! The tables are flat: one `Vec<PortId>` of next-hop lists and one `(start, len)` span per
//! (node, destination host), so a lookup on the packet path is two indexings, no hashing and
//! no allocation. Identical lists of consecutive destinations share storage, so the port
//! vector stays small; the span table has `nodes x hosts` entries of 8 B: 1 MiB for the
//! reference's 376-node fat tree, 620 MiB for a k=32 fat tree (8,192 hosts, built in about
//! 3 s), the largest size this layout is meant for.

use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::topology::Topology;

/// Order in which the route search visits a node's neighbours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NeighborOrder {
    /// Plain ascending node id; parallel links to one neighbour are all next hops, in port
    /// order. The native default.
    #[default]
    Ascending,
    /// The reference binary's order (MODEL.md §6.1): hosts first in ascending id, then
    /// switches in descending id (it iterates neighbours by object address, and its switch
    /// objects are mapped at decreasing addresses). Of parallel links to one neighbour only
    /// the last one in link order is used, as in the reference's neighbour map. Used by the
    /// `rdmalab hpcc` drop-in.
    Ns3,
}

/// How a switch picks one of several equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathSelection {
    /// `ecmp_hash(sip, dip, sport, dport, seed = switch id) % n` (the reference's ECMP).
    #[default]
    Ecmp,
    /// Seed 003's SDN rule (§4.2): hop `alias % n`, where `alias` is the index of the
    /// connection's virtual-NIC address among its host's addresses (`ips_per_host`
    /// numbers them `x.y.1`, `x.y.2`, ...: index = last byte - 1). Of the two addresses of
    /// a packet the larger index is taken: the source's going out and the destination's on
    /// the way back (ACKs, READ responses), so both directions of a path use the same link.
    SourceIp,
}

impl PathSelection {
    /// Index (before `% n`) of the next hop for a packet with this 5-tuple at `node`.
    #[inline]
    pub fn key(self, sip: u32, dip: u32, sport: u16, dport: u16, node: NodeId) -> usize {
        match self {
            PathSelection::Ecmp => ecmp_hash(sip, dip, sport, dport, node.0) as usize,
            PathSelection::SourceIp => alias_index(sip).max(alias_index(dip)),
        }
    }
}

/// Index of an address among its host's aliases (`x.y.1` is 0, `x.y.2` is 1, ...).
#[inline]
pub fn alias_index(ip: u32) -> usize {
    ((ip & 0xFF) as usize).saturating_sub(1)
}

/// Largest span table accepted (entries = nodes x hosts), 2 GiB of spans.
const MAX_SPANS: usize = 1 << 28;
const UNSEEN: u32 = u32::MAX;
/// Destinations whose spans are gathered before being copied into the node-major table, so
/// that the copies land in runs of consecutive entries rather than one cache miss each.
const BLOCK: usize = 64;
const NOT_A_HOST: u32 = u32::MAX;

/// Routing tables: for every node and destination host, the egress ports of all
/// shortest-path next hops, in the order the route search found them.
#[derive(Clone, Debug)]
pub struct Routes {
    order: NeighborOrder,
    /// How switches choose among equal-cost next hops.
    selection: PathSelection,
    /// Host rank of each node (`NOT_A_HOST` for switches).
    rank: Vec<u32>,
    /// Host id of each rank.
    hosts: Vec<NodeId>,
    /// `(start, len)` into `hops`, indexed by `node * hosts.len() + rank(dst)`.
    spans: Vec<(u32, u32)>,
    /// Next-hop lists (egress ports), concatenated; spans may share a list.
    hops: Vec<PortId>,
}

/// Neighbour lists in visiting order, flat: `(neighbour, the neighbour's port back to us)`.
struct Adjacency {
    start: Vec<u32>,
    edges: Vec<(NodeId, PortId)>,
}

impl Adjacency {
    /// Neighbours over the links for which `up(link index)` holds.
    fn new(topo: &Topology, order: NeighborOrder, up: &dyn Fn(usize) -> bool) -> Adjacency {
        let mut start = Vec::with_capacity(topo.len() + 1);
        let mut edges = Vec::with_capacity(topo.ports.len());
        let mut list = Vec::new();
        for node in &topo.nodes {
            start.push(edges.len() as u32);
            list.clear();
            list.extend(node.ports.iter().filter(|&&p| up(topo.ports[p.idx()].link.idx())).map(|&p| {
                let port = &topo.ports[p.idx()];
                (port.peer_node, port.peer)
            }));
            match order {
                NeighborOrder::Ascending => list.sort_by_key(|&(n, p)| (n, p)),
                NeighborOrder::Ns3 => {
                    // Keep the last link to each neighbour, then order hosts up, switches down.
                    list.sort_by_key(|&(n, p)| (n, std::cmp::Reverse(p)));
                    list.dedup_by_key(|&mut (n, _)| n);
                    list.sort_by_key(|&(n, _)| if topo.is_host(n) { (0, n.0) } else { (1, u32::MAX - n.0) });
                }
            }
            edges.extend_from_slice(&list);
        }
        start.push(edges.len() as u32);
        Adjacency { start, edges }
    }

    fn of(&self, n: NodeId) -> &[(NodeId, PortId)] {
        &self.edges[self.start[n.idx()] as usize..self.start[n.idx() + 1] as usize]
    }
}

/// Reusable buffers of one route search.
struct Search {
    dist: Vec<u32>,
    queue: Vec<NodeId>,
    /// `(node, egress port)` next hops in discovery order.
    found: Vec<(NodeId, PortId)>,
    /// Per-node counters of the counting sort (all zeros between uses).
    cursor: Vec<u32>,
    /// `found`'s ports grouped by node.
    sorted: Vec<PortId>,
}

impl Search {
    /// Breadth-first search from `dst`; fills `dist` and `found`.
    fn run(&mut self, topo: &Topology, adj: &Adjacency, dst: NodeId) {
        self.dist.fill(UNSEEN);
        self.queue.clear();
        self.found.clear();
        self.dist[dst.idx()] = 0;
        self.queue.push(dst);
        let mut i = 0;
        while let Some(&now) = self.queue.get(i) {
            i += 1;
            let d = self.dist[now.idx()];
            for &(nb, back) in adj.of(now) {
                if self.dist[nb.idx()] == UNSEEN {
                    self.dist[nb.idx()] = d + 1;
                    // Paths never pass through a host: only switches are expanded.
                    if !topo.is_host(nb) {
                        self.queue.push(nb);
                    }
                }
                if self.dist[nb.idx()] == d + 1 {
                    self.found.push((nb, back));
                }
            }
        }
    }
}

fn validate_hosts(topo: &Topology, hosts: &[NodeId]) -> Result<()> {
    if hosts.is_empty() {
        return Err(Error::Topology("no hosts: routing needs at least one host".into()));
    }
    if let Some(h) = hosts.iter().find(|h| topo.nodes[h.idx()].ports.is_empty()) {
        return Err(Error::Topology(format!("host {h} has no link")));
    }
    match topo.len().checked_mul(hosts.len()) {
        Some(n) if n <= MAX_SPANS => Ok(()),
        _ => Err(Error::Topology(format!(
            "{} nodes x {} hosts is too large for the flat routing table (limit {MAX_SPANS} entries)",
            topo.len(),
            hosts.len()
        ))),
    }
}

impl Routes {
    /// Builds the tables of `topo`, visiting neighbours in `order`.
    ///
    /// Errors when there are no hosts, when a host has no link, when some host cannot reach
    /// some other host without passing through a third host (the first such pair is
    /// named), or when the table would be unreasonably large.
    pub fn compute(topo: &Topology, order: NeighborOrder) -> Result<Routes> {
        Routes::build(topo, order, &|_| true, true)
    }

    /// The tables over the links for which `up(link index)` holds (after link failures).
    /// A host that cannot reach another gets no next hop towards it (an empty list) instead
    /// of an error: a partitioned destination is the caller's to report.
    pub fn compute_without_down_links(
        topo: &Topology,
        order: NeighborOrder,
        up: &dyn Fn(usize) -> bool,
    ) -> Result<Routes> {
        Routes::build(topo, order, up, false)
    }

    fn build(topo: &Topology, order: NeighborOrder, up: &dyn Fn(usize) -> bool, strict: bool) -> Result<Routes> {
        let hosts: Vec<NodeId> = topo.hosts().collect();
        validate_hosts(topo, &hosts)?;
        let mut rank = vec![NOT_A_HOST; topo.len()];
        for (r, h) in hosts.iter().enumerate() {
            rank[h.idx()] = r as u32;
        }
        let adj = Adjacency::new(topo, order, up);
        let (v, n_hosts) = (topo.len(), hosts.len());
        let mut routes = Routes {
            order,
            selection: PathSelection::Ecmp,
            rank,
            hosts,
            spans: vec![(0, 0); v * n_hosts],
            hops: Vec::new(),
        };
        let mut search = Search {
            dist: vec![UNSEEN; v],
            queue: Vec::new(),
            found: Vec::new(),
            cursor: vec![0; v],
            sorted: Vec::new(),
        };
        let mut last = vec![(0u32, 0u32); v];
        let mut block = vec![(0u32, 0u32); BLOCK * v];
        for r0 in (0..n_hosts).step_by(BLOCK) {
            let b = BLOCK.min(n_hosts - r0);
            block.fill((0, 0));
            for (j, column) in block.chunks_exact_mut(v).take(b).enumerate() {
                let dst = routes.hosts[r0 + j];
                search.run(topo, &adj, dst);
                let unreached = routes.hosts.iter().find(|h| search.dist[h.idx()] == UNSEEN);
                if let (true, Some(&src)) = (strict, unreached) {
                    return Err(Error::Topology(format!(
                        "host {src} cannot reach host {dst}: no path through switches (disconnected topology)"
                    )));
                }
                routes.store(&mut search, column, &mut last)?;
            }
            routes.flush(r0, b, &block);
        }
        Ok(routes)
    }

    /// Stores one destination's next hops and writes each node's span into `column`.
    ///
    /// The hops are grouped by node with a counting sort, which keeps the discovery order
    /// within a node. A node whose list equals its list for the previous destination (its
    /// span in `last`) reuses that span: consecutive hosts mostly share their routes (a
    /// host's own NIC port always, a switch's uplinks usually), which keeps `hops` small.
    fn store(&mut self, search: &mut Search, column: &mut [(u32, u32)], last: &mut [(u32, u32)]) -> Result<()> {
        let Search { found, cursor, sorted, .. } = search;
        for &(n, _) in found.iter() {
            cursor[n.idx()] += 1;
        }
        let mut offset = 0;
        for c in cursor.iter_mut() {
            (offset, *c) = (offset + *c, offset);
        }
        sorted.resize(found.len(), PortId(0));
        for &(n, p) in found.iter() {
            sorted[cursor[n.idx()] as usize] = p;
            cursor[n.idx()] += 1;
        }
        // cursor[n] is now the end of node n's group; its start is the previous end.
        let mut start = 0;
        for (node, end) in cursor.iter_mut().enumerate() {
            let group = &sorted[start as usize..*end as usize];
            start = std::mem::take(end);
            if group.is_empty() {
                continue;
            }
            let (ls, ll) = last[node];
            if self.hops[ls as usize..(ls + ll) as usize] != *group {
                let at = u32::try_from(self.hops.len() + group.len())
                    .map_err(|_| Error::Topology("more than 2^32 next-hop entries".into()))?;
                last[node] = (at - group.len() as u32, group.len() as u32);
                self.hops.extend_from_slice(group);
            }
            column[node] = last[node];
        }
        Ok(())
    }

    /// Copies the spans of destinations `r0..r0+b` (one column of `block` each) into the
    /// node-major table, a run of `b` consecutive entries per node.
    fn flush(&mut self, r0: usize, b: usize, block: &[(u32, u32)]) {
        let (h, v) = (self.hosts.len(), self.rank.len());
        for node in 0..v {
            let row = &mut self.spans[node * h + r0..node * h + r0 + b];
            for (j, e) in row.iter_mut().enumerate() {
                *e = block[j * v + node];
            }
        }
    }

    /// The neighbour order the tables were built with.
    pub fn order(&self) -> NeighborOrder {
        self.order
    }

    /// Number of hosts (destinations).
    pub fn n_hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Rank of `node` among the hosts (its index in ascending host order), `None` for a
    /// switch or an unknown id.
    #[inline]
    pub fn host_rank(&self, node: NodeId) -> Option<usize> {
        match self.rank.get(node.idx()) {
            Some(&r) if r != NOT_A_HOST => Some(r as usize),
            _ => None,
        }
    }

    /// Switches choose among equal-cost next hops by `selection` (default ECMP).
    pub fn set_path_selection(&mut self, selection: PathSelection) {
        self.selection = selection;
    }

    /// How switches choose among equal-cost next hops.
    #[inline]
    pub fn path_selection(&self) -> PathSelection {
        self.selection
    }

    /// Egress ports of `node` on a shortest path to `dst_host`, in the order ECMP indexes
    /// them. For a host this is its own NIC port(s). Empty when `node == dst_host`, when
    /// `dst_host` is not a host, or when an id is out of range. Allocates nothing.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst_host: NodeId) -> &[PortId] {
        let Some(r) = self.host_rank(dst_host) else {
            return &[];
        };
        let Some(&(start, len)) = self.spans.get(node.idx() * self.hosts.len() + r) else {
            return &[];
        };
        self.hops.get(start as usize..(start + len) as usize).unwrap_or(&[])
    }

    /// The egress port `node` picks for a packet with this 5-tuple: at a switch
    /// `ecmp_hash(.., seed = node id) % len`, at a host its first next hop (as
    /// [`ecmp_path`](Routes::ecmp_path)). `None` when there is no route. Allocates nothing.
    #[inline]
    pub fn ecmp_port(
        &self,
        node: NodeId,
        dst_host: NodeId,
        sip: u32,
        dip: u32,
        sport: u16,
        dport: u16,
    ) -> Option<PortId> {
        let hops = self.next_hops(node, dst_host);
        match hops.len() {
            0 => None,
            1 => Some(hops[0]),
            _ if self.host_rank(node).is_some() => Some(hops[0]),
            n => Some(hops[self.selection.key(sip, dip, sport, dport, node) % n]),
        }
    }

    /// Egress ports along a path from `src` to `dst`, where `pick(node, hops)` chooses the
    /// index of the next hop at each node (taken modulo the number of hops, so any value is
    /// safe). Empty when `src == dst`, when `dst` is not a host, or when there is no route.
    pub fn path(
        &self,
        topo: &Topology,
        src: NodeId,
        dst: NodeId,
        mut pick: impl FnMut(NodeId, &[PortId]) -> usize,
    ) -> Vec<PortId> {
        let mut path = Vec::new();
        let mut node = src;
        while node != dst {
            let hops = self.next_hops(node, dst);
            // A shortest path visits each node once; a longer walk means a broken table.
            if hops.is_empty() || path.len() > topo.len() {
                return Vec::new();
            }
            let port = hops[pick(node, hops) % hops.len()];
            let Some(p) = topo.ports.get(port.idx()) else {
                return Vec::new();
            };
            path.push(port);
            node = p.peer_node;
        }
        path
    }

    /// The path that always takes the first next hop: the reference's path for the ideal
    /// FCT and the base RTT.
    pub fn first_path(&self, topo: &Topology, src: NodeId, dst: NodeId) -> Vec<PortId> {
        self.path(topo, src, dst, |_, _| 0)
    }

    /// The path a packet with this 5-tuple takes: at each switch the next hop is
    /// `ecmp_hash(sip, dip, sport, dport, seed = switch id) % len`; a host with several
    /// next hops takes the first (the reference's hosts have one NIC).
    #[allow(clippy::too_many_arguments)]
    pub fn ecmp_path(
        &self,
        topo: &Topology,
        sip: u32,
        dip: u32,
        sport: u16,
        dport: u16,
        src: NodeId,
        dst: NodeId,
    ) -> Vec<PortId> {
        self.path(topo, src, dst, |node, hops| {
            if topo.is_host(node) {
                0
            } else {
                self.selection.key(sip, dip, sport, dport, node) % hops.len()
            }
        })
    }
}

/// Test fixtures shared with other modules' tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::ids::NodeId;
    use crate::topology::Topology;
    use crate::units::{Rate, Time};
    use std::path::PathBuf;

    /// `../shared/reference/hpcc` beside the repository.
    pub(crate) fn reference_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/hpcc")
    }

    /// Reads the reference's `fat.txt` (test-only reader: `Gbps` rates and `ns` delays, the
    /// only units that file uses; the real parser lives in `formats`).
    pub(crate) fn reference_fat_tree() -> Topology {
        let path = reference_dir().join("fat.txt");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut tok = text.split_whitespace();
        let mut num = || tok.next().unwrap().parse::<usize>().unwrap();
        let (n, s, l) = (num(), num(), num());
        let switches: Vec<NodeId> = (0..s).map(|_| NodeId::new(num())).collect();
        let mut topo = Topology::new(n, &switches);
        let recs: Vec<&str> = text.split_whitespace().skip(3 + s).take(5 * l).collect();
        for r in recs.chunks(5) {
            let rate = Rate::gbps(r[2].strip_suffix("Gbps").unwrap().parse().unwrap());
            let delay = Time::from_ns(r[3].strip_suffix("ns").unwrap().parse().unwrap());
            let (a, b) = (NodeId::new(r[0].parse().unwrap()), NodeId::new(r[1].parse().unwrap()));
            topo.add_link(a, b, rate, delay, 0.0).unwrap();
        }
        topo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::{dumbbell, fat_tree, star, LinkParams};
    use crate::topology::default_host_ip;
    use crate::units::{Rate, Time};

    const G100: Rate = Rate::gbps(100);
    const US: Time = Time::from_us(1);

    fn peers(topo: &Topology, ports: &[PortId]) -> Vec<u32> {
        ports.iter().map(|p| topo.ports[p.idx()].peer_node.0).collect()
    }

    fn k4() -> (Topology, Routes) {
        let t = fat_tree(4, G100, Rate::gbps(400), US).unwrap();
        let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
        (t, r)
    }

    #[test]
    fn star_routes_are_single_hops() {
        let t = star(4, G100, US).unwrap();
        let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
        for d in 0..4u32 {
            assert_eq!(r.next_hops(NodeId(4), NodeId(d)), &[PortId(2 * d + 1)]);
            for s in (0..4u32).filter(|&s| s != d) {
                assert_eq!(r.next_hops(NodeId(s), NodeId(d)), &[PortId(2 * s)]);
            }
            assert!(r.next_hops(NodeId(d), NodeId(d)).is_empty());
        }
        // Switches are not destinations; unknown ids give no route.
        assert!(r.next_hops(NodeId(0), NodeId(4)).is_empty());
        assert!(r.next_hops(NodeId(99), NodeId(0)).is_empty());
        assert!(r.next_hops(NodeId(0), NodeId(99)).is_empty());
    }

    #[test]
    fn dumbbell_crosses_the_bottleneck() {
        let p = LinkParams::new(G100, US);
        let t = dumbbell(2, p, p).unwrap();
        let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
        // Bottleneck is link 4: port 8 at the left switch (node 4).
        assert_eq!(r.next_hops(NodeId(4), NodeId(3)), &[PortId(8)]);
        assert_eq!(r.first_path(&t, NodeId(0), NodeId(3)), vec![PortId(0), PortId(8), PortId(7)]);
        assert_eq!(r.first_path(&t, NodeId(0), NodeId(1)), vec![PortId(0), PortId(3)]);
    }

    #[test]
    fn fat_tree_k4_equal_cost_counts() {
        let (t, r) = k4();
        // Hosts 0..16, edges 16..24, aggs 24..32, cores 32..36. Host 15 is in pod 3.
        let (h0, far, same_pod, same_edge) = (NodeId(0), NodeId(15), NodeId(2), NodeId(1));
        assert_eq!(r.next_hops(h0, far).len(), 1);
        assert_eq!(r.next_hops(NodeId(16), far).len(), 2); // edge -> 2 aggs
        assert_eq!(r.next_hops(NodeId(24), far).len(), 2); // agg -> 2 cores
        assert_eq!(r.next_hops(NodeId(32), far).len(), 1); // core -> the pod's agg
        assert_eq!(r.next_hops(NodeId(16), same_pod).len(), 2);
        assert_eq!(r.next_hops(NodeId(24), same_pod).len(), 1);
        assert_eq!(r.next_hops(NodeId(16), same_edge).len(), 1);
        for s in t.hosts() {
            for d in t.hosts().filter(|&d| d != s) {
                let path = r.first_path(&t, s, d);
                let want = if s.0 / 2 == d.0 / 2 {
                    2
                } else if s.0 / 4 == d.0 / 4 {
                    4
                } else {
                    6
                };
                assert_eq!(path.len(), want, "{s}->{d}");
                // Consecutive ports chain node to node and end at d.
                let mut at = s;
                for p in &path {
                    assert_eq!(t.ports[p.idx()].node, at);
                    at = t.ports[p.idx()].peer_node;
                }
                assert_eq!(at, d);
            }
        }
    }

    #[test]
    fn ns3_order_lists_switches_descending_on_reference_fat_tree() {
        let t = fixtures::reference_fat_tree();
        assert_eq!((t.len(), t.switches().count(), t.links.len()), (376, 56, 480));
        let ns3 = Routes::compute(&t, NeighborOrder::Ns3).unwrap();
        let asc = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
        // Host 0 is under ToR 320 (pod 0: aggs 340..344); host 319 under ToR 339 (pod 4).
        let tor = NodeId(320);
        assert_eq!(peers(&t, ns3.next_hops(tor, NodeId(319))), vec![343, 342, 341, 340]);
        assert_eq!(peers(&t, asc.next_hops(tor, NodeId(319))), vec![340, 341, 342, 343]);
        assert_eq!(peers(&t, ns3.next_hops(NodeId(340), NodeId(319))), vec![363, 362, 361, 360]);
        assert_eq!(peers(&t, asc.next_hops(NodeId(340), NodeId(319))), vec![360, 361, 362, 363]);
        // Every multi-hop list of every switch is strictly descending in Ns3 order.
        for sw in t.switches() {
            for d in t.hosts() {
                let p = peers(&t, ns3.next_hops(sw, d));
                assert!(p.windows(2).all(|w| w[0] > w[1]), "switch {sw} to {d}: {p:?}");
            }
        }
    }

    #[test]
    fn ns3_order_keeps_only_the_last_parallel_link() {
        let mut t = Topology::new(4, &[NodeId(2), NodeId(3)]);
        t.add_link(NodeId(0), NodeId(2), G100, US, 0.0).unwrap();
        t.add_link(NodeId(1), NodeId(3), G100, US, 0.0).unwrap();
        t.add_link(NodeId(2), NodeId(3), G100, US, 0.0).unwrap(); // ports 4, 5
        t.add_link(NodeId(2), NodeId(3), G100, US, 0.0).unwrap(); // ports 6, 7
        let asc = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
        let ns3 = Routes::compute(&t, NeighborOrder::Ns3).unwrap();
        assert_eq!(asc.next_hops(NodeId(2), NodeId(1)), &[PortId(4), PortId(6)]);
        assert_eq!(ns3.next_hops(NodeId(2), NodeId(1)), &[PortId(6)]);
    }

    #[test]
    fn bad_topologies_are_errors() {
        // Two separate stars: hosts 0,1 on switch 4; hosts 2,3 on switch 5.
        let mut t = Topology::new(6, &[NodeId(4), NodeId(5)]);
        for (h, s) in [(0, 4), (1, 4), (2, 5), (3, 5)] {
            t.add_link(NodeId(h), NodeId(s), G100, US, 0.0).unwrap();
        }
        let e = Routes::compute(&t, NeighborOrder::Ascending).unwrap_err().to_string();
        assert!(e.contains("cannot reach host") && e.contains("disconnected"), "{e}");
        // A path through a host does not count: join the stars via host 1.
        t.add_link(NodeId(1), NodeId(5), G100, US, 0.0).unwrap();
        assert!(Routes::compute(&t, NeighborOrder::Ns3).is_err());
        let mut lonely = star(2, G100, US).unwrap();
        lonely.nodes.push(crate::topology::Node {
            kind: crate::topology::NodeKind::Host,
            ports: Vec::new(),
            ips: vec![default_host_ip(3)],
        });
        let e = Routes::compute(&lonely, NeighborOrder::Ascending).unwrap_err().to_string();
        assert!(e.contains("host 3 has no link"), "{e}");
        let switches_only = Topology::new(2, &[NodeId(0), NodeId(1)]);
        assert!(Routes::compute(&switches_only, NeighborOrder::Ascending)
            .unwrap_err()
            .to_string()
            .contains("no hosts"));
    }

    #[test]
    fn ecmp_spreads_sports_over_all_cores_and_is_stable() {
        let (t, r) = k4();
        let (src, dst) = (NodeId(0), NodeId(15));
        let (sip, dip) = (default_host_ip(0), default_host_ip(15));
        let mut per_core = [0usize; 4];
        for sport in 10000..10064u16 {
            let path = r.ecmp_path(&t, sip, dip, sport, 100, src, dst);
            assert_eq!(path, r.ecmp_path(&t, sip, dip, sport, 100, src, dst));
            assert_eq!(path.len(), 6);
            // The third egress port leaves an aggregation switch towards a core (32..36).
            let core = t.ports[path[2].idx()].peer_node.idx();
            per_core[core - 32] += 1;
            // The hot-path lookup agrees with the path walk at every switch.
            for &p in &path[1..] {
                let node = t.ports[p.idx()].node;
                assert_eq!(r.ecmp_port(node, dst, sip, dip, sport, 100), Some(p));
            }
        }
        assert!(per_core.iter().all(|&c| c > 0), "{per_core:?}");
    }

    #[test]
    fn path_tolerates_any_pick() {
        let (t, r) = k4();
        let path = r.path(&t, NodeId(0), NodeId(15), |_, _| usize::MAX);
        assert_eq!(path.len(), 6);
        assert!(r.path(&t, NodeId(3), NodeId(3), |_, _| 0).is_empty());
        assert!(r.path(&t, NodeId(3), NodeId(33), |_, _| 0).is_empty());
    }
}
