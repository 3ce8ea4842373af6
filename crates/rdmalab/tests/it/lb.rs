//! Switch-side load balancing (`fabric::lb`): spraying splits an idle
//! symmetric fabric's bytes equally (binomial spread) and, under go-back-N, its reordering
//! costs NACKs and retransmissions; DRILL keeps packets off a loaded port; LetFlow keeps a
//! flow on its port while its gaps stay below the flowlet timeout; CONGA's bytes follow the
//! uplinks' capacity where ECMP's follow the hash; the balance rows; determinism for 1, 2
//! and 4 threads; bad input.

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::{NodeId, PortId, Rate};

use crate::fixtures;

/// A leaf-spine fabric (hosts `0..leaves * hosts`, then the leaves, then the spines) at
/// 100 Gb/s and 1 µs, with `traffic` and `fabric` settings.
fn leaf_spine(leaves: usize, spines: usize, hosts: usize, fabric: &str, traffic: &str) -> String {
    format!(
        "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nspines = {spines}\nhosts_per_leaf = {hosts}\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
         {traffic}\n[fabric]\n{fabric}\n"
    )
}

/// `senders` hosts of leaf 0 each sending `size` bytes to its peer on leaf 1 at time 0.
fn across(senders: usize, hosts: usize, size: u64) -> String {
    let flows: Vec<String> =
        (0..senders).map(|i| format!("{{ src = {i}, dst = {}, size = {size} }}", hosts + i)).collect();
    format!("[[traffic]]\nkind = \"flows\"\nflows = [{}]\n", flows.join(", "))
}

/// Leaf `leaf`'s ports to the spines, in port order.
fn uplinks(s: &Scenario, leaf: NodeId) -> Vec<PortId> {
    let t = &s.topology;
    t.nodes[leaf.idx()].ports.iter().copied().filter(|p| !t.is_host(t.ports[p.idx()].peer_node)).collect()
}

/// Each uplink's share of the bytes `r` sent up from `leaf`.
fn shares(s: &Scenario, r: &Results, leaf: NodeId) -> Vec<f64> {
    let bytes: Vec<u64> = uplinks(s, leaf).iter().map(|p| r.ports[p.idx()].tx_bytes).collect();
    let total: u64 = bytes.iter().sum();
    bytes.iter().map(|&b| b as f64 / total as f64).collect()
}

/// Sets the link between `a` and `b` to `rate` (both directions).
fn slow_link(s: &mut Scenario, a: usize, b: usize, rate: Rate) {
    let l = s.topology.links.iter_mut().find(|l| (l.a.idx(), l.b.idx()) == (a, b) || (l.b.idx(), l.a.idx()) == (a, b));
    l.expect("link exists").rate = rate;
}

fn scenario(toml: &str) -> Scenario {
    fixtures::scenario(toml, "lb.toml")
}

#[test]
fn spray_splits_an_idle_symmetric_fabric_equally_and_go_back_n_pays_for_its_reordering() {
    // 4 senders x 10 MB over 2 uplinks: about 42,000 packets, each on either uplink with
    // probability 1/2, so each uplink's share of the bytes has a standard deviation of
    // 0.5 / sqrt(42000) = 0.24 % of the total (0.5 % of its mean): 2 % is four of them.
    let toml = leaf_spine(2, 2, 4, "path_selection = \"spray\"\ncc = \"dcqcn\"", &across(4, 4, 10_000_000));
    let s = scenario(&toml);
    let r = fixtures::run_finished(s.clone());
    for (i, share) in shares(&s, &r, NodeId(8)).iter().enumerate() {
        assert!((share - 0.5).abs() / 0.5 < 0.02, "uplink {i} carries {share:.4} of the bytes");
    }
    let needed = 4 * 10_000_000u64.div_ceil(1000);
    assert!(r.counters.nacks > 0, "spraying reorders: go-back-N NACKs ({:?})", r.counters);
    assert!(
        r.counters.data_packets_sent > needed,
        "and retransmits ({} sent, {needed} needed)",
        r.counters.data_packets_sent
    );
    // The same flows hashed (ECMP): one path each, in order, nothing resent.
    let ecmp = fixtures::run_finished(scenario(&toml.replace("path_selection = \"spray\"\n", "")));
    assert_eq!((ecmp.counters.nacks, ecmp.counters.data_packets_sent), (0, needed));
}

