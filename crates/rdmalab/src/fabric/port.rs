//! Per-port state: the transmitter, the wire towards the peer, the egress queues and PFC.
//!
//! One event per port is pending at a time for transmission (`PortTxDone`) and one for the
//! wire (`LinkArrive` for the head packet): the packets on the wire wait in `in_flight`,
//! whose arrival times are non-decreasing because a link delivers in order.

use crate::fabric::arbitration::InputArbiter;
use crate::fabric::classes::ClassSched;
use crate::fabric::{Packet, PacketPool, PacketQueue, PacketRef, Wire, NUM_PRIOS};
use crate::ids::{NicId, NodeId, PortId, SwitchId};
use crate::units::{Rate, Time};

/// Counters of one egress port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Bytes transmitted.
    pub tx_bytes: u64,
    /// Packets transmitted.
    pub tx_packets: u64,
    /// PFC PAUSE frames this port's node sent out of this port (towards the upstream).
    pub pause_sent: u64,
    /// PFC PAUSE frames received on this port.
    pub pause_received: u64,
    /// Picoseconds during which at least one priority of this port was paused.
    pub paused_ps: u64,
    /// Packets ECN-marked at this egress port.
    pub ecn_marks: u64,
    /// Packets dropped at this port (buffer overflow on ingress, or link error on receive).
    pub drops: u64,
    /// InfiniBand: picoseconds during which some VL of this port lacked credits for a
    /// full packet (`fabric::ib`).
    pub credit_stall_ps: u64,
    /// Packets trimmed to their header at this egress port (`[fabric.trimming]`, filled in
    /// from `mech::trimming`'s counts when the results are taken).
    pub trims: u64,
    /// Payload bytes those trims cut off.
    pub trimmed_bytes: u64,
}

/// Runtime state of one port (one direction of a link).
///
/// The fields are laid out by hand (`repr(C)`), each port on cache lines of its own, in
/// the order a packet hop touches them: the first line holds the wire, addressing and
/// flags (all that a packet's arrival reads, of the port it left and of the port it
/// reaches), the second the transmitter and its counters, the third the per-class byte
/// counts (enqueue, dequeue, ECN, INT); the queues, one per class, follow, and what a
/// packet never touches comes last. With Rust's own order a hop touched six or seven of the
/// port's eight lines.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct PortState {
    // --- line 0: the wire, addressing and flags (all that `on_arrive` reads of the sending
    // port, and all that a switch reads of the receiving one: its node, MMU and position)
    /// Packets on the wire with their arrival time at the peer.
    pub in_flight: Wire,
    /// The peer's port (where packets sent here arrive).
    pub peer: PortId,
    /// Owning node.
    pub node: NodeId,
    /// Index of the owner's NIC (on a host) or switch (its MMU), copied from the
    /// simulation's side tables.
    pub unit: u32,
    /// Position of this port on its node (ifindex - 1); indexes the switch MMU.
    pub local: u16,
    /// Index of the rate's transmission-time table in the `TxClock`.
    pub rate_class: u8,
    /// The port belongs to a host (its transmitter is an RNIC's).
    pub on_host: bool,
    /// The peer port belongs to a host: what arrives there is received, not forwarded.
    pub peer_on_host: bool,
    /// Arrivals at the peer take the out-of-line path (`Simulation::arrival_hook`): the
    /// link corrupts packets at random (an error rate is set), or the fabric is InfiniBand.
    pub peer_lossy: bool,
    /// A `TxDone` event is pending: the transmitter is serialising a packet.
    pub busy: bool,
    /// The link is down (`sim::failures`): nothing is sent or received on it.
    pub down: bool,
    /// Bit `q` set: class `q` holds packets (mirrors `queues`, so that the scheduler
    /// finds the next class with two bit operations instead of a loop).
    occupied: u8,
    /// `paused` as a bit mask.
    paused_mask: u8,
    /// Last class served by the round robin over classes 1..8.
    pub rr_last: u8,
    /// The egress runs its out-of-line variants (`Simulation::switch_send_special`,
    /// `switch_enqueue_special`): the run has a class table, IOFD, Blitz's no-marking rule
    /// at host-facing ports, input-fair arbitration or per-port buffers. One test per
    /// enqueue and per dequeue, on a line both read anyway, instead of one per mechanism.
    pub special: bool,
    _line1: LineStart,
    // --- line 1: the transmitter, the owner
    /// Line rate.
    pub rate: Rate,
    /// When the last transmission ends, and the sequence number its `TxDone` event had
    /// (or would have had: see `Simulation::transmit`).
    pub tx_end: (Time, u64),
    /// Bytes transmitted so far (all kinds), for INT and `PortCounters::tx_bytes`.
    pub tx_bytes: u64,
    /// Packets transmitted so far (`PortCounters::tx_packets`).
    pub tx_packets: u64,
    /// Propagation delay.
    pub delay: Time,
    /// Classes the peer has paused (we must not send them).
    pub paused: [bool; NUM_PRIOS],
    _line2: LineStart,
    // --- line 2
    /// Bytes in each egress queue.
    pub queue_bytes: [u64; NUM_PRIOS],
    // --- line 3
    /// Egress queues (switches only; hosts arbitrate in the RNIC), linked through the pool.
    pub queues: [PacketQueue; NUM_PRIOS],
    // --- cold
    /// The class scheduler of a switch port when the run has `[[fabric.classes]]`
    /// (`fabric::classes`); `None`: the built-in one. (Read only on the out-of-line
    /// egress, `special`.)
    pub classes: Option<Box<ClassSched>>,
    /// The input-port arbiter of a switch port under `egress_arbitration = "input_fair"`
    /// (`fabric::arbitration`); `None`: arrival order. (Read only on the out-of-line
    /// egress, `special`.)
    pub arbiter: Option<Box<InputArbiter>>,
    /// Since when at least one class has been paused (for the paused-time counter).
    pub paused_since: Option<Time>,
    /// Counters other than `tx_bytes` and `tx_packets` (kept beside the transmitter and
    /// merged in by [`PortState::port_counters`]).
    pub counters: PortCounters,
}

