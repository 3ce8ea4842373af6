//! Virtuoso's lossy mode (the Virtuoso paper, §3.5, Fig. 3b) and the RC retry limit it relies on:
//! `fabric.retry_limit` fails a WR after that many go-back-N rounds without progress and
//! puts its QP in the error state; `chunk_probe` doubles the WR size while WRs succeed,
//! then steps linearly from the last good size, and cuts data into WRs of at most that.

use rdmalab::multipath::virtuoso::WrKind;
use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, StopReason};
use rdmalab::Time;

use crate::fixtures;

fn scenario(toml: &str) -> Scenario {
    fixtures::scenario(toml, "v.toml")
}

fn run(s: Scenario) -> Results {
    fixtures::run_finished(s)
}

/// §4.2's testbed, lossy: `links` 1G links between the ToRs, 10G hosts.
fn lossy(links: usize, fabric: &str) -> String {
    format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\nbottleneck_links = {links}\n\
         bottleneck_rate = \"1Gbps\"\nhost_rate = \"10Gbps\"\nips_per_host = {links}\ndelay = \"2us\"\n\
         [fabric]\npath_selection = \"source_ip\"\ncc = \"none\"\nlossless = false\n{fabric}\n"
    )
}

fn virtuoso(qps: u32, fields: &str, messages: &str) -> String {
    format!(
        "[[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"src_ip\"\nqps = {qps}\n\
         weights = \"equal\"\n{fields}\nmessages = [{messages}]\n"
    )
}

fn error(toml: &str) -> String {
    fixtures::build_error(toml, "v.toml")
}

const RTO_MS: u64 = 1; // the default fabric.rto
const LIMIT: u64 = 3;

/// The core link is down for the first 10 ms: nothing a WR sends gets through.
fn outage(fabric: &str) -> String {
    lossy(1, fabric)
        + &virtuoso(1, "", "{ src = 0, dst = 1, size = 100000 }")
        + "[[events]]\nkind = \"link_down\"\nat = \"0ns\"\na = 2\nb = 3\n\
           [[events]]\nkind = \"link_up\"\nat = \"10ms\"\na = 2\nb = 3\n"
}

#[test]
fn a_wr_fails_after_retry_limit_rounds_without_progress_and_is_posted_again() {
    let r = run(scenario(&outage(&format!("retry_limit = {LIMIT}"))));
    let data: Vec<_> = r.mp_wrs.iter().filter(|w| w.kind == WrKind::Data).collect();
    // One timeout per ms rewinds the QP: rounds 1..=LIMIT are allowed, the next one fails
    // the WR, (LIMIT + 1) timeouts after its first packet left.
    let first = data[0];
    assert!(first.failed);
    let fail_at = first.done.expect("a failed WR has its error completion").0;
    let expect = first.post.0 + (LIMIT + 1) * RTO_MS * 1_000_000_000;
    assert!(fail_at >= expect && fail_at < expect + 1_000_000, "failed at {fail_at} ps, expected {expect}");
    // The middleware reconnects (one base RTT) and posts the same bytes again, until the
    // link is back at 10 ms: failures at ~4 and ~8 ms, the third WR gets through.
    assert_eq!(r.counters.wr_failures, 2);
    assert_eq!(data.len(), 3);
    assert!(data[1].post.0 > fail_at && data[1].post.0 < fail_at + 100_000_000, "reconnect takes an RTT: {data:?}");
    assert!(data.iter().all(|w| w.size == 100_000));
    assert!(!data[2].failed);
    let m = &r.mp_messages[0];
    assert_eq!(m.bytes_placed, 100_000);
    let fct = m.fct.expect("completes once the link is back");
    assert!(fct > Time::from_ms(10) && fct < Time::from_ms(12), "{fct}");
    assert_eq!(m.wrs, 3);
}

#[test]
fn without_a_retry_limit_go_back_n_never_gives_up() {
    let r = run(scenario(&outage("")));
    assert_eq!(r.counters.wr_failures, 0);
    let data: Vec<_> = r.mp_wrs.iter().filter(|w| w.kind == WrKind::Data).collect();
    assert_eq!(data.len(), 1);
    assert!(!data[0].failed);
    assert!(r.counters.timeouts >= 10, "one timeout per ms of outage");
    assert!(r.mp_messages[0].fct.unwrap() > Time::from_ms(10));
}

