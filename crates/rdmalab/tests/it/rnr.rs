//! Receive queues and RNR NAKs (`sim/mech/rnr.rs`, `[rnic]`, `traffic[i].verb`), against
//! closed forms on a two-host star: SEND messages from host 0 to host 1, each a plain flow,
//! started `P` apart on the one connection's receive queue of `recv_queue_depth` WQEs.
//!
//! With the link rate C, delay d, n packets of wire W per message and ACKs of wire A, a
//! message's first packet reaches the responder a = 2W/C + 2d after it leaves, an ACK or
//! NAK comes back in r = 2A/C + 2d, and a message alone completes in
//! F = (n + 1)W/C + 2d + r. A refused first packet costs one round of c = a + r + τ (its
//! NAK back, the timer τ, the packet again). Message k's WQE is free once message k - q's
//! last packet was placed plus the repost delay D, so message k is refused
//! J_k = ⌈(free_k - (s_k + a)) / c⌉⁺ times and completes in F + J_k·c. With the responder's
//! per-message processing T (`recv_processing`), message j's completion is handled at
//! h_j = max(p_j, h_{j-1}) + T (p_j: its last packet placed; one handler per host), and
//! a WQE is back at h_j + D (`processing_form`).

use rdmalab::scenario::Scenario;
use rdmalab::sim::Results;
use rdmalab::{Rate, Time};

use crate::fixtures;

const MTU: u64 = 1000;
/// Packets per message.
const PKTS: u64 = 10;
const DELAY_US: u64 = 1;

/// `n` SEND (or `verb`) flows of `PKTS` packets from host 0 to host 1, `gap` apart, with
/// `[rnic]` given by `rnic` (empty: no section).
fn toml(n: usize, gap: Time, verb: &str, rnic: &str) -> String {
    star_toml(2, n, gap, verb, rnic, |_| 0)
}

/// `n` flows of `PKTS` packets to host 1 of a `hosts`-host star, `gap` apart, flow k from
/// host `src(k)`.
fn star_toml(hosts: u32, n: usize, gap: Time, verb: &str, rnic: &str, src: impl Fn(usize) -> u32) -> String {
    let flows: Vec<String> = (0..n)
        .map(|k| {
            let (s, size, start) = (src(k), PKTS * MTU, k as u64 * gap.0);
            format!("{{ src = {s}, dst = 1, size = {size}, start = \"{start}ps\" }}")
        })
        .collect();
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\nrate = \"100Gbps\"\ndelay = \"{DELAY_US}us\"\n\
         [fabric]\nmtu = {MTU}\ncc = \"none\"\n{rnic}\n\
         [[traffic]]\nkind = \"flows\"\nverb = \"{verb}\"\nflows = [{}]\n",
        flows.join(", ")
    )
}

fn rnic(depth: u32, delay_us: u64, timer: u8, retry: u8) -> String {
    format!(
        "[rnic]\nrecv_queue_depth = {depth}\nrecv_repost_delay = \"{delay_us}us\"\nmin_rnr_timer = {timer}\nrnr_retry = {retry}\n"
    )
}

/// `rnic(depth, 0, timer, 7)` with the responder's per-message processing `proc`.
fn rnic_processing(depth: u32, timer: u8, proc: Time) -> String {
    format!("{}recv_processing = \"{}ps\"\n", rnic(depth, 0, timer, 7), proc.0)
}

fn run(toml: &str) -> (Scenario, Results) {
    let s = fixtures::scenario(toml, "rnr.toml");
    let mut sim = s.clone().simulation().expect("valid scenario");
    sim.run_to_end();
    (s, sim.results().expect("bytes conserved"))
}

