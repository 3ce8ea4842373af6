//! A switch port's next dequeue taken without a `TxDone` event
//! (`sim::mech::deferred_dequeues`) changes no result, only the events a run takes. Each run
//! here is made in the origin order on one thread with it and without
//! (`SimConfig::deferred_dequeues`), and the whole of what it returns (flow records, PFC
//! events, port counters, queue and rate samples, the stop reason and end time, every
//! counter but `events`) compared. What each case reaches: PFC RESUMEs sent at a dequeue,
//! INT stamped at a dequeue, drops, samplers and the queue monitor that read every switch, a
//! link failing under queued packets, the watch finding a deadlock, a run paused and
//! resumed in slices, and a stop time that cuts a queue's drain.

use rdmalab::config::{LinkEvent, QlenMonitorConfig};
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::{RunLimit, StopReason};
use rdmalab::Time;

/// Marking low enough for CNPs before PFC pauses (the rate's defaults mark none here).
const ECN: &str = "ecn = true\necn_kmin = 10000\necn_kmax = 40000";

/// Everything a run returns but its event count, and that count; run to the end, or in
/// slices of `slice` when given.
fn outcome(mut s: Scenario, deferred: bool, slice: Option<Time>) -> (String, u64) {
    s.config.threads = Some(1);
    s.config.deferred_dequeues = deferred;
    s.config.rate_sample_interval = Some(Time::from_us(2));
    s.config.queue_sample_interval = Some(Time::from_us(3));
    let mut run = Runner::new(s).expect("builds");
    let stop = match slice {
        None => run.run_to_end(),
        Some(step) => {
            let mut until = step;
            loop {
                let stop = run.run(RunLimit { until, max_events: u64::MAX });
                if stop != StopReason::Paused {
                    break stop;
                }
                until += step;
            }
        }
    };
    let mut r = run.snapshot();
    let events = std::mem::take(&mut r.counters.events);
    (format!("{stop:?} {r:#?}"), events)
}

/// The run is the same with and without, and takes fewer events with.
fn same_with_and_without(name: &str, s: &Scenario, slice: Option<Time>) {
    let (with, fewer) = outcome(s.clone(), true, slice);
    let (without, all) = outcome(s.clone(), false, slice);
    assert!(with == without, "{name}: deferring switch dequeues changed a result");
    assert!(fewer < all, "{name}: {fewer} events deferring switch dequeues, {all} without");
}

fn fat_tree(cc: &str, fabric: &str) -> Scenario {
    crate::parallel::scenario(cc, fabric, 1)
}

#[test]
fn lossless_dcqcn_with_pauses_is_the_same() {
    // WebSearch at 60 % and a 12-to-1 incast: PFC pauses, whose RESUMEs leave at dequeues.
    let s = fat_tree("dcqcn", &format!("buffer_mb = 0.5\n{ECN}"));
    let (summary, _) = outcome(s.clone(), true, None);
    assert!(summary.contains("pauses: ") && !summary.contains("pauses: 0,"), "the incast pauses");
    same_with_and_without("lossless dcqcn", &s, None);
}

#[test]
fn lossy_hpcc_is_the_same() {
    // INT stamped at each dequeue (its time and queue), and drops.
    let s = fat_tree("hpcc", "lossless = false\nbuffer_mb = 0.5");
    same_with_and_without("lossy hpcc", &s, None);
}

#[test]
fn a_run_in_slices_with_the_queue_monitor_is_the_same() {
    // Paused every 37 µs (a dequeue may wait past a slice's end), and the reference's
    // queue monitor, which reads every switch port.
    let mut s = fat_tree("dcqcn", &format!("buffer_mb = 0.5\n{ECN}"));
    s.config.qlen_monitor = Some(QlenMonitorConfig { start: Time::from_us(50), end: Time::from_us(400) });
    same_with_and_without("slices", &s, Some(Time::from_us(37)));
}

#[test]
fn a_stop_time_in_a_drain_is_the_same() {
    let mut s = fat_tree("dcqcn", &format!("buffer_mb = 0.5\n{ECN}"));
    s.config.stop_time = Time::from_us(180);
    let (summary, _) = outcome(s.clone(), true, None);
    assert!(summary.starts_with("StopTime"), "the run is cut: {}", &summary[..40]);
    same_with_and_without("stop time", &s, None);
}

#[test]
fn a_link_failing_under_queued_packets_is_the_same() {
    // The incast's receiver's edge switch loses an uplink during the incast, with that
    // link's queues full, and has it repaired later.
    let mut s = fat_tree("dcqcn", &format!("buffer_mb = 0.5\n{ECN}"));
    let topo = &s.topology;
    let edge =
        topo.links.iter().find(|l| l.a == rdmalab::NodeId(0) || l.b == rdmalab::NodeId(0)).expect("host 0's link");
    let edge = if edge.a == rdmalab::NodeId(0) { edge.b } else { edge.a };
    let up = topo.links.iter().find(|l| (l.a == edge || l.b == edge) && !topo.is_host(l.a) && !topo.is_host(l.b));
    let up = up.expect("an uplink");
    let (a, b) = (up.a, up.b);
    s.config.link_events = vec![
        LinkEvent { at: Time::from_us(150), a, b, up: false },
        LinkEvent { at: Time::from_us(300), a, b, up: true },
    ];
    same_with_and_without("link failure", &s, None);
}

#[test]
fn a_deadlocked_ring_is_the_same() {
    // The watch finds the deadlock (stop reason and time), or the run goes on to its stop
    // time with the ring stuck.
    use rdmalab::sim::{OnDeadlock, SimConfig};
    for on_deadlock in [OnDeadlock::Stop, OnDeadlock::Continue] {
        let cfg = SimConfig {
            buffer_bytes: 256 * 1024,
            rto: None,
            on_deadlock,
            stop_time: Time::from_us(3_333),
            ..SimConfig::default()
        };
        let s = Scenario::new(crate::deadlock::ring(5, true), crate::deadlock::two_ahead(5, 10_000_000), cfg);
        same_with_and_without(&format!("deadlocked ring, {on_deadlock:?}"), &s, None);
    }
}
