use super::*;
use crate::topology::builders::{dumbbell, fat_tree, star, LinkParams};
use crate::topology::default_host_ip;
use crate::topology::links_between;
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
    assert!(Routes::compute(&switches_only, NeighborOrder::Ascending).unwrap_err().to_string().contains("no hosts"));
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

/// One plain breadth-first search from `dst` (never through another host): every node's
/// list towards it, `[node]`.
fn search_lists(topo: &Topology, adj: &build::Adjacency, dst: NodeId) -> Vec<Vec<PortId>> {
    let mut dist = vec![u32::MAX; topo.len()];
    let mut lists = vec![Vec::new(); topo.len()];
    let mut queue = std::collections::VecDeque::from([dst]);
    dist[dst.idx()] = 0;
    while let Some(now) = queue.pop_front() {
        for &(nb, back) in adj.of(now) {
            if dist[nb.idx()] == u32::MAX {
                dist[nb.idx()] = dist[now.idx()] + 1;
                if !topo.is_host(nb) {
                    queue.push_back(nb);
                }
            }
            if dist[nb.idx()] == dist[now.idx()] + 1 {
                lists[nb.idx()].push(back);
            }
        }
    }
    lists
}

/// The tables the class scheme replaced, built the plain way: one search per destination
/// host, every node's list read off it. Returns `[dst rank][node]`.
fn per_host_tables(topo: &Topology, order: NeighborOrder, up: &dyn Fn(usize) -> bool) -> Vec<Vec<Vec<PortId>>> {
    let adj = build::Adjacency::new(topo, order, up);
    topo.hosts().map(|dst| search_lists(topo, &adj, dst)).collect()
}

/// Both the dense table and the grouped one (forced: a dense limit of 0) give every
/// (node, destination) the per-host search's list.
fn assert_same_as_per_host(topo: &Topology, up: &dyn Fn(usize) -> bool, what: &str) {
    for order in [NeighborOrder::Ascending, NeighborOrder::Ns3] {
        let want = per_host_tables(topo, order, up);
        for dense_limit in [usize::MAX, 0] {
            let r = Routes::build_with(topo, order, up, false, dense_limit).unwrap();
            for (rank, dst) in topo.hosts().enumerate() {
                for (n, list) in want[rank].iter().enumerate() {
                    let node = NodeId::new(n);
                    let got = r.next_hops(node, dst);
                    assert_eq!(got, list.as_slice(), "{what} {order:?} limit {dense_limit}: {node} -> {dst}");
                }
            }
        }
    }
}

/// A tiny deterministic generator (64-bit LCG) for the random topologies below.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn class_tables_equal_per_host_tables_on_the_builders() {
    let p = LinkParams::new(G100, US);
    let all = |_| true;
    let cases = [
        ("fat tree k=4", fat_tree(4, G100, Rate::gbps(400), US).unwrap()),
        ("fat tree k=6", fat_tree(6, G100, G100, US).unwrap()),
        ("leaf-spine", crate::topology::builders::leaf_spine(3, 2, 4, G100, G100, US).unwrap()),
        ("parallel dumbbell", crate::topology::builders::dumbbell_parallel(2, p, &[p, p, p]).unwrap()),
        ("full mesh", crate::topology::builders::full_mesh(4, 2, G100, US).unwrap()),
        ("star", star(5, G100, US).unwrap()),
        ("reference fat tree", fixtures::reference_fat_tree()),
    ];
    for (what, t) in &cases {
        assert_same_as_per_host(t, &all, what);
    }
    // After failures: an aggregation-core link, an edge-aggregation link and a host's only link.
    let (t, _) = k4();
    let down = [47usize, 20, 5];
    assert_same_as_per_host(&t, &|l| !down.contains(&l), "fat tree k=4 with failures");
}

