//! Link failures and lossy links (`sim::failures`, `fabric.error_rate`).
//!
//! The leaf-spine here has 2 leaves with 4 hosts each and 2 spines: hosts 0..8, leaves 8
//! and 9, spines 10 and 11 (builders number hosts first).

use rdmalab::config::LinkEvent;
use rdmalab::ids::LinkId;
use rdmalab::sim::{RunLimit, SimConfig, Simulation, StopReason};
use rdmalab::topology::{builders, Topology};
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const LEAF0: NodeId = NodeId(8);
const SPINE0: NodeId = NodeId(10);
const SPINE1: NodeId = NodeId(11);

fn leaf_spine() -> Topology {
    builders::leaf_spine(2, 2, 4, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap()
}

/// Every host of leaf 0 sends 1 MB to one host of leaf 1 and back, plus one flow inside
/// leaf 0; many sports, so ECMP puts packets on every uplink.
fn cross_traffic() -> Vec<FlowSpec> {
    let mut flows = Vec::new();
    for i in 0..4u32 {
        for k in 0..4u16 {
            let mut f = FlowSpec::new(NodeId(i), NodeId(4 + i), 500_000, Time::ZERO);
            f.sport = Some(1000 + 10 * i as u16 + k);
            flows.push(f);
            let mut g = FlowSpec::new(NodeId(4 + i), NodeId(i), 500_000, Time::ZERO);
            g.sport = Some(2000 + 10 * i as u16 + k);
            flows.push(g);
        }
    }
    flows.push(FlowSpec::new(NodeId(0), NodeId(1), 200_000, Time::ZERO));
    flows
}

fn link_of(topo: &Topology, a: NodeId, b: NodeId) -> LinkId {
    let i = topo.links.iter().position(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a)).unwrap();
    LinkId(i as u32)
}

fn down(at: Time, a: NodeId, b: NodeId) -> LinkEvent {
    LinkEvent { at, a, b, up: false }
}

#[test]
fn one_uplink_down_mid_run_every_flow_completes_and_the_link_stays_silent() {
    let topo = leaf_spine();
    let link = link_of(&topo, LEAF0, SPINE0);
    let t_down = Time::from_us(15);
    let cfg = SimConfig {
        link_events: vec![down(t_down, LEAF0, SPINE0)],
        reroute_delay: Time::from_us(5),
        ..SimConfig::default()
    };
    let flows = cross_traffic();
    let n = flows.len();
    let mut sim = Simulation::new(topo, flows, cfg).unwrap();
    // Just after the failure: what the link's two ports have sent so far.
    assert_eq!(sim.run(RunLimit { until: t_down, max_events: u64::MAX }), StopReason::Paused);
    let sent_before = sim.snapshot().ports;
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().expect("conservation holds; losses are the failure's");
    assert_eq!(r.records.len(), n, "every flow completes on the remaining spine");
    assert!(r.unreachable.is_empty());
    let c = r.counters;
    assert!(c.link_down_losses > 0, "the wire and queues of the link held packets at 15 us");
    assert_eq!(c.drops, c.link_down_losses, "lossless fabric: no other drop");
    assert_eq!((r.mechanism_count("link_failures"), r.mechanism_count("reroutes")), (1, 1));
    for p in [2 * link.0 as usize, 2 * link.0 as usize + 1] {
        assert!(sent_before[p].tx_packets > 0, "ECMP used the link before it failed");
        assert_eq!(r.ports[p].tx_packets, sent_before[p].tx_packets, "port {p} sent after the failure");
    }
    // The losses were repaired: every byte sent was delivered or accounted as lost.
    assert_eq!(c.payload_bytes_delivered, r.records.iter().map(|f| f.size).sum::<u64>());
}

