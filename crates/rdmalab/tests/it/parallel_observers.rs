//! What a parallel run observes does not depend on the thread count either:
//! queue, rate and link samples, the packet trace and the queue-length monitor are the same
//! bytes with `--threads` 1, 2 and 4 on the small fat tree of `parallel.rs`, flows crossing
//! the cut. Besides, each table is checked against what it must be on its own: one row per
//! port or live flow per sample, the chain ending at its first event at or after the last
//! completion (what the sequential engine does), the monitor's counts summing to its samples.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use rdmalab::config::QlenMonitorConfig;
use rdmalab::formats::fct::write_fct;
use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::qlen_monitor::INTERVAL;
use rdmalab::sim::{Results, StopReason};
use rdmalab::Time;

/// The fat tree of `parallel.rs` (16 hosts, 4 pods; WebSearch at 60 % and a 12-to-1 incast,
/// PFC pauses with a small buffer), DCQCN, `fabric` added to `[fabric]` and `top` at the top.
fn scenario(top: &str, fabric: &str, threads: Option<u32>) -> Scenario {
    let toml = format!(
        "seed = 5\n{top}\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.6\nduration = \"300us\"\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\nreceiver = 0\n\
         size = 400000\nstart = \"100us\"\n\
         [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.5\n{fabric}\n"
    );
    let mut s = Scenario::from_toml(&toml, Path::new("observers.toml")).expect("valid scenario");
    s.config.threads = threads;
    s
}

fn run(s: Scenario) -> Results {
    let mut run = Runner::new(s).expect("builds");
    assert_eq!(run.run_to_end(), StopReason::Finished);
    run.results().expect("bytes conserved")
}

/// The sample tables and the FCT file as text.
fn tables(r: &Results) -> String {
    let mut t = String::new();
    for (time, port, bytes) in &r.queue_samples {
        writeln!(t, "q {} {} {bytes}", time.0, port.0).unwrap();
    }
    for s in &r.rate_samples {
        let row = (s.time.0, s.qp.0, s.flow, s.src.0, s.dst.0, s.rate.0, s.throughput.0);
        writeln!(t, "r {row:?}").unwrap();
    }
    for (time, port, bytes) in &r.link_samples {
        writeln!(t, "l {} {} {bytes}", time.0, port.0).unwrap();
    }
    let mut fct = Vec::new();
    write_fct(&mut fct, &r.records).unwrap();
    t + &String::from_utf8(fct).unwrap() + &format!("end {}\n", r.end_time.0)
}

/// The first time of the progression `first + k * every` at or after `t`.
fn first_at_or_after(first: Time, every: Time, t: Time) -> Time {
    if t <= first {
        return first;
    }
    Time(first.0 + (t.0 - first.0).div_ceil(every.0) * every.0)
}

/// What the sample tables must be, whatever the engine: every time of each schedule up to
/// the chain's last event (the first of any schedule at or after the last completion), one
/// row per switch port (queues) or port (links) each, and for rates one row per flow that
/// had started, until the sample that found it finished.
fn check_samples(r: &Results, s: &Scenario, queue_every: Time, rate_every: Time, link_every: Time) {
    let end = r.last_completion;
    let topo = &s.topology;
    let switch_ports = topo.ports.iter().filter(|p| !topo.is_host(p.node)).count();
    // The chain's last event: the first of any schedule at or after the last completion.
    let last = first_at_or_after(Time::ZERO, queue_every, end)
        .min(first_at_or_after(rate_every, rate_every, end))
        .min(first_at_or_after(link_every, link_every, end));
    let schedule = |rows: Vec<Time>, first: Time, every: Time, per_time: usize, what: &str| {
        let times = ((last.0 - first.0) / every.0 + 1) as usize;
        assert_eq!(rows.len(), times * per_time, "{what}: rows");
        for (i, t) in rows.iter().enumerate() {
            assert_eq!(t.0, first.0 + (i / per_time) as u64 * every.0, "{what}: row {i}");
        }
    };
    schedule(r.queue_samples.iter().map(|q| q.0).collect(), Time::ZERO, queue_every, switch_ports, "queues");
    schedule(r.link_samples.iter().map(|l| l.0).collect(), link_every, link_every, topo.ports.len(), "links");
    // Rates: flow f has a row at every sample time from its start to the first at or after
    // its completion. (A flow that starts at a sample's instant may miss that sample in
    // the reference's order, where the tie goes to whichever event was scheduled first.)
    let fct_of: std::collections::HashMap<u32, Time> = r.records.iter().map(|x| (x.flow, x.start + x.fct)).collect();
    let mut rows = vec![0u64; s.flows.len()];
    for row in &r.rate_samples {
        let f = &s.flows[row.flow as usize];
        assert_eq!((row.src, row.dst), (f.src, f.dst), "a rate row names its flow");
        rows[row.flow as usize] += 1;
    }
    for (i, f) in s.flows.iter().enumerate() {
        let first = first_at_or_after(rate_every, rate_every, f.start);
        let done = first_at_or_after(rate_every, rate_every, fct_of[&(i as u32)]);
        let done = if done > last { Time(done.0 - rate_every.0) } else { done };
        let want = (done.0 - first.0) / rate_every.0 + 1;
        let tie = f.start == first && rows[i] + 1 == want;
        assert!(rows[i] == want || tie, "flow {i} ({:?} to {:?}): {} rate rows, not {want}", f.start, done, rows[i]);
    }
    assert!(r.rate_samples.windows(2).all(|w| (w[0].time, w[0].qp) < (w[1].time, w[1].qp)), "time, then QP");
}

