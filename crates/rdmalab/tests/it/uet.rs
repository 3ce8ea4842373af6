//! The Ultra Ethernet transport (`transport = "uet"`: `rnic::uet`, `sim::mech::uet`,
//! `sim/host/uet_rx.rs`) through the whole simulator, against closed forms: one flow's FCT on
//! an idle path; one lost packet costs one timeout and one retransmission, every byte
//! delivered once.

use rdmalab::sim::Results;

use super::fixtures::{run_finished, scenario};

/// Two hosts through one switch, 100 Gb/s, 1 µs links, 1000-byte packets; `flows` from 0 to
/// 1 over UET, with `fabric` added to `[fabric]`.
fn two_hosts(size: u64, fabric: &str) -> String {
    format!(
        "seed = {{SEED}}\n[topology]\nkind = \"star\"\nhosts = 2\nrate = \"100Gbps\"\ndelay = \"1us\"\n\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{{ src = 0, dst = 1, size = {size} }}]\n\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\n{fabric}\n"
    )
}

fn run_seed(text: &str, seed: u64) -> Results {
    run_finished(scenario(&text.replace("{SEED}", &seed.to_string()), "uet.toml"))
}

/// One flow alone: the sender serialises every packet back to back at line rate, the switch
/// stores and forwards each (a last packet shorter than the one before it waits behind that
/// one), and the last packet's ACK (sent at once: a message's last packet asks for one)
/// comes back over two links. With packets of `w_i` bytes on the wire, ACKs of `a` bytes,
/// 80 ps a byte at 100 Gb/s and `d` = 1 µs:
/// FCT = (Σ w_i + max(w_{n-1}, w_n) + 2a) × 80 ps + 4d.
#[test]
fn one_flow_on_an_idle_path_takes_the_closed_form() {
    for size in [1_000_000u64, 123_456, 999] {
        let text = two_hosts(size, "");
        let s = scenario(&text.replace("{SEED}", "1"), "uet.toml");
        let (hdr, ack) = (s.config.header_bytes as u64, s.config.ack_wire() as u64);
        let r = run_finished(s);
        let (full, rest) = (size / 1000, size % 1000);
        let n = full + (rest > 0) as u64;
        let last = if rest > 0 { rest } else { 1000 } + hdr;
        let tail = if n > 1 { last.max(1000 + hdr) } else { last };
        let wire: u64 = size + n * hdr;
        let want_ps = (wire + tail + 2 * ack) * 80 + 4 * 1_000_000;
        assert_eq!(r.records.len(), 1);
        assert_eq!(r.records[0].fct.0, want_ps, "size {size}");
        assert_eq!(r.counters.payload_bytes_delivered, size);
        assert_eq!((r.counters.retx_packets, r.counters.timeouts, r.counters.nacks), (0, 0, 0));
    }
}

/// The first seed whose lossy run loses exactly one packet, a data packet.
fn one_loss_seed(text: &str) -> u64 {
    (1..400)
        .find(|&seed| {
            let r = run_seed(text, seed);
            r.counters.link_error_losses == 1 && r.counters.retx_packets > 0
        })
        .expect("a seed with exactly one data packet lost")
}

/// A lost packet (no trimming: nothing names it) is repaired by the timeout alone: one
/// timeout, one packet resent (the others were selectively acknowledged), every byte placed
/// once.
#[test]
fn one_lost_packet_costs_one_timeout_and_one_retransmission() {
    let size = 1_000_000;
    let text = two_hosts(size, "lossless = false\nerror_rate = 0.0005\n");
    let seed = one_loss_seed(&text);
    let r = run_seed(&text, seed);
    assert_eq!((r.counters.timeouts, r.counters.retx_packets), (1, 1));
    assert_eq!((r.records[0].retx_packets, r.records[0].timeouts, r.records[0].rx.trimmed_packets), (1, 1, 0));
    assert_eq!(r.counters.payload_bytes_delivered, size, "every byte once");
    assert_eq!(r.counters.payload_bytes_discarded, 0, "no duplicate reached the receiver");
    let clean = run_seed(&two_hosts(size, ""), 1);
    // The lost packet is timed from its own send time (at the latest when the clean run's
    // last packet left) and resent 100 µs later; the resent packet and its ACK then cross
    // the two links (4 µs of propagation, under a µs of serialisation): the delay is at most
    // an RTO and a packet's round trip, and the run lasts at least an RTO and that.
    let (lossy, clean) = (r.records[0].fct.0, clean.records[0].fct.0);
    assert!(lossy <= clean + 100_000_000 + 5_000_000, "lossy {lossy} ps, clean {clean} ps");
    assert!(lossy >= 100_000_000 + 4_000_000, "lossy {lossy} ps");
}

