//! SimAI workloads: a tiny iteration on an idle star against the sum of
//! its collectives' closed forms and compute delays in dependency order, the shipped
//! example, the same outputs at 1 and 2 threads, and the scenario's errors.
//!
//! The closed forms are docs/collectives.md's, on a star of rate B and link delay d with ACKs
//! only at a message's end: a ring allreduce of S over 2 ranks has its last byte placed
//! 2·A(S/2) + tx(ack) after its first post (A(b) = Σ tx(w_j) + tx(max w) + 2d), and each
//! rank's last send completes 2(tx(ack) + d) later, when the last ACK has come back. A rank
//! issues its next communication once both have happened, after the compute delay.

use std::path::PathBuf;

use rdmalab::{Rate, Time};

use crate::fixtures::{input_error, run_finished, run_threads, scenario};

const B: Rate = Rate::gbps(100);
const D: Time = Time::from_ns(1000);

/// A(b) on this file's star (`fixtures::arrival`).
fn arrival(b: u64) -> Time {
    crate::fixtures::arrival(b, B, D)
}

fn tx_ack() -> Time {
    crate::fixtures::tx_ack(B)
}

/// A 2-rank ring allreduce of `s`: first post to the last rank's last send completion.
fn allreduce2(s: u64) -> Time {
    Time(2 * arrival(s / 2).0 + tx_ack().0 + 2 * (tx_ack().0 + D.0))
}

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdmalab-simai-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn star(hosts: usize, path: &std::path::Path, extra: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\n[fabric]\nack_interval = 1000000\n\
         [[traffic]]\nkind = \"simai\"\npath = \"{}\"\nchunk = \"4MiB\"\n{extra}",
        path.display()
    )
}

/// 4 GPUs, tensor-parallel groups {0,1} and {2,3}, data-parallel groups {0,2} and {1,3}:
/// every communication is a 2-rank allreduce, and the groups of one never share a link.
const TINY: &str = "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4\n\
2\n\
first  -1 5000  ALLREDUCE 200000 3000 NONE      0      2000 ALLREDUCE 300000 100\n\
second -1 7000  ALLREDUCE 120000 4000 ALLREDUCE 160000 6000 NONE      0      100\n";

#[test]
fn a_tiny_iteration_takes_its_collectives_and_computes_in_dependency_order() {
    let p = file("tiny.txt", TINY);
    let start = Time::from_us(3);
    let r = run_finished(scenario(&star(4, &p, "start = \"3us\"\n"), "t.toml"));
    let (ns, u) = (Time::from_ns, Time::from_ns(100));
    // Issue order: first.fwd, second.fwd, second.ig (all waited for), then first.wg, issued
    // after second.wg's compute (NONE), first.ig's compute (NONE) and first.wg's compute.
    let chain = [
        (start + ns(5000), allreduce2(200_000)),
        (u + ns(7000), allreduce2(120_000)),
        (u + ns(4000), allreduce2(160_000)),
        (u + ns(6000) + ns(3000) + ns(2000), allreduce2(300_000)),
    ];
    let expect = chain.iter().fold(Time::ZERO, |t, &(delay, comm)| t + delay + comm);
    assert_eq!(r.last_completion, expect);
    // Two groups per communication, 2 steps of 2 transfers each.
    assert_eq!(r.flows_total, 4 * 2 * 4);
    assert_eq!(r.records.len(), 32);
    // The weight gradient runs in the data-parallel groups: 0 <-> 2 and 1 <-> 3.
    let last: Vec<_> = r.records.iter().filter(|f| f.size == 150_000).map(|f| (f.src.0, f.dst.0)).collect();
    assert_eq!(last.len(), 8);
    assert!(last.iter().all(|&(s, d)| s % 2 == d % 2 && s != d), "{last:?}");
    // The first compute delay starts at `start`: the first posts are at start + 5 us.
    let first = r.records.iter().map(|f| f.start).min().unwrap();
    assert_eq!(first, start + ns(5000));
    // Each communication is a row of the collectives, in issue order, from its first post
    // to its last byte placed: 2·A(S/2) + tx(ack) (its ACKs' way back is not in it).
    let names: Vec<&str> = r.collectives.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["first.fwd#0", "second.fwd#0", "second.ig#0", "first.wg#0"]);
    let mut at = Time::ZERO;
    for (c, &(delay, comm)) in r.collectives.iter().zip(&chain) {
        let s = [200_000, 120_000, 160_000, 300_000][names.iter().position(|n| *n == c.name).unwrap()];
        assert_eq!(c.start, at + delay, "{}", c.name);
        assert_eq!(c.end.unwrap() - c.start, Time(2 * arrival(s / 2).0 + tx_ack().0), "{}", c.name);
        assert_eq!((c.ranks, c.size, c.steps), (2, s, 2), "{}", c.name);
        at = c.start + comm;
    }
}

