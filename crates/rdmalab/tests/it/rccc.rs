//! Receiver-credit congestion control (`cc = "rccc"`, `"nscc+rccc"`: `cc::rccc`,
//! `sim::mech::rccc`) through the whole simulator, against closed forms: one flow's FCT on
//! an idle path, with and without a stall for credit; an N→1 incast at its receiver link's
//! bound with even shares; the credit granted equal to what was asked; the same outputs on
//! 1, 2 and 4 threads; bad keys refused by name.

use rdmalab::sim::Results;

use super::fixtures::{input_error, run_finished, run_threads, scenario};

/// 100 Gb/s: picoseconds per byte.
const PS_PER_BYTE: u64 = 80;
/// Link delay, ps.
const D: u64 = 1_000_000;

/// A star of `hosts` hosts, 100 Gb/s, 1 µs links, 1000-byte packets; UET flows `flows`
/// (TOML inline tables), `[fabric]` with `cc` and the lines `fabric`.
fn star(hosts: usize, flows: &[String], cc: &str, fabric: &str) -> String {
    format!(
        "seed = 3\n[topology]\nkind = \"star\"\nhosts = {hosts}\nrate = \"100Gbps\"\ndelay = \"1us\"\n\n\
         [[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{}]\n\n\
         [fabric]\ncc = \"{cc}\"\nmtu = 1000\n{fabric}\n",
        flows.join(", ")
    )
}

fn flow(src: usize, dst: usize, size: u64) -> String {
    format!("{{ src = {src}, dst = {dst}, size = {size} }}")
}

/// One flow of `n` full packets (1000 B of payload, `w` = 1048 B on the wire, `T` = w × 80 ps
/// each) from host 0 to host 1 through one switch, ACKs of `a` bytes.
///
/// Without RCCC (tests/it/uet.rs) the FCT is `(n + 1) T + 2 a × 80 + 4 d`: the last packet
/// leaves the sender at `n T`, crosses the switch (`T + 2 d`), its ACK comes back
/// (`2 a × 80 + 2 d`).
///
/// Under RCCC the sender sends its `I` packets of initial credit at line rate. The receiver
/// hears the first packet at `t_r = 2 T + 2 d` and its pacer grants at once: the credit
/// packet reaches the sender at `t_c = t_r + 2 a × 80 + 2 d`. From then on a grant of `k`
/// packets reaches it every `k T` (the pacer's spacing is the receiver link's time for them),
/// exactly as fast as the sender spends them, so the sender never waits again. It waits once,
/// from `I T` to `t_c`, when `I T < t_c`:
///
///   stall = max(0, t_c − I T) = max(0, (2 − I) T + 2 a × 80 + 4 d),
///
/// and the FCT is the one without RCCC plus the stall. The default initial credit is the
/// path's bandwidth-delay product, 53 packets here, past the 50 that make the stall vanish:
/// RCCC adds nothing to an idle path's first RTT. A credit packet may find the receiver's
/// port busy with an ACK (one ACK every four packets), which delays it by up to one ACK's
/// serialisation, once: the sender then lags the grants by that much and never waits again.
#[test]
fn one_flow_on_an_idle_path_waits_only_for_its_first_credit() {
    let n = 1000u64;
    for (initial, cc) in [(None, "rccc"), (Some(2u64), "rccc"), (Some(8), "rccc"), (None, "nscc+rccc")] {
        let fabric = initial.map_or(String::new(), |i| format!("[fabric.rccc]\ninitial_packets = {i}\n"));
        let s = scenario(&star(2, &[flow(0, 1, n * 1000)], cc, &fabric), "rccc.toml");
        let (hdr, a) = (s.config.header_bytes as u64, s.config.ack_wire() as u64);
        let r = run_finished(s);
        let t = (1000 + hdr) * PS_PER_BYTE;
        let plain = (n + 1) * t + 2 * a * PS_PER_BYTE + 4 * D;
        let fct = r.records[0].fct.0;
        // The initial credit: what the flow sent without a grant (the default's is the BDP).
        let i = n - r.mechanism_counters.get("rccc_granted_packets");
        assert_eq!(i, initial.unwrap_or(i), "{cc}: the initial credit is the key's");
        let t_c = 2 * t + 2 * a * PS_PER_BYTE + 4 * D;
        let stall = t_c.saturating_sub(i * t);
        assert!(
            plain + stall <= fct && fct <= plain + stall + a * PS_PER_BYTE,
            "{cc}, initial {initial:?}: FCT {fct} ps, closed form {} ps",
            plain + stall
        );
        if initial.is_none() {
            assert!(i * t >= t_c, "{cc}: the BDP ({i} packets) covers the wait for the first credit");
            assert_eq!(fct, plain, "{cc}: one BDP of initial credit, no wait");
        }
        assert_eq!(r.counters.payload_bytes_delivered, n * 1000);
    }
}

