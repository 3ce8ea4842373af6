//! ConWeave (`fabric::lb::conweave`): on a congested asymmetric leaf-spine the
//! source ToRs reroute flows, at most once per epoch, and the destination ToRs' reorder
//! queues put the packets back in order (no out-of-order arrival at a NIC) where LetFlow
//! and spraying reorder; the queues stay bounded; determinism for 1, 2 and 4 threads; bad
//! input.

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::Rate;

use crate::fixtures;
use crate::lb::cross_leaf_flows;

/// 2 leaves x 8 hosts, 2 spines, 100 Gb/s and 1 µs; `fabric` settings and `traffic`.
fn leaf_spine(fabric: &str, traffic: &str) -> String {
    format!(
        "seed = 5\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 8\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n{traffic}\n[fabric]\n{fabric}\n"
    )
}

/// The link between leaf 0 (node 16) and spine 0 (node 18) at a quarter rate: the fabric
/// of the CONGA test, loaded with 300 flows of 200 KB each way at 60 Gb/s per direction.
fn congested(scheme: &str, extra: &str) -> (Scenario, Results) {
    let fabric = format!("path_selection = \"{scheme}\"\ncc = \"dcqcn\"\n{extra}");
    let mut s = fixtures::scenario(&leaf_spine(&fabric, &cross_leaf_flows(300, 200_000, 26_667)), "cw.toml");
    let l =
        s.topology.links.iter_mut().find(|l| (l.a.idx(), l.b.idx()) == (16, 18) || (l.a.idx(), l.b.idx()) == (18, 16));
    l.expect("leaf 0 - spine 0").rate = Rate::gbps(25);
    let r = fixtures::run_finished(s.clone());
    (s, r)
}

#[test]
fn conweave_delivers_in_order_where_letflow_and_spray_reorder() {
    // Leaf 0's uplink to spine 0 runs at 25 Gb/s: flows hashed or sprayed there queue
    // behind it. ConWeave's source ToRs see the late replies and move those flows; the
    // destination ToRs hold what the new path brings early, so every NIC receives in order.
    let (_, cw) = congested("conweave", "");
    let c = &cw.counters;
    let (reroutes, held) = (cw.mechanism_count("lb_reroutes"), cw.mechanism_count("reorder_held"));
    eprintln!("conweave: {reroutes} reroutes, {held} held, {} out of order", c.ooo_packets);
    assert!(reroutes > 0 && held > 0, "rerouted and reordered: {:?}", cw.mechanism_counters);
    assert_eq!(c.ooo_packets, 0, "in order at every NIC: {c:?}");
    assert_eq!(c.ooo_packets, cw.records.iter().map(|r| r.rx.ooo_packets as u64).sum::<u64>());
    // LetFlow moves a flow only after a gap of `flowlet_timeout`; at its default 100 us this
    // fabric gives it few chances (25 packets out of order with the reference's PFC headroom
    // on the 25 Gb/s link, none with the headroom that also counts the frame that crossed the
    // threshold, docs/model/pfc.md "PFC headroom"): at 50 us it moves flows between bursts.
    let letflow = "[fabric.lb]\nflowlet_timeout = \"50us\"\n";
    for (scheme, extra) in [("letflow", letflow), ("spray", "")] {
        let (_, r) = congested(scheme, extra);
        eprintln!("{scheme}: {} out of order", r.counters.ooo_packets);
        assert!(r.counters.ooo_packets > 0, "{scheme} reorders: {:?}", r.counters);
    }
}

