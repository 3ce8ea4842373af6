//! The DRUM paper's host model in the fabric (docs/drum-fabric.md): the WQE engine, serial
//! QP-context fetches, CQ polling, and the RAW / SHARE / DRUM mechanisms.

use std::path::Path;

use rdmalab::app::closed_loop::BatchRecord;
use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, StopReason};

use crate::fixtures;

fn scenario(toml: &str) -> Scenario {
    fixtures::scenario(toml, "drum.toml")
}

fn run(toml: &str) -> Results {
    let mut sim = scenario(toml).simulation().expect("valid scenario");
    let r = sim.run_to_end();
    assert!(matches!(r, StopReason::StopTime | StopReason::Finished), "{r:?}");
    sim.results().expect("conservation holds")
}

fn error(toml: &str) -> String {
    fixtures::build_error(toml, "drum.toml")
}

/// The DRUM paper's testbed: 7 hosts on one switch, 40 Gb/s.
const TESTBED: &str = r#"
stop_time = "STOP"
[topology]
kind = "star"
hosts = 7
rate = "40Gbps"
delay = "1us"
[fabric]
mtu = 1024
"#;

/// [`TESTBED`] stopping at `stop`; it ends inside `[fabric]`, so a caller can add keys to it.
pub(crate) fn testbed(stop: &str) -> String {
    TESTBED.replace("STOP", stop)
}

