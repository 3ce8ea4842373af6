//! A switch port's next dequeue taken without a `TxDone` event, in the origin
//! order of a run on one thread.
//!
//! A switch port that starts a packet with more queued behind it takes the next one when
//! the packet ends: in the FIFO order, a `TxDone` event at the key reserved when the packet
//! started (`Simulation::transmit`). What that dequeue does (the buffer's release and a
//! RESUME, ECN, INT, the next packet onto the wire) reads and writes its own switch's state
//! alone, and the first thing it sends reaches another node a propagation delay after its
//! time at the earliest. In the origin order every key it takes comes from its switch's
//! counter. So the dequeue may run later than its place, at its own time and key, provided
//! it runs
//! - before any other handler of its switch (`Simulation::catch_up_at_switch`, from
//!   `enter_origin`), so that the switch's counter hands out the same keys as with events;
//! - before anything that reads every switch: sampling, the queue monitor, link events,
//!   DRUM's coordinator, the watch, the run's pause or end (`Simulation::catch_up_switches`);
//! - before what it sends could arrive: a *deadline* (`Event::Dequeues`) at most the
//!   switch's shortest link delay after its time runs whatever still waits then.
//!
//! A port draining a queue then costs a deadline a link delay apart (about 12 packet times
//! of 1 KB at 100 Gb/s and 1 µs) rather than an event a packet, and none at all where the
//! switch's own arrivals come first. (That saves events more than time: the bookkeeping
//! here costs nearly what the queue's push, pop and dispatch did; 2 % fewer instructions
//! on lb-conweave, 1.4 % more on S2.)
//! Runs that have a trace (written in event order), that
//! are a partition of a parallel run (a deadline past a window's end would be late), or
//! that have a mechanism on the egress (`special_egress`), the PFC pause timers or
//! InfiniBand keep their `TxDone` events.

use crate::engine::EventQueue;
use crate::fabric::PortState;
use crate::ids::{NodeId, PortId, SwitchId};
use crate::sim::Event;
use crate::units::Time;

/// No entry.
const NONE: u32 = u32::MAX;

/// What waits at one switch: one cache line, which a handler of the switch reads first.
#[derive(Debug)]
#[repr(align(64))]
struct Waits {
    /// When the earliest waiting dequeue is due (`Time::MAX`: none waits).
    head: Time,
    /// The earliest deadline pushed for this switch and not yet run (`Time::MAX`: none
    /// known; a later one pushed before an earlier may still be pending, and runs as a
    /// deadline with nothing to do).
    deadline: Time,
    /// The shortest propagation delay of the switch's ports. Anything a dequeue sends
    /// arrives later than this after the dequeue's time.
    margin: Time,
    node: NodeId,
    /// The switch's place in `DeferredDequeues::busy` (`NONE`: nothing waits).
    busy_at: u32,
    /// How many of `due`'s first entries were taken already.
    taken: u32,
    /// From position `taken` on: its ports whose dequeue waits (their `PortState::busy` is
    /// set) with their `tx_end` (time and key), earliest first, at most one per port of the
    /// switch, since a port waits for one dequeue at a time. A few at a time, and the one a
    /// dequeue adds is usually among the latest: an insert found from the back costs less
    /// than a heap's, and a take only moves `taken` (the vector is emptied, or its taken
    /// part dropped, in `settle`).
    due: Vec<(Time, u64, PortId)>,
}

/// Taken entries a switch's list keeps before `settle` drops them: after each catch-up its
/// length is under this plus one per port (during one, plus the dequeues it ran).
const KEEP_TAKEN: u32 = 32;

/// Every switch's waiting dequeues.
#[derive(Debug)]
pub(crate) struct DeferredDequeues {
    /// Per switch (`PortState::unit`).
    waits: Vec<Waits>,
    /// Switches with a dequeue waiting, in no order (for what reads every switch).
    busy: Vec<u32>,
    /// The pseudo-origin of the deadlines' keys (`sim::order::Global::Dequeues`).
    origin: u32,
}

