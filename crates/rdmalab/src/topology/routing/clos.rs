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
    /// form, through the same [`Grouper`] as the searches' columns.
    pub(super) fn fill_rows_clos(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        cls: &Classes,
        clos: Clos,
        dense_limit: usize,
    ) -> Result<()> {
        debug_assert_eq!(self.order, NeighborOrder::Ascending);
        let rows = self.n_rows;
        let switches: Vec<(usize, NodeId)> = (0..topo.len())
            .map(NodeId::new)
            .filter(|&n| !topo.is_host(n) && self.row[n.idx()] != NO_ROW)
            .map(|n| (self.row[n.idx()] as usize, n))
            .collect();
        let mut lists = Lists { up: vec![(0, 0); topo.len()], single: vec![u32::MAX; topo.ports.len()] };
        for &(_, s) in &switches {
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
        for c in 0..self.n_classes {
            let e = cls.attachments(c)[0];
            for &(r, s) in &switches {
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
            class_slot.push(groups.add(&column)?);
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
