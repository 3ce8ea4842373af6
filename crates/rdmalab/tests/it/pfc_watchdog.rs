//! The switches' PFC watchdog (`sim::mech::pfc_watchdog`, docs/model/pfc.md "PFC watchdog")
//! on the textbook PFC deadlock of `deadlock.rs`: five switches in a ring, each host sending
//! two switches clockwise, no congestion control, a small buffer. The last test runs it on the
//! parallel engine (`parallel.rs`'s ring, cut between every switch).

use rdmalab::config::sim_config::{PfcWatchdogAction, PfcWatchdogConfig};
use rdmalab::formats::{fct::write_fct, pfc::write_pfc};
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::Topology;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const N: u32 = 5;

fn ring() -> Topology {
    let switches: Vec<NodeId> = (N..2 * N).map(NodeId).collect();
    let mut t = Topology::new(2 * N as usize, &switches);
    for i in 0..N {
        t.add_link(NodeId(i), NodeId(N + i), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
    }
    for i in 0..N {
        t.add_link(NodeId(N + i), NodeId(N + (i + 1) % N), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
    }
    t
}

fn flows(size: u64) -> Vec<FlowSpec> {
    (0..N).map(|i| FlowSpec::new(NodeId(i), NodeId((i + 2) % N), size, Time::ZERO)).collect()
}

fn watchdog(action: PfcWatchdogAction, poll: Option<Time>) -> PfcWatchdogConfig {
    PfcWatchdogConfig {
        detection_time: Time::from_us(200),
        restoration_time: Time::from_us(400),
        poll_interval: poll,
        action,
    }
}

fn run(w: Option<PfcWatchdogConfig>, size: u64) -> (StopReason, Results) {
    let cfg = SimConfig {
        buffer_bytes: 256 * 1024,
        ecn: None,
        pfc_watchdog: w,
        stop_time: Time::from_ms(200),
        ..SimConfig::default()
    };
    let mut sim = Simulation::new(ring(), flows(size), cfg).unwrap();
    let reason = sim.run_to_end();
    (reason, sim.snapshot())
}

/// The storms' table as rows: (node, ifindex, paused_at, detected, restored ns, dropped).
fn storms(r: &Results) -> Vec<(u64, u64, Time, Time, f64, u64)> {
    let t = r.table("pfc_watchdog").expect("the watchdog's table");
    let u = |name: &str| t.column(name).and_then(|c| c.as_u64()).expect(name).to_vec();
    let restored = t.column("restored_ns").and_then(|c| c.as_f64()).expect("restored_ns").to_vec();
    let (node, ifindex, paused, detected, dropped) =
        (u("node"), u("ifindex"), u("paused_at_ps"), u("detected_ps"), u("dropped"));
    (0..t.rows()).map(|i| (node[i], ifindex[i], Time(paused[i]), Time(detected[i]), restored[i], dropped[i])).collect()
}

/// The time of the PAUSE that began each storm is one the core logged at that port.
fn paused_by_a_logged_pause(r: &Results, node: u64, ifindex: u64, at: Time) -> bool {
    r.pfc_events.iter().any(|e| e.pause && e.time == at && e.node.0 as u64 == node && e.ifindex as u64 == ifindex)
}

#[test]
fn a_storm_is_declared_detection_time_after_the_pause_that_began_it() {
    let w = watchdog(PfcWatchdogAction::Drop, None);
    let (_, r) = run(Some(w), 200_000);
    let rows = storms(&r);
    assert!(rows.len() >= N as usize, "every ring port storms at least once: {}", rows.len());
    for &(node, ifindex, paused, detected, restored, _) in &rows {
        assert!(paused_by_a_logged_pause(&r, node, ifindex, paused), "no PAUSE at {paused:?} on {node}/{ifindex}");
        assert_eq!(detected, paused + w.detection_time);
        // PFC honoured again only after `restoration_time` without a frame.
        assert!(restored * 1000.0 >= (detected + w.restoration_time).0 as f64, "{restored} ns");
    }
}

#[test]
fn polling_delays_each_detection_to_the_first_poll_past_its_deadline() {
    let poll = Time::from_us(150);
    let w = watchdog(PfcWatchdogAction::Drop, Some(poll));
    let (_, r) = run(Some(w), 200_000);
    let rows = storms(&r);
    assert!(!rows.is_empty());
    for &(_, _, paused, detected, _, _) in &rows {
        let deadline = paused + w.detection_time;
        assert_eq!(detected.0 % poll.0, 0, "{detected:?} is not a poll");
        assert!(detected >= deadline && detected.0 - deadline.0 < poll.0, "{paused:?} -> {detected:?}");
    }
}

#[test]
fn drop_breaks_the_deadlock_and_every_flow_completes_with_only_its_own_drops() {
    let (reason, _) = run(None, 200_000);
    assert_eq!(reason, StopReason::PfcDeadlock, "the ring deadlocks without a watchdog");
    let cfg = SimConfig {
        buffer_bytes: 256 * 1024,
        ecn: None,
        pfc_watchdog: Some(watchdog(PfcWatchdogAction::Drop, None)),
        ..SimConfig::default()
    };
    let mut sim = Simulation::new(ring(), flows(200_000), cfg).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().expect("bytes conserved and no drop but the watchdog's in lossless mode");
    assert_eq!(r.records.len(), N as usize);
    assert_eq!(r.deadlocks, 0);
    let dropped: u64 = storms(&r).iter().map(|s| s.5).sum();
    assert!(dropped > 0);
    assert_eq!(r.counters.drops, dropped, "every drop is the watchdog's");
    assert_eq!(r.deliberate_drops, dropped);
    assert_eq!(r.mechanism_count("pfcwd_drops"), dropped);
    assert_eq!(r.mechanism_count("pfcwd_storms"), storms(&r).len() as u64);
}

#[test]
fn alert_only_records_the_storms_and_the_deadlock_stands() {
    let (reason, plain) = run(None, 200_000);
    let (reason_alert, r) = run(Some(watchdog(PfcWatchdogAction::Alert, None)), 200_000);
    assert_eq!((reason, reason_alert), (StopReason::PfcDeadlock, StopReason::PfcDeadlock));
    // The same deadlock, formed at the same time (its detection may come sooner: the
    // watchdog's timers are events at which the detector looks).
    let (d, p) = (r.deadlock.as_ref().expect("found"), plain.deadlock.as_ref().expect("found"));
    assert_eq!((d.formed, d.cycle.len()), (p.formed, p.cycle.len()));
    assert_eq!(
        r.pfc_events.iter().filter(|e| e.time <= d.formed).count(),
        plain.pfc_events.iter().filter(|e| e.time <= d.formed).count()
    );
    let rows = storms(&r);
    assert_eq!(rows.len(), N as usize, "one storm per ring port");
    assert!(rows.iter().all(|s| s.4.is_nan() && s.5 == 0), "still paused, nothing dropped: {rows:?}");
    assert_eq!(r.counters.drops, 0);
}

#[test]
fn without_a_watchdog_nothing_is_reported() {
    let (_, r) = run(None, 200_000);
    assert!(r.table("pfc_watchdog").is_none());
    let c = &r.mechanism_counters;
    assert!(!c.always.iter().chain(&c.conditional).any(|(n, _)| n.starts_with("pfcwd_")));
}

#[test]
fn the_pfc_watchdog_breaks_the_ring_as_in_one_simulation() {
    // Each storm's state lives with its switch, its timers at that switch's node: the
    // storms, the drops, the FCTs and the PFC log are those of one simulation.
    let watchdog = |c: &mut SimConfig| {
        c.pfc_watchdog = Some(PfcWatchdogConfig {
            detection_time: Time::from_us(200),
            restoration_time: Time::from_us(400),
            poll_interval: None,
            action: PfcWatchdogAction::Drop,
        });
        c.stop_time = Time::from_ms(5);
    };
    let outcome = |threads: u32| {
        let mut run = super::parallel::ring_deadlock(threads, watchdog);
        let reason = run.run_to_end();
        let r = run.results().unwrap();
        let (mut fct, mut pfc) = (Vec::new(), Vec::new());
        write_fct(&mut fct, &r.records).unwrap();
        write_pfc(&mut pfc, &r.pfc_events).unwrap();
        (reason, r.table("pfc_watchdog").cloned(), r.counters.drops, r.deliberate_drops, fct, pfc)
    };
    let one = outcome(1);
    assert!(one.1.as_ref().is_some_and(|t| t.rows() >= 5), "storms in the ring");
    for threads in [2, 4] {
        assert_eq!(one, outcome(threads), "{threads} threads");
    }
}

#[test]
fn a_watchdog_with_nothing_to_watch_is_refused_by_its_full_field() {
    // From a scenario file: at the table's line.
    let toml = "[topology]\nkind = \"star\"\nhosts = 2\n[fabric]\nlossless = false\n\
                [fabric.pfc_watchdog]\ndetection_time = \"1ms\"\n";
    let e = crate::fixtures::input_error(toml);
    let want =
        format!("bad.toml:{}: field `fabric.pfc_watchdog`: PFC is off", crate::fixtures::line_of(toml, "[fabric.pfc"));
    assert!(e.starts_with(&want), "want {want}: {e}");
    // A configuration built in code names the full field too.
    let zero = PfcWatchdogConfig { restoration_time: Time::ZERO, ..watchdog(PfcWatchdogAction::Drop, None) };
    let cfg = SimConfig { pfc_watchdog: Some(zero), ..SimConfig::default() };
    let e = Simulation::new(ring(), flows(1000), cfg).expect_err("refused").to_string();
    assert_eq!(e, "scenario: fabric.pfc_watchdog.restoration_time: must be positive");
    let cfg = SimConfig {
        lossless: false,
        pfc_watchdog: Some(watchdog(PfcWatchdogAction::Drop, None)),
        ..SimConfig::default()
    };
    let e = Simulation::new(ring(), flows(1000), cfg).expect_err("refused").to_string();
    assert!(e.starts_with("scenario: fabric.pfc_watchdog: PFC is off"), "{e}");
    // A class table decides instead of `lossless`: every class lossy is refused the same way.
    let cfg = SimConfig {
        classes: Some(Box::new(rdmalab::fabric::classes::ClassTable::uniform(false))),
        pfc_watchdog: Some(watchdog(PfcWatchdogAction::Drop, None)),
        ..SimConfig::default()
    };
    let e = Simulation::new(ring(), flows(1000), cfg).expect_err("refused").to_string();
    assert!(e.starts_with("scenario: fabric.pfc_watchdog: PFC is off"), "{e}");
}
