//! htsim connection matrices with triggers run as dependency-driven jobs:
//! a chain of triggered transfers against its closed form, the notice a remote trigger
//! waits for, a barrier waiting for its last source, the shipped example, and the same
//! outputs at 1, 2 and 4 threads.
//!
//! The closed forms are those of docs/collectives.md on an uncongested star of rate B and
//! link delay d: a b-byte message reaches its receiver A(b) = Σ tx(w_j) + tx(max w) + 2d
//! after its post; with ACKs only at a message's end, its send completion comes 2(tx(ack) + d)
//! later; a host that forwards what it just received sends that message's ACK first
//! (tx(ack)); a remote trigger reaches the sender of its target one path's propagation
//! delay (2d on a star) after it fired.

use std::path::{Path, PathBuf};

use rdmalab::sim::{Results, StopReason};
use rdmalab::{Rate, Time};

use crate::fixtures::{run_finished, scenario};

const B: Rate = Rate::gbps(100);
const D: Time = Time::from_ns(1000);

/// A(b) on this file's star (`fixtures::arrival`).
fn arrival(b: u64) -> Time {
    crate::fixtures::arrival(b, B, D)
}

fn tx_ack() -> Time {
    crate::fixtures::tx_ack(B)
}

/// The ACK of a message's last byte back to its sender: two hops.
fn ack_back() -> Time {
    Time(2 * (tx_ack().0 + D.0))
}

/// Writes `cm` to a file of its own and returns its path.
fn cm_file(name: &str, cm: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rdmalab-htsim-triggers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, cm).unwrap();
    p
}

fn star_toml(hosts: usize, cm: &Path) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\n[fabric]\nack_interval = 1000000\n\
         [[traffic]]\nkind = \"htsim_cm\"\npath = \"{}\"\n",
        cm.display()
    )
}

/// Runs `cm` on a star; the records sorted by transfer (file order of the job's lines).
fn run_star(name: &str, hosts: usize, cm: &str) -> (Results, Vec<(Time, Time)>) {
    let r = run_finished(scenario(&star_toml(hosts, &cm_file(name, cm)), "t.toml"));
    let mut recs: Vec<_> = r.records.iter().map(|f| (f.flow, f.start, f.start + f.fct)).collect();
    recs.sort();
    let times = recs.into_iter().map(|(_, s, e)| (s, e)).collect();
    (r, times)
}

#[test]
fn a_chain_of_k_triggered_transfers_takes_k_steps() {
    // 0 -> 1 -> 2 -> 3 -> 4: each hop starts when the one before is received at its sender.
    let (k, b) = (4u64, 30_000u64);
    let mut cm = format!("Nodes 5\nConnections {k}\nTriggers {}\n", k - 1);
    for i in 0..k {
        let start = if i == 0 { "start 0".to_string() } else { format!("trigger {i}") };
        let fire = if i + 1 < k { format!(" recv_done_trigger {}", i + 1) } else { String::new() };
        cm += &format!("{i}->{} id {} {start} size {b}{fire}\n", i + 1, i + 1);
    }
    for i in 1..k {
        cm += &format!("trigger id {i} oneshot\n");
    }
    let (r, t) = run_star("chain.cm", 5, &cm);
    assert_eq!(r.flows_total, k as usize);
    let a = arrival(b);
    for (i, &(start, _)) in t.iter().enumerate() {
        // Hop i is posted at i steps of A(b), each but the first behind one ACK.
        let want = Time(i as u64 * a.0 + (i as u64).saturating_sub(1) * tx_ack().0);
        assert_eq!(start, want, "hop {i}");
    }
    // The last byte arrives after k steps and k - 1 ACKs; its ACK returns two hops later.
    let end = Time(k * a.0 + (k - 1) * tx_ack().0 + ack_back().0);
    assert_eq!(r.last_completion, end);
}

#[test]
fn a_remote_trigger_waits_for_its_notice() {
    // htsim's ring pattern: 0 -> 1's send completion (at node 0) starts 1 -> 2 (at node 1).
    let b = 20_000;
    let cm = "Nodes 3\nConnections 2\nTriggers 1\n0->1 id 1 start 0 size 20000 send_done_trigger 1\n\
              1->2 id 2 trigger 1 size 20000\ntrigger id 1 oneshot\n";
    let (_, t) = run_star("remote.cm", 3, cm);
    let done = Time(arrival(b).0 + ack_back().0);
    assert_eq!(t[0].1, done);
    // Node 0 tells node 1 one path's propagation delay (2d) after its send completed.
    assert_eq!(t[1].0, Time(done.0 + 2 * D.0));
    assert_eq!(t[1].1, Time(t[1].0 .0 + done.0));
}