/// The default initial credit on this star (one BDP of a host-to-host path, in packets):
/// what a lone flow sends without a grant.
fn default_initial() -> u64 {
    let r = run_finished(scenario(&star(2, &[flow(0, 1, 1_000_000)], "rccc", ""), "rccc.toml"));
    1000 - r.mechanism_counters.get("rccc_granted_packets")
}

/// `senders` hosts each send `size` bytes to one receiver (host 0) at once over a lossy
/// fabric that trims past `threshold_kb` KB, under `cc`.
///
/// UET's timeout is htsim's driver's rule (`main_uec.cpp`: 15 µs plus six times a full
/// queue's drain time at the link rate): a packet that waits in a full queue, and then for
/// its coalesced ACK, is not taken for lost (UET times each packet from its send time).
fn incast_text(senders: usize, size: u64, cc: &str, threshold_kb: u64) -> String {
    let flows: Vec<String> = (1..=senders).map(|s| flow(s, 0, size)).collect();
    let rto_ns = 15_000 + 6 * threshold_kb * 1000 * 8 / 100; // bits at 100 Gb/s: ns
    let fabric = format!(
        "lossless = false\n[fabric.uet]\nrto = \"{rto_ns}ns\"\n[fabric.trimming]\nthreshold_kb = {threshold_kb}\n"
    );
    star(senders + 1, &flows, cc, &fabric)
}

/// The receiver link's bound for `senders` flows of `size` bytes: every byte on the wire
/// (payload and headers) through the receiver's 100 Gb/s link, plus one base RTT (a
/// packet's two hops and its ACK's: `2 T + 2 a × 80 + 4 d`).
fn link_bound(senders: u64, size: u64, hdr: u64, a: u64) -> u64 {
    let packets = senders * size.div_ceil(1000);
    let t = (1000 + hdr) * PS_PER_BYTE;
    packets * t + 2 * t + 2 * a * PS_PER_BYTE + 4 * D
}