/// Share of leaf 0's bytes on its uplink to spine 0 when that link runs at a quarter of
/// the rate (25 Gb/s), one host sending 4 MB across, under `path_selection`.
fn share_on_slow_uplink(path_selection: &str) -> f64 {
    let toml =
        leaf_spine(2, 2, 1, &format!("path_selection = \"{path_selection}\"\ncc = \"none\""), &across(1, 1, 4_000_000));
    let mut s = scenario(&toml);
    slow_link(&mut s, 2, 4, Rate::gbps(25));
    let r = fixtures::run_finished(s.clone());
    shares(&s, &r, NodeId(2))[0]
}

#[test]
fn drill_keeps_packets_off_a_loaded_port() {
    // Oblivious spraying puts half the packets on the slow uplink, whose queue therefore
    // never empties; DRILL compares queues and sends there only when it is the shorter.
    let spray = share_on_slow_uplink("spray");
    assert!(spray > 0.45, "spray: {spray:.3} on the slow uplink");
    let drill = share_on_slow_uplink("drill");
    assert!(drill < 0.10, "drill: {drill:.3} on the slow uplink");
}

#[test]
fn letflow_keeps_a_flow_on_its_port_while_its_gaps_stay_below_the_timeout() {
    // One flow at line rate: packets 80 ns apart. Below the 100 µs timeout every gap
    // continues the flowlet (one uplink carries it all); with a 1 ns timeout every packet
    // is a new flowlet and may move.
    let run = |timeout: &str| {
        let fabric =
            format!("path_selection = \"letflow\"\ncc = \"none\"\n[fabric.lb]\nflowlet_timeout = \"{timeout}\"");
        let s = scenario(&leaf_spine(2, 2, 1, &fabric, &across(1, 1, 2_000_000)));
        let r = fixtures::run_finished(s.clone());
        shares(&s, &r, NodeId(2))
    };
    let kept = run("100us");
    assert!(kept.contains(&1.0), "one flowlet, one uplink: {kept:?}");
    let moved = run("1ns");
    assert!(moved.iter().all(|&x| x > 0.3), "a flowlet per packet spreads: {moved:?}");
}

