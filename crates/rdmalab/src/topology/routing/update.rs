//! Routes after a link failure, recomputed only where the failure changes them.
//!
//! Removing the link between switches `u` and `v` changes class `c`'s lists only if the link
//! lies on the class's shortest-path DAG: one end, say `v`, lists the other as a next hop.
//! In a fat tree that is every class (an edge–aggregation link carries its pod's traffic up
//! towards every other pod), so a filter by class alone skips nothing; but within a class
//! the change is usually one row. A list is its node's parents in the order the search
//! dequeued them, and the search discovers a node from its first parent. So when `v` keeps
//! another parent (its distance does not change):
//! - if `u` is not `v`'s first parent, `v` is discovered and queued exactly as before, no
//!   other node sees a difference, and only `v`'s list loses `u`;
//! - if `u` is the first, `v` is queued later among the nodes of its distance, which reorders
//!   the lists of its children (the nodes one farther that list it); if it has none, again
//!   only `v`'s list changes.
//!
//! Otherwise (`v`'s only parent was `u`, a child would be reordered, a parallel link to
//! the same neighbour, a multi-homed host whose own row comes from a second search) the
//! class's column is searched again in full. A fat tree's edge–aggregation failure costs
//! one search (the edge's own class, whose aggregation switch had it as its only parent);
//! an aggregation–core failure costs the pod's k/2 searches (the core reached the pod through
//! that aggregation switch alone), or, when the core is the first its aggregation switch
//! hears from (the lowest core of its group in ascending order), a search of every class:
//! when more than half the classes need one, the whole table is rebuilt instead. A link that
//! comes back, or one with a host at an end, rebuilds every route.

use super::build::{classes, store, Adjacency, Search};
use super::{Routes, INDIRECT, NOT_A_HOST, NO_ROW};
use crate::error::Result;
use crate::ids::{NodeId, PortId};
use crate::topology::Topology;

/// What an update did: classes searched again, rows changed in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RerouteWork {
    /// Every route was rebuilt (a link came back, or a failure the update does not cover).
    pub rebuilt: bool,
    /// Classes whose column was searched again.
    pub searched: usize,
    /// (row, class) lists changed without a search.
    pub patched: usize,
}

impl Routes {
    /// Brings the tables to the links for which `up(link index)` holds now: only what the
    /// newly failed links change when every change since the tables were made is a failure
    /// of a link between two switches, every route otherwise. The result's lists are those
    /// of `compute_without_down_links` exactly (`tests`); the path selection is kept.
    pub fn reroute(&mut self, topo: &Topology, up: &dyn Fn(usize) -> bool) -> Result<RerouteWork> {
        let down_now: Vec<u32> = (0..topo.links.len()).filter(|&l| !up(l)).map(|l| l as u32).collect();
        let came_back = self.down_links.iter().any(|&l| up(l as usize));
        let failed: Vec<u32> = down_now.iter().copied().filter(|l| self.down_links.binary_search(l).is_err()).collect();
        let between_switches = |l: &u32| {
            let link = &topo.links[*l as usize];
            !topo.is_host(link.a) && !topo.is_host(link.b)
        };
        let multi_homed = self.hosts.iter().any(|h| self.row[h.idx()] != NO_ROW);
        if came_back || multi_homed || !failed.iter().all(between_switches) {
            let selection = self.selection;
            *self = Routes::compute_without_down_links(topo, self.order, up)?;
            self.selection = selection;
            return Ok(RerouteWork { rebuilt: true, ..Default::default() });
        }
        let mut work = RerouteWork::default();
        for (i, &l) in failed.iter().enumerate() {
            // One failure at a time: each step's tables are exact for its links.
            let now_up = |x: usize| up(x) || failed[i..].contains(&(x as u32));
            self.remove_link(topo, &now_up, l as usize, &mut work)?;
        }
        self.down_links = down_now;
        Ok(work)
    }