/// An N→1 incast under RCCC, N = 8 and 32, 1 MB each, no PFC, trimming past 1 MB of queue.
///
/// - **The bound.** The last flow completes within 5 % of the receiver link's bound (every
///   byte through the link plus one base RTT): the senders' initial credit (one BDP each, N
///   BDPs together) fills the link from the first packet's arrival, and from the first grant
///   on the receiver's pacer keeps it full, granting at the link's own rate.
/// - **Trims.** The initial credits arrive together: N BDPs (`I` = 52 packets each) at line
///   rate from N ports while the link drains one, so the queue would end the first RTT at
///   (N − 1) I packets (364 for N = 8, 1612 for 32); afterwards the grants arrive at the rate
///   the link drains and the queue stays where it is. The threshold, 1,024,000 bytes, holds
///   Q = 977 packets of 1048 B: N = 8 never trims; N = 32 trims the excess E = (N − 1) I − Q
///   = 635 packets, and a little more because each trimmed header (h = 48 B, strict
///   priority) takes the link from the data for h / w of a packet time: E / (1 − h / w) =
///   665.5. Allowed: one grant (4 packets) that the first connection granted spends inside
///   its burst, and a packet at either end of the drain. Measured: 0 and 668, every one of
///   them in the first 8 µs; the resends ride on credit granted for the NACKs.
/// - **Shares.** The pacer grants four packets to each sender in turn and all senders ask
///   for the same total. The first request heard is granted at once and again before the
///   last first requests arrive (they come a packet time apart through the one link), so
///   that connection runs up to two grants ahead; any other two stay within one grant of each
///   other. So all complete within two rounds of grants (2 × N × 4 packet times) of each
///   other, plus a packet time per trim for N = 32 (a resend waits for its connection's turn).
///   Measured for N = 8: the first flow 48 packet times before the second, the others 4
///   apart.
#[test]
fn an_incast_completes_at_the_receiver_links_bound_with_even_shares() {
    let size = 1_000_000u64;
    for senders in [8u64, 32] {
        let s = scenario(&incast_text(senders as usize, size, "rccc", 1024), "rccc.toml");
        let (hdr, a) = (s.config.header_bytes as u64, s.config.ack_wire() as u64);
        let r = run_finished(s);
        assert_eq!(r.records.len(), senders as usize);
        let bound = link_bound(senders, size, hdr, a);
        let last = r.records.iter().map(|f| f.fct.0).max().unwrap();
        let first = r.records.iter().map(|f| f.fct.0).min().unwrap();
        let trims = r.mechanism_counters.get("trims");
        eprintln!(
            "N {senders}: last {last} first {first} bound {bound} ({:.4}) trims {trims} credits {} granted {} peak {}",
            last as f64 / bound as f64,
            r.mechanism_counters.get("rccc_credits"),
            r.mechanism_counters.get("rccc_granted_packets"),
            r.mechanism_counters.get("rccc_peak_senders"),
        );
        assert!(last >= bound - 2 * (1000 + hdr) * PS_PER_BYTE, "N {senders}: faster than the link: {last} < {bound}");
        assert!((last as f64) <= 1.05 * bound as f64, "N {senders}: {last} ps against the bound {bound} ps");
        let t = (1000 + hdr) * PS_PER_BYTE;
        let bdp_packets = default_initial();
        let w = 1000 + hdr;
        let q = 1_024_000 / w;
        let excess = ((senders - 1) * bdp_packets).saturating_sub(q) as f64;
        let predicted = excess / (1.0 - hdr as f64 / w as f64);
        assert!(
            (trims as f64 - predicted).abs() <= 4.0 + 2.0,
            "N {senders}: {trims} trims, the first RTT's excess predicts {predicted:.1}"
        );
        let lead = (senders - 1).div_ceil(4) + 1; // grants the first connection may run ahead
        let spread = lead * (senders - 1) * 4 * t + trims * t;
        eprintln!("N {senders}: spread {} packet times, bound {}", (last - first) / t, spread / t);
        assert!(last - first <= spread, "N {senders}: completions spread {} ps", last - first);
        // Credit asked, credit granted: each flow's packets beyond its initial credit, and
        // one resend per NACK.
        let asked = senders * (size / 1000 - bdp_packets) + r.counters.nacks;
        assert_eq!(r.mechanism_counters.get("rccc_granted_packets"), asked, "N {senders}");
        assert!(r.mechanism_counters.get("rccc_peak_senders") <= senders, "one place per connection");
        assert_eq!(r.counters.timeouts, 0);
        assert_eq!(r.counters.payload_bytes_delivered, senders * size);
    }
}

/// NSCC's window and the receiver's credit together: the incast still completes within 5 %
/// of the link's bound (the credit alone holds the queue; NSCC's window only adds a limit).
#[test]
fn nscc_with_rccc_completes_an_incast_at_the_bound() {
    let (senders, size) = (8u64, 1_000_000u64);
    let s = scenario(&incast_text(senders as usize, size, "nscc+rccc", 1024), "rccc.toml");
    let (hdr, a) = (s.config.header_bytes as u64, s.config.ack_wire() as u64);
    let r = run_finished(s);
    let bound = link_bound(senders, size, hdr, a);
    let last = r.records.iter().map(|f| f.fct.0).max().unwrap();
    eprintln!("nscc+rccc: last {last} bound {bound} trims {}", r.mechanism_counters.get("trims"));
    assert!((last as f64) <= 1.05 * bound as f64, "{last} ps against the bound {bound} ps");
    assert_eq!(r.counters.payload_bytes_delivered, senders * size);
}