#[test]
fn reorder_queues_stay_bounded() {
    // Every held packet was admitted by the MMU: the shared buffer bounds what a ToR holds.
    let (s, r) = congested("conweave", "");
    let col = |r: &rdmalab::sim::Results, c: &str| fixtures::table_u64(r, "reorder", c);
    let (queues, packets, bytes) = (col(&r, "queues"), col(&r, "packets"), col(&r, "bytes"));
    assert!(!bytes.is_empty());
    let most = bytes.iter().copied().max().unwrap_or(0);
    assert!(most > 0 && most <= s.config.buffer_bytes, "{most} B held at most");
    assert!(queues.iter().all(|&q| q <= 8 * 24));
    assert!(packets.iter().zip(&bytes).all(|(&p, &b)| p * 1000 <= b));
    // One queue per host port: a flow that finds it taken is sent on unheld (and counted),
    // never more queues than ports.
    let (_, one) = congested("conweave", "[fabric.lb]\nconweave_queues = 1");
    assert!(one.mechanism_count("reorder_unheld") > 0, "{:?}", one.mechanism_counters);
    assert!(col(&one, "queues").iter().all(|&q| q <= 8), "one queue per host port of a leaf");
    assert!(one.counters.ooo_packets > 0, "unheld packets arrive out of order");
}

#[test]
fn held_packets_admitted_on_release_still_arrive_in_order() {
    // As in the ns-3 artifact, held packets wait outside the buffer and are
    // admitted when released. On this fabric (no PFC pause either way) the same packets are
    // held and every NIC still receives in order.
    let (_, a) = congested("conweave", "");
    let (_, b) = congested("conweave", "[fabric.lb]\nconweave_admit_on_release = true");
    assert!(b.mechanism_count("reorder_held") > 0 && b.counters.ooo_packets == 0, "{:?}", b.mechanism_counters);
    assert_eq!(a.mechanism_count("reorder_held"), b.mechanism_count("reorder_held"));
}

#[test]
fn released_packets_the_buffer_refuses_are_the_artifacts_drops_not_a_lossless_failure() {
    // Held outside the buffer (the ns-3 artifact), packets released into a full
    // ingress are dropped, as the artifact's DoSwitchSend drops them, lossless fabric or not;
    // and what they take of the buffer when released is not in the PFC thresholds' account,
    // so packets arriving behind them can be dropped too. Such a run finishes (go-back-N
    // resends) and its drops are counted, the released ones apart; held inside the buffer
    // (ours), nothing is dropped.
    let small = "buffer_mb = 1\n[fabric.lb]\nconweave_admit_on_release = true";
    let (_, r) = congested("conweave", small);
    let release_drops = r.mechanism_count("reorder_release_drops");
    eprintln!("{release_drops} release drops of {} drops; {:?}", r.counters.drops, r.mechanism_counters);
    assert!(release_drops > 0, "{:?}", r.mechanism_counters);
    assert!(r.counters.drops >= release_drops, "{:?}", r.counters);
    assert!(r.counters.retx_packets > 0);
    let (_, ours) = congested("conweave", "buffer_mb = 1");
    assert_eq!(ours.counters.drops, 0, "{:?}", ours.counters);
    assert!(!ours.mechanism_counters.conditional.iter().any(|(n, _)| n == "reorder_release_drops"));
}

#[test]
fn out_of_order_arrivals_are_counted_by_cause() {
    // A 1 ns flush margin releases reorder queues before their TAIL: the packets
    // released reach their NIC out of order. The destination ToRs' cause counts cover every
    // out-of-order arrival at a NIC (lossless, go-back-N, every flow tracked: a 2^20 table).
    let names = rdmalab::fabric::lb::conweave::CAUSE_NAMES;
    let at = |name: &str| names.iter().position(|&n| n == name).unwrap();
    let (_, r) = congested("conweave", "[fabric.lb]\nconweave_flush_extra = \"1ns\"\nconweave_table = 1048576");
    let (c, m) = (&r.counters, &r.mechanism_counters);
    // The causes' counts, by the names the run reports them under.
    let by_cause = |what: &str| names.iter().map(|n| m.get(&format!("{what}_{n}"))).collect::<Vec<u64>>();
    eprintln!("{:?} {:?} of {} out of order", by_cause("reorder_ooo"), by_cause("reorder_gaps"), c.ooo_packets);
    assert_eq!(m.get("lb_untracked"), 0, "{m:?}");
    assert!(m.get("reorder_timeouts") > 0 && c.ooo_packets > 0, "{m:?}");
    assert_eq!(by_cause("reorder_ooo").iter().sum::<u64>(), c.ooo_packets, "{m:?}");
    assert!(by_cause("reorder_gaps")[at("deadline")] > 0, "{m:?}");
    // With the flush margin as configured the same flows arrive in order: nothing counted.
    let (_, r) = congested("conweave", "[fabric.lb]\nconweave_table = 1048576");
    let ooo: u64 = names.iter().map(|n| r.mechanism_count(&format!("reorder_ooo_{n}"))).sum();
    assert_eq!((r.counters.ooo_packets, ooo), (0, 0), "{:?}", r.mechanism_counters);
}