/// One UET flow of 10,000 packets from the single host of leaf 0 to that of leaf 1 over
/// four spines, under `path_selection`, with `uet` added to `[fabric.uet]`: its packets on
/// each uplink of leaf 0, and the results.
fn over_four_spines(path_selection: &str, uet: &str) -> (Vec<u64>, Results) {
    let text = format!(
        "seed = 5\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = 1\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{{ src = 0, dst = 1, size = 10000000 }}]\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\npath_selection = \"{path_selection}\"\n[fabric.uet]\n{uet}\n"
    );
    let s = scenario(&text, "uet.toml");
    let t = &s.topology;
    let leaf = t.ports[t.nodes[0].ports[0].idx()].peer_node;
    let ups: Vec<_> =
        t.nodes[leaf.idx()].ports.iter().copied().filter(|p| !t.is_host(t.ports[p.idx()].peer_node)).collect();
    let r = run_finished(s);
    (ups.iter().map(|p| r.ports[p.idx()].tx_packets).collect(), r)
}

/// Oblivious spraying: each packet draws one of E entropy values at random and the ECMP hash
/// sends each value up one of k = 4 equal uplinks, so an uplink's share of n packets has
/// variance p(1-p)/E (the hash's spread over the values) + p(1-p)/n (the draws), p = 1/k.
/// With E = 65,536 and n = 10,000: σ = 0.47 % of the packets; every uplink is within 4.5 σ
/// of a quarter. Without spraying, the flow takes one uplink.
#[test]
fn spraying_by_entropy_spreads_a_flow_over_equal_paths_as_the_hash_does() {
    let (ups, r) = over_four_spines("ev_spray", "entropies = 65536");
    assert_eq!(r.counters.payload_bytes_delivered, 10_000_000);
    let n: u64 = ups.iter().sum();
    assert_eq!(n, 10_000, "every data packet crosses one uplink once: {ups:?}");
    let p: f64 = 0.25;
    let sigma = (p * (1.0 - p) / 65536.0 + p * (1.0 - p) / n as f64).sqrt();
    for &u in &ups {
        let share = u as f64 / n as f64;
        assert!((share - p).abs() < 4.5 * sigma, "uplinks {ups:?}, σ {sigma}");
    }
    let (ecmp, _) = over_four_spines("ecmp", "");
    assert_eq!(ecmp.iter().filter(|&&u| u > 0).count(), 1, "one ECMP path: {ecmp:?}");
}

/// REPS on an idle fabric: no ACK comes back marked, so after the first round trip the
/// sender sends on recycled entropies; the flow completes with every byte once, spread over
/// more than one path.
#[test]
fn reps_completes_a_flow_over_recycled_entropies() {
    let (ups, r) = over_four_spines("reps", "ack_every = 1");
    assert_eq!(r.counters.payload_bytes_delivered, 10_000_000);
    assert_eq!(r.counters.payload_bytes_discarded, 0);
    assert_eq!(ups.iter().sum::<u64>(), 10_000);
    assert!(ups.iter().filter(|&&u| u > 0).count() > 1, "{ups:?}");
}