#[test]
fn class_tables_equal_per_host_tables_on_random_graphs() {
    // Hosts on one to three switches (some over parallel links, some to another host),
    // switches joined at random; some links down. Multi-homed hosts exercise the rows of
    // hosts and the second search of a class's first member.
    for seed in 1..40u64 {
        let mut g = Lcg(seed);
        let (hosts, switches) = (3 + g.below(8), 2 + g.below(5));
        let ids: Vec<NodeId> = (hosts..hosts + switches).map(NodeId::new).collect();
        let mut t = Topology::new(hosts + switches, &ids);
        for h in 0..hosts {
            for _ in 0..1 + g.below(3) {
                let reach = switches.min(2 + g.below(switches));
                let s = hosts + g.below(reach);
                t.add_link(NodeId::new(h), NodeId::new(s), G100, US, 0.0).unwrap();
            }
            if h > 0 && g.below(6) == 0 {
                t.add_link(NodeId::new(h), NodeId::new(g.below(h)), G100, US, 0.0).unwrap();
            }
        }
        for a in 0..switches {
            for b in a + 1..switches {
                for _ in 0..g.below(3) {
                    t.add_link(NodeId::new(hosts + a), NodeId::new(hosts + b), G100, US, 0.0).unwrap();
                }
            }
        }
        let links = t.links.len();
        let down: Vec<usize> = (0..g.below(3)).map(|_| g.below(links)).collect();
        assert_same_as_per_host(&t, &|_| true, &format!("seed {seed}"));
        assert_same_as_per_host(&t, &|l| !down.contains(&l), &format!("seed {seed} with {down:?} down"));
    }
}

#[test]
fn a_fat_tree_has_one_class_per_edge_switch() {
    let t = fat_tree(8, G100, G100, US).unwrap();
    let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
    assert_eq!(r.n_classes(), 8 * 4);
    // Rows only for the 80 switches: 80 x 32 spans of 8 B (20 KiB) plus a few words per
    // node, where one span per (node, host) took 208 x 128 x 8 B = 208 KiB.
    assert_eq!(r.cells.len(), 80 * 32);
    assert!(r.table_bytes() < 208 * 128 * 8 / 5, "{}", r.table_bytes());
}

#[test]
fn a_grouped_fat_tree_has_one_column_per_pod() {
    // Forced to group: the 4 classes of a pod differ only at the pod's 4 edge and 4
    // aggregation switches, a class of another pod at every core too.
    let k = 8;
    let t = fat_tree(k, G100, G100, US).unwrap();
    let r = Routes::build_with(&t, NeighborOrder::Ascending, &|_| true, true, 0).unwrap();
    assert_eq!((r.n_classes(), r.n_groups()), (k * k / 2, k));
    assert_eq!(r.cells.len(), 80 * k);
    assert_eq!(r.sub.len(), k * k * (k / 2), "pods x their switches x their classes");
    let dense = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
    assert!(r.table_bytes() < dense.table_bytes());
}

#[test]
fn pick_is_the_remainder() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(16);
    for n in 1..=70usize {
        for key in [0usize, 1, n - 1, n, n + 1, u32::MAX as usize, u32::MAX as usize - 1, 1 << 40] {
            assert_eq!(super::pick(key, n), key % n, "{key} % {n}");
        }
        for _ in 0..20_000 {
            let key = rng.gen::<u32>() as usize;
            assert_eq!(super::pick(key, n), key % n, "{key} % {n}");
        }
    }
}

/// Every (node, destination) list of `got` against a build over the same links.
fn assert_same_lists(t: &Topology, got: &Routes, want: &Routes, what: &str) {
    for dst in t.hosts() {
        for node in (0..t.len()).map(NodeId::new) {
            assert_eq!(got.next_hops(node, dst), want.next_hops(node, dst), "{what}: {node} -> {dst}");
        }
    }
}