#[test]
fn rerouted_packets_ahead_of_their_flows_start_are_counted() {
    // Spine 0's link to leaf 1 runs at 100 Mb/s (84 µs a packet): a flow that
    // starts through it has its INIT reply late, and what it sends through spine 1 after the
    // TAIL reaches the destination ToR long before the flow's first packet does. The ToR
    // holds those packets for the default wait (it has no phase-0 timing to predict the
    // TAIL by), then sends them on while the NIC still waits for byte 0: `unseen_start`,
    // which the causes missed before. Every out-of-order arrival has its cause.
    let flows: Vec<String> = (0..8).map(|i| format!("{{ src = {i}, dst = {}, size = 1000000 }}", 8 + i)).collect();
    let traffic = format!("[[traffic]]\nkind = \"flows\"\nflows = [{}]\n", flows.join(", "));
    let mut s = fixtures::scenario(&leaf_spine("path_selection = \"conweave\"\ncc = \"dcqcn\"", &traffic), "cw.toml");
    let l =
        s.topology.links.iter_mut().find(|l| [l.a.idx(), l.b.idx()] == [17, 18] || [l.a.idx(), l.b.idx()] == [18, 17]);
    l.expect("leaf 1 - spine 0").rate = Rate::mbps(100);
    let r = fixtures::run_finished(s);
    let (c, m) = (&r.counters, &r.mechanism_counters);
    let names = rdmalab::fabric::lb::conweave::CAUSE_NAMES;
    let by_cause = |what: &str| names.iter().map(|n| m.get(&format!("{what}_{n}"))).collect::<Vec<u64>>();
    eprintln!("{:?} {:?} of {} out of order", by_cause("reorder_ooo"), by_cause("reorder_gaps"), c.ooo_packets);
    assert_eq!(m.get("lb_untracked"), 0, "{m:?}");
    assert!(m.get("reorder_ooo_unseen_start") > 0 && m.get("reorder_gaps_unseen_start") > 0, "{m:?}");
    assert_eq!(by_cause("reorder_ooo").iter().sum::<u64>(), c.ooo_packets, "{m:?}");
}

#[test]
fn an_exact_table_tracks_every_flow_it_has_room_for() {
    // 600 flows cross the fabric; at 2^16 entries per ToR the exact table keeps
    // them all (the direct one, slots chosen by hash, would leave colliding flows out).
    let (_, r) = congested("conweave", "");
    let m = &r.mechanism_counters;
    assert_eq!((m.get("lb_untracked"), m.get("lb_table_full")), (0, 0), "{m:?}");
    assert!(m.conditional.iter().any(|(n, _)| n == "lb_table_full"), "the exact table reports its count: {m:?}");
    // 4 entries (a flow stays in one for 300 µs after its last packet): a full table leaves
    // flows out, each of their packets counted as full. The churn also shifts entries that
    // hold reorder queues (24 times in this run when counted), which `release` checks.
    let (_, r) = congested("conweave", "[fabric.lb]\nconweave_table = 4");
    let m = &r.mechanism_counters;
    assert!(m.get("lb_table_full") > 0 && m.get("lb_untracked") == m.get("lb_table_full"), "{m:?}");
    // The direct table collides instead: untracked, never full, and no count for it.
    let (_, r) = congested("conweave", "[fabric.lb]\nconweave_table = 4\nconweave_table_kind = \"direct\"");
    let m = &r.mechanism_counters;
    assert!(m.get("lb_untracked") > 0 && !m.conditional.iter().any(|(n, _)| n == "lb_table_full"), "{m:?}");
}

