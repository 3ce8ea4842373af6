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
//! Hosts attached to the same switches (in the same order) share every list except at those
//! switches, so the tables hold one column per such *destination class* (`build`): a row
//! of `(start, len)` spans per switch (and per host with links to several switches), the
//! few per-host lists beside it. A k-ary fat tree has `k^2/2` classes (its edge switches).
//! Past a few million (row, class) entries, consecutive classes whose columns differ in few
//! rows share one column, a *group* (a fat tree's pod): a row that is the same for every
//! class of the group keeps one cell, the few that differ (the pod's own switches) point to
//! one span per class. The table then grows with switches x pods plus the pods' own
//! switches x their classes: 57 MB of spans for k = 160 (1,024,000 hosts) where one column per
//! class would take 3.3 GB, and a per-host table 8.7 TB. A lookup on the packet path is
//! three indexings (four in a cell that differs within its group), no hashing and no
//! allocation.

use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId};
use crate::topology::ecmp::ecmp_hash;
use crate::topology::Topology;

mod build;
mod clos;
mod grouper;
mod update;
pub use update::RerouteWork;
#[cfg(test)]
mod tests;

/// Order in which the route search visits a node's neighbours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NeighborOrder {
    /// Plain ascending node id; parallel links to one neighbour are all next hops, in port
    /// order. The native default.
    #[default]
    Ascending,
    /// The reference binary's order (`CalculateRoute` in its `third.cc`): hosts first in ascending id, then
    /// switches in descending id (it iterates neighbours by object address, and its switch
    /// objects are mapped at decreasing addresses). Of parallel links to one neighbour only
    /// the last one in link order is used, as in the reference's neighbour map. Used by the
    /// `rdmalab hpcc` drop-in.
    Ns3,
}

/// How a switch picks one of several equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathSelection {
    /// `ecmp_hash(sip, dip, sport, dport, seed = switch id) % n` (the reference's ECMP).
    #[default]
    Ecmp,
    /// Virtuoso's SDN rule (§4.2): hop `alias % n`, where `alias` is the index of the
    /// connection's virtual-NIC address among its host's addresses (`ips_per_host`
    /// numbers them `x.y.1`, `x.y.2`, ...: index = last byte - 1). Of the two addresses of
    /// a packet the larger index is taken: the source's going out and the destination's on
    /// the way back (ACKs, READ responses), so both directions of a path use the same link.
    SourceIp,
    /// Per data packet, a uniformly random hop (`fabric::lb::spray`).
    Spray,
    /// DRILL's per-packet choice by egress queue (`fabric::lb::drill`).
    Drill,
    /// LetFlow: a random hop per flowlet (`fabric::lb::flowlet`).
    Letflow,
    /// CONGA on leaf-spine fabrics (`fabric::lb::conga`).
    Conga,
    /// ConWeave between ToRs: leaf-spine and fat-tree fabrics (`fabric::lb::conweave`).
    Conweave,
    /// UET packets carry a fresh entropy value each, drawn at random
    /// (`rnic::uet::Spray::EvSpray`), in the source port that the switches' ECMP hash reads;
    /// every other packet as `ecmp`.
    EvSpray,
    /// UET packets go through the connection's entropy values once per round, in an order
    /// redrawn each round (htsim's oblivious spraying, `rnic::uet::Spray::EvCycle`); switches
    /// hash as `ecmp`.
    EvCycle,
    /// UET packets go through the entropy values as `ev_cycle` does, passing over a value
    /// for a round per point of penalty: 1 for an ACK with a CE mark, 4 for a NACK (htsim's
    /// bitmap mode, `rnic::uet::Spray::Bitmap`); switches hash as `ecmp`.
    EvBitmap,
    /// UET packets reuse the entropy values whose ACKs came back unmarked (REPS,
    /// `rnic::uet::Spray::Reps`); switches hash as `ecmp`.
    Reps,
}

/// `u64::MAX / n + 1` (wrapping) for n = 0..=64: the multipliers of [`pick`].
const FASTMOD: [u64; 65] = {
    let mut t = [0u64; 65];
    let mut n = 1;
    while n < 65 {
        t[n] = (u64::MAX / n as u64).wrapping_add(1);
        n += 1;
    }
    t
};