/// 1, 2 and 4 threads give the same FCT file and counters, on an incast that trims.
#[test]
fn rccc_runs_are_the_same_for_any_thread_count() {
    let text = incast_text(12, 300_000, "rccc", 64);
    let one = run_threads(&text, "rccc.toml", 1);
    assert!(one.mechanism_counters.get("trims") > 0, "the case trims");
    for t in [2, 4] {
        let mut r: Results = run_threads(&text, "rccc.toml", t);
        r.counters.events = one.counters.events; // the engine's own events differ by design
        assert_eq!(super::fixtures::fct_text(&r), super::fixtures::fct_text(&one), "{t} threads");
        assert_eq!(format!("{:?}", r.counters), format!("{:?}", one.counters), "{t} threads");
        assert_eq!(format!("{:?}", r.mechanism_counters), format!("{:?}", one.mechanism_counters), "{t} threads");
    }
}

#[test]
fn bad_rccc_keys_are_refused_by_their_full_name() {
    let uet = [flow(0, 1, 1000)];
    for (cc, fabric, field) in [
        ("rccc", "[fabric.rccc]\ninitial_packets = 0\n", "fabric.rccc.initial_packets"),
        ("rccc", "[fabric.rccc]\ngrant_packets = 0\n", "fabric.rccc.grant_packets"),
        ("rccc", "[fabric.rccc]\ngrant = 4\n", "grant"),
        ("nscc", "[fabric.rccc]\ngrant_packets = 2\n", "fabric.rccc"),
        ("dcqcn+rccc", "", "fabric.cc"),
        ("rccc", "defense = \"tenant\"\n", "fabric.defense"),
    ] {
        let e = input_error(&star(2, &uet, cc, fabric));
        assert!(e.contains(field) && e.contains("bad.toml"), "{cc} {fabric}: {e}");
    }
    // RCCC is UET's: a flow of another transport is refused, naming it.
    let rc = star(2, &uet, "rccc", "").replace("transport = \"uet\"", "transport = \"rc\"");
    let e = super::fixtures::build_error(&rc, "bad.toml");
    assert!(e.contains("fabric.cc") && e.contains("\"rc\""), "{e}");
}

/// A run without RCCC carries none of it: no credit packet, no RCCC count, and a lone UET
/// flow's FCT is the same with `cc = "none"` as under RCCC with its default initial credit
/// (which adds nothing on an idle path).
#[test]
fn a_run_without_rccc_has_none_of_it() {
    let text = star(2, &[flow(0, 1, 1_000_000)], "none", "");
    let off = run_finished(scenario(&text, "rccc.toml"));
    assert!(
        off.mechanism_counters.conditional.iter().all(|(n, _)| !n.starts_with("rccc")),
        "{:?}",
        off.mechanism_counters
    );
    let on = run_finished(scenario(&text.replace("cc = \"none\"", "cc = \"rccc\""), "rccc.toml"));
    assert!(on.mechanism_counters.get("rccc_credits") > 0);
    assert_eq!(on.records[0].fct, off.records[0].fct);
}

/// `rccc_peak_senders` is the most connections one receiver's pacer held at once: two
/// incasts on a k = 4 fat tree, 8 senders into host 0 and 6 into host 15 (in another
/// partition when the run is cut), 300 KB each, so that every connection is owed several
/// grants once all have asked. The 8 connections of the larger incast wait in its pacer
/// together: the peak is 8 on 1, 2 and 4 threads (the partitions' peaks are not added).
#[test]
fn the_peak_of_senders_is_one_pacers_most_on_any_thread_count() {
    let flows: Vec<String> =
        (1..=8).map(|s| flow(s, 0, 300_000)).chain((9..=14).map(|s| flow(s, 15, 300_000))).collect();
    let text = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n\n[[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{}]\n\n\
         [fabric]\ncc = \"rccc\"\nlossless = false\n",
        flows.join(", ")
    );
    for t in [1, 2, 4] {
        let r = run_threads(&text, "rccc.toml", t);
        assert_eq!(r.mechanism_counters.get("rccc_peak_senders"), 8, "{t} threads");
        assert_eq!(r.records.len(), 14);
    }
}

