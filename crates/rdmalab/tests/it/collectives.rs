//! Collectives and dependency-driven transfers: each algorithm's completion time
//! and bytes per link against closed forms on an uncongested star, the records' bandwidths
//! by NCCL-tests' definitions, the triggers and compute delays of a plain job, and the
//! errors bad input gets.
//!
//! The closed forms (docs/collectives.md): on a star of rate B and link delay d, a message of
//! b bytes in packets of wire sizes w_j reaches its receiver A(b) = Σ tx(w_j) + tx(max w) +
//! 2d after its post (the lone flow of docs/model/links-and-switches.md, two hops). The scenarios acknowledge only
//! a message's last packet (`ack_interval`), so a step's only other cost is the ACK of the
//! message a rank just received, which its NIC sends before its next data: tx(ack) for
//! every step but the first. Nothing else shares a link: in each step every host sends one
//! message and receives one, and an ACK reaches the switch before the data it could delay.

use rdmalab::app::collective::CollectiveRecord;
use rdmalab::app::deps::{Dep, Transfer, TransferGraph, Trigger};
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures::{input_error, port_to, run_finished, scenario, wires};

const B: Rate = Rate::gbps(100);
const D: Time = Time::from_ns(1000);
/// Acknowledge a message's last packet only.
const ACK_AT_END: &str = "[fabric]\nack_interval = 1000000\n";

fn cfg() -> SimConfig {
    SimConfig::default()
}

/// A(b) on this file's star (`fixtures::arrival`).
fn arrival(b: u64) -> Time {
    crate::fixtures::arrival(b, B, D)
}

fn tx_ack() -> Time {
    crate::fixtures::tx_ack(B)
}

/// Bytes a host's uplink sends: its messages with their headers, and an ACK per message it
/// receives.
fn uplink(sent: &[u64], received: usize) -> u64 {
    sent.iter().map(|&b| wires(b).iter().sum::<u64>()).sum::<u64>() + received as u64 * cfg().ack_bytes as u64
}

fn star(hosts: usize, collective: &str) -> String {
    format!("[topology]\nkind = \"star\"\nhosts = {hosts}\n{ACK_AT_END}[[collective]]\n{collective}")
}

/// The run's results, and what each host's uplink (its one port, to the switch) sent.
fn run(toml: &str) -> (Results, Vec<u64>) {
    let s = scenario(toml, "c.toml");
    let topo = s.topology.clone();
    let r = run_finished(s);
    let hub = NodeId(topo.len() as u32 - 1); // a star's switch is its last node
    let up = (0..topo.len() as u32 - 1).map(|h| r.ports[port_to(&topo, NodeId(h), hub).idx()].tx_bytes).collect();
    (r, up)
}

fn one(r: &Results) -> &CollectiveRecord {
    assert_eq!(r.collectives.len(), 1);
    &r.collectives[0]
}

fn took(c: &CollectiveRecord) -> Time {
    c.end.expect("finished") - c.start
}

#[test]
fn ring_allreduce_takes_2_n_minus_1_steps_of_s_over_n() {
    for n in [2usize, 3, 4, 6] {
        let size = 120_000 * n as u64;
        let (r, up) = run(&star(
            n,
            &format!("name = \"g\"\nkind = \"allreduce\"\nalgorithm = \"ring\"\nranks = {{ hosts = \"0..{}\" }}\nsize = {size}\nchunk = \"1MiB\"\n", n - 1),
        ));
        let c = one(&r);
        let steps = 2 * (n as u64 - 1);
        let expect = Time(steps * arrival(size / n as u64).0 + (steps - 1) * tx_ack().0);
        assert_eq!(took(c), expect, "n = {n}");
        assert_eq!((c.steps as u64, c.name.as_str(), c.ranks as usize), (steps, "g#0", n));
        // Step k reaches every rank at (k+1)·A(S/n) + k·tx(ack): first and last rank together.
        let at = |k: u64| c.start + Time((k + 1) * arrival(size / n as u64).0 + k * tx_ack().0);
        assert_eq!(c.step_first, (0..steps).map(at).collect::<Vec<_>>(), "n = {n}");
        assert_eq!(c.step_last, c.step_first, "n = {n}");
        // Every rank sends and receives 2(n-1) messages of S/n.
        let per = uplink(&vec![size / n as u64; steps as usize], steps as usize);
        assert_eq!(up, vec![per; n], "n = {n}");
        // Every transfer is a flow record: S/n from a rank to the next.
        assert_eq!(r.records.len() as u64, steps * n as u64);
        assert!(r.records.iter().all(|f| f.size == size / n as u64 && (f.src.0 + 1) % n as u32 == f.dst.0));
        // NCCL-tests: algbw = S / t, busbw = algbw · 2(n-1)/n.
        let algbw = size as f64 * 8.0 / expect.ps() as f64 * 1000.0;
        assert!((c.algbw_gbps / algbw - 1.0).abs() < 1e-12);
        assert!((c.busbw_gbps / (algbw * 2.0 * (n as f64 - 1.0) / n as f64) - 1.0).abs() < 1e-12);
    }
}

