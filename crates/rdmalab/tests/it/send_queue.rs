//! The send queue of an application's QP is `[rnic] max_send_wr` deep (`SimConfig::max_send_wr`):
//! `ibv_post_send` fails with ENOMEM on a full queue, and a WQE leaves the queue with its
//! completion (for RC, its acknowledgement). Each application holds what found the queue full
//! and posts it as completions free slots: a job's rank, the data-partition paper's multipath sender and both
//! halves of Virtuoso. Checked against what the verbs' rule implies (a transfer
//! posted the instant the one `depth` before it completed; never more than `depth` WQEs of a
//! QP between post and acknowledgement) and for the work being done whole.

use rdmalab::app::deps::{Transfer, TransferGraph};
use rdmalab::multipath::virtuoso::WrKind;
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures::{input_error, run_finished, run_threads, scenario};

/// `n` transfers of `bytes` from host 0 to host 1 on one QP, all released at once, with the
/// send queue `depth` deep.
fn one_lane(n: usize, bytes: u64, depth: u32) -> Results {
    let t = Transfer { src: NodeId(0), dst: NodeId(1), bytes, lane: 0, delay: Time::ZERO, deps: vec![] };
    let topo = builders::star(2, Rate::gbps(100), Time::from_us(1)).unwrap();
    let cfg = SimConfig { max_send_wr: depth, ..SimConfig::default() };
    let mut sim = Simulation::new(topo, vec![], cfg).unwrap();
    sim.add_transfers(TransferGraph::new(vec![t; n]).unwrap(), Time::ZERO).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    sim.results().unwrap()
}

#[test]
fn a_rank_posts_a_held_transfer_the_instant_a_slot_frees() {
    let (n, bytes) = (8, 20_000);
    let deep = one_lane(n, bytes, rdmalab::rnic::DEFAULT_MAX_SEND_WR);
    assert!(deep.records.iter().all(|f| f.start == Time::ZERO), "a deep queue takes every transfer at once");
    for depth in [1u32, 3] {
        let r = one_lane(n, bytes, depth);
        assert_eq!(r.records.len(), n, "depth {depth}: every transfer completes");
        let mut by_post: Vec<_> = r.records.iter().map(|f| (f.start, f.start + f.fct)).collect();
        by_post.sort();
        // The first `depth` go at once; transfer i when transfer i - depth was acknowledged
        // (completions come in post order on one QP).
        for (i, &(post, _)) in by_post.iter().enumerate() {
            let expect = if i < depth as usize { Time::ZERO } else { by_post[i - depth as usize].1 };
            assert_eq!(post, expect, "depth {depth}, transfer {i}");
        }
        assert!(r.last_completion > deep.last_completion, "depth {depth}: holding costs time");
    }
}

/// The `[rnic]` table that sets the send queue `depth` deep (none: the default depth).
fn rnic_block(depth: Option<u32>) -> String {
    depth.map_or(String::new(), |d| format!("[rnic]\nmax_send_wr = {d}\n"))
}

/// Runs the scenario `toml` (named `name` in errors) to its end with the applications'
/// posts traced (`Results::app_posts`).
fn run_traced(toml: &str, name: &str) -> Results {
    let mut s = scenario(toml, name);
    s.config.trace_apps = true;
    run_finished(s)
}

/// The data-partition paper's sender on a two-path fabric, `outstanding` chunks a QP, `depth` deep queues.
fn multipath(outstanding: u32, depth: Option<u32>) -> Results {
    let rnic = rnic_block(depth);
    let toml = format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\nbottleneck_links = 2\nbottleneck_rate = \"10Gbps\"\n\
         host_rate = \"10Gbps\"\ndelay = \"2us\"\n[fabric]\ncc = \"none\"\n{rnic}\
         [[traffic]]\nkind = \"multipath\"\nqps = 2\nchunk_size = 4096\noutstanding = {outstanding}\n\
         messages = [{{ src = 0, dst = 1, size = 400000 }}, {{ src = 0, dst = 1, size = 100000 }}]\n"
    );
    run_finished(scenario(&toml, "mp.toml"))
}

/// The most chunks of one QP between post and acknowledgement at any instant.
fn most_in_queue(r: &Results) -> usize {
    let chunks = &r.mp_chunks;
    let mut most = 0;
    for c in chunks {
        let at = c.post;
        let open = chunks.iter().filter(|d| d.qp == c.qp && d.post <= at && d.done.is_none_or(|t| t > at)).count();
        most = most.max(open);
    }
    most
}

