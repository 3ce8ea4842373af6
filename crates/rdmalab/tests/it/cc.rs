//! Congestion-control mechanism tests: each drives the whole simulator and checks a
//! property the algorithm exists for (convergence, utilisation, queue, PFC avoidance,
//! enforcement granularity). Tolerances come from the mechanism, not from observed runs:
//! DCQCN's fairness and utilisation targets are 10 % and 95 %; its queue must
//! stay below Kmax (above it every packet is marked) while reaching Kmin (below it no
//! packet is, so no cut would happen); HPCC's utilisation is eta plus its AI of
//! N x 50 Mb/s per RTT (<= 0.2 % of 100G here, bounded by 1 %), and its queue at most one
//! packet per sender (paced senders whose packets arrive together).
//!
//! Topology: a star of 100 Gb/s links with 1 us delay; host 0 receives, the switch port
//! towards host 0 is the bottleneck.

use rdmalab::cc::{CcConfig, Granularity};
use rdmalab::sim::{Results, RunLimit, SimConfig, Simulation, StopReason, WindowConfig};
use rdmalab::topology::Topology;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, PortId, Rate, Time};

use crate::fixtures::{self, port_to};

const LINK: Rate = Rate::gbps(100);
/// ECN band at 100G (`EcnConfig::hpcc_default`, the reference's run.py values).
const KMIN: u64 = 400_000;
const KMAX: u64 = 1_600_000;
/// Long enough never to finish inside a test.
const FOREVER: u64 = 10_000_000_000;

fn star(hosts: usize) -> Topology {
    fixtures::star(hosts, LINK)
}

/// The port of `from` whose link leads to `to`.
fn cfg(cc: &str) -> SimConfig {
    SimConfig { cc: CcConfig::from_name(cc).expect("known cc"), ..SimConfig::default() }
}

/// Runs to `t` and returns the results so far.
fn at(sim: &mut Simulation, t: Time) -> Results {
    sim.run(RunLimit { until: t, max_events: u64::MAX });
    sim.snapshot()
}

fn tx(r: &Results, p: PortId) -> u64 {
    r.ports[p.idx()].tx_bytes
}

/// N long flows from hosts 1..=N into host 0, started 50 us apart; after `warm` the
/// throughput of each sender and of the bottleneck are measured until `end`.
struct Bottleneck {
    shares: Vec<f64>,
    utilisation: f64,
    queue: Vec<u64>,
}

fn bottleneck_run(n: usize, mut c: SimConfig, warm: Time, end: Time) -> Bottleneck {
    let topo = star(n + 1);
    let sw = NodeId((n + 1) as u32);
    let flows =
        (1..=n).map(|i| FlowSpec::new(NodeId(i as u32), NodeId(0), FOREVER, Time::from_us(50 * (i as u64 - 1))));
    let bott = port_to(&topo, sw, NodeId(0));
    let ups: Vec<PortId> = (1..=n).map(|i| port_to(&topo, NodeId(i as u32), sw)).collect();
    c.queue_sample_interval = Some(Time::from_us(5));
    c.queue_sample_start = warm;
    c.stop_time = end;
    let mut sim = Simulation::new(topo, flows.collect(), c).expect("valid scenario");
    let a = at(&mut sim, warm);
    let b = at(&mut sim, end);
    let sent: Vec<u64> = ups.iter().map(|&u| tx(&b, u) - tx(&a, u)).collect();
    let total: u64 = sent.iter().sum();
    let secs = (end - warm).secs_f64();
    Bottleneck {
        shares: sent.iter().map(|&s| s as f64 / total as f64).collect(),
        utilisation: (tx(&b, bott) - tx(&a, bott)) as f64 * 8.0 / secs / LINK.0 as f64,
        queue: b.queue_samples.iter().filter(|s| s.1 == bott && s.0 >= warm).map(|s| s.2).collect(),
    }
}

fn check_dcqcn(n: usize, warm_ms: u64, end_ms: u64) {
    let r = bottleneck_run(n, cfg("dcqcn"), Time::from_ms(warm_ms), Time::from_ms(end_ms));
    let fair = 1.0 / n as f64;
    for (i, s) in r.shares.iter().enumerate() {
        assert!((s - fair).abs() <= 0.1 * fair, "flow {i}: share {s:.3} vs 1/{n} (all {:?})", r.shares);
    }
    assert!(r.utilisation >= 0.95, "utilisation {:.3}", r.utilisation);
    let max = r.queue.iter().copied().max().unwrap_or(0);
    assert!(!r.queue.is_empty());
    assert!(max <= KMAX, "queue peak {max} above Kmax: marking everything did not hold it");
    assert!(max > KMIN, "queue peak {max} never reached Kmin, yet rates were cut");
}