#[test]
fn a_plain_flow_that_exceeds_the_retry_limit_is_given_up() {
    let t = lossy(1, "retry_limit = 2")
        + "[[traffic]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 50000 }]\n\
           [[links]]\na = 2\nb = 3\nerror_rate = 1.0\n";
    let mut sim = scenario(&t).simulation().unwrap();
    let stop = sim.run_to_end();
    let r = sim.results().expect("a failed flow is not a conservation error");
    assert_eq!(stop, StopReason::Finished);
    assert!(r.records.is_empty());
    assert_eq!(r.unreachable.len(), 1, "listed with the flows given up");
    assert_eq!(r.unreachable[0].at, Time::from_ms(3 * RTO_MS));
    assert_eq!(r.unreachable[0].why, rdmalab::sim::GaveUp::RetryExceeded, "not cut off by a link failure");
    assert_eq!(r.counters.wr_failures, 1);
    assert_eq!(r.counters.timeouts, 3, "two rounds allowed, the third timeout fails it");
    assert_eq!(r.end_time, Time::from_ms(3 * RTO_MS), "nothing is sent after the failure");
}

/// Largest WR the ToR takes from one 10G host towards one 1G link without a drop: the
/// ingress port's drop threshold is (B' - shared) >> 3 (the reference MMU's shift at NIC
/// rate), so its shared use tops out at B' / 9, plus its 4 KiB reserve; B' = buffer less
/// headroom (3 x rate x delay per port) and reserves. While a WR of S bytes goes out at
/// 10G, 1/10 of it drains: the backlog peaks at 0.9 S (on the wire, 1048 B per 1000).
fn one_path_bound(buffer_mb: f64) -> f64 {
    let headroom = 3.0 * (10e9 + 1e9) * 2e-6 / 8.0;
    let b = buffer_mb * 1048576.0 - headroom - 2.0 * 4096.0;
    (b / 9.0 + 4096.0) / 0.9 * 1000.0 / 1048.0
}

fn chunk_run(links: usize, buffer_mb: f64, size: u64) -> Results {
    let fields = "chunk_probe = true\nchunk_probe_signal = \"retransmission\"";
    run(scenario(
        &(lossy(links, &format!("buffer_mb = {buffer_mb}"))
            + &virtuoso(links as u32, fields, &format!("{{ src = 0, dst = 1, size = {size} }}"))),
    ))
}

#[test]
fn the_size_search_doubles_then_steps_and_stays_below_the_buffer_bound() {
    let r = chunk_run(1, 4.0, 4_000_000);
    let probes: Vec<_> = r.mp_wrs.iter().filter(|w| w.kind == WrKind::ChunkProbe).collect();
    let first_fail = probes.iter().position(|w| w.failed).expect("a lossy fabric stops the doubling");
    assert!(first_fail >= 2);
    assert_eq!(probes[0].size, 65536);
    for w in probes[..=first_fail].windows(2) {
        assert_eq!(w[1].size, 2 * w[0].size, "doubling while WRs succeed");
    }
    let last_good = probes[first_fail - 1].size;
    for (k, w) in probes[first_fail + 1..].iter().enumerate() {
        assert_eq!(w.size, last_good + (k as u64 + 1) * 16384, "linear from the last good size");
    }
    assert!(probes.last().unwrap().failed);
    assert!(probes[first_fail + 1..probes.len() - 1].iter().all(|w| !w.failed));
    let found = r.mp_paths[0].max_wr;
    assert_eq!(found, probes[probes.len() - 2].size);
    let bound = one_path_bound(4.0);
    assert!((found as f64) <= bound && (found + 16384) as f64 > bound, "found {found}, bound {bound:.0}");
}