impl DeferredDequeues {
    /// No waits, for the switches of `ports` (every port of a switch is in it);
    /// deadlines keyed under pseudo-origin `origin`.
    pub(crate) fn new(ports: &[PortState], switches: usize, origin: u32) -> DeferredDequeues {
        let empty = || Waits {
            head: Time::MAX,
            deadline: Time::MAX,
            margin: Time::MAX,
            node: NodeId::NONE,
            busy_at: NONE,
            taken: 0,
            due: Vec::new(),
        };
        let mut waits: Vec<Waits> = (0..switches).map(|_| empty()).collect();
        for p in ports.iter().filter(|p| !p.on_host) {
            let w = &mut waits[p.unit as usize];
            w.node = p.node;
            w.margin = w.margin.min(p.delay);
        }
        DeferredDequeues { waits, busy: Vec::new(), origin }
    }

    /// True if a dequeue of switch `sw` may be due before an event at `now`.
    #[inline(always)]
    pub(crate) fn may_be_due(&self, sw: usize, now: Time) -> bool {
        now >= self.waits[sw].head
    }

    /// The dequeue of switch port `port` (of switch `sw`), due at (`due`, `key`), its
    /// `tx_end`, waits here instead of being an event. Pushes a deadline unless one already
    /// comes soon enough.
    #[inline]
    pub(in crate::sim) fn defer(
        &mut self,
        sw: usize,
        port: PortId,
        (due, key): (Time, u64),
        queue: &mut EventQueue<Event>,
    ) {
        let w = &mut self.waits[sw];
        match w.due.last() {
            Some(&(t, k, _)) if (t, k) > (due, key) => {
                let (first, mut at) = (w.taken as usize, w.due.len() - 1);
                while at > first && (w.due[at - 1].0, w.due[at - 1].1) > (due, key) {
                    at -= 1;
                }
                w.due.insert(at, (due, key, port));
            }
            _ => w.due.push((due, key, port)),
        }
        w.head = w.head.min(due);
        if w.busy_at == NONE {
            w.busy_at = self.busy.len() as u32;
            self.busy.push(sw as u32);
        }
        self.arm(sw, queue);
    }

    /// Switch `sw` has a dequeue waiting: a deadline at most its margin after the earliest,
    /// unless one pushed before comes by then.
    #[inline(always)]
    fn arm(&mut self, sw: usize, queue: &mut EventQueue<Event>) {
        let w = &mut self.waits[sw];
        let need = w.head + w.margin;
        if w.deadline > need {
            w.deadline = need;
            self.push_deadline(sw, need, queue);
        }
    }

    /// The deadline event of switch `sw` at `at` (rare: one covers a margin's worth of dequeues).
    #[inline(never)]
    fn push_deadline(&self, sw: usize, at: Time, queue: &mut EventQueue<Event>) {
        let key = crate::engine::queue::origin_key(self.origin, sw as u64);
        queue.push_reserved(at, key, Event::Dequeues(SwitchId(sw as u32)));
    }

    /// Takes the earliest waiting dequeue of switch `sw` if it comes before (`now`, `key`):
    /// its time, its key and its port.
    #[inline]
    pub(crate) fn take_before(&mut self, sw: usize, now: Time, key: u64) -> Option<(Time, u64, PortId)> {
        let w = &mut self.waits[sw];
        match w.due.get(w.taken as usize) {
            Some(&(t, k, port)) if (t, k) < (now, key) => {
                w.taken += 1;
                Some((t, k, port))
            }
            _ => None,
        }
    }

    /// After switch `sw` took what was due: when its earliest waiting dequeue is due, and
    /// whether it is still busy.
    #[inline]
    pub(crate) fn settle(&mut self, sw: usize) {
        let w = &mut self.waits[sw];
        if w.taken as usize == w.due.len() {
            w.due.clear();
            w.taken = 0;
        } else if w.taken >= KEEP_TAKEN {
            w.due.drain(..w.taken as usize);
            w.taken = 0;
        }
        w.head = w.due.get(w.taken as usize).map_or(Time::MAX, |e| e.0);
        if w.head == Time::MAX && w.busy_at != NONE {
            let at = w.busy_at as usize;
            w.busy_at = NONE;
            self.busy.swap_remove(at);
            if let Some(&moved) = self.busy.get(at) {
                self.waits[moved as usize].busy_at = at as u32;
            }
        }
    }

