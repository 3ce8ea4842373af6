//! Tests of the egress port: the scheduler against its rule, the pass-through, the layout.

use super::*;
use crate::fabric::PacketKind;

fn pkt(pg: u8) -> Packet {
    let mut p = Packet::pfc(PacketKind::Pause, pg, 100);
    p.kind = PacketKind::Data;
    p
}

/// The scheduler's rule written as a loop: class 0 first, then round robin over the
/// unpaused, non-empty classes 1..8 starting after the last one served.
fn next_class_by_loop(port: &PortState) -> Option<usize> {
    if !port.egress[0].queue.is_empty() {
        return Some(0);
    }
    (1..NUM_PRIOS)
        .map(|i| 1 + (port.rr_last as usize + i - 1) % (NUM_PRIOS - 1))
        .find(|&q| !port.paused[q] && !port.egress[q].queue.is_empty())
}

#[test]
fn bit_mask_scheduler_follows_the_round_robin_rule() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
    let mut pool = PacketPool::default();
    let mut port = PortState::new(NodeId(0), PortId(1), 0, Rate::gbps(100), Time::from_ns(1000));
    for step in 0..50_000u64 {
        match rng.gen_range(0..10) {
            0..=3 => {
                let q = rng.gen_range(0..NUM_PRIOS);
                port.enqueue(q, pkt(q as u8), &mut pool);
            }
            4 => {
                let q = rng.gen_range(1..NUM_PRIOS);
                port.set_paused(q, rng.gen_bool(0.5), Time(step));
            }
            _ => {
                let want = next_class_by_loop(&port);
                let peeked = port.peek_next();
                let got = port.dequeue_parked(&pool);
                assert_eq!(got.map(|(q, _)| q), want, "step {step}");
                assert_eq!(got.map(|(_, r)| r), peeked, "step {step}: peek_next names the packet sent");
                if let Some((_, r)) = got {
                    pool.take(r);
                }
            }
        }
        assert_eq!(port.has_queued(), port.egress.iter().any(|c| !c.queue.is_empty()));
    }
}

#[test]
fn a_packet_passed_through_leaves_the_port_as_its_enqueue_and_dequeue_would() {
    // Two ports under the same random operations; where `pass_through` lets a packet
    // of class q through the first, the second queues it and dequeues at once: it
    // must send that very class, and both must then agree on everything the scheduler
    // reads. Where it refuses, the packet joins both queues.
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
    let mut pool = PacketPool::default();
    let new = || PortState::new(NodeId(0), PortId(1), 0, Rate::gbps(100), Time::from_ns(1000));
    let (mut a, mut b) = (new(), new());
    let (mut passed, mut refused) = (0, 0);
    for step in 0..20_000u64 {
        if step % 16 == 0 {
            // Now and then every class resumes and both ports drain: an idle port again.
            for port in [&mut a, &mut b] {
                (1..NUM_PRIOS).for_each(|q| port.set_paused(q, false, Time(step)));
                while let Some((_, r)) = port.dequeue_parked(&pool) {
                    pool.take(r);
                }
            }
        }
        match rng.gen_range(0..5) {
            0 => {
                let q = rng.gen_range(1..NUM_PRIOS);
                let pause = rng.gen_bool(0.3);
                a.set_paused(q, pause, Time(step));
                b.set_paused(q, pause, Time(step));
            }
            1 | 2 => {
                for port in [&mut a, &mut b] {
                    if let Some((_, r)) = port.dequeue_parked(&pool) {
                        pool.take(r);
                    }
                }
            }
            _ => {
                let q = rng.gen_range(0..NUM_PRIOS);
                if a.pass_through(q) {
                    passed += 1;
                    b.enqueue(q, pkt(q as u8), &mut pool);
                    let (sent, r) = b.dequeue_parked(&pool).expect("queued");
                    assert_eq!(sent, q, "step {step}");
                    pool.take(r);
                } else {
                    refused += 1;
                    assert!(a.has_queued() || a.paused[q], "step {step}: refused class {q}");
                    a.enqueue(q, pkt(q as u8), &mut pool);
                    b.enqueue(q, pkt(q as u8), &mut pool);
                }
            }
        }
        let seen = |p: &PortState| (p.rr_last, p.occupied, p.paused_mask, p.egress.each_ref().map(|c| c.bytes));
        assert_eq!(seen(&a), seen(&b), "step {step}");
    }
    assert!(passed > 100 && refused > 100, "{passed} passed, {refused} refused");
}

