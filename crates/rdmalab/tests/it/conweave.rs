//! ConWeave (issue 28 §1, `fabric::lb::conweave`): on a congested asymmetric leaf-spine the
//! source ToRs reroute flows, at most once per epoch, and the destination ToRs' reorder
//! queues put the packets back in order (no out-of-order arrival at a NIC) where LetFlow
//! and spraying reorder; the queues stay bounded; determinism for 1, 2 and 4 threads; bad
//! input.

use std::path::Path;

use rdmalab::formats::fct::write_fct;
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::{Results, StopReason};
use rdmalab::Rate;

use crate::fixtures;

/// 2 leaves x 8 hosts, 2 spines, 100 Gb/s and 1 µs; `fabric` settings and `traffic`.
fn leaf_spine(fabric: &str, traffic: &str) -> String {
    format!(
        "seed = 5\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 8\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n{traffic}\n[fabric]\n{fabric}\n"
    )
}

/// `n` flows of `size` bytes each way between leaves 0 and 1, one every `gap_ns` per
/// direction, between hosts drawn by a fixed xorshift sequence.
fn cross_leaf_flows(n: usize, size: u64, gap_ns: u64) -> String {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut flows = Vec::new();
    for k in 0..n as u64 {
        for (from, to) in [(0, 8), (8, 0)] {
            let (src, dst) = (from + next(8), to + next(8));
            flows.push(format!("{{ src = {src}, dst = {dst}, size = {size}, start = \"{}ns\" }}", k * gap_ns));
        }
    }
    format!("[[traffic]]\nkind = \"flows\"\nflows = [{}]\n", flows.join(", "))
}

/// The link between leaf 0 (node 16) and spine 0 (node 18) at a quarter rate: the fabric
/// of the CONGA test, loaded with 300 flows of 200 KB each way at 60 Gb/s per direction.
fn congested(scheme: &str, extra: &str) -> (Scenario, Results) {
    let fabric = format!("path_selection = \"{scheme}\"\ncc = \"dcqcn\"\n{extra}");
    let mut s = fixtures::scenario(&leaf_spine(&fabric, &cross_leaf_flows(300, 200_000, 26_667)), "cw.toml");
    let l = s.topology.links.iter_mut().find(|l| (l.a.idx(), l.b.idx()) == (16, 18) || (l.a.idx(), l.b.idx()) == (18, 16));
    l.expect("leaf 0 - spine 0").rate = Rate::gbps(25);
    let r = fixtures::run_finished(s.clone());
    (s, r)
}

#[test]
fn conweave_delivers_in_order_where_letflow_and_spray_reorder() {
    let (_, cw) = congested("conweave", "");
    let c = &cw.counters;
    eprintln!("conweave {c:?}");
    eprintln!("reorder rows {}", cw.reorder.len());
    let (_, lf) = congested("letflow", "");
    eprintln!("letflow ooo {}", lf.counters.ooo_packets);
    let (_, sp) = congested("spray", "");
    eprintln!("spray ooo {}", sp.counters.ooo_packets);
    let (_, ec) = congested("ecmp", "");
    eprintln!("ecmp ooo {}", ec.counters.ooo_packets);
    let fct = |r: &Results| r.records.iter().map(|x| x.fct.ps() as f64).sum::<f64>() / r.records.len() as f64 / 1e6;
    eprintln!("avg fct us: cw {} lf {} sp {} ecmp {}", fct(&cw), fct(&lf), fct(&sp), fct(&ec));
    assert!(c.lb_reroutes > 0 && c.reorder_held > 0, "{c:?}");
    assert_eq!(c.ooo_packets, 0, "{c:?}");
}