/// 1, 2 and 4 threads give the same FCT file and counters for UET with either spraying, on a
/// lossy incast across the spines (timeouts and resends included).
#[test]
fn uet_runs_are_the_same_for_any_thread_count() {
    for ps in ["ev_spray", "ev_cycle", "ev_bitmap", "reps", "ecmp"] {
        let flows: Vec<String> =
            (0..6).map(|i| format!("{{ src = {}, dst = 7, size = {} }}", i, 200_000 + 37_000 * i)).collect();
        let text = format!(
            "seed = 9\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = 4\n\
             host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
             [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{}]\n\
             [fabric]\ncc = \"dcqcn\"\nmtu = 1000\nlossless = false\nerror_rate = 0.0002\npath_selection = \"{ps}\"\n",
            flows.join(", ")
        );
        let one = super::fixtures::run_threads(&text, "uet.toml", 1);
        assert_eq!(one.records.len(), 6);
        assert!(one.counters.timeouts > 0, "{ps}: the lossy links cost timeouts");
        // Every flow completed: the flows' timeouts are the run's.
        assert_eq!(one.records.iter().map(|f| f.timeouts as u64).sum::<u64>(), one.counters.timeouts, "{ps}");
        for t in [2, 4] {
            let mut r = super::fixtures::run_threads(&text, "uet.toml", t);
            r.counters.events = one.counters.events; // the engine's own events differ by design
            assert_eq!(super::fixtures::fct_text(&r), super::fixtures::fct_text(&one), "{ps}, {t} threads");
            assert_eq!(format!("{:?}", r.counters), format!("{:?}", one.counters), "{ps}, {t} threads");
            let per_flow =
                |r: &Results| r.records.iter().map(|f| (f.flow, f.timeouts, f.nacks, f.rx)).collect::<Vec<_>>();
            assert_eq!(per_flow(&r), per_flow(&one), "{ps}, {t} threads");
        }
    }
}

/// Three hosts on one switch, 100 Gb/s, 1 µs; hosts 0 and 1 each send `size` bytes to
/// host 2 over UET, on a lossy fabric with `[fabric.trimming]` given by `trim`.
fn incast(size: u64, trim: &str) -> String {
    format!(
        "seed = 2\n[topology]\nkind = \"star\"\nhosts = 3\nrate = \"100Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\n\
         flows = [{{ src = 0, dst = 2, size = {size} }}, {{ src = 1, dst = 2, size = {size} }}]\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\nlossless = false\n[fabric.trimming]\n{trim}\n"
    )
}

/// A 2→1 incast at line rate builds a queue at the receiver's port; past 20 KB every data
/// packet is trimmed to its 48-byte header, which the receiver NACKs and the sender resends
/// exactly once: as many resends as trims, as many NACKs, no timeout, and every byte
/// delivered once (nothing discarded as a duplicate).
#[test]
fn a_trimmed_packet_is_resent_once_and_the_messages_complete() {
    let r = run_finished(scenario(&incast(500_000, "threshold_kb = 20"), "uet.toml"));
    let trims = r.mechanism_counters.get("trims");
    assert!(trims > 10, "the incast trims: {trims}");
    assert_eq!(r.mechanism_counters.get("trimmed_bytes"), trims * 1000);
    assert_eq!(r.counters.retx_packets, trims, "each trimmed packet resent once");
    assert_eq!(r.counters.nacks, trims);
    assert_eq!(r.counters.timeouts, 0);
    assert_eq!(r.records.len(), 2);
    assert_eq!(r.counters.payload_bytes_delivered, 1_000_000);
    assert_eq!(r.counters.payload_bytes_discarded, 0, "no packet delivered twice");
    assert_eq!(r.counters.drops, 0, "trimmed, not dropped");
}

