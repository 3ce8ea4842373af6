//! Building the routing tables: one breadth-first search per destination class.
//!
//! A destination host's route search starts at the host, reaches its neighbours (the
//! switches it is attached to) at distance 1 and from then on never expands another host.
//! Two hosts whose neighbours are the same nodes in the same visiting order therefore give
//! the same search from distance 1 on: every node other than the two hosts and their shared
//! neighbours gets the same next-hop list towards either. Such hosts form a *class* (in a
//! fat tree: the hosts of one edge switch), one search per class fills the table for all of
//! them, and only two kinds of entry are per host:
//! - at a neighbour of the destination, the ports back to it (its *down* ports, read off
//!   the destination's own adjacency: the search's first step);
//! - at the class's first member when it has a row of its own (a host with several
//!   neighbours), the list towards the other members: a second search, from the class's
//!   second member, supplies it.

use std::collections::HashMap;

use super::grouper::Grouper;
use super::{Routes, ATTACH, NOT_A_HOST, NO_ROW};
use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId};
use crate::topology::Topology;

const UNSEEN: u32 = u32::MAX;

/// Neighbour lists in visiting order, flat: `(neighbour, the neighbour's port back to us)`.
pub(super) struct Adjacency {
    start: Vec<u32>,
    edges: Vec<(NodeId, PortId)>,
}

