//! Slots of lists in one node arena: the storage of both of the queue's rings (the near
//! ring's buckets, the far level's groups).
//!
//! One arena instead of a `Vec` per slot: it grows to the most entries ever held and then
//! never allocates again, and the most recently freed node (warm in the cache) is reused
//! first, so the events in flight stay in a small block.
//!
//! A list is kept newest first: an append writes its own node and the slot's head, and
//! never the node appended before it (in a run of a few hundred hosts that node's line is
//! often gone from the cache by then). `take` hands the entries out in push order all the
//! same. A node is an entry of 32 bytes, so two share a line and none straddles two; its
//! link lives in a separate array of 4-byte links, so a walk waits on that array alone.

use super::Entry;

/// End of a list.
const NIL: u32 = u32::MAX;

/// A slot's list: its newest node and its length, side by side (an append reads and
/// writes both; `take` sizes its copy by the length instead of walking the list twice).
#[derive(Clone, Copy, Debug)]
struct Head {
    node: u32,
    len: u32,
}

const EMPTY: Head = Head { node: NIL, len: 0 };

#[derive(Debug)]
pub(super) struct SlotLists<E> {
    /// Per slot, the node appended last (`NIL` when empty) and the entries in its list.
    heads: Vec<Head>,
    /// The entries, one a node.
    nodes: Vec<Entry<E>>,
    /// Per node, the node appended before it in its slot (or the next free node): kept
    /// apart from the entries so that walking a list reads this small, dense array only,
    /// and the entries' own lines, scattered over the arena, are read independently of
    /// each other (the core overlaps their misses instead of waiting on one at a time).
    links: Vec<u32>,
    /// Head of the free list through `links` (`NIL`: none free).
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
        SlotLists {
            heads: vec![EMPTY; slots],
            nodes: Vec::new(),
            links: Vec::new(),
            free: NIL,
            occupied: vec![0; slots / 64],
            len: 0,
        }
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
        let Head { node: head, len } = self.heads[slot];
        let idx = if self.free != NIL {
            let idx = self.free;
            let link = at(&mut self.links, idx);
            self.free = *link;
            *link = head;
            *at(&mut self.nodes, idx) = entry;
            idx
        } else {
            self.nodes.push(entry);
            self.links.push(head);
            (self.nodes.len() - 1) as u32
        };
        if head == NIL {
            self.occupied[slot / 64] |= 1 << (slot % 64);
        }
        self.heads[slot] = Head { node: idx, len: len + 1 };
        self.len += 1;
    }

    /// Empties `slot`'s list onto the end of `out`, in push order: one walk of the links,
    /// copying each entry straight into its place from the back (the list is newest first),
    /// with no growth test per entry and no reversal after.
    #[inline]
    pub(super) fn take(&mut self, slot: usize, out: &mut Vec<Entry<E>>) {
        let Head { node: head, len } = self.heads[slot];
        let (nodes, links) = (&mut self.nodes[..], &mut self.links[..]);
        let count = len as usize;
        out.reserve(count);
        let before = out.len();
        let spare = &mut out.spare_capacity_mut()[..count];
        let (mut idx, mut free) = (head, self.free);
        for place in spare.iter_mut().rev() {
            place.write(*at(nodes, idx));
            let link = at(links, idx);
            let next = *link;
            *link = free;
            free = idx;
            idx = next;
        }
        debug_assert_eq!(idx, NIL, "a slot's length and its list agree");
        // SAFETY: the loop wrote all `count` places after `before` (the list has `count`
        // nodes: every append counted its node, and only `take` removes them).
        unsafe { out.set_len(before + count) };
        self.free = free;
        self.heads[slot] = EMPTY;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.len -= count;
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
        let (mut idx, mut earliest) = (self.heads[slot].node, u64::MAX);
        while idx != NIL {
            earliest = earliest.min(self.nodes[idx as usize].time);
            idx = self.links[idx as usize];
        }
        earliest
    }
}

/// The element a link points at, in `nodes` or `links` (always of one length). Every link
/// (a slot's newest node, the free list's head, a node's link) is `NIL` or the index of a node,
/// and the arena never shrinks: so an index read from one is in range, and its bounds test
/// (two instructions at each of the reads an entry costs) can go.
#[inline(always)]
fn at<T>(arena: &mut [T], link: u32) -> &mut T {
    debug_assert!((link as usize) < arena.len(), "a link past the arena");
    // SAFETY: `link` was read from a head, the free list or a link, each of which holds
    // only NIL (never passed here: every caller tests for it) or an index the arena had
    // when it was written; nodes and links are pushed together and never removed.
    unsafe { arena.get_unchecked_mut(link as usize) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_half_a_cache_line() {
        // An event of the simulator is 12 bytes; an entry with one of that size fits in 32.
        assert_eq!(std::mem::size_of::<Entry<[u32; 3]>>(), 32);
    }

    #[test]
    fn take_returns_each_slot_in_push_order_and_reuses_freed_nodes() {
        let mut lists = SlotLists::<u32>::new(64);
        let entry = |t: u64| Entry { time: t, seq: t, event: t as u32 };
        for t in 0..30u64 {
            lists.append((t % 3) as usize, entry(t));
        }
        let mut out = Vec::new();
        lists.take(1, &mut out);
        assert_eq!(out.iter().map(|e| e.time).collect::<Vec<_>>(), (0..30).filter(|t| t % 3 == 1).collect::<Vec<_>>());
        let arena = lists.nodes.len();
        for t in 30..40u64 {
            lists.append(5, entry(t));
        }
        assert_eq!(lists.nodes.len(), arena, "the ten freed nodes are reused");
        assert_eq!(lists.earliest_time(5), 30);
        out.clear();
        lists.take_all(&mut out);
        let times: Vec<u64> = out.iter().map(|e| e.time).collect();
        let slot0: Vec<u64> = (0..30).filter(|t| t % 3 == 0).collect();
        let slot2: Vec<u64> = (0..30).filter(|t| t % 3 == 2).collect();
        assert_eq!(times, [slot0, slot2, (30..40).collect()].concat());
        assert_eq!(lists.len(), 0);
        assert!(lists.occupied().iter().all(|&w| w == 0));
    }
}
