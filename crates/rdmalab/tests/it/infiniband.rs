//! InfiniBand's link layer (`fabric.link_layer = "infiniband"`) on a star of
//! FDR 4x links: credit-based flow control per VL, the IB packet format, bad input.
//!
//! Closed forms: a sender on one link holds at most `n = ⌊(C − P)/b⌋ + 1` packets of `b`
//! blocks unacknowledged by credits (C the receiver's VL buffer, P the largest packet), and
//! credits return one credit round trip `tp + 2d + t_fc` after a packet starts (its
//! serialisation, the link's delay both ways, the 6-byte flow-control packet). Its rate is
//! therefore `min(line, n·wire / rtt)`. Header bytes per packet are the IBA's sums.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, RunLimit, StopReason};
use rdmalab::{NodeId, Time};

use crate::fixtures::{input_error, line_of};

/// FDR 4x: 4 × 14.0625 Gb/s signalling, 64b/66b.
const FDR_DATA_BPS: f64 = 56.25e9 * 64.0 / 66.0;
/// IB headers: LRH 8 + BTH 12 + ICRC 4 + VCRC 2; RETH 16 on a WRITE's first packet.
const HDR: u64 = 26;
const RETH: u64 = 16;

/// A star of `hosts` FDR 4x hosts with link delay `delay`, IB with a VL buffer of
/// `buffer` bytes, and the flows `(src, dst, size)`.
fn ib_star(hosts: usize, delay: &str, buffer: u64, flows: &[(u32, u32, u64)]) -> String {
    let flows: Vec<String> =
        flows.iter().map(|&(s, d, size)| format!("{{ src = {s}, dst = {d}, size = {size} }}")).collect();
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\nrate = \"FDR4x\"\ndelay = \"{delay}\"\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\ncc = \"none\"\nlink_layer = \"infiniband\"\nib_vl_buffer = {buffer}\n",
        flows.join(", ")
    )
}

fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml(toml, Path::new("ib.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn run(toml: &str) -> Results {
    let s = scenario(toml);
    let capacity = s.config.ib_vl_buffer;
    let mut sim = s.simulation().unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let (overruns, max_held) = sim.ib_buffer_check().expect("an IB run");
    assert_eq!(overruns, 0, "a packet found its input buffer full");
    assert!(max_held <= capacity, "an input buffer held {max_held} bytes of {capacity}");
    sim.results().expect("bytes conserved")
}

/// The port of the star's switch (node `hosts`) towards host `h`, and host `h`'s own port.
fn ports_of(s: &Scenario, h: u32) -> (usize, usize) {
    let t = &s.topology;
    let own = t.nodes[h as usize].ports[0];
    (t.ports[own.idx()].peer.idx(), own.idx())
}

#[test]
fn a_4_to_1_incast_on_credits_never_drops_or_pauses_and_keeps_the_receiver_busy() {
    // 4 MTUs of VL buffer (4 × 2048 B); 100 ns links (20 m): the credit round trip (305 +
    // 200 + 1 ns) is shorter than the 3 packets the buffer lets a sender have unacknowledged.
    let size = 2_000_000;
    let toml = ib_star(5, "100ns", 4 * 2048, &[(1, 0, size), (2, 0, size), (3, 0, size), (4, 0, size)]);
    let s = scenario(&toml);
    let (to_receiver, _) = ports_of(&s, 0);
    let r = run(&toml);
    assert_eq!(r.counters.drops, 0);
    assert_eq!(r.counters.pauses, 0);
    assert!(r.pfc_events.is_empty());
    assert_eq!(r.ports.iter().map(|p| p.pause_sent + p.pause_received).sum::<u64>(), 0);
    // Busy once started: the first packet reaches the switch one packet time and one delay
    // after time zero; the last one lands one delay (plus its ACK's way back) before the end.
    let first_in = 2090.0 * 8.0 / FDR_DATA_BPS + 100e-9;
    let end = r.records.iter().map(|f| (f.start + f.fct).0).max().unwrap() as f64 * 1e-12;
    let busy = r.ports[to_receiver].tx_bytes as f64 * 8.0 / FDR_DATA_BPS / (end - first_in);
    assert!(busy >= 0.98, "receiver's link busy {:.4} of the time", busy);
    // Each sender was held back by credits (the switch's input buffers filled).
    assert!(r.ports.iter().map(|p| p.credit_stall_ps).sum::<u64>() > 0);
}

#[test]
fn a_long_link_is_limited_to_the_buffer_per_credit_round_trip() {
    // 1 µs links: a credit round trip of tp + 2d + t_fc, three packets per trip.
    let size: u64 = 4_096_000; // 2000 packets of 2048 B
    let r = run(&ib_star(2, "1us", 4 * 2048, &[(1, 0, size)]));
    let wire = (2048 + HDR) as f64;
    let tp = wire * 8.0 / FDR_DATA_BPS;
    let rtt = tp + 2e-6 + 6.0 * 8.0 / FDR_DATA_BPS;
    let rate = 3.0 * wire * 8.0 / rtt; // bit/s on the wire
    let want = size as f64 / 2048.0 * wire * 8.0 / rate;
    let fct = r.records[0].fct.0 as f64 * 1e-12;
    assert!((fct / want - 1.0).abs() < 0.01, "FCT {fct:.6e} s, closed form {want:.6e} s");
    assert!(rate < 0.5 * FDR_DATA_BPS, "the case must be credit-bound");
}

#[test]
fn a_receiver_that_stops_draining_stalls_its_sender() {
    // One line-rate flow; at T the receiving HCA stops returning credits. Three phases of T
    // against the packet train.
    for t_hold_ps in [50_000_000, 50_100_000, 50_230_000] {
        receiver_stops_draining_at(Time(t_hold_ps));
    }
}

fn receiver_stops_draining_at(t_hold: Time) {
    let (d, buffer) = (100e-9, 4 * 2048u64);
    let toml = ib_star(2, "100ns", buffer, &[(1, 0, 100_000_000)]);
    let s = scenario(&toml);
    let (to_receiver, _) = ports_of(&s, 0);
    let mut sim = s.simulation().unwrap();
    sim.run(RunLimit { until: t_hold, max_events: u64::MAX });
    let before = sim.snapshot();
    assert_eq!(before.ports[to_receiver].credit_stall_ps, 0, "line rate needs no stall before");
    sim.ib_hold_credits(NodeId(0));
    let t_end = Time::from_us(80);
    sim.run(RunLimit { until: t_end, max_events: u64::MAX });
    let after = sim.snapshot();
    let stall_ps = after.ports[to_receiver].credit_stall_ps;
    // The stall is still open: it began `stall_ps` before the simulation's clock.
    let stalled_at = (sim.now().0 - stall_ps) as f64 * 1e-12;
    // Closed form: packets that started by s* = T − tp − d had landed by T and are credited;
    // the switch (back to back at line rate) may start n = 3 more, at s* + tp, + 2tp, + 3tp,
    // and the third leaves it short: it stalls in (T + tp − d, T + 2tp − d], and that packet
    // fills the receiver's buffer one packet time and one link delay later.
    let tp = (2048 + HDR) as f64 * 8.0 / FDR_DATA_BPS;
    let t = t_hold.0 as f64 * 1e-12;
    let since_hold = stalled_at - t;
    let ok = since_hold > tp - d && since_hold <= 2.0 * tp - d + 1e-9;
    assert!(ok, "stalled {:.1} ns after T", since_hold * 1e9);
    // Nothing more crossed: what it sent after T fits the buffer.
    let sent_after = after.ports[to_receiver].tx_bytes - before.ports[to_receiver].tx_bytes;
    assert!(sent_after <= buffer, "{sent_after} bytes after T");
    let (overruns, held) = sim.ib_buffer_check().unwrap();
    assert_eq!(overruns, 0);
    assert!(held > buffer - (2048 + HDR + RETH) && held <= buffer, "the buffer filled: {held}");
}

#[test]
fn header_bytes_per_packet_are_the_specs_sums() {
    // 3 full packets and one of 100 bytes: RETH once, LRH+BTH+ICRC+VCRC on each.
    let size = 3 * 2048 + 100;
    let toml = ib_star(2, "1us", 32768, &[(1, 0, size)]);
    let s = scenario(&toml);
    let (to_receiver, sender) = ports_of(&s, 0);
    let (_, from_sender) = ports_of(&s, 1);
    assert_eq!(from_sender, ports_of(&s, 1).1);
    let r = run(&toml);
    let host1 = ports_of(&s, 1).1;
    assert_eq!(r.ports[host1].tx_bytes, size + 4 * HDR + RETH, "sender's wire bytes");
    assert_eq!(r.ports[to_receiver].tx_bytes, size + 4 * HDR + RETH, "switch to receiver");
    // The receiver's port carries its ACKs (30 B: LRH, BTH, AETH, ICRC, VCRC) and a 6-byte
    // flow-control packet per data packet it received.
    let acks = r.ports[sender].tx_packets - 4;
    assert_eq!(r.ports[sender].tx_bytes, acks * 30 + 4 * 6);
}

#[test]
fn roce_keys_and_impossible_sizes_are_refused_by_field() {
    let base = ib_star(2, "1us", 32768, &[(1, 0, 1000)]);
    let cases = [
        ("lossless = false\n", "fabric.lossless", "lossless = false", "lossless"),
        ("mtu = 1000\n", "fabric.mtu", "mtu = 1000", "not an InfiniBand MTU"),
        ("buffer_mb = 1\n", "fabric.buffer_mb", "buffer_mb", "RoCE"),
        ("ack_high_prio = false\n", "fabric.ack_high_prio", "ack_high_prio", "outside credits"),
        ("ecn = true\n", "fabric.ecn", "ecn = true", "ECN"),
        ("deadlock_timeout = \"1ms\"\n", "fabric.deadlock_timeout", "deadlock_timeout", "PFC"),
        // Tables that act on PFC frames, which no InfiniBand link carries.
        ("[fabric.pfc_watchdog]\ndetection_time = \"1ms\"\n", "fabric.pfc_watchdog", "[fabric.pfc_watchdog]", "PFC"),
        ("[fabric.pfc_pause]\nquanta = 1000\n", "fabric.pfc_pause", "[fabric.pfc_pause]", "PFC"),
    ];
    for (line, field, needle, what) in cases {
        let toml = format!("{base}{line}");
        let e = input_error(&toml);
        let want = format!("bad.toml:{}", line_of(&toml, needle));
        assert!(e.starts_with(&want) && e.contains(field) && e.contains(what), "want {want} {field}: {e}");
    }
    let small = base.replace("ib_vl_buffer = 32768", "ib_vl_buffer = 2048");
    let e = input_error(&small);
    assert!(e.contains("fabric.ib_vl_buffer") && e.contains("2090"), "{e}");
    let pfc_class = format!("{base}[[fabric.classes]]\npg = 3\npfc = true\n");
    let e = input_error(&pfc_class);
    assert!(e.contains("fabric.classes[0].pfc"), "{e}");
    let roce = base.replace("link_layer = \"infiniband\"\n", "");
    let e = input_error(&roce);
    assert!(e.contains("fabric.ib_vl_buffer") && e.contains("infiniband"), "{e}");
    // MTU 4096 is one IB allows; a 4 KiB buffer is then too small.
    let e = input_error(&format!("{}mtu = 4096\n", base.replace("32768", "4096")));
    assert!(e.contains("fabric.ib_vl_buffer"), "{e}");
}

#[test]
fn infiniband_switches_arbitrate_among_input_ports_unless_told_and_refuse_per_port_buffers() {
    use rdmalab::fabric::EgressArbitration;
    let base = ib_star(2, "1us", 32768, &[(1, 0, 1000)]);
    assert_eq!(scenario(&base).config.egress_arbitration, EgressArbitration::InputFair);
    let fifo = format!("{base}egress_arbitration = \"fifo\"\n");
    assert_eq!(scenario(&fifo).config.egress_arbitration, EgressArbitration::Fifo);
    let roce = base.replace("link_layer = \"infiniband\"\nib_vl_buffer = 32768\n", "");
    assert_eq!(scenario(&roce).config.egress_arbitration, EgressArbitration::Fifo);
    let per_port = format!("{base}buffer_model = \"per_port\"\n");
    let e = input_error(&per_port);
    let want = format!("bad.toml:{}", line_of(&per_port, "buffer_model"));
    assert!(e.starts_with(&want) && e.contains("fabric.buffer_model") && e.contains("ib_vl_buffer"), "{e}");
}

#[test]
fn rate_names_are_the_data_rates() {
    for (name, bps) in [("QDR4x", 32e9), ("FDR4x", FDR_DATA_BPS), ("EDR4x", 100e9), ("HDR4x", 200e9)] {
        let toml = ib_star(2, "1us", 32768, &[(1, 0, 1000)]).replace("FDR4x", name);
        let s = scenario(&toml);
        let got = s.topology.links[0].rate.0 as f64;
        assert!((got - bps).abs() < 1.0, "{name}: {got}");
    }
}

#[test]
fn a_failed_link_returns_the_credits_of_what_it_strands_and_every_flow_completes() {
    // A permutation of 256 KiB on a 4-leaf, 8-spine fabric; leaf 0's link to spine 1 fails
    // at 10 us and routes change 20 us later. Meanwhile both switches drop what they had
    // queued for the dead link and what they route to it: each such packet leaves an input
    // buffer without being sent. Unless its blocks go back to the upstream as credits, a VL
    // that lost a buffer's worth never sends again and its flows never end (the stop time
    // is 10 ms; the permutation needs about 1 ms).
    let toml = "stop_time = \"10ms\"\n\
        [topology]\nkind = \"leaf_spine\"\nleaves = 4\nhosts_per_leaf = 8\nspines = 8\n\
        host_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n\
        [fabric]\ncc = \"ib\"\nlink_layer = \"infiniband\"\nmtu = 1024\nreroute_delay = \"20us\"\n\
        [[traffic]]\nkind = \"permutation\"\nsize = 262144\n\
        [[events]]\nkind = \"link_down\"\nat = \"10us\"\na = 32\nb = 37\n";
    let s = scenario(toml);
    let mut sim = s.simulation().unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished, "a flow never ended: credits were lost");
    let r = sim.results().expect("bytes conserved");
    assert_eq!(r.records.len(), 32);
    assert!(r.counters.link_down_losses > 0, "the failure stranded nothing: the test tests nothing");
    assert_eq!(r.payload_in_flight, 0);
    assert!(r.last_completion < Time(2_000_000_000), "last flow ended at {:?}", r.last_completion);
}

