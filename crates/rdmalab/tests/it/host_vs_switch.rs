//! What `lb-host-vs-switch` needs beyond the schemes themselves: a per-link
//! rate in the scenario (`[[links]] rate`, an asymmetric fabric), and the host-side
//! multipath of the data-partition and Virtuoso papers under IRN's loss recovery, whose receivers hold
//! out-of-order packets (a message whose last packet was held completes when the bytes
//! before it arrive, `sim::mech::irn`).

use rdmalab::scenario::Scenario;
use rdmalab::sim::parallel::Runner;
use rdmalab::sim::Results;
use rdmalab::Time;

use super::fixtures::{input_error, line_of, run_finished, scenario};

/// Two hosts on one switch (node 2), 100 Gb/s and 1 µs links, one 1 MB flow 0 → 1, the link
/// of host 0 overridden by `links`.
fn two_hosts(links: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = 2\n\n[[traffic]]\nkind = \"flows\"\n\
         flows = [{{ src = 0, dst = 1, size = 1000000 }}]\n\n[fabric]\ncc = \"none\"\n\n{links}"
    )
}

#[test]
fn a_link_rate_override_sets_that_link_s_serialisation() {
    let fct = |links: &str| run_finished(scenario(&two_hosts(links), "rate.toml")).records[0].fct.0 as f64 * 1e-12;
    let (fast, slow) = (fct(""), fct("[[links]]\na = 0\nb = 2\nrate = \"25Gbps\"\n"));
    // 1,000 packets of 1,000 B payload in 1,048-B frames: host 0's link the bottleneck,
    // each frame serialised at 25 Gb/s instead of 100 Gb/s; everything else (propagation,
    // the last frame's second hop, the ACK) is the same in both runs.
    let extra = 1000.0 * 1048.0 * 8.0 * (1.0 / 25e9 - 1.0 / 100e9);
    let got = slow - fast;
    assert!(
        (got - extra).abs() / extra < 0.005,
        "FCT {slow:.9} s - {fast:.9} s = {got:.9} s, closed form {extra:.9} s"
    );
}

#[test]
fn a_bad_link_override_names_file_line_and_field() {
    for (links, field, needle) in [
        ("[[links]]\na = 0\nb = 1\nrate = \"25Gbps\"\n", "links[0].b", "b = 1"),
        ("[[links]]\na = 0\nb = 2\nrate = \"fast\"\n", "links[0].rate", "rate ="),
        ("[[links]]\na = 0\nb = 2\nrate = \"0Gbps\"\n", "links[0].rate", "rate ="),
        ("[[links]]\na = 0\nb = 9\nrate = \"25Gbps\"\n", "links[0].b", "b = 9"),
    ] {
        let text = two_hosts(links);
        let e = input_error(&text);
        let at = format!("bad.toml:{}", line_of(&text, needle));
        assert!(e.contains(field) && e.contains(&at), "{links}: {e}");
    }
}

/// The data-partition paper's partition: one 1 MB message 0 → 1 on the two-host star over 4 QPs in 16 kB
/// chunks (16 packets each, so a loss inside a chunk leaves its last packet held), every
/// link losing each packet with probability 1/2,000, PFC off; `fabric` added.
fn partition(seed: u64, fabric: &str) -> String {
    format!(
        "seed = {seed}\n[topology]\nkind = \"star\"\nhosts = 2\n\n[[traffic]]\nkind = \"multipath\"\n\
         qps = 4\nchunk_size = 16000\nmessages = [{{ src = 0, dst = 1, size = 1000000 }}]\n\n\
         [fabric]\ncc = \"none\"\nlossless = false\nerror_rate = 0.0005\n{fabric}\n"
    )
}

const IRN: &str = "loss_recovery = \"irn\"\n[fabric.irn]\nbdp = 1000000\n";

fn run_seed(text: &str) -> Results {
    run_finished(scenario(text, "mp-irn.toml"))
}

/// One data packet lost (the sender heard a NACK), not the last of its chunk (a later one
/// of the chunk arrived out of order: its completion waited).
fn one_inner_loss(r: &Results) -> bool {
    r.counters.link_error_losses == 1 && r.counters.nacks > 0 && r.counters.ooo_packets > 0
}

#[test]
fn a_lost_packet_in_a_partition_chunk_costs_irn_one_retransmission() {
    let seed = (1..400).find(|&s| one_inner_loss(&run_seed(&partition(s, IRN)))).expect("a seed with one loss");
    let r = run_seed(&partition(seed, IRN));
    assert_eq!(r.counters.retx_packets, 1, "IRN repairs the hole only");
    assert_eq!(r.counters.timeouts, 0);
    assert_eq!(r.counters.payload_bytes_discarded, 0);
    let m = &r.mp_messages[0];
    // Every chunk was placed and the receiver's completion made, the held chunk's included
    // (its bytes counted from the previous chunk's end, not from the held bytes' end).
    assert_eq!(m.bytes_placed, 1_000_000, "{m:?}");
    assert!(m.fct.is_some() && m.recv_done.is_some(), "{m:?}");
    // Go-back-N on a run that loses one inner packet resends the rest of the window.
    let gbn = (1..400).map(|s| run_seed(&partition(s, ""))).find(one_inner_loss).expect("a go-back-N seed");
    assert!(gbn.counters.retx_packets > 1, "go-back-N resent {}", gbn.counters.retx_packets);
    assert_eq!(gbn.mp_messages[0].bytes_placed, 1_000_000);
}