/// A ring AllReduce over UET (`transport = "uet"`) on the idle star takes the same closed
/// form as over RC when the receiver acknowledges only a message's last packet (`ack_every`
/// past a message's 120 packets; a UET message's last packet always asks for its ACK):
/// 2(n-1) steps of A(S/n), and tx(ack) between steps, plus one tx(ack): the receiver also
/// acknowledges a connection's first packet at once (htsim's sink), and that ACK leaves
/// ahead of the receiving rank's own first-step data, every rank at the same time. With the default coalescing (an ACK
/// every 4 packets) each rank's uplink also carries the ACKs of the message it receives,
/// so the collective takes longer, by at most the extra ACKs' serialisation, and completes.
#[test]
fn ring_allreduce_over_uet_takes_the_closed_form() {
    let n = 4usize;
    let size = 120_000 * n as u64;
    let ring = format!(
        "name = \"g\"\nkind = \"allreduce\"\nranks = {{ hosts = \"0..3\" }}\nsize = {size}\nchunk = \"1MiB\"\ntransport = \"uet\"\n"
    );
    let steps = 2 * (n as u64 - 1);
    let expect = Time(steps * arrival(size / n as u64).0 + steps * tx_ack().0);
    let (r, up) = run(&format!("{}[fabric.uet]\nack_every = 1000\n", star(n, &ring)));
    let c = one(&r);
    assert_eq!(took(c), expect);
    assert_eq!(up, vec![uplink(&vec![size / n as u64; steps as usize], steps as usize + 1); n]);
    assert_eq!((r.counters.retx_packets, r.counters.timeouts), (0, 0));
    let (r, _) = run(&star(n, &ring));
    let c = one(&r);
    // Per step a rank receives 120 packets: ACKs after packets 4, 8, ..., 120 (30), one of
    // them the last packet's, which the closed form counts.
    let extra = Time(steps * 29 * tx_ack().0);
    assert!(took(c) > expect && took(c) <= expect + extra, "{} against {} + {}", took(c), expect, extra);
    // A collective's messages need a reliable transport.
    let e =
        input_error(&star(2, "name = \"u\"\nkind = \"allreduce\"\nranks = [0, 1]\nsize = 1000\ntransport = \"ud\"\n"));
    assert!(e.contains("collective[0].transport"), "{e}");
}

/// A UET ring AllReduce (with REPS spraying) gives the same outputs on 1, 2 and 4 threads.
#[test]
fn uet_collectives_are_the_same_at_1_2_and_4_threads() {
    let toml = "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"dcqcn\"\npath_selection = \"reps\"\n\
        [[collective]]\nname = \"ring\"\nkind = \"allreduce\"\nranks = { hosts = \"0..15\" }\nsize = \"1MiB\"\nchunk = \"16KiB\"\ntransport = \"uet\"\n";
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("uet collective", toml);
    assert_eq!(stop, StopReason::Finished);
    assert!(r.collectives.iter().all(|c| c.end.is_some() && c.busbw_gbps > 0.0));
}

#[test]
fn ring_allgather_and_reduce_scatter_take_n_minus_1_steps() {
    let n = 4u64;
    let size = 400_000;
    for kind in ["allgather", "reduce_scatter"] {
        let (r, up) = run(&star(
            4,
            &format!("name = \"x\"\nkind = \"{kind}\"\nranks = [3, 1, 0, 2]\nsize = \"400KB\"\nchunk = \"1MB\"\n"),
        ));
        let c = one(&r);
        let expect = Time((n - 1) * arrival(size / n).0 + (n - 2) * tx_ack().0);
        assert_eq!((took(c), c.steps), (expect, 3), "{kind}");
        let per = uplink(&[size / n; 3], 3);
        assert_eq!(up, vec![per; 4], "{kind}");
        assert!((c.busbw_gbps / c.algbw_gbps - 0.75).abs() < 1e-12);
    }
}