#[test]
fn multipath_keeps_at_most_the_depth_in_each_send_queue() {
    let free = multipath(8, None);
    assert_eq!(most_in_queue(&free), 8, "without a small depth, `outstanding` bounds each QP");
    let held = multipath(8, Some(3));
    assert_eq!(most_in_queue(&held), 3);
    assert_eq!(held.mp_messages.len(), 2);
    assert!(held.mp_messages.iter().all(|m| m.fct.is_some()), "every message completes");
    let bytes = |r: &Results| r.mp_chunks.iter().map(|c| c.size).sum::<u64>();
    assert_eq!(bytes(&held), 500_000);
    assert_eq!(bytes(&free), 500_000);
}

/// Virtuoso on four parallel links, every verb, with `depth` deep queues both ways.
fn virtuoso(depth: u32) -> Results {
    run_finished(scenario(&virtuoso_toml(depth), "v.toml"))
}

fn virtuoso_toml(depth: u32) -> String {
    let messages = ["write", "send", "read", "read"]
        .iter()
        .map(|v| format!("{{ src = 0, dst = 1, size = 800000, verb = \"{v}\" }}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\nbottleneck_links = 4\nbottleneck_rate = \"10Gbps\"\n\
         host_rate = \"10Gbps\"\nips_per_host = 4\ndelay = \"2us\"\n\
         [fabric]\npath_selection = \"source_ip\"\ncc = \"none\"\n[rnic]\nmax_send_wr = {depth}\n\
         [[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"src_ip\"\nqps = 4\n\
         weights = \"equal\"\nmessages = [{messages}]\n"
    )
}

#[test]
fn virtuoso_holds_sub_wrs_and_read_answers_for_room() {
    let deep = virtuoso(rdmalab::rnic::DEFAULT_MAX_SEND_WR);
    let held = virtuoso(1);
    for r in [&deep, &held] {
        assert_eq!(r.mp_messages.len(), 4);
        assert!(r.mp_messages.iter().all(|m| m.fct.is_some()), "every message completes");
    }
    // The same sub-WRs; at depth 1 a path's next one is posted when the last is acknowledged.
    let data = |r: &Results| r.mp_wrs.iter().filter(|w| w.kind == WrKind::Data).map(|w| w.size).sum::<u64>();
    assert_eq!(data(&held), data(&deep));
    let most_open = |r: &Results| {
        let wrs: Vec<_> = r.mp_wrs.iter().filter(|w| matches!(w.kind, WrKind::Data | WrKind::Notice)).collect();
        let open_at = |w: &&rdmalab::multipath::MpWrRecord| {
            wrs.iter().filter(|d| d.path == w.path && d.post <= w.post && d.done.is_none_or(|t| t > w.post)).count()
        };
        wrs.iter().map(open_at).max().unwrap_or(0)
    };
    assert!(most_open(&deep) > 1, "a deep queue takes a path's sub-WRs at once");
    assert_eq!(most_open(&held), 1);
}

#[test]
fn held_wrs_are_the_same_at_any_thread_count() {
    // The held WRs are the application's state on its own host, freed by its own completions:
    // cut into partitions, the run posts and completes every WR when one thread does.
    let toml = virtuoso_toml(1);
    let one = run_threads(&toml, "v.toml", 1);
    let wrs = |r: &Results| r.mp_wrs.iter().map(|w| (w.path, w.post, w.done)).collect::<Vec<_>>();
    let fcts = |r: &Results| r.mp_messages.iter().map(|m| m.fct).collect::<Vec<_>>();
    for threads in [2, 4] {
        let cut = run_threads(&toml, "v.toml", threads);
        assert_eq!(wrs(&cut), wrs(&one), "{threads} threads");
        assert_eq!(fcts(&cut), fcts(&one), "{threads} threads");
    }
}

#[test]
fn a_send_queue_of_no_wqes_is_refused() {
    let toml = "[topology]\nkind = \"star\"\nhosts = 2\n[rnic]\nmax_send_wr = 0\n";
    let e = input_error(toml);
    assert!(e.contains("rnic.max_send_wr") && e.contains("must be 1 to"), "{e}");
}

/// One path whose only link is down for the first 10 ms (`tests/it/virtuoso_lossy.rs`):
/// a WRITE, a second WRITE and a READ, WRs failing after `fabric.retry_limit` rounds.
fn outage(depth: u32) -> Results {
    let toml = format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\nbottleneck_links = 1\nbottleneck_rate = \"1Gbps\"\n\
         host_rate = \"10Gbps\"\nips_per_host = 1\ndelay = \"2us\"\n\
         [fabric]\npath_selection = \"source_ip\"\ncc = \"none\"\nlossless = false\nretry_limit = 3\n\
         [rnic]\nmax_send_wr = {depth}\n\
         [[traffic]]\nkind = \"multipath\"\nsplit = \"virtuoso\"\npath_by = \"src_ip\"\nqps = 1\nweights = \"equal\"\n\
         messages = [{{ src = 0, dst = 1, size = 100000 }}, {{ src = 0, dst = 1, size = 50000 }}, \
         {{ src = 0, dst = 1, size = 70000, verb = \"read\" }}]\n\
         [[events]]\nkind = \"link_down\"\nat = \"0ns\"\na = 2\nb = 3\n\
         [[events]]\nkind = \"link_up\"\nat = \"10ms\"\na = 2\nb = 3\n"
    );
    run_finished(scenario(&toml, "outage.toml"))
}

