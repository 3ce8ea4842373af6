//! Event queue ordered by (time, sequence number).
//!
//! The sequence number is the insertion counter, so events due at the same picosecond run
//! in the order they were scheduled (FIFO), as in ns-3's default scheduler. That tie rule
//! is what makes a run reproducible bit for bit.
//!
//! # Why a calendar and not a binary heap
//!
//! A packet-level run is millions of events, nearly all due within a few microseconds of
//! now (a transmission ends, a packet reaches the next hop). A binary heap pays about
//! log₂(pending) unpredictable comparisons per pop; on the 320-host reference fat tree that
//! was 40 % of the run. Here time is cut into buckets of `2^shift` ps: a ring of `slots`
//! buckets covers the near future (push = append to the bucket's list, whose nodes live in
//! one arena that recycles the most recently freed node first, so the events in flight stay
//! in a small, cache-warm block: that alone took a fifth off the 320-host run), and a
//! coarser second ring of lists (`far`: half a ring per list) keeps the far events
//! (congestion-control timers, retransmission timeouts) until the ring reaches them. The
//! bucket being drained is sorted by (time, sequence) once, when it becomes current, so the
//! order is exactly that of a heap: the choice of shift, slots and lists changes speed,
//! never results.
//!
//! # Two tie orders
//!
//! By default the tie key is that global insertion counter (FIFO, the reference's order).
//! [`EventQueue::use_origin_order`] switches a fresh queue to a second order that does not
//! depend on how the world is cut into partitions (the parallel engine's, `docs/model/determinism.md#parallel-engine`
//! "Parallel engine"): the key is `origin << ORIGIN_SHIFT | counter`, where the origin is the
//! component (a node, or a global mechanism) whose handler pushes the event
//! ([`EventQueue::set_origin`]) and the counter is that origin's own. Only the key changes:
//! the calendar, the reserved keys and `popped_seq` work the same in both orders.
//!
//! An event can also be pushed with a sequence number reserved earlier
//! ([`EventQueue::reserve_seq`]): it then runs exactly where it would have run had it been
//! pushed at reservation time. The simulator uses this to skip events that would have done
//! nothing (see `sim::switch`).

mod far;
mod lists;
mod width;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::units::Time;
use far::FarLevel;
use lists::SlotLists;
use width::WidthReview;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// Time, then sequence, as one integer: its comparison has no branch, which the
    /// sort of each bucket (some 20 entries when a run is busy) does a few times an entry.
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// Default bucket width: 2^10 ps ≈ 1 ns, about one packet event per bucket at 100 Gb/s.
pub const DEFAULT_SHIFT: u32 = 10;
/// Default ring size: 4,096 buckets ≈ 4.2 µs of near future.
pub const DEFAULT_SLOTS: usize = 4096;
/// Lists of the second level, each half a ring wide: 4,096 of them reach 2,048 rings past
/// the first (17 ms with the 8,192 slots of 1 ns a 100 Gb/s fabric gets), past DCQCN's
/// timers and the usual retransmission timeouts; later entries wait in a heap.
pub const DEFAULT_FAR_GROUPS: usize = 4096;

/// Most entries of the current bucket an insertion shifts; one due before more of them
/// makes the bucket crowded. A choice, not a measurement: 64 entries are 2-3 KB to move, and
/// the order of events never depends on it (a crowded bucket pops the same sequence).
const CROWD_AFTER: usize = 64;

/// Bits of an origin-order key below the origin: each origin may push 2^40 events.
pub const ORIGIN_SHIFT: u32 = 40;
/// Origins an origin-order queue can tell apart (the key's upper 24 bits).
pub const MAX_ORIGINS: u32 = 1 << (64 - ORIGIN_SHIFT);

/// The key of an event whose place among ties is fixed by its origin and a number of its
/// own (not by a counter), in the origin order; push it with `push_reserved`.
#[inline]
pub const fn origin_key(origin: u32, low: u64) -> u64 {
    ((origin as u64) << ORIGIN_SHIFT) | low
}