/// `key % n` for a 32-bit `key`, without a division when `n <= 64` (every ECMP group in
/// practice): Lemire, Kaser and Kurz's direct remainder ("Faster remainder by direct
/// computation", 2019), exact for all 32-bit keys and divisors. A hardware division sits
/// on every switch hop's critical path, between the hash and the egress port's state.
#[inline(always)]
pub fn pick(key: usize, n: usize) -> usize {
    if n <= 64 && key <= u32::MAX as usize {
        let low = FASTMOD[n].wrapping_mul(key as u64);
        ((low as u128 * n as u128) >> 64) as usize
    } else {
        key % n
    }
}

impl PathSelection {
    /// Index (before `% n`) of the next hop for a packet with this 5-tuple at `node`.
    /// Always inlined: it runs at every switch hop, and with the balancers' arms the
    /// compiler stopped inlining it on its own (1.5 % more instructions on S1).
    #[inline(always)]
    pub fn key(self, sip: u32, dip: u32, sport: u16, dport: u16, node: NodeId) -> usize {
        match self {
            PathSelection::Ecmp => ecmp_hash(sip, dip, sport, dport, node.0) as usize,
            PathSelection::SourceIp => alias_index(sip).max(alias_index(dip)),
            // The switch-side balancers route data themselves (`fabric::lb`); their control
            // packets, and any caller without the balancer, take the ECMP hash.
            _ => ecmp_hash(sip, dip, sport, dport, node.0) as usize,
        }
    }
}

/// Index of an address among its host's aliases (`x.y.1` is 0, `x.y.2` is 1, ...).
#[inline]
pub fn alias_index(ip: u32) -> usize {
    ((ip & 0xFF) as usize).saturating_sub(1)
}

/// Largest span table accepted (cells and per-class spans of groups), 2 GiB of spans.
const MAX_SPANS: usize = 1 << 28;
/// Tables of at most this many (row, class) entries keep one column per class (32 MiB of
/// spans: every topology up to a k = 50 fat tree); larger ones group classes.
const DENSE_LIMIT: usize = 1 << 22;
/// A host's `slot` packs its class's group and its index in the group: `group << GROUP_BITS
/// | index`, so a group holds at most 256 classes.
const GROUP_BITS: u32 = 8;
const GROUP_MASK: u32 = (1 << GROUP_BITS) - 1;
/// Span length marking a cell whose row differs within its group: its `start` is the
/// offset in `sub` of the group's spans for that row, one per class of the group.
const INDIRECT: u32 = u32::MAX - 1;
const NOT_A_HOST: u32 = u32::MAX;
/// `row` of a node without one (a host whose links all go to one switch).
const NO_ROW: u32 = u32::MAX;
/// Span length marking a destination's neighbour: its list is the destination's down ports.
const ATTACH: u32 = u32::MAX;

/// Routing tables: for every node and destination host, the egress ports of all
/// shortest-path next hops, in the order the route search found them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    order: NeighborOrder,
    /// How switches choose among equal-cost next hops.
    selection: PathSelection,
    /// Host rank of each node (`NOT_A_HOST` for switches).
    rank: Vec<u32>,
    /// Host id of each rank.
    hosts: Vec<NodeId>,
    /// Destination class of each node (`NOT_A_HOST` for switches).
    class: Vec<u32>,
    n_classes: usize,
    /// Each node's column: its class's group and index in it (`GROUP_BITS`; `NOT_A_HOST`
    /// for switches).
    slot: Vec<u32>,
    /// Columns of `cells`: groups of consecutive classes (one class each in a dense table).
    n_groups: usize,
    /// Row of each node in `cells`: switches and hosts linked to several nodes; `NO_ROW`
    /// for the other hosts, whose list is `up`.
    row: Vec<u32>,
    n_rows: usize,
    /// Per node without a row: `(its switch, start, len)` of its ports to that switch, its
    /// list towards every destination the switch reaches (`NO_ROW`: no link at all).
    up: Vec<(u32, u32, u32)>,
    /// Per host rank, its range in `down`.
    down_at: Vec<u32>,
    /// `(neighbour, start, len)`: a host's ports as seen from each neighbour, the
    /// neighbour's list towards that host.
    down: Vec<(NodeId, u32, u32)>,
    /// Per node (hosts only), the first entry of its `down` range: the last hop of a
    /// packet finds its list here with one load (`down_ports` searches the rest).
    first_down: Vec<(NodeId, u32, u32)>,
    /// `(start, len)` into `hops`, indexed by `row * n_groups + group(dst)`; `len ==
    /// ATTACH` where the row's node is a neighbour of the class's hosts, `len == INDIRECT`
    /// where the row's lists differ within the group (`sub[start + index(dst)]` is the span).
    cells: Vec<(u32, u32)>,
    /// Per-class spans of the cells marked `INDIRECT`, one run of a group's size each.
    sub: Vec<(u32, u32)>,
    /// Next-hop lists (egress ports), concatenated; spans may share a list.
    hops: Vec<PortId>,
    /// The links down when the tables were made, ascending (`reroute` compares).
    down_links: Vec<u32>,
}

