//! The width of the queue's buckets follows how many events the run puts in each.
//!
//! The fabric chooses a first width (`sim::setup::event_queue_for`: about 1/64 of its shortest
//! packet time), which suits a run with a few events a bucket. A busy run puts more in each:
//! 16 to 31 in most buckets of a Virtuoso row of `lb-host-vs-switch` (its 260,000 QPs and
//! their DCQCN checks), against 4 to 15 in the ECMP row beside it. Each bucket is sorted
//! when it becomes current, and a larger sort costs more an event
//! (Virtuoso's row ran 2.5 % fewer instructions with buckets a quarter as wide; ECMP's
//! and S2 ran 2.2 % and 2.8 % more). So every `REVIEW_EVERY` buckets the queue looks at
//! how many entries they held: more than `NARROW_ABOVE` on average halves the width (and
//! doubles the ring, up to `MAX_SLOTS`, so that it spans as much time); fewer than
//! `WIDEN_BELOW` doubles it again, never past the first width, which is the only one
//! measured on sparse runs. A change of width roughly halves or doubles the average, and
//! the two bounds are four times apart, so the next review does not undo it. A change files
//! every pending entry again under its own (time, key): the order of events never depends
//! on the width.

use super::far::FarLevel;
use super::lists::SlotLists;
use super::EventQueue;
use crate::units::Time;

/// Buckets between two reviews: a few microseconds of a busy run, and the re-filing a
/// change costs (one push per pending entry) is paid at most once per review.
const REVIEW_EVERY: u32 = 4096;
/// Average entries a bucket above which the buckets narrow. A choice (between ECMP's ~8 and
/// Virtuoso's ~18 in the runs above), not a measurement of the best.
const NARROW_ABOVE: u64 = 12;
/// Average entries a bucket below which narrowed buckets widen again.
const WIDEN_BELOW: u64 = 3;
/// Narrowest bucket: 2^6 ps (the narrowest the fabric's first choice takes).
const MIN_SHIFT: u32 = 6;
/// Largest ring a narrowing grows (the largest the fabric's first choice takes).
const MAX_SLOTS: usize = 1 << 16;

/// What the buckets held since the last review.
#[derive(Debug)]
pub(super) struct WidthReview {
    buckets: u32,
    entries: u64,
    first_shift: u32,
}

impl WidthReview {
    pub(super) fn new(first_shift: u32) -> Self {
        WidthReview { buckets: 0, entries: 0, first_shift }
    }

    /// A bucket became current with `entries` entries.
    #[inline(always)]
    pub(super) fn count(&mut self, entries: usize) {
        self.buckets += 1;
        self.entries += entries as u64;
    }

    /// Enough buckets were counted for a review.
    #[inline(always)]
    pub(super) fn due(&self) -> bool {
        self.buckets >= REVIEW_EVERY
    }

    /// Makes the next review due, with buckets that held nothing (a test's sparse run).
    #[cfg(test)]
    pub(super) fn make_due_empty(&mut self) {
        (self.buckets, self.entries) = (REVIEW_EVERY, 0);
    }

    /// The width and ring to take instead of `shift` and `slots`, if any; starts a new count.
    fn verdict(&mut self, shift: u32, slots: usize) -> Option<(u32, usize)> {
        let (buckets, entries) = (u64::from(self.buckets), self.entries);
        (self.buckets, self.entries) = (0, 0);
        if entries > NARROW_ABOVE * buckets && shift > MIN_SHIFT {
            Some((shift - 1, (slots * 2).min(MAX_SLOTS)))
        } else if entries < WIDEN_BELOW * buckets && shift < self.first_shift {
            Some((shift + 1, (slots / 2).max(64)))
        } else {
            None
        }
    }
}

impl<E: Copy> EventQueue<E> {
    /// Takes the width the last buckets ask for (`WidthReview::verdict`).
    #[cold]
    #[inline(never)]
    pub(super) fn review_width(&mut self) {
        if let Some((shift, slots)) = self.width.verdict(self.shift, self.mask as usize + 1) {
            self.rebucket(shift, slots);
        }
    }

    /// Buckets of `2^shift` ps in a ring of `slots` (a power of two, at least 64) from now
    /// on: every pending entry is filed again with its time and key.
    pub(super) fn rebucket(&mut self, shift: u32, slots: usize) {
        debug_assert!(slots.is_power_of_two() && slots >= 64);
        // Everything filed in the ring or beyond starts after the current bucket. In the new
        // width the current bucket is the one that holds the old one's last picosecond (an
        // entry filed again that falls in it joins `current`). A clock near the end of time
        // keeps its width.
        let end = u128::from(self.cur_bucket + 1) << self.shift;
        let Ok(end) = u64::try_from(end) else { return };
        let mut pending = std::mem::take(&mut self.arriving);
        pending.extend(self.current.drain(self.head..));
        pending.extend(self.rest.drain(self.rest_head..));
        pending.extend(self.late.drain());
        self.ring.take_all(&mut pending);
        self.far.take_all(&mut pending);
        self.current.clear();
        self.rest.clear();
        (self.head, self.rest_head) = (0, 0);
        self.cur_bucket = (end - 1) >> shift;
        self.shift = shift;
        self.mask = slots as u64 - 1;
        self.ring = SlotLists::new(slots);
        self.far = FarLevel::new(shift, slots, self.far.groups());
        self.far.restart(self.cur_bucket);
        for e in pending.drain(..) {
            self.push_reserved(Time(e.time), e.seq, e.event);
        }
        self.arriving = pending;
    }
}