/// The closed form's times for scenario `s`: (a, r, F, one message's send time n·W/C).
fn wire_times(s: &Scenario) -> (Time, Time, Time, Time) {
    let c = &s.config;
    let rate = Rate(100_000_000_000);
    let w = c.timing.tx_time(rate, c.data_wire(MTU as u32) as u64);
    let ack = c.timing.tx_time(rate, c.ack_wire() as u64);
    let d = Time::from_us(DELAY_US);
    let a = Time(2 * w.0 + 2 * d.0);
    let r = Time(2 * ack.0 + 2 * d.0);
    let f = Time((PKTS + 1) * w.0 + 2 * d.0 + r.0);
    (a, r, f, Time(PKTS * w.0))
}

/// The closed form for `n` messages `gap` apart, queue depth `q`, repost delay `big_d`,
/// timer `tau`: each message's RNR NAKs and FCT. Asserts that no two messages' sends
/// overlap at host 0, which the form assumes.
fn closed_form(s: &Scenario, n: usize, gap: Time, q: usize, big_d: Time, tau: Time) -> Vec<(u64, Time)> {
    let (a, r, f, send) = wire_times(s);
    let cyc = a.0 + r.0 + tau.0;
    let mut placed_last = Vec::new(); // when each message's last packet was placed
    let mut sends: Vec<u64> = Vec::new(); // every send's start, all messages
    let mut out = Vec::new();
    for k in 0..n {
        let start = k as u64 * gap.0;
        let free = if k < q { 0 } else { placed_last[k - q] + big_d.0 };
        let first = start + a.0;
        let j = if first >= free { 0 } else { (free - first).div_ceil(cyc) };
        for i in 0..=j {
            sends.push(start + i * cyc);
        }
        let resend = start + j * cyc;
        placed_last.push(resend + f.0 - r.0);
        out.push((j, Time(f.0 + j * cyc)));
    }
    assert_sends_apart(sends, send);
    out
}

/// Two sends apart by twice a message's send time neither share host 0's port nor meet in a
/// queue (each hop is as fast as that port), as the forms assume.
fn assert_sends_apart(mut sends: Vec<u64>, send: Time) {
    sends.sort();
    assert!(sends.windows(2).all(|w| w[1] - w[0] > 2 * send.0), "the form assumes sends apart: {sends:?}");
}

/// The form with the responder's per-message processing `proc` (repost delay 0): a WQE
/// goes back at h_j = max(p_j, h_{j'}) + T, j' the message placed before j, and whichever
/// waiting message's first packet arrives first after a WQE is back takes it (a later
/// message can overtake an earlier one that is waiting out its timer). Each WQE, earliest
/// back first: the winner's attempt t = s + a + J·c, placed at t + F - r - a.
fn processing_form(s: &Scenario, n: usize, gap: Time, q: usize, tau: Time, proc: Time) -> Vec<(u64, Time)> {
    let (a, r, f, send) = wire_times(s);
    let cyc = a.0 + r.0 + tau.0;
    let first = |k: usize| k as u64 * gap.0 + a.0;
    let mut back: Vec<u64> = vec![0; q]; // when each WQE not yet handed out is back
    let mut out = vec![(0, Time::ZERO); n];
    let (mut waiting, mut last_placed, mut last_handled) = ((0..n).collect::<Vec<_>>(), 0, 0);
    let mut sends = Vec::new();
    while !waiting.is_empty() {
        back.sort_unstable();
        let free = back.remove(0);
        let naks = |k: usize| if first(k) >= free { 0 } else { (free - first(k)).div_ceil(cyc) };
        let (i, &k) = waiting.iter().enumerate().min_by_key(|(_, &k)| first(k) + naks(k) * cyc).unwrap();
        waiting.remove(i);
        let j = naks(k);
        let placed = first(k) + j * cyc + f.0 - r.0 - a.0;
        assert!(placed > last_placed, "the form assumes placements in the order WQEs are handed out");
        last_placed = placed;
        last_handled = placed.max(last_handled) + proc.0;
        back.push(last_handled);
        sends.extend((0..=j).map(|i| k as u64 * gap.0 + i * cyc));
        out[k] = (j, Time(f.0 + j * cyc));
    }
    assert_sends_apart(sends, send);
    out
}

