//! The largest base RTT over all ordered host pairs, each on its first path: the
//! reference's `maxRtt`, which global windows (HPCC's default) size every QP's window by.
//!
//! Walking the first path of every pair is `hosts^2` walks, hours at 100,000 hosts. The
//! routing classes make it linear in practice: towards the hosts of one destination class
//! every node's first hop is the same until the path reaches one of the class's shared
//! neighbours `E`; only the last link, `E` to the destination, is the destination's own.
//! So per class one memoised walk per node gives each source's cost up to `E`, equal costs
//! are pooled (a fat tree has three per class: same edge, same pod, another pod), and each
//! destination adds its last link to the few pooled costs that can be largest. The cost
//! of a path is two sums (propagation in ps, serialisation in whole ns per link) and the
//! RTT grows with both, so only costs not dominated in both sums can be largest (the
//! *front*); the second front covers a destination that is itself the only source of a
//! front cost (a host is never its own source). Results equal the plain all-pairs walk
//! bit for bit; the tests compare them on the builders and random graphs.

use std::collections::HashMap;

use crate::ids::{NodeId, PortId};
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;

/// A stretch of path: summed propagation (ps) and summed per-link serialisation (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Cost {
    prop_ps: u128,
    ser_ns: u128,
}

impl Cost {
    fn link(topo: &Topology, p: PortId, mtu: u64) -> Cost {
        let ser = u128::from(mtu) * 8 * 1_000_000_000 / u128::from(topo.port_rate(p).bps());
        Cost { prop_ps: u128::from(topo.port_delay(p).ps()), ser_ns: ser }
    }
    fn plus(self, o: Cost) -> Cost {
        Cost { prop_ps: self.prop_ps + o.prop_ps, ser_ns: self.ser_ns + o.ser_ns }
    }
    /// `ideal::base_rtt`'s formula on the sums.
    fn rtt_ns(self) -> u128 {
        2 * (self.prop_ps / 1_000) + self.ser_ns
    }
}

/// Where a source's first path towards a class meets the class (`E`) and its cost so far.
type Reach = Option<(NodeId, Cost)>;

/// Memoised first-path walks towards one class.
struct Walker<'a> {
    topo: &'a Topology,
    routes: &'a Routes,
    mtu: u64,
    epoch: u32,
    stamp: Vec<u32>,
    memo: Vec<Reach>,
    stack: Vec<(NodeId, PortId)>,
}

impl Walker<'_> {
    /// From `n` along first hops towards `target` until the node next to it.
    fn reach(&mut self, n: NodeId, target: NodeId) -> Reach {
        let mut at = n;
        let mut found = loop {
            if self.stamp[at.idx()] == self.epoch {
                break self.memo[at.idx()];
            }
            let Some(&p) = self.routes.next_hops(at, target).first() else {
                break None;
            };
            let next = self.topo.ports[p.idx()].peer_node;
            if next == target {
                break Some((at, Cost::default()));
            }
            // A first path visits each node once; a longer walk means no path.
            if self.stack.len() > self.topo.len() {
                break None;
            }
            self.stack.push((at, p));
            at = next;
        };
        self.stamp[at.idx()] = self.epoch;
        self.memo[at.idx()] = found;
        while let Some((x, p)) = self.stack.pop() {
            found = found.map(|(e, c)| (e, c.plus(Cost::link(self.topo, p, self.mtu))));
            self.stamp[x.idx()] = self.epoch;
            self.memo[x.idx()] = found;
        }
        found
    }
}

/// How a host enters the fabric: hosts whose links all go to one switch take their first
/// port to it towards every destination, so hosts on one switch over equal links are
/// counted once.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    /// To this switch, over a link of this cost.
    Uplink(NodeId, Cost),
    /// A host with several neighbours: walked on its own.
    Own(NodeId),
}

fn source_of(topo: &Topology, routes: &Routes, mtu: u64, h: NodeId, any_other: NodeId) -> Source {
    let node = &topo.nodes[h.idx()];
    let peer = |p: &PortId| topo.ports[p.idx()].peer_node;
    let one_switch = node.ports.first().map(peer).filter(|&s| !topo.is_host(s));
    match (one_switch, routes.next_hops(h, any_other).first()) {
        (Some(s), Some(&p)) if node.ports.iter().all(|q| peer(q) == s) => Source::Uplink(s, Cost::link(topo, p, mtu)),
        _ => Source::Own(h),
    }
}