/// A 4-rank ring AllReduce over UET on an idle star (100 Gb/s, 1 µs), 120 packets per
/// message: without RCCC, ACKs only at a message's end, it takes the closed form of
/// tests/it/collectives.rs, 2(n − 1) steps of A(S/n) and tx(ack) between steps.
///
/// Under RCCC each message starts with its connection's opening credit (the path's BDP,
/// `I` packets: a message posted to a connection with nothing left to send), so it never
/// waits for a grant (the first grant comes back before `I` packets are sent, as for a lone
/// flow); the receiver grants the other `120 − I` in `⌈(120 − I) / 4⌉` credit packets. Those
/// leave ahead of the receiving rank's own data on its uplink, which the ring keeps busy, so
/// each pushes that data back by exactly one ACK's serialisation: the collective takes the
/// closed form plus that, per credit packet of a step, plus one ACK's: a connection's first
/// packet is acknowledged at once (htsim's sink), on every rank's uplink in the first step;
/// and the credit granted is exactly `120 − I` per message.
///
/// Under NSCC with RCCC the ring runs with the default ACK coalescing (NSCC's window moves
/// on ACKs): as in tests/it/collectives.rs each rank's uplink then also carries the ACKs
/// of the message it receives (29 more per step), so the collective takes longer than the
/// closed form by at most those ACKs' and the credit packets' serialisation.
#[test]
fn a_ring_allreduce_under_rccc_takes_the_closed_form() {
    let (n, per) = (4u64, 120u64);
    let size = per * 1000 * n;
    let steps = 2 * (n - 1);
    let (b, d) = (rdmalab::Rate::gbps(100), rdmalab::Time::from_ns(1000));
    let (a_step, ack) = (super::fixtures::arrival(size / n, b, d).0, super::fixtures::tx_ack(b).0);
    let expect = steps * a_step + (steps - 1) * ack;
    let need = per - default_initial();
    let credits = need.div_ceil(4);
    for (cc, acks) in [("rccc", "[fabric.uet]\nack_every = 1000\n"), ("nscc+rccc", "")] {
        let text = format!(
            "seed = 3\n[topology]\nkind = \"star\"\nhosts = {n}\nrate = \"100Gbps\"\ndelay = \"1us\"\n\n\
             [fabric]\ncc = \"{cc}\"\nlossless = false\n{acks}\n\
             [[collective]]\nname = \"g\"\nkind = \"allreduce\"\nranks = {{ hosts = \"0..3\" }}\nsize = {size}\n\
             chunk = \"1MiB\"\ntransport = \"uet\"\n"
        );
        let r = run_finished(scenario(&text, "rccc.toml"));
        let c = &r.collectives[0];
        let took = (c.end.expect("finished") - c.start).0;
        let m = &r.mechanism_counters;
        eprintln!(
            "{cc}: took {took} closed form {expect} (+{} ps, {:.2} acks per step) credits {} granted {}",
            took as i64 - expect as i64,
            (took as f64 - expect as f64) / (steps * ack) as f64,
            m.get("rccc_credits"),
            m.get("rccc_granted_packets")
        );
        assert_eq!(m.get("rccc_granted_packets"), n * steps * need, "{cc}: 120 − I packets granted per message");
        assert_eq!(m.get("rccc_credits"), n * steps * credits, "{cc}");
        if acks.is_empty() {
            let extra = steps * (29 + credits) * ack;
            assert!(expect < took && took <= expect + extra, "{cc}: {took} ps against {expect} + {extra} ps");
        } else {
            assert_eq!(
                took,
                expect + steps * credits * ack + ack,
                "{cc}: the closed form and {credits} credit packets per step"
            );
        }
        assert_eq!((r.counters.retx_packets, r.counters.timeouts), (0, 0), "{cc}");
    }
}

/// A UET ring AllReduce under NSCC and RCCC on a k = 4 fat tree (REPS spraying) gives the
/// same outputs on 1, 2 and 4 threads.
#[test]
fn rccc_collectives_are_the_same_at_1_2_and_4_threads() {
    let toml = "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"nscc+rccc\"\nlossless = false\npath_selection = \"reps\"\n\
        [[collective]]\nname = \"ring\"\nkind = \"allreduce\"\nranks = { hosts = \"0..15\" }\nsize = \"1MiB\"\nchunk = \"16KiB\"\ntransport = \"uet\"\n";
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("rccc collective", toml);
    assert_eq!(stop, rdmalab::sim::StopReason::Finished);
    assert!(r.collectives.iter().all(|c| c.end.is_some()));
    assert!(r.mechanism_counters.get("rccc_credits") > 0, "the ring asks for credit");
}