#[test]
fn class_zero_is_strict_and_others_round_robin() {
    let mut pool = PacketPool::default();
    let mut port = PortState::new(NodeId(0), PortId(1), 0, Rate::gbps(100), Time::from_ns(1000));
    port.enqueue(3, pkt(3), &mut pool);
    port.enqueue(3, pkt(3), &mut pool);
    port.enqueue(5, pkt(5), &mut pool);
    port.enqueue(0, pkt(0), &mut pool);
    let order: Vec<usize> = std::iter::from_fn(|| port.dequeue(&mut pool).map(|(q, _)| q)).collect();
    assert_eq!(order, vec![0, 3, 5, 3]);
}

#[test]
fn paused_class_is_skipped_but_class_zero_is_not() {
    let mut pool = PacketPool::default();
    let mut port = PortState::new(NodeId(0), PortId(1), 0, Rate::gbps(100), Time::from_ns(1000));
    port.set_paused(3, true, Time(0));
    port.enqueue(3, pkt(3), &mut pool);
    port.enqueue(0, pkt(0), &mut pool);
    assert_eq!(port.dequeue(&mut pool).map(|(q, _)| q), Some(0));
    assert!(port.dequeue(&mut pool).is_none());
    port.set_paused(3, false, Time(500));
    assert_eq!(port.counters.paused_ps, 500);
    assert_eq!(port.dequeue(&mut pool).map(|(q, _)| q), Some(3));
}

#[test]
fn class_scheduler_skips_a_paused_strict_class_and_serves_it_after_resume() {
    use crate::fabric::classes::{ClassTable, Scheduler};
    let mut t = ClassTable::uniform(true);
    t.classes[2].scheduler = Scheduler::Strict;
    let mut pool = PacketPool::default();
    let mut port = PortState::new(NodeId(0), PortId(1), 0, Rate::gbps(100), Time::from_ns(1000));
    port.classes = Some(Box::new(t.port_state(1048)));
    for q in [2, 2, 3, 3] {
        port.enqueue(q, pkt(q as u8), &mut pool);
    }
    port.set_paused(2, true, Time(0));
    assert_eq!(port.dequeue_by_class(&mut pool).map(|(q, _)| q), Some(3), "paused strict class skipped");
    port.set_paused(2, false, Time(10));
    let order: Vec<usize> = std::iter::from_fn(|| port.dequeue_by_class(&mut pool).map(|(q, _)| q)).collect();
    assert_eq!(order, vec![2, 2, 3]);
    let s = &port.classes.as_ref().unwrap().stats;
    assert_eq!((s[2].tx_packets, s[3].tx_packets, s[3].tx_bytes), (2, 2, 200));
    assert!(!port.has_queued());
}

mod layout {
    use super::super::PortState;
    use std::mem::offset_of;

    #[test]
    fn a_packet_hop_touches_the_first_lines() {
        // The per-hop fields stay within the lines the struct's comment gives them.
        assert_eq!(std::mem::align_of::<PortState>(), 64);
        // Line 0: all an enqueue reads (flags, transmitter), and what a switch's receive
        // reads of the port a packet arrives on (its node, switch and index).
        for end in [
            offset_of!(PortState, tx_end) + 16,
            offset_of!(PortState, delay) + 8,
            offset_of!(PortState, tx_packets) + 8,
            offset_of!(PortState, node) + 4,
            offset_of!(PortState, unit) + 4,
            offset_of!(PortState, local) + 2,
            offset_of!(PortState, special) + 1,
            offset_of!(PortState, down) + 1,
            offset_of!(PortState, busy) + 1,
            offset_of!(PortState, paused) + 8,
        ] {
            assert!(end <= 64, "{end}");
        }
        // Line 1: all an arrival reads of the sending port, and the rest of a transmission.
        assert_eq!(offset_of!(PortState, in_flight), 64);
        for end in [
            offset_of!(PortState, peer) + 4,
            offset_of!(PortState, peer_lossy) + 1,
            offset_of!(PortState, peer_on_host) + 1,
            offset_of!(PortState, rate_class) + 1,
            offset_of!(PortState, rate) + 8,
        ] {
            assert!((64..=128).contains(&end), "{end}");
        }
        let ws = std::mem::size_of::<crate::fabric::Wire>();
        assert!(ws <= 48, "{ws}");
        // Each class's queue and byte count on one line: four classes a line.
        assert_eq!(offset_of!(PortState, egress), 128);
        assert_eq!(std::mem::size_of::<super::super::ClassQueue>(), 16);
        assert_eq!(std::mem::size_of::<[super::super::ClassQueue; crate::fabric::NUM_PRIOS]>(), 128);
        assert_eq!(std::mem::size_of::<PortState>(), 384);
    }
}
