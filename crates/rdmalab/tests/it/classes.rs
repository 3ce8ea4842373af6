//! Traffic classes (`[[fabric.classes]]`) end to end on one bottleneck: a star switch whose
//! port towards host 0 is shared by line-rate senders in different classes, no congestion
//! control, so every class that has a sender stays backlogged (PFC holds the senders back,
//! not a rate controller).
//!
//! Closed forms: DWRR gives backlogged classes link bytes in the ratio of their weights
//! (Shreedhar & Varghese 1995, Theorem 2: the gap stays below one quantum plus one packet
//! per round); a strict class whose offered load exceeds the link leaves nothing to the
//! classes below it; a class with PFC off drops at the buffer threshold and never pauses,
//! while a PFC class beside it pauses and never drops.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, Simulation};

use crate::fixtures::{input_error, line_of, run_toml_with};

/// Runs to the end: bytes conserved, no drop in a lossless class.
fn run(toml: &str) -> Results {
    run_toml_with(toml, |_| {})
}

/// A star of `hosts` hosts at 100 Gb/s, the fabric settings `fabric` (TOML lines) and
/// `classes` (whole `[[fabric.classes]]` tables), one long flow per (sender, class).
fn star(hosts: usize, stop: &str, fabric: &str, classes: &str, flows: &[(u32, u8)], size: u64) -> String {
    let flows: Vec<String> =
        flows.iter().map(|&(src, pg)| format!("{{ src = {src}, dst = 0, size = {size}, pg = {pg} }}")).collect();
    format!(
        "{stop}\n[topology]\nkind = \"star\"\nhosts = {hosts}\n\n[[traffic]]\nkind = \"flows\"\nflows = [{}]\n\n\
         [fabric]\ncc = \"none\"\n{fabric}\n\n{classes}\n",
        flows.join(", ")
    )
}

fn class(pg: u8, fields: &str) -> String {
    format!("[[fabric.classes]]\npg = {pg}\n{fields}\n")
}

#[test]
fn dwrr_shares_follow_the_weights_within_two_percent() {
    // 25 MB cross the bottleneck in 2 ms; the flows are far longer, so both classes stay
    // backlogged until the stop time.
    for (w1, w2) in [(1u32, 3u32), (1, 1), (5, 2)] {
        let classes = class(1, &format!("weight = {w1}")) + &class(2, &format!("weight = {w2}"));
        let r = run(&star(3, "stop_time = \"2ms\"", "", &classes, &[(1, 1), (2, 2)], 100_000_000));
        let (b1, b2) = (r.classes[1].counters.tx_bytes as f64, r.classes[2].counters.tx_bytes as f64);
        let (want, got) = (w2 as f64 / w1 as f64, b2 / b1);
        assert!((got / want - 1.0).abs() < 0.02, "weights {w1}:{w2}: byte ratio {got:.4}, want {want}");
        // Work conserving: the two classes fill the link (2 ms at 100 Gb/s = 25 MB) but for
        // the first packets' trip.
        assert!(b1 + b2 > 0.99 * 25e6 && b1 + b2 <= 25e6, "{} bytes in 2 ms", b1 + b2);
        assert_eq!(r.classes[1].counters.drops + r.classes[2].counters.drops, 0);
    }
}

#[test]
fn without_classes_the_built_in_round_robin_splits_evenly() {
    // The control for the DWRR test: no table, packet round robin, equal packets: 1:1.
    let toml = star(3, "stop_time = \"2ms\"", "", "", &[(1, 1), (2, 2)], 100_000_000);
    let s = Scenario::from_toml(&toml, Path::new("t.toml")).unwrap();
    let uplink = |h: usize| s.topology.nodes[h].ports[0].idx();
    let (p1, p2) = (uplink(1), uplink(2));
    let mut sim = Simulation::from_scenario(s).unwrap();
    sim.run_to_end();
    let r = sim.results().unwrap();
    assert!(r.classes.is_empty(), "no class table, no class rows");
    // Each host link carries one class: its bytes are the class's share.
    let ratio = r.ports[p2].tx_bytes as f64 / r.ports[p1].tx_bytes as f64;
    assert!((ratio - 1.0).abs() < 0.02, "ratio {ratio}");
}

