//! Builders of the usual datacenter topologies, so that native scenarios need no topology
//! file.
//!
//! Every builder numbers the hosts first (`0..H`) and the switches after them, as the
//! reference's `fat.txt` does, so host ids are dense and equal to their rank. Links are
//! added host links first (host `i` owns link `i`, hence port `2i`), then switch-to-switch
//! links from the bottom layer up. Impossible parameters are typed errors naming the
//! parameter, never panics.

use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::topology::Topology;
use crate::units::{Rate, Time};

/// Largest number of hosts a builder makes: host `id`'s address `11.0.0.1 + id * 256`
/// ([`default_host_ip`](crate::topology::default_host_ip)) must fit in 32 bits, so the last
/// host is `255.255.255.1` (16,056,320 hosts).
pub const MAX_HOSTS: u64 = crate::topology::MAX_HOST_ID as u64 + 1;
/// Largest number of switches in one tier of a leaf-spine (a sanity bound).
const MAX_TIER: usize = 1 << 16;

/// Rate and propagation delay of one class of links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkParams {
    /// Line rate of both directions.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Time,
}

impl LinkParams {
    /// A link class of rate `rate` and one-way delay `delay`.
    pub const fn new(rate: Rate, delay: Time) -> LinkParams {
        LinkParams { rate, delay }
    }
}

fn bad(builder: &str, field: &str, msg: String) -> Error {
    Error::scenario(format!("{builder}.{field}"), msg)
}

fn check_rate(builder: &str, field: &str, rate: Rate) -> Result<()> {
    if rate.0 == 0 {
        return Err(bad(builder, field, "rate must be positive".into()));
    }
    Ok(())
}

fn check_count(builder: &str, field: &str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(bad(builder, field, "must be at least 1".into()));
    }
    Ok(())
}

/// Checks the host count against [`MAX_HOSTS`] and returns it.
fn host_total(builder: &str, field: &str, factors: &[usize]) -> Result<usize> {
    let total = factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f as u64));
    match total {
        Some(h) if h <= MAX_HOSTS => Ok(h as usize),
        _ => Err(bad(builder, field, format!("more than {MAX_HOSTS} hosts (the host address scheme's limit)"))),
    }
}

/// A topology of `hosts` hosts followed by `switches` switches, and no links yet.
fn skeleton(hosts: usize, switches: usize) -> Topology {
    let ids: Vec<NodeId> = (hosts..hosts + switches).map(NodeId::new).collect();
    Topology::new(hosts + switches, &ids)
}

fn link(t: &mut Topology, a: usize, b: usize, p: LinkParams) -> Result<()> {
    t.add_link(NodeId::new(a), NodeId::new(b), p.rate, p.delay, 0.0).map(|_| ())
}

/// Two switches joined by one bottleneck link, with `hosts_per_side` hosts on each.
///
/// Hosts `0..n` hang off switch `2n` (left), hosts `n..2n` off switch `2n+1` (right).
/// Links: host `i` is link `i`; the bottleneck is the last link.
pub fn dumbbell(hosts_per_side: usize, host: LinkParams, bottleneck: LinkParams) -> Result<Topology> {
    dumbbell_parallel(hosts_per_side, host, &[bottleneck])
}

/// A dumbbell whose two switches are joined by several parallel links, one per entry of
/// `bottlenecks` (the Virtuoso paper's testbed: two ToRs joined by up to 10 links). Each link is its
/// own next hop: the switches' next-hop lists hold them in this order on both sides, so
/// hop `k` is link `k` in either direction. Links: hosts first, then the bottlenecks.
pub fn dumbbell_parallel(hosts_per_side: usize, host: LinkParams, bottlenecks: &[LinkParams]) -> Result<Topology> {
    const B: &str = "dumbbell";
    check_count(B, "hosts_per_side", hosts_per_side)?;
    check_count(B, "bottleneck_links", bottlenecks.len())?;
    check_rate(B, "host_rate", host.rate)?;
    for b in bottlenecks {
        check_rate(B, "bottleneck_rate", b.rate)?;
    }
    let n = hosts_per_side;
    let h = host_total(B, "hosts_per_side", &[2, n])?;
    let mut t = skeleton(h, 2);
    for i in 0..h {
        link(&mut t, i, h + i / n, host)?;
    }
    for &b in bottlenecks {
        link(&mut t, h, h + 1, b)?;
    }
    Ok(t)
}