/// The flow table's trim and timeout columns, against counts kept elsewhere: each flow's
/// `trimmed_packets` (counted as its headers reach the receiver) is the NACKs its sender
/// heard and the packets it resent, and the flows' sum is the switches' own `trims`; no
/// flow timed out. Both senders of the 2→1 incast are trimmed.
#[test]
fn the_flow_table_counts_each_flow_s_trimmed_packets_where_the_switch_counted_them() {
    let r = run_finished(scenario(&incast(500_000, "threshold_kb = 20"), "uet.toml"));
    assert_eq!(r.records.len(), 2);
    for f in &r.records {
        assert!(f.rx.trimmed_packets > 0, "flow {}: {:?}", f.flow, f);
        assert_eq!((f.nacks, f.retx_packets, f.timeouts), (f.rx.trimmed_packets, f.rx.trimmed_packets, 0));
    }
    let sum: u64 = r.records.iter().map(|f| f.rx.trimmed_packets as u64).sum();
    assert_eq!(sum, r.mechanism_counters.get("trims"));
    // The same incast over RC (no trimming: a UET packet's flag is what a switch trims)
    // reports none.
    let rc = run_finished(scenario(&incast(500_000, "threshold_kb = 20").replace("\"uet\"", "\"rc\""), "rc.toml"));
    assert_eq!(rc.mechanism_counters.get("trims"), 0);
    assert!(rc.records.iter().all(|f| f.rx.trimmed_packets == 0));
}

/// Trims by switch egress port (`ports.trims`, `ports.trimmed_bytes`): the port counts add up
/// to the run's `trims` and `trimmed_bytes` (counted apart, by the mechanism), and every
/// trim of the 2→1 incast falls on the switch's port towards the receiver, host 2, where
/// the two senders' line rates meet. A run without trimming reports none anywhere.
#[test]
fn trims_fall_on_the_incast_receiver_s_port_and_sum_to_the_counters() {
    let s = scenario(&incast(500_000, "threshold_kb = 20"), "uet.toml");
    let to_receiver = s.topology.ports[s.topology.nodes[2].ports[0].idx()].peer;
    let r = run_finished(s);
    let (trims, bytes) = (r.mechanism_counters.get("trims"), r.mechanism_counters.get("trimmed_bytes"));
    assert!(trims > 10, "{trims}");
    assert_eq!(r.ports.iter().map(|p| p.trims).sum::<u64>(), trims);
    assert_eq!(r.ports.iter().map(|p| p.trimmed_bytes).sum::<u64>(), bytes);
    let at = &r.ports[to_receiver.idx()];
    assert_eq!((at.trims, at.trimmed_bytes), (trims, bytes), "all at the receiver's port");
    let plain = run_finished(scenario(&two_hosts(100_000, "").replace("{SEED}", "1"), "uet.toml"));
    assert!(plain.ports.iter().all(|p| (p.trims, p.trimmed_bytes) == (0, 0)));
}

/// Per-port trims are the same for 1, 2 and 4 threads: an incast of four hosts of leaf 0
/// onto one of leaf 1, trimmed at leaf 1's port towards it (each port's switch counts its
/// own; the merge keeps the owner's count).
#[test]
fn per_port_trims_are_the_same_for_any_thread_count() {
    let flows: Vec<String> = (0..4).map(|i| format!("{{ src = {i}, dst = 4, size = 300000 }}")).collect();
    let text = format!(
        "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{}]\n\
         [fabric]\ncc = \"none\"\nmtu = 1000\nlossless = false\npath_selection = \"ev_spray\"\n\
         [fabric.trimming]\nthreshold_kb = 20\n",
        flows.join(", ")
    );
    let trims = |r: &Results| r.ports.iter().map(|p| (p.trims, p.trimmed_bytes)).collect::<Vec<_>>();
    let one = super::fixtures::run_threads(&text, "uet.toml", 1);
    let sum: u64 = one.ports.iter().map(|p| p.trims).sum();
    assert!(sum > 0 && sum == one.mechanism_counters.get("trims"), "{sum}");
    for t in [2, 4] {
        let r = super::fixtures::run_threads(&text, "uet.toml", t);
        assert_eq!(trims(&r), trims(&one), "{t} threads");
    }
}