/// 8 GPUs, TP = 2: a tensor-parallel allreduce of 2 MB, waited for, then a data-parallel
/// allreduce of 800 kB in two rings of 4 ranks.
const SKEW: &str = "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 8\n\
1\n\
skew -1 1000 ALLREDUCE 2000000 0 NONE 0 0 ALLREDUCE 800000 100\n";

/// A rail fabric of 4 servers of 2 GPUs whose spine links run at a tenth of the NICs' rate.
/// TP pairs (0,2) and (1,3) sit on one rail each; (4,5) and (6,7) cross the slow spine, so
/// their ranks join the data-parallel rings about 1.4 ms after the others.
fn skewed_rail(path: &std::path::Path) -> String {
    format!(
        "[topology]\nkind = \"rail\"\nservers = 4\ngpus_per_server = 2\nspines = 1\n\
         host_rate = \"100Gbps\"\nfabric_rate = \"10Gbps\"\ndelay = \"1us\"\n\
         [[traffic]]\nkind = \"simai\"\npath = \"{}\"\nranks = [0, 2, 1, 3, 4, 5, 6, 7]\nchunk = \"4MiB\"\n",
        path.display()
    )
}

#[test]
fn a_late_rank_sends_nothing_of_a_communication_before_it_joins() {
    let p = file("skew.txt", SKEW);
    let r = run_finished(scenario(&skewed_rail(&p), "t.toml"));
    // The data-parallel allreduce's transfers: 800 kB / 4 ranks each, 6 steps a rank.
    let dp: Vec<_> = r.records.iter().filter(|f| f.size == 200_000).collect();
    assert_eq!(dp.len(), 2 * 4 * 6);
    // A rank joins at the post of its ring's step 0 (after its TP allreduce, the compute and
    // the update): its first transfer in job order, so its lowest flow number. Nothing it
    // sends in the communication may go earlier (the old iteration sent a late rank's ring
    // steps 1 and 2 as soon as its predecessor's data came).
    let join = |h: u32| dp.iter().filter(|f| f.src.0 == h).min_by_key(|f| f.flow).unwrap().start;
    let joins: Vec<Time> = (0..8).map(join).collect();
    let (early, late) = (joins[0].max(joins[1]).max(joins[2]).max(joins[3]), joins[4].min(joins[6]));
    assert!(late > early + Time::from_us(1000), "the placement skews the joins: {joins:?}");
    for f in &dp {
        let j = joins[f.src.0 as usize];
        assert!(f.start >= j, "host {} posted a step at {} before joining at {}", f.src.0, f.start, j);
    }
    // From the last join, the last rank still sends its 6 messages on its own 100 Gb/s link:
    // the communication cannot end sooner than their serialisation.
    let last_join = *joins.iter().max().unwrap();
    let end = dp.iter().map(|f| f.start + f.fct).max().unwrap();
    let own: u64 = 6 * crate::fixtures::wires(200_000).iter().map(|&w| Rate::gbps(100).tx_time(w).0).sum::<u64>();
    assert!(end - last_join >= Time(own), "{} < {}", (end - last_join).0, own);
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/simai.toml")
}