fn fcts(r: &Results) -> Vec<(u32, Time)> {
    let mut v: Vec<(u32, Time)> = r.records.iter().map(|x| (x.flow, x.fct)).collect();
    v.sort();
    v
}

/// Every message completed with the closed form's FCT, and the run sent its RNR NAKs;
/// returns their number.
fn assert_follows(res: &Results, want: &[(u64, Time)], q: usize) -> u64 {
    let got = fcts(res);
    assert_eq!(got.len(), want.len(), "every message completes (q {q})");
    for (k, (naks, fct)) in want.iter().enumerate() {
        assert_eq!(got[k].1, *fct, "message {k}'s FCT (q {q}, {naks} RNR NAKs)");
    }
    let total: u64 = want.iter().map(|w| w.0).sum();
    assert_eq!(res.mechanism_count("rnr_naks"), total, "q {q}");
    total
}

#[test]
fn a_send_waits_out_rnr_naks_until_its_wqe_is_reposted() {
    // D = 30 µs, τ = code 1 (0.01 ms), messages 3 µs apart: message 1 finds the one WQE
    // still with message 0, message 2 the one message 1 took.
    for (q, n) in [(1usize, 3usize), (2, 4)] {
        let gap = Time::from_us(3);
        let (s, res) = run(&toml(n, gap, "send", &rnic(q as u32, 30, 1, 7)));
        let want = closed_form(&s, n, gap, q, Time::from_us(30), Time::from_us(10));
        assert!(want.iter().filter(|w| w.0 >= 2).count() >= 1, "the case exercises retries: {want:?}");
        let total = assert_follows(&res, &want, q);
        // One NAK per refusal: the packets behind a refused one draw no NACK of their own.
        assert_eq!(res.counters.nacks, total, "q {q}");
        // Per flow, through the mechanism's table (flows that met none are absent).
        let rows: Vec<(u64, u64)> =
            want.iter().enumerate().filter(|w| w.1 .0 > 0).map(|(k, w)| (k as u64, w.0)).collect();
        let flows = fixtures::table_u64(&res, "rnr", "flow");
        let naks = fixtures::table_u64(&res, "rnr", "rnr_naks");
        assert_eq!(flows.into_iter().zip(naks).collect::<Vec<_>>(), rows, "q {q}");
    }
}

#[test]
fn a_wqe_reposted_in_time_costs_nothing() {
    // D = 0: message 0's WQE is back when its last packet lands (2.92 µs), before message
    // 1's first packet (3 µs + a); every message completes in F.
    let gap = Time::from_us(3);
    let (s, res) = run(&toml(3, gap, "send", &rnic(1, 0, 1, 7)));
    let (_, _, f, _) = wire_times(&s);
    assert!(fcts(&res).iter().all(|x| x.1 == f), "{:?} vs {f:?}", fcts(&res));
    assert_eq!(res.mechanism_count("rnr_naks"), 0);
}

#[test]
fn rnr_retry_fails_the_wr_after_that_many_naks() {
    // Message 1 meets J = 2 RNR NAKs (as in the first test). rnr_retry = 0 fails it at the
    // first, 1 at the second; 2 lets it through.
    let gap = Time::from_us(3);
    let probe = fixtures::scenario(&toml(2, gap, "send", &rnic(1, 30, 1, 7)), "rnr.toml");
    let j = closed_form(&probe, 2, gap, 1, Time::from_us(30), Time::from_us(10))[1].0;
    assert_eq!(j, 2);
    for retry in 0..=2u8 {
        let (_, res) = run(&toml(2, gap, "send", &rnic(1, 30, 1, retry)));
        let fails = (retry as u64) < j;
        assert_eq!(res.mechanism_count("rnr_naks"), j.min(retry as u64 + 1), "rnr_retry {retry}");
        assert_eq!(res.counters.wr_failures, fails as u64, "rnr_retry {retry}");
        assert_eq!(res.mechanism_count("rnr_retry_exceeded"), fails as u64, "rnr_retry {retry}");
        // The failed plain flow is given up (as after the retry limit); message 0 is not.
        assert_eq!(res.unreachable.iter().map(|u| u.flow).collect::<Vec<_>>(), if fails { vec![1] } else { vec![] });
        // ... with its own status, not the link failures' "unreachable".
        assert!(res.unreachable.iter().all(|u| u.why == rdmalab::sim::GaveUp::RnrRetryExceeded));
        assert_eq!(res.records.len(), 2 - fails as usize);
    }
}

