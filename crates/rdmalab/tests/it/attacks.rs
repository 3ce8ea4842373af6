//! The CC-attack paper's attacks end to end: bandwidth shares against the closed forms of each
//! enforcement granularity, the generators' exact schedules, linger, the tenant defense,
//! determinism, and bad input.
//!
//! Closed forms (long flows, one bottleneck, one victim QP against N attacker QPs):
//! per-QP state gives every QP an equal share, so the attacker gets N/(N+1); a state per
//! pair or per destination makes the attacker one contender, ½; without congestion control
//! the bottleneck's FIFO serves both line-rate senders equally, ½; the CC-attack paper's ConnectX-5
//! (one state, rate unsplit) lies strictly between.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::Time;

use crate::fixtures::{input_error, line_of, run_toml_with};

fn run(toml: &str) -> Results {
    run_toml_with(toml, |_| {})
}

/// Bytes each tenant received in [start, end) µs, by tenant index.
fn tenant_bytes(r: &Results, start_us: u64, end_us: u64) -> Vec<u64> {
    let mut out = vec![0; r.tenant_names.len()];
    for b in &r.tenant_bins {
        let t = b.bin as u64 * r.tenant_bin.0 / 1_000_000;
        if t >= start_us && t < end_us {
            out[b.tenant as usize] += b.bytes;
        }
    }
    out
}

/// The attacker's (tenant 2) share of the victim's and attacker's bytes over [1, 4) ms.
fn attacker_share(r: &Results) -> f64 {
    let b = tenant_bytes(r, 1000, 4000);
    b[2] as f64 / (b[1] + b[2]) as f64
}

fn dumbbell(fabric: &str, attack: &str) -> String {
    two_tenant_dumbbell(2, "4ms", 100_000_000, attack, fabric)
}

/// A dumbbell of `per_side` hosts per side: the victim tenant sends `victim_bytes` from
/// host 0 to the first host on the right on one QP; the attacker tenant (host 1 and the
/// second on the right) runs `attack`.
fn two_tenant_dumbbell(per_side: u32, stop: &str, victim_bytes: u64, attack: &str, fabric: &str) -> String {
    let (v_dst, a_dst) = (per_side, per_side + 1);
    format!(
        r#"
stop_time = "{stop}"
[topology]
kind = "dumbbell"
hosts_per_side = {per_side}
[[tenants]]
name = "victim"
hosts = [0, {v_dst}]
[[tenants]]
name = "attacker"
hosts = [1, {a_dst}]
[[traffic]]
kind = "flows"
tenant = "victim"
flows = [{{ src = 0, dst = {v_dst}, size = {victim_bytes} }}]
[[traffic]]
tenant = "attacker"
{attack}
[fabric]
{fabric}
"#
    )
}

fn parallel(n: u32) -> String {
    format!("kind = \"parallel_qps\"\nsrc = 1\ndst = 3\nqps = {n}\nsize = 100000000")
}

#[test]
fn parallel_shares_follow_each_granularity() {
    for n in [2u32, 4, 8] {
        let fair = n as f64 / (n + 1) as f64;
        let per_qp = attacker_share(&run(&dumbbell("cc = \"dcqcn\"", &parallel(n))));
        assert!((per_qp - fair).abs() <= 0.04, "per_qp N={n}: {per_qp:.3} vs {fair:.3}");
        for g in ["per_pair", "per_destination"] {
            let s = attacker_share(&run(&dumbbell(&format!("cc = \"dcqcn\"\ngranularity = \"{g}\""), &parallel(n))));
            assert!((s - 0.5).abs() <= 0.06, "{g} N={n}: {s:.3}");
        }
        let cx5 =
            attacker_share(&run(&dumbbell("cc = \"dcqcn\"\ngranularity = \"per_destination_unsplit\"", &parallel(n))));
        assert!(cx5 > 0.5 + 0.02 && cx5 < per_qp - 0.02, "per_destination_unsplit N={n}: {cx5:.3}");
    }
    let none = attacker_share(&run(&dumbbell("cc = \"none\"", &parallel(16))));
    assert!((none - 0.5).abs() <= 0.03, "no CC N=16: {none:.3}");
}