/// `hosts` hosts on one switch (node `hosts`), every link of rate `rate` and delay `delay`.
pub fn star(hosts: usize, rate: Rate, delay: Time) -> Result<Topology> {
    const B: &str = "star";
    check_count(B, "hosts", hosts)?;
    check_rate(B, "rate", rate)?;
    let h = host_total(B, "hosts", &[hosts])?;
    let mut t = skeleton(h, 1);
    for i in 0..h {
        link(&mut t, i, h, LinkParams::new(rate, delay))?;
    }
    Ok(t)
}

/// A two-tier Clos: `leaves` leaf switches with `hosts_per_leaf` hosts each, every leaf
/// linked once to each of `spines` spine switches.
///
/// Node ids: hosts, then leaves (`H..H+leaves`), then spines. Host `i` is on leaf `i /
/// hosts_per_leaf`. Host links run at `host_rate`, leaf-spine links at `fabric_rate`; all
/// links have delay `delay`.
pub fn leaf_spine(
    leaves: usize,
    spines: usize,
    hosts_per_leaf: usize,
    host_rate: Rate,
    fabric_rate: Rate,
    delay: Time,
) -> Result<Topology> {
    const B: &str = "leaf_spine";
    check_count(B, "leaves", leaves)?;
    check_count(B, "spines", spines)?;
    check_count(B, "hosts_per_leaf", hosts_per_leaf)?;
    check_rate(B, "host_rate", host_rate)?;
    check_rate(B, "fabric_rate", fabric_rate)?;
    let h = host_total(B, "hosts_per_leaf", &[leaves, hosts_per_leaf])?;
    if spines > MAX_TIER || leaves > MAX_TIER {
        return Err(bad(B, "spines", format!("more than {MAX_TIER} switches per tier")));
    }
    let mut t = skeleton(h, leaves + spines);
    for (i, (a, b)) in leaf_spine_wiring(leaves, spines, hosts_per_leaf).enumerate() {
        let rate = if i < h { host_rate } else { fabric_rate };
        link(&mut t, a, b, LinkParams::new(rate, delay))?;
    }
    Ok(t)
}

/// The links of [`leaf_spine`] as `(a, b)` node pairs, in the order it adds them: host `i`
/// to its leaf, then each leaf to every spine. Routing recognises the fabric by this list
/// (`routing::clos`), so the wiring is written once.
pub(crate) fn leaf_spine_wiring(
    leaves: usize,
    spines: usize,
    hosts_per_leaf: usize,
) -> impl Iterator<Item = (usize, usize)> {
    let h = leaves * hosts_per_leaf;
    let hosts = (0..h).map(move |i| (i, h + i / hosts_per_leaf));
    let fabric = (0..leaves).flat_map(move |l| (0..spines).map(move |s| (h + l, h + leaves + s)));
    hosts.chain(fabric)
}

/// `switches` switches, every two joined by one link, with `hosts_per_switch` hosts on
/// each (the data-partition paper's second topology). Node ids: hosts, then switches; host `i` is on switch
/// `H + i / hosts_per_switch`. All links share `rate` and `delay`. Between hosts on two
/// different switches there is exactly one shortest path (the direct switch link).
pub fn full_mesh(switches: usize, hosts_per_switch: usize, rate: Rate, delay: Time) -> Result<Topology> {
    const B: &str = "full_mesh";
    check_count(B, "switches", switches)?;
    check_count(B, "hosts_per_switch", hosts_per_switch)?;
    check_rate(B, "rate", rate)?;
    let h = host_total(B, "hosts_per_switch", &[switches, hosts_per_switch])?;
    if switches > 4096 {
        return Err(bad(B, "switches", "more than 4096 switches (a full mesh of them has millions of links)".into()));
    }
    let mut t = skeleton(h, switches);
    let p = LinkParams::new(rate, delay);
    for i in 0..h {
        link(&mut t, i, h + i / hosts_per_switch, p)?;
    }
    for a in 0..switches {
        for b in a + 1..switches {
            link(&mut t, h + a, h + b, p)?;
        }
    }
    Ok(t)
}

