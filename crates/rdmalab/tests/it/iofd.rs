//! Blitz's in-order flow deflection (IOFD, the Blitz poster's §2 ¶3; docs/blitz.md) through the whole
//! simulator.
//!
//! The forced collision: a leaf-spine of 2 leaves and 2 spines at 100 Gb/s, two line-rate
//! flows from leaf 0 to leaf 1 whose source ports hash to the same spine. Without IOFD that
//! uplink carries 200 Gb/s of demand; with it, packets go to the other spine once the queue
//! reaches the port's Kmin (400 kB), overtake the queued ones, and the last hop must put
//! them back in order. A receiver that sees every packet at its expected byte sends no
//! NACK and discards nothing, so `nacks == 0` and `payload_bytes_discarded == 0` in a
//! lossless run say that every receiver saw each QP's PSNs strictly increasing.

use rdmalab::cc::CcConfig;
use rdmalab::fabric::IofdConfig;
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::routing::{NeighborOrder, Routes};
use rdmalab::topology::{builders, Topology};
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const G100: Rate = Rate::gbps(100);
const SIZE: u64 = 3_000_000;

fn leaf_spine() -> Topology {
    builders::leaf_spine(2, 2, 2, G100, G100, Time::from_us(1)).expect("valid")
}

/// Two flows 0→2 and 1→3 whose ECMP choice at leaf 0 (node 4) is the same uplink.
fn colliding_flows(topo: &Topology) -> Vec<FlowSpec> {
    let routes = Routes::compute(topo, NeighborOrder::Ascending).expect("routes");
    let ip = |h: u32| topo.nodes[h as usize].ips[0];
    let pick = |src: u32, dst: u32, sport: u16| {
        routes.ecmp_port(NodeId(4), NodeId(dst), ip(src), ip(dst), sport, 100).expect("route")
    };
    let a = pick(0, 2, 1000);
    let sport = (1001..2000).find(|&s| pick(1, 3, s) == a).expect("a colliding source port");
    let mut f = vec![FlowSpec::new(NodeId(0), NodeId(2), SIZE, Time::ZERO), {
        FlowSpec::new(NodeId(1), NodeId(3), SIZE, Time::ZERO)
    }];
    f[0].sport = Some(1000);
    f[1].sport = Some(sport);
    f
}

fn run(topo: Topology, flows: Vec<FlowSpec>, c: SimConfig) -> Results {
    let n = flows.len();
    let mut sim = Simulation::new(topo, flows, c).expect("valid scenario");
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().expect("bytes conserved");
    assert_eq!(r.records.len(), n);
    assert_eq!(r.reseq_held, 0, "re-sequencing buffers empty at the end");
    r
}

fn with_iofd(i: IofdConfig) -> SimConfig {
    SimConfig { iofd: Some(i), ..SimConfig::default() }
}

#[test]
fn collision_is_deflected_and_delivered_in_order() {
    let t = leaf_spine();
    let flows = colliding_flows(&t);
    let off = run(leaf_spine(), flows.clone(), SimConfig::default());
    let on = run(t, flows, with_iofd(IofdConfig::default()));
    assert_eq!(off.mechanism_count("deflections"), 0);
    assert!(on.mechanism_count("deflections") > 0, "no deflection on a collided uplink");
    assert!(on.mechanism_count("resequenced") > 0, "deflected packets overtook, the last hop re-sequenced");
    assert_eq!(on.mechanism_count("reseq_escapes"), 0, "1 MiB holds a 400 kB overtake");
    assert_eq!(on.counters.nacks, 0);
    assert_eq!(on.counters.payload_bytes_discarded, 0, "a receiver saw a PSN out of order");
    let fct = |r: &Results| r.records.iter().map(|f| f.fct).max().unwrap();
    assert!(fct(&on) < fct(&off), "deflection did not shorten the collided flows");
}

#[test]
fn without_resequencing_the_receiver_sees_reordering() {
    let t = leaf_spine();
    let flows = colliding_flows(&t);
    let r = run(t, flows, with_iofd(IofdConfig { resequence: false, ..IofdConfig::default() }));
    assert!(r.mechanism_count("deflections") > 0);
    assert!(r.counters.nacks > 0 && r.counters.payload_bytes_discarded > 0, "no reordering seen");
}

#[test]
fn no_deflection_beyond_the_limit() {
    let t = leaf_spine();
    let flows = colliding_flows(&t);
    let r = run(t, flows, with_iofd(IofdConfig { max_deflections: 0, ..IofdConfig::default() }));
    assert_eq!(r.mechanism_count("deflections"), 0);
    // Only leaf 0 has an alternative on these paths: at most one deflection per packet.
    let t = leaf_spine();
    let flows = colliding_flows(&t);
    let r = run(t, flows, with_iofd(IofdConfig::default()));
    assert!(r.mechanism_count("deflections") <= r.counters.data_packets_sent);
}

#[test]
fn a_full_resequencing_buffer_lets_packets_through() {
    let t = leaf_spine();
    let flows = colliding_flows(&t);
    let r = run(t, flows, with_iofd(IofdConfig { resequence_bytes: 10_000, ..IofdConfig::default() }));
    assert!(r.mechanism_count("reseq_escapes") > 0);
    assert!(r.counters.nacks > 0, "escaped packets arrive out of order and go-back-N repairs them");
}

