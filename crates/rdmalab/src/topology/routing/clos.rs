//! Routing tables of the two Clos builders (fat tree, leaf-spine) read off their wiring,
//! without a search.
//!
//! The general build runs one breadth-first search per destination class over every
//! switch link: at k = 160, 12,800 searches over 2 million links, three minutes of setup.
//! In a Clos fabric built by `builders::fat_tree` or `builders::leaf_spine` the searches'
//! lists have a closed form. Towards the hosts of edge (leaf) switch `E`:
//! - `E` itself lists the destination's own port (`ATTACH`, as in the search);
//! - a switch above `E` (an aggregation of `E`'s pod, any core, any spine) lists its ports
//!   down to the neighbours that are themselves `E` or above it: for an aggregation the one
//!   port to `E`, for a core the one port to the aggregation of `E`'s pod in its group, for
//!   a spine its port to `E`;
//! - every other switch lists all its ports up, in ascending order of the neighbour.
//!
//! The last rule is where the search's visiting order shows. The search dequeues one tier
//! in ascending id: `E`'s aggregations are queued by `E` in ascending order; they queue the
//! cores group by group, ascending; the first core of each group reaches the aggregations
//! of that group in every other pod, so an edge of another pod hears from its aggregations
//! in ascending order, and an aggregation from its cores in ascending order. So under
//! `NeighborOrder::Ascending` the up-lists are sorted by neighbour; the tests compare every
//! (node, destination) list with the per-host search on fat trees and leaf-spines of
//! several sizes, dense and grouped. The `Ns3` order, other topologies, failed links and
//! edited wirings take the general search.

use super::build::{Adjacency, Classes};
use super::grouper::Grouper;
use super::{NeighborOrder, Routes, ATTACH, NO_ROW};
use crate::error::Result;
use crate::ids::{NodeId, PortId};
use crate::topology::builders::{fat_tree_tiers, fat_tree_wiring, leaf_spine_wiring};
use crate::topology::Topology;

/// A fabric whose wiring is exactly one of the Clos builders'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Clos {
    /// `builders::fat_tree(k, ..)`.
    FatTree { k: usize },
    /// `builders::leaf_spine(leaves, spines, per_leaf, ..)`.
    LeafSpine { leaves: usize, spines: usize, per_leaf: usize },
}

/// Where a switch stands relative to the destination's edge switch `E`.
enum Towards {
    /// `E` itself.
    Own,
    /// Above `E`: its list is its port(s) down to this neighbour.
    Down(NodeId),
    /// Elsewhere: its list is every port up.
    Up,
}

impl Clos {
    /// The builder whose wiring `topo` has, link for link (`None` for anything else,
    /// including a builder's fabric with a link added or moved). Costs one pass over
    /// the links.
    pub(super) fn recognise(topo: &Topology) -> Option<Clos> {
        let hosts = topo.hosts().count();
        let switches = topo.len() - hosts;
        // Builders number hosts first.
        if topo.hosts().last() != Some(NodeId::new(hosts.wrapping_sub(1))) || topo.ports.len() != 2 * topo.links.len() {
            return None;
        }
        let k = (1..).map(|k: usize| 2 * k).take_while(|&k| k * k * k / 4 <= hosts).last().unwrap_or(0);
        let fat = Clos::FatTree { k };
        if k > 0 && k * k * k / 4 == hosts && 5 * k * k / 4 == switches && fat.wired_as(topo) {
            return Some(fat);
        }
        // A leaf-spine: the last host's link names the last leaf.
        let last_leaf = topo.links.get(hosts - 1)?.b.idx().checked_sub(hosts)?;
        let leaves = last_leaf + 1;
        // The builder wants a spine at least (without one the leaves are disconnected).
        if leaves >= switches || !hosts.is_multiple_of(leaves) {
            return None;
        }
        let ls = Clos::LeafSpine { leaves, spines: switches - leaves, per_leaf: hosts / leaves };
        ls.wired_as(topo).then_some(ls)
    }

