//! Slots of first-in-first-out lists in one node arena: the storage of both of the queue's
//! rings (the near ring's buckets, the far level's groups).
//!
//! One arena instead of a `Vec` per slot: it grows to the most entries ever held and then
//! never allocates again, and the most recently freed node (warm in the cache) is reused
//! first, so the events in flight stay in a small block.

use super::Entry;

/// End of a list.
const NIL: u32 = u32::MAX;

/// A list node.
#[derive(Clone, Copy, Debug)]
struct Node<E> {
    entry: Entry<E>,
    next: u32,
}

#[derive(Debug)]
pub(super) struct SlotLists<E> {
    /// Per slot, the first and last node of its list in push order (`NIL` when empty).
    ends: Vec<(u32, u32)>,
    nodes: Vec<Node<E>>,
    /// Head of the free list through `next` (`NIL`: none free).
    free: u32,
    /// One bit per slot: its list holds entries.
    occupied: Vec<u64>,
    /// Entries held.
    len: usize,
}

impl<E: Copy> SlotLists<E> {
    /// `slots` empty lists (a multiple of 64).
    pub(super) fn new(slots: usize) -> Self {
        debug_assert!(slots.is_multiple_of(64));
        SlotLists { ends: vec![(NIL, NIL); slots], nodes: Vec::new(), free: NIL, occupied: vec![0; slots / 64], len: 0 }
    }

    /// Entries held in all slots.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// One bit per slot, 64 slots a word: set where the slot's list holds entries.
    #[inline]
    pub(super) fn occupied(&self) -> &[u64] {
        &self.occupied
    }

    /// Appends `entry` to `slot`'s list.
    #[inline(always)]
    pub(super) fn append(&mut self, slot: usize, entry: Entry<E>) {
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
        let (head, tail) = self.ends[slot];
        if head == NIL {
            self.ends[slot] = (idx, idx);
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else {
            self.nodes[tail as usize].next = idx;
            self.ends[slot].1 = idx;
        }
        self.len += 1;
    }

    /// Empties `slot`'s list onto the end of `out`, in push order. The free list's head and
    /// the node arena are held in locals through the loop: `out`'s growth is a call, after
    /// which fields of `self` would be read again for every entry.
    #[inline]
    pub(super) fn take(&mut self, slot: usize, out: &mut Vec<Entry<E>>) {
        let before = out.len();
        let mut idx = self.ends[slot].0;
        let (nodes, mut free) = (&mut self.nodes[..], self.free);
        while idx != NIL {
            let node = &mut nodes[idx as usize];
            out.push(node.entry);
            let next = node.next;
            node.next = free;
            free = idx;
            idx = next;
        }
        self.free = free;
        self.ends[slot] = (NIL, NIL);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.len -= out.len() - before;
    }

    /// Empties every slot onto the end of `out`, slot by slot.
    pub(super) fn take_all(&mut self, out: &mut Vec<Entry<E>>) {
        for word in 0..self.occupied.len() {
            while self.occupied[word] != 0 {
                let slot = word * 64 + self.occupied[word].trailing_zeros() as usize;
                self.take(slot, out);
            }
        }
    }

    /// The earliest time in `slot`'s list (`u64::MAX` when empty).
    pub(super) fn earliest_time(&self, slot: usize) -> u64 {
        let (mut idx, mut earliest) = (self.ends[slot].0, u64::MAX);
        while idx != NIL {
            let node = &self.nodes[idx as usize];
            earliest = earliest.min(node.entry.time);
            idx = node.next;
        }
        earliest
    }
}
