//! UET's entropy spraying (`rnic::uet_ev`) through the whole simulator, against closed forms:
//! cycling through k entropy values that reach k distinct equal paths balances a flow over
//! them to within one packet (a random draw per packet does not); REPS frozen by a timeout
//! after a link fails sends only on entropies that came back, so the flow loses nothing more.

use rdmalab::sim::Results;
use rdmalab::topology::routing::{NeighborOrder, Routes};

use super::fixtures::{run_finished, scenario};

/// One UET flow of `packets` 1000-byte packets from the host of leaf 0 to that of leaf 1
/// over `k` spines, spraying over `k` entropy values under `path_selection`. Its source
/// port, the first of its entropy values, is the first from 1000 on whose `k` values leave
/// leaf 0 by `k` different uplinks under the switches' ECMP hash (computed here as the
/// switch computes it). Returns the flow's packets on each uplink, and the results.
fn over_k_spines(k: usize, path_selection: &str, packets: u64) -> (Vec<u64>, Results) {
    let text = format!(
        "seed = 5\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = {k}\nhosts_per_leaf = 1\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{{ src = 0, dst = 1, size = {} }}]\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\npath_selection = \"{path_selection}\"\n[fabric.uet]\nentropies = {k}\n",
        packets * 1000
    );
    let mut s = scenario(&text, "spray.toml");
    let t = &s.topology;
    let leaf = t.ports[t.nodes[0].ports[0].idx()].peer_node;
    let ups: Vec<_> =
        t.nodes[leaf.idx()].ports.iter().copied().filter(|p| !t.is_host(t.ports[p.idx()].peer_node)).collect();
    assert_eq!(ups.len(), k);
    let routes = Routes::compute(t, NeighborOrder::Ascending).unwrap();
    let f = &s.flows[0];
    let (sip, dip) = (t.nodes[f.src.idx()].ips[0], t.nodes[f.dst.idx()].ips[0]);
    let uplink = |ev: u16| routes.ecmp_port(leaf, f.dst, sip, dip, ev, f.dport).unwrap();
    let distinct = |sport: u16| {
        let mut p: Vec<_> = (0..k as u16).map(|i| uplink(sport + i)).collect();
        p.sort_unstable();
        p.dedup();
        p.len() == k
    };
    let sport = (1000..2000).find(|&p| distinct(p)).expect("a source port whose values take k paths");
    s.flows[0].sport = Some(sport);
    let r = run_finished(s);
    (ups.iter().map(|p| r.ports[p.idx()].tx_packets).collect(), r)
}

fn spread(ups: &[u64]) -> u64 {
    ups.iter().max().unwrap() - ups.iter().min().unwrap()
}

/// k equal paths, k entropy values that the switches' hash sends to k distinct paths: under
/// `ev_cycle` each round of k packets puts one packet on every path, so the per-path counts
/// of n packets are each ⌊n/k⌋ or ⌈n/k⌉, at most one apart. A random value per packet
/// (`ev_spray`) on the same values spreads them as a multinomial draw (σ ≈ 27 packets per
/// path here) and fails that bound. k = 4 (a power of two, as htsim requires) and k = 3 (the
/// rounds pass over the offsets past k).
#[test]
fn spraying_over_k_equal_paths_balances_to_within_one_packet_per_path() {
    for (k, n) in [(4usize, 4003u64), (3, 3001)] {
        let (ups, r) = over_k_spines(k, "ev_cycle", n);
        assert_eq!(r.counters.payload_bytes_delivered, n * 1000);
        assert_eq!(r.counters.retx_packets, 0, "idle fabric");
        assert_eq!(ups.iter().sum::<u64>(), n, "every data packet crosses one uplink once: {ups:?}");
        assert!(spread(&ups) <= 1, "k = {k}: {ups:?}");
        let (random, r) = over_k_spines(k, "ev_spray", n);
        assert_eq!(random.iter().sum::<u64>(), n);
        assert_eq!(r.counters.payload_bytes_delivered, n * 1000);
        assert!(spread(&random) > 1, "k = {k}: random draws balanced as well as the cycle: {random:?}");
    }
}

