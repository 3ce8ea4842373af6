//! IRN's loss recovery (`fabric.loss_recovery = "irn"`, `rnic::irn`, `sim::mech::irn`) and
//! `fabric.cnp_on_ooo`, through the whole simulator.
//!
//! Checks against closed forms: one lost packet costs IRN one retransmission and go-back-N
//! every packet sent between the loss and its NACK (at least a base RTT of line rate);
//! BDP-FC keeps the bytes past the cumulative ACK at or below the cap in every instant of
//! a per-packet trace, and a window of W bytes over a base RTT R bounds the FCT below by
//! size / W × R; RTO_low is the timeout when at most 3 packets are outstanding.

use std::path::Path;

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::Results;
use rdmalab::topology::routing::{NeighborOrder, Routes};
use rdmalab::{NodeId, Time};

use super::fixtures::{input_error, line_of, run_finished, scenario};

/// Two hosts through one switch, 100 Gb/s, 1 µs links; one 1 MB flow 0 → 1.
fn two_hosts(fabric: &str) -> String {
    format!(
        "seed = {{SEED}}\n[topology]\nkind = \"star\"\nhosts = 2\n\n[[traffic]]\nkind = \"flows\"\n\
         flows = [{{ src = 0, dst = 1, size = 1000000 }}]\n\n[fabric]\ncc = \"none\"\n{fabric}\n"
    )
}

fn run_seed(text: &str, seed: u64) -> Results {
    run_finished(scenario(&text.replace("{SEED}", &seed.to_string()), "irn.toml"))
}

/// The first seed whose lossy run (every link drops each packet with probability 1/2000)
/// loses exactly one packet, a data packet (the sender hears a NACK), in both modes.
fn one_loss_seed(gbn: &str, irn: &str) -> u64 {
    (1..200)
        .find(|&seed| {
            [gbn, irn].iter().all(|t| {
                let r = run_seed(t, seed);
                r.counters.link_error_losses == 1 && r.counters.nacks > 0
            })
        })
        .expect("a seed with exactly one data packet lost")
}

#[test]
fn one_lost_packet_costs_irn_one_retransmission_and_go_back_n_the_window() {
    let lossy = "lossless = false\nerror_rate = 0.0005\n";
    let gbn = two_hosts(lossy);
    let irn = two_hosts(&format!("{lossy}loss_recovery = \"irn\"\n[fabric.irn]\nbdp = 1000000\n"));
    let seed = one_loss_seed(&gbn, &irn);
    let (g, i) = (run_seed(&gbn, seed), run_seed(&irn, seed));
    assert_eq!(i.records[0].retx_packets, 1, "IRN repairs the hole only");
    assert_eq!(i.counters.retx_packets, 1);
    assert_eq!(i.counters.timeouts, 0);
    // Go-back-N resends everything sent after the hole until the NACK came back: at least
    // the packets of the base RTT (2 × 2 µs of propagation) at 100 Gb/s, 1048-byte frames.
    let per_rtt = (4e-6 * 100e9 / 8.0 / 1048.0) as u32; // 47
    let gr = g.records[0].retx_packets;
    assert!(gr >= per_rtt, "go-back-N resent {gr} packets, fewer than one RTT's {per_rtt}");
    assert_eq!(g.counters.retx_packets, gr as u64);
    assert!(g.records[0].nacks >= 1 && i.records[0].nacks >= 1);
    // The receiver's view: go-back-N discards what follows the hole; IRN holds it.
    assert!(g.records[0].rx.ooo_packets >= 1 && g.counters.payload_bytes_discarded > 0);
    assert!(i.records[0].rx.ooo_packets >= per_rtt, "every packet behind the hole arrives out of order");
    assert_eq!(i.counters.payload_bytes_discarded, 0, "IRN discards nothing it did not get twice");
    assert_eq!(i.counters.payload_bytes_delivered, 1_000_000);
}