/// An application's messages over UET under RCCC (the host model's closed loop, as in
/// tests/it/uet.rs): two applications on host 0 send host 6 batches of two 100,000-byte WRs
/// (98 packets of 1,024 bytes each), ten batches each. A batch is posted once the last one
/// completed, to a connection with nothing left to send: it starts with the opening credit
/// `I` (the path's BDP, measured as a lone flow's) and its second WR, posted while the first
/// is on the wire, asks for the rest. So the credit granted is exactly `196 − I` packets per
/// batch; every batch completes and every byte arrives once.
#[test]
fn application_messages_complete_under_rccc() {
    let star = "[topology]\nkind = \"star\"\nhosts = 7\nrate = \"40Gbps\"\ndelay = \"1us\"\n";
    let fabric = "[fabric]\nmtu = 1024\ncc = \"rccc\"\nlossless = false\n";
    let lone = format!(
        "{star}[[traffic]]\nkind = \"flows\"\ntransport = \"uet\"\nflows = [{}]\n{fabric}",
        flow(0, 6, 200 * 1024)
    );
    let initial = 200 - run_finished(scenario(&lone, "rccc.toml")).mechanism_counters.get("rccc_granted_packets");
    let toml = format!(
        "stop_time = \"10ms\"\n{star}{fabric}[host]\nmechanism = \"raw\"\n\
         [[app]]\nhost = 0\ndst = 6\ncount = 2\nsize = 100000\nwr_num = 2\ntotal_bytes = 2000000\ntransport = \"uet\"\n"
    );
    let mut sim = scenario(&toml, "rccc.toml").simulation().expect("valid scenario");
    sim.run_to_end();
    let r = sim.results().expect("conservation holds");
    let done = r.host_batches.iter().filter(|b| b.seen.0 != u64::MAX).count() as u64;
    let m = &r.mechanism_counters;
    eprintln!(
        "app: I {initial} batches {done} granted {} credits {}",
        m.get("rccc_granted_packets"),
        m.get("rccc_credits")
    );
    assert_eq!(done, 20, "10 batches of 200,000 bytes per application");
    assert_eq!(r.counters.payload_bytes_delivered, 2 * 2_000_000);
    assert_eq!(m.get("rccc_granted_packets"), done * (196 - initial));
}

/// Under RCCC a collective or an `[[app]]` of another transport is refused naming its
/// field, as is traffic RCCC does not cover.
#[test]
fn rccc_refuses_what_it_cannot_run_by_name() {
    let base = "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\ncc = \"rccc\"\nlossless = false\n";
    let coll = format!("{base}[[collective]]\nname = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 2, 3]\nsize = 4000\n");
    let e = super::fixtures::build_error(&coll, "bad.toml");
    assert!(e.contains("collective[0].transport") && e.contains("\"rc\""), "{e}");
    let app = format!(
        "{base}[host]\nmechanism = \"raw\"\n[[app]]\nhost = 0\ndst = 3\nsize = 2500\nwr_num = 1\ntotal_bytes = 2500\n"
    );
    let e = super::fixtures::build_error(&app, "bad.toml");
    assert!(e.contains("app[0].transport") && e.contains("\"rc\""), "{e}");
}

/// A finished QP's slot is reused under RCCC once no credit of it travels: 200 UET flows of
/// 100 KB from host 1 to host 0, each starting 20 µs after the last (one takes about 9 µs),
/// keep the QP table as small as without RCCC, not one slot per flow, and every flow
/// completes with the same FCT as alone (each starts on an idle path with fresh credit).
#[test]
fn sequential_flows_reuse_qp_slots_under_rccc() {
    let flows: Vec<String> =
        (0..200).map(|i| format!("{{ src = 1, dst = 0, size = 100000, start = \"{}us\" }}", 20 * i)).collect();
    let run = |cc: &str| {
        let mut sim = scenario(&star(2, &flows, cc, ""), "rccc.toml").simulation().expect("valid scenario");
        assert_eq!(sim.run_to_end(), rdmalab::sim::StopReason::Finished);
        let slots = sim.qp_slots();
        (slots, sim.results().expect("bytes conserved"))
    };
    let (slots_off, off) = run("none");
    let (slots_on, on) = run("rccc");
    eprintln!(
        "slots: {slots_off} without RCCC, {slots_on} with; credits {}",
        on.mechanism_counters.get("rccc_credits")
    );
    assert!(on.mechanism_counters.get("rccc_credits") > 0, "the flows ask for credit");
    assert!(slots_on <= 2 && slots_on <= slots_off + 1, "{slots_on} slots for 200 sequential flows");
    assert_eq!(on.records.len(), 200);
    let fct = on.records[0].fct;
    assert!(on.records.iter().all(|r| r.fct == fct), "every flow as the first");
    assert_eq!(off.records.len(), 200);
}