#[test]
fn after_an_outage_failed_wrs_go_before_held_ones_and_every_message_completes() {
    for depth in [1, rdmalab::rnic::DEFAULT_MAX_SEND_WR] {
        let r = outage(depth);
        assert_eq!(r.mp_messages.len(), 3);
        for m in &r.mp_messages {
            let fct = m.fct.unwrap_or_else(|| panic!("depth {depth}: message {:?} never completes", m.message));
            assert!(fct > Time::from_ms(10), "depth {depth}: nothing gets through before the link is back");
        }
        // The WRs of message 0 (the one that failed) are all posted before message 1's
        // first: what failed goes before what waits for room.
        let posts = |msg: u32| r.mp_wrs.iter().filter(move |w| w.message.is_some_and(|m| m.0 == msg)).map(|w| w.post);
        let first_of_1 = posts(1).min().expect("message 1 has WRs");
        if depth == 1 {
            assert!(posts(0).all(|t| t < first_of_1), "depth 1: {:?}", r.mp_wrs);
        }
    }
}

/// A reused-QP staggered transfer of 200 chunks of 10 kB on 2 slots, a turn every 0.1 µs
/// (far faster than a 10 kB chunk's 0.8 µs on the 100 Gb/s link), with `[rnic] max_send_wr`
/// = `depth` (none: the default).
fn staggered_reuse(depth: Option<u32>) -> Results {
    let rnic = rnic_block(depth);
    let toml = format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 1\n[fabric]\ncc = \"none\"\n{rnic}\
         [[traffic]]\nkind = \"staggered_qps\"\nsrc = 0\ndst = 1\nqps = 2\nsize = 2000000\nchunk = 10000\n\
         interval = \"100ns\"\npolicy = \"reuse\"\n"
    );
    run_traced(&toml, "stagger.toml")
}

/// The most chunks of one QP posted and not yet acknowledged at any instant (a chunk that
/// completes at `t` has left the queue before one posted at `t` joins it).
fn most_chunks_queued(r: &Results) -> usize {
    let posts = &r.app_posts;
    let queued_at = |p: &rdmalab::sim::AppPost| {
        posts.iter().filter(|d| d.qp == p.qp && d.time <= p.time && d.done.is_none_or(|t| t > p.time)).count()
    };
    posts.iter().map(queued_at).max().unwrap_or(0)
}