#[test]
fn a_link_that_fails_and_comes_back_keeps_its_credits_exact() {
    // One FDR flow on a star whose sender's link fails at 20 us and is repaired at 30 us,
    // before the control plane would give the flow up. The failure strands packets on the
    // wire both ways: data the switch's input buffer never receives, credits the sender never
    // hears. With 8 KiB of buffer (4 packets) the sender's VL is short of credits when
    // carrier goes, and losing carrier must not lift that stall: the repaired link may send
    // only what the input buffer holds. With one packet of buffer the VL waits for the
    // credit the failure lost, and what the switch freed meanwhile could not be told: the
    // input buffer re-advertises its limit when the link comes up, as a link that
    // initialises does, or the VL never sends again.
    for (buffer, down) in [(8192, "20us"), (2112, "20us"), (2112, "20100ns"), (2112, "20200ns")] {
        let toml = format!(
            "stop_time = \"5ms\"\n{}reroute_delay = \"50us\"\n\
             [[events]]\nkind = \"link_down\"\nat = \"{down}\"\na = 1\nb = 2\n\
             [[events]]\nkind = \"link_up\"\nat = \"30us\"\na = 1\nb = 2\n",
            ib_star(2, "1us", buffer, &[(1, 0, 1_000_000)])
        );
        let r = run(&toml);
        assert_eq!(r.records.len(), 1, "buffer {buffer}, down at {down}");
        assert!(r.counters.link_down_losses > 0, "the failure stranded nothing: the test tests nothing");
        // After the repair the flow runs at its credit-bound rate again (1 packet per
        // credit round trip, 6.6 Gb/s, at least): it ends within 2 ms.
        assert!(r.last_completion < Time(2_000_000_000), "buffer {buffer}: last flow ended at {:?}", r.last_completion);
    }
}