impl Adjacency {
    /// Neighbours over the links for which `up(link index)` holds.
    pub(super) fn new(topo: &Topology, order: super::NeighborOrder, up: &dyn Fn(usize) -> bool) -> Adjacency {
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
                super::NeighborOrder::Ascending => list.sort_by_key(|&(n, p)| (n, p)),
                super::NeighborOrder::Ns3 => {
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

    /// The same lists without the neighbours for which `drop(node)` holds.
    pub(super) fn without(&self, drop: impl Fn(NodeId) -> bool) -> Adjacency {
        let mut start = Vec::with_capacity(self.start.len());
        let mut edges = Vec::new();
        for n in 0..self.start.len() - 1 {
            start.push(edges.len() as u32);
            edges.extend(self.of(NodeId::new(n)).iter().filter(|&&(nb, _)| !drop(nb)));
        }
        start.push(edges.len() as u32);
        Adjacency { start, edges }
    }

    pub(super) fn of(&self, n: NodeId) -> &[(NodeId, PortId)] {
        &self.edges[self.start[n.idx()] as usize..self.start[n.idx() + 1] as usize]
    }

    /// `n`'s distinct neighbours in first-visit order: the order its search queues them.
    fn distinct(&self, n: NodeId) -> Vec<NodeId> {
        let mut out: Vec<NodeId> = Vec::new();
        for &(nb, _) in self.of(n) {
            if !out.contains(&nb) {
                out.push(nb);
            }
        }
        out
    }
}

/// Reusable buffers of one route search.
pub(super) struct Search {
    dist: Vec<u32>,
    /// Nodes whose `dist` the last search set (reset before the next one).
    touched: Vec<NodeId>,
    queue: Vec<NodeId>,
    /// `(node, egress port)` next hops in discovery order.
    found: Vec<(NodeId, PortId)>,
    /// Per-node counters of the counting sort (all zeros between uses).
    cursor: Vec<u32>,
    /// The distinct nodes of `found`, and the start of each one's group in `sorted`.
    nodes: Vec<(NodeId, u32)>,
    /// `found`'s ports grouped by node.
    sorted: Vec<PortId>,
}

impl Search {
    pub(super) fn new(v: usize) -> Search {
        Search {
            dist: vec![UNSEEN; v],
            touched: Vec::new(),
            queue: Vec::new(),
            found: Vec::new(),
            cursor: vec![0; v],
            nodes: Vec::new(),
            sorted: Vec::new(),
        }
    }

    /// Breadth-first search from `dst` over `adj`; fills `dist` and `found`. Only the
    /// nodes it reaches are touched, so a search costs the switches' links, not the nodes.
    fn run(&mut self, topo: &Topology, adj: &Adjacency, dst: NodeId) {
        for n in self.touched.drain(..) {
            self.dist[n.idx()] = UNSEEN;
        }
        self.queue.clear();
        self.found.clear();
        self.dist[dst.idx()] = 0;
        self.touched.push(dst);
        self.queue.push(dst);
        let mut i = 0;
        while let Some(&now) = self.queue.get(i) {
            i += 1;
            let d = self.dist[now.idx()];
            for &(nb, back) in adj.of(now) {
                if self.dist[nb.idx()] == UNSEEN {
                    self.dist[nb.idx()] = d + 1;
                    self.touched.push(nb);
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

    /// Groups `found` by node with a counting sort, which keeps the discovery order within
    /// a node, and calls `each(node, ports)` for every node with next hops.
    fn grouped(&mut self, mut each: impl FnMut(usize, &[PortId]) -> Result<()>) -> Result<()> {
        let Search { found, cursor, nodes, sorted, .. } = self;
        nodes.clear();
        for &(n, _) in found.iter() {
            if cursor[n.idx()] == 0 {
                nodes.push((n, 0));
            }
            cursor[n.idx()] += 1;
        }
        let mut offset = 0;
        for (n, start) in nodes.iter_mut() {
            *start = offset;
            (offset, cursor[n.idx()]) = (offset + cursor[n.idx()], offset);
        }
        sorted.resize(found.len(), PortId(0));
        for &(n, p) in found.iter() {
            sorted[cursor[n.idx()] as usize] = p;
            cursor[n.idx()] += 1;
        }
        // cursor[n] is now the end of node n's group.
        for &(n, start) in nodes.iter() {
            let end = std::mem::take(&mut cursor[n.idx()]);
            each(n.idx(), &sorted[start as usize..end as usize])?;
        }
        Ok(())
    }
}

/// Destination classes of the hosts (in ascending host order, so a class's first member
/// is its lowest id).
pub(super) struct Classes {
    /// Class of each node (`NOT_A_HOST` for switches).
    pub(super) of: Vec<u32>,
    /// Each class's first and (if any) second member.
    pub(super) members: Vec<(NodeId, Option<NodeId>)>,
    /// Each class's shared neighbours, concatenated (`at[c]..at[c + 1]`).
    attach: Vec<NodeId>,
    at: Vec<u32>,
}

impl Classes {
    /// Class `c`'s shared neighbours, in the order its search queues them.
    pub(super) fn attachments(&self, c: usize) -> &[NodeId] {
        &self.attach[self.at[c] as usize..self.at[c + 1] as usize]
    }
}

pub(super) fn classes(topo: &Topology, adj: &Adjacency, hosts: &[NodeId]) -> Classes {
    let mut by_key: HashMap<Vec<NodeId>, u32> = HashMap::new();
    let mut c = Classes { of: vec![NOT_A_HOST; topo.len()], members: Vec::new(), attach: Vec::new(), at: vec![0] };
    for &h in hosts {
        let key = adj.distinct(h);
        let next = by_key.len() as u32;
        let class = *by_key.entry(key.clone()).or_insert(next);
        if class == next {
            c.members.push((h, None));
            c.attach.extend_from_slice(&key);
            c.at.push(c.attach.len() as u32);
        } else if c.members[class as usize].1.is_none() {
            c.members[class as usize].1 = Some(h);
        }
        c.of[h.idx()] = class;
    }
    c
}

/// A host whose links all lead to one switch (or to nothing) needs no row: its list is
/// its own ports to that switch towards every destination the switch reaches.
fn single_switch(topo: &Topology, adj: &Adjacency, h: NodeId) -> Option<Option<NodeId>> {
    let d = adj.distinct(h);
    match d.as_slice() {
        [] => Some(None),
        [s] if !topo.is_host(*s) => Some(Some(*s)),
        _ => None,
    }
}

impl Routes {
    pub(super) fn empty(
        topo: &Topology,
        order: super::NeighborOrder,
        hosts: Vec<NodeId>,
        class: &[u32],
        n_classes: usize,
    ) -> Routes {
        let mut rank = vec![NOT_A_HOST; topo.len()];
        for (i, h) in hosts.iter().enumerate() {
            rank[h.idx()] = i as u32;
        }
        Routes {
            order,
            selection: super::PathSelection::Ecmp,
            rank,
            hosts,
            class: class.to_vec(),
            n_classes,
            slot: Vec::new(),
            n_groups: 0,
            row: vec![NO_ROW; topo.len()],
            n_rows: 0,
            up: vec![(NO_ROW, 0, 0); topo.len()],
            down_at: Vec::new(),
            down: Vec::new(),
            first_down: vec![(NodeId::NONE, 0, 0); topo.len()],
            cells: Vec::new(),
            sub: Vec::new(),
            hops: Vec::new(),
            down_links: Vec::new(),
        }
    }

    /// Rows for switches and multi-homed hosts; uplinks for single-switch hosts; every
    /// host's down ports at each neighbour.
    pub(super) fn lay_out_hosts(&mut self, topo: &Topology, adj: &Adjacency) {
        for n in (0..topo.len()).map(NodeId::new) {
            match topo.is_host(n).then(|| single_switch(topo, adj, n)).flatten() {
                Some(Some(s)) => {
                    let start = self.hops.len() as u32;
                    self.hops.extend(adj.of(s).iter().filter(|&&(nb, _)| nb == n).map(|&(_, back)| back));
                    self.up[n.idx()] = (s.0, start, self.hops.len() as u32 - start);
                }
                Some(None) => {}
                None => {
                    self.row[n.idx()] = self.n_rows as u32;
                    self.n_rows += 1;
                }
            }
        }
        self.down_at.push(0);
        for &h in &self.hosts {
            for nb in adj.distinct(h) {
                let start = self.hops.len() as u32;
                self.hops.extend(adj.of(h).iter().filter(|&&(x, _)| x == nb).map(|&(_, back)| back));
                self.down.push((nb, start, self.hops.len() as u32 - start));
            }
            self.down_at.push(self.down.len() as u32);
            if let Some(&first) = self.down[self.down_at[self.down_at.len() - 2] as usize..].first() {
                self.first_down[h.idx()] = first;
            }
        }
    }

    /// One search per class fills its column of every row; the class's shared neighbours
    /// get the `ATTACH` mark (their lists are the destination's down ports). Columns go
    /// to the [`Grouper`] in class order, which merges them into groups when the table is
    /// larger than `dense_limit` entries.
    pub(super) fn fill_rows(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        cls: &Classes,
        strict: bool,
        dense_limit: usize,
    ) -> Result<()> {
        let (v, rows, nc) = (topo.len(), self.n_rows, self.n_classes);
        let mut groups = Grouper::new(rows, rows.saturating_mul(nc) <= dense_limit);
        let mut search = Search::new(v);
        // A host without a row (all its links to one switch) is a leaf of every search:
        // its lists are its `up` ports and its switch's down ports, so the searches skip it.
        let adj = &adj.without(|nb| topo.is_host(nb) && self.row[nb.idx()] == NO_ROW);
        let anchors = self.anchors();
        let mut last = vec![(0u32, 0u32); rows];
        let mut column = vec![(0u32, 0u32); rows];
        let mut class_slot = Vec::with_capacity(nc);
        let mut unreachable: Option<(NodeId, NodeId)> = None;
        for c in 0..nc {
            let (anchors, unreachable) = (&anchors, &mut unreachable);
            let check = |this: &Routes, search: &Search, first: NodeId| {
                // Every member sees the same unreached hosts (the first is reached from the others).
                if strict && anchors.iter().any(|a| search.dist[a.idx()] == UNSEEN) {
                    let src = this.hosts.iter().find(|&&h| !this.reached(search, h, first));
                    if let (Some(&src), true) = (src, unreachable.is_none_or(|(_, d)| first < d)) {
                        *unreachable = Some((src, first));
                    }
                }
            };
            self.class_column(topo, adj, cls, c, &mut search, &mut last, &mut column, check)?;
            class_slot.push(groups.add(&column)?);
        }
        self.finish_columns(groups, &class_slot);
        match unreachable {
            Some((src, dst)) => Err(Error::Topology(format!(
                "host {src} cannot reach host {dst}: no path through switches (disconnected topology)"
            ))),
            None => Ok(()),
        }
    }
}

impl Routes {
    /// Closes the last group and gives each host its column (`class_slot`: per class).
    pub(super) fn finish_columns(&mut self, mut groups: Grouper, class_slot: &[u32]) {
        groups.close();
        (self.n_groups, self.cells, self.sub) = groups.into_table();
        self.slot =
            self.class.iter().map(|&c| if c == NOT_A_HOST { NOT_A_HOST } else { class_slot[c as usize] }).collect();
    }

    /// Class `c`'s column of every row: one search from its first member (a second, from
    /// its second member, for the first member's own row when it has one), `ATTACH` at the
    /// class's shared neighbours; `check` sees the first search. Lists go to `hops`
    /// (`store`, reusing each row's `last` span when equal).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn class_column(
        &mut self,
        topo: &Topology,
        adj: &Adjacency,
        cls: &Classes,
        c: usize,
        search: &mut Search,
        last: &mut [(u32, u32)],
        column: &mut [(u32, u32)],
        check: impl FnOnce(&Routes, &Search, NodeId),
    ) -> Result<()> {
        column.fill((0, 0));
        let (first, second) = cls.members[c];
        search.run(topo, adj, first);
        check(self, search, first);
        let row = &self.row;
        let (hops, cols) = (&mut self.hops, &mut *column);
        search.grouped(|node, group| {
            if row[node] != NO_ROW {
                let r = row[node] as usize;
                cols[r] = store(hops, &mut last[r], group)?;
            }
            Ok(())
        })?;
        if let (Some(other), true) = (second, self.row[first.idx()] != NO_ROW) {
            // The first member's own row towards the rest of its class.
            search.run(topo, adj, other);
            let (want, r) = (first.idx(), self.row[first.idx()] as usize);
            let hops = &mut self.hops;
            search.grouped(|node, group| {
                if node == want {
                    cols[r] = store(hops, &mut last[r], group)?;
                }
                Ok(())
            })?;
        }
        for s in cls.attachments(c) {
            if self.row[s.idx()] != NO_ROW {
                column[self.row[s.idx()] as usize] = (0, ATTACH);
            }
        }
        Ok(())
    }

    /// The nodes every search must reach for every host to be reached: the switches of
    /// hosts without a row, and the hosts with one.
    fn anchors(&self) -> Vec<NodeId> {
        let mut a: Vec<NodeId> = self
            .hosts
            .iter()
            .map(|&h| match self.up[h.idx()] {
                (s, _, _) if self.row[h.idx()] == NO_ROW && s != NO_ROW => NodeId(s),
                _ => h,
            })
            .collect();
        a.sort_unstable();
        a.dedup();
        a
    }

    /// Whether the search from `root` reached host `h` (directly, or through its switch
    /// when the search skipped it).
    fn reached(&self, search: &Search, h: NodeId, root: NodeId) -> bool {
        match self.up[h.idx()] {
            _ if h == root || search.dist[h.idx()] != UNSEEN => true,
            (s, _, _) if self.row[h.idx()] == NO_ROW && s != NO_ROW => search.dist[s as usize] != UNSEEN,
            _ => false,
        }
    }
}

/// Stores one row's list for one class. A row whose list equals its list for the previous
/// class (`last`) reuses that span: neighbouring classes mostly share their routes (a
/// switch's uplinks), which keeps `hops` small.
pub(super) fn store(hops: &mut Vec<PortId>, last: &mut (u32, u32), group: &[PortId]) -> Result<(u32, u32)> {
    let (ls, ll) = *last;
    if hops[ls as usize..(ls + ll) as usize] != *group {
        let at = u32::try_from(hops.len() + group.len())
            .map_err(|_| Error::Topology("more than 2^32 next-hop entries".into()))?;
        *last = (at - group.len() as u32, group.len() as u32);
        hops.extend_from_slice(group);
    }
    Ok(*last)
}
