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

/// A slot's list: its first and last node in push order (`NIL` when empty), its length,
/// and whether some entry was appended behind a later key.
#[derive(Clone, Copy, Debug)]
struct Ends {
    head: u32,
    tail: u32,
    len: u32,
    unsorted: bool,
}

const EMPTY: Ends = Ends { head: NIL, tail: NIL, len: 0, unsorted: false };

#[derive(Debug)]
pub(super) struct SlotLists<E> {
    /// Per slot, the ends of its list.
    ends: Vec<Ends>,
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
        SlotLists { ends: vec![EMPTY; slots], nodes: Vec::new(), free: NIL, occupied: vec![0; slots / 64], len: 0 }
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
        let key = entry.key();
        let ends = &mut self.ends[slot];
        if ends.head == NIL {
            *ends = Ends { head: idx, tail: idx, len: 1, unsorted: false };
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else {
            // The tail node is written here anyway: its key is read beside its link.
            let tail = &mut self.nodes[ends.tail as usize];
            ends.unsorted |= tail.entry.key() > key;
            tail.next = idx;
            ends.tail = idx;
            ends.len += 1;
        }
        self.len += 1;
    }

    /// Empties `slot`'s list onto the end of `out`, in push order. The free list's head and
    /// the node arena are held in locals through the loop: `out`'s growth is a call, after
    /// which fields of `self` would be read again for every entry.
    #[inline]
    pub(super) fn take(&mut self, slot: usize, out: &mut Vec<Entry<E>>) {
        let before = out.len();
        let mut idx = self.ends[slot].head;
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
        self.ends[slot] = EMPTY;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.len -= out.len() - before;
    }

    /// Empties `slot`'s list into the empty `out`, sorted by key.
    ///
    /// The list's length is known, so `out` grows once and the entries are written without
    /// a check each; the whole list then joins the free list at once (its last node links to
    /// the old free head). A slot fills in push order, which is nearly time order, so only
    /// a list that took an entry behind a later key is sorted: on S1 some three buckets in
    /// ten. (Taking such an entry in place instead, by a walk from the head of a short list,
    /// ran fewer instructions on S1 but cost the 1,024-host trees 5 % more time: their
    /// lists' nodes lie apart in the arena, and the walk misses.) Taking with `Vec::push` (which stores the length and keeps the entry on the stack
    /// across its growth check) and sorting every bucket ran some 47 instructions an event.
    #[inline]
    pub(super) fn take_sorted(&mut self, slot: usize, out: &mut Vec<Entry<E>>) {
        debug_assert!(out.is_empty());
        let ends = std::mem::replace(&mut self.ends[slot], EMPTY);
        if ends.head == NIL {
            return;
        }
        let (nodes, mut idx) = (&self.nodes[..], ends.head);
        // A `map` over a range has an exact length: `extend` reserves once and writes each
        // entry in place.
        out.extend((0..ends.len).map(|_| {
            let node = &nodes[idx as usize];
            idx = node.next;
            node.entry
        }));
        debug_assert_eq!(idx, NIL, "a list's length is its nodes'");
        if ends.unsorted {
            out.sort_unstable_by_key(|e| e.key());
        }
        self.nodes[ends.tail as usize].next = self.free;
        self.free = ends.head;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.len -= ends.len as usize;
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
        let (mut idx, mut earliest) = (self.ends[slot].head, u64::MAX);
        while idx != NIL {
            let node = &self.nodes[idx as usize];
            earliest = earliest.min(node.entry.time);
            idx = node.next;
        }
        earliest
    }
}
