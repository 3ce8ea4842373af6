//! The queue's second level: events due beyond the ring's reach.
//!
//! A run with many QPs keeps one or two timers per QP pending (DCQCN's rate increase every
//! 300 µs, a retransmission timeout of milliseconds): hundreds of thousands of entries
//! beyond the ring. In a binary heap each of them cost a climb on push and a sift down
//! through ~20 levels on pop, a cache miss a level. Here time beyond the ring is cut into
//! groups of half a ring each (`2^group_shift` buckets), and a second ring of `groups`
//! lists holds one unsorted list per group, appended in push order. When the near ring's
//! window reaches a group's first bucket, the whole group moves into the ring (every entry
//! of it then lies within one ring's span of now), where the current bucket's sort puts it
//! in (time, key) order as before: the order of events never depends on this level. Entries
//! farther than `groups` groups wait in a heap, which only rare timers reach.
//!
//! Invariant: every entry here belongs to a group after [`FarLevel::drained`]; every
//! entry of the ring belongs to a group at or before it. So all of the ring comes before
//! all of this level, and the ring may advance over empty buckets without looking here.

use std::collections::BinaryHeap;

use super::lists::SlotLists;
use super::Entry;

#[derive(Debug)]
pub(super) struct FarLevel<E> {
    /// Per group slot, its entries in push order.
    lists: SlotLists<E>,
    /// Bucket width of the near ring (`time >> bucket_shift` is a bucket).
    bucket_shift: u32,
    /// `bucket >> group_shift` is a group: half a near ring.
    group_shift: u32,
    /// Group slots minus one.
    mask: u64,
    /// Groups up to this one have moved into the near ring.
    drained: u64,
    /// The last bucket of group `drained` (`in_reach` is one comparison with it on every
    /// push; kept with `drained` by `set_drained`).
    last_in_reach: u64,
    /// Entries more than `mask + 1` groups after `drained`.
    overflow: BinaryHeap<Entry<E>>,
}

impl<E: Copy> FarLevel<E> {
    /// A level beyond a near ring of `ring_slots` buckets of `2^bucket_shift` ps (a power of
    /// two, at least 64) with `groups` group lists (rounded up to a power of two, at least
    /// 64), for a ring whose current bucket is 0.
    pub(super) fn new(bucket_shift: u32, ring_slots: usize, groups: usize) -> Self {
        let groups = groups.max(64).next_power_of_two();
        let group_shift = ring_slots.trailing_zeros() - 1;
        let mut level = FarLevel {
            lists: SlotLists::new(groups),
            bucket_shift,
            group_shift,
            mask: groups as u64 - 1,
            drained: 0,
            last_in_reach: 0,
            overflow: BinaryHeap::new(),
        };
        level.set_drained(Self::reach(0, group_shift));
        level
    }

    /// Groups up to `drained` have moved into the near ring.
    #[inline]
    fn set_drained(&mut self, drained: u64) {
        self.drained = drained;
        let end = (u128::from(drained) + 1) << self.group_shift; // the next group's first bucket
        self.last_in_reach = (end - 1).min(u128::from(u64::MAX)) as u64;
    }

    /// The last group inside the window of a ring whose current bucket is `cur`: the groups
    /// that start no later than half a ring after it (so they end within the ring's span).
    #[inline]
    fn reach(cur: u64, group_shift: u32) -> u64 {
        (cur + (1 << group_shift)) >> group_shift
    }

    /// True when an entry due in `bucket` (after the current one) belongs in the near ring.
    #[inline(always)]
    pub(super) fn in_reach(&self, bucket: u64) -> bool {
        debug_assert_eq!(bucket <= self.last_in_reach, bucket >> self.group_shift <= self.drained);
        bucket <= self.last_in_reach
    }

    /// True when a ring whose current bucket is `cur` reaches a group not yet drained.
    #[inline(always)]
    pub(super) fn reaches_new_group(&self, cur: u64) -> bool {
        Self::reach(cur, self.group_shift) > self.drained
    }

    /// Entries pending here.
    pub(super) fn len(&self) -> usize {
        self.lists.len() + self.overflow.len()
    }

    /// Holds an entry whose bucket is out of the near ring's reach.
    pub(super) fn push(&mut self, bucket: u64, entry: Entry<E>) {
        let group = bucket >> self.group_shift;
        debug_assert!(group > self.drained);
        if group - self.drained > self.mask + 1 {
            self.overflow.push(entry);
            return;
        }
        self.lists.append((group & self.mask) as usize, entry);
    }

    /// The bucket of the earliest entry here (a scan of its group's list: only when the
    /// near ring is empty).
    pub(super) fn earliest_bucket(&self) -> Option<u64> {
        if self.lists.len() == 0 {
            return self.overflow.peek().map(|e| e.time >> self.bucket_shift);
        }
        // Listed entries lie in the groups after `drained` that the lists span.
        let group = self.next_occupied(self.drained + 1, self.drained + self.mask + 1).expect("a listed group");
        Some(self.lists.earliest_time((group & self.mask) as usize) >> self.bucket_shift)
    }

    /// The near ring's current bucket is now `cur`, which reaches a new group
    /// ([`reaches_new_group`](Self::reaches_new_group)): appends to `out` every entry of the
    /// groups that came within reach (each due at or after `cur` and within one ring of
    /// it), and lists overflow entries whose groups came within the lists' span.
    pub(super) fn advance_to(&mut self, cur: u64, out: &mut Vec<Entry<E>>) {
        let reach = Self::reach(cur, self.group_shift);
        debug_assert!(reach > self.drained, "called when the ring reaches a new group");
        let last = reach.min(self.drained + self.mask + 1);
        let mut group = self.drained + 1;
        while self.lists.len() > 0 {
            match self.next_occupied(group, last) {
                Some(g) => {
                    self.lists.take((g & self.mask) as usize, out);
                    group = g + 1;
                }
                None => break,
            }
        }
        self.set_drained(reach);
        while let Some(e) = self.overflow.peek() {
            let bucket = e.time >> self.bucket_shift;
            let group = bucket >> self.group_shift;
            if group > self.drained && group - self.drained > self.mask + 1 {
                break;
            }
            let e = self.overflow.pop().expect("peeked");
            if group <= self.drained {
                out.push(e);
            } else {
                self.push(bucket, e);
            }
        }
    }

    /// Group lists (the `groups` it was made with, rounded).
    pub(super) fn groups(&self) -> usize {
        self.mask as usize + 1
    }

    /// Empties the level onto the end of `out`, in no particular order (the queue is
    /// changing its bucket width, `width`).
    pub(super) fn take_all(&mut self, out: &mut Vec<Entry<E>>) {
        self.lists.take_all(out);
        out.extend(self.overflow.drain());
    }

    /// Restarts an empty level for a ring whose current bucket is `cur` (which may be
    /// earlier than before: `EventQueue::retain`).
    pub(super) fn restart(&mut self, cur: u64) {
        assert_eq!(self.len(), 0, "restart an empty level only");
        self.set_drained(Self::reach(cur, self.group_shift));
    }

    /// The first group in `from ..= to` whose list holds entries.
    fn next_occupied(&self, from: u64, to: u64) -> Option<u64> {
        let mut group = from;
        while group <= to {
            let slot = group & self.mask;
            let bits = self.lists.occupied()[(slot / 64) as usize] >> (slot % 64);
            if bits & 1 == 1 {
                return Some(group);
            }
            group += if bits == 0 { 64 - slot % 64 } else { bits.trailing_zeros() as u64 };
        }
        None
    }
}