#[test]
fn writes_and_runs_without_a_receive_queue_are_unchanged() {
    let gap = Time::from_us(3);
    let plain = fixtures::fct_text(&run(&toml(3, gap, "write", "")).1);
    // WRITEs consume no receive WQE, however few are posted.
    let (_, w) = run(&toml(3, gap, "write", &rnic(1, 30, 1, 0)));
    assert_eq!(fixtures::fct_text(&w), plain);
    assert_eq!(w.mechanism_count("rnr_naks"), 0);
    // SENDs without `recv_queue_depth` never run short: the same as WRITEs.
    let (_, s) = run(&toml(3, gap, "send", "[rnic]\nmin_rnr_timer = 1\n"));
    assert_eq!(fixtures::fct_text(&s), plain);
    assert!(s.table("rnr").is_none(), "no mechanism, no table");
}

#[test]
fn bad_settings_name_their_field() {
    let gap = Time::from_us(3);
    for (section, field) in [
        ("[rnic]\nrecv_queue_depth = 0\n", "rnic.recv_queue_depth"),
        ("[rnic]\nrecv_queue_depth = 1\nmin_rnr_timer = 32\n", "rnic.min_rnr_timer"),
        ("[rnic]\nrnr_retry = 8\n", "rnic.rnr_retry"),
        ("[rnic]\nrecv_repost_delay = \"fast\"\n", "rnic.recv_repost_delay"),
        ("[rnic]\nrecv_queue_depth = 1\nrecv_processing = \"slow\"\n", "rnic.recv_processing"),
    ] {
        let e = fixtures::input_error(&toml(2, gap, "send", section));
        assert!(e.contains(field), "{e}");
    }
    let e = fixtures::input_error(&toml(2, gap, "read", ""));
    assert!(e.contains("traffic[0].verb") && e.contains("write, send"), "{e}");
    // With IRN, the receive-queue key is refused at its line, the shared queue's too.
    let irn =
        toml(2, gap, "send", &rnic(1, 0, 1, 7)).replace("cc = \"none\"", "cc = \"none\"\nloss_recovery = \"irn\"");
    for (from, key) in [("recv_queue_depth", "recv_queue_depth"), ("recv_queue_depth", "srq_depth")] {
        let text = irn.replace(from, key);
        let e = fixtures::input_error(&text);
        let want = format!("bad.toml:{}: field `rnic.{key}`: ", fixtures::line_of(&text, key));
        assert!(e.starts_with(&want) && e.contains("loss_recovery = \"irn\""), "want {want}: {e}");
    }
}

#[test]
fn the_parallel_engine_gives_the_same_naks_and_fcts() {
    // The responder's queue lives in the receiver's partition, the requester's count in the
    // sender's: the two hosts in two partitions (the switch with the sender) must not move a
    // thing.
    let t = toml(4, Time::from_us(3), "send", &rnic(2, 30, 1, 7));
    let (_, one) = run(&t);
    let mut s = fixtures::scenario(&t, "rnr.toml");
    s.config.threads = Some(2);
    s.config.partition_map = Some(vec![0, 1, 0]);
    let mut par = rdmalab::sim::parallel::Runner::new(s).unwrap();
    assert_eq!(par.run_to_end(), rdmalab::sim::StopReason::Finished);
    let two = par.results().expect("bytes conserved");
    assert!(one.mechanism_count("rnr_naks") > 0);
    assert_eq!(two.mechanism_count("rnr_naks"), one.mechanism_count("rnr_naks"));
    assert_eq!(fixtures::fct_text(&two), fixtures::fct_text(&one));
    assert_eq!(fixtures::table_u64(&two, "rnr", "flow"), fixtures::table_u64(&one, "rnr", "flow"));
    assert_eq!(fixtures::table_u64(&two, "rnr", "rnr_naks"), fixtures::table_u64(&one, "rnr", "rnr_naks"));
}