#[test]
fn a_strict_class_starves_a_lower_one() {
    // Two senders in class 1 offer twice the link; one in class 2.
    let flows = [(1, 1), (2, 1), (3, 2)];
    let strict = class(1, "scheduler = \"strict\"");
    let r = run(&star(4, "stop_time = \"1ms\"", "", &strict, &flows, 100_000_000));
    let (b1, b2) = (r.classes[1].counters.tx_bytes, r.classes[2].counters.tx_bytes);
    // Before class 1's queue builds up, class 2 may slip a packet or two onto the idle link.
    assert!(b2 <= 3 * 1048, "class 2 sent {b2} bytes under a saturating strict class 1");
    assert!(b1 as f64 > 0.99 * 12.5e6, "class 1 sent {b1} bytes");
    // The same traffic with both classes DWRR weight 1: class 2 gets half.
    let r = run(&star(4, "stop_time = \"1ms\"", "", &class(1, "weight = 1"), &flows, 100_000_000));
    let (b1, b2) = (r.classes[1].counters.tx_bytes as f64, r.classes[2].counters.tx_bytes as f64);
    assert!((b2 / b1 - 1.0).abs() < 0.02, "dwrr 1:1 gives {b1} / {b2}");
}

#[test]
fn among_strict_classes_the_lower_number_goes_first() {
    let flows = [(1, 2), (2, 2), (3, 5)];
    let classes = class(2, "scheduler = \"strict\"") + &class(5, "scheduler = \"strict\"");
    let r = run(&star(4, "stop_time = \"1ms\"", "", &classes, &flows, 100_000_000));
    assert!(r.classes[5].counters.tx_bytes <= 3 * 1048, "{:?}", r.classes[5]);
    // Finite flows: the starved class finishes last, after the strict class has drained.
    let r = run(&star(4, "", "", &classes, &flows, 1_000_000));
    let last = r.records.iter().max_by_key(|f| f.start.0 + f.fct.0).unwrap();
    assert_eq!(last.src.0, 3, "the class-5 flow completes last");
}

#[test]
fn a_class_without_pfc_drops_and_never_pauses_beside_a_lossless_one() {
    // Two senders per class into one port: each class offers twice its half of the link.
    let flows = [(1, 1), (2, 1), (3, 2), (4, 2)];
    // A 1 MiB buffer: a lossy class's share fills well before its flows end.
    for (fabric, classes) in [
        ("lossless = true\nbuffer_mb = 1", class(1, "pfc = false")),
        ("lossless = false\nbuffer_mb = 1", class(2, "pfc = true")),
    ] {
        let r = run(&star(5, "", fabric, &classes, &flows, 500_000));
        let (lossy, lossless) = (r.classes[1].counters, r.classes[2].counters);
        assert!(lossy.drops > 0 && lossy.pauses == 0, "{fabric}: lossy class {lossy:?}");
        assert!(lossless.drops == 0 && lossless.pauses > 0, "{fabric}: lossless class {lossless:?}");
        assert_eq!(r.records.len(), 4, "{fabric}: go-back-N recovers every lossy flow");
        assert_eq!(r.counters.pauses, lossless.pauses, "{fabric}: every PAUSE is class 2's");
        assert!(!r.classes[1].config.pfc && r.classes[2].config.pfc);
    }
}

#[test]
fn ecn_thresholds_are_per_class_and_default_to_the_fabric_wide_ones() {
    // Fabric-wide thresholds no queue reaches; class 1 marks from 10 KB on. Class 2 keeps
    // the fabric-wide value, so it is never marked though its queue is as long.
    let fabric = "ecn_kmin = 1000000000\necn_kmax = 1000000000";
    let classes = class(1, "ecn_kmin = 10000\necn_kmax = 10000");
    let r = run(&star(3, "stop_time = \"500us\"", fabric, &classes, &[(1, 1), (2, 2)], 100_000_000));
    assert!(r.classes[1].counters.ecn_marks > 0, "{:?}", r.classes[1]);
    assert_eq!(r.classes[2].counters.ecn_marks, 0, "{:?}", r.classes[2]);
    assert_eq!(r.counters.ecn_marks, r.classes[1].counters.ecn_marks);
}