/// A permutation under NSCC + RCCC on a leaf-spine whose leaf 0 loses its link to spine 1
/// (routes recomputed 20 µs later): credit packets crossing it are lost, and a credit packet
/// is never resent. Each credit takes the next of 128 entropy values (htsim's sink), so one
/// connection's grants spread over the spines; a sender left with nothing in flight and no
/// credit keeps its retransmission timer, whose expiry gives the packet that asks again
/// (htsim's request to send at a timeout without credit). Every flow completes; without the
/// timer one connection (2 packets short) waits for its lost last grant until nothing is
/// left to simulate, 216 µs in.
#[test]
fn a_lost_credit_packet_costs_a_timeout_not_the_flow() {
    let text = "seed = 1\nstop_time = \"10ms\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 4\n\
                hosts_per_leaf = 8\nspines = 8\nhost_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\n\
                delay = \"1us\"\n[fabric]\ncc = \"nscc+rccc\"\nlossless = false\npath_selection = \"ev_spray\"\n\
                mtu = 1024\necn_kmin = 75000\necn_kmax = 75000\necn_pmax = 1.0\nreroute_delay = \"20us\"\n\
                [fabric.trimming]\nthreshold_kb = 100\n[[traffic]]\nkind = \"permutation\"\nsize = 262144\n\
                transport = \"uet\"\n[[events]]\nkind = \"link_down\"\nat = \"10us\"\na = 32\nb = 37\n";
    let r = run_finished(scenario(text, "lost_credit.toml"));
    assert_eq!(r.counters.payload_bytes_delivered, 32 * 262_144);
    assert!(r.counters.link_down_losses > 0, "the failure cost packets");
}

/// The 16:1 oversubscribed leaf-spine (4 leaves of 16 hosts, one spine) under a permutation of
/// 1 MB UET flows, RCCC, REPS, MTU 4096, trimming past 50 KB: the core trims tens of
/// thousands of packets and its queues outlast the 100 µs timeout.
const OVERSUBSCRIBED: &str = "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 4\nspines = 1\n\
    hosts_per_leaf = 16\nhost_rate = \"100Gbps\"\nfabric_rate = \"100Gbps\"\ndelay = \"1us\"\n[[traffic]]\n\
    kind = \"permutation\"\nsize = 1000000\ntransport = \"uet\"\n[fabric]\ncc = \"rccc\"\n\
    lossless = false\npath_selection = \"reps\"\nmtu = 4096\n[fabric.trimming]\nthreshold_kb = 50\n";

/// A sender whose last packet in flight is trimmed while it has no credit left holds nothing
/// in flight but a packet marked to resend. Its receiver knows it owes that resend: it counts
/// one packet per NACK beside the highest target heard, and the sender's target leaves out
/// the NACKs it heard. Folding the NACK into the target by taking the larger of the two
/// loses the resend whenever the sender's target rises first for another reason, a timeout
/// marking packets still queued in the core: the receiver owes nothing more, and the sender
/// waits a whole timeout (`rccc_timer_asks`) for the packet of credit that asks again, 2
/// times in this run (without that packet, until nothing is left to simulate). With the two
/// counts apart no flow waits for its timer.
#[test]
fn a_trimmed_last_packet_without_credit_is_granted_without_a_timeout() {
    // One thread in the origin order (`--threads 1`), where the stall showed.
    let r = run_threads(OVERSUBSCRIBED, "trimmed_last.toml", 1);
    assert_eq!(r.counters.payload_bytes_delivered, 64 * 1_000_000);
    let m = &r.mechanism_counters;
    assert!(m.get("trims") > 100_000, "the core trims heavily");
    assert!(r.counters.timeouts > 0, "timeouts mark packets still queued in the core");
    assert_eq!(m.get("rccc_timer_asks"), 0, "a sender waited a timeout for a grant");
}