fn staggered(policy: &str, extra: &str) -> String {
    format!("kind = \"staggered_qps\"\nsrc = 1\ndst = 3\nqps = 30\nsize = 1000000000\npolicy = \"{policy}\"\n{extra}")
}

#[test]
fn staggered_posts_on_schedule_and_slot() {
    let toml = dumbbell(
        "cc = \"dcqcn\"",
        &staggered("reuse", "size = 2000000\nchunk = 30000\ninterval = \"2us\"\nstart = \"5us\"")
            .replace("size = 1000000000\n", ""),
    );
    let r = run_toml_with(&toml, |c| c.trace_apps = true);
    let chunks = 2_000_000u64.div_ceil(30_000);
    assert_eq!(r.app_posts.len() as u64, chunks);
    for (k, p) in r.app_posts.iter().enumerate() {
        let k = k as u64;
        assert_eq!((p.chunk, p.slot), (k, (k % 30) as u32));
        assert_eq!(p.time, Time::from_us(5 + 2 * k), "reuse posts every chunk at its turn");
        assert_eq!(p.size, if k + 1 == chunks { 2_000_000 - 30_000 * (chunks - 1) } else { 30_000 });
    }
    assert_eq!(r.counters.qps_opened, 1 + 30, "the victim's QP and one per slot");
    let transfer = r.records.iter().find(|f| f.src.0 == 1).expect("the transfer completes");
    assert_eq!(transfer.size, 2_000_000);
    assert_eq!(tenant_bytes(&r, 0, u64::MAX)[2], 2_000_000, "every byte delivered");
}

#[test]
fn recreate_opens_a_qp_per_chunk_and_reuses_slots() {
    let extra = "size = 3000000\nchunk = 20000\ninterval = \"1us\"";
    let toml = dumbbell("cc = \"dcqcn\"", &staggered("recreate", extra).replace("size = 1000000000\n", ""));
    let r = run_toml_with(&toml, |c| c.trace_apps = true);
    let chunks = 3_000_000u64.div_ceil(20_000);
    assert_eq!(r.counters.qps_opened, 1 + chunks);
    assert!(r.counters.qps_peak <= 1 + 30 + 1, "peak {} live QPs", r.counters.qps_peak);
    let mut waited = 0;
    for p in &r.app_posts {
        let turn = Time::from_us(p.chunk);
        assert_eq!(p.slot as u64, p.chunk % 30);
        assert!(p.time >= turn);
        waited += (p.time > turn) as u32;
    }
    assert!(waited > 0, "at 20 KB per us the slots are busy: some chunks wait for theirs");
    // Chunks of one slot never overlap: each starts after the previous one's turn.
    for s in 0..30u32 {
        let times: Vec<Time> = r.app_posts.iter().filter(|p| p.slot == s).map(|p| p.time).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
    }
    assert_eq!(tenant_bytes(&r, 0, u64::MAX)[2], 3_000_000);
}

fn overlay(seed: u64, members: &str) -> Results {
    let toml = format!(
        r#"
seed = {seed}
[topology]
kind = "star"
hosts = 9
[[traffic]]
kind = "shuffled_overlay"
hosts = [{members}]
chunk = 5000
interval = "2us"
until = "60us"
"#
    );
    run_toml_with(&toml, |c| c.trace_apps = true)
}

/// Recovers each step's shift from the posts: member i sent to member (i + k) mod n.
fn overlay_shifts(r: &Results, members: &[u32]) -> Vec<u32> {
    let n = members.len();
    let mut shifts = Vec::new();
    for step in 0..30u64 {
        let at = Time::from_us(2 * step);
        let posts: Vec<_> = r.app_posts.iter().filter(|p| p.time == at).collect();
        assert_eq!(posts.len(), n, "every member posts once per step");
        let mut k_step = None;
        for (i, &m) in members.iter().enumerate() {
            let p = posts.iter().find(|p| r.records.iter().any(|f| f.flow as u64 == p.chunk && f.src.0 == m)).unwrap();
            let j = members.iter().position(|&x| x == p.slot).unwrap();
            let k = ((j + n - i) % n) as u32;
            assert_eq!(*k_step.get_or_insert(k), k, "one shift per step");
        }
        shifts.push(k_step.unwrap());
    }
    shifts
}

