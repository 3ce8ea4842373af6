//! Every output of a run is the same for 1, 2 and 4 threads, not only the FCT
//! and PFC files (`parallel.rs`). Each case compares the whole `Results` (every table the
//! CLI writes comes from it: flows, ports, pfc, queues, rates, links, classes, messages,
//! apps, batches, DRUM rows, the deadlock, the counters, the stop reason and end time),
//! less `events`, documented to differ (each partition has its own flow-admission events),
//! and `qps_peak`, compared on its own (`same_peak`: the partitions' changes merged in the
//! run's order, `sim::parallel::peak`).
//!
//! The three cases the reliability pass found: the class table counted one partition's
//! switches only; a DRUM run with applications only ended `finished` at 0 us with 2 threads
//! (`stop_time` at 400 us with one); a stalled run was stopped at 100 ms with 2 threads and
//! 200 ms with one.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{work_map, Runner};
use rdmalab::sim::{Results, StopReason};

fn build(toml: &str, threads: u32) -> Scenario {
    let mut s = Scenario::from_toml(toml, Path::new("outputs.toml")).unwrap_or_else(|e| panic!("{e}"));
    s.config.threads = Some(threads);
    s
}

/// How a run stopped and everything it measured, as text (`events`, which differs between
/// thread counts, and `qps_peak`, compared on its own, zeroed).
pub(crate) fn everything(s: Scenario) -> (StopReason, Results, String) {
    let mut run = Runner::new(s).expect("builds");
    let stop = run.run_to_end();
    let mut r = if stop == StopReason::Stalled { run.snapshot() } else { run.results().expect("conserved") };
    let kept = r.clone();
    (r.counters.events, r.counters.qps_peak) = (0, 0);
    (stop, kept, format!("{stop:?}\n{r:#?}"))
}

/// Runs `toml` with 1, 2 and 4 threads; asserts the outputs are equal and that the 2- and
/// 4-partition cuts really cut (more than one partition); returns the one-thread run.
pub(crate) fn same_for_1_2_4_threads(what: &str, toml: &str) -> (StopReason, Results) {
    let one = everything(build(toml, 1));
    for threads in [2, 4] {
        let s = build(toml, threads);
        assert_eq!(work_map(&s, threads).1, threads, "{what}: the map should cut");
        let many = everything(s);
        same_peak(what, threads, &one.1, &many.1);
        if one.2 != many.2 {
            let line = one.2.lines().zip(many.2.lines()).position(|(a, b)| a != b).unwrap_or(0);
            let at = |t: &str| t.lines().skip(line.saturating_sub(8)).take(16).collect::<Vec<_>>().join("\n");
            panic!(
                "{what}: outputs differ with {threads} threads at line {line}:\n{}\n----\n{}",
                at(&one.2),
                at(&many.2)
            );
        }
    }
    (one.0, one.1)
}

/// A parallel run's `qps_peak` is the one-thread peak: every QP is released at the event
/// one thread releases it (`sim::parallel::peak`).
pub(crate) fn same_peak(what: &str, threads: u32, one: &Results, many: &Results) {
    let (a, b) = (one.counters.qps_peak, many.counters.qps_peak);
    assert_eq!(b, a, "{what}: qps_peak {b} with {threads} threads, {a} with one");
}

const FAT_TREE: &str = "seed = 7\n[topology]\nkind = \"fat_tree\"\nk = 4\n";

#[test]
fn the_class_table_counts_every_partition() {
    // Two classes (strict storage, DWRR bulk) under WebSearch and an incast across pods:
    // ECN marks, pauses and bytes at switches of every partition.
    let toml = format!(
        "{FAT_TREE}[[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"200us\"\npg = 3\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [4, 8, 12, 13]\nreceiver = 0\nsize = 300000\npg = 1\n\
         [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 1\n\
         [[fabric.classes]]\npg = 1\nscheduler = \"strict\"\n\
         [[fabric.classes]]\npg = 3\nweight = 1\necn_kmin = 20000\necn_kmax = 100000\n"
    );
    let (stop, r) = same_for_1_2_4_threads("classes", &toml);
    assert_eq!(stop, StopReason::Finished);
    let marks: u64 = r.classes.iter().map(|c| c.counters.ecn_marks).sum();
    assert!(marks > 0 && marks == r.counters.ecn_marks, "class marks {marks}, run {}", r.counters.ecn_marks);
    let tx: u64 = r.classes.iter().map(|c| c.counters.tx_packets).sum();
    assert!(r.classes[1].counters.tx_packets > 0 && r.classes[3].counters.tx_packets > 0 && tx > 0);
}