#[test]
fn dcqcn_two_flows_converge_to_half_each_at_full_utilisation() {
    check_dcqcn(2, 10, 20);
}

#[test]
fn dcqcn_four_flows_converge_to_a_quarter_each_at_full_utilisation() {
    check_dcqcn(4, 10, 30);
}

#[test]
fn hpcc_keeps_the_queue_near_zero_and_utilisation_near_eta() {
    for n in [2usize, 4] {
        let c = SimConfig { window: WindowConfig { enabled: true, variable: true, global: true }, ..cfg("hpcc") };
        let r = bottleneck_run(n, c, Time::from_ms(1), Time::from_ms(3));
        assert!((r.utilisation - 0.95).abs() <= 0.01, "{n} flows: utilisation {:.4}", r.utilisation);
        let one_packet = 1000 + 48 + 42;
        let max = r.queue.iter().copied().max().unwrap_or(0);
        assert!(max <= n as u64 * one_packet, "{n} flows: queue peak {max} B");
    }
}

#[test]
fn timely_and_dctcp_bound_the_queue() {
    // DCTCP cuts on marks, so the queue stays under Kmax; TIMELY cuts multiplicatively
    // whenever the RTT exceeds T_high = 500 us, i.e. before 500 us of queue at 100G.
    let r = bottleneck_run(2, cfg("dctcp"), Time::from_ms(1), Time::from_ms(4));
    assert!(r.queue.iter().all(|&q| q <= KMAX), "dctcp queue peak {:?}", r.queue.iter().max());
    assert!(r.utilisation >= 0.9, "dctcp utilisation {:.3}", r.utilisation);
    let t_high_bytes = 500_000 * LINK.0 / 8 / 1_000_000_000;
    let r = bottleneck_run(2, cfg("timely"), Time::from_ms(1), Time::from_ms(4));
    assert!(r.queue.iter().all(|&q| q <= t_high_bytes), "timely queue peak {:?}", r.queue.iter().max());
}

/// 16 hosts send 1 MB each to host 0 at once through a 4 MiB shared buffer.
fn incast(window: bool) -> Results {
    let n = 16;
    let topo = star(n + 1);
    let flows = (1..=n).map(|i| FlowSpec::new(NodeId(i as u32), NodeId(0), 1_000_000, Time::ZERO)).collect();
    let c = SimConfig {
        buffer_bytes: 4 << 20,
        window: WindowConfig { enabled: window, variable: false, global: true },
        ..cfg("dcqcn")
    };
    let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    sim.results().expect("conservation holds")
}

#[test]
fn incast_pauses_under_dcqcn_without_a_window_and_not_with_one() {
    // Without a window the 16 senders start at line rate and DCQCN needs several 4 us cut
    // rounds: the queue outgrows the dynamic PFC threshold. With a one-BDP window at most
    // 16 BDPs (~0.8 MB) are ever queued, far below it.
    let open = incast(false);
    let win = incast(true);
    assert!(open.counters.pauses > 0, "no PAUSE without a window");
    assert!(win.counters.pauses < open.counters.pauses);
    assert_eq!(win.counters.pauses, 0, "windowed incast paused");
    assert_eq!(open.records.len(), 16);
    assert_eq!(win.records.len(), 16);
}

/// A victim (host 1, one QP) and an attacker (host 2, three QPs) share host 0's downlink
/// under DCQCN; returns the attacker's share of the bytes sent from 10 to 30 ms.
fn attacker_share(g: Granularity) -> f64 {
    let k = 3;
    let topo = star(3);
    let sw = NodeId(3);
    let mut flows = vec![FlowSpec::new(NodeId(1), NodeId(0), FOREVER, Time::ZERO)];
    flows.extend((0..k).map(|_| FlowSpec::new(NodeId(2), NodeId(0), FOREVER, Time::ZERO)));
    let (v, a) = (port_to(&topo, NodeId(1), sw), port_to(&topo, NodeId(2), sw));
    let c = SimConfig { granularity: g, stop_time: Time::from_ms(30), ..cfg("dcqcn") };
    let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
    let r1 = at(&mut sim, Time::from_ms(10));
    let r2 = at(&mut sim, Time::from_ms(30));
    let (bv, ba) = ((tx(&r2, v) - tx(&r1, v)) as f64, (tx(&r2, a) - tx(&r1, a)) as f64);
    ba / (ba + bv)
}

