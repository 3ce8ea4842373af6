//! Event queue ordered by (time, sequence number).
//!
//! The sequence number is the insertion counter, so events due at the same picosecond run
//! in the order they were scheduled (FIFO), as in ns-3's default scheduler. That tie rule
//! is what makes a run reproducible bit for bit. Entries are small `Copy` values; packets
//! never live in the heap (links keep their in-flight packets, see `sim`), so the heap
//! holds about one entry per busy port and active timer.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::units::Time;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
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
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A min-queue of events keyed by (time, insertion order).
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0 }
    }

    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: Time, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time: time.0, seq, event });
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|e| (Time(e.time), e.event))
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time(e.time))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn earliest_first_and_fifo_ties() {
        let mut q = EventQueue::new();
        q.push(Time(5), 'a');
        q.push(Time(3), 'b');
        q.push(Time(5), 'c');
        q.push(Time(3), 'd');
        q.push(Time(4), 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'e', 'a', 'c']);
    }

    #[test]
    fn matches_a_stable_sort_under_random_interleaving() {
        // Interleave pushes and pops at random; every pop must return the smallest
        // (time, insertion index) still pending.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        let mut q = EventQueue::new();
        let mut pending: Vec<(u64, usize)> = Vec::new();
        let mut next = 0usize;
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) || pending.is_empty() {
                let t = rng.gen_range(0..50u64);
                q.push(Time(t), next);
                pending.push((t, next));
                next += 1;
            } else {
                let (i, _) = pending.iter().enumerate().min_by_key(|(_, &k)| k).unwrap();
                let want = pending.remove(i);
                let (t, e) = q.pop().unwrap();
                assert_eq!((t.0, e), want);
            }
        }
        assert_eq!(q.len(), pending.len());
    }
}