    /// A deadline of switch `sw` ran at `now`, after its switch took everything due by
    /// then: the next, if a dequeue still waits.
    pub(in crate::sim) fn deadline_ran(&mut self, sw: usize, now: Time, queue: &mut EventQueue<Event>) {
        let w = &mut self.waits[sw];
        if w.deadline == now {
            w.deadline = Time::MAX;
        }
        if w.head != Time::MAX {
            self.arm(sw, queue);
        }
    }

    /// The switches with a dequeue waiting, in no order.
    #[inline]
    pub(crate) fn switches_busy(&self) -> &[u32] {
        &self.busy
    }

    /// The node of switch `sw`.
    #[inline]
    pub(crate) fn node_of(&self, sw: usize) -> NodeId {
        self.waits[sw].node
    }

    /// The shortest link delay of switch `sw`'s ports: its dequeues run at most this late.
    #[inline]
    pub(crate) fn margin(&self, sw: usize) -> Time {
        self.waits[sw].margin
    }

    /// When switch `sw`'s earliest waiting dequeue is due (`Time::MAX`: none).
    #[inline]
    pub(crate) fn first_due(&self, sw: usize) -> Time {
        self.waits[sw].head
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::units::Rate;

    /// One switch (node 9) of `ports` ports, each 1 µs long.
    fn one_switch(ports: usize) -> DeferredDequeues {
        let ports: Vec<PortState> = (0..ports)
            .map(|i| {
                let mut p = PortState::new(NodeId(9), PortId(i as u32), i as u16, Rate::gbps(100), Time::from_us(1));
                p.unit = 0;
                p
            })
            .collect();
        DeferredDequeues::new(&ports, 1, 0)
    }

    /// Entries deferred out of order, taken in slices and settled, against a sorted set:
    /// the same dequeues come out, earliest first, and the head is always the earliest
    /// left, also once `settle` has dropped a taken part (more than `KEEP_TAKEN` taken
    /// with some still waiting).
    #[test]
    fn dequeues_come_out_in_key_order_across_settles() {
        let mut d = one_switch(64);
        let mut queue = EventQueue::<Event>::new();
        let mut reference = BTreeSet::new();
        let (mut taken, mut compacted, mut seq) = (Vec::new(), false, 0u64);
        let mut state = 12_345u64;
        let mut next = || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        for round in 0..200u64 {
            // A few dequeues a round, each within 30 rounds of now, in any order: the list is rarely
            // empty, so taken entries pile up until `settle` drops them.
            for _ in 0..next() % 5 {
                // Keys unique (a counter in the low bits), as the switch's counter makes them.
                seq += 1;
                let entry =
                    (Time(round * 100 + next() % 3_000), (next() % 1_000) << 20 | seq, PortId(next() as u32 % 64));
                reference.insert(entry);
                d.defer(0, entry.2, (entry.0, entry.1), &mut queue);
            }
            let (now, key) = (Time(round * 100 + 50), 500);
            while let Some(e) = d.take_before(0, now, key) {
                taken.push(e);
            }
            compacted |= d.waits[0].taken >= KEEP_TAKEN && (d.waits[0].taken as usize) < d.waits[0].due.len();
            d.settle(0);
            let before: Vec<_> = reference.iter().copied().filter(|&(t, k, _)| (t, k) < (now, key)).collect();
            for e in &before {
                reference.remove(e);
            }
            assert_eq!(&taken[taken.len() - before.len()..], &before[..], "round {round}");
            assert_eq!(d.first_due(0), reference.first().map_or(Time::MAX, |e| e.0), "round {round}");
            // What stays after a settle: fewer than KEEP_TAKEN taken entries, then the waiting ones.
            let w = &d.waits[0];
            assert!(w.taken < KEEP_TAKEN && w.due.len() - w.taken as usize == reference.len(), "round {round}");
        }
        assert!(taken.len() > 300, "{} taken", taken.len());
        assert!(compacted, "no settle dropped a taken part with entries still waiting");
    }
}