/// `n` SEND flows to host 1 of a three-host star, `gap` apart, from hosts 0 and 2 in turn
/// (two connections).
fn toml_two_senders(n: usize, gap: Time, rnic: &str) -> String {
    star_toml(3, n, gap, "send", rnic, |k| if k % 2 == 0 { 0 } else { 2 })
}

#[test]
fn a_shared_receive_queue_serves_every_connection_as_one_queue() {
    // Messages from hosts 0 and 2 in turn, 3 µs apart, D = 30 µs, τ = 10 µs. With one SRQ of
    // q WQEs at host 1 they draw on one queue in arrival order, as one connection's messages
    // would: the one-connection closed form holds message by message. With a queue of q per
    // connection each connection's messages are 6 µs apart and fewer are refused.
    let gap = Time::from_us(3);
    for (q, n) in [(1usize, 4usize), (2, 5)] {
        let srq = format!("[rnic]\nsrq_depth = {q}\nrecv_repost_delay = \"30us\"\nmin_rnr_timer = 1\n");
        let (s, shared) = run(&toml_two_senders(n, gap, &srq));
        let want = closed_form(&s, n, gap, q, Time::from_us(30), Time::from_us(10));
        let total = assert_follows(&shared, &want, q);
        let own = format!("[rnic]\nrecv_queue_depth = {q}\nrecv_repost_delay = \"30us\"\nmin_rnr_timer = 1\n");
        let (_, per_connection) = run(&toml_two_senders(n, gap, &own));
        assert!(per_connection.mechanism_count("rnr_naks") < total, "q {q}: a queue per connection is deeper in all");
    }
    let both = toml_two_senders(2, gap, "[rnic]\nrecv_queue_depth = 1\nsrq_depth = 1\n");
    let e = fixtures::input_error(&both);
    assert!(e.contains("rnic.srq_depth") && e.contains("not both"), "{e}");
}

#[test]
fn the_requesters_timeout_and_retry_count_in_verbs_encoding_set_rto_and_retry_limit() {
    // `[rnic] timeout = 8` is 4.096 µs · 2^8 = 1,048.576 µs, `retry_cnt = 2` two go-back
    // rounds: a lossy link's run under them is the run under `fabric.rto` and
    // `fabric.retry_limit` at those values, timeouts and failures included.
    let lossy = |extra_fabric: &str, rnic: &str| {
        toml(6, Time::from_us(3), "write", rnic)
            .replace("cc = \"none\"", &format!("cc = \"none\"\nerror_rate = 0.02\n{extra_fabric}"))
    };
    let (_, verbs) = run(&lossy("", "[rnic]\ntimeout = 8\nretry_cnt = 2\n"));
    let (_, fabric) = run(&lossy("rto = \"1048576ns\"\nretry_limit = 2", ""));
    assert!(fabric.counters.timeouts > 0, "the case exercises the timer");
    assert_eq!(fixtures::fct_text(&verbs), fixtures::fct_text(&fabric));
    assert_eq!(
        (verbs.counters.timeouts, verbs.counters.wr_failures),
        (fabric.counters.timeouts, fabric.counters.wr_failures)
    );
    let s = fixtures::scenario(&lossy("", "[rnic]\ntimeout = 0\nretry_cnt = 0\n"), "rnr.toml");
    assert_eq!((s.config.rto, s.config.retry_limit), (None, Some(0)), "0: no timer; no retry");
    for (fabric_key, rnic, field) in
        [("rto = \"1ms\"", "timeout = 8", "rnic.timeout"), ("retry_limit = 3", "retry_cnt = 3", "rnic.retry_cnt")]
    {
        let e = fixtures::input_error(&lossy(fabric_key, &format!("[rnic]\n{rnic}\n")));
        assert!(e.contains(field) && e.contains("once"), "{e}");
    }
    let e = fixtures::input_error(&lossy("", "[rnic]\ntimeout = 32\n"));
    assert!(e.contains("rnic.timeout"), "{e}");
}