    /// Whether `topo`'s links are exactly this builder's, in its order.
    fn wired_as(self, topo: &Topology) -> bool {
        let same = |mut wiring: Box<dyn Iterator<Item = (usize, usize)>>| {
            let mut links = topo.links.iter();
            loop {
                match (wiring.next(), links.next()) {
                    (None, None) => return true,
                    (Some((a, b)), Some(l)) if l.a.idx() == a && l.b.idx() == b => {}
                    _ => return false,
                }
            }
        };
        match self {
            Clos::FatTree { k } => same(Box::new(fat_tree_wiring(k))),
            Clos::LeafSpine { leaves, spines, per_leaf } => same(Box::new(leaf_spine_wiring(leaves, spines, per_leaf))),
        }
    }

    /// The switches (ascending) whose standing towards edge `e`'s hosts can differ from
    /// their standing towards edge `prev`'s: the two edges; in a fat tree the aggregations
    /// of both edges' pods, and every core when the pods differ (a core's child is the
    /// destination pod's aggregation of its group); in a leaf-spine every spine.
    fn touched(self, prev: NodeId, e: NodeId, out: &mut Vec<NodeId>) {
        let (lo, hi) = (prev.min(e), prev.max(e));
        out.push(lo);
        if hi != lo {
            out.push(hi);
        }
        match self {
            Clos::FatTree { k } => {
                let half = k / 2;
                let (edge0, agg0, core0) = fat_tree_tiers(k);
                let pod = |x: NodeId| (x.idx() - edge0) / half;
                let (p, q) = (pod(lo), pod(hi));
                out.extend((agg0 + p * half..agg0 + (p + 1) * half).map(NodeId::new));
                if q != p {
                    out.extend((agg0 + q * half..agg0 + (q + 1) * half).map(NodeId::new));
                    out.extend((core0..core0 + half * half).map(NodeId::new));
                }
            }
            Clos::LeafSpine { leaves, spines, per_leaf } => {
                let spine0 = leaves * per_leaf + leaves;
                out.extend((spine0..spine0 + spines).map(NodeId::new));
            }
        }
    }

    /// Switch `s`'s standing towards the hosts of edge switch `e`.
    fn towards(self, s: NodeId, e: NodeId) -> Towards {
        if s == e {
            return Towards::Own;
        }
        match self {
            Clos::FatTree { k } => {
                let half = k / 2;
                let (edge0, agg0, core0) = fat_tree_tiers(k);
                let pod_of_e = (e.idx() - edge0) / half;
                match s.idx() {
                    x if x < agg0 => Towards::Up,
                    x if x < core0 && (x - agg0) / half == pod_of_e => Towards::Down(e),
                    x if x < core0 => Towards::Up,
                    // Core of group g: its one link into E's pod is to that pod's g-th aggregation.
                    x => Towards::Down(NodeId::new(agg0 + pod_of_e * half + (x - core0) / half)),
                }
            }
            Clos::LeafSpine { leaves, per_leaf, .. } => {
                if s.idx() >= leaves * per_leaf + leaves {
                    Towards::Down(e)
                } else {
                    Towards::Up
                }
            }
        }
    }
}

/// A switch's ports to the neighbours above it, and each port as a one-entry list, stored
/// once in the tables' next-hop lists.
struct Lists {
    /// Per node, the span of its ports to higher-numbered switches (the tier above).
    up: Vec<(u32, u32)>,
    /// Per port, the start of its one-entry list (`u32::MAX` until first needed).
    single: Vec<u32>,
}

impl Routes {
    /// `fill_rows` for a recognised Clos fabric: every class's column from the closed
    /// form, through the same [`Grouper`] as the searches' columns. The first class's column
    /// is written whole; each next class rewrites only the rows whose standing can differ
    /// from the class before's (`Clos::touched`: the two edges, their pods' aggregations,
    /// and the cores when the pod changes) and hands the grouper those rows alone, so a
    /// k = 160 tree's 12,800 classes cost some 200 rows each instead of 32,000.
    pub(super) fn fill_rows_clos(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        cls: &Classes,
        clos: Clos,
        dense_limit: usize,
    ) -> Result<()> {
        self.fill_clos(topo, adj, cls, clos, dense_limit, false)
    }