#[test]
fn per_qp_state_gives_k_qps_k_shares() {
    let s = attacker_share(Granularity::PerQp);
    assert!((s - 0.75).abs() <= 0.075, "attacker share {s:.3} vs 3/4");
}

#[test]
fn per_destination_qps_together_get_one_qps_rate() {
    for g in [Granularity::PerDestination, Granularity::PerPair] {
        let s = attacker_share(g);
        assert!((s - 0.5).abs() <= 0.05, "{g:?}: attacker share {s:.3} vs 1/2");
    }
}

#[test]
fn unsplit_per_destination_rate_lets_k_qps_take_more() {
    // The CC-attack paper's ConnectX-5: each QP sends at the destination's rate, so three QPs send
    // three times it, and the attacker escapes the per-destination fair share.
    let s = attacker_share(Granularity::PerDestinationUnsplit);
    assert!(s > 0.55, "attacker share {s:.3} should exceed the fair band around 1/2");
}

#[test]
fn reference_configs_map_every_cc_mode() {
    use rdmalab::formats::hpcc_config::parse_config;
    use rdmalab::hpcc_compat::cc_config;
    let path = std::path::Path::new("c.txt");
    let base = "RATE_AI 20Mb/s\nRATE_HAI 200Mb/s\nMIN_RATE 1000Mb/s\nALPHA_RESUME_INTERVAL 1\n";
    let parse = |extra: &str| parse_config(&format!("{base}{extra}"), path).expect("parses");
    let names: Vec<&str> = [1, 3, 7, 8, 0]
        .iter()
        .map(|m| cc_config(&parse(&format!("CC_MODE {m}\nRP_TIMER 300\n"))).expect("supported").name())
        .collect();
    assert_eq!(names, ["dcqcn", "hpcc", "timely", "dctcp", "none"]);
    match cc_config(&parse("CC_MODE 1\nRP_TIMER 300\nEWMA_GAIN 0.00390625\nFAST_RECOVERY_TIMES 1\n")).unwrap() {
        CcConfig::Dcqcn(p) => {
            assert_eq!((p.g, p.fast_recovery_times, p.rate_hai), (1.0 / 256.0, 1, Rate::mbps(200)));
            assert_eq!((p.alpha_interval, p.rp_timer), (Time::from_us(1), Time::from_us(300)));
        }
        other => panic!("{other:?}"),
    }
    let err = cc_config(&parse("CC_MODE 10\n")).unwrap_err().to_string();
    assert!(err.contains("CC_MODE") && err.contains("PINT"), "{err}");
    let err = cc_config(&parse("CC_MODE 1\nRP_TIMER 0\n")).unwrap_err().to_string();
    assert!(err.contains("RP_TIMER"), "{err}");
    let err = cc_config(&parse_config("CC_MODE 3\n", path).unwrap()).unwrap_err().to_string();
    assert!(err.contains("RATE_AI"), "{err}");
}

#[test]
fn scenario_names_cc_and_granularity() {
    let text = r#"
[topology]
kind = "star"
hosts = 2
[fabric]
cc = "hpcc"
granularity = "per_destination_unsplit"
cnp_interval = "50us"
"#;
    let s = rdmalab::scenario::Scenario::from_toml(text, std::path::Path::new("s.toml")).expect("valid");
    assert_eq!(s.config.cc.name(), "hpcc");
    assert_eq!(s.config.granularity, Granularity::PerDestinationUnsplit);
    assert_eq!(s.config.cnp_interval, Some(Time::from_us(50)));
    assert_eq!(s.config.window, WindowConfig { enabled: true, variable: true, global: true });
    let bad = text.replace("\"hpcc\"", "\"cubic\"");
    let err = rdmalab::scenario::Scenario::from_toml(&bad, std::path::Path::new("s.toml")).unwrap_err().to_string();
    assert!(err.contains("cc") && err.contains("cubic"), "{err}");
}