#[test]
fn virtual_lanes_share_a_link_in_their_weights_and_report_no_pfc() {
    // Two senders into one receiver on VLs 1 and 2, weights 1 and 3: the switch's egress
    // serves the backlogged VLs by DWRR, so they get its bytes 1 : 3 (within a quantum per
    // round). InfiniBand has no PFC: the class table says so, though `pfc` defaults to
    // `fabric.lossless`.
    let toml = "stop_time = \"1ms\"\n[topology]\nkind = \"star\"\nhosts = 3\nrate = \"FDR4x\"\ndelay = \"100ns\"\n\
        [[traffic]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 0, size = 20000000, pg = 1 }, \
        { src = 2, dst = 0, size = 20000000, pg = 2 }]\n\
        [fabric]\ncc = \"none\"\nlink_layer = \"infiniband\"\n\
        [[fabric.classes]]\npg = 1\nweight = 1\n[[fabric.classes]]\npg = 2\nweight = 3\n";
    let mut sim = scenario(toml).simulation().unwrap();
    assert_eq!(sim.run_to_end(), StopReason::StopTime);
    let r = sim.results().expect("bytes conserved");
    let (a, b) = (r.classes[1].counters.tx_bytes as f64, r.classes[2].counters.tx_bytes as f64);
    assert!((b / a - 3.0).abs() < 0.01, "VL 2 / VL 1 = {}", b / a);
    assert!(r.classes.iter().all(|c| !c.config.pfc), "a class reports PFC under InfiniBand");
}