#[test]
fn overlay_rings_are_hamiltonian_new_and_seeded() {
    let members = [1u32, 2, 3, 4, 5, 6, 7, 8];
    let list = "1, 2, 3, 4, 5, 6, 7, 8";
    let a = overlay(3, list);
    let shifts = overlay_shifts(&a, &members);
    for w in shifts.windows(2) {
        assert_ne!(w[0], w[1], "successors change at every step");
    }
    assert!(shifts.iter().all(|&k| k % 2 == 1), "gcd(k, 8) = 1: {shifts:?}");
    assert_eq!(a.records.len(), 8 * 30, "every chunk completes");
    assert!(a.records.iter().all(|f| f.size == 5000));
    let again = overlay(3, list);
    assert_eq!(a.records, again.records);
    assert_eq!(a.tenant_bins, again.tenant_bins);
    assert_ne!(shifts, overlay_shifts(&overlay(4, list), &members), "another seed, another order");
}

#[test]
fn split_pieces_keep_bytes_and_tenant() {
    let toml = r#"
[topology]
kind = "star"
hosts = 8
[[tenants]]
name = "attacker"
hosts = [0, 1, 2, 3, 4, 5, 6, 7]
[[traffic]]
kind = "poisson"
cdf = "fb_hadoop"
load = 0.3
duration = "2ms"
split = { min_size = 1000000, piece = 150000, gap = "13us", tenant = "attacker" }
"#;
    let plain = Scenario::from_toml(
        &toml.replace("split = { min_size = 1000000, piece = 150000, gap = \"13us\", tenant = \"attacker\" }\n", ""),
        Path::new("t.toml"),
    )
    .unwrap();
    let s = Scenario::from_toml(toml, Path::new("t.toml")).unwrap();
    let big: Vec<_> = plain.flows.iter().filter(|f| f.size >= 1_000_000).collect();
    assert!(!big.is_empty());
    for f in &big {
        let pieces: Vec<_> = s
            .flows
            .iter()
            .filter(|p| p.src == f.src && p.dst == f.dst && p.start >= f.start && p.tenant == 1)
            .collect();
        let n = f.size.div_ceil(150_000) as usize;
        let mine: Vec<_> =
            pieces.iter().filter(|p| (p.start.0 - f.start.0) % Time::from_us(13).0 == 0).take(n).collect();
        assert_eq!(mine.iter().map(|p| p.size).sum::<u64>(), f.size);
        for (j, p) in mine.iter().enumerate() {
            assert_eq!(p.start, Time(f.start.0 + j as u64 * Time::from_us(13).0));
        }
    }
    let small = |sc: &Scenario| sc.flows.iter().filter(|f| f.size < 1_000_000 && f.tenant == 0).count();
    assert!(small(&s) >= small(&plain), "unsplit flows keep the source's tenant");
    let total = |sc: &Scenario| sc.flows.iter().map(|f| f.size).sum::<u64>();
    assert_eq!(total(&s), total(&plain));
    let r = run(toml);
    assert_eq!(r.records.len(), s.flows.len());
    assert_eq!(r.counters.payload_bytes_delivered, total(&s));
}

