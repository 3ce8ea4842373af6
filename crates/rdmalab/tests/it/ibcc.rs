//! InfiniBand congestion control (IBA annex A10, `cc = "ib"`; docs/model/infiniband.md, "InfiniBand
//! congestion control"), driven through the whole simulator. Each test checks a closed form
//! of the mechanism against the simulator's own records (packet trace, rate samples,
//! counters):
//!
//! * a switch marks FECN on every eligible packet (queue above `threshold`, packet of at
//!   least `packet_size`) when `marking_rate` is 0, and on no other;
//! * a source's CCT index is min(k · ccti_increase, ccti_limit) after k BECNs and falls by
//!   one per `ccti_timer` after;
//! * a source at index i spaces its packets by T · (1 + m/2^s) for the entry (s, m);
//! * a 2→1 incast shares the bottleneck within 10 % and keeps it at least 90 % busy;
//! * 1, 2 and 4 threads give identical results.
//!
//! Every run is on the InfiniBand link layer (credits per VL, IB headers, MTU 2048), where
//! annex A10 belongs.

use std::path::PathBuf;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::{Results, StopReason};
use rdmalab::{NodeId, Time};

use crate::fixtures::{self, port_to};

/// The fabric every test runs on.
const FABRIC: &str = "link_layer = \"infiniband\"\ncc = \"ib\"\n";

/// A star of `hosts` hosts at 100 Gb/s with `flows` (TOML inline tables), InfiniBand CC with
/// `params` (`[fabric.cc_params]` lines), and `extra` lines in `[fabric]` and at the top.
fn star_toml(hosts: usize, flows: &str, params: &str, extra: &str, top: &str) -> String {
    format!(
        "{top}\n[topology]\nkind = \"star\"\nhosts = {hosts}\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{flows}]\n\
         [fabric]\n{FABRIC}{extra}\n[fabric.cc_params]\n{params}\n"
    )
}

fn scenario(toml: &str) -> Scenario {
    fixtures::scenario(toml, "ibcc.toml")
}