/// The FCT file, the reorder and balance rows and the counters of `toml` run with
/// `threads` threads.
fn outputs(toml: &str, threads: u32) -> (String, String, (u64, u64, u64, u64, u64)) {
    let r = fixtures::run_threads(toml, "cw.toml", threads);
    let m = |name: &str| r.mechanism_count(name);
    let counts =
        (m("lb_reroutes"), m("reorder_held"), m("reorder_timeouts"), m("lb_control_packets"), r.counters.ooo_packets);
    (fixtures::fct_text(&r), format!("{:?}", r.tables), counts)
}

#[test]
fn conweave_is_the_same_for_any_thread_count() {
    let traffic = "[[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"300us\"\n";
    let toml = format!(
        "seed = 2\n[topology]\nkind = \"leaf_spine\"\nleaves = 4\nspines = 4\nhosts_per_leaf = 4\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n{traffic}\n[fabric]\n\
         path_selection = \"conweave\"\ncc = \"dcqcn\"\n[fabric.lb]\nconweave_reply_extra = \"1ns\"\n"
    );
    let one = outputs(&toml, 1);
    let (reroutes, held) = (one.2 .0, one.2 .1);
    assert!(reroutes > 0 && held > 0, "a 1 ns reply margin makes replies late: {:?}", one.2);
    for threads in [2, 4] {
        assert!(one == outputs(&toml, threads), "outputs differ with {threads} threads");
    }
}

#[test]
fn conweave_on_a_fat_tree_is_the_same_for_any_thread_count() {
    // The aggregation and core switches follow the tag; partitions cut between them.
    let toml = "seed = 4\n[topology]\nkind = \"fat_tree\"\nk = 4\nhost_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\n\
                delay = \"1us\"\n[[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"300us\"\n\
                [fabric]\npath_selection = \"conweave\"\ncc = \"dcqcn\"\n[fabric.lb]\nconweave_reply_extra = \"1ns\"\n";
    let one = outputs(toml, 1);
    assert!(one.2 .0 > 0 && one.2 .3 > 0, "rerouted, with replies: {:?}", one.2);
    assert!(one == outputs(toml, 2), "outputs differ with 2 threads");
}

#[test]
fn bad_conweave_input_names_the_field() {
    let flows = cross_leaf_flows(1, 1000, 0);
    let toml = leaf_spine("path_selection = \"conweave\"\n[fabric.lb]\nconweave_table = 1000", &flows);
    let e = fixtures::input_error(&toml);
    assert!(e.contains("fabric.lb.conweave_table") && e.contains("power of two"), "{e}");
    let e =
        fixtures::input_error(&leaf_spine("path_selection = \"conweave\"\n[fabric.lb]\nconweave_queues = 0", &flows));
    assert!(e.contains("fabric.lb.conweave_queues"), "{e}");
    let kind = leaf_spine("path_selection = \"conweave\"\n[fabric.lb]\nconweave_table_kind = \"hashed\"", &flows);
    let e = fixtures::input_error(&kind);
    assert!(
        e.contains("bad.toml") && e.contains("fabric.lb.conweave_table_kind") && e.contains("\"exact\" or \"direct\""),
        "{e}"
    );
    // Switches linked within a tier (a full mesh of ToRs) have no upward path to name.
    let mesh = "[topology]\nkind = \"full_mesh\"\nswitches = 3\nhosts_per_switch = 2\n[[traffic]]\nkind = \"flows\"\n\
                flows = [{ src = 0, dst = 4, size = 1000 }]\n[fabric]\npath_selection = \"conweave\"\n";
    let e = fixtures::input_error(mesh);
    assert!(e.contains("fabric.path_selection") && e.contains("same tier"), "{e}");
    let hpcc = leaf_spine("path_selection = \"conweave\"\ncc = \"hpcc\"", &flows);
    assert!(fixtures::input_error(&hpcc).contains("INT"));
}