#[test]
fn linger_keeps_a_pair_state_for_the_next_qp() {
    // Two attacker flows on the same pair, the second 50 us after the first completes.
    // Under per_pair the second inherits the first's reduced rate only if the state lingers.
    let attack = "kind = \"flows\"\nflows = [{ src = 1, dst = 3, size = 3000000 }, { src = 1, dst = 3, size = 3000000, start = \"1500us\" }]";
    let first_rate = |linger: &str| {
        let fabric = format!("cc = \"dcqcn\"\ngranularity = \"per_pair\"\ncc_state_linger = \"{linger}\"\nrate_sample_interval = \"1us\"");
        let r = run(&dumbbell(&fabric, attack).replace("stop_time = \"4ms\"", "stop_time = \"2ms\""));
        let first_done = r.records.iter().find(|f| f.src.0 == 1).map(|f| f.start + f.fct).unwrap();
        assert!(first_done < Time::from_us(1450), "the first flow must finish first ({first_done:?})");
        r.rate_samples.iter().find(|s| s.src.0 == 1 && s.time > Time::from_us(1500)).unwrap().rate.0
    };
    assert_eq!(first_rate("0ns"), 100_000_000_000, "forgotten: a fresh state at line rate");
    assert!(first_rate("1ms") < 80_000_000_000, "lingering: the pair's reduced rate");
    // With 1 ms linger, recreate staggering under per_pair gets at most its fair share.
    let fabric = "cc = \"dcqcn\"\ngranularity = \"per_pair\"\ncc_state_linger = \"1ms\"";
    let s = attacker_share(&run(&dumbbell(fabric, &staggered("recreate", ""))));
    assert!(s <= 0.55, "recreate under per_pair with linger: {s:.3}");
}

#[test]
fn tenant_defense_holds_the_victim_share() {
    for cc in ["dcqcn", "hpcc"] {
        let fabric = format!("cc = \"{cc}\"\ndefense = \"tenant\"");
        let s = attacker_share(&run(&dumbbell(&fabric, &parallel(16))));
        assert!(1.0 - s >= 0.45, "{cc} parallel 16 with the defense: victim {:.3}", 1.0 - s);
        let none = attacker_share(&run(&dumbbell(&format!("cc = \"{cc}\""), &parallel(16))));
        assert!(none > 0.85, "{cc} parallel 16 without: attacker {none:.3}");
    }
    let fabric = "cc = \"dcqcn\"\ndefense = \"tenant\"";
    let s = attacker_share(&run(&dumbbell(fabric, &staggered("recreate", ""))));
    assert!(1.0 - s >= 0.45, "dcqcn recreate with the defense: victim {:.3}", 1.0 - s);
}

/// attack-defense's layout (8 hosts per side, 1 us links, 2 ms) under the tenant defense:
/// the victim 0 -> 8 on one QP against the attacker tenant on host 1 sending to 9.
fn defense_scenario(cc: &str, attack: &str) -> String {
    let fabric = format!("cc = \"{cc}\"\ndefense = \"tenant\"");
    two_tenant_dumbbell(8, "2ms", 1_000_000_000, &format!("src = 1\ndst = 9\n{attack}"), &fabric)
}

/// The victim's share of the victim's and attacker's bytes over [0.5, 2) ms.
fn defense_victim_share(cc: &str, attack: &str) -> f64 {
    let b = tenant_bytes(&run(&defense_scenario(cc, attack)), 500, 2000);
    b[1] as f64 / (b[1] + b[2]) as f64
}

#[test]
fn tenant_defense_holds_hpcc_against_staggered_recreate() {
    // The defense's goal, victim >= 0.45, in attack-defense's staggered cell (30 slots, BDP
    // chunks every base RTT) and a second case (16 slots). Before the tenant state paced as
    // one (n clocks at rate / n), HPCC left the victim 0.37 and 0.38 here.
    for qps in [30, 16] {
        let attack = format!("kind = \"staggered_qps\"\nqps = {qps}\nsize = 10000000000\npolicy = \"recreate\"");
        let v = defense_victim_share("hpcc", &attack);
        assert!(v >= 0.45, "hpcc recreate, {qps} slots, with the defense: victim {v:.3}");
    }
    // One tenant state against one QP: two contenders, ½ each, within what HPCC's slow
    // convergence (50 Mb/s of additive increase per round trip) leaves after 1.5 ms. With
    // n clocks the tenant read a lower utilisation than the victim and kept 0.55.
    let v = defense_victim_share("hpcc", "kind = \"parallel_qps\"\nqps = 16\nsize = 1000000000");
    assert!((v - 0.5).abs() <= 0.04, "hpcc parallel 16 with the defense: victim {v:.3}");
    // The shared clock and pauses keep runs deterministic.
    let toml =
        defense_scenario("hpcc", "kind = \"staggered_qps\"\nqps = 30\nsize = 10000000000\npolicy = \"recreate\"");
    let toml = toml.replace("stop_time = \"2ms\"", "stop_time = \"300us\"");
    let (a, b) = (run(&toml), run(&toml));
    assert_eq!((a.records, a.tenant_bins, a.counters), (b.records, b.tenant_bins, b.counters));
}

