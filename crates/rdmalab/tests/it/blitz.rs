//! Blitz's DASR (the Blitz poster, docs/blitz.md), driven through the whole simulator. Each test
//! checks a closed form or the paper's claim, with the bound derived in its comment:
//!
//! * n QPs into one receiver get exactly C/n each from two base RTTs on; the receiver link
//!   stays full; the queue is at most the overshoot of the n line-rate starts: each sender
//!   runs at C until its first ACK, one base RTT plus the wait of its first packet behind
//!   the other first packets (at most n−1 packets), then at C/k (k ≥ 1 QPs known) for at
//!   most n more packet times; so peak ≤ n·C·RTT + n²·MTU. (The simpler bound n·C·RTT + n·MTU
//!   leaves out that first-packet wait; it holds for n ≤ 8 here, not at n = 16.)
//! * a small-buffer 16→1 incast pauses under DCQCN but not under Blitz;
//! * the CC-attack paper's parallel attack: per-QP counting gives the attacker N/(N+1), per-host ½;
//! * churn reaches senders within two RTTs; in-network congestion falls back to DCQCN.
//!
//! Topology: stars of 100 Gb/s, 1 µs links unless said otherwise: base RTT 4.16 µs (4 µs of
//! propagation, two 1000-byte serialisations of 80 ns), C·RTT = 52,000 bytes.

use rdmalab::cc::{BlitzParams, CcConfig, DasrCount, DasrParams, Granularity};
use rdmalab::sim::{Results, RunLimit, SimConfig, Simulation};
use rdmalab::topology::{builders, Topology};
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, PortId, Rate, Time};

use crate::fixtures::{self, port_to};

const C: Rate = Rate::gbps(100);
const RTT: Time = Time::from_ns(4_160);
/// C·RTT in bytes.
const C_RTT: u64 = 52_000;
const FOREVER: u64 = 10_000_000_000;
/// Wire bytes of a full data packet.
const WIRE: u64 = 1048;

fn star(hosts: usize) -> Topology {
    fixtures::star(hosts, C)
}

fn blitz(dasr: DasrParams) -> SimConfig {
    SimConfig { cc: CcConfig::Blitz(BlitzParams { dasr, ..BlitzParams::default() }), ..SimConfig::default() }
}

fn blitz_default() -> SimConfig {
    blitz(DasrParams::default())
}

/// The share as it travels (kb/s on the ACK).
fn share(n: u64, u: f64) -> Rate {
    Rate((C.0 as f64 * u / n as f64) as u64 / 1000 * 1000)
}

fn run_until(topo: Topology, flows: Vec<FlowSpec>, mut c: SimConfig, end: Time) -> Results {
    c.stop_time = end;
    let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
    sim.run(RunLimit::default());
    sim.snapshot()
}

fn into_host0(senders: impl Iterator<Item = u32>, size: u64, start: Time) -> Vec<FlowSpec> {
    senders.map(|s| FlowSpec::new(NodeId(s), NodeId(0), size, start)).collect()
}

#[test]
fn n_flows_get_c_over_n_within_two_rtts_at_full_utilisation() {
    for n in [2u64, 4, 8, 16] {
        let topo = star(n as usize + 1);
        let sw = NodeId(n as u32 + 1);
        let down = port_to(&topo, sw, NodeId(0));
        let mut c = blitz_default();
        c.rate_sample_interval = Some(Time::from_ns(500));
        c.queue_sample_interval = Some(Time::from_ns(200));
        let end = Time::from_us(60);
        let r = run_until(topo, into_host0(1..=n as u32, FOREVER, Time::ZERO), c, end);
        let late: Vec<_> = r.rate_samples.iter().filter(|s| s.time >= RTT + RTT).collect();
        assert!(late.len() as u64 >= n * 100, "n={n}: {} samples", late.len());
        for s in &late {
            assert_eq!(s.rate, share(n, 1.0), "n={n}: QP {} at {:?}", s.qp.0, s.time);
        }
        // Payload delivered over the window, against the link's payload capacity
        // (C x 1000/1048: the shares add up to C of wire rate).
        let window = late.iter().filter(|s| s.time > Time::from_us(10));
        let times: Vec<Time> = window.clone().map(|s| s.time).collect();
        let secs = (*times.iter().max().unwrap() - *times.iter().min().unwrap()).secs_f64() + 500e-12 * 1000.0;
        let bits: f64 = window.map(|s| s.throughput.0 as f64 * 500e-9).sum();
        let payload_capacity = C.0 as f64 * 1000.0 / WIRE as f64;
        let util = bits / secs / payload_capacity;
        assert!(util >= 0.98, "n={n}: utilisation {util:.4} of the payload capacity");
        let peak = r.queue_samples.iter().filter(|q| q.1 == down).map(|q| q.2).max().unwrap_or(0);
        let bound = n * C_RTT + n * n * WIRE;
        assert!(peak <= bound, "n={n}: queue peak {peak} above n·C·RTT + n²·MTU = {bound}");
        assert!(peak > 0);
        assert_eq!(r.counters.ecn_marks, 0, "no marking at the edge under Blitz");
    }
}