#[test]
fn a_leaf_cut_off_reports_its_cross_leaf_flows_unreachable_and_the_run_ends() {
    let topo = leaf_spine();
    let t = Time::from_us(10);
    let cfg = SimConfig {
        link_events: vec![down(t, LEAF0, SPINE0), down(t, LEAF0, SPINE1)],
        reroute_delay: Time::from_us(2),
        ..SimConfig::default()
    };
    let mut flows = cross_traffic();
    // A flow that starts after the partition, into it.
    let mut late = FlowSpec::new(NodeId(5), NodeId(2), 10_000, Time::from_us(100));
    late.sport = Some(3000);
    flows.push(late);
    let n = flows.len();
    let mut sim = Simulation::new(topo, flows, cfg).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished, "the run ends, nothing hangs");
    let r = sim.results().unwrap();
    assert_eq!(r.records.len() + r.unreachable.len(), n);
    let local: Vec<_> = r.records.iter().filter(|f| f.src.0 < 4 && f.dst.0 < 4).collect();
    assert_eq!(local.len(), 1, "the flow inside leaf 0 completes");
    assert_eq!(r.unreachable.len(), n - 1, "every cross-leaf flow is reported");
    for u in &r.unreachable {
        assert!((u.src.0 < 4) != (u.dst.0 < 4), "only cross-leaf flows: {u:?}");
        assert_eq!(u.why, rdmalab::sim::GaveUp::Unreachable);
        assert!(u.at >= t + Time::from_us(2), "given up when routes changed, not before");
    }
    let late = r.unreachable.iter().find(|u| u.src == NodeId(5) && u.dst == NodeId(2)).unwrap();
    assert_eq!(late.at, Time::from_us(100), "a flow into the partition is reported when it starts");
    assert_eq!(r.last_completion, Time::from_us(100));
}

#[test]
fn a_repaired_link_carries_traffic_again() {
    let topo = leaf_spine();
    let link = link_of(&topo, LEAF0, SPINE0);
    let cfg = SimConfig {
        link_events: vec![
            down(Time::from_us(5), LEAF0, SPINE0),
            LinkEvent { at: Time::from_us(30), a: SPINE0, b: LEAF0, up: true },
        ],
        ..SimConfig::default()
    };
    let flows = cross_traffic();
    let n = flows.len();
    let mut sim = Simulation::new(topo, flows, cfg).unwrap();
    sim.run(RunLimit { until: Time::from_us(30), max_events: u64::MAX });
    let at_repair = sim.snapshot().ports[2 * link.0 as usize].tx_packets;
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    assert_eq!(r.records.len(), n);
    assert_eq!(r.mechanism_count("reroutes"), 2);
    assert!(r.ports[2 * link.0 as usize].tx_packets > at_repair, "routes took the link back");
}

#[test]
fn link_errors_lose_packets_at_the_configured_rate_and_go_back_n_recovers() {
    // A star of two hosts, every link losing p of the packets that reach its far end.
    let p = 0.01;
    let mut topo = builders::star(2, Rate::gbps(100), Time::from_us(1)).unwrap();
    for l in &mut topo.links {
        l.error_rate = p;
    }
    let flows = vec![FlowSpec::new(NodeId(0), NodeId(1), 2_000_000, Time::ZERO)];
    let mut sim = Simulation::new(topo, flows, SimConfig::default()).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    assert_eq!(r.records.len(), 1, "go-back-N repaired every loss");
    let c = r.counters;
    assert_eq!(c.drops, c.link_error_losses);
    assert!(c.nacks + c.timeouts > 0, "losses were noticed");
    // Each packet transmission is one arrival that may be lost: a binomial count.
    let n = c.packet_hops as f64;
    let (mean, sd) = (n * p, (n * p * (1.0 - p)).sqrt());
    let lost = c.link_error_losses as f64;
    assert!((lost - mean).abs() < 4.0 * sd, "lost {lost}, expected {mean:.0} +- {sd:.1} (4 sd)");
}

#[test]
fn failures_are_deterministic() {
    let run = || {
        let cfg = SimConfig {
            link_events: vec![down(Time::from_us(12), LEAF0, SPINE1)],
            reroute_delay: Time::from_us(3),
            ..SimConfig::default()
        };
        let mut sim = Simulation::new(leaf_spine(), cross_traffic(), cfg).unwrap();
        sim.run_to_end();
        let r = sim.results().unwrap();
        (r.records.iter().map(|f| (f.flow, f.fct)).collect::<Vec<_>>(), r.counters)
    };
    assert_eq!(run(), run());
}

#[test]
fn an_event_on_a_missing_link_is_an_error() {
    let cfg = SimConfig { link_events: vec![down(Time::from_us(1), NodeId(0), NodeId(1))], ..SimConfig::default() };
    let err = Simulation::new(leaf_spine(), cross_traffic(), cfg).unwrap_err().to_string();
    assert!(err.contains("events[0]") && err.contains("no link joins nodes 0 and 1"), "{err}");
}