#[test]
fn a_staggered_generator_holds_chunks_past_the_send_queue_depth() {
    let (chunks, size) = (200u64, 2_000_000u64);
    let deep = staggered_reuse(None);
    let held = staggered_reuse(Some(4));
    for r in [&deep, &held] {
        assert_eq!(r.app_posts.len() as u64, chunks, "each chunk posted once");
        assert!(r.app_posts.iter().all(|p| p.done.is_some()), "every chunk completes");
        assert_eq!(r.app_posts.iter().map(|p| p.size).sum::<u64>(), size);
        let transfer = r.records.iter().find(|f| f.src == NodeId(0)).expect("the transfer completes");
        assert_eq!(transfer.size, size);
        // Each slot's chunks go on its one QP in order, every second chunk.
        for slot in 0..2u32 {
            let mut on: Vec<_> = r.app_posts.iter().filter(|p| p.slot == slot).collect();
            on.sort_by_key(|p| (p.time, p.chunk));
            assert!(on.iter().all(|p| p.qp == on[0].qp && p.chunk % 2 == slot as u64));
            assert!(on.windows(2).all(|w| w[0].chunk < w[1].chunk), "slot {slot} posts in order");
        }
    }
    // Without a small depth the turns outrun the QPs: their queues grow far past 4.
    assert!(most_chunks_queued(&deep) > 20, "{}", most_chunks_queued(&deep));
    assert!(deep.app_posts.iter().all(|p| p.time == Time::from_ps(100_000 * p.chunk)), "every chunk at its turn");
    // With depth 4 no QP ever holds more than 4; the others wait for a completion, and a
    // held chunk goes the instant one frees a slot.
    assert_eq!(most_chunks_queued(&held), 4);
    let late: Vec<_> = held.app_posts.iter().filter(|p| p.time > Time::from_ps(100_000 * p.chunk)).collect();
    assert!(late.len() as u64 > chunks / 2, "{} chunks held", late.len());
    for p in late {
        assert!(held.app_posts.iter().any(|d| d.qp == p.qp && d.done == Some(p.time)), "chunk {}", p.chunk);
    }
    assert!(held.last_completion >= deep.last_completion);
}

/// A shuffled overlay of 3 hosts on a star, 20 kB to a successor every 1 µs (each
/// destination every other step, far faster than a chunk's 1.6 µs on the 100 Gb/s link
/// shared by two senders), with `[rnic] max_send_wr` = `depth` (none: the default).
fn overlay(depth: Option<u32>) -> Results {
    let rnic = rnic_block(depth);
    let toml = format!(
        "[topology]\nkind = \"star\"\nhosts = 3\n[fabric]\ncc = \"none\"\n{rnic}\
         [[traffic]]\nkind = \"shuffled_overlay\"\nhosts = [0, 1, 2]\nchunk = 20000\ninterval = \"1us\"\n\
         until = \"60us\"\n"
    );
    run_traced(&toml, "overlay.toml")
}

/// The most flows of one overlay QP posted and not yet completed at any instant: a flow's
/// post from the trace, its completion from its record (its FCT counts from its post).
fn most_flows_queued(r: &Results) -> usize {
    let done = |p: &rdmalab::sim::AppPost| {
        let rec = r.records.iter().find(|f| f.flow as u64 == p.chunk).expect("every flow completes");
        p.time + rec.fct
    };
    let spans: Vec<_> = r.app_posts.iter().map(|p| (p.qp, p.time, done(p))).collect();
    let queued_at = |&(qp, at, _): &(rdmalab::QpId, Time, Time)| {
        spans.iter().filter(|&&(q, post, end)| q == qp && post <= at && end > at).count()
    };
    spans.iter().map(queued_at).max().unwrap_or(0)
}

#[test]
fn a_shuffled_overlay_holds_flows_past_the_send_queue_depth() {
    let deep = overlay(None);
    let held = overlay(Some(2));
    for r in [&deep, &held] {
        assert_eq!(r.records.len(), 3 * 60, "every member's flow of every step completes");
        assert!(r.records.iter().all(|f| f.size == 20_000));
        assert_eq!(r.app_posts.len(), r.records.len(), "each flow posted once");
    }
    assert!(most_flows_queued(&deep) > 2, "{}", most_flows_queued(&deep));
    assert_eq!(most_flows_queued(&held), 2);
    // A held flow is posted at the instant a flow on its QP completes.
    let late: Vec<_> = held
        .app_posts
        .iter()
        .filter(|p| {
            let start = held.records.iter().find(|f| f.flow as u64 == p.chunk).unwrap().start;
            p.time > start
        })
        .collect();
    assert!(!late.is_empty());
    for p in late {
        let freed = held.app_posts.iter().any(|d| {
            let rec = held.records.iter().find(|f| f.flow as u64 == d.chunk).unwrap();
            d.qp == p.qp && d.time + rec.fct == p.time
        });
        assert!(freed, "flow {} posted at {:?}", p.chunk, p.time);
    }
}