#[test]
fn broadcast_is_a_chain_and_pipelines_by_chunk() {
    let size = 200_000u64;
    // One chunk: store and forward along 0 -> 1 -> 2 -> 3.
    let (r, up) = run(&star(
        4,
        &format!("name = \"b\"\nkind = \"broadcast\"\nranks = [0, 1, 2, 3]\nsize = {size}\nchunk = {size}\n"),
    ));
    let whole = took(one(&r));
    assert_eq!(whole, Time(3 * arrival(size).0 + 2 * tx_ack().0));
    assert_eq!(up, vec![uplink(&[size], 0), uplink(&[size], 1), uplink(&[size], 1), uplink(&[], 1)]);
    assert_eq!(one(&r).busbw_gbps, one(&r).algbw_gbps);
    // Chunks of 20 KB: no faster than a pipeline with free ACKs, at most one ACK per chunk
    // and hop slower.
    let chunk = 20_000u64;
    let m = size / chunk;
    let (r, up) = run(&star(
        4,
        &format!("name = \"b\"\nkind = \"broadcast\"\nranks = [0, 1, 2, 3]\nsize = {size}\nchunk = {chunk}\n"),
    ));
    let t = took(one(&r));
    let per_chunk: u64 = wires(chunk).iter().map(|&w| B.tx_time(w).0).sum();
    let floor = Time(arrival(size).0 + 2 * (per_chunk + B.tx_time(wires(chunk)[0]).0 + 2 * D.0));
    assert!(t >= floor && t <= floor + Time(3 * m * tx_ack().0), "{t} vs {floor}");
    assert_eq!(up[1], uplink(&vec![chunk; m as usize], m as usize));
}

#[test]
fn halving_doubling_exchanges_halves_then_doubles() {
    let (n, size) = (8u64, 800_000u64);
    let (r, up) = run(&star(8, &format!("name = \"hd\"\nkind = \"allreduce\"\nalgorithm = \"halving_doubling\"\nranks = {{ hosts = \"0..7\" }}\nsize = {size}\n")));
    let c = one(&r);
    // Reduce-scatter sends S/2, S/4, S/8; allgather S/8, S/4, S/2.
    let pieces = [size / 2, size / 4, size / 8, size / 8, size / 4, size / 2];
    let expect = Time(pieces.iter().map(|&b| arrival(b).0).sum::<u64>() + 5 * tx_ack().0);
    assert_eq!((took(c), c.steps), (expect, 6));
    assert_eq!(up, vec![uplink(&pieces, 6); 8]);
    // Each rank sends 2(n-1)/n of S, as the ring does.
    assert_eq!(pieces.iter().sum::<u64>(), 2 * (n - 1) * size / n);
}

#[test]
fn double_binary_tree_sends_what_each_rank_s_two_roles_ask() {
    // n = 4: tree 0 is 0 -> 2 -> {1, 3}; tree 1 (mirrored) is 3 -> 1 -> {2, 0}. Each tree
    // carries S/2 up (a child to its parent) and down (a parent to each child).
    let size = 200_000u64;
    let (r, up) = run(&star(4, &format!("name = \"t\"\nkind = \"allreduce\"\nalgorithm = \"double_binary_tree\"\nranks = [0, 1, 2, 3]\nsize = {size}\nchunk = {size}\n")));
    let h = size / 2;
    // (messages sent, messages received) per rank, each of S/2.
    let roles = [(2, 2), (4, 4), (4, 4), (2, 2)];
    let want: Vec<u64> = roles.iter().map(|&(s, rcv)| uplink(&vec![h; s], rcv)).collect();
    assert_eq!(up, want);
    let c = one(&r);
    // Up two levels and down two, each a message of S/2 (the two trees run side by side).
    assert_eq!(c.steps, 4);
    assert!(took(c) >= Time(4 * arrival(h).0), "{}", took(c));
}

#[test]
fn direct_alltoall_sends_s_over_n_to_every_peer() {
    let (n, size) = (4u64, 300_000u64);
    let (r, up) = run(&star(4, &format!("name = \"a\"\nkind = \"alltoall\"\nranks = [0, 1, 2, 3]\nsize = {size}\n")));
    let c = one(&r);
    assert_eq!(c.algorithm, "direct");
    assert_eq!(up, vec![uplink(&[size / n; 3], 3); 4]);
    // The uplink is never idle until its last packet: no faster than all of it back to back.
    let all: u64 = (0..3).flat_map(|_| wires(size / n)).map(|w| B.tx_time(w).0).sum();
    assert!(took(c) >= Time(all + B.tx_time(1048).0 + 2 * D.0), "{}", took(c));
    assert!((c.busbw_gbps / c.algbw_gbps - 0.75).abs() < 1e-12);
}