#[test]
fn samples_are_the_same_for_any_thread_count() {
    // Queue samples every 300 ns and links every 700 ns, shorter than the 1 µs window: a
    // partition samples past the chains' end within the last window and must drop it.
    let (q, r, l) = (Time::from_ns(300), Time::from_us(2), Time::from_ns(700));
    let fabric = "queue_sample_interval = \"300ns\"\nrate_sample_interval = \"2us\"\nlink_sample_interval = \"700ns\"";
    let one = run(scenario("", fabric, Some(1)));
    check_samples(&one, &scenario("", fabric, None), q, r, l);
    assert!(one.rate_samples.iter().any(|s| s.throughput.0 > 0) && one.queue_samples.iter().any(|s| s.2 > 0));
    let text = tables(&one);
    for threads in [2, 4] {
        let many = run(scenario("", fabric, Some(threads)));
        assert!(text == tables(&many), "samples differ with {threads} threads");
    }
    // The sequential engine (the reference's order) fills the same tables by the same rules.
    check_samples(&run(scenario("", fabric, None)), &scenario("", fabric, None), q, r, l);
}

#[test]
fn samples_stop_where_a_run_stops_short() {
    // A stop time before the flows finish: every partition samples to it, none is trimmed.
    let fabric = "queue_sample_interval = \"1us\"\nlink_sample_interval = \"5us\"\nrate_sample_interval = \"5us\"";
    let runs: Vec<String> = [1, 3]
        .iter()
        .map(|&n| {
            let mut s = scenario("", fabric, Some(n));
            s.config.stop_time = Time::from_us(150);
            let mut run = Runner::new(s).unwrap();
            assert_eq!(run.run_to_end(), StopReason::StopTime);
            let r = run.results().unwrap();
            assert_eq!(r.queue_samples.last().unwrap().0, Time::from_us(150));
            tables(&r)
        })
        .collect();
    assert!(runs[0] == runs[1], "samples differ with 3 threads at a stop time");
}

/// The trace of a run as CSV text: (text, records, truncated).
fn trace(s: Scenario, dir: &Path, name: &str) -> (String, u64, bool) {
    let path: PathBuf = dir.join(name);
    let mut run = Runner::new(s).unwrap();
    assert!(run.trace_requested());
    run.start_trace(&path).unwrap();
    run.run_to_end();
    run.results().unwrap();
    let (records, truncated) = run.finish_trace().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let spool = |e: &std::fs::DirEntry| e.file_name().to_string_lossy().contains(".csv.p");
    assert_eq!(std::fs::read_dir(dir).unwrap().filter(|e| spool(e.as_ref().unwrap())).count(), 0, "spools removed");
    (text, records, truncated)
}