/// Data sent by host 0 and the ACKs/NACKs it received, from a per-packet trace: the most
/// bytes ever past the cumulative ACK.
fn max_outstanding(text: &str) -> u64 {
    let mut dir = std::env::temp_dir();
    dir.push(format!("rdmalab-irn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.csv");
    let s = Scenario::from_toml(text, Path::new("irn.toml")).unwrap();
    let mut run = Runner::new(s).unwrap();
    run.start_trace(&path).unwrap();
    run.run_to_end();
    run.results().unwrap();
    run.finish_trace().unwrap();
    let csv = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let (mut high, mut una, mut max) = (0u64, 0u64, 0u64);
    // time_ps,event,node,port_id,flow,qp,kind,seq,pg,wire,payload,qlen
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (event, node, kind) = (f[1], f[2], f[6]);
        let seq: u64 = f[7].parse().unwrap();
        let payload: u64 = f[10].parse().unwrap();
        if node != "0" {
            continue;
        }
        match (event, kind) {
            ("dequeue", "data") => high = high.max(seq + payload),
            ("ack" | "nack", _) => una = una.max(seq),
            _ => {}
        }
        max = max.max(high - una);
    }
    max
}

#[test]
fn bdp_fc_caps_the_bytes_past_the_cumulative_ack() {
    let cap = 10_000;
    let irn = two_hosts(&format!("loss_recovery = \"irn\"\n[fabric.irn]\nbdp = {cap}\n[trace]\nnodes = [0]\n"));
    let text = irn.replace("{SEED}", "1");
    let max = max_outstanding(&text);
    assert_eq!(max, cap, "in flight reaches the cap and never passes it");
    // Ten packets a round trip: data 1048 B serialised twice (83.84 ns each at 100 Gb/s),
    // the 60-byte ACK twice (4.8 ns), 4 µs of propagation. 1 MB is 100 windows; the last
    // one's ACK ends the flow.
    let r = run_finished(scenario(&text, "irn.toml"));
    let rtt = 4_000.0 + 2.0 * 83.84 + 2.0 * 4.8;
    let fct_ns = r.records[0].fct.0 as f64 / 1e3;
    let windows = 1_000_000.0 / cap as f64;
    assert!(fct_ns >= (windows - 1.0) * rtt, "faster than the cap allows: {fct_ns} ns");
    assert!(fct_ns <= (windows + 1.0) * rtt, "the cap was not used: {fct_ns} ns");
    // Go-back-N without a window sends the flow at line rate (about 84 µs).
    let gbn = run_finished(scenario(&two_hosts("").replace("{SEED}", "1"), "irn.toml"));
    assert!(gbn.records[0].fct.0 * 3 < r.records[0].fct.0);
}

/// Host 1's link is down over `[down, up)` (routes kept: `reroute_delay` is long), so that
/// every packet and ACK crossing it then is lost and the sender can only time out.
fn outage(size: u64, down: &str, up: &str) -> Time {
    let text = format!(
        "[topology]\nkind = \"star\"\nhosts = 2\n\n[[traffic]]\nkind = \"flows\"\n\
         flows = [{{ src = 0, dst = 1, size = {size} }}]\n\n[fabric]\ncc = \"none\"\nlossless = false\n\
         reroute_delay = \"1ms\"\nloss_recovery = \"irn\"\n\
         [fabric.irn]\nrto_low = \"50us\"\nrto_high = \"500us\"\nbdp = 20000\n\n\
         [[events]]\nkind = \"link_down\"\nat = \"{down}\"\na = 1\nb = 2\n\
         [[events]]\nkind = \"link_up\"\nat = \"{up}\"\na = 1\nb = 2\n"
    );
    let r = run_finished(scenario(&text, "irn.toml"));
    assert_eq!(r.counters.timeouts, 1, "{size} B: one timeout repairs the loss");
    assert!(r.counters.link_down_losses > 0);
    r.records[0].fct
}

/// RTO_low when at most 3 packets are outstanding, RTO_high otherwise, chosen when the
/// timer is armed (at the first packet, then at each ACK that advances).
#[test]
fn rto_low_with_at_most_three_packets_outstanding() {
    // 3 packets, all lost at the switch (link down 1-2 µs): the timer armed at the first
    // send fires at RTO_low (50 µs), then one round trip.
    let small = outage(3000, "1us", "2us");
    assert!(small > Time::from_us(50) && small < Time::from_us(60), "3 packets: RTO_low ({small:?})");
    // 24 packets, window 20: the first 4 ACKs get back (sent before 2.5 µs) and re-arm the
    // timer with about 20 packets outstanding: RTO_high (500 µs) after the last of them.
    let big = outage(24_000, "3500ns", "8us");
    assert!(big > Time::from_us(500) && big < Time::from_us(520), "24 packets: RTO_high ({big:?})");
}

