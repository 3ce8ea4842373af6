//! `qps_peak` (most QPs alive at once) of a parallel run is the one-thread run's, not the
//! sum of the partitions' peaks: the partitions' openings and releases merged in the run's
//! event order (`sim::parallel::peak`).

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::{ParallelRun, Runner};
use rdmalab::sim::StopReason;

/// A k = 4 fat tree (16 hosts in 4 pods, links of `delay`) under Poisson FB_Hadoop traffic
/// at 50 % load: a few hundred flows, mostly short, that start and end at different times
/// on hosts of every partition. The windows are one link delay long: with long links, many
/// QPs open and close in one window, and only the merge's order puts them right.
/// `fabric` adds fabric settings, `traffic` settings of the traffic.
fn scenario(delay: &str, fabric: &str, traffic: &str, threads: u32) -> Scenario {
    let toml = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\ndelay = \"{delay}\"\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 0.5\nduration = \"1ms\"\n{traffic}\n\
         [fabric]\ncc = \"dcqcn\"\n{fabric}\n"
    );
    let mut s = Scenario::from_toml(&toml, Path::new("peak.toml")).expect("valid scenario");
    s.config.threads = Some(threads);
    s
}

#[test]
fn qps_peak_is_the_one_thread_peak_at_2_and_4_threads() {
    for delay in ["1us", "5us"] {
        let (one, many) = peaks(delay, "");
        for (threads, peak, _) in many {
            assert_eq!(peak, one, "{delay}, {threads} threads");
        }
    }
}

/// A data packet the receiver takes without a reply, and a packet lost at a switch of
/// another partition than its sender's, leave the network away from the sender's
/// partition: the run's count still releases such a QP at the event one thread does.
#[test]
fn qps_peak_is_the_one_thread_peak_with_coalesced_acks_unreliable_qps_and_drops() {
    let cases = [
        ("ack_interval = 2", ""),   // every other packet taken without an ACK
        ("", "transport = \"uc\""), // no ACK at all
        ("error_rate = 0.002", ""), // lost on links, at switches of every partition
        ("ack_interval = 3\nerror_rate = 0.002", ""),
    ];
    let mut wrong = Vec::new();
    for (fabric, traffic) in cases {
        let (one, many) = peaks_of("5us", fabric, traffic);
        for (threads, peak, _) in many {
            if peak != one {
                wrong.push(format!("{fabric} {traffic}, {threads} threads: {peak}, one thread {one}"));
            }
        }
    }
    assert!(wrong.is_empty(), "qps_peak differs: {wrong:#?}");
}

/// The one-thread run's `qps_peak`, and per thread count (2, 4) the parallel run's and the
/// sum of its partitions' peaks.
fn peaks(delay: &str, fabric: &str) -> (u64, Vec<(u32, u64, u64)>) {
    peaks_of(delay, fabric, "")
}

/// `peaks` with `traffic` settings of the traffic.
fn peaks_of(delay: &str, fabric: &str, traffic: &str) -> (u64, Vec<(u32, u64, u64)>) {
    let scenario = |threads| scenario(delay, fabric, traffic, threads);
    let flows = scenario(1).flows.len();
    assert!(flows > 200, "{flows} flows: too few to churn");
    let mut one = Runner::new(scenario(1)).expect("builds");
    assert_eq!(one.run_to_end(), StopReason::Finished);
    let one = one.results().expect("conserved").counters;
    // The churn: QPs open and close, so the peak is well below the flows.
    assert_eq!(one.qps_opened, flows as u64);
    assert!(one.qps_peak > 1 && one.qps_peak * 2 < one.qps_opened, "peak {} of {flows}", one.qps_peak);
    let mut out = Vec::new();
    for threads in [2, 4] {
        let mut run = ParallelRun::new(scenario(threads), threads).expect("builds");
        assert_eq!(run.partitions(), threads as usize);
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let peaks = run.qps_peak_per_partition();
        let many = run.results().expect("conserved").counters;
        assert_eq!(many.qps_opened, one.qps_opened, "{delay}, {threads} threads");
        // The partitions reach their peaks at different times: their sum, what the merge
        // reported before, overstates the run's.
        let sum: u64 = peaks.iter().sum();
        assert!(sum > one.qps_peak, "{delay}, {threads} threads: sum {sum} of {peaks:?}, exact {}", one.qps_peak);
        eprintln!(
            "{delay} {fabric} {traffic}, {flows} flows, {threads} threads: one thread's peak {}, this run's {}, \
             partitions' peaks {peaks:?} (sum {sum})",
            one.qps_peak, many.qps_peak
        );
        out.push((threads, many.qps_peak, sum));
    }
    (one.qps_peak, out)
}
