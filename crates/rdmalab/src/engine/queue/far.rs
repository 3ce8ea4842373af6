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

use super::{Entry, Node, NIL};

#[derive(Debug)]
pub(super) struct FarLevel<E> {
    /// Per group slot: first and last node of its list (`NIL` when empty).
    lists: Vec<(u32, u32)>,
    /// The lists' nodes, with a free list through `next` (grows to the most entries ever
    /// listed, then recycles).
    nodes: Vec<Node<E>>,
    free: u32,
    /// One bit per group slot: its list holds entries.
    occupied: Vec<u64>,
    /// Entries in the lists.
    listed: usize,
    /// Bucket width of the near ring (`time >> bucket_shift` is a bucket).
    bucket_shift: u32,
    /// `bucket >> group_shift` is a group: half a near ring.
    group_shift: u32,
    /// Group slots minus one.
    mask: u64,
    /// Groups up to this one have moved into the near ring.
    drained: u64,
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
        FarLevel {
            lists: vec![(NIL, NIL); groups],
            nodes: Vec::new(),
            free: NIL,
            occupied: vec![0; groups / 64],
            listed: 0,
            bucket_shift,
            group_shift,
            mask: groups as u64 - 1,
            drained: Self::reach(0, group_shift),
            overflow: BinaryHeap::new(),
        }
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
        bucket >> self.group_shift <= self.drained
    }

    /// True when a ring whose current bucket is `cur` reaches a group not yet drained.
    #[inline(always)]
    pub(super) fn reaches_new_group(&self, cur: u64) -> bool {
        Self::reach(cur, self.group_shift) > self.drained
    }

    /// Entries pending here.
    pub(super) fn len(&self) -> usize {
        self.listed + self.overflow.len()
    }

    /// Holds an entry whose bucket is out of the near ring's reach.
    pub(super) fn push(&mut self, bucket: u64, entry: Entry<E>) {
        let group = bucket >> self.group_shift;
        debug_assert!(group > self.drained);
        if group - self.drained > self.mask + 1 {
            self.overflow.push(entry);
            return;
        }
        let slot = (group & self.mask) as usize;
        let node = Node { entry, next: NIL };
        let idx = if self.free != NIL {
            let idx = self.free;
            self.free = self.nodes[idx as usize].next;
            self.nodes[idx as usize] = node;
            idx
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let (head, tail) = self.lists[slot];
        if head == NIL {
            self.lists[slot] = (idx, idx);
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else {
            self.nodes[tail as usize].next = idx;
            self.lists[slot].1 = idx;
        }
        self.listed += 1;
    }

    /// The bucket of the earliest entry here (a scan of its group's list: only when the
    /// near ring is empty).
    pub(super) fn earliest_bucket(&self) -> Option<u64> {
        if self.listed == 0 {
            return self.overflow.peek().map(|e| e.time >> self.bucket_shift);
        }
        let group = self.next_occupied(self.drained + 1, self.drained + self.mask + 1)?;
        let mut idx = self.lists[(group & self.mask) as usize].0;
        let mut earliest = u64::MAX;
        while idx != NIL {
            let node = &self.nodes[idx as usize];
            earliest = earliest.min(node.entry.time);
            idx = node.next;
        }
        Some(earliest >> self.bucket_shift)
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
        while self.listed > 0 {
            match self.next_occupied(group, last) {
                Some(g) => {
                    self.take_list(g, out);
                    group = g + 1;
                }
                None => break,
            }
        }
        self.drained = reach;
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

    /// Restarts an empty level for a ring whose current bucket is `cur` (which may be
    /// earlier than before: `EventQueue::retain`).
    pub(super) fn restart(&mut self, cur: u64) {
        assert_eq!(self.len(), 0, "restart an empty level only");
        self.drained = Self::reach(cur, self.group_shift);
    }

    /// The first group in `from ..= to` whose list holds entries.
    fn next_occupied(&self, from: u64, to: u64) -> Option<u64> {
        let mut group = from;
        while group <= to {
            let slot = group & self.mask;
            let bits = self.occupied[(slot / 64) as usize] >> (slot % 64);
            if bits & 1 == 1 {
                return Some(group);
            }
            group += if bits == 0 { 64 - slot % 64 } else { bits.trailing_zeros() as u64 };
        }
        None
    }

    /// Moves group `group`'s list to `out`, in push order.
    fn take_list(&mut self, group: u64, out: &mut Vec<Entry<E>>) {
        let slot = (group & self.mask) as usize;
        let mut idx = self.lists[slot].0;
        while idx != NIL {
            let node = &mut self.nodes[idx as usize];
            out.push(node.entry);
            let next = node.next;
            node.next = self.free;
            self.free = idx;
            idx = next;
            self.listed -= 1;
        }
        self.lists[slot] = (NIL, NIL);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
    }
}
