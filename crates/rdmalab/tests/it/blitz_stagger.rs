//! The Blitz poster's DASR as its testbed emulated it, at the application layer (`incast_rounds`'
//! `stagger`), on the poster's fabric (InfiniBand FDR 4x, `docs/blitz.md`). Each test holds
//! the runs to a closed form of the staggering:
//!
//! * `serial`: the aggregator grants one sender at a time, so the k-th message of a round
//!   completes about k · (message time + grant gap) after the round starts; the round's
//!   median is (n+1)/2 of those, for two link delays (so the grants' trips are counted);
//! * `paced`: every message is held to C/n, so each completes about n message times after
//!   its own start whatever the others do (jittered starts: the unstaggered incast does not);
//! * bad input names the field.

use rdmalab::scenario::Scenario;
use rdmalab::stats::FlowRecord;

use crate::fixtures;

/// FDR 4x: 56.25 Gb/s signalling, 64b/66b (IBA vol. 1 §6.3).
const FDR_DATA_BPS: f64 = 56.25e9 * 64.0 / 66.0;
/// IB headers of a data packet (LRH 8 + BTH 12 + ICRC 4 + VCRC 2) and the MTU (2048).
const HDR: f64 = 26.0;
const MTU: f64 = 2048.0;
const SIZE: u64 = 262_144;
/// `workload::serial_incast::GRANT_BYTES`, as the docs print it.
const GRANT: f64 = 64.0;

/// `senders` hosts 1..=n sending SIZE to host 0 every 2 ms, 3 rounds, with `stagger`. The
/// VL buffers (128 KiB) cover a credit round trip on 4 us links, so a lone sender runs at
/// line rate and a message's time is its wire time (docs/model/infiniband.md, "Credits").
fn toml(n: usize, delay_us: u32, jitter: &str, stagger: &str) -> String {
    let senders: Vec<String> = (1..=n).map(|h| h.to_string()).collect();
    format!(
        "[topology]\nkind = \"star\"\nhosts = {}\nrate = \"FDR4x\"\ndelay = \"{delay_us}us\"\n\
         [[traffic]]\nkind = \"incast_rounds\"\nsenders = [{}]\nreceiver = 0\nsize = {SIZE}\n\
         period = \"2ms\"\nrounds = 3\njitter = \"{jitter}\"\n{stagger}\n\
         [fabric]\ncc = \"none\"\nlink_layer = \"infiniband\"\nib_vl_buffer = 131072\n",
        n + 1,
        senders.join(", ")
    )
}

fn run(text: &str) -> Vec<FlowRecord> {
    let r = fixtures::run_finished(fixtures::scenario(text, "stagger.toml"));
    r.records
}

/// Seconds on the FDR wire of `payload` bytes in MTU packets.
fn wire_s(payload: f64) -> f64 {
    (payload + (payload / MTU).ceil() * HDR) * 8.0 / FDR_DATA_BPS
}