/// `n` flows of `size` bytes each way between leaves 0 and 1 (8 hosts each), one every
/// `gap_ns` per direction, between hosts drawn by a fixed xorshift sequence.
pub(crate) fn cross_leaf_flows(n: usize, size: u64, gap_ns: u64) -> String {
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

/// Shares of the uplinks of leaves 0 and 1 (2 leaves x 8 hosts, 2 spines), with 400 flows
/// of 100 KB each way at 60 Gb/s (half the 125 Gb/s towards the other leaf), the link
/// between leaf 0 and spine 0 at 25 Gb/s.
fn asymmetric_shares(path_selection: &str) -> (Vec<f64>, Vec<f64>) {
    let fabric = format!("path_selection = \"{path_selection}\"\ncc = \"dcqcn\"");
    let mut s = scenario(&leaf_spine(2, 2, 8, &fabric, &cross_leaf_flows(400, 100_000, 13_333)));
    slow_link(&mut s, 16, 18, Rate::gbps(25));
    let r = fixtures::run_finished(s.clone());
    (shares(&s, &r, NodeId(16)), shares(&s, &r, NodeId(17)))
}

#[test]
fn conga_bytes_follow_the_uplinks_capacity_and_ecmp_bytes_do_not() {
    // Capacity towards the other leaf: via spine 0 25 Gb/s, via spine 1 100 Gb/s, on both
    // leaves (leaf 1 reaches leaf 0 through spine 0's slow downlink, which only CONGA's
    // feedback tells it about): shares 0.2 and 0.8.
    let capacity = [0.2, 0.8];
    let close = |s: &[f64]| s.iter().zip(capacity).all(|(x, c)| (x - c).abs() <= 0.10);
    let (l0, l1) = asymmetric_shares("conga");
    eprintln!("conga {l0:?} {l1:?}");
    assert!(close(&l0) && close(&l1), "conga: leaf 0 {l0:?}, leaf 1 {l1:?}");
    let (e0, e1) = asymmetric_shares("ecmp");
    eprintln!("ecmp {e0:?} {e1:?}");
    assert!(!close(&e0) && !close(&e1), "ecmp: leaf 0 {e0:?}, leaf 1 {e1:?}");
}

/// The FCT file, the mechanism tables (the balance rows), every flow's out-of-order count
/// and the number of balance rows of `toml` run with `threads` threads.
fn outputs(toml: &str, threads: u32) -> (String, String, Vec<(u32, u32)>, usize) {
    let r = fixtures::run_threads(toml, "lb.toml", threads);
    let mut ooo: Vec<(u32, u32)> = r.records.iter().map(|x| (x.flow, x.rx.ooo_packets)).collect();
    ooo.sort();
    assert_eq!(ooo.iter().map(|x| x.1 as u64).sum::<u64>(), r.counters.ooo_packets);
    let rows = r.table("balance").map_or(0, |t| t.rows());
    (fixtures::fct_text(&r), format!("{:?}", r.tables), ooo, rows)
}

#[test]
fn every_scheme_is_the_same_for_any_thread_count() {
    let traffic = "[[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"300us\"\n";
    for scheme in ["spray", "drill", "letflow", "conga", "ecmp"] {
        let fabric = format!("path_selection = \"{scheme}\"\ncc = \"dcqcn\"\n[fabric.lb]\nflowlet_timeout = \"2us\"");
        let toml = leaf_spine(4, 4, 4, &fabric, traffic);
        let one = outputs(&toml, 1);
        assert!(one.3 > 10, "{scheme}: balance rows recorded ({})", one.3);
        if scheme == "spray" {
            assert!(one.2.iter().any(|x| x.1 > 0), "spraying reorders some flow's packets");
        }
        for threads in [2, 4] {
            assert!(one == outputs(&toml, threads), "{scheme}: outputs differ with {threads} threads");
        }
    }
}

#[test]
fn balance_rows_measure_the_uplinks_imbalance() {
    // One flow hashed onto one of two uplinks: every window has max = all, min = 0, so the
    // imbalance is (max - 0) / (max / 2) = 2; sprayed, it is near 0.
    let run = |scheme: &str| {
        let fabric = format!("path_selection = \"{scheme}\"\ncc = \"none\"\n[fabric.lb]\nlb_window = \"50us\"");
        fixtures::run_finished(scenario(&leaf_spine(2, 2, 1, &fabric, &across(1, 1, 4_000_000))))
    };
    let ecmp = run("ecmp");
    let (imbalance, uplinks) =
        (fixtures::table_f64(&ecmp, "balance", "imbalance"), fixtures::table_u64(&ecmp, "balance", "uplinks"));
    assert!(
        !imbalance.is_empty() && imbalance.iter().all(|&b| b == 2.0) && uplinks.iter().all(|&u| u == 2),
        "{:?}",
        ecmp.table("balance")
    );
    let spray = run("spray");
    let mean = fixtures::table_f64(&spray, "balance", "mean_bytes");
    let imbalance = fixtures::table_f64(&spray, "balance", "imbalance");
    let full: Vec<f64> = mean.iter().zip(&imbalance).filter(|(&m, _)| m > 200_000.0).map(|(_, &i)| i).collect();
    assert!(!full.is_empty() && full.iter().all(|&i| i < 0.2), "{full:?}");
}

#[test]
fn bad_balancer_input_names_the_field_and_line() {
    let toml = leaf_spine(2, 2, 1, "path_selection = \"drill\"\n[fabric.lb]\nconga_bits = 9", &across(1, 1, 1000));
    let e = fixtures::input_error(&toml);
    let line = fixtures::line_of(&toml, "conga_bits");
    assert!(
        e.contains("fabric.lb.conga_bits") && e.contains(&format!("lb.toml:{line}")) || e.contains(&format!(":{line}")),
        "{e}"
    );
    let fat = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[traffic]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 9, size = 1000 }]\n\
               [fabric]\npath_selection = \"conga\"\n";
    let e = fixtures::input_error(fat);
    assert!(e.contains("fabric.path_selection") && e.contains("leaf-spine"), "{e}");
    let hpcc = leaf_spine(2, 2, 1, "path_selection = \"conga\"\ncc = \"hpcc\"", &across(1, 1, 1000));
    assert!(fixtures::input_error(&hpcc).contains("INT"));
    let unknown = leaf_spine(2, 2, 1, "path_selection = \"drill\"\n[fabric.lb]\ndrill_sample = 2", &across(1, 1, 1000));
    assert!(fixtures::input_error(&unknown).contains("drill_sample"));
}
