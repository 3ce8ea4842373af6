//! The window algorithms, Swift and NSCC, through the whole simulator: a lone flow's FCT
//! against its closed form, N flows on one bottleneck against the share and the queueing
//! delay each algorithm's rule predicts, and NSCC's reaction to a loss.
//!
//! Topology: a star of 100 Gb/s links with 1 us delay; host 0 receives, the switch port
//! towards host 0 is the bottleneck.

use rdmalab::cc::{CcConfig, SwiftParams};
use rdmalab::fabric::ecn::EcnOverrides;
use rdmalab::sim::{Results, RunLimit, SimConfig, Simulation, StopReason};
use rdmalab::topology::Topology;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, PortId, Rate, Time};

use crate::fixtures::{self, port_to};

const LINK: Rate = Rate::gbps(100);
const D: Time = Time::from_us(1);
/// Long enough never to finish inside a test.
const FOREVER: u64 = 10_000_000_000;

fn cfg(cc: &str) -> SimConfig {
    SimConfig { cc: CcConfig::from_name(cc).expect("known cc"), ..SimConfig::default() }
}

/// A lone flow's FCT at line rate (`sim.rs`'s closed form, on the two links of a star):
/// every packet serialised back to back at the NIC, the last one crossing the switch, then
/// the ACK of the last byte.
fn lone_flow_closed_form(size: u64, c: &SimConfig) -> Time {
    let (mtu, hops) = (c.mtu as u64, 2u64);
    let mut wires: Vec<u64> = vec![mtu + c.header_bytes as u64; (size / mtu) as usize];
    if !size.is_multiple_of(mtu) {
        wires.push(size % mtu + c.header_bytes as u64);
    }
    let sum: u64 = wires.iter().map(|&w| LINK.tx_time(w).0).sum();
    let max = wires.iter().copied().max().unwrap();
    let data = sum + (hops - 1) * LINK.tx_time(max).0 + hops * D.0;
    let tx_ack = LINK.tx_time(c.ack_bytes as u64).0;
    let last = LINK.tx_time(*wires.last().unwrap()).0;
    let ack_wait = if wires.len() >= 2 { tx_ack.saturating_sub(last) } else { 0 };
    Time(data + ack_wait + hops * (tx_ack + D.0))
}

fn lone_flow(cc: &str) {
    for size in [1_000u64, 20_000, 1_000_000] {
        let c = cfg(cc);
        let expect = lone_flow_closed_form(size, &c);
        let flows = vec![FlowSpec::new(NodeId(0), NodeId(1), size, Time::ZERO)];
        let mut sim = Simulation::new(fixtures::star(2, LINK), flows, c).expect("valid scenario");
        assert_eq!(sim.run_to_end(), StopReason::Finished);
        let r = sim.results().expect("conservation holds");
        assert_eq!(r.records[0].fct, expect, "{cc}, {size} B: the window never binds on an idle path");
    }
}

#[test]
fn swift_lone_flow_fct_is_the_line_rate_closed_form() {
    lone_flow("swift");
}

#[test]
fn nscc_lone_flow_fct_is_the_line_rate_closed_form() {
    lone_flow("nscc");
}

/// N long flows from hosts 1..=N into host 0 (all at once); after `warm` the bytes each
/// sender and the bottleneck send are measured until `end`, with the bottleneck's queue
/// sampled every 2 us.
struct Bottleneck {
    shares: Vec<f64>,
    utilisation: f64,
    queue: Vec<u64>,
    /// Each QP's window at the last rate sample (`Results::rate_samples`), bytes.
    windows: Vec<u64>,
}