#[test]
fn a_drum_run_of_applications_only_ends_at_its_stop_time() {
    // No flows: the run is the applications' closed loops, which never finish, so it ends at
    // the stop time, with DRUM's control period running on hosts of every partition.
    let toml = format!(
        "stop_time = \"400us\"\n{FAT_TREE}[host]\nmechanism = \"drum\"\n[drum]\nperiod = \"50us\"\ncontrol = \"local\"\n\
         [[app]]\nhost = 0\ndst = 15\ncount = 2\nsize = 1024\nwr_num = [1, 8]\nthink = \"1us\"\n\
         [[app]]\nhost = 9\ndst = 1\nsize = 4096\nwr_num = 4\n"
    );
    let (stop, r) = same_for_1_2_4_threads("drum apps only", &toml);
    assert_eq!(stop, StopReason::StopTime);
    assert_eq!(r.end_time, rdmalab::Time::from_us(400));
    assert!(!r.drum_rows.is_empty() && r.wqes_processed > 100, "{} rows", r.drum_rows.len());
}

#[test]
fn a_stalled_run_stops_when_one_simulation_would() {
    // Lossy without retransmission: the incast's drops are never repaired, DCQCN's timers
    // keep re-arming. Link samples make the end time visible in a table too.
    let toml = format!(
        "{FAT_TREE}[[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 200000\n\
         [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.2\nlossless = false\nrto = \"none\"\nlink_sample_interval = \"10ms\"\n"
    );
    let (stop, r) = same_for_1_2_4_threads("stalled", &toml);
    assert_eq!(stop, StopReason::Stalled);
    assert!(r.counters.drops > 0 && r.records.len() < 8);
    assert!(r.stall_cause.as_deref().is_some_and(|c| c.contains("unfinished")), "{:?}", r.stall_cause);
}

#[test]
fn a_run_that_runs_out_of_events_stalls_as_one_simulation_does() {
    // Lossy without retransmission or congestion control: once the incast's drops are lost,
    // nothing is left to run. The cause names the time, the drops and the first stuck QP.
    let toml = format!(
        "{FAT_TREE}[[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 200000\n\
         [fabric]\ncc = \"none\"\nbuffer_mb = 0.2\nlossless = false\nrto = \"none\"\n"
    );
    let (stop, r) = same_for_1_2_4_threads("idle", &toml);
    assert_eq!(stop, StopReason::Stalled);
    let cause = r.stall_cause.unwrap_or_default();
    assert!(cause.starts_with("nothing left to simulate at") && cause.contains("first stuck QP"), "{cause}");
}

#[test]
fn receive_queues_are_each_responders_at_any_thread_count() {
    // Three SENDs from hosts of three pods to host 0, each on its own connection's receive
    // queue of one WQE: none is refused, whichever partition its requester is in.
    let toml = format!(
        "{FAT_TREE}[rnic]\nrecv_queue_depth = 1\nmin_rnr_timer = 1\n\
         [[traffic]]\nkind = \"flows\"\nverb = \"send\"\nflows = [{{ src = 5, dst = 0, size = 20000 }}, \
         {{ src = 9, dst = 0, size = 20000 }}, {{ src = 13, dst = 0, size = 20000 }}]\n"
    );
    let (stop, r) = same_for_1_2_4_threads("rnr", &toml);
    assert_eq!(stop, StopReason::Finished);
    assert_eq!(r.records.len(), 3);
    assert_eq!(r.mechanism_count("rnr_naks"), 0);
}