#[test]
fn the_example_runs_to_the_end_and_the_same_at_1_and_2_threads() {
    let path = example();
    let text = std::fs::read_to_string(&path).unwrap();
    let s = rdmalab::config::Scenario::from_toml(&text, &path).unwrap();
    assert_eq!((s.flows.len(), s.jobs.len()), (0, 1));
    let n = s.jobs[0].transfers().len();
    let r = run_finished(s);
    assert_eq!(r.flows_total as usize, n);
    // Compute is serial at every rank (only weight-gradient communication overlaps it): the
    // forward computes, then every backward compute up to attention's wg issue, plus the
    // update time after each of the 9 communications waited for, bound the iteration below.
    let forward = 12_000 + 30_000 + 45_000 + 20_000 + 25_000;
    let backward = 50_000 + 40_000 + 40_000 + 30_000 + 90_000 + 70_000 + 60_000 + 45_000;
    let compute = Time::from_ns(forward + backward + 9 * 100);
    assert!(r.last_completion > compute, "{}", r.last_completion);
    let key = |r: &rdmalab::sim::Results| {
        let mut v: Vec<_> = r.records.iter().map(|f| (f.flow, f.start, f.fct)).collect();
        v.sort();
        v
    };
    let one = run_threads(&text, path.to_str().unwrap(), 1);
    let two = run_threads(&text, path.to_str().unwrap(), 2);
    // (The sequential engine breaks ties in the reference's order, the parallel one by
    // origin node at any thread count: docs/parallel.md.)
    assert_eq!(key(&one), key(&two));
    assert_eq!(one.last_completion, two.last_completion);
}

#[test]
fn bad_entries_are_refused_naming_the_field() {
    let p = file("bad.txt", TINY);
    let cases = [
        ("algorithm = \"tree\"\n", "traffic[0].algorithm", "unknown value `tree`"),
        ("ranks = [0, 1, 2]\n", "traffic[0].ranks", "all_gpus = 4"),
        ("ranks = [0, 1, 2, 2]\n", "traffic[0].ranks", "listed twice"),
        ("ranks = [0, 1, 2, 9]\n", "traffic[0].ranks", "unknown host 9"),
        ("channels = 0\n", "traffic[0].channels", "at least 1"),
        ("colour = 1\n", "colour", "unknown field"),
    ];
    for (extra, field, msg) in cases {
        let e = input_error(&star(8, &p, extra));
        assert!(e.contains(field) && e.contains(msg), "{extra}: {e}");
    }
    // The workload's own errors name its file, line and field.
    let bad = file("bad_row.txt", &TINY.replace("7000  ALLREDUCE 120000", "7000  ALLREDUCE x"));
    let e = input_error(&star(4, &bad, ""));
    assert!(e.contains("bad_row.txt:4") && e.contains("`fwd_size`"), "{e}");
    let e = input_error(&star(4, &p.with_file_name("missing.txt"), ""));
    assert!(e.contains("traffic[0].path") && e.contains("cannot read"), "{e}");
}

/// SimAI's workloads repeat a layer's name once per transformer layer (aliyun/SimAI's
/// `GPT-13B-tp4-pp1-dp4-ep1-g16` lists `attention_column` 40 times): each communication keeps
/// a row of its own, numbered by its name's earlier rows, with its own size and times.
#[test]
fn a_repeated_layer_name_gives_rows_numbered_apart() {
    let text = "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4\n\
3\n\
attn -1 5000 ALLREDUCE 200000 1 NONE 0 1 NONE 0 100\n\
attn -1 5000 ALLREDUCE 120000 1 NONE 0 1 NONE 0 100\n\
mlp  -1 5000 ALLREDUCE 160000 1 NONE 0 1 NONE 0 100\n";
    let p = file("repeated.txt", text);
    let r = run_finished(scenario(&star(4, &p, ""), "t.toml"));
    let rows: Vec<(&str, u64)> = r.collectives.iter().map(|c| (c.name.as_str(), c.size)).collect();
    assert_eq!(rows, [("attn.fwd#0", 200_000), ("attn.fwd#1", 120_000), ("mlp.fwd#0", 160_000)]);
    let starts: Vec<Time> = r.collectives.iter().map(|c| c.start).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
}