/// The largest base RTT (see [`base_rtt`](super::ideal::base_rtt)) over all ordered pairs of distinct hosts,
/// each on its [`first_path`](Routes::first_path); pairs without a path count as 0.
pub fn max_base_rtt(topo: &Topology, routes: &Routes, mtu_payload: u64) -> Time {
    let hosts: Vec<NodeId> = topo.hosts().collect();
    if hosts.len() < 2 {
        return Time::ZERO;
    }
    let mut members: Vec<Vec<NodeId>> = Vec::new();
    for &h in &hosts {
        let c = routes.class_of(h).expect("a host has a class");
        members.resize(members.len().max(c + 1), Vec::new());
        members[c].push(h);
    }
    let source: Vec<Source> = hosts
        .iter()
        .map(|&h| source_of(topo, routes, mtu_payload, h, if h == hosts[0] { hosts[1] } else { hosts[0] }))
        .collect();
    let mut types: HashMap<Source, u64> = HashMap::new();
    for s in &source {
        *types.entry(*s).or_default() += 1;
    }
    let mut walker = Walker {
        topo,
        routes,
        mtu: mtu_payload,
        epoch: 0,
        stamp: vec![0; topo.len()],
        memo: vec![None; topo.len()],
        stack: Vec::new(),
    };
    let mut best = 0u128;
    for class in members.iter().filter(|m| !m.is_empty()) {
        walker.epoch += 1;
        best = best.max(class_max(&mut walker, class, &types, &source));
    }
    Time::from_ns(u64::try_from(best).unwrap_or(u64::MAX))
}

/// A source's cost towards `class` (whose members are not itself): where it meets the
/// class and the cost so far.
fn source_reach(w: &mut Walker<'_>, s: Source, class: &[NodeId]) -> Reach {
    match s {
        Source::Uplink(switch, up) => w.reach(switch, class[0]).map(|(e, c)| (e, c.plus(up))),
        Source::Own(h) => {
            // Towards a member other than itself: all give the same first path up to E.
            let target = if h == class[0] { *class.get(1)? } else { class[0] };
            w.reach(h, target)
        }
    }
}

/// The largest RTT towards the hosts of `class`; `source` is every host's, by rank.
fn class_max(w: &mut Walker<'_>, class: &[NodeId], types: &HashMap<Source, u64>, source: &[Source]) -> u128 {
    // Pooled costs: (E, cost) -> how many sources.
    let mut pooled: HashMap<(NodeId, Cost), u64> = HashMap::new();
    for (&s, &count) in types {
        if let Source::Own(h) = s {
            if class.len() == 1 && h == class[0] {
                continue; // the only member: no destination but itself
            }
        }
        if let Some(key) = source_reach(w, s, class) {
            *pooled.entry(key).or_default() += count;
        }
    }
    let candidates = fronts(&pooled);
    let mut best = 0u128;
    for &d in class {
        let own = w.routes.host_rank(d).and_then(|r| source_reach(w, source[r], class));
        for &(key, count) in &candidates {
            if count == 1 && Some(key) == own {
                continue; // d is this cost's only source
            }
            let (e, cost) = key;
            if let Some(&last) = w.routes.next_hops(e, d).first() {
                best = best.max(cost.plus(Cost::link(w.topo, last, w.mtu)).rtt_ns());
            }
        }
    }
    best
}

/// A pooled cost: (meeting node, cost so far) and how many sources have it.
type Pooled = ((NodeId, Cost), u64);

/// Per meeting node, the costs on the first and second Pareto fronts of the two sums.
fn fronts(pooled: &HashMap<(NodeId, Cost), u64>) -> Vec<Pooled> {
    let mut all: Vec<Pooled> = pooled.iter().map(|(&k, &n)| (k, n)).collect();
    // By meeting node, then propagation and serialisation both descending.
    all.sort_by(|a, b| (a.0 .0, b.0 .1).cmp(&(b.0 .0, a.0 .1)));
    let mut out = Vec::new();
    for group in all.chunk_by(|a, b| a.0 .0 == b.0 .0) {
        let (first, rest) = front(group);
        out.extend(first);
        out.extend(front(&rest).0);
    }
    out
}