#[test]
fn infiniband_runs_with_a_failed_and_repaired_link_are_the_same_for_any_thread_count() {
    // An edge switch's first uplink fails at 150 us, inside the incast, and comes back at
    // 200 us: credits lost with its wires are restored at each end by the node that owns
    // it, and the repaired link advertises its limits from both ends.
    let base = crate::parallel::scenario(
        "none",
        "link_layer = \"infiniband\"\nib_vl_buffer = 8192\nreroute_delay = \"10us\"",
        1,
    );
    let t = &base.topology;
    let edge = t.ports[t.nodes[0].ports[0].idx()].peer_node;
    let up = t.nodes[edge.idx()]
        .ports
        .iter()
        .map(|p| t.ports[p.idx()].peer_node)
        .find(|n| t.nodes[n.idx()].ports.len() > 1 && !t.is_host(*n))
        .expect("an uplink");
    let fabric = format!(
        "link_layer = \"infiniband\"\nib_vl_buffer = 8192\nreroute_delay = \"10us\"\n\
         [[events]]\nkind = \"link_down\"\nat = \"150us\"\na = {edge}\nb = {up}\n\
         [[events]]\nkind = \"link_up\"\nat = \"200us\"\na = {edge}\nb = {up}\n",
        edge = edge.0,
        up = up.0
    );
    let run = |threads| {
        let mut run =
            rdmalab::sim::parallel::Runner::new(crate::parallel::scenario("none", &fabric, threads)).expect("builds");
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let r = run.results().expect("bytes conserved");
        let mut fct = Vec::new();
        rdmalab::formats::fct::write_fct(&mut fct, &r.records).unwrap();
        (fct, r.counters.link_down_losses, r.counters.packet_hops, r.records.len())
    };
    let one = run(1);
    assert!(one.1 > 0, "the failure stranded nothing: the test tests nothing");
    for threads in [2, 4] {
        let many = run(threads);
        assert!(one.0 == many.0, "FCT file differs with {threads} threads");
        assert_eq!((one.1, one.2, one.3), (many.1, many.2, many.3), "counts differ with {threads} threads");
    }
}
