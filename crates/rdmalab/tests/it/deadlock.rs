//! PFC deadlock detection and the stall watchdog (`sim::watch`, docs/model/pfc.md#pfc-deadlocks-and-runs-that-cannot-progress).
//!
//! The deadlock is the textbook one: switches in a ring, one host on each, every host
//! sending to the host two switches further clockwise. Each ring link carries two flows
//! (twice its rate), every switch's ring ingress holds packets waiting for the next ring
//! link, and once every ring link is paused the buffer dependency closes on itself.
//! The same flows on the ring cut open (a line: routing can no longer go round) cannot
//! deadlock and must complete.

use rdmalab::multipath::{MpConfig, MpWr};
use rdmalab::sim::{OnDeadlock, Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::{builders, Topology};
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const SWITCHES: u32 = 5;
const D: Time = Time::from_ns(1000);

/// Hosts 0..n, switches n..2n; host i on switch n + i; switch i joined to switch i + 1,
/// and (when `closed`) the last to the first.
pub(crate) fn ring(n: u32, closed: bool) -> Topology {
    let switches: Vec<NodeId> = (n..2 * n).map(NodeId).collect();
    let mut t = Topology::new(2 * n as usize, &switches);
    for i in 0..n {
        t.add_link(NodeId(i), NodeId(n + i), Rate::gbps(100), D, 0.0).unwrap();
    }
    for i in 0..n {
        if closed || i + 1 < n {
            t.add_link(NodeId(n + i), NodeId(n + (i + 1) % n), Rate::gbps(100), D, 0.0).unwrap();
        }
    }
    t
}

pub(crate) fn two_ahead(n: u32, size: u64) -> Vec<FlowSpec> {
    (0..n).map(|i| FlowSpec::new(NodeId(i), NodeId((i + 2) % n), size, Time::ZERO)).collect()
}

/// No congestion control, a small buffer: the ring deadlocks within microseconds.
fn small_buffer() -> SimConfig {
    SimConfig { buffer_bytes: 256 * 1024, ecn: None, ..SimConfig::default() }
}

fn run(topo: Topology, flows: Vec<FlowSpec>, cfg: SimConfig) -> (StopReason, Results) {
    let mut sim = Simulation::new(topo, flows, cfg).unwrap();
    let reason = sim.run_to_end();
    (reason, sim.snapshot())
}

#[test]
fn ring_deadlock_is_found_with_its_cycle() {
    let topo = ring(SWITCHES, true);
    let (reason, r) = run(topo.clone(), two_ahead(SWITCHES, 10_000_000), small_buffer());
    assert_eq!(reason, StopReason::PfcDeadlock);
    let d = r.deadlock.expect("the deadlock is reported");
    assert_eq!(r.deadlocks, 1);
    // Found within the timeout plus 1 ms of forming, and not before the timeout.
    let timeout = SimConfig::default().deadlock_timeout;
    assert!(d.detected >= d.formed + timeout, "{d:?}");
    assert!(d.detected <= d.formed + timeout + Time::from_ms(1), "{d:?}");
    assert_eq!(r.end_time, d.detected);
    // The cycle: every clockwise ring port, class 3, each waiting on the switch it feeds.
    assert_eq!(d.cycle.len(), SWITCHES as usize, "{:?}", d.cycle);
    for (k, hop) in d.cycle.iter().enumerate() {
        let port = &topo.ports[hop.port.idx()];
        let next = &d.cycle[(k + 1) % d.cycle.len()];
        assert!(!topo.is_host(hop.node), "{hop:?}");
        assert_eq!(port.node, hop.node);
        assert_eq!(port.ifindex, hop.ifindex);
        assert_eq!(hop.priority, 3);
        assert_eq!(port.peer_node, next.node, "hop {k} does not wait on the next hop");
        assert_eq!((port.peer_node.0 - SWITCHES + SWITCHES - (hop.node.0 - SWITCHES)) % SWITCHES, 1, "clockwise");
    }
    assert!(r.records.len() < SWITCHES as usize, "a deadlocked ring cannot finish every flow");
}

#[test]
fn without_retransmission_the_deadlock_is_found_when_the_queue_empties() {
    // No RTO: nothing is scheduled once the ring is stuck; the run ends right there,
    // named as a deadlock rather than an unexplained stall.
    let cfg = SimConfig { rto: None, ..small_buffer() };
    let (reason, r) = run(ring(SWITCHES, true), two_ahead(SWITCHES, 10_000_000), cfg);
    assert_eq!(reason, StopReason::PfcDeadlock);
    let d = r.deadlock.unwrap();
    assert_eq!(d.cycle.len(), SWITCHES as usize);
    assert!(d.detected <= d.formed + SimConfig::default().deadlock_timeout + Time::from_ms(1));
}

#[test]
fn continue_counts_the_deadlock_and_runs_to_the_stop_time() {
    let stop = Time::from_ms(5);
    let cfg = SimConfig { on_deadlock: OnDeadlock::Continue, stop_time: stop, ..small_buffer() };
    let (reason, r) = run(ring(SWITCHES, true), two_ahead(SWITCHES, 10_000_000), cfg);
    assert_eq!(reason, StopReason::StopTime);
    assert_eq!(r.deadlocks, 1, "one deadlock, counted once however often it is seen");
    assert!(r.deadlock.is_some());
}

#[test]
fn continue_without_a_stop_time_ends_as_stalled_not_spinning() {
    let cfg = SimConfig { on_deadlock: OnDeadlock::Continue, ..small_buffer() };
    let (reason, r) = run(ring(SWITCHES, true), two_ahead(SWITCHES, 10_000_000), cfg);
    assert_eq!(reason, StopReason::Stalled);
    assert_eq!(r.deadlocks, 1);
    let cause = r.stall_cause.expect("a stall names its cause");
    assert!(cause.contains("PFC deadlock"), "{cause}");
}

#[test]
fn the_ring_cut_open_routes_without_a_cycle_and_completes() {
    // Same hosts, same flows; without the closing link routing cannot go round, so the
    // buffer dependencies form no cycle. A short timeout makes every long pause a
    // candidate: only the missing cycle keeps it from being flagged.
    let cfg = SimConfig { deadlock_timeout: Time::from_us(20), ..small_buffer() };
    let (reason, r) = run(ring(SWITCHES, false), two_ahead(SWITCHES, 2_000_000), cfg);
    assert_eq!(reason, StopReason::Finished);
    assert_eq!(r.records.len(), SWITCHES as usize);
    assert_eq!(r.deadlocks, 0);
    assert!(r.counters.pauses > 0, "the line is congested too: PFC acts, and recovers");
}

#[test]
fn heavy_incast_across_a_leaf_spine_is_not_flagged() {
    // 15 senders on three leaves into one host, plus the receiver's leaf-mates sending
    // across the spines: pauses at every tier, many of them long, none in a cycle.
    let topo = builders::leaf_spine(4, 2, 4, Rate::gbps(100), Rate::gbps(100), D).unwrap();
    let mut flows: Vec<FlowSpec> =
        (1..16).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 1_000_000, Time::ZERO)).collect();
    flows.extend((1..4).map(|s| FlowSpec::new(NodeId(s), NodeId(4 + s), 1_000_000, Time::ZERO)));
    flows.sort_by_key(|f| f.start);
    let cfg = SimConfig { deadlock_timeout: Time::from_us(20), ..small_buffer() };
    let (reason, r) = run(topo, flows, cfg);
    assert_eq!(reason, StopReason::Finished);
    assert_eq!(r.records.len(), 18);
    assert_eq!(r.deadlocks, 0);
    assert!(r.counters.pauses > 100, "{} pauses", r.counters.pauses);
    let longest = r.ports.iter().map(|p| p.paused_ps).max().unwrap();
    assert!(Time(longest) > Time::from_us(20), "some port was paused past the timeout: {longest} ps");
}