#[test]
fn data_goes_in_wrs_of_at_most_the_found_size_one_at_a_time_per_path() {
    let r = chunk_run(4, 1.0, 4_000_000);
    let m = &r.mp_messages[0];
    assert_eq!(m.bytes_placed, 4_000_000);
    for p in &r.mp_paths {
        let data: Vec<_> = r.mp_wrs.iter().filter(|w| w.kind == WrKind::Data && w.path == p.path).collect();
        assert!(data.len() > 1, "a 1 MB share is cut into WRs of at most {} B", p.max_wr);
        assert!(data.iter().all(|w| w.size <= p.max_wr));
        assert_eq!(data.iter().map(|w| w.size).sum::<u64>(), p.bytes);
        for pair in data.windows(2) {
            assert!(pair[1].post >= pair[0].done.unwrap(), "the next WR after the previous CQE");
        }
    }
    // Four paths out of one 10G port share its ingress threshold (the ToR's queues hold
    // 4 S (1 - 4/10) at the end of a round): each path finds less than one path alone,
    // the four together more (the core drains 4 Gb/s meanwhile).
    let one = chunk_run(1, 1.0, 1_000_000).mp_paths[0].max_wr;
    let four = r.mp_paths[0].max_wr;
    assert!(r.mp_paths.iter().all(|p| p.max_wr == four), "one size for all paths");
    assert!(four < one && 4 * four > one, "{four} per path vs {one} alone");
    let bound = one_path_bound(1.0) * 0.9 / (4.0 * 0.6);
    assert!((four as f64) <= bound && (four + 16384) as f64 > bound, "found {four}, bound {bound:.0}");
    assert!(m.probe > Time::ZERO, "the search delays the first message");
}

/// Per-port buffers (each ToR egress port owns `C` bytes): a round of N WRs of S bytes from
/// the 10G host into N 1G links leaves S (1 - N/10) on each link's queue (1048 B on the wire
/// per 1000), so a path takes WRs up to `C / (1.048 (1 - N/10))`, whatever the other paths do.
fn per_port_bound(port_buffer_kb: f64, paths: usize) -> f64 {
    port_buffer_kb * 1024.0 / (1.048 * (1.0 - paths as f64 / 10.0))
}

#[test]
fn after_a_large_overshoot_the_search_still_steps_up_to_the_per_port_bound() {
    // Six paths, 645.15 KiB per port: the bound is 1,575.9 KB per path, and doubling from
    // 64 KiB jumps from 1 MiB (fine) to 2 MiB, a third over it. The failed round's go-back-N
    // copies fill the queues; the next size (1 MiB + a step) is below the bound and must
    // succeed on empty paths, and the search must go on up to the bound.
    let (paths, kb, step) = (6, 645.15, 16384u64);
    let fields = format!("chunk_probe = true\nchunk_probe_signal = \"retransmission\"\nchunk_probe_step = {step}");
    let fabric = format!("buffer_model = \"per_port\"\nport_buffer_kb = {kb}\nretry_limit = 7");
    let r = run(scenario(
        &(lossy(paths, &fabric) + &virtuoso(paths as u32, &fields, "{ src = 0, dst = 1, size = 1000000 }")),
    ));
    let rounds: Vec<u64> =
        r.mp_wrs.iter().filter(|w| w.kind == WrKind::ChunkProbe && w.path == 0).map(|w| w.size).collect();
    assert!(rounds.contains(&(2 << 20)), "doubling overshoots to 2 MiB: {rounds:?}");
    let bound = per_port_bound(kb, paths);
    let found = r.mp_paths[0].max_wr;
    assert!(r.mp_paths.iter().all(|p| p.max_wr == found), "one size for all paths");
    assert!((found as f64) <= bound && (found + step) as f64 > bound, "found {found}, bound {bound:.0}: {rounds:?}");
    assert_eq!(r.mp_messages[0].bytes_placed, 1_000_000);
}

/// An egress dynamic threshold (one pool of `B` bytes; a port may hold `alpha` times what is
/// free): N core queues filling together settle at `alpha B / (1 + alpha N)` each (Choudhury
/// and Hahne), and a round leaves `S (1 - N/10)` on each (1048 B on the wire per 1000).
fn egress_dynamic_bound(buffer_mb: f64, alpha: f64, paths: usize) -> f64 {
    let n = paths as f64;
    alpha * buffer_mb * 1048576.0 / (1.0 + alpha * n) / (1.048 * (1.0 - n / 10.0))
}