#[test]
fn rerouting_after_a_failure_gives_the_lists_of_a_full_recompute() {
    let mut cases = vec![
        ("fat tree k=4", fat_tree(4, G100, Rate::gbps(400), US).unwrap()),
        ("fat tree k=6", fat_tree(6, G100, G100, US).unwrap()),
        ("leaf-spine", crate::topology::builders::leaf_spine(3, 2, 4, G100, G100, US).unwrap()),
        ("full mesh", crate::topology::builders::full_mesh(4, 2, G100, US).unwrap()),
        ("reference fat tree", fixtures::reference_fat_tree()),
    ];
    // Single-homed hosts on random switch graphs (some parallel links between switches).
    for seed in 1..12u64 {
        let mut g = Lcg(seed);
        let (hosts, switches) = (4 + g.below(8), 3 + g.below(4));
        let ids: Vec<NodeId> = (hosts..hosts + switches).map(NodeId::new).collect();
        let mut t = Topology::new(hosts + switches, &ids);
        for h in 0..hosts {
            t.add_link(NodeId::new(h), NodeId::new(hosts + g.below(switches)), G100, US, 0.0).unwrap();
        }
        for a in 0..switches {
            for b in a + 1..switches {
                for _ in 0..g.below(3) {
                    t.add_link(NodeId::new(hosts + a), NodeId::new(hosts + b), G100, US, 0.0).unwrap();
                }
            }
        }
        cases.push(("random", t));
    }
    for (what, t) in &cases {
        let between: Vec<usize> =
            (0..t.links.len()).filter(|&l| !t.is_host(t.links[l].a) && !t.is_host(t.links[l].b)).collect();
        for order in [NeighborOrder::Ascending, NeighborOrder::Ns3] {
            let mut updated = 0;
            for dense_limit in [usize::MAX, 0] {
                let full = |down: &[usize]| Routes::build_with(t, order, &|l| !down.contains(&l), false, usize::MAX);
                for (i, &l) in between.iter().enumerate() {
                    let mut r = Routes::build_with(t, order, &|_| true, false, dense_limit).unwrap();
                    let work = r.reroute(t, &|x| x != l).unwrap();
                    updated += usize::from(!work.rebuilt && work.patched > 0);
                    let tag = format!("{what} {order:?} limit {dense_limit} link {l} down");
                    assert_same_lists(t, &r, &full(&[l]).unwrap(), &tag);
                    // A second failure on top of the first, then the first link back.
                    let m = between[(i * 7 + 3) % between.len()];
                    if m == l {
                        continue;
                    }
                    r.reroute(t, &|x| x != l && x != m).unwrap();
                    assert_same_lists(t, &r, &full(&[l, m]).unwrap(), &format!("{tag}, then {m}"));
                    assert!(r.reroute(t, &|x| x != m).unwrap().rebuilt);
                    assert_same_lists(t, &r, &full(&[m]).unwrap(), &format!("{tag}, then {m}, {l} back"));
                }
            }
            // The updates themselves were exercised, not only the rebuilds they may fall back on
            // (a small mesh or random graph may need most classes searched at every failure).
            let tiered = what.contains("fat tree") || what.contains("leaf");
            assert!(updated > 0 || !tiered, "{what} {order:?}: every failure rebuilt the table");
        }
    }
}

#[test]
fn a_fat_tree_failure_searches_at_most_one_class_in_most_cases() {
    // k = 8: hosts 0..128, edges 128..160, aggregations 160..192, cores 192..208.
    let t = fat_tree(8, G100, G100, US).unwrap();
    let r0 = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
    let link = |a: u32, b: u32| links_between(&t, NodeId(a), NodeId(b))[0].idx();
    let update = |l: usize| {
        let mut r = r0.clone();
        let work = r.reroute(&t, &|x| x != l).unwrap();
        assert_same_lists(&t, &r, &Routes::compute_without_down_links(&t, r.order(), &|x| x != l).unwrap(), "k=8");
        work
    };
    // Edge 128 - aggregation 160: only the edge's own class is searched again, the other
    // 31 classes change one row (the edge's uplinks lose the aggregation).
    let w = update(link(128, 160));
    assert_eq!((w.rebuilt, w.searched, w.patched), (false, 1, 31), "{w:?}");
    // Aggregation 160 - its second core (193): the 28 classes outside the pod change the
    // aggregation's row (it loses the core); the pod's 4 classes are searched again (the
    // core reached the pod through this aggregation alone).
    let w = update(link(160, 193));
    assert_eq!((w.rebuilt, w.searched, w.patched), (false, 4, 28), "{w:?}");
    // Its first core (192) is the first parent the aggregation hears from, and the pod's
    // edges list the aggregation: every class would be searched again (the documented worst
    // case), so the table is rebuilt whole.
    let w = update(link(160, 192));
    assert_eq!((w.rebuilt, w.searched, w.patched), (true, 0, 0), "{w:?}");
}