/// The number of spines that gives a leaf the oversubscription ratio `oversubscription`
/// (downlink capacity `hosts_per_leaf * host_rate` over uplink capacity `spines *
/// fabric_rate`). An error unless that number is a whole number of at least 1 (to a
/// relative tolerance of 1e-9).
pub fn spines_for_oversubscription(
    hosts_per_leaf: usize,
    host_rate: Rate,
    fabric_rate: Rate,
    oversubscription: f64,
) -> Result<usize> {
    const B: &str = "leaf_spine_oversubscribed";
    check_rate(B, "fabric_rate", fabric_rate)?;
    if !(oversubscription.is_finite() && oversubscription > 0.0) {
        return Err(bad(B, "oversubscription", format!("must be a positive number, got {oversubscription}")));
    }
    let down = hosts_per_leaf as f64 * host_rate.0 as f64;
    let exact = down / (oversubscription * fabric_rate.0 as f64);
    let whole = exact.round();
    if whole < 1.0 || (whole - exact).abs() > 1e-9 * exact {
        return Err(bad(
            B,
            "oversubscription",
            format!(
                "{oversubscription}:1 needs {exact:.4} spines of {fabric_rate} for {hosts_per_leaf} hosts of \
                 {host_rate} per leaf; choose a ratio that gives a whole number of at least 1"
            ),
        ));
    }
    Ok(whole as usize)
}

/// [`leaf_spine`] with the number of spines chosen by [`spines_for_oversubscription`].
pub fn leaf_spine_oversubscribed(
    leaves: usize,
    hosts_per_leaf: usize,
    host_rate: Rate,
    fabric_rate: Rate,
    oversubscription: f64,
    delay: Time,
) -> Result<Topology> {
    check_count("leaf_spine_oversubscribed", "hosts_per_leaf", hosts_per_leaf)?;
    check_rate("leaf_spine_oversubscribed", "host_rate", host_rate)?;
    let spines = spines_for_oversubscription(hosts_per_leaf, host_rate, fabric_rate, oversubscription)?;
    leaf_spine(leaves, spines, hosts_per_leaf, host_rate, fabric_rate, delay)
}

/// The shape of a rail-optimised fabric ([`rail`]): `servers` servers of `gpus_per_server`
/// GPUs, each GPU a host with its own NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RailShape {
    /// Servers.
    pub servers: usize,
    /// GPUs (hosts, NICs) per server: the rails.
    pub gpus_per_server: usize,
    /// Leaf switches of each rail; rail g's leaf j serves servers `j*S/L .. (j+1)*S/L`.
    pub leaves_per_rail: usize,
    /// Spine switches; every leaf of every rail links once to each.
    pub spines: usize,
}