#[test]
fn under_an_egress_dynamic_threshold_the_search_finds_alpha_b_over_one_plus_alpha_n() {
    let step = 16384u64;
    for (paths, alpha) in [(1, 1.0), (4, 0.5)] {
        let fields = "chunk_probe = true\nchunk_probe_signal = \"retransmission\"";
        let fabric = format!("buffer_mb = 1\nbuffer_model = \"egress_dynamic\"\ndt_alpha = {alpha}\nretry_limit = 7");
        let r = run(scenario(
            &(lossy(paths, &fabric) + &virtuoso(paths as u32, fields, "{ src = 0, dst = 1, size = 1000000 }")),
        ));
        let bound = egress_dynamic_bound(1.0, alpha, paths);
        // Admission compares a frame with the pool's free bytes before it: a queue may end up
        // to alpha frames above the closed form, alpha x 1048 B / (1.048 (1 - N/10)) of WR size.
        let frame = alpha * 1000.0 / (1.0 - paths as f64 / 10.0);
        let found = r.mp_paths[0].max_wr;
        assert!(r.mp_paths.iter().all(|p| p.max_wr == found), "one size for all paths");
        let (lo, hi) = (bound - step as f64, bound + frame);
        assert!((found as f64) <= hi && found as f64 > lo, "{paths} paths, alpha {alpha}: {found} vs {bound:.0}");
    }
}

#[test]
fn same_seed_same_search() {
    let a = chunk_run(2, 1.0, 1_000_000);
    let b = chunk_run(2, 1.0, 1_000_000);
    assert_eq!(a.mp_wrs, b.mp_wrs);
    assert_eq!(a.mp_messages, b.mp_messages);
}

#[test]
fn bad_input_names_the_field() {
    let msg = "{ src = 0, dst = 1, size = 1000000 }";
    let e = error(&(lossy(1, "retry_limit = 0") + &virtuoso(1, "", msg)));
    assert!(e.contains("fabric.retry_limit"), "{e}");
    let lossless = lossy(1, "retry_limit = 7").replace("lossless = false", "lossless = true");
    let e = error(&(lossless + &virtuoso(1, "chunk_probe = true", msg)));
    assert!(e.contains("chunk_probe") && e.contains("lossless"), "{e}");
    let e = error(&(lossy(1, "") + &virtuoso(1, "chunk_probe = true", msg)));
    assert!(e.contains("chunk_probe") && e.contains("retry_limit"), "{e}");
    let e = error(&(lossy(1, "retry_limit = 7") + &virtuoso(1, "chunk_probe = true\nchunk_probe_step = 0", msg)));
    assert!(e.contains("chunk_probe_step"), "{e}");
    let e = error(&(lossy(1, "retry_limit = 7") + &virtuoso(1, "chunk_probe = true\nchunk_probe_start = 0", msg)));
    assert!(e.contains("chunk_probe_start"), "{e}");
    let e = error(&(lossy(1, "retry_limit = 7") + &virtuoso(1, "chunk_probe_step = 4096", msg)));
    assert!(e.contains("chunk_probe_step") && e.contains("chunk_probe = true"), "{e}");
    let e = error(&(lossy(1, "") + &virtuoso(1, "chunk_probe = true\nchunk_probe_signal = \"loss\"", msg)));
    assert!(e.contains("chunk_probe_signal"), "{e}");
    let e = error(&(lossy(1, "dt_alpha = 1") + &virtuoso(1, "", msg)));
    assert!(e.contains("fabric.dt_alpha") && e.contains("egress_dynamic"), "{e}");
    let e = error(&(lossy(1, "buffer_model = \"egress_dynamic\"\ndt_alpha = 0") + &virtuoso(1, "", msg)));
    assert!(e.contains("fabric.dt_alpha"), "{e}");
    let tiny = "buffer_mb = 1\nbuffer_model = \"egress_dynamic\"\ndt_alpha = 0.0001";
    let e = error(&(lossy(1, tiny) + &virtuoso(1, "", msg)));
    assert!(e.contains("fabric.dt_alpha") && e.contains("frame"), "{e}");
}