#[test]
fn a_barrier_waits_for_its_last_source() {
    // Node 3 answers node 0 once 0 -> 1 is sent (remote, at 40 us + its send completion) and
    // 2 -> 3 is received (local, at A(b)), whichever is later; then swapped.
    let b = 10_000;
    let done = Time(arrival(b).0 + ack_back().0);
    for (s1, s2) in [(40_000_000u64, 0u64), (0, 40_000_000)] {
        let cm = format!(
            "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 start {s1} size {b} send_done_trigger 1\n\
             2->3 id 2 start {s2} size {b} recv_done_trigger 1\n3->0 id 3 trigger 1 size {b}\n\
             trigger id 1 barrier count 2\n"
        );
        let (_, t) = run_star("barrier.cm", 4, &cm);
        let remote = Time(s1 + done.0 + 2 * D.0);
        let local = Time(s2 + arrival(b).0);
        assert_eq!(t[2].0, remote.max(local), "starts {s1}, {s2}");
    }
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/htsim_triggers.toml")
}

#[test]
fn the_example_runs_its_chain_and_barrier() {
    let path = example();
    let text = std::fs::read_to_string(&path).unwrap();
    let s = rdmalab::config::Scenario::from_toml(&text, &path).unwrap();
    assert_eq!(s.flows.len(), 1); // 2->1, the one connection without triggers
    assert_eq!(s.jobs.len(), 1);
    let r = run_finished(s);
    assert_eq!(r.flows_total, 7);
    // The job's transfers are rows 1.. (after the plain flow), in file order.
    let mut t: Vec<_> = r.records.iter().filter(|f| f.flow >= 1).map(|f| (f.flow, f.start, f.start + f.fct)).collect();
    t.sort();
    let chain_end = t[2].2;
    // The relay: each hop starts after the one before it (received at its sender).
    assert!(t[1].1 > t[0].1 && t[2].1 > t[1].1);
    // The barrier's answer starts after the chain's last hop and node 1's transfer are sent
    // (plus the notice).
    assert!(t[5].1 >= chain_end + Time(2 * D.0) && t[5].1 >= t[4].2 + Time(2 * D.0), "{t:?}");
}

#[test]
fn triggered_matrices_are_the_same_at_1_2_and_4_threads() {
    // A k = 4 fat tree (16 hosts): a relay chain through every pod and a barrier whose
    // remote sources sit in other pods, so that transfers and notices cross every cut.
    let mut cm = String::from("Nodes 16\nConnections 9\nTriggers 5\n");
    let hops = [(0, 5), (5, 10), (10, 15), (15, 2)];
    for (i, (s, d)) in hops.iter().enumerate() {
        let start = if i == 0 { "start 0".into() } else { format!("trigger {i}") };
        let fire = if i < 3 { format!(" recv_done_trigger {}", i + 1) } else { " send_done_trigger 5".into() };
        cm += &format!("{s}->{d} id {} {start} size 60000{fire}\n", i + 1);
    }
    cm += "1->6 id 5 start 0 size 90000 send_done_trigger 5\n7->12 id 6 start 3000000 size 40000 send_done_trigger 5\n\
           12->3 id 7 start 0 size 50000 recv_done_trigger 5\n3->9 id 8 trigger 5 size 70000\n4->8 id 9 start 0 size 80000\n";
    for i in 1..=3 {
        cm += &format!("trigger id {i} oneshot\n");
    }
    cm += "trigger id 4 oneshot\ntrigger id 5 barrier count 4\n";
    let p = cm_file("fat.cm", &cm);
    let toml = format!(
        "seed = 2\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"dcqcn\"\n[[traffic]]\nkind = \"htsim_cm\"\npath = \"{}\"\n",
        p.display()
    );
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("htsim triggers", &toml);
    assert_eq!(stop, StopReason::Finished);
    assert_eq!(r.flows_total, 9);
}