/// Splits costs sorted by descending (prop, ser) into the undominated ones and the rest.
fn front(sorted: &[Pooled]) -> (Vec<Pooled>, Vec<Pooled>) {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let mut best_ser: Option<u128> = None;
    for &x in sorted {
        if best_ser.is_none_or(|b| x.0 .1.ser_ns > b) {
            best_ser = Some(x.0 .1.ser_ns);
            on.push(x);
        } else {
            off.push(x);
        }
    }
    (on, off)
}

/// The plain all-pairs walk that [`max_base_rtt`] replaces (for tests).
#[cfg(test)]
fn max_base_rtt_all_pairs(topo: &Topology, routes: &Routes, mtu_payload: u64) -> Time {
    use super::ideal;
    let hosts: Vec<NodeId> = topo.hosts().collect();
    let mut best = Time::ZERO;
    for &a in &hosts {
        for &b in hosts.iter().filter(|&&b| b != a) {
            best = best.max(ideal::base_rtt(topo, &routes.first_path(topo, a, b), mtu_payload));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::{self, LinkParams};
    use crate::topology::routing::{fixtures, NeighborOrder};
    use crate::units::Rate;

    const US: Time = Time::from_us(1);

    fn check(t: &Topology, what: &str) {
        for order in [NeighborOrder::Ascending, NeighborOrder::Ns3] {
            let r = Routes::compute(t, order).unwrap();
            for mtu in [1000, 4000] {
                assert_eq!(max_base_rtt(t, &r, mtu), max_base_rtt_all_pairs(t, &r, mtu), "{what} {order:?} mtu {mtu}");
            }
        }
    }

    #[test]
    fn equals_the_all_pairs_walk_on_the_builders_and_the_reference() {
        let g = Rate::gbps(100);
        check(&fixtures::reference_fat_tree(), "reference fat tree");
        check(&builders::fat_tree(4, g, Rate::gbps(400), US).unwrap(), "fat tree k=4");
        check(&builders::leaf_spine(3, 2, 4, g, Rate::gbps(40), US).unwrap(), "leaf-spine");
        check(&builders::star(2, g, US).unwrap(), "two hosts");
        let p = LinkParams::new(g, Time::from_ns(1500));
        check(&builders::dumbbell_parallel(3, p, &[p, LinkParams::new(Rate::gbps(10), US)]).unwrap(), "dumbbell");
        // The reference's own number on its fat tree (ideal.rs checks it against its run).
        let t = fixtures::reference_fat_tree();
        assert_eq!(max_base_rtt(&t, &Routes::compute(&t, NeighborOrder::Ns3).unwrap(), 1000), Time::from_ns(12_240));
    }

    /// Links of random rates and delays (sub-ns parts exercise the truncation of the summed
    /// propagation), hosts on one or two switches, some tied to another host.
    #[test]
    fn equals_the_all_pairs_walk_on_random_graphs() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut below = |n: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) % n as u64) as usize
        };
        let mut checked = 0;
        for seed in 0..60 {
            let (hosts, switches) = (2 + below(8), 1 + below(5));
            let ids: Vec<NodeId> = (hosts..hosts + switches).map(NodeId::new).collect();
            let mut t = Topology::new(hosts + switches, &ids);
            let link = |t: &mut Topology, a: usize, b: usize, r: usize, d: usize| {
                let rate = Rate::gbps([10, 25, 40, 100][r % 4]);
                t.add_link(NodeId::new(a), NodeId::new(b), rate, Time::from_ps(300 + 777 * d as u64), 0.0).unwrap();
            };
            for h in 0..hosts {
                for _ in 0..1 + below(2) {
                    let (s, r, d) = (hosts + below(switches), below(4), below(5));
                    link(&mut t, h, s, r, d);
                }
                if h > 0 && below(8) == 0 {
                    let (o, r, d) = (below(h), below(4), below(5));
                    link(&mut t, h, o, r, d);
                }
            }
            for a in 0..switches {
                for b in a + 1..switches {
                    if below(3) > 0 {
                        let (r, d) = (below(4), below(5));
                        link(&mut t, hosts + a, hosts + b, r, d);
                    }
                }
            }
            if Routes::compute(&t, NeighborOrder::Ascending).is_ok() {
                check(&t, &format!("random graph {seed}"));
                checked += 1;
            }
        }
        // Most draws are connected (the others are skipped: no all-pairs maximum to compare).
        assert!(checked >= 30, "only {checked} connected graphs");
    }
}