#[test]
fn repeats_run_back_to_back_and_take_as_long() {
    let (r, _) = run(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 2, 3]\nsize = 400000\nchunk = \"1MB\"\nrepeat = 3\nstart = \"5us\"\n"));
    let names: Vec<&str> = r.collectives.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["g#0", "g#1", "g#2"]);
    assert_eq!(r.collectives[0].start, Time::from_us(5));
    for w in r.collectives.windows(2) {
        // A rank starts the next iteration once its last send is acknowledged: after the
        // last receive of the one before, and the same traffic again.
        assert!(w[1].start > w[0].end.unwrap());
        assert_eq!(took(&w[1]), took(&w[0]));
    }
    // A chain's ranks finish their parts at different depths of the schedule; each
    // iteration still has the chain's steps (one chunk: 3 hops).
    let (r, _) = run(&star(
        4,
        "name = \"b\"\nkind = \"broadcast\"\nranks = [2, 0, 3, 1]\nsize = 100000\nchunk = 100000\nrepeat = 2\n",
    ));
    let steps: Vec<u32> = r.collectives.iter().map(|c| c.steps).collect();
    assert_eq!(steps, [3, 3]);
    assert_eq!(took(&r.collectives[1]), took(&r.collectives[0]));
}

#[test]
fn channels_split_the_bytes_over_their_own_qps() {
    let size = 480_000u64;
    let (r, up) = run(&star(
        4,
        &format!(
            "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 2, 3]\nsize = {size}\nchunk = \"1MB\"\nchannels = 2\n"
        ),
    ));
    // Each channel moves half the bytes: 6 messages of S/8 per rank and channel.
    assert_eq!(up, vec![uplink(&[size / 8; 12], 12); 4]);
    assert_eq!(r.counters.qps_opened, 8, "a QP per rank and channel");
    // The two channels' steps drift apart and overlap, so the run is no slower than one
    // channel's (plus a packet of the other QP per step, as they share the NIC) and no faster
    // than the uplink sending all of it back to back.
    let one_channel = Time(6 * arrival(size / 4).0 + 5 * tx_ack().0);
    let all: u64 = (0..12).flat_map(|_| wires(size / 8)).map(|w| B.tx_time(w).0).sum();
    let floor = Time(all + B.tx_time(1048).0 + 2 * D.0);
    let t = took(one(&r));
    assert!(t >= floor && t <= one_channel + Time(6 * B.tx_time(1048).0), "{t} vs {floor}, {one_channel}");
}

/// A job of two transfers from host 0 to host 1 and back: the second waits on `when` of the
/// first, then `delay` of compute.
fn two_step(when: Trigger, delay: Time, back: bool) -> Time {
    let b = 50_000;
    let t0 = Transfer { src: NodeId(0), dst: NodeId(1), bytes: b, lane: 0, delay: Time::ZERO, deps: vec![] };
    let (src, dst) = if back { (NodeId(1), NodeId(0)) } else { (NodeId(0), NodeId(1)) };
    let t1 = Transfer { src, dst, bytes: b, lane: 0, delay, deps: vec![Dep { on: 0, when }] };
    let topo = builders::star(2, B, D).unwrap();
    let mut sim = Simulation::new(topo, vec![], cfg()).unwrap();
    sim.add_transfers(TransferGraph::new(vec![t0, t1]).unwrap(), Time::ZERO).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    assert_eq!(r.flows_total, 2);
    // Each transfer's record: posted when released, done at its send completion.
    let ends: Vec<Time> = r.records.iter().map(|f| f.start + f.fct).collect();
    assert_eq!(ends.iter().max(), Some(&r.last_completion));
    r.last_completion
}

#[test]
fn a_transfer_waits_on_its_trigger_and_compute_delay() {
    let b = 50_000;
    // A lone message's send completion: its arrival plus the ACK's two hops back (every
    // packet acknowledged here; the ACKs of all but the last overlap the data).
    let w = wires(b);
    let last = B.tx_time(*w.last().unwrap()).0;
    let fct = Time(arrival(b).0 + 2 * (tx_ack().0 + D.0) + tx_ack().0.saturating_sub(last));
    let delay = Time::from_us(7);
    // Sent: the second starts at the first's send completion, plus the delay.
    assert_eq!(two_step(Trigger::Sent, delay, false), Time(2 * fct.0 + delay.0));
    // Received: host 1 answers once the first is placed; its NIC sends the last ACK first.
    assert_eq!(two_step(Trigger::Received, Time::ZERO, true), Time(arrival(b).0 + tx_ack().0 + fct.0));
}