#[test]
fn same_seed_same_results() {
    let toml =
        dumbbell("cc = \"dcqcn\"", &staggered("recreate", "")).replace("stop_time = \"4ms\"", "stop_time = \"300us\"");
    let (a, b) = (run(&toml), run(&toml));
    assert_eq!(a.records, b.records);
    assert_eq!(a.tenant_bins, b.tenant_bins);
    assert_eq!(a.counters, b.counters);
}

#[test]
fn bad_input_names_file_line_and_field() {
    let base = dumbbell("cc = \"dcqcn\"", &parallel(2));
    let cases: Vec<(String, &str, &str)> = vec![
        (base.replace("qps = 2", "qps = 0"), "traffic[1].qps", "qps = 0"),
        (base.replace("qps = 2", "qps = -3"), "traffic[1].qps", "qps = -3"),
        (base.replace("tenant = \"attacker\"", "tenant = \"mallory\""), "traffic[1].tenant", "mallory"),
        (base.replace("src = 1\n", "src = 0\n"), "traffic[1].src", "src = 0\ndst = 3"),
        (base.replace("name = \"attacker\"", "name = \"victim\""), "tenants[1].name", "name = \"victim\"\nhosts = [1"),
        (base.replace("cc = \"dcqcn\"", "defense = \"moat\""), "fabric.defense", "moat"),
        (
            dumbbell("", &staggered("recreate", "chunk = 0")),
            "traffic[1].chunk",
            "chunk = 0",
        ),
        (
            dumbbell("", &staggered("recreate", "interval = \"0us\"")),
            "traffic[1].interval",
            "interval = \"0us\"",
        ),
        (
            dumbbell("", "kind = \"shuffled_overlay\"\nhosts = [1, 3]\nchunk = 1000\ninterval = \"1us\"\nuntil = \"1ms\""),
            "traffic[1].hosts",
            "hosts = [1, 3]\nchunk",
        ),
        (
            dumbbell("", "kind = \"shuffled_overlay\"\nhosts = [1, 3, 1]\nchunk = 1000\ninterval = \"1us\"\nuntil = \"1ms\""),
            "traffic[1].hosts",
            "hosts = [1, 3, 1]",
        ),
        (
            dumbbell("", "kind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 0.1\nduration = \"10us\"\nsplit = { piece = 0 }"),
            "traffic[1].split.piece",
            "split =",
        ),
        (
            dumbbell("", "kind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 0.1\nduration = \"10us\"\nsplit = { min_size = 1000, piece = 2000 }"),
            "traffic[1].split.piece",
            "split =",
        ),
    ];
    for (toml, field, needle) in cases {
        let e = input_error(&toml);
        let want = format!("bad.toml:{}", line_of(&toml, needle));
        assert!(e.starts_with(&want) && e.contains(field), "want {want} and {field}, got: {e}");
    }
}