#[test]
fn bad_trimming_keys_are_refused_by_their_full_name() {
    for (key, field) in [
        ("threshold_kb = 0", "fabric.trimming.threshold_kb"),
        ("class = 8", "fabric.trimming.class"),
        ("header_bytes = 0", "fabric.trimming.header_bytes"),
        // A full packet here is 1,048 bytes (1,000 of payload, 48 of header).
        ("header_bytes = 1049", "fabric.trimming.header_bytes"),
        ("threshold = 5", "threshold"),
    ] {
        let e = super::fixtures::input_error(&incast(1000, key));
        assert!(e.contains(field), "{key}: {e}");
    }
    scenario(&incast(1000, "header_bytes = 1048"), "uet.toml");
    // A zero time names the word its field takes, and only that: `fabric.uet.rto` takes
    // "auto", `reps_freeze` none ("none" is `fabric.rto`'s).
    let uet = |line: &str| two_hosts(1000, &format!("path_selection = \"reps\"\n[fabric.uet]\n{line}\n"));
    let e = super::fixtures::input_error(&uet("rto = \"0us\"").replace("{SEED}", "1"));
    assert!(e.contains("fabric.uet.rto") && e.contains("(or \"auto\")") && !e.contains("none"), "{e}");
    let e = super::fixtures::input_error(&uet("reps_freeze = \"0us\"").replace("{SEED}", "1"));
    assert!(e.contains("fabric.uet.reps_freeze") && e.ends_with("must be positive"), "{e}");
    let e =
        super::fixtures::input_error(&two_hosts(1000, "[fabric.uet]\nwindow_packets = 100\n").replace("{SEED}", "1"));
    assert!(e.contains("fabric.uet.window_packets"), "{e}");
    let big = "[fabric.uet]\nwindow_packets = 64\nreps_buffer = 65\n";
    let e = super::fixtures::input_error(&two_hosts(1000, big).replace("{SEED}", "1"));
    assert!(e.contains("fabric.uet.reps_buffer"), "{e}");
    // CONGA's feedback would overwrite the SACK base a UET ACK carries.
    let e = super::fixtures::input_error(&two_hosts(1000, "path_selection = \"conga\"").replace("{SEED}", "1"));
    assert!(e.contains("fabric.path_selection") && e.contains("uet"), "{e}");
}

/// `examples/uet_incast.toml` runs to the end: its eight flows complete, every byte placed
/// once. DCQCN does not hear trims (a trim-aware CC is NSCC's part), so the senders keep
/// their rate and most packets are trimmed more than once; a timeout may resend packets that
/// arrived but were never reported (the 64-bit SACK covers part of the window), which the
/// receiver discards as duplicates.
#[test]
fn the_example_incast_completes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/uet_incast.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let r = run_finished(scenario(&text, "uet_incast.toml"));
    assert_eq!(r.records.len(), 8);
    assert_eq!(r.counters.payload_bytes_delivered, 8 * 500_000, "every byte placed once");
    assert!(r.mechanism_counters.get("trims") > 0);
    assert!(r.counters.retx_packets >= r.mechanism_counters.get("trims"), "each trim resent");
}

/// An application's messages over UET (the host model's closed loop: batches of ten
/// 2,500-byte WRs, 1,024-byte packets, so every message ends mid-packet and the next starts
/// on a packet boundary): every batch completes, as over RC, and the bytes delivered are the
/// bytes posted.
#[test]
fn application_messages_complete_over_uet_as_over_rc() {
    let run = |transport: &str| {
        let toml = format!(
            "stop_time = \"2ms\"\n[topology]\nkind = \"star\"\nhosts = 7\nrate = \"40Gbps\"\ndelay = \"1us\"\n\
             [fabric]\nmtu = 1024\n[host]\nmechanism = \"raw\"\n\
             [[app]]\nhost = 0\ndst = 6\ncount = 2\nsize = 2500\nwr_num = 10\ntotal_bytes = 250000\ntransport = \"{transport}\"\n"
        );
        let mut sim = scenario(&toml, "uet.toml").simulation().expect("valid scenario");
        sim.run_to_end();
        sim.results().expect("conservation holds")
    };
    let (rc, uet) = (run("rc"), run("uet"));
    let done = |r: &Results| r.host_batches.iter().filter(|b| b.seen.0 != u64::MAX).count();
    assert_eq!(done(&uet), done(&rc));
    assert_eq!(done(&uet), 20, "10 batches of 25,000 bytes per application");
    assert_eq!(uet.counters.payload_bytes_delivered, 2 * 250_000);
    assert_eq!(uet.counters.payload_bytes_delivered, rc.counters.payload_bytes_delivered);
}