#[test]
fn bad_collectives_are_refused_naming_the_field() {
    let base = "name = \"g\"\nranks = [0, 1, 2]\nsize = 30000\n";
    let cases = [
        ("kind = \"allsum\"\n", "collective[0].kind", "unknown value `allsum`"),
        ("kind = \"alltoall\"\nalgorithm = \"ring\"\n", "collective[0].algorithm", "does not carry out alltoall"),
        ("kind = \"allreduce\"\nalgorithm = \"halving_doubling\"\n", "collective[0].ranks", "power-of-two"),
        ("kind = \"allreduce\"\nchannels = 0\n", "collective[0].channels", "at least 1"),
        ("kind = \"allreduce\"\nchunk = \"5XB\"\n", "collective[0].chunk", "unknown byte unit"),
        ("kind = \"allreduce\"\nrepeat = 0\n", "collective[0].repeat", "at least 1"),
    ];
    for (extra, field, msg) in cases {
        let e = input_error(&star(4, &format!("{base}{extra}")));
        assert!(e.contains(field) && e.contains(msg), "{extra}: {e}");
    }
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0]\nsize = 10\n"));
    assert!(e.contains("collective[0].ranks") && e.contains("at least 2 ranks"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 0]\nsize = 10\n"));
    assert!(e.contains("host 0 is listed twice"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 4]\nsize = 10\n"));
    assert!(e.contains("collective[0].ranks") && e.contains("switch"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 2]\nsize = 2\n"));
    assert!(e.contains("collective[0].size") && e.contains("at least 3 B"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = \"0..3\"\nsize = 10\n"));
    assert!(e.contains("collective[0].ranks") && e.contains("a list of hosts, or { hosts"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1]\nsize = 1.5\n"));
    assert!(e.contains("collective[0].size") && e.contains("a number of bytes, or a size"), "{e}");
    let e = input_error(&star(4, "name = \"g\"\nkind = \"allreduce\"\nranks = { hosts = \"3..1\" }\nsize = 10\n"));
    assert!(e.contains("collective[0].ranks.hosts") && e.contains("ends before"), "{e}");
    // Two collectives of one name would write records of one name: the second is refused
    // at its own line.
    let one = "name = \"g\"\nkind = \"allreduce\"\nranks = [0, 1]\nsize = 10\n";
    let toml = star(4, &format!("{one}[[collective]]\n{one}"));
    let e = input_error(&toml);
    let second = toml.lines().enumerate().filter(|(_, l)| l.starts_with("name")).nth(1).unwrap().0 + 1;
    assert!(e.starts_with(&format!("bad.toml:{second}: field `collective[1].name`")), "{e}");
    assert!(e.contains("already the name of collective[0]"), "{e}");
}

#[test]
fn collectives_are_the_same_at_1_2_and_4_threads() {
    // A k = 4 fat tree: a pipelined ring over every pod, NCCL's trees and an all-to-all at
    // once, so that transfers and their receive completions cross every cut.
    let toml = "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"dcqcn\"\n\
        [[collective]]\nname = \"ring\"\nkind = \"allreduce\"\nranks = { hosts = \"0..15\" }\nsize = \"1MiB\"\nchunk = \"16KiB\"\nchannels = 2\nrepeat = 2\n\
        [[collective]]\nname = \"tree\"\nkind = \"allreduce\"\nalgorithm = \"double_binary_tree\"\nranks = [0, 5, 10, 15, 3, 6]\nsize = \"512KiB\"\nchunk = \"64KiB\"\n\
        [[collective]]\nname = \"a2a\"\nkind = \"alltoall\"\nranks = [1, 2, 7, 8, 13, 14]\nsize = \"600KB\"\nstart = \"20us\"\n";
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("collectives", toml);
    assert_eq!(stop, StopReason::Finished);
    let names: Vec<&str> = r.collectives.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ring#0", "ring#1", "tree#0", "a2a#0"]);
    assert!(r.collectives.iter().all(|c| c.end.is_some() && c.busbw_gbps > 0.0));
}