/// One 5 MB UET flow over four spines under REPS on a trimming fabric; the link from leaf 0
/// (node 2) to the first spine (node 4) fails at 100 µs and routes are not recomputed while the
/// flow runs, so a packet whose entropy value hashes onto it is lost without a trace.
fn reps_past_a_dead_uplink(freeze: &str) -> Results {
    run_finished(scenario(&dead_uplink_text(freeze), "freeze.toml"))
}

fn dead_uplink_text(freeze: &str) -> String {
    format!(
        "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = 1\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{{ src = 0, dst = 1, size = 5000000 }}]\n\
         [[events]]\nkind = \"link_down\"\nat = \"100us\"\na = 2\nb = 4\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\nlossless = false\npath_selection = \"reps\"\nreroute_delay = \"1s\"\n\
         [fabric.trimming]\n[fabric.uet]\n{freeze}\n"
    )
}

/// REPS's freezing (htsim's REPS): the first timeout after the failure freezes the sender on
/// the last good entropy values it heard, which all crossed live paths both ways (their ACKs
/// came back after the failure: the timeout comes 100 µs after the first loss). Everything
/// it resends and sends from then on takes those values: each packet lost is one the
/// sender sent before that first timeout, and each times out once (the timer times every
/// packet from its own send time, as htsim's does) and is resent once, never lost again.
/// Without freezing, REPS draws fresh values whenever its buffer runs dry (one ACK per four
/// packets refills it), a quarter of them onto the dead link, the whole flow long: more
/// packets lost.
#[test]
fn a_timeout_freezes_reps_on_live_paths_and_nothing_more_is_lost() {
    let frozen = reps_past_a_dead_uplink("reps_freeze = \"10ms\"");
    let c = &frozen.counters;
    assert_eq!(c.payload_bytes_delivered, 5_000_000);
    let lost = c.payload_bytes_dropped / 1000;
    assert!(lost > 0, "the failure cost packets");
    assert_eq!((c.timeouts, c.retx_packets), (lost, lost), "{c:?}");
    // Every lost packet left before the first timeout: at most the packets of one RTO at
    // the line rate (1000 B at 100 Gb/s: 80 ns each) after the failure.
    let rto_packets = 100_000 / 80;
    assert!(lost < rto_packets, "{lost} lost");
    let plain = reps_past_a_dead_uplink("");
    assert_eq!(plain.counters.payload_bytes_delivered, 5_000_000);
    assert!(plain.counters.payload_bytes_dropped > c.payload_bytes_dropped, "{:?}", plain.counters);
}

/// `reps_freeze` is refused, by its full name, without REPS or without trimming.
#[test]
fn reps_freeze_needs_reps_and_trimming() {
    let base = "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\n\
                flows = [{ src = 0, dst = 1, size = 1000 }]\n[fabric]\nlossless = false\n";
    for (fabric, why) in [
        ("path_selection = \"ev_cycle\"\n[fabric.trimming]\n[fabric.uet]\nreps_freeze = \"1ms\"\n", "only REPS"),
        ("path_selection = \"reps\"\n[fabric.uet]\nreps_freeze = \"1ms\"\n", "trimming"),
    ] {
        let e = super::fixtures::input_error(&format!("{base}{fabric}"));
        assert!(e.contains("fabric.uet.reps_freeze") && e.contains(why), "{e}");
    }
}