fn bottleneck_run(n: usize, mut c: SimConfig, warm: Time, end: Time) -> Bottleneck {
    let topo: Topology = fixtures::star(n + 1, LINK);
    let sw = NodeId((n + 1) as u32);
    let flows = (1..=n).map(|i| FlowSpec::new(NodeId(i as u32), NodeId(0), FOREVER, Time::ZERO)).collect();
    let bott = port_to(&topo, sw, NodeId(0));
    let ups: Vec<PortId> = (1..=n).map(|i| port_to(&topo, NodeId(i as u32), sw)).collect();
    c.queue_sample_interval = Some(Time::from_us(2));
    c.queue_sample_start = warm;
    c.rate_sample_interval = Some(Time::from_us(100));
    c.stop_time = end;
    let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
    let at = |sim: &mut Simulation, t: Time| -> Results {
        sim.run(RunLimit { until: t, max_events: u64::MAX });
        sim.snapshot()
    };
    let a = at(&mut sim, warm);
    let b = at(&mut sim, end);
    let tx = |r: &Results, p: PortId| r.ports[p.idx()].tx_bytes;
    let sent: Vec<u64> = ups.iter().map(|&u| tx(&b, u) - tx(&a, u)).collect();
    let total: u64 = sent.iter().sum();
    Bottleneck {
        shares: sent.iter().map(|&s| s as f64 / total as f64).collect(),
        utilisation: (tx(&b, bott) - tx(&a, bott)) as f64 * 8.0 / (end - warm).secs_f64() / LINK.0 as f64,
        queue: b.queue_samples.iter().filter(|s| s.1 == bott && s.0 >= warm).map(|s| s.2).collect(),
        windows: {
            let last = b.rate_samples.iter().map(|s| s.time).max().unwrap_or(Time::ZERO);
            b.rate_samples.iter().filter(|s| s.time == last).map(|s| s.window).collect()
        },
    }
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
}