/// Runs `s` (to its stop time or the end) with its packet trace written to `name`:
/// (results, trace rows as fields).
fn run_traced(s: Scenario, name: &str) -> (Results, Vec<Vec<String>>) {
    let dir = std::env::temp_dir().join(format!("rdmalab-ibcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(name);
    let mut run = Runner::new(s).unwrap();
    run.start_trace(&path).unwrap();
    run.run_to_end();
    let r = run.results().expect("bytes conserved");
    let (_, truncated) = run.finish_trace().unwrap();
    assert!(!truncated, "trace truncated");
    let rows = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let _ = std::fs::remove_file(&path);
    (r, rows)
}

/// Trace columns (sim::trace::COLUMNS).
const TIME: usize = 0;
const EVENT: usize = 1;
const PORT: usize = 3;
const FLOW: usize = 4;
const KIND: usize = 6;
const SEQ: usize = 7;
const WIRE: usize = 9;
const QLEN: usize = 11;

fn num(row: &[String], col: usize) -> u64 {
    row[col].parse().unwrap_or_else(|_| panic!("column {col} of {row:?}"))
}

/// The rows of `event` at port `port`.
fn rows_at<'a>(rows: &'a [Vec<String>], event: &str, port: u32) -> impl Iterator<Item = &'a Vec<String>> + 'a {
    let (event, port) = (event.to_string(), port.to_string());
    rows.iter().filter(move |r| r[EVENT] == event && r[PORT] == port)
}

#[test]
fn marking_rate_zero_marks_every_eligible_packet_and_no_other() {
    // Two line-rate senders (CC inert: a one-entry table keeps them at line rate) hold the
    // receiver's port above the threshold; flows of 48 MTUs + 300 bytes (MTU 2048) end with
    // a 300-byte packet (326 on the wire), below `packet_size`.
    let (threshold, packet_size) = (3000u64, 600u64);
    let flows: Vec<String> = (0..3)
        .flat_map(|i| {
            (1..=2).map(move |src| format!("{{ src = {src}, dst = 0, size = 98604, start = \"{}us\" }}", 3 * i))
        })
        .collect();
    let params = format!("marking_rate = 0\nthreshold = {threshold}\npacket_size = {packet_size}\ncct = [0]");
    // ACKs every 4 packets: a marked packet is still answered at once.
    let s = scenario(&star_toml(3, &flows.join(", "), &params, "ack_interval = 4", "[trace]"));
    let down = port_to(&s.topology, NodeId(3), NodeId(0)).0;
    let (r, rows) = run_traced(s, "marks.csv");
    let key = |row: &Vec<String>| (num(row, FLOW), num(row, SEQ));
    let mut eligible = Vec::new();
    let (mut small, mut short_queue) = (0, 0);
    for row in rows_at(&rows, "dequeue", down).filter(|r| r[KIND] == "data") {
        let (q, w) = (num(row, QLEN), num(row, WIRE));
        match (q > threshold, w >= packet_size) {
            (true, true) => eligible.push(key(row)),
            (true, false) => small += 1,
            _ => short_queue += 1,
        }
    }
    let marked: Vec<_> = rows_at(&rows, "ecn", down).map(key).collect();
    assert!(eligible.len() > 200 && small >= 3 && short_queue >= 1, "{} {small} {short_queue}", eligible.len());
    assert_eq!(marked, eligible, "marked packets are exactly the eligible ones, in order");
    assert_eq!(r.mechanism_count("fecn_marks"), marked.len() as u64);
    assert_eq!(r.mechanism_count("becns"), r.mechanism_count("fecn_marks"), "each FECN returns as one BECN");
    let becn_rows = rows.iter().filter(|r| r[EVENT] == "cnp").count() as u64;
    assert_eq!(becn_rows, r.mechanism_count("becns"), "the trace's BECNs");
    assert_eq!(r.counters.ecn_marks, 0, "RED ECN is off");
}

#[test]
fn cct_index_is_k_increases_clamped_then_falls_one_per_timer() {
    // A long flow and a short one into one receiver: the congestion lasts some 40 µs, well
    // inside one timer period (100 µs), so every BECN comes before the first expiry.
    let (inc, limit, period) = (3u16, 12u16, Time::from_us(100));
    let flows = "{ src = 1, dst = 0, size = 30000000, start = \"0us\" }, \
                 { src = 2, dst = 0, size = 200000, start = \"0us\" }";
    let params = format!("ccti_increase = {inc}\nccti_limit = {limit}\nccti_timer = \"100us\"");
    let mut s = scenario(&star_toml(3, flows, &params, "rate_sample_interval = \"1us\"", "[trace]"));
    s.config.stop_time = Time::from_us(1500);
    let long = s.flows.iter().position(|f| f.src == NodeId(1)).unwrap() as u64;
    let (r, rows) = run_traced(s, "index.csv");
    let becns: Vec<u64> =
        rows.iter().filter(|r| r[EVENT] == "cnp" && num(r, FLOW) == long).map(|r| num(r, TIME)).collect();
    let (first, last) = (Time(becns[0]), Time(*becns.last().unwrap()));
    assert!(becns.len() as u16 * inc > limit && last < first + period, "{} BECNs to {last:?}", becns.len());
    let mut seen_between = false;
    for smp in r.rate_samples.iter().filter(|x| x.flow as u64 == long && !becns.contains(&x.time.0)) {
        let k = becns.iter().filter(|&&t| t <= smp.time.0).count() as u16;
        let expiries = if smp.time >= first + period { ((smp.time - first).0 / period.0) as u16 } else { 0 };
        let want = (k * inc).min(limit).saturating_sub(expiries);
        assert_eq!(smp.ccti, want, "at {:?}: {k} BECNs, {expiries} expiries", smp.time);
        seen_between |= smp.ccti > 0 && smp.ccti < limit && k > 0 && expiries == 0;
    }
    assert!(seen_between, "a sample between two BECNs below the limit");
    let end = r.rate_samples.iter().rfind(|x| x.flow as u64 == long).unwrap();
    assert_eq!(end.ccti, 0, "back to ccti_min by {:?}", end.time);
}

#[test]
fn packets_are_spaced_by_the_current_entrys_delay() {
    // ccti_min = 1 holds the source at entry 1, shift 2 multiplier 5: a delay of 5/4 packet
    // times after each packet, so starts 9/4 packet times apart.
    let flows = "{ src = 1, dst = 0, size = 200000, start = \"0us\" }";
    let s = scenario(&star_toml(2, flows, "cct = [0, \"2:5\"]\nccti_min = 1", "", "[trace]"));
    let up = port_to(&s.topology, NodeId(1), NodeId(2)).0;
    let (_, rows) = run_traced(s, "spacing.csv");
    let sent: Vec<(u64, u64)> =
        rows_at(&rows, "dequeue", up).filter(|r| r[KIND] == "data").map(|r| (num(r, TIME), num(r, WIRE))).collect();
    assert_eq!(sent.len(), 200000usize.div_ceil(2048), "MTU 2048");
    for w in sent.windows(2) {
        let packet_ps = w[0].1 * 8 * 1_000_000_000_000 / 100_000_000_000; // at 100 Gb/s
        let want = packet_ps * 9 / 4;
        assert!((w[1].0 - w[0].0).abs_diff(want) <= 2, "{w:?}: {} ps apart, want {want}", w[1].0 - w[0].0);
    }
}

#[test]
fn two_to_one_incast_shares_fairly_and_keeps_the_bottleneck_busy() {
    // The timer follows the floor rule of docs/model/infiniband.md#choosing-ccti_timer, r_min = P·(marking_rate + 1)/T,
    // with r_min half the fair share: T = 2074·8·11 bits / 25 Gb/s = 7.30 µs (a full IB
    // packet: 2048 bytes of payload and 26 of headers).
    let flows = "{ src = 1, dst = 0, size = 100000000, start = \"0us\" }, \
                 { src = 2, dst = 0, size = 100000000, start = \"0us\" }";
    let mut s = scenario(&star_toml(3, flows, "ccti_timer = \"7301ns\"", "rate_sample_interval = \"10us\"", ""));
    s.config.stop_time = Time::from_ms(3);
    let mut run = Runner::new(s).unwrap();
    run.run_to_end();
    let r = run.results().unwrap();
    let late = |q: usize| -> f64 {
        let v: Vec<f64> = r
            .rate_samples
            .iter()
            .filter(|x| x.flow as usize == q && x.time > Time::from_ms(1))
            .map(|x| x.throughput.0 as f64)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let (a, b) = (late(0), late(1));
    assert!((a - b).abs() <= 0.1 * a.max(b), "shares {a:.3e} and {b:.3e}");
    // Every packet is a full one (2048 bytes of payload, 2074 on the wire).
    let busy = (a + b) * 2074.0 / 2048.0 / 100e9;
    assert!(busy >= 0.9, "bottleneck busy {busy:.3}");
    eprintln!("shares {a:.4e} {b:.4e}, busy {busy:.4}");
    assert!(r.mechanism_count("becns") > 100, "CC acted: {} BECNs", r.mechanism_count("becns"));
}

/// A fat tree under web-search load and an incast, InfiniBand CC, `threads` threads.
fn fat_tree(threads: Option<u32>) -> Results {
    let toml = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
         [[traffic]]\nkind = \"poisson\"\ncdf = \"web_search\"\nload = 0.5\nduration = \"200us\"\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11]\nreceiver = 0\nsize = 300000\n\
         start = \"50us\"\n[fabric]\n{FABRIC}granularity = \"per_sl\"\nrate_sample_interval = \"5us\"\n\
         [fabric.cc_params]\nccti_timer = \"10us\"\n"
    );
    let mut s = scenario(&toml);
    s.config.threads = threads;
    let mut run = Runner::new(s).unwrap();
    assert_eq!(run.run_to_end(), StopReason::Finished);
    run.results().expect("bytes conserved")
}

/// What an IB CC run measured, as text to compare: its FCT records, rate samples (with the
/// CCT index), FECN and BECN counts.
pub(crate) fn ib_cc_outputs(r: &Results) -> String {
    let fct: Vec<String> = r.records.iter().map(|f| format!("{f:?}")).collect();
    let rates: Vec<String> = r.rate_samples.iter().map(|x| format!("{x:?}")).collect();
    format!(
        "{}\n{}\n{} {}",
        fct.join("\n"),
        rates.join("\n"),
        r.mechanism_count("fecn_marks"),
        r.mechanism_count("becns")
    )
}

#[test]
fn results_are_the_same_for_one_two_and_four_threads() {
    let one = fat_tree(Some(1));
    assert!(one.mechanism_count("fecn_marks") > 0 && one.rate_samples.iter().any(|x| x.ccti > 0));
    for n in [2, 4] {
        assert!(ib_cc_outputs(&one) == ib_cc_outputs(&fat_tree(Some(n))), "{n} threads differ");
    }
}

#[test]
fn bad_parameters_name_file_line_and_field() {
    let cases = [
        ("ewma_gain = 0.5", "fabric.cc_params.ewma_gain", "not a parameter of congestion control `ib`"),
        ("u_target = 0.9", "fabric.cc_params.u_target", "not a parameter"),
        ("cct = []", "fabric.cc_params.cct", "no entry"),
        ("cct = [0, 16, 8]", "fabric.cc_params.cct", "not monotone"),
        ("cct = [0, \"4:1\"]", "fabric.cc_params.cct", "entry 1"),
        ("cct = [0, 70000]", "fabric.cc_params.cct", "entry 1"),
        ("marking_rate = 70000", "fabric.cc_params.marking_rate", "[0, 65535]"),
        ("packet_size = -1", "fabric.cc_params.packet_size", "[0, 16320]"),
        ("ccti_increase = 0", "fabric.cc_params.ccti_increase", "[1, 255]"),
        ("ccti_limit = 128", "fabric.cc_params.ccti_limit", "past the table's last entry"),
        ("ccti_min = 20\nccti_limit = 10", "fabric.cc_params.ccti_min", "above ccti_limit"),
        ("ccti_timer = \"0us\"", "fabric.cc_params.ccti_timer", "positive"),
        ("ccti_timer = \"1s\"", "fabric.cc_params.ccti_timer", "16-bit"),
    ];
    for (params, field, msg) in cases {
        let text = star_toml(2, "{ src = 1, dst = 0, size = 1000, start = \"0us\" }", params, "", "");
        let e = fixtures::input_error(&text);
        let key = field.rsplit('.').next().unwrap();
        let line = fixtures::line_of(&text, &format!("{key} ="));
        assert!(e.starts_with(&format!("bad.toml:{line}:")) && e.contains(field) && e.contains(msg), "{params}: {e}");
    }
    // RED ECN asked for beside InfiniBand CC; Blitz's keys must match its fall-back.
    let blitz = |extra: &str, params: &str| {
        format!(
            "[topology]\nkind = \"star\"\nhosts = 2\n[[traffic]]\nkind = \"flows\"\n\
             flows = [{{ src = 1, dst = 0, size = 1000, start = \"0us\" }}]\n[fabric]\n{extra}\n\
             [fabric.cc_params]\n{params}\n"
        )
    };
    let e = fixtures::input_error(&blitz("cc = \"ib\"\necn = true", ""));
    assert!(e.contains("fabric.ecn") && e.contains("FECN"), "{e}");
    let e = fixtures::input_error(&blitz("cc = \"blitz\"", "ccti_timer = \"5us\""));
    assert!(e.contains("fabric.cc_params.ccti_timer") && e.contains("dasr_fallback"), "{e}");
    let e = fixtures::input_error(&blitz("cc = \"blitz\"", "dasr_fallback = \"ib\"\nrp_timer = \"5us\""));
    assert!(e.contains("fabric.cc_params.rp_timer") && e.contains("InfiniBand"), "{e}");
    let e = fixtures::input_error(&blitz("cc = \"blitz\"", "dasr_fallback = \"tcp\""));
    assert!(e.contains("fabric.cc_params.dasr_fallback"), "{e}");
    // Annex A10 on RoCE: refused, naming the field that asked for it.
    let e = fixtures::input_error(&blitz("cc = \"ib\"", ""));
    assert!(e.contains("fabric.cc") && e.contains("link_layer = \"infiniband\""), "{e}");
    let e = fixtures::input_error(&blitz("cc = \"blitz\"", "dasr_fallback = \"ib\""));
    assert!(e.contains("fabric.cc_params.dasr_fallback") && e.contains("link_layer"), "{e}");
}

#[test]
fn blitz_with_the_ib_fallback_marks_fecn_and_throttles_by_the_table() {
    // 4→1 into one receiver: DASR gives each a quarter; the edge port marks no FECN (receiver
    // congestion is DASR's), so the index stays at 0 and no BECN arrives.
    let flows: Vec<String> =
        (1..=4).map(|s| format!("{{ src = {s}, dst = 0, size = 2000000, start = \"0us\" }}")).collect();
    let toml = format!(
        "[topology]\nkind = \"star\"\nhosts = 5\n[[traffic]]\nkind = \"flows\"\nflows = [{}]\n\
         [fabric]\nlink_layer = \"infiniband\"\ncc = \"blitz\"\n[fabric.cc_params]\ndasr_fallback = \"ib\"\n",
        flows.join(", ")
    );
    let r = fixtures::run_finished(scenario(&toml));
    assert_eq!((r.mechanism_count("fecn_marks"), r.mechanism_count("becns"), r.counters.ecn_marks), (0, 0, 0));
    // With the edge rule off, the switch marks FECN at the receiver's port and sources back off.
    let r = fixtures::run_finished(scenario(&format!("{toml}dasr_edge_ecn = true\n")));
    assert!(
        r.mechanism_count("fecn_marks") > 0 && r.mechanism_count("becns") == r.mechanism_count("fecn_marks"),
        "{:?}",
        r.counters
    );
}

#[test]
fn roce_runs_pay_nothing_and_mark_no_fecn() {
    let flows =
        "{ src = 1, dst = 0, size = 1000000, start = \"0us\" }, { src = 2, dst = 0, size = 1000000, start = \"0us\" }";
    let toml = format!(
        "[topology]\nkind = \"star\"\nhosts = 3\n[[traffic]]\nkind = \"flows\"\nflows = [{flows}]\n\
         [fabric]\ncc = \"dcqcn\"\nrate_sample_interval = \"5us\"\n"
    );
    let r = fixtures::run_finished(scenario(&toml));
    assert!(r.counters.ecn_marks > 0);
    assert_eq!((r.mechanism_count("fecn_marks"), r.mechanism_count("becns")), (0, 0));
    assert!(!r.rate_samples.is_empty() && r.rate_samples.iter().all(|x| x.ccti == 0));
}