#[test]
fn completions_handled_one_at_a_time_give_wqes_back_one_per_processing_time() {
    // T = 20 µs of processing per message, messages 3 µs apart, D = 0, τ = 10 µs: without T
    // every WQE is back before the next message (`a_wqe_reposted_in_time_costs_nothing`);
    // with it, the WQEs come back one per T after the first completion, and every FCT
    // follows the form.
    let (gap, proc) = (Time::from_us(3), Time::from_us(20));
    for (q, n) in [(1usize, 4usize), (2, 5)] {
        let (s, res) = run(&toml(n, gap, "send", &rnic_processing(q as u32, 1, proc)));
        let want = processing_form(&s, n, gap, q, Time::from_us(10), proc);
        assert!(want.iter().any(|w| w.0 > 0), "the case meets RNR NAKs: {want:?}");
        assert_follows(&res, &want, q);
        let (_, none) = run(&toml(n, gap, "send", &rnic_processing(q as u32, 1, Time::ZERO)));
        assert_eq!(none.mechanism_count("rnr_naks"), 0, "q {q}: no processing, no RNR NAK");
    }
}

#[test]
fn processing_causes_rnr_exactly_when_a_message_outlasts_the_gap() {
    // One WQE, two messages P apart, D = 0: message 1's first packet (at P + a) finds the WQE
    // iff message 0's completion was handled by then, at p_0 + T = F - r + T. So the bound is
    // T* = P + a - (F - r): at T* nothing changes (FCTs are F), one picosecond more refuses it.
    let gap = Time::from_us(3);
    let probe = fixtures::scenario(&toml(2, gap, "send", ""), "rnr.toml");
    let (a, r, f, _) = wire_times(&probe);
    let bound = Time(gap.0 + a.0 - (f.0 - r.0));
    let (_, at) = run(&toml(2, gap, "send", &rnic_processing(1, 1, bound)));
    assert_eq!(at.mechanism_count("rnr_naks"), 0);
    assert!(fcts(&at).iter().all(|x| x.1 == f), "{:?} vs {f:?}", fcts(&at));
    let over = Time(bound.0 + 1);
    let (s, past) = run(&toml(2, gap, "send", &rnic_processing(1, 1, over)));
    let want = processing_form(&s, 2, gap, 1, Time::from_us(10), over);
    assert_eq!(want[1].0, 1);
    assert_follows(&past, &want, 1);
}

#[test]
fn a_run_waiting_on_a_long_repost_or_processing_is_not_stalled() {
    // A 300 ms repost delay (or 300 ms of processing) keeps message 1 out for longer than
    // the stall window (100 ms): its RNR NAKs and timers (code 18: 5.12 ms) are the run
    // waiting on the responder, so it finishes, with the closed form's FCT.
    let gap = Time::from_us(3);
    let tau = Time::from_us(5120);
    for rnic_keys in [rnic(1, 300_000, 18, 7), rnic_processing(1, 18, Time::from_ms(300))] {
        let s = fixtures::scenario(&toml(2, gap, "send", &rnic_keys), "rnr.toml");
        let mut sim = s.clone().simulation().expect("valid scenario");
        let stop = sim.run_to_end();
        let res = sim.results().expect("bytes conserved");
        assert_eq!(stop, rdmalab::sim::StopReason::Finished, "{:?}", res.stall_cause);
        let (j, fct) = closed_form(&s, 2, gap, 1, Time::from_ms(300), tau)[1];
        assert!(j > 20, "{j} RNR NAKs");
        assert_eq!(res.mechanism_count("rnr_naks"), j, "{rnic_keys}");
        // One message handled at once takes T from its completion: the WQE is back when a
        // repost delay of T would bring it back.
        assert_eq!(fcts(&res)[1].1, fct, "{rnic_keys}");
    }
}