/// 1, 2 and 4 threads give the same FCTs and counters under a REPS freeze and under
/// `ev_cycle` (the dead uplink's run: losses, a timeout, the freeze).
#[test]
fn frozen_reps_and_cycling_are_the_same_for_any_thread_count() {
    let cycled = dead_uplink_text("").replace("\"reps\"", "\"ev_cycle\"");
    for text in [dead_uplink_text("reps_freeze = \"10ms\""), cycled] {
        let one = super::fixtures::run_threads(&text, "freeze.toml", 1);
        assert_eq!(one.counters.payload_bytes_delivered, 5_000_000);
        for t in [2, 4] {
            let mut r = super::fixtures::run_threads(&text, "freeze.toml", t);
            r.counters.events = one.counters.events; // the engine's own events differ by design
            assert_eq!(super::fixtures::fct_text(&r), super::fixtures::fct_text(&one), "{t} threads");
            assert_eq!(format!("{:?}", r.counters), format!("{:?}", one.counters), "{t} threads");
        }
    }
}

/// The rate samples (`res.rates`) carry each UET QP's window (`window_bytes`): four UET
/// senders into one receiver, `window_packets = 128` (a cap of 128 packets of 1000 bytes).
/// With no congestion control the window is that cap exactly, in every sample; under NSCC it
/// is NSCC's window (below the cap here), never above the cap.
#[test]
fn rate_samples_carry_a_uet_qp_s_window() {
    let run = |cc: &str| {
        let text = format!(
            "seed = 1\n[topology]\nkind = \"star\"\nhosts = 5\nrate = \"100Gbps\"\ndelay = \"1us\"\n\
             [[traffic]]\nkind = \"incast\"\nsenders = [1, 2, 3, 4]\nreceiver = 0\nsize = 1000000\ntransport = \"uet\"\n\
             [fabric]\ncc = \"{cc}\"\nmtu = 1000\nlossless = false\nrate_sample_interval = \"5us\"\n\
             [fabric.trimming]\n[fabric.uet]\nwindow_packets = 128\n"
        );
        let r = run_finished(scenario(&text, "windows.toml"));
        assert_eq!(r.counters.payload_bytes_delivered, 4_000_000, "{cc}");
        let w: Vec<u64> = r.rate_samples.iter().map(|s| s.window).collect();
        assert!(w.len() > 20, "{cc}: {} samples", w.len());
        w
    };
    let cap = 128 * 1000;
    assert!(run("none").iter().all(|&w| w == cap));
    let nscc = run("nscc");
    assert!(nscc.iter().all(|&w| w > 0 && w <= cap), "{nscc:?}");
    assert!(nscc.iter().all(|&w| w < cap), "the transport's cap, not NSCC's window: {nscc:?}");
}

#[test]
fn an_entropy_mode_without_uet_traffic_is_warned_about() {
    // The entropy modes set only what a UET packet carries: over RC flows they route as
    // `ecmp` does, which the run's warnings say; over a UET flow they act and say nothing.
    let text = |mode: &str, transport: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\n\
             [[traffic]]\nkind = \"flows\"\ntransport = \"{transport}\"\nflows = [{{ src = 0, dst = 1, size = 1000 }}]\n\
             [fabric]\npath_selection = \"{mode}\"\n"
        )
    };
    let warned = |mode: &str, transport: &str| -> Vec<String> {
        let sim = rdmalab::sim::Simulation::from_scenario(scenario(&text(mode, transport), "spray.toml")).unwrap();
        sim.warnings().iter().filter(|w| w.contains("path_selection")).cloned().collect()
    };
    for mode in ["ev_spray", "ev_cycle", "ev_bitmap", "reps"] {
        let rc = warned(mode, "rc");
        assert_eq!(rc.len(), 1, "{mode}: {rc:?}");
        assert!(rc[0].starts_with(&format!("fabric.path_selection = \"{mode}\" ")), "{}", rc[0]);
        assert!(rc[0].contains("transport = \"uet\"") && rc[0].contains("\"ecmp\""), "{}", rc[0]);
        assert!(warned(mode, "uet").is_empty(), "{mode} over a UET flow acts");
    }
    assert!(warned("ecmp", "rc").is_empty());
}
