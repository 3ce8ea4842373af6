//! ConWeave's unit tests: the header, and a flow rerouted at most once per epoch.

use super::header::*;
use super::*;
use crate::engine::{stream, StreamKind};
use crate::fabric::PacketKind;
use crate::topology::builders::leaf_spine;
use crate::units::Rate;

/// Leaf 2 (host 0) and leaf 3 (host 1), four spines; leaf 2's uplinks.
fn fabric() -> (Topology, ConWeave, Vec<PortId>) {
    let t = leaf_spine(2, 4, 1, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap();
    let cw = ConWeave::new(&t, &LbConfig::default()).unwrap();
    let up = t.nodes[2].ports.iter().copied().filter(|p| !t.is_host(t.ports[p.idx()].peer_node)).collect();
    (t, cw, up)
}

fn data() -> Packet {
    let mut p = Packet::pfc(PacketKind::Data, 3, 1048);
    (p.src, p.dst, p.sip, p.dip, p.sport, p.dport) = (NodeId(0), NodeId(1), 11, 12, 1000, 100);
    p
}

#[test]
fn header_fields_round_trip_through_the_packet() {
    let mut p = data();
    let h = Header { flag: TAIL, phase: 1, tag: 15, epoch: 31, ts: 0xABC };
    h.write(&mut p);
    assert_eq!(Header::read(&p), h);
    assert!(after(0, 31) && after(5, 3) && !after(3, 5) && !after(7, 7));
    // 10 µs and 2 µs are units 39 and 7 of 256 ns; a later stamp before an earlier is no gap.
    assert_eq!(stamp_gap(stamp(Time::from_us(10)), stamp(Time::from_us(2))), Time::from_ns(32 * 256));
    assert_eq!(stamp_gap(stamp(Time::from_us(2)), stamp(Time::from_us(10))), Time::ZERO);
}

#[test]
fn a_flow_is_rerouted_at_most_once_per_epoch() {
    let (_, mut cw, up) = fabric();
    let mut rng = stream(1, StreamKind::Other, 9);
    let mut tally = Tally::default();
    let leaf = NodeId(2);
    let mut send = |cw: &mut ConWeave, us: u64, tally: &mut Tally| {
        let mut p = data();
        let port = cw.source(Time::from_us(us), leaf, &up, &mut p, &mut rng, tally);
        (port, Header::read(&p))
    };
    let (first, h) = send(&mut cw, 0, &mut tally);
    assert_eq!((h.flag, h.phase, h.epoch), (INIT, 0, 1), "the first packet asks for an RTT_REPLY");
    // The destination ToR reports ECN on the flow's path: it is avoided for 16 µs, so
    // that the reroute below cannot pick it again.
    let mut notify = Packet::pfc(PacketKind::LbControl, 0, 64);
    (notify.src, notify.dst) = (NodeId(1), NodeId(0));
    Header { flag: NOTIFY, tag: cw.tag[first.idx()] as u16, ..Header::default() }.write(&mut notify);
    cw.on_control(Time::from_us(1), leaf, &notify);
    // No reply: the base RTT is 4 µs (two 1 µs hops each way), the reply due by 8 µs.
    for us in 1..=8 {
        let (port, d) = send(&mut cw, us, &mut tally);
        assert_eq!((port, d.flag, d.phase, d.epoch), (first, DATA, 0, 1), "at {us} us");
    }
    let (tail_port, tail) = send(&mut cw, 9, &mut tally);
    assert_eq!((tail_port, tail.flag, tail.phase), (first, TAIL, 0), "the TAIL leaves on the old path");
    let (moved, after_tail) = send(&mut cw, 10, &mut tally);
    assert!(moved != first && after_tail.phase == 1 && after_tail.flag == DATA, "{after_tail:?}");
    assert_eq!(tally.reroutes, 1);
    // Without the CLEAR the epoch lasts: however late, no second reroute.
    for us in 11..250 {
        let (port, h) = send(&mut cw, us, &mut tally);
        assert_eq!((port, h.flag, h.phase, h.epoch), (moved, DATA, 1, 1), "at {us} us");
    }
    assert_eq!(tally.reroutes, 1, "once in the epoch");
    // The CLEAR (the TAIL's reply) closes the epoch: the next packet opens epoch 2 on
    // the same path, whose own late reply may move it once more.
    let mut clear = notify;
    Header { flag: CLEAR, phase: 1, tag: 0, epoch: 1, ts: 0 }.write(&mut clear);
    (clear.sip, clear.dip, clear.sport, clear.dport) = (12, 11, 100, 1000);
    cw.on_control(Time::from_us(250), leaf, &clear);
    let (port, h) = send(&mut cw, 251, &mut tally);
    assert_eq!((port, h.flag, h.phase, h.epoch), (moved, INIT, 0, 2));
    let rerouted = (252..400).filter(|&us| send(&mut cw, us, &mut tally).1.flag == TAIL).count();
    assert_eq!(rerouted, 1, "one TAIL in epoch 2");
}

#[test]
fn a_gap_counts_under_its_cause_until_the_receiver_catches_up() {
    use super::causes::{Seen, DEADLINE, OTHER, SEEN_EMPTY};
    let mut seen: Seen = SEEN_EMPTY;
    let mut c = Causes::default();
    // 0 and 1000 in order; 3000 released early opens a gap; 4000 follows it (go-back-N
    // discards both); 2000 comes late, the sender goes back to 3000: the gap closes at 5000.
    for (seq, cause) in [(0, OTHER), (1000, OTHER), (3000, DEADLINE), (4000, OTHER), (2000, OTHER)] {
        seen.forward(seq, 1000, cause, &mut c);
    }
    assert_eq!((c.ooo[DEADLINE as usize], c.gaps[DEADLINE as usize]), (2, 1));
    for seq in [3000, 4000] {
        seen.forward(seq, 1000, OTHER, &mut c);
    }
    // A new gap after the catch-up is a gap of its own, with its own cause.
    seen.forward(6000, 1000, OTHER, &mut c);
    assert_eq!(c.ooo, [2, 0, 0, 0, 1, 0]);
    assert_eq!(c.gaps, [1, 0, 0, 0, 1, 0]);
}

#[test]
fn a_flow_whose_rerouted_packets_come_first_starts_with_a_gap() {
    use super::causes::{Seen, DEADLINE, OTHER, SEEN_EMPTY, UNSEEN_START};
    let (mut seen, mut c): (Seen, Causes) = (SEEN_EMPTY, Causes::default());
    // REROUTED packets 5000 and 6000 reach the ToR first and are released by their
    // deadline: the receiver waits for byte 0, still on the old path.
    seen.on_tag(1, true, true);
    for seq in [5000, 6000] {
        seen.forward(seq, 1000, DEADLINE, &mut c);
    }
    // Go-back-N resends from 0 on the new path; 5000 and 6000 were discarded, and the
    // gap stays open until the resend has passed them.
    for seq in [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000] {
        seen.forward(seq, 1000, OTHER, &mut c);
    }
    assert_eq!((c.ooo[UNSEEN_START as usize], c.gaps[UNSEEN_START as usize]), (2, 1));
    assert_eq!(c.ooo.iter().sum::<u64>(), 2);
    // A phase-0 packet before anything is sent on: the stream starts with it, as before.
    let (mut seen, mut c): (Seen, Causes) = (SEEN_EMPTY, Causes::default());
    seen.on_tag(1, true, true);
    seen.on_tag(0, false, false);
    for seq in [0, 1000, 2000] {
        seen.forward(seq, 1000, OTHER, &mut c);
    }
    assert_eq!(c, Causes::default());
}

#[test]
fn a_fat_tree_names_every_path_and_each_pairs_base_rtt() {
    // k = 4: hosts 0..16, edges (the leaves) 16..24, aggregation 24..32, cores 32..36; two
    // leaves a pod. Within a pod a ToR has 2 paths (its uplinks), across pods 4 (uplink and
    // the aggregation switch's core link); the base RTT is 4 one-hop delays within a pod and
    // 8 across, as the artifact sets them (`network-load-balance.cc:1572`, `:1640`).
    let t = crate::topology::builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::from_us(1)).unwrap();
    let cw = ConWeave::new(&t, &LbConfig::default()).unwrap();
    assert_eq!(cw.leaves, 8);
    let pair = |a: usize, b: usize| a * cw.leaves + b;
    assert_eq!((cw.n_up[0], cw.upper[pair(0, 1)], cw.upper[pair(0, 2)]), (2, 1, 2));
    assert_eq!(cw.base_rtt[pair(0, 1)], Time::from_us(4));
    assert_eq!(cw.base_rtt[pair(0, 7)], Time::from_us(8));
    assert_eq!((cw.stride[16], cw.stride[24], cw.stride[32]), (0, 1, 2));
    // Above the ToR the aggregation switch follows the tag's upper part: tag = uplink + 2 x
    // upper, so tags 0..4 from leaf 0 take core links 0, 0, 1, 1.
    let mut p = data();
    p.src = NodeId(0);
    let follow = |tag: u16, p: &mut Packet| {
        Header { flag: DATA, tag, ..Header::default() }.write(p);
        cw.follow(NodeId(24), 2, p)
    };
    assert_eq!([0, 1, 2, 3].map(|tag| follow(tag, &mut p)), [Some(0), Some(0), Some(1), Some(1)]);
    // No header (an untracked flow) or a ToR: not followed.
    p.int_hops = 0;
    assert_eq!(cw.follow(NodeId(24), 2, &p), None);
    Header { flag: DATA, tag: 3, ..Header::default() }.write(&mut p);
    assert_eq!(cw.follow(NodeId(16), 2, &p), None);
}

#[test]
fn a_leaf_spine_keeps_one_path_per_uplink() {
    let (t, cw, up) = fabric();
    assert_eq!((cw.n_up[0], cw.upper[1]), (4, 1));
    assert_eq!(cw.base_rtt[1], Time::from_us(4));
    assert!(up.iter().enumerate().all(|(i, p)| cw.tag[p.idx()] as usize == i));
    assert!(t.switches().all(|s| cw.stride[s.idx()] == u8::from(!cw.is_leaf[s.idx()])));
}
