//! A switch port's next dequeue taken without a `TxDone` event (issue 45 §4), in the origin
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
//! on lb-conweave, 1.4 % more on S2; docs/benchmarks.md, stops 65 and 66.)
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