/// Swift's equilibrium (the paper's §3.5): every flow's RTT sits at the target its own
/// window sets, and the N windows fill the bottleneck for that RTT. `base` is the RTT
/// with an empty queue; the target's hop term counts the star's one switch. The fixed
/// point RTT = T(w(RTT)), with w = payload rate / N x RTT, is found by bisection (T falls
/// as the window grows, so there is one).
fn swift_predicted_rtt(p: &SwiftParams, n: usize, base: f64, c: &SimConfig) -> f64 {
    let mss = c.mtu as f64;
    let payload_bps = LINK.0 as f64 * mss / (mss + c.header_bytes as f64);
    let gap = |rtt: f64| rtt - p.target(payload_bps / 8.0 / n as f64 * rtt * 1e-12, mss, 1).0 as f64;
    let (mut lo, mut hi) = (base, 1e9);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if gap(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The RTT of a data packet and its ACK over an empty star: each crosses two links.
fn empty_rtt(c: &SimConfig) -> f64 {
    let data = LINK.tx_time(c.mtu as u64 + c.header_bytes as u64).0;
    let ack = LINK.tx_time(c.ack_bytes as u64).0;
    (2 * (data + ack) + 4 * D.0) as f64
}

fn check_swift(n: usize) {
    let c = cfg("swift");
    let p = SwiftParams::default();
    let predicted = swift_predicted_rtt(&p, n, empty_rtt(&c), &c);
    let r = bottleneck_run(n, c.clone(), Time::from_ms(2), Time::from_ms(6));
    let queue_delay = mean(&r.queue) * 8.0 / LINK.0 as f64 * 1e12;
    let predicted_delay = predicted - empty_rtt(&c);
    // The queue rises by one packet per flow per RTT (the additive increase) before a cut:
    // its mean may miss the equilibrium by that much, plus one packet of sampling grain.
    let wire = LINK.tx_time((c.mtu + c.header_bytes) as u64).0 as f64;
    let slack = (n as f64 + 1.0) * wire;
    assert!(
        (queue_delay - predicted_delay).abs() <= slack,
        "{n} flows: mean queueing delay {:.0} ns, the target's fixed point {:.0} ns (slack {:.0} ns)",
        queue_delay / 1e3,
        predicted_delay / 1e3,
        slack / 1e3
    );
    let fair = 1.0 / n as f64;
    for (i, s) in r.shares.iter().enumerate() {
        assert!((s - fair).abs() <= 0.1 * fair, "flow {i}: share {s:.3} vs 1/{n} (all {:?})", r.shares);
    }
    assert!(r.utilisation >= 0.99, "utilisation {:.4}", r.utilisation);
    // The sampled windows (`window_bytes` in `res.rates`) hold the bytes in flight at the
    // equilibrium RTT: together, the payload the bottleneck carries in that time. Each QP's
    // window is its cwnd less one packet (room for the next), and the sawtooth moves every
    // cwnd by up to one packet.
    assert_eq!(r.windows.len(), n);
    let payload_bps = LINK.0 as f64 * c.mtu as f64 / (c.mtu + c.header_bytes) as f64;
    let in_flight = payload_bps / 8.0 * predicted * 1e-12;
    let sum: f64 = r.windows.iter().map(|&w| (w + c.mtu as u64 - 1) as f64).sum();
    assert!(
        (sum - in_flight).abs() <= 2.0 * n as f64 * c.mtu as f64,
        "{n} flows: windows {:?} sum {sum:.0} B, bytes in flight at the target RTT {in_flight:.0} B",
        r.windows
    );
}

#[test]
fn swift_two_flows_share_fairly_and_hold_the_target_delay() {
    check_swift(2);
}

#[test]
fn swift_eight_flows_share_fairly_and_hold_the_flow_scaled_target() {
    check_swift(8);
}

/// NSCC's incast: N senders start together at 1.5 BDP each; switches mark ECN from the
/// target queue on (`kmin = kmax` = the target delay's bytes at the bottleneck, so that a
/// mark and a delay above the target say the same), and the queue must come down to the
/// target and stay near it: below it, unmarked ACKs grow the windows; above it, marked ones
/// cut them.
fn nscc_incast(n: usize) -> (Bottleneck, f64) {
    let mut c = cfg("nscc");
    let target = empty_rtt(&c); // the network RTT (one switch: every path alike)
    let target_bytes = (target * 1e-12 * LINK.0 as f64 / 8.0) as u64;
    let step = EcnOverrides { kmin: Some(target_bytes), kmax: Some(target_bytes), pmax: Some(1.0) };
    c.ecn = Some(c.ecn.clone().expect("ECN on by default").with_overrides(step));
    (bottleneck_run(n, c, Time::from_us(500), Time::from_ms(3)), target)
}

#[test]
fn nscc_incast_queue_settles_near_the_target() {
    for n in [4usize, 16] {
        let (r, target) = nscc_incast(n);
        let queue_delay = mean(&r.queue) * 8.0 / LINK.0 as f64 * 1e12;
        let max = r.queue.iter().copied().max().unwrap_or(0) as f64 * 8.0 / LINK.0 as f64 * 1e12;
        // Above the target every ACK is marked and each window is cut once per base RTT;
        // below it the windows grow, by at most the fair increase (`fi = 5 mss a` a window,
        // a = this BDP over the reference's 100G x 12 us) in one RTT: the mean may miss the
        // target by N such steps and a packet of sampling grain.
        let c = SimConfig::default();
        let wire = LINK.tx_time((c.mtu + c.header_bytes) as u64).0 as f64;
        let a = target / 12e6;
        let slack = (n as f64 * 5.0 * a + 1.0) * wire;
        assert!(
            (queue_delay - target).abs() <= slack,
            "{n} senders: mean queueing delay {:.0} ns vs target {:.0} ns (slack {:.0} ns)",
            queue_delay / 1e3,
            target / 1e3,
            slack / 1e3
        );
        // The marks reach the senders one RTT (the target here) after the queue passed the
        // target; what arrives meanwhile is at most one RTT at line rate.
        assert!(max <= 2.0 * target, "{n} senders: queue peak {:.0} ns, over twice the target", max / 1e3);
        assert!(r.utilisation >= 0.99, "utilisation {:.4}", r.utilisation);
    }
}

/// Swift and NSCC on a k = 4 fat tree under WebSearch plus a cross-pod incast: lossless
/// (PFC), and lossy with go-back-N and timeouts or with IRN (the loss signals); every output
/// the same for 1, 2 and 4 threads.
#[test]
fn window_algorithms_give_the_same_outputs_for_one_two_and_four_threads() {
    for cc in ["swift", "nscc"] {
        for fabric in [
            "buffer_mb = 0.5",
            "buffer_mb = 0.3\nlossless = false\nrto = \"100us\"",
            "buffer_mb = 0.3\nlossless = false\nloss_recovery = \"irn\"",
        ] {
            let toml = format!(
                "seed = 11\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
                 [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"200us\"\n\
                 [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]\nreceiver = 0\n\
                 size = 200000\nstart = \"50us\"\n[fabric]\ncc = \"{cc}\"\n{fabric}\n"
            );
            let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads(cc, &toml);
            assert_eq!(stop, StopReason::Finished, "{cc} {fabric}");
            if fabric.contains("lossy") || fabric.contains("lossless = false") {
                assert!(r.counters.drops > 0, "{cc}: the lossy incast should drop ({fabric})");
            }
        }
    }
}

#[test]
fn window_algorithm_keys_are_read_and_bad_ones_refused_by_full_name() {
    let toml = |cc: &str, params: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\n\
             flows = [{{ src = 1, dst = 0, size = 1000, start = \"0us\" }}]\n\
             [fabric]\ncc = \"{cc}\"\n[fabric.cc_params]\n{params}\n"
        )
    };
    let s = fixtures::scenario(&toml("swift", "swift_ai = 2.0\nswift_base_target = \"15us\""), "ok.toml");
    let CcConfig::Swift(p) = s.config.cc else { panic!("swift") };
    assert_eq!((p.ai, p.base_target), (2.0, Time::from_us(15)));
    let s = fixtures::scenario(&toml("nscc", "nscc_target_qdelay = \"3us\"\nnscc_quick_adapt = false"), "ok.toml");
    let CcConfig::Nscc(p) = s.config.cc else { panic!("nscc") };
    assert_eq!((p.target_qdelay, p.quick_adapt), (Some(Time::from_us(3)), false));
    let cases = [
        ("swift", "swift_beta = 1.5", "fabric.cc_params.swift_beta", "(0, 1)"),
        ("swift", "swift_ai = -1", "fabric.cc_params.swift_ai", "positive"),
        ("swift", "swift_fs_min_cwnd = 200.0", "fabric.cc_params.swift_fs_min_cwnd", "below swift_fs_max_cwnd"),
        ("swift", "nscc_gamma = 0.5", "fabric.cc_params.nscc_gamma", "not a parameter of congestion control `swift`"),
        ("nscc", "nscc_gamma = 1.5", "fabric.cc_params.nscc_gamma", "(0, 1)"),
        ("nscc", "nscc_max_window = 0.5", "fabric.cc_params.nscc_max_window", "at least 1"),
        ("nscc", "nscc_target_qdelay = \"0us\"", "fabric.cc_params.nscc_target_qdelay", "positive"),
        ("nscc", "swift_ai = 1.0", "fabric.cc_params.swift_ai", "not a parameter of congestion control `nscc`"),
    ];
    for (cc, params, field, msg) in cases {
        let text = toml(cc, params);
        let e = fixtures::input_error(&text);
        let key = field.rsplit('.').next().unwrap();
        let line = fixtures::line_of(&text, &format!("{key} ="));
        assert!(e.starts_with(&format!("bad.toml:{line}:")) && e.contains(field) && e.contains(msg), "{params}: {e}");
    }
}