#[test]
fn irn_keys_are_checked_with_file_line_and_field() {
    let base = "[topology]\nkind = \"star\"\nhosts = 2\n[fabric]\n";
    for (extra, field, needle) in [
        ("loss_recovery = \"sack\"\n", "fabric.loss_recovery", "loss_recovery"),
        ("[fabric.irn]\nlow_packets = 3\n", "fabric.irn", "[fabric.irn]"),
        ("loss_recovery = \"irn\"\nrto = \"1ms\"\n", "fabric.rto", "rto ="),
        ("loss_recovery = \"irn\"\n[fabric.irn]\nlow_packets = 0\n", "fabric.irn.low_packets", "low_packets"),
        ("loss_recovery = \"irn\"\n[fabric.irn]\nrto_high = \"10us\"\n", "fabric.irn.rto_high", "rto_high"),
        ("loss_recovery = \"irn\"\n[fabric.irn]\nbdp = 10\n", "fabric.irn.bdp", "bdp"),
        ("loss_recovery = \"irn\"\n[fabric.irn]\nrto_low = \"0us\"\n", "fabric.irn.rto_low", "rto_low"),
    ] {
        let text = format!("{base}{extra}");
        let e = input_error(&text);
        let at = format!("bad.toml:{}", line_of(&text, needle));
        assert!(e.contains(field) && e.contains(&at), "{extra}: {e}");
    }
}

/// The Blitz poster's forced collision (`iofd.rs`): two 3 MB flows 0→2 and 1→3 whose ECMP choice at
/// leaf 0 is the same uplink, with IOFD deflecting and no re-sequencing at the last hop, so
/// the receivers see packets out of order; DCQCN; `fabric` added to `[fabric]`.
fn reordered(fabric: &str, threads: Option<u32>) -> Results {
    let text = format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n\n[[traffic]]\n\
         kind = \"flows\"\nflows = [{{ src = 0, dst = 2, size = 3000000 }}, {{ src = 1, dst = 3, size = 3000000 }}]\n\n\
         [fabric]\ncc = \"dcqcn\"\n{fabric}\n[fabric.iofd]\n"
    );
    let mut s = scenario(&text, "ooo.toml");
    let routes = Routes::compute(&s.topology, NeighborOrder::Ascending).unwrap();
    let ip = |h: u32| s.topology.nodes[h as usize].ips[0];
    let pick = |src: u32, dst: u32, sport: u16| routes.ecmp_port(NodeId(4), NodeId(dst), ip(src), ip(dst), sport, 100);
    let a = pick(0, 2, 1000);
    let sport = (1001..2000).find(|&p| pick(1, 3, p) == a).unwrap();
    (s.flows[0].sport, s.flows[1].sport) = (Some(1000), Some(sport));
    s.config.iofd.as_mut().unwrap().resequence = false;
    s.config.threads = threads;
    let mut run = Runner::new(s).unwrap();
    run.run_to_end();
    run.results().expect("bytes conserved")
}

#[test]
fn a_cnp_on_out_of_order_packets_cuts_dcqcn_s_rate() {
    // IRN's cap is widened to 1 MB so that queues reach IOFD's threshold as they do
    // without a window.
    for recovery in ["go_back_n", "irn\"\n[fabric.irn]\nbdp = 1000000\n#\""] {
        let off = reordered(&format!("loss_recovery = \"{recovery}\""), None);
        let on = reordered(&format!("cnp_on_ooo = true\nloss_recovery = \"{recovery}\""), None);
        assert!(off.counters.ooo_packets > 0, "{recovery}: no reordering");
        assert_eq!(off.counters.cnps_ooo, 0, "{recovery}: out-of-order CNPs without cnp_on_ooo");
        assert!(on.counters.cnps_ooo > 0, "{recovery}: no out-of-order CNP");
        let per_flow: u32 = on.records.iter().map(|r| r.rx.cnps_ooo).sum();
        assert_eq!(per_flow as u64, on.counters.cnps_ooo, "{recovery}: per-flow counts add up");
        let per_flow: u32 = on.records.iter().map(|r| r.rx.ooo_packets).sum();
        assert_eq!(per_flow as u64, on.counters.ooo_packets);
        // More CNPs, lower DCQCN rates: the flows take longer.
        let fct = |r: &Results| r.records.iter().map(|f| f.fct.0).sum::<u64>();
        assert!(fct(&on) > fct(&off), "{recovery}: the extra CNPs did not slow the flows");
    }
}