/// A rail-optimised leaf-spine (NVIDIA's DGX SuperPOD layout): GPU g of every server is a host
/// with its own NIC on a leaf of rail g, so that the same GPU of two servers under one leaf is
/// one switch apart; the leaves of every rail link to every spine.
///
/// Node ids: hosts first, host `s * G + g` being GPU g of server s (a rank is a (server, GPU)
/// pair); then the leaves rail by rail (rail g's leaf j is `H + g * L + j`); then the spines.
/// Links: host `i` is link `i` (to its rail's leaf for its server), then each leaf to every
/// spine, leaf by leaf. Host links run at `host_rate`, leaf-spine links at `fabric_rate`.
/// Two GPUs of one server are on different rails: their traffic crosses a spine (no NVLink
/// in this model: a host has one NIC, on its first port; docs/collectives.md).
pub fn rail(shape: RailShape, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<Topology> {
    const B: &str = "rail";
    let RailShape { servers, gpus_per_server: g, leaves_per_rail: l, spines } = shape;
    check_count(B, "servers", servers)?;
    check_count(B, "gpus_per_server", g)?;
    check_count(B, "leaves_per_rail", l)?;
    check_count(B, "spines", spines)?;
    check_rate(B, "host_rate", host_rate)?;
    check_rate(B, "fabric_rate", fabric_rate)?;
    if !servers.is_multiple_of(l) {
        let msg = format!("{servers} servers do not split evenly over {l} leaves per rail");
        return Err(bad(B, "leaves_per_rail", msg));
    }
    let h = host_total(B, "servers", &[servers, g])?;
    let leaves = g.checked_mul(l).filter(|&n| n <= MAX_TIER);
    let Some(leaves) = leaves.filter(|_| spines <= MAX_TIER) else {
        return Err(bad(B, "spines", format!("more than {MAX_TIER} switches per tier")));
    };
    let per_leaf = servers / l;
    let mut t = skeleton(h, leaves + spines);
    for i in 0..h {
        let (server, gpu) = (i / g, i % g);
        link(&mut t, i, h + gpu * l + server / per_leaf, LinkParams::new(host_rate, delay))?;
    }
    for leaf in 0..leaves {
        for s in 0..spines {
            link(&mut t, h + leaf, h + leaves + s, LinkParams::new(fabric_rate, delay))?;
        }
    }
    Ok(t)
}

/// The standard k-ary fat tree: `k` pods of `k/2` edge and `k/2` aggregation switches,
/// `(k/2)^2` core switches and `k^3/4` hosts (`k/2` per edge switch).
///
/// Node ids: hosts, then edges (pod by pod), then aggregations (pod by pod), then cores.
/// Edge `e` of a pod links to every aggregation of its pod; aggregation `a` of each pod
/// links to cores `a*k/2 .. (a+1)*k/2`. Links: hosts, then edge-aggregation, then
/// aggregation-core. Host links run at `host_rate`, the others at `fabric_rate`.
pub fn fat_tree(k: usize, host_rate: Rate, fabric_rate: Rate, delay: Time) -> Result<Topology> {
    const B: &str = "fat_tree";
    if k < 2 || !k.is_multiple_of(2) {
        return Err(bad(B, "k", format!("must be even and at least 2, got {k}")));
    }
    check_rate(B, "host_rate", host_rate)?;
    check_rate(B, "fabric_rate", fabric_rate)?;
    let half = k / 2;
    let h = host_total(B, "k", &[k, half, half])?;
    let mut t = skeleton(h, 5 * k * half / 2);
    for (i, (a, b)) in fat_tree_wiring(k).enumerate() {
        let rate = if i < h { host_rate } else { fabric_rate };
        link(&mut t, a, b, LinkParams::new(rate, delay))?;
    }
    Ok(t)
}

/// The first node of each tier of a k-ary fat tree: `(edge0, agg0, core0)`.
pub(crate) fn fat_tree_tiers(k: usize) -> (usize, usize, usize) {
    let (half, h) = (k / 2, k * k * k / 4);
    (h, h + k * half, h + 2 * k * half)
}

/// The links of [`fat_tree`] as `(a, b)` node pairs, in the order it adds them: hosts to
/// their edges, then edge-aggregation pod by pod, then aggregation-core. Routing recognises
/// the fabric by this list (`routing::clos`), so the wiring is written once.
pub(crate) fn fat_tree_wiring(k: usize) -> impl Iterator<Item = (usize, usize)> {
    let half = k / 2;
    let (edge0, agg0, core0) = fat_tree_tiers(k);
    let hosts = (0..edge0).map(move |i| (i, edge0 + i / half));
    // Edge `e` (pod `e / half`) to each aggregation of its pod; aggregation `a` (index
    // `a % half` in its pod) to the cores of group `a % half`.
    let up = (0..k * half).flat_map(move |e| (0..half).map(move |a| (edge0 + e, agg0 + e / half * half + a)));
    let top = (0..k * half).flat_map(move |a| (0..half).map(move |c| (agg0 + a, core0 + a % half * half + c)));
    hosts.chain(up).chain(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NodeKind;

    const G100: Rate = Rate::gbps(100);
    const G400: Rate = Rate::gbps(400);
    const US: Time = Time::from_us(1);

    fn degree(t: &Topology, n: usize) -> usize {
        t.nodes[n].ports.len()
    }

    fn hosts_first(t: &Topology, hosts: usize) {
        for (i, node) in t.nodes.iter().enumerate() {
            let want = if i < hosts { NodeKind::Host } else { NodeKind::Switch };
            assert_eq!(node.kind, want, "node {i}");
        }
    }

    #[test]
    fn star_shape() {
        let t = star(5, G100, US).unwrap();
        assert_eq!((t.len(), t.links.len()), (6, 5));
        hosts_first(&t, 5);
        assert_eq!(degree(&t, 5), 5);
        // Host i owns link i, hence port 2i.
        assert_eq!(t.nodes[3].ports, vec![crate::ids::PortId(6)]);
    }

    #[test]
    fn dumbbell_shape() {
        let host = LinkParams::new(G100, US);
        let neck = LinkParams::new(Rate::gbps(40), Time::from_us(5));
        let t = dumbbell(3, host, neck).unwrap();
        assert_eq!((t.len(), t.links.len()), (8, 7));
        hosts_first(&t, 6);
        let last = t.links.last().unwrap();
        assert_eq!((last.a, last.b, last.rate, last.delay), (NodeId(6), NodeId(7), neck.rate, neck.delay));
        assert_eq!((degree(&t, 6), degree(&t, 7)), (4, 4));
        assert_eq!(t.links[4].b, NodeId(7)); // host 4 is on the right
    }

    #[test]
    fn leaf_spine_shape() {
        let t = leaf_spine(4, 3, 8, G100, G400, US).unwrap();
        assert_eq!(t.len(), 32 + 4 + 3);
        assert_eq!(t.links.len(), 32 + 4 * 3);
        hosts_first(&t, 32);
        assert!((32..36).all(|l| degree(&t, l) == 8 + 3));
        assert!((36..39).all(|s| degree(&t, s) == 4));
    }

    #[test]
    fn oversubscription_picks_whole_spine_counts() {
        // 16 x 100G down per leaf; 400G uplinks: 1:1 needs 4 spines, 2:1 needs 2, 4:1 one.
        for (ratio, want) in [(1.0, 4), (2.0, 2), (4.0, 1)] {
            assert_eq!(spines_for_oversubscription(16, G100, G400, ratio).unwrap(), want);
        }
        let t = leaf_spine_oversubscribed(2, 16, G100, G400, 2.0, US).unwrap();
        assert_eq!(t.switches().count(), 2 + 2);
        for ratio in [3.0, 8.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(spines_for_oversubscription(16, G100, G400, ratio).is_err(), "ratio {ratio}");
        }
    }

    #[test]
    fn fat_tree_k4_shape() {
        let t = fat_tree(4, G100, G400, US).unwrap();
        // k^3/4 = 16 hosts, k^2/2 = 8 edges, 8 aggs, (k/2)^2 = 4 cores.
        assert_eq!(t.len(), 16 + 8 + 8 + 4);
        hosts_first(&t, 16);
        // Links: 16 host + k*(k/2)^2 edge-agg + k*(k/2)^2 agg-core = 16 + 16 + 16.
        assert_eq!(t.links.len(), 48);
        assert!((16..24).all(|e| degree(&t, e) == 4)); // 2 hosts + 2 aggs
        assert!((24..32).all(|a| degree(&t, a) == 4)); // 2 edges + 2 cores
        assert!((32..36).all(|c| degree(&t, c) == 4)); // one agg per pod
                                                       // Every core reaches each pod exactly once.
        for c in 32..36 {
            let mut pods: Vec<usize> =
                t.nodes[c].ports.iter().map(|&p| (t.ports[p.idx()].peer_node.idx() - 24) / 2).collect();
            pods.sort();
            assert_eq!(pods, vec![0, 1, 2, 3]);
        }
        assert_eq!(t.links[20].rate, G400);
        assert_eq!(t.links[15].rate, G100);
    }

    #[test]
    fn impossible_parameters_are_errors() {
        let p = LinkParams::new(G100, US);
        let zero = LinkParams::new(Rate(0), US);
        assert!(star(0, G100, US).is_err());
        assert!(star(4, Rate(0), US).is_err());
        assert!(dumbbell(0, p, p).is_err());
        assert!(dumbbell(2, p, zero).is_err());
        assert!(leaf_spine(0, 2, 2, G100, G100, US).is_err());
        assert!(leaf_spine(2, 0, 2, G100, G100, US).is_err());
        assert!(leaf_spine(2, 2, 0, G100, G100, US).is_err());
        assert!(leaf_spine(2, 2, 2, G100, Rate(0), US).is_err());
        for k in [0, 1, 3, 7] {
            let e = fat_tree(k, G100, G100, US).unwrap_err().to_string();
            assert!(e.contains("fat_tree.k"), "{e}");
        }
        assert!(fat_tree(4, G100, Rate(0), US).is_err());
        // k = 402 would make 16,241,202 hosts, past the address scheme (k = 66, 71,874
        // hosts, is past the reference's 65,536 but fine: see `default_host_ip`).
        let e = fat_tree(402, G100, G100, US).unwrap_err().to_string();
        assert!(e.contains("more than 16056320 hosts"), "{e}");
        assert!(star(usize::MAX, G100, US).is_err());
    }
}