/// Trimming on a lossless (PFC) fabric: the threshold trims below the pause point, every
/// trimmed packet is resent once and nothing is dropped.
#[test]
fn trimming_with_pfc_trims_below_the_pause_and_loses_nothing() {
    let text = incast(500_000, "threshold_kb = 20").replace("lossless = false", "lossless = true");
    let r = run_finished(scenario(&text, "uet.toml"));
    let trims = r.mechanism_counters.get("trims");
    assert!(trims > 10, "{trims}");
    assert_eq!((r.counters.retx_packets, r.counters.drops, r.counters.timeouts), (trims, 0, 0));
    assert_eq!(r.counters.payload_bytes_delivered, 1_000_000);
}

/// NSCC over UET with trimming: its window (delay, ECN and each trim as a lost packet,
/// `host/uet_rx.rs::uet_on_ack` → `cc_on_loss`) keeps the incast's queue shorter than no
/// congestion control does, so fewer packets are trimmed; each trim is still resent once,
/// with no timeout, and every byte placed once. The last needs the ACK-request flag: NSCC's
/// window falls below the receiver's coalescing count of 4 packets, and without the flag the
/// sender waited for the timeout (452 timeouts, each resending a packet already placed).
#[test]
fn nscc_over_uet_trims_less_than_no_cc_and_resends_each_trim_once() {
    let none = run_finished(scenario(&incast(500_000, "threshold_kb = 20"), "uet.toml"));
    let text = incast(500_000, "threshold_kb = 20").replace("cc = \"none\"", "cc = \"nscc\"");
    let r = run_finished(scenario(&text, "uet_nscc.toml"));
    let (trims, trims_none) = (r.mechanism_counters.get("trims"), none.mechanism_counters.get("trims"));
    assert!(trims < trims_none, "NSCC trims less: {trims} trims against {trims_none} without a CC");
    assert_eq!(r.counters.retx_packets, trims, "each trimmed packet resent once");
    assert_eq!(r.counters.timeouts, 0, "a full window asks for its ACK");
    assert_eq!(r.counters.payload_bytes_delivered, 1_000_000);
    assert_eq!(r.counters.payload_bytes_discarded, 0, "no packet delivered twice");
}

/// `fabric.uet.rto = "auto"` is htsim's UEC driver's rule (`main_uec.cpp` line 695): 15 µs
/// plus six drains of a full queue (here the trimming threshold, 100 KB) at the host rate
/// (100 Gb/s: 8 µs each), 63 µs; at 400 Gb/s, 15 + 6 × 2 = 27 µs. Without a trimming
/// threshold it is refused by its full name.
#[test]
fn an_auto_rto_is_htsim_s_driver_rule() {
    let text = |rate: &str, trimming: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\nrate = \"{rate}\"\n[[traffic]]\nkind = \"flows\"\n\
             transport = \"uet\"\nflows = [{{ src = 0, dst = 1, size = 1000 }}]\n[fabric]\nlossless = false\n\
             [fabric.uet]\nrto = \"auto\"\n{trimming}"
        )
    };
    let t = "[fabric.trimming]\nthreshold_kb = 100\n";
    for (rate, us) in [("100Gbps", 63), ("400Gbps", 27)] {
        let s = scenario(&text(rate, t), "auto.toml");
        assert_eq!(s.config.uet.rto, rdmalab::Time::from_us(us), "{rate}");
    }
    let e = super::fixtures::input_error(&text("100Gbps", "[fabric.trimming]\n"));
    assert!(e.contains("fabric.uet.rto") && e.contains("threshold_kb"), "{e}");
    let e = super::fixtures::input_error(&text("100Gbps", ""));
    assert!(e.contains("fabric.uet.rto"), "{e}");
}