#[test]
fn irn_and_cnp_on_ooo_are_the_same_for_any_thread_count() {
    let irn = "loss_recovery = \"irn\"\n[fabric.irn]\nbdp = 1000000";
    for fabric in [format!("cnp_on_ooo = true\n{irn}"), format!("lossless = false\n{irn}")] {
        let fabric = fabric.as_str();
        let one = reordered(fabric, Some(1));
        for threads in [2, 4] {
            let many = reordered(fabric, Some(threads));
            assert_eq!(one.records, many.records, "{fabric}: records differ with {threads} threads");
            assert_eq!(one.counters.cnps_ooo, many.counters.cnps_ooo);
            assert_eq!(one.counters.retx_packets, many.counters.retx_packets);
            assert_eq!(one.counters.ooo_packets, many.counters.ooo_packets);
        }
        assert!(one.counters.ooo_packets > 0);
    }
}

#[test]
fn losses_close_together_are_repaired_without_a_timeout() {
    // At 1 % loss per link a 1 MB flow loses about 20 data packets, often two within one
    // window (about 50 packets at 100 Gb/s over 4 µs). The second hole is reported only
    // after recovery has begun and new data has gone out behind the first: IRN repairs it
    // on that report. Only a lost retransmission, or a window's last packets lost with
    // nothing behind them to report them, needs the timeout: 2 in these 10 runs, where
    // skipping such holes until the timeout cost 49 (3 to 8 in every run).
    let text = two_hosts("lossless = false\nerror_rate = 0.01\nloss_recovery = \"irn\"\n");
    let (mut timeouts, mut lost) = (0, 0);
    for seed in 1..=10 {
        let r = run_seed(&text, seed);
        timeouts += r.counters.timeouts;
        lost += r.counters.link_error_losses;
    }
    assert!(lost > 100, "{lost} losses: the test tests nothing");
    assert!(timeouts <= 5, "{timeouts} timeouts in 10 runs");
}

#[test]
fn needless_resends_are_the_lost_nacks_the_paper_s_selective_ack_cannot_recover() {
    // IRN's NACK names one received packet (§3.1), and the sender takes a packet as lost
    // when a later one was reported received. A lost NACK therefore makes the packet it
    // named look lost: the sender resends a packet its receiver holds. On a lone flow of N
    // packets over two links that each lose a packet with probability p, a packet is lost on
    // its path with probability P = 1 - (1 - p)^2, so N P / (1 - P) resends repair real
    // losses, and a fraction P of the NACKs are lost, each costing one needless resend
    // (all but those no later NACK reaches before the cumulative ACK does). Each data
    // transmission is lost, delivered first or delivered again: resends = losses + needless.
    let p: f64 = 0.01;
    let text = two_hosts(&format!("lossless = false\nerror_rate = {p}\nloss_recovery = \"irn\"\n"));
    let (mut retx, mut lost, mut needless, mut nacks) = (0u64, 0u64, 0u64, 0u64);
    let runs = 10;
    for seed in 1..=runs {
        let r = run_seed(&text, seed);
        assert_eq!(r.counters.payload_bytes_delivered, 1_000_000);
        retx += r.counters.retx_packets;
        lost += r.counters.payload_bytes_dropped / 1000; // full 1000-byte packets only
        needless += r.counters.payload_bytes_discarded / 1000;
        nacks += r.counters.nacks;
    }
    assert_eq!(retx, lost + needless, "a resend repairs a loss or duplicates a packet received");
    let path_loss = 1.0 - (1.0 - p).powi(2);
    // Poisson counts: within three standard deviations of their means.
    let within = |seen: u64, mean: f64| (seen as f64 - mean).abs() <= 3.0 * mean.sqrt();
    let repairs = runs as f64 * 1000.0 * path_loss / (1.0 - path_loss); // 203
    assert!(within(lost, repairs), "{lost} data packets lost, {repairs:.1} expected");
    let lost_nacks = path_loss * nacks as f64; // about 96 of 4,800 NACKs
    assert!(within(needless, lost_nacks), "{needless} needless resends, {lost_nacks:.1} NACKs expected lost");
}