/// Each round's completion times from its start (the round's earliest flow start), sorted.
fn rounds_fct(recs: &[FlowRecord], n: usize) -> Vec<Vec<f64>> {
    let mut by_round: std::collections::BTreeMap<u64, Vec<&FlowRecord>> = Default::default();
    for r in recs {
        by_round.entry(r.start.0 / 2_000_000_000).or_default().push(r);
    }
    by_round
        .values()
        .map(|rs| {
            assert_eq!(rs.len(), n, "every sender's message completes");
            let mut v: Vec<f64> = rs.iter().map(|r| (r.start.0 + r.fct.0) as f64 * 1e-12).collect();
            let t0 = rs.iter().map(|r| r.start.0).min().unwrap() as f64 * 1e-12;
            v.iter_mut().for_each(|t| *t -= t0);
            v.sort_by(f64::total_cmp);
            v
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

#[test]
fn serial_rounds_take_half_the_messages_plus_the_grants() {
    let n = 8;
    for delay_us in [1u32, 4] {
        let d = delay_us as f64 * 1e-6;
        let recs = run(&toml(n, delay_us, "0us", "stagger = \"serial\""));
        // One message's time at the bottleneck; between two messages the aggregator's
        // grant crosses two links (stored and forwarded once) and the next sender's first
        // packet does the same; the sender hears its last ACK one path later.
        let msg = wire_s(SIZE as f64);
        let hop = |bytes: f64| 2.0 * (bytes * 8.0 / FDR_DATA_BPS + d);
        let gap = hop(GRANT + HDR) + hop(MTU + HDR);
        let ack = hop(30.0);
        let want = (n as f64 + 1.0) / 2.0 * (msg + gap) + ack;
        for (k, v) in rounds_fct(&recs, n).iter().enumerate() {
            let got = median(v);
            assert!(
                (got / want - 1.0).abs() < 0.10,
                "delay {delay_us} us round {k}: median {got:e} s, want {want:e} s"
            );
            // The messages do not overlap: consecutive completions a message and a gap apart.
            for w in v.windows(2) {
                assert!(w[1] - w[0] > msg, "round {k}: completions {w:?} closer than a message");
            }
        }
    }
}

#[test]
fn paced_messages_each_take_n_message_times() {
    let n = 4;
    // Starts spread over 300 us: unstaggered, an early sender runs alone at line rate.
    let want = n as f64 * wire_s(SIZE as f64);
    let recs = run(&toml(n, 1, "300us", "stagger = \"paced\""));
    assert_eq!(recs.len(), 3 * n);
    for r in &recs {
        let got = r.fct.0 as f64 * 1e-12;
        assert!((got / want - 1.0).abs() < 0.05, "paced flow {}: fct {got:e} s, want {want:e} s", r.flow);
    }
    let plain = run(&toml(n, 1, "300us", ""));
    let fastest = plain.iter().map(|r| r.fct.0 as f64 * 1e-12).fold(f64::MAX, f64::min);
    assert!(fastest < 0.6 * want, "unstaggered: a lone early sender is faster ({fastest:e} s)");
}

#[test]
fn stagger_inputs_are_checked() {
    let e = |t: &str| Scenario::from_toml(t, std::path::Path::new("s.toml")).unwrap_err().to_string();
    let bad = toml(2, 1, "0us", "stagger = \"serial\"\npiece = 1000");
    assert!(e(&bad).contains("traffic[0].piece"), "{}", e(&bad));
    let bad = toml(2, 1, "0us", "stagger = \"paced\"\npiece = 0");
    assert!(e(&bad).contains("traffic[0].piece"), "{}", e(&bad));
    let bad = toml(2, 1, "0us", "stagger = \"sideways\"");
    assert!(e(&bad).contains("stagger"), "{}", e(&bad));
}

/// DASR in the NIC on the same fabric (`cc = "blitz"`, `dasr_fallback = "ib"`): n senders start
/// together at line rate until their first ACK brings C/n, so the aggregator's queue peaks at
/// most at n·C·RTT + n²·MTU (the bound `tests/it/blitz.rs` derives for RoCE; the n² term is
/// each first packet's wait behind the other first packets). VL buffers of 1 MiB keep credits
/// from bounding the queue first; without CC the same incast queues far above the bound.
#[test]
fn dasr_in_the_nic_keeps_the_aggregator_queue_under_the_overshoot_bound_on_ib() {
    let n = 8u64;
    let senders: Vec<String> = (1..=n).map(|h| h.to_string()).collect();
    let text = |cc: &str| {
        format!(
            "stop_time = \"300us\"\n[topology]\nkind = \"star\"\nhosts = {}\nrate = \"FDR4x\"\ndelay = \"1us\"\n\
             [[traffic]]\nkind = \"incast\"\nsenders = [{}]\nreceiver = 0\nsize = 2000000\n\
             [fabric]\nlink_layer = \"infiniband\"\nib_vl_buffer = 1048576\nqueue_sample_interval = \"200ns\"\n{cc}",
            n + 1,
            senders.join(", ")
        )
    };
    let peak = |cc: &str| {
        let s = fixtures::scenario(&text(cc), "dasr_ib.toml");
        let down = fixtures::port_to(&s.topology, rdmalab::NodeId(n as u32 + 1), rdmalab::NodeId(0));
        let mut sim = s.simulation().expect("valid");
        sim.run_to_end();
        let r = sim.snapshot();
        r.queue_samples.iter().filter(|q| q.1 == down).map(|q| q.2).max().unwrap_or(0)
    };
    // Base RTT: two hops each way of 1 us, a full packet's store-and-forward twice, an ACK's.
    let wire = MTU + HDR;
    let rtt = 4e-6 + 2.0 * wire * 8.0 / FDR_DATA_BPS + 2.0 * 30.0 * 8.0 / FDR_DATA_BPS;
    let bound = n as f64 * FDR_DATA_BPS / 8.0 * rtt + (n * n) as f64 * wire;
    let blitz = peak("cc = \"blitz\"\n[fabric.cc_params]\ndasr_fallback = \"ib\"\n") as f64;
    assert!(blitz > 0.0 && blitz <= bound, "DASR in the NIC: queue peak {blitz} B above {bound} B");
    let none = peak("cc = \"none\"\n") as f64;
    assert!(none > 2.0 * bound, "without CC the queue should pass the bound: {none} B");
}

#[test]
fn staggered_incasts_are_the_same_for_any_thread_count() {
    // The Blitz poster's application-layer DASR on InfiniBand with its CC: the serial aggregator's
    // grants and the senders' messages cross the cut as packets, the paced senders' pieces
    // are their own hosts' timers.
    let run = |threads: u32| {
        let text = "seed = 4\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
             [[traffic]]\nkind = \"incast_rounds\"\nsenders = [4, 8, 12, 5]\nreceiver = 0\nsize = 60000\n\
             period = \"200us\"\nrounds = 3\njitter = \"20us\"\nstagger = \"serial\"\n\
             [[traffic]]\nkind = \"incast_rounds\"\nsenders = [1, 6, 9, 13]\nreceiver = 15\nsize = 60000\n\
             period = \"200us\"\nrounds = 3\njitter = \"20us\"\nstagger = \"paced\"\npiece = 8000\n\
             [[traffic]]\nkind = \"flows\"\nflows = [{ src = 10, dst = 0, size = 2000000 }]\n\
             [fabric]\ncc = \"ib\"\nlink_layer = \"infiniband\"\n";
        let mut s = Scenario::from_toml(text, std::path::Path::new("stagger.toml")).unwrap();
        s.config.threads = Some(threads);
        let flows = s.flows.len();
        let mut run = rdmalab::sim::parallel::Runner::new(s).expect("builds");
        assert_eq!(run.run_to_end(), rdmalab::sim::StopReason::Finished, "{threads} threads");
        let r = run.results().expect("bytes conserved");
        assert_eq!(r.records.len(), flows);
        let mut fct = Vec::new();
        rdmalab::formats::fct::write_fct(&mut fct, &r.records).unwrap();
        (String::from_utf8(fct).unwrap(), r.counters.packet_hops)
    };
    let one = run(1);
    for threads in [2, 4] {
        let many = run(threads);
        assert!(one.0 == many.0, "FCT file differs with {threads} threads");
        assert_eq!(one.1, many.1, "packet hops differ with {threads} threads");
    }
}