/// A zero-sized field that starts a new cache line in a `repr(C)` struct.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct LineStart;

impl PortState {
    /// The NIC that owns this port (a host's port).
    #[inline]
    pub fn nic(&self) -> NicId {
        NicId(self.unit)
    }

    /// The switch that owns this port (a switch's port).
    #[inline]
    pub fn switch(&self) -> SwitchId {
        SwitchId(self.unit)
    }

    /// An idle port.
    pub fn new(node: NodeId, peer: PortId, local: u16, rate: Rate, delay: Time) -> PortState {
        PortState {
            node,
            peer,
            local,
            rate,
            rate_class: u8::MAX,
            delay,
            on_host: false,
            unit: NicId::NONE.0,
            peer_on_host: false,
            peer_lossy: false,
            busy: false,
            down: false,
            tx_end: (Time::ZERO, 0),
            in_flight: Wire::default(),
            queues: Default::default(),
            queue_bytes: [0; NUM_PRIOS],
            rr_last: 0,
            special: false,
            classes: None,
            arbiter: None,
            occupied: 0,
            paused: [false; NUM_PRIOS],
            paused_mask: 0,
            paused_since: None,
            counters: PortCounters::default(),
            tx_bytes: 0,
            tx_packets: 0,
            _line1: LineStart,
            _line2: LineStart,
        }
    }

    /// The port's counters, transmit counts included.
    pub fn port_counters(&self) -> PortCounters {
        PortCounters { tx_bytes: self.tx_bytes, tx_packets: self.tx_packets, ..self.counters }
    }

    /// Bytes queued over all classes.
    #[inline]
    pub fn total_queued(&self) -> u64 {
        self.queue_bytes.iter().sum()
    }

    /// The transmission that ends at `tx_end` comes after the event at (`now`, `key`) in
    /// the queue's order: the transmitter is still serialising. One 128-bit comparison
    /// (the tuple's comparison is a call in the optimised build, on every switch hop).
    #[inline(always)]
    pub fn serialising(&self, now: Time, key: u64) -> bool {
        let (end, seq) = self.tx_end;
        (u128::from(end.0) << 64 | u128::from(seq)) > (u128::from(now.0) << 64 | u128::from(key))
    }

    /// True when some class holds a packet (paused or not).
    #[inline]
    pub fn has_queued(&self) -> bool {
        self.occupied != 0
    }

    /// Appends a packet to class `q`. Always inlined: a call would copy the packet.
    #[inline(always)]
    pub fn enqueue(&mut self, q: usize, pkt: Packet, pool: &mut PacketPool) {
        self.queue_bytes[q] += pkt.wire as u64;
        let r = pool.park(pkt);
        self.queues[q].push_back(r, pool);
        self.occupied |= 1 << q;
    }

    /// A packet of class `q` arriving at this idle port would be sent at once: nothing is
    /// queued and its class is not paused. If so, the round robin steps to it as
    /// `dequeue_parked` would have after `enqueue_parked` (class 0 is outside the round
    /// robin), and the caller sends it without queueing it: every queue, byte count and
    /// mask is then as the enqueue and the dequeue would have left it.
    #[inline(always)]
    pub fn pass_through(&mut self, q: usize) -> bool {
        if !self.would_pass(q) {
            return false;
        }
        if q != 0 {
            self.rr_last = q as u8;
        }
        true
    }