/// A k = 4 fat tree, 100 Gb/s and 1 µs: hosts 0..16, edges (the ToRs) 16..24, aggregation
/// 24..32, cores 32..36; one 20 MB flow from host 0 (pod 0) to host 15 (pod 3); `fabric`.
fn fat_tree_one_flow(fabric: &str) -> (rdmalab::topology::Topology, Results) {
    let toml = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\nhost_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\n\
         delay = \"1us\"\n[[traffic]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 15, size = 20000000 }}]\n\
         [fabric]\ncc = \"dcqcn\"\n{fabric}\n"
    );
    let mut s = fixtures::scenario(&toml, "cw.toml");
    // Aggregation 24's link to core 32 at 10 Gb/s: packets of a path through it queue there,
    // and those of the next path overtake them.
    let l =
        s.topology.links.iter_mut().find(|l| [l.a.idx(), l.b.idx()] == [24, 32] || [l.a.idx(), l.b.idx()] == [32, 24]);
    l.expect("aggregation 24 - core 32").rate = Rate::gbps(10);
    let r = fixtures::run_finished(s.clone());
    (s.topology, r)
}

/// The paths pod 0's aggregation switches sent the flow's data on: their links up to a
/// core that carried at least 100 packets (only the flow's data goes up there; its ACKs
/// and ConWeave's replies go up in pod 3).
fn paths_used(t: &rdmalab::topology::Topology, r: &Results) -> usize {
    [24, 25]
        .iter()
        .flat_map(|&a: &usize| t.nodes[a].ports.iter())
        .filter(|p| t.ports[p.idx()].peer_node.idx() >= 32 && r.ports[p.idx()].tx_packets >= 100)
        .count()
}

#[test]
fn conweave_on_a_fat_tree_takes_every_path_and_delivers_in_order() {
    // With a 1 ns reply margin every INIT's reply is late: the source ToR moves
    // the flow at every epoch, among all (k/2)^2 = 4 paths to another pod; the aggregation
    // switches follow the path it chose (hashing, they would keep the flow on one core link
    // each, 2 paths at most), and the destination ToR puts the packets back in order.
    // The artifact's lossless fat-tree timers (`run.py:273-275`: 64 µs flush margin, 600 µs
    // default wait, 1 ms expiry); with leaf-spine's 16 µs margin one queue here is released
    // by its deadline before its TAIL.
    let timers = "conweave_flush_extra = \"64us\"\nconweave_default_wait = \"600us\"\nconweave_tx_expiry = \"1ms\"";
    let (t, cw) = fat_tree_one_flow(&format!(
        "path_selection = \"conweave\"\n[fabric.lb]\nconweave_reply_extra = \"1ns\"\n{timers}"
    ));
    let (reroutes, held) = (cw.mechanism_count("lb_reroutes"), cw.mechanism_count("reorder_held"));
    eprintln!(
        "fat tree: {reroutes} reroutes, {held} held, {} out of order, {} paths",
        cw.counters.ooo_packets,
        paths_used(&t, &cw)
    );
    assert_eq!(cw.records.len(), 1);
    assert!(reroutes > 0 && held > 0, "{:?}", cw.mechanism_counters);
    assert_eq!(cw.counters.ooo_packets, 0, "in order at the NIC: {:?}", cw.counters);
    assert_eq!(paths_used(&t, &cw), 4, "every path from the ToR to the other pod");
    // The same flow hashed (ECMP) takes one path.
    let (t, ecmp) = fat_tree_one_flow("path_selection = \"ecmp\"");
    assert_eq!(paths_used(&t, &ecmp), 1);
}