#[test]
fn a_flow_that_can_never_arrive_stalls_instead_of_spinning() {
    // Every packet on host 1's link is corrupted: the RTO resends forever. The watchdog
    // ends the run with a cause instead.
    let mut topo = builders::star(2, Rate::gbps(100), D).unwrap();
    topo.links[0].error_rate = 1.0;
    let cfg = SimConfig { lossless: false, ..SimConfig::default() };
    let (reason, r) = run(topo, vec![FlowSpec::new(NodeId(0), NodeId(1), 10_000, Time::ZERO)], cfg);
    assert_eq!(reason, StopReason::Stalled);
    // The watchdog looks once per window: it ends the run one to two windows (here 100 ms
    // plus twice the link delays) after the last progress.
    assert!(r.end_time < Time::from_ms(250), "{}", r.end_time);
    let cause = r.stall_cause.unwrap();
    assert!(cause.contains("no payload byte delivered"), "{cause}");
}

#[test]
fn an_emptied_queue_with_work_left_names_the_stuck_qp() {
    // Without retransmission a dropped packet leaves its QP waiting for an ACK that never
    // comes: the queue empties and the cause names the QP and what holds it.
    let mut topo = builders::star(2, Rate::gbps(100), D).unwrap();
    topo.links[0].error_rate = 1.0;
    let cfg = SimConfig { lossless: false, rto: None, ..SimConfig::default() };
    let (reason, r) = run(topo, vec![FlowSpec::new(NodeId(0), NodeId(1), 10_000, Time::ZERO)], cfg);
    assert_eq!(reason, StopReason::Stalled);
    let cause = r.stall_cause.unwrap();
    assert!(cause.contains("nothing left to simulate") && cause.contains("first stuck QP: 0 (0->1)"), "{cause}");
    assert!(cause.contains("acked 0 of 10000 bytes"), "{cause}");
}