#[test]
fn a_star_is_identical_with_iofd_on() {
    let flows = || (1..=8).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 200_000, Time::ZERO)).collect::<Vec<_>>();
    let star = || builders::star(9, G100, Time::from_us(1)).expect("valid");
    let c = SimConfig { cc: CcConfig::from_name("dcqcn").unwrap(), ..SimConfig::default() };
    let off = run(star(), flows(), c.clone());
    let on = run(star(), flows(), SimConfig { iofd: Some(IofdConfig::default()), ..c });
    let key = |r: &Results| r.records.iter().map(|f| (f.flow, f.fct)).collect::<Vec<_>>();
    assert_eq!(key(&off), key(&on));
    assert_eq!(off.counters, on.counters);
    assert_eq!(off.pfc_events, on.pfc_events);
}

#[test]
fn iofd_runs_are_deterministic() {
    let go = || {
        let t = leaf_spine();
        let flows = colliding_flows(&t);
        let c = SimConfig { cc: CcConfig::from_name("dcqcn").unwrap(), ..with_iofd(IofdConfig::default()) };
        run(t, flows, c)
    };
    let (a, b) = (go(), go());
    assert_eq!(
        a.records.iter().map(|f| f.fct).collect::<Vec<_>>(),
        b.records.iter().map(|f| f.fct).collect::<Vec<_>>()
    );
    assert_eq!(a.counters, b.counters);
    assert_eq!(a.pfc_events, b.pfc_events);
}

/// Non-minimal deflection on a k=4 fat tree under an 8→1 incast plus cross traffic: every
/// flow completes (no deadlock with the escape class), in order, bytes conserved. A 50 kB
/// threshold deflects nearly every packet of the 4 MB incast over paths whose delays differ
/// by PFC-paused queues; the last hop then holds more than the default 1 MiB (escapes and
/// go-back-N follow, which `a_full_resequencing_buffer_lets_packets_through` covers), so
/// this run gives it 8 MiB.
#[test]
fn nonminimal_deflection_completes_in_order() {
    let topo = || builders::fat_tree(4, G100, G100, Time::from_us(1)).expect("valid");
    let mut flows: Vec<FlowSpec> = (8..16).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 500_000, Time::ZERO)).collect();
    flows.extend((4..8).map(|s| FlowSpec::new(NodeId(s), NodeId(s - 4 + 1), 1_000_000, Time::ZERO)));
    let i = IofdConfig { nonminimal: true, threshold: 50_000, resequence_bytes: 8 << 20, ..IofdConfig::default() };
    let r = run(topo(), flows, with_iofd(i));
    assert!(r.mechanism_count("deflections") > 0);
    assert_eq!(r.mechanism_count("reseq_escapes"), 0);
    assert_eq!(r.counters.nacks, 0);
    assert_eq!(r.counters.payload_bytes_discarded, 0);
}

/// The reported case: `cc = "blitz"`, threshold 5000 B, a 0.5 MiB buffer and a 12 → 1
/// incast on a k = 4 fat tree (flows of 200 kB: the quick size), here with cross traffic
/// from pod 1 to the receiver's neighbours. A lossless fabric must drop nothing, with IOFD
/// as without. Before the fix the last hop dropped 52 packets (minimal paths): a filled gap
/// released a burst of held packets into an ingress whose PFC had never seen them, past its
/// headroom; with non-minimal paths 789 went, mostly escaped packets: they were queued
/// upstream in their own class, so the PAUSE of the escape class did not hold them
/// (docs/blitz.md, "Lossless").
fn small_buffer_incast(iofd: Option<IofdConfig>) -> Results {
    let topo = builders::fat_tree(4, G100, G100, Time::from_us(1)).expect("valid");
    let mut flows: Vec<FlowSpec> = (4..16).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 200_000, Time::ZERO)).collect();
    flows.extend((4..8).map(|s| FlowSpec::new(NodeId(s), NodeId(s - 4 + 1), 200_000, Time::ZERO)));
    let c =
        SimConfig { cc: CcConfig::from_name("blitz").unwrap(), buffer_bytes: 512 * 1024, iofd, ..SimConfig::default() };
    run(topo, flows, c)
}

#[test]
fn small_buffer_incast_drops_nothing() {
    let off = small_buffer_incast(None);
    assert_eq!((off.counters.drops, off.mechanism_count("deflections")), (0, 0));
    for nonminimal in [false, true] {
        let on = small_buffer_incast(Some(IofdConfig { threshold: 5000, nonminimal, ..IofdConfig::default() }));
        let c = &on.counters;
        assert!(on.mechanism_count("deflections") > 0, "the case must deflect");
        assert!(on.mechanism_count("resequenced") > 0, "no gap filled: the case does not release bursts");
        assert_eq!(c.drops, 0, "a lossless fabric dropped deflected or released packets (nonminimal {nonminimal})");
        assert_eq!(c.payload_bytes_sent, c.payload_bytes_delivered);
        assert_eq!((c.nacks, on.mechanism_count("reseq_escapes")), (0, 0), "delivered in order");
    }
}