/// 16 → 1 with a buffer where 16·C·RTT of overshoot sits under the PFC threshold with a 2×
/// margin. The threshold of an ingress is (buffer − headroom − reserves − shared used)/8
/// (fabric::mmu); with 17 ports of 3·12,500 B headroom and 4 KiB reserve, shared use of
/// 16·C·RTT = 832,000 B and a per-ingress overshoot of at most C·RTT, a 2× margin needs
/// buffer ≥ 637,500 + 69,632 + 832,000 + 8·2·52,000 = 2,371,132 B: we use 2.5 MB.
#[test]
fn small_buffer_incast_pauses_under_dcqcn_but_not_under_blitz() {
    let buffer = 2_500_000;
    let hdrm_rsrv = 17 * 3 * 12_500 + 17 * 4096;
    assert!((buffer - hdrm_rsrv - 16 * C_RTT) / 8 >= 2 * C_RTT, "the stated margin holds");
    let flows = || into_host0(1..=16, 1_000_000, Time::ZERO);
    let dcqcn = SimConfig { cc: CcConfig::from_name("dcqcn").unwrap(), buffer_bytes: buffer, ..SimConfig::default() };
    let d = run_until(star(17), flows(), dcqcn, Time::from_ms(10));
    assert!(d.counters.pauses > 0, "DCQCN: no PAUSE; the test would not tell the two apart");
    let b = run_until(star(17), flows(), SimConfig { buffer_bytes: buffer, ..blitz_default() }, Time::from_ms(10));
    assert_eq!(b.records.len(), 16, "every flow completes");
    assert_eq!(b.counters.pauses, 0, "Blitz paused");
    assert_eq!(d.records.len(), 16);
}

/// The CC-attack paper's parallel attack: host 1 opens N = 4 QPs, host 2 one, all into host 0. Shares
/// of the receiver's bytes over a window well after the start.
fn attack(count: DasrCount, gran: Granularity) -> f64 {
    let topo = star(3);
    let sw = NodeId(3);
    let (up1, up2) = (port_to(&topo, NodeId(1), sw), port_to(&topo, NodeId(2), sw));
    let mut flows = into_host0([1, 1, 1, 1, 2].into_iter(), FOREVER, Time::ZERO);
    for (i, f) in flows.iter_mut().enumerate() {
        f.sport = Some(1000 + i as u16);
    }
    let c = SimConfig { granularity: gran, ..blitz(DasrParams { count, ..DasrParams::default() }) };
    let mut sim = Simulation::new(topo, flows, c).expect("valid");
    sim.run(RunLimit { until: Time::from_us(50), max_events: u64::MAX });
    let a = sim.snapshot();
    sim.run(RunLimit { until: Time::from_us(250), max_events: u64::MAX });
    let b = sim.snapshot();
    let sent = |p: PortId| (b.ports[p.idx()].tx_bytes - a.ports[p.idx()].tx_bytes) as f64;
    sent(up1) / (sent(up1) + sent(up2))
}

#[test]
fn parallel_attack_wins_per_qp_and_loses_per_host() {
    let per_qp = attack(DasrCount::Qp, Granularity::PerQp);
    assert!((per_qp - 0.8).abs() <= 0.04, "qp count: attacker share {per_qp:.3}, N/(N+1) = 0.8");
    let per_host = attack(DasrCount::Host, Granularity::PerPair);
    assert!((per_host - 0.5).abs() <= 0.04, "host count: attacker share {per_host:.3}, 1/2");
}

/// The rates QPs hold in `[from, to)`, which must all be `want`.
fn rates_between(r: &Results, from: Time, to: Time, skip_flow: Option<u32>) -> Vec<Rate> {
    r.rate_samples
        .iter()
        .filter(|s| s.time >= from && s.time < to && Some(s.flow) != skip_flow)
        .map(|s| s.rate)
        .collect()
}