#[test]
fn an_ordinary_run_is_the_same_with_a_timeout_too_short_to_matter() {
    // The watch schedules nothing: the events and results of a run that never pauses
    // long are identical whatever the timeout.
    let go = |timeout| {
        let topo = builders::star(9, Rate::gbps(100), D).unwrap();
        let flows = (1..9).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 300_000, Time::ZERO)).collect();
        let cfg = SimConfig { deadlock_timeout: timeout, ..small_buffer() };
        run(topo, flows, cfg).1
    };
    let (a, b) = (go(Time::from_ms(1)), go(Time::from_ns(1)));
    assert!(a.counters.pauses > 0);
    assert_eq!(a.counters.events, b.counters.events);
    assert_eq!(a.end_time, b.end_time);
    assert_eq!(
        a.records.iter().map(|r| r.fct).collect::<Vec<_>>(),
        b.records.iter().map(|r| r.fct).collect::<Vec<_>>()
    );
    assert_eq!(b.deadlocks, 0);
}

#[test]
fn a_multipath_only_run_that_cannot_finish_stalls_too() {
    // No plain flow arms the watchdog: the posted message must.
    let mut topo = builders::star(2, Rate::gbps(100), D).unwrap();
    topo.links[0].error_rate = 1.0;
    let cfg = SimConfig { lossless: false, ..SimConfig::default() };
    let mut sim = Simulation::new(topo, vec![], cfg).unwrap();
    let conn = sim.mp_connect(NodeId(0), NodeId(1), &MpConfig::default()).unwrap();
    sim.mp_post_send(conn, MpWr::write(100_000), Time::from_us(5)).unwrap();
    sim.mp_disconnect(conn).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Stalled);
    let r = sim.snapshot();
    assert!(r.end_time < Time::from_ms(250), "{}", r.end_time);
    assert!(r.stall_cause.unwrap().contains("no payload byte delivered"));
}

#[test]
fn a_quiet_spell_before_a_later_multipath_message_is_not_a_stall() {
    // A flow finishes at once; a message is posted 400 ms later (four stall windows of
    // silence in between). Work is still to start, so the run waits for it and finishes.
    let topo = builders::star(2, Rate::gbps(100), D).unwrap();
    let flows = vec![FlowSpec::new(NodeId(0), NodeId(1), 10_000, Time::ZERO)];
    let mut sim = Simulation::new(topo, flows, SimConfig::default()).unwrap();
    let conn = sim.mp_connect(NodeId(0), NodeId(1), &MpConfig::default()).unwrap();
    sim.mp_post_send(conn, MpWr::write(100_000), Time::from_ms(400)).unwrap();
    sim.mp_disconnect(conn).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    assert_eq!(r.records.len(), 2);
    assert!(r.last_completion > Time::from_ms(400));
}