/// Completion times (post to CQE seen, ns) of the finished batches of application `app`
/// that started after `warm` ns.
fn cts(r: &Results, app: u32, warm: u64) -> Vec<f64> {
    let mut v: Vec<f64> = r
        .host_batches
        .iter()
        .filter(|b: &&BatchRecord| b.app == app && b.seen.0 != u64::MAX && b.posted.ns() >= warm)
        .map(|b| (b.seen.0 - b.posted.0) as f64 / 1000.0)
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn pct(v: &[f64], p: f64) -> f64 {
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// WQEs completed per µs by application `app` over batches posted in [warm, end).
fn wqe_rate(r: &Results, app: u32, warm: u64) -> f64 {
    let n: u64 = r
        .host_batches
        .iter()
        .filter(|b| b.app == app && b.seen.0 != u64::MAX && b.posted.ns() >= warm)
        .map(|b| b.wr_num as u64)
        .sum();
    n as f64 / ((r.end_time.ns() - warm) as f64 / 1000.0)
}

fn fig2a(batch: u32, mech: &str) -> f64 {
    pct(&cts(&fig2a_run(batch, mech), 0, 200_000), 0.8)
}

fn fig2a_run(batch: u32, mech: &str) -> Results {
    let toml = format!(
        r#"{}
[host]
mechanism = "{mech}"
[[app]]
host = 0
dst = 6
name = "fg"
size = 1024
wr_num = 1
[[app]]
host = 0
dst = 6
name = "bg"
size = 1024
wr_num = {batch}
"#,
        testbed("3ms")
    );
    run(&toml)
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

/// Three backlogged applications on host 0 with wr_num 1, 10, 100 (1 KB WQEs).
fn three_apps(host: &str, drum: &str, stop: &str) -> Results {
    let mut toml = format!("{}\n[host]\n{host}\n[drum]\n{drum}\n", testbed(stop));
    for w in [1, 10, 100] {
        toml += &format!("[[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = {w}\n");
    }
    run(&toml)
}

/// Mean over the control periods after `warm` ns of each application's measured release
/// rate, and of the allocation x̂ that applied over the same periods.
fn enforced(r: &Results, apps: u32, warm: u64) -> (Vec<f64>, Vec<f64>) {
    let (mut rate, mut x, mut n) = (vec![0.0; apps as usize], vec![0.0; apps as usize], 0.0);
    let rows = &r.drum_rows;
    let periods: Vec<u64> = rows.iter().map(|d| d.t.0).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    for w in periods.windows(2) {
        if w[0] / 1000 < warm {
            continue;
        }
        for d in rows.iter().filter(|d| d.t.0 == w[0]) {
            x[d.app as usize] += d.x;
        }
        for d in rows.iter().filter(|d| d.t.0 == w[1]) {
            rate[d.app as usize] += d.rate;
        }
        n += 1.0;
    }
    (rate.iter().map(|v| v / n).collect(), x.iter().map(|v| v / n).collect())
}

#[test]
fn fig2a_slope_is_the_wqe_cost_and_drum_follows_its_share() {
    // Fig 2a: the foreground's p80 grows by one WQE cost per background WQE (FIFO engine).
    let (p20, p100) = (fig2a(20, "raw"), fig2a(100, "raw"));
    let slope = (p100 - p20) / 80.0;
    assert!((slope - 680.0).abs() <= 68.0, "slope {slope:.1} ns per WQE, wqe_cost 680 ns");
    // Fig 6 under (P)'s exact optimum: the foreground (a = 1) re-posts at once, so it is
    // above its share and is released once per 1/x̂_fg µs (x̂ per µs); its p80 is that
    // wait plus at most its own round trip alone (4.8 µs, `a_lone_raw_app_...`). With
    // β = 1 per µs² the CQ penalty sets x ∝ a^(-2/3), so the wait grows with the
    // background's batch (its a = 1/batch falls): the model's answer, not Fig. 6's.
    let mut waits = Vec::new();
    for batch in [20, 100] {
        let r = fig2a_run(batch, "drum");
        let p80 = pct(&cts(&r, 0, 200_000), 0.8) / 1000.0;
        let xs: Vec<f64> = r.drum_rows.iter().filter(|d| d.app == 0 && d.t.0 > 0).map(|d| d.x).collect();
        let wait = xs.len() as f64 / xs.iter().sum::<f64>();
        assert!(p80 >= wait - 0.76 && p80 <= wait + 4.8, "batch {batch}: p80 {p80:.2} µs, 1/x̂_fg {wait:.2} µs");
        waits.push(wait);
    }
    let law = (100.0f64 / 20.0).powf(2.0 / 3.0);
    assert!(waits[1] / waits[0] > 0.8 * law, "the background's share grows as a^(-2/3): {waits:?}");
}

#[test]
fn raw_shares_follow_wr_num() {
    let r = three_apps("mechanism = \"raw\"", "", "5ms");
    let v: Vec<f64> = (0..3).map(|a| wqe_rate(&r, a, 500_000)).collect();
    let w = [1.0f64, 10.0, 100.0];
    let expect = w.iter().sum::<f64>().powi(2) / (3.0 * w.iter().map(|x| x * x).sum::<f64>());
    assert!((jain(&v) - expect).abs() <= 0.02, "rates {v:?}: Jain {} vs {expect}", jain(&v));
    // The WQE engine is the bottleneck: 1/wqe_cost WQEs per µs in all.
    let total: f64 = v.iter().sum();
    assert!((total - 1.0 / 0.68).abs() < 0.05 * 1.47, "total {total} WQE/µs");
}

#[test]
fn drum_with_small_beta_equalises_rates() {
    // Q = 0.2/0.68 µs: each app's equal share (0.098/µs) is below what even the
    // one-WQE app can use (one batch per ~5 µs round trip), so all three stay backlogged.
    let r = three_apps("mechanism = \"drum\"", "beta = 1e-9\nq_fraction = 0.2\nperiod = \"100us\"", "20ms");
    let v: Vec<f64> = (0..3).map(|a| wqe_rate(&r, a, 1_000_000)).collect();
    assert!(jain(&v) >= 0.99, "rates {v:?}: Jain {}", jain(&v));
    let (rate, x) = enforced(&r, 3, 1_000);
    assert!(jain(&rate) >= 0.99 && jain(&x) >= 0.999, "released {rate:?}, x̂ {x:?}");
}

#[test]
fn drum_enforces_the_solver_rates() {
    // Backlogged apps with different CQE/WQE ratios and a β that makes the optimum unequal.
    let mut toml = format!(
        "{}\n[host]\nmechanism = \"drum\"\n[drum]\nbeta = 1e-7\nq_fraction = 0.9\nperiod = \"200us\"\n",
        testbed("20ms")
    );
    for w in [100, 400, 1600] {
        toml += &format!("[[app]]\nhost = 0\ndst = 6\nsize = 64\nwr_num = {w}\n");
    }
    let r = run(&toml);
    let (rate, x) = enforced(&r, 3, 1_000);
    let spread = x.iter().cloned().fold(0.0, f64::max) / x.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 1.2, "the optimum should be unequal here: x̂ {x:?}");
    for j in 0..3 {
        assert!((rate[j] - x[j]).abs() <= 0.02 * x[j], "app {j}: released {} vs x̂ {} ({rate:?} {x:?})", rate[j], x[j]);
    }
}

#[test]
fn drum_with_zero_iterations_keeps_equal_rates() {
    let r = three_apps("mechanism = \"drum\"", "solve = \"admm\"\niterations = 0\nq_fraction = 0.2", "10ms");
    assert!(r.drum_rows.iter().all(|d| (d.x - r.drum_rows[0].x).abs() < 1e-12), "x̂ moved");
    assert!((r.drum_rows[0].x * 3.0 - 0.2 / 0.68).abs() < 1e-9, "start = Q/m each");
    let v: Vec<f64> = (0..3).map(|a| wqe_rate(&r, a, 1_000_000)).collect();
    assert!(jain(&v) >= 0.99, "rates {v:?}");
}

fn cache_run(qps: u32, fetch: &str) -> f64 {
    let mut toml = testbed("2ms").replace(
        "mtu = 1024",
        &format!("mtu = 1024\nqp_cache_entries = 20\nqp_cache_miss_penalty = \"1us\"\nqp_cache_fetch = \"{fetch}\""),
    );
    toml += "[host]\nwqe_cost = \"0ns\"\npoll_cost = \"10ns\"\n";
    toml += &format!("[[app]]\nhost = 0\ndst = 6\ncount = {qps}\nsize = 1048576\nwr_num = 1\n");
    let r = run(&toml);
    r.counters.payload_bytes_delivered as f64 * 8.0 / (r.end_time.0 as f64 / 1e12) / 1e9
}

#[test]
fn qp_cache_keys_without_a_cache_are_refused_at_their_line() {
    // Without `qp_cache_entries` no cache is modelled: a penalty or a fetch mode would do nothing.
    for (key, value) in [("qp_cache_miss_penalty", "\"1us\""), ("qp_cache_fetch", "\"serial\"")] {
        let toml = format!("{}{key} = {value}\n", testbed("1ms"));
        let e = fixtures::input_error(&toml);
        let want =
            format!("bad.toml:{}: field `fabric.{key}`: needs `qp_cache_entries`", fixtures::line_of(&toml, key));
        assert!(e.starts_with(&want), "want {want}: {e}");
    }
}

#[test]
fn serial_fetch_gives_the_fig2c_knee() {
    let line = 40.0 * 1024.0 / (1024.0 + 48.0); // goodput of 1 KB packets at 40 Gb/s
    let thrash = 1024.0 * 8.0 / 1000.0; // one 1 KB packet per 1 µs fetch
    for n in [4, 12, 20] {
        let g = cache_run(n, "serial");
        assert!((g - line).abs() <= 0.05 * line, "{n} QPs: {g:.2} Gb/s, line {line:.2}");
    }
    for n in [21, 30, 60] {
        let g = cache_run(n, "serial");
        assert!((g - thrash).abs() <= 0.05 * thrash, "{n} QPs: {g:.2} Gb/s, MTU/penalty {thrash:.2}");
    }
    // Parallel fetches hide most misses behind other QPs: no knee (each QP still waits
    // out its own fetch, a few per cent below line rate at 60 QPs).
    let g = cache_run(60, "parallel");
    assert!(g > 0.9 * line, "parallel, 60 QPs: {g:.2} Gb/s");
}

fn share_vs_raw(mech: &str, extra: &str, seed: u64) -> Vec<BatchRecord> {
    let toml = format!(
        "seed = {seed}\n{}\n[host]\nmechanism = \"{mech}\"\n{extra}\n[[app]]\nhost = 0\ndst = 6\ncount = 12\n\
         size = [32, 4096]\nwr_num = [1, 20]\nthink = \"2us\"\n[[app]]\nhost = 1\ndst = 6\ncount = 3\nsize = 4096\nwr_num = 8\n",
        testbed("1ms")
    );
    run(&toml).host_batches
}

#[test]
fn share_with_ratio_one_is_raw_and_runs_are_deterministic() {
    let raw = share_vs_raw("raw", "", 3);
    assert!(raw.len() > 100);
    assert_eq!(raw, share_vs_raw("share", "share_ratio = 1\nlock_cost = \"0ns\"", 3));
    assert_eq!(raw, share_vs_raw("raw", "", 3), "same seed, same batches");
    assert_ne!(raw, share_vs_raw("raw", "", 4), "another seed draws other sizes");
    // Sharing QPs five to one changes the run (head-of-line blocking, the lock).
    assert_ne!(raw, share_vs_raw("share", "", 3));
}

#[test]
fn bad_input_names_the_field_and_line() {
    let base = format!("{}\n[host]\nmechanism = \"raw\"\n[drum]\nperiod = \"100us\"\n[[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = 4\n", testbed("1ms"));
    let cases = [
        ("wr_num = 4", "wr_num = 0", "app[0].wr_num"),
        ("wr_num = 4", "wr_num = [9, 3]", "app[0].wr_num"),
        ("mechanism = \"raw\"", "mechanism = \"rawr\"", "host.mechanism"),
        ("mechanism = \"raw\"", "mechanism = \"share\"\nshare_ratio = 0", "host.share_ratio"),
        ("period = \"100us\"", "period = \"0us\"", "drum.period"),
        ("period = \"100us\"", "control_delay = \"0ns\"", "drum.control_delay"),
        ("dst = 6", "dst = 0", "app[0].dst"),
        ("dst = 6", "dst = 7", "app[0].dst"),
    ];
    for (from, to, field) in cases {
        let toml = base.replace(from, to);
        let e = error(&toml);
        assert!(e.contains("drum.toml") && e.contains(field), "{to}: {e}");
        let line =
            toml.lines().position(|l| l.starts_with(to.lines().last().unwrap().split(' ').next().unwrap())).unwrap()
                + 1;
        assert!(e.contains(&format!(":{line}")), "{to}: line {line} expected in {e}");
    }
}

#[test]
fn drum_poll_shares_follow_z() {
    // The CQ budget binds (one 10 us poll at a time, C = 0.1 CQE/us): the poller's stride
    // schedule over the completion rings gives each application polls in proportion to ẑ
    // (z ∝ 1/a = wr_num here). A ring refills ~8 us after its poll, so no app may need
    // more than every other poll: with five apps the largest share is 1/3.
    let mut toml = format!(
        "{}\n[host]\nmechanism = \"drum\"\npoll_cost = \"10us\"\n[drum]\nbeta = 1e-6\nperiod = \"500us\"\n",
        testbed("40ms")
    );
    for w in [1, 2, 3, 4, 5] {
        toml += &format!("[[app]]\nhost = 0\ndst = 6\nsize = 64\nwr_num = {w}\n");
    }
    let r = run(&toml);
    let warm = 2_000_000u64; // ns
    let polls: Vec<f64> = (0..5)
        .map(|a| {
            r.host_batches.iter().filter(|b| b.app == a && b.seen.0 != u64::MAX && b.seen.ns() >= warm).count() as f64
        })
        .collect();
    let late: Vec<_> = r.drum_rows.iter().filter(|d| d.t.ns() >= warm).collect();
    let z: Vec<f64> = (0..5).map(|a| late.iter().filter(|d| d.app == a).map(|d| d.z).sum::<f64>()).collect();
    let (sp, sz) = (polls.iter().sum::<f64>(), z.iter().sum::<f64>());
    let spread = z.iter().cloned().fold(0.0, f64::max) / z.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 1.2, "ẑ should differ here: {z:?}");
    for j in 0..5 {
        let (share, target) = (polls[j] / sp, z[j] / sz);
        assert!(
            (share - target).abs() <= 0.02 * target,
            "app {j}: poll share {share:.4} vs ẑ share {target:.4} ({polls:?}, {z:?})"
        );
    }
}

/// Six hosts, two backlogged apps each (2 KB WQEs), all to host 6: every host's own budget
/// Q = 0.9/0.68 WQE/µs is 21.7 Gb/s, so the six together ask 3x the 40 Gb/s link into host 6.
fn shared_link(control: &str) -> Results {
    let mut toml = format!(
        "{}\n[host]\nmechanism = \"drum\"\n[drum]\ncontrol = \"{control}\"\ncontrol_delay = \"2us\"\n\
         period = \"100us\"\niterations = 5\nbeta = 1e-6\n",
        testbed("3ms")
    );
    for h in 0..6 {
        toml += &format!("[[app]]\nhost = {h}\ndst = 6\ncount = 2\nsize = 2048\nwr_num = 50\n");
    }
    run(&toml)
}

/// Payload bytes per µs the last period's allocation sends into host 6 (rows of the 100 us
/// period in which the last one was made), and when the last one was made.
fn last_allocation(r: &Results) -> (f64, u64) {
    let t = r.drum_rows.iter().map(|d| d.t.0).max().unwrap();
    let same = |d: &&rdmalab::app::drum_agent::DrumRow| d.t.0 / 100_000_000 == t / 100_000_000;
    (r.drum_rows.iter().filter(same).map(|d| d.x * 2048.0).sum(), t)
}

#[test]
fn out_of_band_control_shares_the_fabric_link() {
    let cap = 40e9 / 8.0 / 1e6 * 1024.0 / 1072.0; // payload bytes per µs of the link into host 6
    let (local, _) = last_allocation(&shared_link("local"));
    assert!(local > 2.5 * cap, "local solves ignore the shared link: {local:.0} B/us vs {cap:.0}");
    let r = shared_link("out_of_band");
    let (coupled, t) = last_allocation(&r);
    assert!(coupled <= cap * (1.0 + 1e-9) && coupled >= 0.9 * cap, "coupled {coupled:.0} B/us vs cap {cap:.0}");
    // Allocations take effect after 5 rounds of 2 x 2 us: 20 us into each 100 us period.
    assert_eq!(t % 100_000_000, 20_000_000, "last allocation at {t} ps");
    // Every host gets about the same share of the link (same apps, same paths).
    let per_host: Vec<f64> =
        (0..6).map(|h| r.drum_rows.iter().filter(|d| d.t.0 == t && d.app / 2 == h).map(|d| d.x).sum()).collect();
    assert!(jain(&per_host) > 0.999, "{per_host:?}");
}

#[test]
fn out_of_band_inputs_are_checked() {
    let base = format!(
        "{}\n[host]\nmechanism = \"drum\"\n[drum]\ncontrol = \"out_of_band\"\ncontrol_delay = \"2us\"\n\
         period = \"100us\"\n[[app]]\nhost = 0\ndst = 6\ncount = 2\nsize = 64\nwr_num = 4\n\
         [[app]]\nhost = 1\ndst = 6\ncount = 2\nsize = 64\nwr_num = 4\n",
        testbed("1ms")
    );
    assert!(error(&base.replace("control_delay = \"2us\"", "control_delay = \"20us\"")).contains("drum.period"));
    assert!(
        error(&base.replace("host = 1\ndst = 6\ncount = 2", "host = 1\ndst = 6\ncount = 3")).contains("drum.control")
    );
    // In band, the coordinator needs a host of its own.
    let everywhere = base
        .replace("hosts = 7", "hosts = 2")
        .replace("host = 0\ndst = 6", "host = 0\ndst = 1")
        .replace("host = 1\ndst = 6", "host = 1\ndst = 0")
        .replace("\"out_of_band\"", "\"in_band\"");
    let e = Scenario::from_toml(&everywhere, Path::new("drum.toml")).unwrap().simulation().unwrap_err().to_string();
    assert!(e.contains("drum.control") && e.contains("coordinator"), "{e}");
}

#[test]
fn in_band_control_carries_the_rounds_through_the_fabric() {
    let cap = 40e9 / 8.0 / 1e6 * 1024.0 / 1072.0;
    let r = shared_link("in_band");
    let (coupled, t) = last_allocation(&r);
    assert!(coupled <= cap * (1.0 + 1e-9) && coupled >= 0.9 * cap, "coupled {coupled:.0} B/us vs cap {cap:.0}");
    // A round: a report through its host's WQE engine (0.68 us, behind at most one app WQE),
    // the NIC's round robin and two 1 us hops in class 0 (2.04 us); then the coordinator's
    // six answers through its own engine one after the other (6 x 0.68 us) and two hops
    // back: 8.8 to 10.3 us; five rounds, not the fixed 20 us of out_of_band.
    let offset = (t % 100_000_000) as f64 / 1e6;
    assert!((44.0..52.0).contains(&offset), "allocation {offset} us into the period");
    // Every host enforces its allocation when its final answer arrives; all equal here.
    let per_host: Vec<f64> = (0..6)
        .map(|h| {
            r.drum_rows.iter().filter(|d| d.t.0 / 100_000_000 == t / 100_000_000 && d.app / 2 == h).map(|d| d.x).sum()
        })
        .collect();
    assert!(jain(&per_host) > 0.999, "{per_host:?}");
}

#[test]
fn coupled_controls_are_deterministic() {
    for control in ["out_of_band", "in_band"] {
        let (a, b) = (shared_link(control), shared_link(control));
        assert_eq!(a.host_batches, b.host_batches, "{control}");
        assert_eq!(a.drum_rows, b.drum_rows, "{control}");
        assert!(a.host_batches.len() > 100);
    }
}

fn share_pair(mech: &str, extra: &str) -> Results {
    // App 0 posts 100 x 1 KB, app 1 one 1 KB WQE; no WQE engine, so only the send queue differs.
    let toml = format!(
        "{}\n[host]\nmechanism = \"{mech}\"\nwqe_cost = \"0ns\"\npoll_cost = \"10ns\"\nshare_ratio = 2\n{extra}\n\
         [[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = 100\ntotal_bytes = 102400\n\
         [[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = 1\ntotal_bytes = 1024\nstart = \"100ns\"\n",
        testbed("1ms")
    );
    run(&toml)
}

#[test]
fn share_blocks_a_small_wqe_behind_its_co_sharers_batch() {
    let ct = |r: &Results| cts(r, 1, 0)[0];
    let (raw, share) = (share_pair("raw", ""), share_pair("share", "lock_cost = \"0ns\""));
    // RAW: the small WQE's packet takes its round-robin turn beside the batch. SHARE: it is
    // behind the batch in one send queue: 100 packets of 1072 B at 40 Gb/s = 21.44 us more.
    let extra = ct(&share) - ct(&raw);
    assert!((extra - 21_440.0).abs() < 0.05 * 21_440.0, "head-of-line delay {extra} ns");
}

/// Five co-sharers ring 10 WQEs each at time 0 behind one lock held `lock_cost` = 1 µs per
/// WQE; each poster that finds j others queued adds j cache-line transfers of
/// `transfer_us`. Application a rings at 10 (a + 1) + transfer · a (a + 1) / 2 µs: the
/// burst's last ring is n·wr·lock_cost + transfer · n (n − 1)/2, quadratic in the contenders
/// (a test-and-set lock, Anderson 1990).
fn share_lock_rings(transfer: &str, transfer_us: f64) {
    let toml = format!(
        "{}\n[host]\nmechanism = \"share\"\nwqe_cost = \"0ns\"\npoll_cost = \"10ns\"\nlock_cost = \"1us\"\n\
         lock_transfer = \"{transfer}\"\n[[app]]\nhost = 0\ndst = 6\ncount = 5\nsize = 64\nwr_num = 10\ntotal_bytes = 640\n",
        testbed("1ms")
    );
    let r = run(&toml);
    let alone = cts(&run(&toml.replace("count = 5", "count = 1")), 0, 0)[0];
    for a in 0..5u32 {
        let ct = cts(&r, a, 0)[0];
        let k = a as f64;
        let ring = 1000.0 * (10.0 * (k + 1.0) + transfer_us * k * (k + 1.0) / 2.0);
        assert!(ct >= ring && ct <= ring + alone + 1_000.0, "app {a}: ct {ct} ns, rings at {ring}, alone {alone}");
    }
}

#[test]
fn share_lock_is_a_fifo_held_per_wqe() {
    share_lock_rings("0ns", 0.0);
}

#[test]
fn share_lock_contention_grows_with_the_queued_posters() {
    share_lock_rings("2us", 2.0);
}