#[test]
fn every_cc_completes_finite_flows_and_conserves_bytes() {
    for cc in ["dcqcn", "hpcc", "timely", "dctcp"] {
        for g in [Granularity::PerQp, Granularity::PerDestination, Granularity::PerDestinationUnsplit] {
            let topo = star(5);
            let mut flows: Vec<FlowSpec> = (1..5)
                .flat_map(|i| {
                    (0..2).map(move |j| FlowSpec::new(NodeId(i), NodeId(0), 300_000 + j * 1000, Time::from_us(j * 20)))
                })
                .collect();
            flows.sort_by_key(|f| f.start);
            let c = SimConfig { granularity: g, ..cfg(cc) };
            let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
            assert_eq!(sim.run_to_end(), StopReason::Finished, "{cc} {g:?}");
            let r = sim.results().expect("conservation holds");
            assert_eq!(r.records.len(), 8, "{cc} {g:?}");
        }
    }
}

/// Dumbbell at 100G: flow A (0 -> 2, 20 MB) and flow B (1 -> 3, 5 MB) start together under
/// DCQCN; returns (A's FCT, B's FCT).
fn recovery_after_a_competitor(byte_counter: u64) -> (Time, Time) {
    let r = crate::fixtures::run_finished(crate::fixtures::scenario(
        &format!(
            "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 2\nhost_rate = \"100Gbps\"\nbottleneck_rate = \"100Gbps\"\n\
             [[traffic]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 2, size = 20000000 }}, {{ src = 1, dst = 3, size = 5000000 }}]\n\
             [fabric]\ncc = \"dcqcn\"\n[fabric.cc_params]\nbyte_counter = {byte_counter}\n"
        ),
        "recovery.toml",
    ));
    let fct = |src: u32| r.records.iter().find(|f| f.src == rdmalab::NodeId(src)).unwrap().fct;
    (fct(0), fct(1))
}

#[test]
fn dcqcn_byte_counter_recovers_in_bytes_not_timer_periods() {
    // Once B ends, A climbs back by increase events alone. Timer only, one event per 300 us:
    // each fast-recovery event halves the gap between A's rate and its target, so closing
    // it takes milliseconds. With a 32,767-byte counter an event comes every
    // 32,767 B / 50 Gb/s = 5.2 us or sooner, and A's rate meets its target within tens of
    // microseconds (the target itself still climbs by R_AI until two timer events have
    // passed: hyper increase needs both counts past F). Neither can beat the link: both
    // flows' 25 MB need 25e6 / 1000 x 1048 x 8 b / 100 Gb/s = 2.096 ms.
    let makespan = Time::from_ns(2_096_000);
    let (a_timer, b_timer) = recovery_after_a_competitor(0);
    let (a_bytes, b_bytes) = recovery_after_a_competitor(32_767);
    eprintln!("A / B FCT: timer only {a_timer} / {b_timer}, byte counter {a_bytes} / {b_bytes}");
    assert!(a_bytes > makespan && a_timer > makespan);
    // This detects the hook rather than checking a closed form: without it the two runs
    // are the same run (the counter is the only difference), and with it what A sends after
    // B takes 29 % less time here. The test asks for 10 %, so it fails if the counter stops
    // acting and survives small changes of unrelated timing.
    let after = |a: Time, b: Time| (a.0 - b.0) as f64;
    assert!(
        after(a_bytes, b_bytes) < 0.9 * after(a_timer, b_timer),
        "after B: byte counter {} ps, timer only {} ps",
        after(a_bytes, b_bytes),
        after(a_timer, b_timer)
    );
}

#[test]
fn byte_counter_is_dcqcn_only_and_checked() {
    let base = "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\n\
                [[traffic]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 1000 }]\n";
    let e = crate::fixtures::build_error(
        &format!("{base}[fabric]\ncc = \"dcqcn\"\n[fabric.cc_params]\nbyte_counter = -1\n"),
        "b.toml",
    );
    assert!(e.contains("fabric.cc_params.byte_counter"), "{e}");
    let e = crate::fixtures::build_error(
        &format!("{base}[fabric]\ncc = \"hpcc\"\n[fabric.cc_params]\nbyte_counter = 32767\n"),
        "b.toml",
    );
    assert!(e.contains("byte_counter"), "{e}");
    let e = crate::fixtures::build_error(
        &format!("{base}[fabric]\ncc = \"dcqcn\"\n[fabric.cc_params]\ninitial_alpha = 0\n"),
        "b.toml",
    );
    assert!(e.contains("fabric.cc_params.initial_alpha") && e.contains("(0, 1]"), "{e}");
}