    /// `pass_through` would let a packet of class `q` by (and change nothing yet).
    #[inline(always)]
    pub fn would_pass(&self, q: usize) -> bool {
        self.occupied == 0 && self.paused_mask & (1 << q) == 0
    }

    /// Appends the packet parked at `r` (of `wire` bytes) to class `q`.
    #[inline(always)]
    pub fn enqueue_parked(&mut self, q: usize, r: PacketRef, wire: u32, pool: &mut PacketPool) {
        self.queue_bytes[q] += wire as u64;
        self.queues[q].push_back(r, pool);
        self.occupied |= 1 << q;
    }

    /// `enqueue_parked` on a port with a mechanism's hook (`special`), for a packet that
    /// came in through input port `input` of the switch: the input-port arbiter, if any,
    /// decides when it joins the class's queue.
    #[cold]
    #[inline(never)]
    pub fn enqueue_special(&mut self, q: usize, r: PacketRef, wire: u32, input: u16, pool: &mut PacketPool) {
        match self.arbiter.as_deref_mut() {
            Some(a) if InputArbiter::arbitrates(q) => {
                self.queue_bytes[q] += wire as u64;
                self.occupied |= 1 << q;
                a.push(q, input, r, wire);
                if self.queues[q].is_empty() {
                    if let Some(next) = a.pop(q) {
                        self.queues[q].push_back(next, pool);
                    }
                }
            }
            _ => self.enqueue_parked(q, r, wire, pool),
        }
    }

    /// After class `q` sent its head packet: the arbiter, if any, picks the next one.
    #[inline]
    fn refill(&mut self, q: usize, pool: &mut PacketPool) {
        if let Some(next) = self.arbiter.as_deref_mut().and_then(|a| a.pop(q)) {
            self.queues[q].push_back(next, pool);
        }
    }

    /// The packets class `q` holds: the queue's, then those its arbiter has not yet picked.
    pub fn queued<'a>(&'a self, q: usize, pool: &'a PacketPool) -> impl Iterator<Item = PacketRef> + 'a {
        let held = self.arbiter.as_deref().into_iter().flat_map(move |a| a.held(q));
        self.queues[q].iter(pool).chain(held)
    }

    /// `dequeue`, leaving the packet parked: returns its class and reference.
    #[inline]
    pub fn dequeue_parked(&mut self, pool: &PacketPool) -> Option<(usize, PacketRef)> {
        let q = self.next_class()?;
        let r = self.queues[q].pop_front(pool)?;
        self.queue_bytes[q] -= pool.get(r).wire as u64;
        match self.queues[q].front() {
            Some(next) => pool.prefetch_head(next), // sent a packet time from now
            None => self.occupied &= !(1 << q),
        }
        Some((q, r))
    }

    /// Picks the next packet to send: class 0 first (strict priority, never paused), then
    /// round robin over classes 1..8 after the last served one, skipping paused and empty
    /// classes. Returns the class and the packet.
    ///
    /// A port with a class table is served by [`PortState::dequeue_by_class`] instead (this
    /// one still drains it when its link fails).
    #[inline]
    pub fn dequeue(&mut self, pool: &mut PacketPool) -> Option<(usize, Packet)> {
        let q = self.next_class()?;
        let r = self.queues[q].pop_front(pool)?;
        let p = pool.take(r);
        self.queue_bytes[q] -= p.wire as u64;
        self.refill(q, pool);
        if self.queues[q].is_empty() {
            self.occupied &= !(1 << q);
        }
        Some((q, p))
    }

    /// Takes class `q`'s head packet whatever the scheduler would serve (a mechanism drops
    /// it, `sim::mech::actions::Action::DiscardClass`).
    pub fn take_from_class(&mut self, q: usize, pool: &mut PacketPool) -> Option<Packet> {
        let r = self.queues[q].pop_front(pool)?;
        let p = pool.take(r);
        self.queue_bytes[q] -= p.wire as u64;
        self.refill(q, pool);
        if self.queues[q].is_empty() {
            self.occupied &= !(1 << q);
        }
        Some(p)
    }

    /// The packet `dequeue_parked` would send next, left in place (for a prefetch).
    #[inline(always)]
    pub fn peek_next(&self) -> Option<PacketRef> {
        let ready = if self.occupied & 1 != 0 { 1 } else { self.occupied & !self.paused_mask & !1 };
        if ready == 0 {
            return None;
        }
        let after = ready & !((2u16 << self.rr_last) - 1) as u8;
        let q = if after != 0 { after.trailing_zeros() } else { ready.trailing_zeros() };
        self.queues[q as usize].front()
    }