#[test]
fn partition_under_irn_is_the_same_for_any_thread_count() {
    let text = partition(7, IRN).replace("kind = \"star\"\nhosts = 2", LEAF_SPINE).replace("dst = 1", "dst = 5");
    let run = |threads: u32| {
        let mut s = scenario(&text, "mp-irn.toml");
        s.config.threads = Some(threads);
        let mut run = Runner::new(s).unwrap();
        run.run_to_end();
        run.results().expect("bytes conserved")
    };
    let one = run(1);
    assert!(one.counters.retx_packets > 0 && one.mp_messages[0].recv_done.is_some());
    for threads in [2, 4] {
        let many = run(threads);
        assert_eq!(one.records, many.records, "{threads} threads");
        assert_eq!(one.mp_messages[0].recv_done, many.mp_messages[0].recv_done);
        assert_eq!(one.counters.retx_packets, many.counters.retx_packets);
    }
}

const LEAF_SPINE: &str = "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4";

/// Virtuoso, probe weights, over 4 source addresses on a 2-leaf, 4-spine fabric
/// whose link from leaf 0 to spine 0 (nodes 4 and 6) runs at a quarter rate; lossy links,
/// IRN. A 4 MB WRITE 0 → 2.
fn virtuoso_irn() -> Scenario {
    let text = "seed = 3\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = 2\n\
                host_rate = \"100Gbps\"\nfabric_rate = \"25Gbps\"\nips_per_host = 4\ndelay = \"1us\"\n\n\
                [[links]]\na = 4\nb = 6\nrate = \"6.25Gbps\"\n\n[[traffic]]\nkind = \"multipath\"\n\
                split = \"virtuoso\"\npath_by = \"src_ip\"\nqps = 4\nweights = \"probe\"\n\
                messages = [{ src = 0, dst = 2, size = 4000000 }]\n\n[fabric]\ncc = \"dcqcn\"\n\
                path_selection = \"source_ip\"\nlossless = false\nerror_rate = 0.0002\nloss_recovery = \"irn\"\n";
    scenario(text, "v-irn.toml")
}

#[test]
fn virtuoso_under_irn_completes_with_bytes_conserved() {
    let r = run_finished(virtuoso_irn()); // the results check conservation exactly
    let m = &r.mp_messages[0];
    assert_eq!(m.bytes_placed, 4_000_000, "{m:?}");
    assert!(m.fct.is_some_and(|t| t > Time::ZERO), "{m:?}");
    assert!(r.counters.link_error_losses > 0 && r.counters.retx_packets > 0, "the run lost nothing");
}

/// 2 leaves x 4 hosts, 2 spines, IRN; `traffic` the only source.
fn drawn(traffic: &str) -> Scenario {
    let text =
        format!("seed = 5\n[topology]\n{LEAF_SPINE}\n\n[[traffic]]\n{traffic}\n\n[fabric]\ncc = \"dcqcn\"\n{IRN}");
    scenario(&text, "drawn.toml")
}

const POISSON: &str = "{ kind = \"poisson\", cdf = \"web_search\", load = 0.3, duration = \"1ms\" }";

#[test]
fn a_multipath_workload_carries_the_very_flows_its_source_draws() {
    let plain = drawn(&POISSON.replace(['{', '}'], "").replace(", ", "\n"));
    let mp = drawn(&format!("kind = \"multipath\"\nqps = 4\nchunk_size = 32768\nworkload = {POISSON}"));
    let flows: Vec<_> = plain.flows.iter().map(|f| (f.src, f.dst, f.size, f.start)).collect();
    let mut messages = mp.multipath[0].messages.clone();
    messages.sort_by_key(|m| m.3);
    assert!(flows.len() > 10, "{}", flows.len());
    assert_eq!(flows, messages, "same seed, same place in `traffic`: the same draws");
    // 1 ms of web_search arrivals at 30 %: messages below a chunk are one chunk each, and
    // every one is placed, under IRN too.
    assert!(flows.iter().any(|f| f.2 < 32768) && flows.iter().any(|f| f.2 > 4 * 32768));
    let r = run_finished(mp);
    assert_eq!(r.mp_messages.len(), flows.len());
    for m in &r.mp_messages {
        assert_eq!((m.bytes_placed, m.chunks), (m.size, m.size.div_ceil(32768)), "{m:?}");
        assert!(m.recv_done.is_some(), "{m:?}");
    }
}

#[test]
fn a_multipath_workload_must_be_a_flow_source() {
    let text = format!(
        "[topology]\n{LEAF_SPINE}\n\n[[traffic]]\nkind = \"multipath\"\nworkload = {{ kind = \"multipath\", \
         messages = [] }}\n"
    );
    let e = input_error(&text);
    assert!(e.contains("traffic[0].workload") && e.contains("bad.toml:"), "{e}");
    let text = format!("[topology]\n{LEAF_SPINE}\n\n[[traffic]]\nkind = \"multipath\"\nqps = 2\n");
    assert!(input_error(&text).contains("traffic[0].messages"));
}