/// A serial incast of 20 rounds of one 1000-byte packet from host 1 to host 0 in class 1, a
/// round due every 1 µs, while host 1 also sends 2 MB in class 3 into a five-host incast on
/// host 6 through a 1 MB buffer: the switch pauses host 1's class 3 for about 12 µs at a
/// time, and with `ack_high_prio = false` its NIC's ACK FIFO obeys that pause (the
/// reference's rule), so its ACKs of the grants wait while its messages (class 1) go. A
/// message arrives whole before the ACK of the grant that let it go, and the next grant finds
/// that grant still in the aggregator's send queue, `[rnic] max_send_wr` = `depth` (none: the
/// default).
fn serial_paused(depth: Option<u32>) -> Results {
    let rnic = rnic_block(depth);
    let toml = format!(
        "[topology]\nkind = \"star\"\nhosts = 7\n\
         [fabric]\ncc = \"none\"\nack_high_prio = false\nbuffer_mb = 1\n{rnic}\
         [[traffic]]\nkind = \"incast_rounds\"\nsenders = [1]\nreceiver = 0\nsize = 1000\nperiod = \"1us\"\n\
         rounds = 20\npg = 1\nstagger = \"serial\"\n\
         [[traffic]]\nkind = \"incast\"\nsenders = [1, 2, 3, 4, 5]\nreceiver = 6\nsize = 2000000\n"
    );
    run_traced(&toml, "serial.toml")
}

/// The serial incast's traced WRs of `size` bytes: its grants (`GRANT_BYTES`, 64) or its
/// messages.
fn serial_posts(r: &Results, size: u64) -> Vec<&rdmalab::sim::AppPost> {
    r.app_posts.iter().filter(|p| p.size == size).collect()
}

/// The most of `posts` on one QP posted and not yet acknowledged at any instant (a WR
/// acknowledged at `t` has left the queue before one posted at `t` joins it).
fn most_serial_queued(posts: &[&rdmalab::sim::AppPost]) -> usize {
    let queued_at = |p: &&rdmalab::sim::AppPost| {
        posts.iter().filter(|d| d.qp == p.qp && d.time <= p.time && d.done.is_none_or(|t| t > p.time)).count()
    };
    posts.iter().map(queued_at).max().unwrap_or(0)
}

#[test]
fn a_serial_aggregator_holds_a_grant_past_the_send_queue_depth() {
    let deep = serial_paused(None);
    let held = serial_paused(Some(1));
    for r in [&deep, &held] {
        let (grants, messages) = (serial_posts(r, 64), serial_posts(r, 1000));
        assert_eq!((grants.len(), messages.len()), (20, 20), "one grant and one message a round");
        assert!(r.app_posts.iter().all(|p| p.done.is_some()), "every grant and message is acknowledged");
        let serial: Vec<_> = r.records.iter().filter(|f| f.dst == NodeId(0)).collect();
        assert_eq!(serial.len(), 20, "every message completes");
        assert!(serial.iter().all(|f| f.src == NodeId(1) && f.size == 1000));
        assert_eq!(r.records.len(), 25, "and every flow of the background incast");
    }
    // Without a small depth the grants outrun their ACKs: several wait in the one queue.
    assert!(most_serial_queued(&serial_posts(&deep, 64)) > 2, "{}", most_serial_queued(&serial_posts(&deep, 64)));
    assert_eq!(most_serial_queued(&serial_posts(&deep, 1000)), 2, "a grant outruns a message's ACK too");
    // At depth 1 a grant never joins one not yet acknowledged: it waits for that one's ACK
    // and goes the instant it arrives; so does a sender's message.
    for size in [64, 1000] {
        let posts = serial_posts(&held, size);
        assert_eq!(most_serial_queued(&posts), 1, "{size}-byte WRs");
        let late: Vec<_> =
            posts.iter().filter(|p| posts.iter().any(|d| d.qp == p.qp && d.done == Some(p.time))).collect();
        assert!(late.len() >= 5, "{size}-byte WRs: {} held", late.len());
    }
    let end = |r: &Results| serial_posts(r, 1000).iter().filter_map(|p| p.done).max();
    assert!(end(&held) > end(&deep), "holding costs time");
}
