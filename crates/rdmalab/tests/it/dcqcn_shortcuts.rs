//! Issue 45 §2: DCQCN's timer shortcuts (`sim::mech::dcqcn_timers`: parked alpha timers
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