fn validate_hosts(topo: &Topology, hosts: &[NodeId]) -> Result<()> {
    if hosts.is_empty() {
        return Err(Error::Topology("no hosts: routing needs at least one host".into()));
    }
    if let Some(h) = hosts.iter().find(|h| topo.nodes[h.idx()].ports.is_empty()) {
        return Err(Error::Topology(format!("host {h} has no link")));
    }
    Ok(())
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

    /// Bytes the tables hold (for memory reports).
    pub fn table_bytes(&self) -> usize {
        use std::mem::size_of;
        (self.rank.len() + self.hosts.len() + self.class.len() + self.slot.len() + self.row.len() + self.down_at.len())
            * 4
            + self.up.len() * size_of::<(u32, u32, u32)>()
            + (self.down.len() + self.first_down.len()) * size_of::<(NodeId, u32, u32)>()
            + (self.cells.len() + self.sub.len()) * size_of::<(u32, u32)>()
            + self.hops.len() * size_of::<PortId>()
    }

    /// Number of destination classes.
    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    /// Number of columns of the table: groups of classes (each class its own in a table of
    /// a few million entries or fewer).
    pub fn n_groups(&self) -> usize {
        self.n_groups
    }

    /// Destination class of `host` (hosts attached to the same nodes in the same order
    /// share one): every node other than the class's hosts and their neighbours has the
    /// same list towards all of them. `None` for a switch or an unknown id.
    pub fn class_of(&self, host: NodeId) -> Option<usize> {
        self.class.get(host.idx()).filter(|&&c| c != NOT_A_HOST).map(|&c| c as usize)
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
    /// Always inlined: it runs at every switch hop.
    #[inline(always)]
    pub fn next_hops(&self, node: NodeId, dst_host: NodeId) -> &[PortId] {
        let slot = match self.slot.get(dst_host.idx()) {
            Some(&s) if s != NOT_A_HOST && node != dst_host => s,
            _ => return &[],
        };
        let Some(&row) = self.row.get(node.idx()) else {
            return &[];
        };
        let (start, len) =
            if row == NO_ROW { self.uplinks(node, slot) } else { self.cells[self.cell_index(row, slot)] };
        // One test keeps the common case (a plain span) as short as a dense table's: the
        // two marks are the largest span lengths.
        let (start, len) = if len < INDIRECT {
            (start, len)
        } else if len == ATTACH {
            self.attached_ports(node, dst_host)
        } else {
            self.indirect(start, slot, node, dst_host)
        };
        &self.hops[start as usize..(start + len) as usize]
    }

    /// The entry of the table that `next_hops(node, dst_host)` reads first, for a prefetch:
    /// in a fabric of a thousand hosts the table outgrows the caches a hop's packets churn.
    /// `None` for a node without a row of its own (a host's uplinks) or a destination that
    /// is not a host.
    #[inline(always)]
    pub fn first_cell(&self, node: NodeId, dst_host: NodeId) -> Option<&(u32, u32)> {
        let (&slot, &row) = (self.slot.get(dst_host.idx())?, self.row.get(node.idx())?);
        if slot == NOT_A_HOST || row == NO_ROW {
            return None;
        }
        self.cells.get(self.cell_index(row, slot))
    }

    /// Where in `cells` the span of `row` towards the group of column `slot` sits.
    #[inline(always)]
    fn cell_index(&self, row: u32, slot: u32) -> usize {
        row as usize * self.n_groups + (slot >> GROUP_BITS) as usize
    }

    /// The span of `row` towards the hosts of column `slot`.
    #[inline(always)]
    fn cell(&self, row: u32, slot: u32) -> (u32, u32) {
        let e = self.cells[self.cell_index(row, slot)];
        if e.1 != INDIRECT {
            e
        } else {
            self.sub[(e.0 + (slot & GROUP_MASK)) as usize]
        }
    }

    /// The list of `node`, a neighbour of `dst`: the last hop finds it with one load.
    #[inline(always)]
    fn attached_ports(&self, node: NodeId, dst: NodeId) -> (u32, u32) {
        match self.first_down[dst.idx()] {
            (nb, start, len) if nb == node => (start, len),
            _ => self.down_ports(node, dst),
        }
    }

    /// A cell whose row differs within its group (grouped tables only): the class's own span
    /// in `sub`, which may itself mark a neighbour of the class.
    #[cold]
    #[inline(never)]
    fn indirect(&self, at: u32, slot: u32, node: NodeId, dst: NodeId) -> (u32, u32) {
        let (start, len) = self.sub[(at + (slot & GROUP_MASK)) as usize];
        if len == ATTACH {
            self.attached_ports(node, dst)
        } else {
            (start, len)
        }
    }

    /// A single-switch host's list: its ports to the switch, when the switch reaches the
    /// hosts of column `slot`. Out of line: hosts look routes up at setup, not per packet.
    #[cold]
    #[inline(never)]
    fn uplinks(&self, node: NodeId, slot: u32) -> (u32, u32) {
        let (s, start, len) = self.up[node.idx()];
        if s == NO_ROW {
            return (0, 0);
        }
        let at_switch = self.cell(self.row[s as usize], slot).1;
        if at_switch == 0 {
            (0, 0)
        } else {
            (start, len)
        }
    }

    /// The list of a neighbour of `dst`: its ports towards `dst`. Out of line, so that the
    /// common case of `next_hops` stays small enough to inline into the forwarding path.
    #[inline(never)]
    fn down_ports(&self, node: NodeId, dst: NodeId) -> (u32, u32) {
        let r = self.rank[dst.idx()] as usize;
        let own = &self.down[self.down_at[r] as usize..self.down_at[r + 1] as usize];
        own.iter().find(|e| e.0 == node).map_or((0, 0), |e| (e.1, e.2))
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
            n => Some(hops[pick(self.selection.key(sip, dip, sport, dport, node), n)]),
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
    /// FCT and the base RTT. A GPU of a SimAI topology takes its NVSwitch where that is a
    /// next hop, the path its flows take (`sim/host/egress.rs`).
    pub fn first_path(&self, topo: &Topology, src: NodeId, dst: NodeId) -> Vec<PortId> {
        if topo.nvswitch.is_empty() {
            return self.path(topo, src, dst, |_, _| 0);
        }
        self.path(topo, src, dst, |node, hops| {
            let nv = topo.is_host(node).then(|| hops.iter().position(|&p| topo.to_nvswitch(p)));
            nv.flatten().unwrap_or(0)
        })
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

/// Where the tables are made: a recognised Clos fabric's from its wiring (`clos.rs`), any
/// other's by one search per class (`build.rs`).
impl Routes {
    pub(super) fn build(
        topo: &Topology,
        order: NeighborOrder,
        up: &dyn Fn(usize) -> bool,
        strict: bool,
    ) -> Result<Routes> {
        Routes::build_with(topo, order, up, strict, DENSE_LIMIT)
    }

    /// `build`, grouping classes when rows x classes exceeds `dense_limit` (tests force it).
    pub(super) fn build_with(
        topo: &Topology,
        order: NeighborOrder,
        up: &dyn Fn(usize) -> bool,
        strict: bool,
        dense_limit: usize,
    ) -> Result<Routes> {
        let hosts: Vec<NodeId> = topo.hosts().collect();
        validate_hosts(topo, &hosts)?;
        let adj = build::Adjacency::new(topo, order, up);
        let cls = build::classes(topo, &adj, &hosts);
        let mut r = Routes::empty(topo, order, hosts, &cls.of, cls.members.len());
        r.lay_out_hosts(topo, &adj);
        let all_up = || (0..topo.links.len()).all(up);
        match clos::Clos::recognise(topo) {
            Some(clos) if order == NeighborOrder::Ascending && all_up() => {
                r.fill_rows_clos(topo, &adj, &cls, clos, dense_limit)?
            }
            _ => r.fill_rows(topo, &adj, &cls, strict, dense_limit)?,
        }
        r.down_links = (0..topo.links.len()).filter(|&l| !up(l)).map(|l| l as u32).collect();
        Ok(r)
    }
}

/// Test fixtures shared with other modules' tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::ids::NodeId;
    use crate::topology::Topology;
    use crate::units::{Rate, Time};
    use std::path::PathBuf;

    /// The ns-3 HPCC simulator's S1/S2 files (docs/validation.md): `$RDMALAB_REFERENCE/hpcc`,
    /// else `../shared/reference/hpcc` beside the repository, as the integration tests find them.
    pub(crate) fn reference_dir() -> PathBuf {
        std::env::var_os("RDMALAB_REFERENCE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference"))
            .join("hpcc")
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