/// u = 0.9 so that the first RTT's overshoot drains, at (1 − u)·C (with u = 1 it stands, and
/// a new QP's first packet waits behind it: docs/blitz.md): the 3·C·RTT of four starts is
/// gone after 156 kB / 10 Gb/s = 125 µs, so the fifth starts at 200 µs.
#[test]
fn churn_reaches_senders_within_two_rtts() {
    let u = 0.9;
    let mut c = blitz(DasrParams { utilization: u, ..DasrParams::default() });
    c.rate_sample_interval = Some(Time::from_ns(250));
    // One of four ends: the others go to u·C/3.
    let mut flows = into_host0(1..=3, FOREVER, Time::ZERO);
    flows.insert(0, FlowSpec::new(NodeId(4), NodeId(0), 200_000, Time::ZERO));
    let r = run_until(star(5), flows, c.clone(), Time::from_us(150));
    let done = r.records.iter().find(|f| f.src == NodeId(4)).expect("the short flow ends");
    let t_end = done.start + done.fct;
    assert!(rates_between(&r, t_end - RTT, t_end, Some(done.flow)).contains(&share(4, u)));
    let after = rates_between(&r, t_end + RTT + RTT, Time::from_us(150), Some(done.flow));
    assert!(!after.is_empty() && after.iter().all(|&x| x == share(3, u)), "{:?}", &after[..4.min(after.len())]);
    // A fifth starts at 200 µs (the queue drained): everyone at u·C/5.
    let mut flows = into_host0(1..=4, FOREVER, Time::ZERO);
    let t5 = Time::from_us(200);
    flows.push(FlowSpec::new(NodeId(5), NodeId(0), FOREVER, t5));
    let r = run_until(star(6), flows, c, Time::from_us(240));
    let before = rates_between(&r, t5 - RTT, t5, None);
    assert!(before.iter().all(|&x| x == share(4, u)), "{before:?}");
    let after = rates_between(&r, t5 + RTT + RTT, Time::from_us(240), None);
    assert!(after.len() > 100 && after.iter().all(|&x| x == share(5, u)), "{:?}", &after[..4]);
}

/// Dumbbell, one sender per receiver, a 40 Gb/s bottleneck: the share is the line rate, and
/// the marks at the bottleneck (not a host-facing port) drive DCQCN as without Blitz.
#[test]
fn in_network_congestion_falls_back_to_dcqcn() {
    let topo = || {
        let l = |g| builders::LinkParams::new(Rate::gbps(g), Time::from_us(1));
        builders::dumbbell(2, l(100), l(40)).expect("valid")
    };
    let flows = || {
        vec![FlowSpec::new(NodeId(0), NodeId(2), FOREVER, Time::ZERO), {
            FlowSpec::new(NodeId(1), NodeId(3), FOREVER, Time::ZERO)
        }]
    };
    let bottleneck = |t: &Topology| port_to(t, NodeId(4), NodeId(5));
    let util = |c: SimConfig| {
        let t = topo();
        let p = bottleneck(&t);
        let mut sim = Simulation::new(t, flows(), c).expect("valid");
        sim.run(RunLimit { until: Time::from_ms(2), max_events: u64::MAX });
        let a = sim.snapshot();
        sim.run(RunLimit { until: Time::from_ms(6), max_events: u64::MAX });
        let b = sim.snapshot();
        let bytes = b.ports[p.idx()].tx_bytes - a.ports[p.idx()].tx_bytes;
        (bytes as f64 * 8.0 / 4e-3 / 40e9, b)
    };
    let (u_dcqcn, _) = util(SimConfig { cc: CcConfig::from_name("dcqcn").unwrap(), ..SimConfig::default() });
    let mut c = blitz_default();
    c.rate_sample_interval = Some(Time::from_us(10));
    let (u_blitz, r) = util(c);
    assert!(r.counters.ecn_marks > 0, "no marks at the bottleneck");
    assert!((u_blitz - u_dcqcn).abs() <= 0.05 * u_dcqcn, "blitz {u_blitz:.3} vs dcqcn {u_dcqcn:.3}");
    // One sender per receiver: DCQCN, not the share, sets the rate (below line).
    assert!(r.rate_samples.iter().any(|s| s.rate < Rate::gbps(50)));
}

#[test]
fn granularity_must_match_the_count() {
    let flows = into_host0(1..=2, 1000, Time::ZERO);
    for (count, gran) in [(DasrCount::Host, Granularity::PerQp), (DasrCount::Qp, Granularity::PerPair)] {
        let c = SimConfig { granularity: gran, ..blitz(DasrParams { count, ..DasrParams::default() }) };
        let e = Simulation::new(star(3), flows.clone(), c).unwrap_err().to_string();
        assert!(e.contains("dasr_count") && e.contains("granularity"), "{e}");
    }
}

#[test]
fn blitz_runs_are_deterministic() {
    let flows = || into_host0(1..=8, 300_000, Time::ZERO);
    let a = run_until(star(9), flows(), blitz_default(), Time::from_ms(5));
    let b = run_until(star(9), flows(), blitz_default(), Time::from_ms(5));
    let fcts = |r: &Results| r.records.iter().map(|f| (f.flow, f.fct)).collect::<Vec<_>>();
    assert_eq!(fcts(&a), fcts(&b));
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.records.len(), 8);
}
