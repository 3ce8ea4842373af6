//! Queue-pair transports (`rnic/transport.rs`, `sim/mech/transport.rs`): UC sends no ACK
//! and a lost packet loses its message; UD datagrams are at most one MTU and every UD QP of
//! a NIC is one context of the QP-context cache. RoCE and InfiniBand.

use rdmalab::sim::{Results, StopReason};

use crate::fixtures;

fn run(toml: &str) -> Results {
    let mut sim = fixtures::scenario(toml, "transport.toml").simulation().expect("valid scenario");
    let r = sim.run_to_end();
    assert!(matches!(r, StopReason::StopTime | StopReason::Finished), "{r:?}");
    sim.results().expect("conservation holds")
}

/// A 7-host star at 40 Gb/s with 1 KB packets; `ib` makes it InfiniBand.
fn star(ib: bool) -> String {
    let ib = if ib { "cc = \"none\"\nlink_layer = \"infiniband\"\n" } else { "" };
    format!("[topology]\nkind = \"star\"\nhosts = 7\nrate = \"40Gbps\"\ndelay = \"1us\"\n[fabric]\nmtu = 1024\n{ib}")
}

/// One 100 KB flow from host 0 to host 1 over `transport`.
fn one_flow(transport: &str, ib: bool) -> Results {
    run(&format!(
        "{}[[traffic]]\nkind = \"flows\"\ntransport = \"{transport}\"\nflows = [{{ src = 0, dst = 1, size = 102400 }}]\n",
        star(ib)
    ))
}

#[test]
fn uc_puts_no_ack_on_the_wire_and_delivers_the_flow() {
    for ib in [false, true] {
        let uc = one_flow("uc", ib);
        assert_eq!(uc.records.len(), 1, "the flow completes (ib {ib})");
        assert_eq!(uc.counters.payload_bytes_delivered, 102400);
        let rc = one_flow("rc", ib);
        if ib {
            // InfiniBand's credit packets cross links too: RC adds its ACKs (and their credits).
            assert!(uc.counters.packet_hops < rc.counters.packet_hops, "no ACK (ib)");
        } else {
            // Each data packet crosses two links (host - switch - host); nothing else does.
            assert_eq!(uc.counters.packet_hops, 2 * uc.counters.data_packets_sent, "no ACK");
            assert!(rc.counters.packet_hops > 2 * rc.counters.data_packets_sent, "RC acknowledges");
        }
        assert_eq!(uc.counters.data_packets_sent, rc.counters.data_packets_sent, "same data (ib {ib})");
    }
}

/// A closed-loop application on host 0 posting 100 messages of 20 KB to host 1 over
/// `transport`, with the host's link down for `outage` from 40 us on.
fn messages_through_an_outage(transport: &str, outage: &str) -> Results {
    run(&format!(
        "{}[[app]]\nhost = 0\ndst = 1\nsize = 20480\nwr_num = 1\ntotal_bytes = 2048000\ntransport = \"{transport}\"\n\
         [[events]]\nkind = \"link_down\"\nat = \"40us\"\na = 0\nb = 7\n[[events]]\nkind = \"link_up\"\nat = \"{outage}\"\na = 0\nb = 7\n",
        star(false)
    ))
}

#[test]
fn a_dropped_packet_loses_one_uc_message_and_rc_retransmits() {
    let uc = messages_through_an_outage("uc", "40.3us");
    assert!(uc.counters.link_down_losses >= 1, "the outage drops a packet");
    assert_eq!(uc.mechanism_count("messages_lost"), 1);
    assert_eq!(uc.counters.payload_bytes_delivered, 2048000 - 20480, "exactly the one message is gone");
    assert_eq!(uc.counters.timeouts + uc.counters.nacks, 0, "nothing is recovered");
    let rc = messages_through_an_outage("rc", "40.3us");
    assert_eq!(rc.mechanism_count("messages_lost"), 0);
    assert_eq!(rc.counters.payload_bytes_delivered, 2048000);
}

#[test]
fn ud_is_one_context_for_every_destination_and_one_mtu_per_datagram() {
    // Host 0 sends to six hosts at once through a one-entry cache with serial fetches: six RC
    // QPs thrash it, six UD QPs are one context (one cold miss).
    let toml = |t: &str| {
        let flows: Vec<String> = (1..7).map(|d| format!("{{ src = 0, dst = {d}, size = 51200 }}")).collect();
        format!(
            "{}qp_cache_entries = 1\nqp_cache_miss_penalty = \"1us\"\nqp_cache_fetch = \"serial\"\n\
             [[traffic]]\nkind = \"flows\"\ntransport = \"{t}\"\nflows = [{}]\n",
            star(false),
            flows.join(", ")
        )
    };
    let ud = run(&toml("ud"));
    assert_eq!(ud.records.len(), 6);
    assert_eq!(ud.counters.qp_cache_misses, 1, "one context for six destinations");
    let rc = run(&toml("rc"));
    assert!(rc.counters.qp_cache_misses > 100, "six RC contexts thrash one entry: {}", rc.counters.qp_cache_misses);
    // A UD application's datagram is at most one MTU.
    let err = fixtures::build_error(
        &format!(
            "stop_time = \"1ms\"\n{}[[app]]\nhost = 0\ndst = 1\nsize = 2048\nwr_num = 1\ntransport = \"ud\"\n",
            star(false)
        ),
        "transport.toml",
    );
    assert!(err.contains("app[0].size") && err.contains("one MTU"), "{err}");
    let err = fixtures::build_error(
        &format!("{}[[traffic]]\nkind = \"flows\"\ntransport = \"xx\"\nflows = []\n", star(false)),
        "t.toml",
    );
    assert!(err.contains("transport") && err.contains("rc, uc, ud"), "{err}");
}

/// UC and UD flows across pods of a k = 4 fat tree into small lossy buffers: the same FCT
/// file and the same lost messages for 1, 2 and 4 threads (the parallel engine's cut).
#[test]
fn lossy_uc_and_ud_runs_are_the_same_for_any_thread_count() {
    use rdmalab::formats::fct::write_fct;
    use rdmalab::sim::parallel::Runner;
    let run = |threads: u32| {
        let text = "seed = 5\n[topology]\nkind = \"fat_tree\"\nk = 4\n\
            [[traffic]]\nkind = \"incast\"\ntransport = \"uc\"\nsenders = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n\
            receiver = 0\nsize = 100000\nstart = \"10us\"\n\
            [[traffic]]\nkind = \"incast\"\ntransport = \"ud\"\nsenders = [0, 1, 2, 3]\nreceiver = 12\nsize = 100000\n\
            start = \"10us\"\n[fabric]\ncc = \"none\"\nbuffer_mb = 0.3\nlossless = false\n";
        let mut s = fixtures::scenario(text, "lossy_uc.toml");
        s.config.threads = Some(threads);
        let mut r = Runner::new(s).expect("builds");
        r.run_to_end();
        let res = r.results().expect("bytes conserved");
        let mut fct = Vec::new();
        write_fct(&mut fct, &res.records).unwrap();
        (
            String::from_utf8(fct).unwrap(),
            res.mechanism_count("messages_lost"),
            res.counters.drops,
            res.counters.payload_bytes_delivered,
        )
    };
    let one = run(1);
    assert!(one.2 > 100 && one.1 > 0, "the incast overflows the buffers and loses UC messages: {:?}", (one.1, one.2));
    for threads in [2, 4] {
        let many = run(threads);
        assert_eq!((one.1, one.2, one.3), (many.1, many.2, many.3), "counters differ with {threads} threads");
        assert!(one.0 == many.0, "FCT file differs with {threads} threads");
    }
}