/// A min-queue of events keyed by (time, insertion order).
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Entries of bucket `cur_bucket` (and any pushed for an earlier time), sorted
    /// earliest first; those before `head` have been popped. (Ascending, because a slot
    /// fills in push order, which is nearly time order: its sort is then one pass.)
    current: Vec<Entry<E>>,
    /// Next entry of `current` to pop.
    head: usize,
    /// A crowded bucket's pending entries, in order, from `rest_head` on. A bucket holds a
    /// few events in most runs, but a million when a million flows start together, and an
    /// event scheduled a few picoseconds ahead then lands before most of them: inserting it
    /// into `current` shifted megabytes per event. The first such insert moves the bucket's
    /// pending entries here once (`insert_current`), and until the bucket is drained every
    /// pop takes the earlier of `rest`'s next and `late`'s first (`refill`).
    rest: Vec<Entry<E>>,
    rest_head: usize,
    /// Entries pushed into a crowded bucket: a heap instead of a shifted tail.
    late: BinaryHeap<Entry<E>>,
    /// Absolute bucket number (`time >> shift`) of `current`.
    cur_bucket: u64,
    /// Ring of buckets `cur_bucket + 1 .. cur_bucket + slots`: per slot, a list in push
    /// order.
    ring: SlotLists<E>,
    /// Entries beyond the ring's reach (`far`'s module note says where that ends).
    far: FarLevel<E>,
    /// Entries on their way from `far` to the ring (kept to reuse its allocation).
    arriving: Vec<Entry<E>>,
    shift: u32,
    mask: u64,
    next_seq: u64,
    /// Sequence number of the event popped last (the one being handled).
    popped_seq: u64,
    /// Origin order only (empty in FIFO order): each origin's next key while it is not
    /// the current one (the current origin's lives in `next_seq`).
    origin_next: Vec<u64>,
    /// The origin whose counter `next_seq` holds.
    origin: u32,
    /// What the buckets held lately, for the width's review (`width`).
    width: WidthReview,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue with the default resolution.
    pub fn new() -> Self {
        Self::with_resolution(DEFAULT_SHIFT, DEFAULT_SLOTS)
    }

    /// An empty queue with buckets of `2^shift` ps and a ring of `slots` buckets (rounded
    /// up to a power of two, at least 64). Results do not depend on either; speed does:
    /// a bucket should hold a few events, the ring should span most scheduling distances.
    /// The buckets narrow where the run fills them, and widen back to this (`width`).
    pub fn with_resolution(shift: u32, slots: usize) -> Self {
        Self::with_levels(shift, slots, DEFAULT_FAR_GROUPS)
    }

    /// As [`with_resolution`](Self::with_resolution), with `far_groups` lists in the second
    /// level (rounded up to a power of two, at least 64): the tests' way to make entries pass
    /// through the second level and the heap beyond it.
    fn with_levels(shift: u32, slots: usize, far_groups: usize) -> Self {
        let slots = slots.max(64).next_power_of_two();
        let shift = shift.min(40);
        EventQueue {
            current: Vec::with_capacity(64),
            head: 0,
            rest: Vec::new(),
            rest_head: 0,
            late: BinaryHeap::new(),
            cur_bucket: 0,
            ring: SlotLists::new(slots),
            far: FarLevel::new(shift, slots, far_groups),
            arriving: Vec::new(),
            shift,
            mask: slots as u64 - 1,
            next_seq: 0,
            popped_seq: 0,
            origin_next: Vec::new(),
            origin: 0,
            width: WidthReview::new(shift),
        }
    }

    /// Switches a queue that has not taken any key yet to the origin order with origins
    /// `0..origins`; origin 0 is current until [`set_origin`](Self::set_origin).
    pub fn use_origin_order(&mut self, origins: u32) {
        assert!(self.next_seq == 0 && self.is_empty(), "the tie order is chosen before the first push");
        assert!(origins > 0 && origins <= MAX_ORIGINS, "{origins} origins: at most {MAX_ORIGINS}");
        self.origin_next = (0..origins).map(|o| origin_key(o, 0)).collect();
        self.origin = 0;
        self.next_seq = self.origin_next[0];
    }

    /// True in the origin order.
    #[inline]
    pub fn origin_order(&self) -> bool {
        !self.origin_next.is_empty()
    }

    /// The origin whose counter keys pushes now (origin order).
    #[inline]
    pub fn origin(&self) -> u32 {
        self.origin
    }

    /// Origin order: events pushed from now on come from `origin` and take its counter's
    /// keys. FIFO order: nothing.
    #[inline]
    pub fn set_origin(&mut self, origin: u32) {
        if self.origin_next.is_empty() || origin == self.origin {
            return;
        }
        debug_assert!(self.next_seq & ((1 << ORIGIN_SHIFT) - 1) != (1 << ORIGIN_SHIFT) - 1, "origin counter overflow");
        self.origin_next[self.origin as usize] = self.next_seq;
        self.origin = origin;
        self.next_seq = self.origin_next[origin as usize];
    }

    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: E) {
        let seq = self.reserve_seq();
        self.push_reserved(time, seq, event);
    }

    /// Takes the next sequence number without scheduling anything: an event pushed later
    /// with it ([`push_reserved`](Self::push_reserved)) ties as if it had been pushed now.
    #[inline]
    pub fn reserve_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Schedules `event` at `time` with a sequence number from [`reserve_seq`](Self::reserve_seq).
    #[inline(always)]
    pub fn push_reserved(&mut self, time: Time, seq: u64, event: E) {
        let entry = Entry { time: time.0, seq, event };
        let bucket = time.0 >> self.shift;
        if bucket <= self.cur_bucket {
            self.insert_current(entry);
        } else if self.far.in_reach(bucket) {
            self.put_in_ring(bucket, entry);
        } else {
            self.far.push(bucket, entry);
        }
    }

    /// The earliest event, left in place: its time, key and event. [`EventQueue::take_peeked`]
    /// then removes it, if nothing was pushed in between.
    #[inline]
    pub fn peek(&mut self) -> Option<(Time, u64, E)> {
        let e = self.staged_entry()?;
        Some((Time(e.time), e.seq, e.event))
    }

    /// The entry `head` points at, after a refill if the bucket is spent. The test for a
    /// spent bucket is the read's own bounds test (one compare an event, not two).
    #[inline(always)]
    fn staged_entry(&mut self) -> Option<Entry<E>> {
        if let Some(&e) = self.current.get(self.head) {
            return Some(e);
        }
        if !self.refill() {
            return None;
        }
        Some(self.current[self.head])
    }

    /// Removes the event [`EventQueue::peek`] has just returned (with key `seq`), with no push
    /// since (a push may move the staged entry out, to a crowded bucket's heap): nothing is
    /// read again.
    #[inline]
    pub fn take_peeked(&mut self, seq: u64) {
        debug_assert_eq!(self.current.get(self.head).map(|e| e.seq), Some(seq), "take the peeked event only");
        self.head += 1;
        self.popped_seq = seq;
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.staged_entry()?;
        self.head += 1;
        self.popped_seq = e.seq;
        Some((Time(e.time), e.event))
    }

    /// The event `k` places after the one popped last, when it is already staged in the
    /// current bucket (nothing is refilled): what the loop will soon run, for a prefetch.
    /// A hint only: an event pushed meanwhile may still come before it.
    #[inline(always)]
    pub fn staged(&self, k: usize) -> Option<&E> {
        self.current.get(self.head + k).map(|e| &e.event)
    }

    /// True while a crowded bucket's entries wait in `rest` and `late`.
    #[inline]
    fn crowded(&self) -> bool {
        self.rest_head < self.rest.len() || !self.late.is_empty()
    }

    /// Gives `current` an entry to pop once its own are popped: the next bucket's, or, in
    /// a crowded bucket, the earlier of `rest`'s next and `late`'s first (every one of them
    /// is due in this bucket or before it, so nothing in the ring comes first). False when
    /// the queue is empty.
    fn refill(&mut self) -> bool {
        // A change of width (`width`) may file entries into the current bucket again, or
        // make it crowded: both are served before the next bucket.
        if self.width.due() {
            self.review_width();
            if self.head < self.current.len() {
                return true;
            }
        }
        if !self.crowded() {
            return self.advance();
        }
        let from_rest = match (self.rest.get(self.rest_head), self.late.peek()) {
            (Some(r), Some(l)) => r.key() < l.key(),
            (rest, _) => rest.is_some(),
        };
        let e = if from_rest {
            self.rest_head += 1;
            self.rest[self.rest_head - 1]
        } else {
            self.late.pop().expect("crowded")
        };
        if self.rest_head == self.rest.len() {
            self.rest.clear();
            self.rest_head = 0;
        }
        self.current.clear();
        self.current.push(e);
        self.head = 0;
        true
    }

    /// The sequence number of the event popped last: with its time, where the event being
    /// handled stands in the order.
    #[inline]
    pub fn popped_seq(&self) -> u64 {
        self.popped_seq
    }

    /// Makes `seq` the key of the event being handled, as [`popped_seq`](Self::popped_seq)
    /// reads it: for work that runs after its place in the order at its own key (a switch's
    /// dequeue without an event, `sim::mech::deferred_dequeues`), and back.
    #[inline]
    pub fn set_popped_seq(&mut self, seq: u64) {
        self.popped_seq = seq;
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        if self.head == self.current.len() && !self.refill() {
            return None;
        }
        Some(Time(self.current[self.head].time))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.current.len() - self.head
            + (self.rest.len() - self.rest_head)
            + self.late.len()
            + self.ring.len()
            + self.far.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps only the pending events `keep` accepts, each with its time and key (so it
    /// runs where it would have). Not for the hot loop: it empties and refills the queue.
    /// The parallel engine drops, once after setup, what the nodes of other partitions
    /// were scheduled to do (`sim::parallel`).
    pub fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        let mut kept = Vec::with_capacity(self.len());
        while let Some((time, event)) = self.pop() {
            if keep(&event) {
                kept.push(Entry { time: time.0, seq: self.popped_seq, event });
            }
        }
        // Empty now: restart the window at the earliest kept event and refill in key order.
        self.current.clear();
        self.head = 0;
        if let Some(first) = kept.first() {
            self.cur_bucket = first.time >> self.shift;
        }
        self.far.restart(self.cur_bucket);
        for e in kept {
            self.push_reserved(Time(e.time), e.seq, e.event);
        }
    }

    /// Inserts into the sorted, not yet popped part of the current bucket.
    #[inline]
    fn insert_current(&mut self, entry: Entry<E>) {
        if self.crowded() {
            return self.insert_crowded(entry);
        }
        let key = entry.key();
        let at = self.head + self.current[self.head..].partition_point(|e| e.key() < key);
        if self.current.len() - at <= CROWD_AFTER {
            self.current.insert(at, entry);
        } else {
            // The bucket is crowded: its pending entries move out once, in order.
            self.rest.extend(self.current.drain(self.head..));
            self.late.push(entry);
        }
    }

    /// An insert into a crowded bucket. `current` holds at most the one entry `refill`
    /// staged; it goes back to the heap, since the new one may come first.
    #[cold]
    fn insert_crowded(&mut self, entry: Entry<E>) {
        if self.head < self.current.len() {
            let staged = self.current.pop().expect("staged");
            self.late.push(staged);
        }
        self.late.push(entry);
    }

    #[inline]
    fn put_in_ring(&mut self, bucket: u64, entry: Entry<E>) {
        self.ring.append((bucket & self.mask) as usize, entry);
    }

    /// Makes the next non-empty bucket current. False when the queue is empty.
    fn advance(&mut self) -> bool {
        // All of the ring comes before all of `far` (its invariant): the next occupied slot,
        // or, with the ring empty, `far`'s earliest.
        let next = if self.ring.len() > 0 {
            self.cur_bucket + self.distance_to_next_occupied()
        } else {
            match self.far.earliest_bucket() {
                Some(bucket) => bucket,
                None => return false,
            }
        };
        self.cur_bucket = next;
        if self.far.reaches_new_group(next) {
            self.take_from_far(next);
        }
        let slot = (next & self.mask) as usize;
        self.current.clear();
        self.head = 0;
        self.ring.take(slot, &mut self.current);
        self.current.sort_unstable_by_key(|e| e.key());
        self.width.count(self.current.len());
        true
    }

    /// The window moved past a group of `far` (once every half ring of time): its entries
    /// join the ring, the one due in bucket `cur` included.
    #[inline(never)]
    fn take_from_far(&mut self, cur: u64) {
        let mut arriving = std::mem::take(&mut self.arriving);
        self.far.advance_to(cur, &mut arriving);
        for &e in &arriving {
            self.put_in_ring(e.time >> self.shift, e);
        }
        arriving.clear();
        self.arriving = arriving;
    }

    /// Slots from the current bucket to the next occupied one (1 ..= mask); the ring
    /// must hold something.
    fn distance_to_next_occupied(&self) -> u64 {
        let slots = self.mask + 1;
        let start = (self.cur_bucket + 1) & self.mask;
        let occupied = self.ring.occupied();
        let words = occupied.len();
        let first_word = (start / 64) as usize;
        // The first word, from `start` on; then whole words, wrapping around once; then
        // the first word's low bits (slots before `start`).
        let high = occupied[first_word] & (!0u64 << (start % 64));
        let found = if high != 0 {
            first_word as u64 * 64 + high.trailing_zeros() as u64
        } else {
            let mut hit = None;
            for i in 1..=words {
                let w = (first_word + i) % words;
                let bits = occupied[w];
                if bits != 0 {
                    hit = Some(w as u64 * 64 + bits.trailing_zeros() as u64);
                    break;
                }
            }
            hit.expect("ring holds entries")
        };
        let cur_slot = self.cur_bucket & self.mask;
        (found + slots - cur_slot) & self.mask
    }
}

#[cfg(test)]
mod tests;