#[test]
fn clos_fabrics_are_recognised_by_their_wiring_alone() {
    use super::clos::Clos;
    use crate::topology::builders::leaf_spine;
    for k in [2, 4, 6, 10] {
        assert_eq!(Clos::recognise(&fat_tree(k, G100, G100, US).unwrap()), Some(Clos::FatTree { k }));
    }
    let ls = leaf_spine(5, 3, 2, G100, G100, US).unwrap();
    assert_eq!(Clos::recognise(&ls), Some(Clos::LeafSpine { leaves: 5, spines: 3, per_leaf: 2 }));
    // Anything else takes the search: other builders, a fat tree with a link added.
    assert_eq!(Clos::recognise(&star(4, G100, US).unwrap()), None);
    assert_eq!(Clos::recognise(&crate::topology::builders::full_mesh(4, 2, G100, US).unwrap()), None);
    let mut t = fat_tree(4, G100, G100, US).unwrap();
    t.add_link(NodeId(16), NodeId(17), G100, US, 0.0).unwrap();
    assert_eq!(Clos::recognise(&t), None);
}

#[test]
fn clos_tables_equal_the_per_host_search() {
    // `assert_same_as_per_host` builds through `build_with`, which takes the closed form for
    // these (Ascending order, every link up) and the search for Ns3: both against the plain
    // per-host search, dense and grouped.
    use crate::topology::builders::leaf_spine;
    let all = |_| true;
    for k in [2, 4, 8, 10] {
        assert_same_as_per_host(&fat_tree(k, G100, G100, US).unwrap(), &all, &format!("fat tree k={k}"));
    }
    for (leaves, spines, per_leaf) in [(1, 1, 3), (2, 1, 1), (4, 3, 2), (7, 5, 3), (3, 8, 1)] {
        let t = leaf_spine(leaves, spines, per_leaf, G100, G100, US).unwrap();
        assert_same_as_per_host(&t, &all, &format!("leaf-spine {leaves}x{spines}x{per_leaf}"));
    }
}

#[test]
fn clos_tables_equal_the_search_on_a_larger_fat_tree() {
    // k = 24 (3,456 hosts, 720 switches), grouped: every node's list towards a sample of
    // destinations in every pod, against a plain breadth-first search from each.
    let k = 24;
    let t = fat_tree(k, G100, G100, US).unwrap();
    let r = Routes::build_with(&t, NeighborOrder::Ascending, &|_| true, true, 0).unwrap();
    let adj = build::Adjacency::new(&t, NeighborOrder::Ascending, &|_| true);
    for dst in (0..k * k * k / 4).step_by(37).map(NodeId::new) {
        let lists = search_lists(&t, &adj, dst);
        for (n, list) in lists.iter().enumerate() {
            assert_eq!(r.next_hops(NodeId::new(n), dst), list.as_slice(), "node {n} -> {dst}");
        }
    }
}

#[test]
fn incremental_clos_fill_equals_the_whole_fill() {
    // The fill that rewrites only the rows a class can change against the one that writes
    // every row of every class: equal tables (cells, spans, next-hop lists, slots), dense and
    // grouped, on fat trees up to k = 74 (101,306 hosts, grouped by the default limit) and on
    // leaf-spines.
    use crate::topology::builders::leaf_spine;
    let same = |t: &Topology, limit: usize, what: &str| {
        let (whole, incremental) = (Routes::build_clos(t, limit, true), Routes::build_clos(t, limit, false));
        assert!(whole == incremental, "{what}, dense limit {limit}");
    };
    for k in [2, 4, 8, 16] {
        let t = fat_tree(k, G100, G100, US).unwrap();
        for limit in [0, DENSE_LIMIT] {
            same(&t, limit, &format!("fat tree k={k}"));
        }
    }
    for (leaves, spines, per_leaf) in [(1, 1, 3), (4, 3, 2), (7, 5, 3), (40, 8, 4)] {
        let t = leaf_spine(leaves, spines, per_leaf, G100, G100, US).unwrap();
        for limit in [0, DENSE_LIMIT] {
            same(&t, limit, &format!("leaf-spine {leaves}x{spines}x{per_leaf}"));
        }
    }
    let t = fat_tree(74, G100, G100, US).unwrap();
    same(&t, DENSE_LIMIT, "fat tree k=74");
    // And the tables `compute` gives are the incremental ones.
    assert!(Routes::compute(&t, NeighborOrder::Ascending).unwrap() == Routes::build_clos(&t, DENSE_LIMIT, false));
}