#[test]
fn every_traffic_kind_takes_pg() {
    let dir = std::env::temp_dir().join(format!("rdmalab-classes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("flows.txt"), "2\n1 0 3 100 5000 0.000001\n2 0 3 100 5000 0.000002\n").unwrap();
    std::fs::write(dir.join("t.cm"), "Nodes 4\nConnections 1\n1->0 id 1 start 0 size 5000\n").unwrap();
    let kinds = [
        "kind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 0.3\nduration = \"20us\"",
        "kind = \"incast\"\nsenders = [1, 2]\nreceiver = 0\nsize = 1000",
        "kind = \"incast_rounds\"\nsenders = [1, 2]\nreceiver = 0\nsize = 1000\nperiod = \"10us\"\nrounds = 2",
        "kind = \"permutation\"\nsize = 1000",
        "kind = \"random_pairs\"\ncount = 5\nsize = 1000",
        "kind = \"flows\"\nflows = [{ src = 1, dst = 0, size = 1000 }]",
        "kind = \"hpcc_flow_file\"\npath = \"flows.txt\"",
        "kind = \"htsim_cm\"\npath = \"t.cm\"",
        "kind = \"parallel_qps\"\nsrc = 1\ndst = 0\nqps = 3\nsize = 1000",
        "kind = \"staggered_qps\"\nsrc = 1\ndst = 0\nqps = 2\nsize = 10000\nchunk = 1000\ninterval = \"1us\"",
        "kind = \"shuffled_overlay\"\nhosts = [0, 1, 2]\nchunk = 1000\ninterval = \"5us\"\nuntil = \"20us\"",
    ];
    for kind in kinds {
        let toml = format!("[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\n{kind}\npg = 6\n");
        let s = Scenario::from_toml(&toml, &dir.join("s.toml")).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(!s.flows.is_empty() && s.flows.iter().all(|f| f.pg == 6), "{kind}");
        // Without `pg` the default class (the flow file's own column) stays.
        let s = Scenario::from_toml(&toml.replace("pg = 6\n", ""), &dir.join("s.toml")).unwrap();
        assert!(s.flows.iter().all(|f| f.pg == 3), "{kind}");
    }
    // A `flows` entry's own pg wins over the traffic-level one.
    let toml = "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"flows\"\npg = 6\n\
                flows = [{ src = 1, dst = 0, size = 10 }, { src = 2, dst = 0, size = 10, pg = 2 }]\n";
    let s = Scenario::from_toml(toml, Path::new("s.toml")).unwrap();
    assert_eq!(s.flows.iter().map(|f| f.pg).collect::<Vec<_>>(), vec![6, 2]);
    // The staggered attack's QPs really travel in its class: its packets queue there.
    let toml = "stop_time = \"200us\"\n[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\n\
                kind = \"staggered_qps\"\nsrc = 1\ndst = 0\nqps = 2\nsize = 100000\nchunk = 10000\n\
                interval = \"1us\"\npg = 6\n[[fabric.classes]]\npg = 6\nweight = 2\n";
    let r = run(toml);
    assert!(r.classes[6].counters.tx_bytes >= 100_000, "{:?}", r.classes[6]);
    assert_eq!(r.classes[3].counters.tx_bytes, 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn iofd_escape_class_must_be_a_pfc_class() {
    let base = "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"flows\"\n\
                flows = [{ src = 1, dst = 0, size = 1000 }]\n[fabric.iofd]\nescape_pg = 5\n";
    let bad = format!("{base}[[fabric.classes]]\npg = 5\npfc = false\n");
    let e = input_error(&bad);
    assert!(e.starts_with("bad.toml:") && e.contains("fabric.iofd.escape_pg") && e.contains("PFC"), "{e}");
    // A PFC escape class, or a fabric with no PFC class at all, is fine.
    Scenario::from_toml(&format!("{base}[[fabric.classes]]\npg = 5\npfc = true\n"), Path::new("ok.toml")).unwrap();
    let lossy = base.replace("[fabric.iofd]", "[fabric]\nlossless = false\n[fabric.iofd]");
    Scenario::from_toml(&lossy, Path::new("ok.toml")).unwrap();
}

#[test]
fn bad_classes_name_file_line_and_field() {
    let base = "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"flows\"\n\
                flows = [{ src = 1, dst = 0, size = 1000 }]\n";
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (class(2, "scheduler = \"wfq\""), "fabric.classes[0].scheduler", "wfq", "unknown scheduler"),
        (class(2, "weight = 0"), "fabric.classes[0].weight", "weight = 0", "at least 1"),
        (class(2, "scheduler = \"strict\"\nweight = 2"), "fabric.classes[0].weight", "weight = 2", "dwrr"),
        (class(0, ""), "fabric.classes[0].pg", "pg = 0", "not a data class"),
        (class(8, ""), "fabric.classes[0].pg", "pg = 8", "not a data class"),
        (class(3, "") + &class(3, "weight = 2"), "fabric.classes[1].pg", "pg = 3\nweight", "already set"),
        (class(3, "ecn_pmax = 1.5"), "fabric.classes[0].ecn_pmax", "ecn_pmax", "[0, 1]"),
        (class(3, "ecn_kmin = 900000\necn_kmax = 800000"), "fabric.classes[0].ecn_kmin", "ecn_kmin", "Kmin"),
        (class(3, "ecn_kmax = 10"), "fabric.classes[0].ecn_kmax", "ecn_kmax", "Kmin"),
        (class(3, "colour = 1"), "fabric.classes[0]", "colour", "unknown field"),
    ];
    for (tail, field, needle, what) in cases {
        let toml = format!("{base}{tail}");
        let e = input_error(&toml);
        let want = format!("bad.toml:{}", line_of(&toml, needle));
        assert!(e.starts_with(&want) && e.contains(field) && e.contains(what), "want {want}, {field}, {what}: {e}");
    }
    // ECN off: a class threshold has nothing to set.
    let toml = format!("{base}[fabric]\necn = false\n{}", class(3, "ecn_kmin = 1000"));
    let e = input_error(&toml);
    assert!(e.contains("fabric.classes[0].ecn_kmin") && e.contains("ECN marking is off"), "{e}");
    // A traffic entry's class out of range.
    let toml = "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"incast\"\nsenders = [1]\n\
                receiver = 0\nsize = 10\npg = 9\n";
    let e = input_error(toml);
    assert!(e.starts_with(&format!("bad.toml:{}", line_of(toml, "pg = 9"))) && e.contains("traffic[0].pg"), "{e}");
}

#[test]
fn a_run_with_classes_is_deterministic() {
    let flows = [(1, 1), (2, 1), (3, 2), (4, 2)];
    let classes = class(1, "pfc = false\nweight = 2") + &class(2, "ecn_kmin = 20000\necn_kmax = 80000");
    let toml = star(5, "", "cc = \"dcqcn\"", &classes, &flows, 300_000).replace("cc = \"none\"\n", "");
    let (a, b) = (run(&toml), run(&toml));
    assert_eq!(a.records, b.records);
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.classes, b.classes);
}

#[test]
fn classes_survive_a_link_failure() {
    // A leaf-spine (hosts 0..7, leaves 8, 9, spines 10, 11) losing a leaf-spine link while
    // two classes cross it: queued packets are discarded, their classes' deficits with them,
    // and every flow completes on the remaining spine.
    let toml = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
                [[traffic]]\nkind = \"flows\"\nflows = [\
                { src = 0, dst = 4, size = 2000000, pg = 1 }, { src = 1, dst = 5, size = 2000000, pg = 2 },\
                { src = 2, dst = 6, size = 2000000, pg = 1, sport = 7 }, { src = 3, dst = 7, size = 2000000, pg = 2, sport = 9 }]\n\
                [[events]]\nkind = \"link_down\"\nat = \"40us\"\na = 8\nb = 10\n\
                [[fabric.classes]]\npg = 1\nweight = 1\n[[fabric.classes]]\npg = 2\nweight = 3\n";
    let r = run(toml);
    assert_eq!(r.records.len(), 4);
    assert_eq!(r.mechanism_count("link_failures"), 1);
    assert_eq!(r.classes[1].counters.drops + r.classes[2].counters.drops, 0);
}
