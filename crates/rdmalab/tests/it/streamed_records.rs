//! Completed flows' records are written out past `SimConfig::records_in_memory`
//! (`stats::spill`) and read back in the run's order. The files and tables must be the ones
//! a run that keeps every record gives, for the sequential engine and for 1, 2 and 4 threads
//! (k-way merged across partitions), and a run holds no more records than the cap, however
//! many flows complete.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::{RunLimit, StopReason};
use rdmalab::stats::FlowRecord;
use rdmalab::Time;

/// A k = 4 fat tree under FB Hadoop at 60 % with DCQCN and a small buffer and low ECN thresholds, so that the
/// receivers count CNPs that the records must carry back. `threads`: `None` = the sequential
/// engine (the reference's tie order).
fn scenario(threads: Option<u32>, in_memory: usize) -> Scenario {
    let toml = "seed = 11\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 0.6\nduration = \"300us\"\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 200000\n\
         [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.5\necn_kmin = 5000\necn_kmax = 20000\n";
    let mut s = Scenario::from_toml(toml, Path::new("streamed.toml")).expect("valid scenario");
    s.config.threads = threads;
    s.config.records_in_memory = in_memory;
    s
}

/// The FCT file and every record (receivers' counts joined), and how many were on disk.
fn outputs(s: Scenario) -> (String, Vec<FlowRecord>, u64) {
    let flows = s.flows.len();
    let mut run = Runner::new(s).expect("builds");
    assert_eq!(run.run_to_end(), StopReason::Finished);
    let r = run.results().expect("bytes conserved");
    assert_eq!(r.flows_completed(), flows);
    let mut fct = Vec::new();
    r.write_fct(&mut fct).unwrap();
    (String::from_utf8(fct).unwrap(), r.all_records().unwrap(), r.spilled.len())
}

#[test]
fn written_out_records_read_back_as_the_held_ones_for_any_engine_and_thread_count() {
    for threads in [None, Some(1), Some(2), Some(4)] {
        let held = outputs(scenario(threads, usize::MAX));
        assert_eq!(held.2, 0, "{threads:?}: nothing is written out without a cap");
        assert!(held.1.iter().any(|r| r.rx.cnps_ecn > 0), "the receivers' counts must be exercised");
        let streamed = outputs(scenario(threads, 7));
        assert!(streamed.2 as usize > held.1.len() / 2, "{threads:?}: most records on disk ({})", streamed.2);
        assert!(held.0 == streamed.0, "{threads:?}: the FCT file differs when records are written out");
        assert!(held.1 == streamed.1, "{threads:?}: the flow table differs when records are written out");
    }
    // And the thread count still changes nothing, with records on disk.
    let one = outputs(scenario(Some(1), 5));
    for threads in [2, 4] {
        assert!(one.0 == outputs(scenario(Some(threads), 5)).0, "FCT file differs with {threads} threads");
    }
}

#[test]
fn the_records_held_stay_under_the_cap_however_many_flows_complete() {
    let cap = 8;
    let mut sim = scenario(None, cap).simulation().unwrap();
    let (mut most, mut seen) = (0, 0);
    loop {
        let reason = sim.run(RunLimit { until: Time::MAX, max_events: 2_000 });
        most = most.max(sim.records_held());
        seen += 1;
        if reason != StopReason::Paused {
            assert_eq!(reason, StopReason::Finished);
            break;
        }
    }
    let r = sim.results().unwrap();
    assert!(seen > 20 && r.flows_completed() > 20 * cap, "{seen} slices, {} flows", r.flows_completed());
    assert!(most < cap, "held {most} records with a cap of {cap}");
    assert_eq!(r.records.len() as u64 + r.spilled.len(), r.flows_completed() as u64);
}