#[test]
fn the_trace_is_the_same_for_any_thread_count() {
    // Everything 100-130 µs in (the incast starts at 100 µs: enqueues, PFC frames and ACKs on
    // both sides of the cut), and everything host 0 sees all run long.
    let dir = std::env::temp_dir().join(format!("rdmalab-ptrace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (n, spec) in ["[trace]\nstart = \"100us\"\nend = \"130us\"", "[trace]\nnodes = [0]"].iter().enumerate() {
        let one = trace(scenario(spec, "", Some(1)), &dir, &format!("one{n}.csv"));
        assert!(one.1 > 1000 && !one.2, "{spec}: {} records", one.1);
        assert_eq!(one.0.lines().count() as u64, one.1 + 1, "header and records");
        let times: Vec<u64> = one.0.lines().skip(1).map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
        let events: &[&str] = if n == 0 { &["enqueue", "dequeue", "pause", "resume", "ack"] } else { &["dequeue"] };
        for event in events {
            assert!(one.0.contains(&format!(",{event},")), "{spec}: some {event} record");
        }
        for threads in [2, 4] {
            let many = trace(scenario(spec, "", Some(threads)), &dir, &format!("t{threads}_{n}.csv"));
            assert!(one == many, "{spec}: the trace differs with {threads} threads");
        }
        // The sequential engine traces the same kinds of events, as many within a few percent
        // (its order breaks ties differently, which moves some packets by a few ns).
        let seq = trace(scenario(spec, "", None), &dir, &format!("seq{n}.csv"));
        let ratio = seq.1 as f64 / one.1 as f64;
        assert!((0.9..1.1).contains(&ratio), "{spec}: {} records sequential, {} in the origin order", seq.1, one.1);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_queue_monitor_is_the_same_for_any_thread_count() {
    // The monitor writes a block at every 100 ms of simulated time and a last one at the end:
    // flows from 99.99 ms on cross the 100 ms mark, and the chain (100 ns) runs past the
    // last completion within the final 1 µs window of each partition.
    let toml = |threads: u32| {
        let text = "[topology]\nkind = \"fat_tree\"\nk = 4\n[[traffic]]\nkind = \"incast\"\n\
            senders = [4, 8, 12, 13]\nreceiver = 0\nsize = 500000\nstart = \"99.99ms\"\n\
            [[traffic]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 14, size = 300000, start = \"99.995ms\" }]\n\
            [fabric]\ncc = \"dcqcn\"\nbuffer_mb = 0.5\n";
        let mut s = Scenario::from_toml(text, Path::new("monitor.toml")).unwrap();
        s.config.threads = Some(threads);
        s.config.qlen_monitor = Some(QlenMonitorConfig { start: Time::from_us(99_980), end: Time::from_ms(200) });
        s
    };
    let monitor = |threads: u32| {
        let mut run = Runner::new(toml(threads)).unwrap();
        assert_eq!(run.run_to_end(), StopReason::Finished);
        let r = run.results().unwrap();
        (String::from_utf8(run.qlen_monitor_text()).unwrap(), r.last_completion, r.end_time)
    };
    let (one, last, end) = monitor(1);
    let blocks: Vec<&str> = one.split("time: ").skip(1).collect();
    assert_eq!(blocks.len(), 2, "a block at 100 ms and one at the end");
    assert!(blocks[0].starts_with("100000000\n") && blocks[1].starts_with(&format!("{}\n", end.ns())));
    // Every switch port's histogram counts every sample: from the start to the first sample
    // at or after the last completion.
    let samples =
        (first_at_or_after(Time::from_us(99_980), INTERVAL, last).0 - Time::from_us(99_980).0) / INTERVAL.0 + 1;
    let ports: Vec<&str> = blocks[1].lines().skip(1).collect();
    assert_eq!(ports.len(), 80, "20 switches of 4 ports");
    for line in &ports {
        let counts: u64 = line.split(' ').skip(2).map(|c| c.parse::<u64>().unwrap()).sum();
        assert_eq!(counts, samples, "{line}");
    }
    assert!(ports.iter().any(|l| l.split(' ').count() > 3), "some queue above 1 KB");
    for threads in [2, 4] {
        let many = monitor(threads);
        assert!(one == many.0, "the monitor's file differs with {threads} threads");
    }
}

#[test]
fn the_trace_of_a_link_failure_is_the_same_for_any_thread_count() {
    // An aggregation-core link between partitions (with 4 threads) fails at 100 µs under load:
    // the packets on its wires are lost, some held by the receiving partition (sent in an
    // earlier window), some by the sender's; the trace lists them as one simulation does,
    // with the sender port's queue length, which only the sender's partition knows.
    let dir = std::env::temp_dir().join(format!("rdmalab-ptrace-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = |threads: u32| {
        let text = "seed = 6\n[trace]\nstart = \"99us\"\nend = \"101us\"\n\
            [topology]\nkind = \"fat_tree\"\nk = 4\n\
            [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.7\nduration = \"400us\"\n\
            [[traffic]]\nkind = \"incast\"\nsenders = [8, 9, 10, 11, 12, 13, 14, 15]\nreceiver = 0\nsize = 1000000\n\
            start = \"50us\"\n\
            [[events]]\nkind = \"link_down\"\nat = \"100us\"\na = 24\nb = 33\n\
            [fabric]\ncc = \"dcqcn\"\nrto = \"200us\"\n";
        let mut s = Scenario::from_toml(text, Path::new("fail.toml")).unwrap();
        s.config.threads = Some(threads);
        s
    };
    let one = trace(toml(1), &dir, "one.csv");
    let lost: Vec<&str> = one.0.lines().filter(|l| l.starts_with("100000000,drop,")).collect();
    assert!(lost.iter().filter(|l| !l.ends_with(",0")).count() > 100, "packets lost behind queues: {lost:?}");
    for threads in [2, 4] {
        let many = trace(toml(threads), &dir, &format!("t{threads}.csv"));
        assert!(one == many, "link failure: the trace differs with {threads} threads");
    }
    std::fs::remove_dir_all(&dir).ok();
}