    /// The tables without link `l` (between two switches), `up` holding for every other
    /// link still in them.
    fn remove_link(
        &mut self,
        topo: &Topology,
        up: &dyn Fn(usize) -> bool,
        l: usize,
        work: &mut RerouteWork,
    ) -> Result<()> {
        let live = |x: usize| x != l && up(x);
        let adj = Adjacency::new(topo, self.order, &live);
        let ends = [PortId::new(2 * l), PortId::new(2 * l + 1)];
        let reps = self.representatives();
        let (mut redo, mut patches) = (Vec::new(), Vec::new());
        for (c, &rep) in reps.iter().enumerate() {
            for (pv, pu) in [(ends[0], ends[1]), (ends[1], ends[0])] {
                let (v, u) = (topo.ports[pv.idx()].node, topo.ports[pu.idx()].node);
                let list = self.next_hops(v, rep);
                if !list.contains(&pv) {
                    continue;
                }
                let others: Vec<PortId> = list.iter().copied().filter(|&p| p != pv).collect();
                let parallel = adj.of(v).iter().any(|&(nb, _)| nb == u);
                let reordered = list[0] == pv && self.has_child(topo, &adj, v, rep);
                if others.is_empty() || parallel || reordered {
                    redo.push(c);
                } else {
                    patches.push((self.row[v.idx()] as usize, c, others));
                }
            }
        }
        redo.dedup();
        if redo.len() * 2 > self.n_classes {
            // Most classes searched again: the whole build is cheaper (the table is rebuilt
            // compact instead of patched class by class).
            let selection = self.selection;
            *self = Routes::compute_without_down_links(topo, self.order, &live)?;
            self.selection = selection;
            work.rebuilt = true;
            return Ok(());
        }
        let sizes = self.group_sizes();
        for (r, c, list) in patches.into_iter().filter(|(_, c, _)| redo.binary_search(c).is_err()) {
            let mut last = (0, 0);
            let span = store(&mut self.hops, &mut last, &list)?;
            self.set_span(r, reps[c], span, &sizes);
            work.patched += 1;
        }
        self.search_again(topo, &adj, &redo, &reps, &sizes)?;
        work.searched += redo.len();
        Ok(())
    }

    /// Searches the columns of `redo` again over `adj` and writes them into the table.
    fn search_again(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        redo: &[usize],
        reps: &[NodeId],
        sizes: &[usize],
    ) -> Result<()> {
        if redo.is_empty() {
            return Ok(());
        }
        let hosts: Vec<NodeId> = self.hosts.clone();
        let cls = classes(topo, adj, &hosts);
        let adj = adj.without(|nb| topo.is_host(nb) && self.row[nb.idx()] == NO_ROW);
        let mut search = Search::new(topo.len());
        let (mut last, mut column) = (vec![(0, 0); self.n_rows], vec![(0, 0); self.n_rows]);
        for &c in redo {
            self.class_column(topo, &adj, &cls, c, &mut search, &mut last, &mut column, |_, _, _| {})?;
            for (r, &span) in column.iter().enumerate() {
                self.set_span(r, reps[c], span, sizes);
            }
        }
        Ok(())
    }

    /// A host of each class, by class.
    fn representatives(&self) -> Vec<NodeId> {
        let mut reps = vec![NodeId::NONE; self.n_classes];
        for (n, &c) in self.class.iter().enumerate().rev() {
            if c != NOT_A_HOST {
                reps[c as usize] = NodeId::new(n);
            }
        }
        reps
    }

    /// Whether a switch next to `v` lists `v` as a next hop towards `rep`'s class (hosts are
    /// never queued by a search, so where `v` stands does not change theirs).
    fn has_child(&self, topo: &Topology, adj: &Adjacency, v: NodeId, rep: NodeId) -> bool {
        adj.of(v).iter().any(|&(w, back)| !topo.is_host(w) && self.next_hops(w, rep).contains(&back))
    }

    /// Stores `span` as row `r`'s list towards the class of host `rep`: in its own cell in a
    /// dense table; in a grouped one, a cell shared by the group becomes one span per class.
    fn set_span(&mut self, r: usize, rep: NodeId, span: (u32, u32), sizes: &[usize]) {
        let slot = self.slot[rep.idx()];
        let (g, i) = ((slot >> super::GROUP_BITS) as usize, (slot & super::GROUP_MASK) as usize);
        let at = r * self.n_groups + g;
        let cell = self.cells[at];
        if cell.1 == INDIRECT {
            self.sub[cell.0 as usize + i] = span;
        } else if cell != span {
            let size = sizes[g];
            if size == 1 {
                self.cells[at] = span;
                return;
            }
            let start = self.sub.len() as u32;
            self.sub.extend(std::iter::repeat_n(cell, size));
            self.sub[start as usize + i] = span;
            self.cells[at] = (start, INDIRECT);
        }
    }

    /// Classes in each group.
    fn group_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![1; self.n_groups];
        for &s in self.slot.iter().filter(|&&s| s != NOT_A_HOST) {
            let g = (s >> super::GROUP_BITS) as usize;
            sizes[g] = sizes[g].max((s & super::GROUP_MASK) as usize + 1);
        }
        sizes
    }
}