    /// The class `dequeue` serves next (and the round robin's step to it).
    #[inline(always)]
    fn next_class(&mut self) -> Option<usize> {
        if self.occupied & 1 != 0 {
            return Some(0);
        }
        let ready = self.occupied & !self.paused_mask & !1;
        if ready == 0 {
            return None;
        }
        // The first ready class after the last served one, else the first ready one.
        let after = ready & !((2u16 << self.rr_last) - 1) as u8;
        let q = if after != 0 { after.trailing_zeros() } else { ready.trailing_zeros() };
        self.rr_last = q as u8;
        Some(q as usize)
    }

    /// `dequeue` under the port's class scheduler (`fabric::classes`); `None` also when the
    /// port has none.
    #[inline]
    pub fn dequeue_by_class(&mut self, pool: &mut PacketPool) -> Option<(usize, Packet)> {
        let ready = self.occupied & !self.paused_mask | (self.occupied & 1);
        if ready == 0 {
            return None;
        }
        let queues = &self.queues;
        let sched = self.classes.as_deref_mut()?;
        let q = sched.pick(ready, |q| queues[q].front().map_or(0, |r| pool.get(r).wire));
        let r = self.queues[q].pop_front(pool)?;
        let p = pool.take(r);
        self.queue_bytes[q] -= p.wire as u64;
        if let Some(next) = self.arbiter.as_deref_mut().and_then(|a| a.pop(q)) {
            self.queues[q].push_back(next, pool); // `refill`, beside the borrowed scheduler
        }
        let emptied = self.queues[q].is_empty();
        if emptied {
            self.occupied &= !(1 << q);
        }
        sched.sent(q, p.wire, emptied);
        Some((q, p))
    }

    /// Applies a PAUSE (true) or RESUME (false) for class `q` received at `now`.
    pub fn set_paused(&mut self, q: usize, pause: bool, now: Time) {
        let any_before = self.paused.iter().any(|&p| p);
        self.paused[q] = pause;
        if pause {
            self.paused_mask |= 1 << q;
        } else {
            self.paused_mask &= !(1 << q);
        }
        let any_after = self.paused.iter().any(|&p| p);
        if !any_before && any_after {
            self.paused_since = Some(now);
        } else if any_before && !any_after {
            if let Some(t) = self.paused_since.take() {
                self.counters.paused_ps += (now - t).0;
            }
        }
    }

    /// InfiniBand: class `q` lacks (true) or has again (false) the credits to send. Under
    /// InfiniBand there is no PFC, so the PAUSE mask stands for credits (`sim::mech::ib`).
    pub fn set_credit_blocked(&mut self, q: usize, blocked: bool) {
        self.paused[q] = blocked;
        if blocked {
            self.paused_mask |= 1 << q;
        } else {
            self.paused_mask &= !(1 << q);
        }
    }

    /// Closes the paused-time interval at the end of a run.
    pub fn finish(&mut self, now: Time) {
        if let Some(t) = self.paused_since.take() {
            self.counters.paused_ps += now.saturating_sub(t).0;
            self.paused_since = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
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
        if !port.queues[0].is_empty() {
            return Some(0);
        }
        (1..NUM_PRIOS)
            .map(|i| 1 + (port.rr_last as usize + i - 1) % (NUM_PRIOS - 1))
            .find(|&q| !port.paused[q] && !port.queues[q].is_empty())
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
            assert_eq!(port.has_queued(), port.queues.iter().any(|q| !q.is_empty()));
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
            let seen = |p: &PortState| (p.rr_last, p.occupied, p.paused_mask, p.queue_bytes);
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
}
#[cfg(test)]
mod layout {
    use super::PortState;
    use std::mem::offset_of;

    #[test]
    fn a_packet_hop_touches_the_first_lines() {
        // The per-hop fields stay within the first three lines (see the struct's comment).
        assert_eq!(std::mem::align_of::<PortState>(), 64);
        assert!(offset_of!(PortState, special) < 64 && offset_of!(PortState, peer_lossy) < 64);
        // A switch's arrival reads the receiving port's node, MMU and position: one line.
        for at in [offset_of!(PortState, node), offset_of!(PortState, unit), offset_of!(PortState, local)] {
            assert!(at < 64, "{at}");
        }
        assert!(offset_of!(PortState, rate) >= 64 && offset_of!(PortState, paused) + 8 <= 128);
        let ws = std::mem::size_of::<super::Wire>();
        assert!(ws <= 40, "{ws}");
        assert_eq!(offset_of!(PortState, queue_bytes), 128);
        assert_eq!(offset_of!(PortState, queues), 192);
        // The linked queues (8 bytes each) fill one line where `VecDeque`s took four.
        assert_eq!(std::mem::size_of::<[super::PacketQueue; crate::fabric::NUM_PRIOS]>(), 64);
        assert_eq!(std::mem::size_of::<PortState>(), 384);
    }
}