/// `per_sl` with HPCC (Table I's column): one state serves a NIC's QPs to every
/// destination, so each ACK's INT hops must be read against the last records of the same
/// path. Host 0 alone sends 80 chunks of 75 KB, alternating between two receivers behind
/// different switch ports, one every 5 µs (QPs that come and go, as the overlay's). Nothing
/// else runs: the only bottleneck is host 0's own link, so the chunks must finish about as
/// fast as the link drains 6 MB (HPCC aims at eta = 95 % of it). Reading one path's
/// switch counters against the other's gave noise utilisations and minimum rates.
#[test]
fn per_sl_hpcc_drains_chunks_to_two_destinations_at_line_rate() {
    let flows: Vec<String> =
        (0..80).map(|i| format!("{{ src = 0, dst = {}, size = 75000, start = \"{}us\" }}", 2 + i % 2, 5 * i)).collect();
    let toml = format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 2\n[[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\ncc = \"hpcc\"\ngranularity = \"per_sl\"\n",
        flows.join(", ")
    );
    let r = run(&toml);
    assert_eq!(r.records.len(), 80);
    let end = r.records.iter().map(|f| f.start + f.fct).max().unwrap();
    // 6 MB at the payload share of 95 % of 100 Gb/s (1000 B of payload per 1048 B on the wire).
    let drain_us = 6e6 * 8.0 / (0.95 * 100e9 * 1000.0 / 1048.0) * 1e6;
    let end_us = end.0 as f64 / 1e6;
    assert!(end_us < 1.25 * drain_us, "last chunk done at {end_us:.0} us, drain time {drain_us:.0} us");
}

/// Host 0 of a 3-host star sends one QP of tenant `victim` to host 1 and 30 QPs of tenant
/// `attacker` to host 2, no CC: host 0's NIC is the only bottleneck (each receiver has its
/// own 100G link, each sender's stream fits it). Returns the victim's share of what host 0
/// delivered over [0.5, 2) ms.
fn victim_share_of_its_nic(arbitration: &str) -> f64 {
    let r = run(&format!(
        r#"
stop_time = "2ms"
[topology]
kind = "star"
hosts = 3
[[tenants]]
name = "victim"
hosts = [0, 1]
[[tenants]]
name = "attacker"
hosts = [0, 2]
[[traffic]]
kind = "flows"
tenant = "victim"
flows = [{{ src = 0, dst = 1, size = 1000000000 }}]
[[traffic]]
kind = "parallel_qps"
tenant = "attacker"
src = 0
dst = 2
qps = 30
size = 100000000
[fabric]
cc = "none"
nic_arbitration = "{arbitration}"
"#
    ));
    let b = tenant_bytes(&r, 500, 2000);
    b[1] as f64 / (b[1] + b[2]) as f64
}

#[test]
fn a_nic_by_tenant_gives_one_qp_half_beside_thirty() {
    // Per-packet round robin over the QPs (the reference's NIC): the victim's one QP gets one
    // turn in 31. By tenant: every other turn. Packets are all full (1000 B), so turns are
    // bytes.
    let per_qp = victim_share_of_its_nic("qp");
    let by_tenant = victim_share_of_its_nic("tenant");
    assert!((per_qp - 1.0 / 31.0).abs() < 0.002, "per QP: {per_qp}");
    assert!((by_tenant - 0.5).abs() < 0.002, "by tenant: {by_tenant}");
    let e = crate::fixtures::build_error(
        "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 1 }]\n\
         [fabric]\nnic_arbitration = \"flow\"\n",
        "n.toml",
    );
    assert!(e.contains("nic_arbitration"), "{e}");
}

#[test]
fn a_nic_by_tenant_is_deterministic_across_threads() {
    // Two senders on a dumbbell, each with a victim QP and 8 attacker QPs by tenant; the
    // parallel engine splits the hosts, and every flow record must match the sequential run.
    let toml = r#"
[topology]
kind = "dumbbell"
hosts_per_side = 2
[[tenants]]
name = "victim"
hosts = [0, 1, 2, 3]
[[tenants]]
name = "attacker"
hosts = [0, 1, 2, 3]
[[traffic]]
kind = "flows"
tenant = "victim"
flows = [{ src = 0, dst = 2, size = 3000000 }, { src = 1, dst = 3, size = 3000000 }]
[[traffic]]
kind = "parallel_qps"
tenant = "attacker"
src = 0
dst = 3
qps = 8
size = 1000000
[[traffic]]
kind = "parallel_qps"
tenant = "attacker"
src = 1
dst = 2
qps = 8
size = 1000000
[fabric]
cc = "dcqcn"
nic_arbitration = "tenant"
"#;
    let one = crate::fixtures::fct_text(&crate::fixtures::run_threads(toml, "d.toml", 1));
    for threads in [2, 4] {
        let many = crate::fixtures::fct_text(&crate::fixtures::run_threads(toml, "d.toml", threads));
        assert_eq!(one, many, "{threads} threads");
    }
}