    /// `full`: every row of every class, as the fill did before it was incremental (the
    /// tests compare the two).
    fn fill_clos(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        cls: &Classes,
        clos: Clos,
        dense_limit: usize,
        full: bool,
    ) -> Result<()> {
        debug_assert_eq!(self.order, NeighborOrder::Ascending);
        let rows = self.n_rows;
        let switches: Vec<NodeId> =
            (0..topo.len()).map(NodeId::new).filter(|&n| !topo.is_host(n) && self.row[n.idx()] != NO_ROW).collect();
        let mut lists = Lists { up: vec![(0, 0); topo.len()], single: vec![u32::MAX; topo.ports.len()] };
        for &s in &switches {
            // The adjacency holds (neighbour, its port back to s) sorted by neighbour; s's
            // own port to that neighbour is the back port's peer.
            let start = self.hops.len() as u32;
            let ups = adj.of(s).iter().filter(|&&(nb, _)| nb > s).map(|&(_, back)| topo.ports[back.idx()].peer);
            self.hops.extend(ups);
            lists.up[s.idx()] = (start, self.hops.len() as u32 - start);
        }
        let mut groups = Grouper::new(rows, rows.saturating_mul(self.n_classes) <= dense_limit);
        let mut column = vec![(0u32, 0u32); rows];
        // Per row, the child its last down-list went to: a core's child changes only with
        // the destination's pod, so the port lookup runs once per pod.
        let mut last_child = vec![NodeId::NONE; rows];
        let mut class_slot = Vec::with_capacity(self.n_classes);
        let (mut touched, mut changed) = (Vec::new(), Vec::new());
        let mut prev = None;
        for c in 0..self.n_classes {
            let e = cls.attachments(c)[0];
            let these: &[NodeId] = match prev {
                Some(p) if !full => {
                    touched.clear();
                    clos.touched(p, e, &mut touched);
                    &touched
                }
                _ => &switches,
            };
            changed.clear();
            for &s in these {
                let r = self.row[s.idx()];
                if r == NO_ROW {
                    continue;
                }
                let r = r as usize;
                changed.push(r as u32);
                column[r] = match clos.towards(s, e) {
                    Towards::Own => (0, ATTACH),
                    Towards::Up => lists.up[s.idx()],
                    Towards::Down(child) if child == last_child[r] => column[r],
                    Towards::Down(child) => {
                        last_child[r] = child;
                        self.single_port(topo, adj, &mut lists, s, child)
                    }
                };
            }
            let slot = if prev.is_some() && !full {
                changed.sort_unstable();
                groups.add_changed(&column, &changed)?
            } else {
                groups.add(&column)?
            };
            class_slot.push(slot);
            prev = Some(e);
        }
        self.finish_columns(groups, &class_slot);
        Ok(())
    }

    /// The one-entry list of `s`'s port to `child` (each Clos pair has one link).
    fn single_port(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        lists: &mut Lists,
        s: NodeId,
        child: NodeId,
    ) -> (u32, u32) {
        let of = adj.of(s);
        let back = of[of.partition_point(|&(nb, _)| nb < child)].1;
        let port: PortId = topo.ports[back.idx()].peer;
        let at = &mut lists.single[port.idx()];
        if *at == u32::MAX {
            *at = self.hops.len() as u32;
            self.hops.push(port);
        }
        (*at, 1)
    }
}

#[cfg(test)]
impl Routes {
    /// `build_with` on a recognised Clos fabric, its columns filled whole for every class
    /// (`full`) or incrementally.
    pub(super) fn build_clos(topo: &Topology, dense_limit: usize, full: bool) -> Routes {
        let hosts: Vec<NodeId> = topo.hosts().collect();
        let adj = Adjacency::new(topo, NeighborOrder::Ascending, &|_| true);
        let cls = super::build::classes(topo, &adj, &hosts);
        let mut r = Routes::empty(topo, NeighborOrder::Ascending, hosts, &cls.of, cls.members.len());
        r.lay_out_hosts(topo, &adj);
        let clos = Clos::recognise(topo).expect("a Clos builder's fabric");
        r.fill_clos(topo, &adj, &cls, clos, dense_limit, full).expect("tables");
        r
    }
}
