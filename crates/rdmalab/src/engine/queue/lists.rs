//! Slots of first-in-first-out lists in one arena of blocks: the storage of both of the
//! queue's rings (the near ring's buckets, the far level's groups).
//!
//! A list is a chain of blocks of `BLOCK` entries, each block one 128-byte, line-aligned
//! piece of one arena. One arena instead of a `Vec` per slot: it grows to the most blocks
//! ever held and then never allocates again, and the most recently freed block (warm in the
//! cache) is reused first, so the events in flight stay in a small block of memory. Blocks
//! instead of one node per entry: a push links a block once per `BLOCK` entries, and taking
//! a bucket copies whole blocks (a bucket of a busy run holds several entries, which then
//! lie side by side instead of one cache line each).

use super::Entry;

/// End of a list.
const NIL: u32 = u32::MAX;
/// Entries a block holds: 4 of 32 bytes (the simulator's events) fill two cache lines.
const BLOCK: usize = 4;

/// A block of entries, aligned to a cache line.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Block<E>([Entry<E>; BLOCK]);

/// Where a slot's list starts and ends.
#[derive(Clone, Copy, Debug)]
struct Ends {
    /// First block (`NIL` when empty).
    head: u32,
    /// Last block, the only one that may be partly filled.
    tail: u32,
    /// Entries in the list: the last block holds `len % BLOCK` of them, or is full (or the
    /// list is empty) when that is 0, and the next push then takes a block: one test.
    len: u32,
}

const EMPTY: Ends = Ends { head: NIL, tail: NIL, len: 0 };

#[derive(Debug)]
pub(super) struct SlotLists<E> {
    /// Per slot, its list of blocks in push order.
    ends: Vec<Ends>,
    blocks: Vec<Block<E>>,
    /// Per block, the next one of its list, or of the free list.
    next: Vec<u32>,
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
        SlotLists {
            ends: vec![EMPTY; slots],
            blocks: Vec::new(),
            next: Vec::new(),
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
        self.len += 1;
        let ends = &mut self.ends[slot];
        let at = ends.len as usize % BLOCK;
        ends.len += 1;
        if at != 0 {
            self.blocks[ends.tail as usize].0[at] = entry;
            return;
        }
        self.append_block(slot, entry);
    }

    /// Puts `entry`, already counted in `slot`'s list, in a block of its own (the list was
    /// empty or its last block full). Not inlined: the push inlined into each handler stays short.
    #[inline(never)]
    fn append_block(&mut self, slot: usize, entry: Entry<E>) {
        let idx = self.free;
        if idx == NIL {
            return self.append_new_block(slot, entry);
        }
        self.free = self.next[idx as usize];
        self.blocks[idx as usize].0[0] = entry;
        self.link(slot, idx);
    }

    /// As `append_block`, with no block free: the arena grows (until it holds the most
    /// blocks a run needs at once).
    #[cold]
    #[inline(never)]
    fn append_new_block(&mut self, slot: usize, entry: Entry<E>) {
        self.blocks.push(Block([entry; BLOCK]));
        self.next.push(NIL);
        self.link(slot, (self.blocks.len() - 1) as u32);
    }

    /// Puts block `idx` at the end of `slot`'s list.
    #[inline(always)]
    fn link(&mut self, slot: usize, idx: u32) {
        let ends = &mut self.ends[slot];
        if ends.head == NIL {
            ends.head = idx;
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else {
            self.next[ends.tail as usize] = idx;
        }
        ends.tail = idx;
    }

    /// Empties `slot`'s list onto the end of `out`, in push order. Room is made once, and
    /// each block is copied whole (a copy of known size: a few vector moves, no call), `out`
    /// then cut back to the entries the last one held. Inlined into the queue's `advance`
    /// (a call a bucket saved and restored six registers).
    #[inline(always)]
    pub(super) fn take(&mut self, slot: usize, out: &mut Vec<Entry<E>>) {
        let ends = std::mem::replace(&mut self.ends[slot], EMPTY);
        let len = ends.len as usize;
        if len == 0 {
            return;
        }
        let blocks = len.div_ceil(BLOCK);
        if out.capacity() - out.len() < blocks * BLOCK {
            out.reserve(blocks * BLOCK);
        }
        let (start, mut idx, mut free) = (out.len(), ends.head, self.free);
        for k in 0..blocks {
            let block = &self.blocks[idx as usize].0;
            // SAFETY: the room made above holds `blocks * BLOCK` entries after `start`; each
            // is written (plain `Copy` values) before the length covers it.
            unsafe {
                std::ptr::copy_nonoverlapping(block.as_ptr(), out.as_mut_ptr().add(start + k * BLOCK), BLOCK);
            }
            let next = std::mem::replace(&mut self.next[idx as usize], free);
            free = idx;
            idx = next;
        }
        debug_assert_eq!(free, ends.tail);
        // SAFETY: the first `len` entries after `start` were written above.
        unsafe { out.set_len(start + len) };
        self.free = free;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.len -= len;
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
        let ends = self.ends[slot];
        let (mut idx, mut left, mut earliest) = (ends.head, ends.len as usize, u64::MAX);
        while left > 0 {
            let n = left.min(BLOCK);
            for e in &self.blocks[idx as usize].0[..n] {
                earliest = earliest.min(e.time);
            }
            (left, idx) = (left - n, self.next[idx as usize]);
        }
        earliest
    }
}
