//! DCQCN's timer shortcuts (`sim::mech::dcqcn_timers`: parked alpha timers
//! and decrease checks, lazy alpha ticks in the partition-independent order) change no
//! result, only the events a run takes. Each run here is made with them and without
//! (`SimConfig::dcqcn_shortcuts`), in the reference's order and at 1 and 2 threads, and the
//! whole of what it returns (flow records, PFC events, port counters, rate samples, every
//! counter but `events`) compared.

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::StopReason;
use rdmalab::Time;

/// Marking low enough for CNPs before PFC pauses (the rate's defaults mark none here).
const ECN: &str = "ecn = true\necn_kmin = 10000\necn_kmax = 40000";

/// Everything a run returns but its event count, and that count.
fn outcome(mut s: Scenario, threads: Option<u32>, shortcuts: bool) -> (String, u64) {
    s.config.threads = threads;
    s.config.dcqcn_shortcuts = shortcuts;
    s.config.rate_sample_interval = Some(Time::from_us(2));
    let mut run = Runner::new(s).expect("builds");
    assert_eq!(run.run_to_end(), StopReason::Finished);
    let mut r = run.results().expect("bytes conserved");
    let events = std::mem::take(&mut r.counters.events);
    (format!("{r:#?}"), events)
}

fn same_with_and_without(name: &str, s: &Scenario) {
    for threads in [None, Some(1), Some(2)] {
        let (with, fewer) = outcome(s.clone(), threads, true);
        let (without, all) = outcome(s.clone(), threads, false);
        assert!(with == without, "{name}, threads {threads:?}: the shortcuts changed a result");
        assert!(fewer <= all, "{name}, threads {threads:?}: {fewer} events with the shortcuts, {all} without");
        if threads.is_some() {
            assert!(fewer < all, "{name}, threads {threads:?}: lazy alpha ticks should save events");
        }
    }
}

#[test]
fn lossless_dcqcn_is_the_same_without_the_shortcuts() {
    // Poisson WebSearch at 60 % and a 12-to-1 incast: CNPs (16,333 marks), cuts, PFC
    // pauses, idle QPs.
    same_with_and_without("lossless", &crate::parallel::scenario("dcqcn", &format!("buffer_mb = 0.5\n{ECN}"), 1));
}

#[test]
fn lossy_dcqcn_is_the_same_without_the_shortcuts() {
    // Drops and retransmission timeouts: a drop, too, may leave a group quiet.
    // 41,406 drops.
    let fabric = format!("lossless = false\nbuffer_mb = 0.5\n{ECN}");
    same_with_and_without("lossy", &crate::parallel::scenario("dcqcn", &fabric, 1));
}

#[test]
fn a_deadlocked_ring_under_dcqcn_is_the_same_without_the_shortcuts() {
    // The ring of `deadlock.rs` under DCQCN without retransmission: once it is stuck, the
    // senders' DCQCN timers are all that is left to run (with the shortcuts, in the origin
    // order, none of them is an event, and a decrease check becomes one each time the
    // queue empties). The watch finds the deadlock at the first event past its check time,
    // and a run told to go on ends at its last event before the stop time: both must see
    // the times of the timers the shortcuts leave out (`sim::mech::dcqcn_grids`).
    use rdmalab::cc::{CcConfig, DcqcnParams};
    use rdmalab::fabric::ecn::{EcnConfig, EcnParams};
    use rdmalab::sim::{OnDeadlock, SimConfig};
    // Marks from the first queue on, so that CNPs reach the senders before the ring locks.
    let marks = EcnParams { kmin: 1_000, kmax: 10_000, pmax: 1.0 };
    let run = |threads: Option<u32>, shortcuts: bool, on_deadlock: OnDeadlock| {
        let cfg = SimConfig {
            buffer_bytes: 256 * 1024,
            cc: CcConfig::Dcqcn(DcqcnParams::default()),
            ecn: Some(EcnConfig { by_rate: vec![(rdmalab::Rate::gbps(100), marks)], ..Default::default() }),
            rto: None,
            on_deadlock,
            stop_time: Time::from_us(3_333),
            threads,
            dcqcn_shortcuts: shortcuts,
            ..SimConfig::default()
        };
        let s = Scenario::new(crate::deadlock::ring(5, true), crate::deadlock::two_ahead(5, 10_000_000), cfg);
        let mut run = Runner::new(s).expect("builds");
        let reason = run.run_to_end();
        let mut r = run.snapshot();
        assert!(r.counters.cnps_ecn > 100, "CNPs before the ring locks: {}", r.counters.cnps_ecn);
        let events = std::mem::take(&mut r.counters.events);
        (reason, format!("{r:#?}"), events)
    };
    for (on_deadlock, stop) in
        [(OnDeadlock::Stop, StopReason::PfcDeadlock), (OnDeadlock::Continue, StopReason::StopTime)]
    {
        for threads in [None, Some(1), Some(2)] {
            let (reason, with, fewer) = run(threads, true, on_deadlock);
            let (reason_without, without, all) = run(threads, false, on_deadlock);
            assert_eq!((reason, reason_without), (stop, stop), "threads {threads:?}");
            assert!(with == without, "{on_deadlock:?}, threads {threads:?}: the shortcuts changed a result");
            assert!(
                fewer <= all,
                "{on_deadlock:?}, threads {threads:?}: {fewer} events with the shortcuts, {all} without"
            );
            if threads.is_some() {
                assert!(fewer * 2 < all, "{on_deadlock:?}, threads {threads:?}: {fewer} events, {all} without");
            }
        }
    }
}
