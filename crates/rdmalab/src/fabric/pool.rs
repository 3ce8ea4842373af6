//! Where packets wait while they sit in an egress queue or on a wire.
//!
//! Queues and links hold 4-byte [`PacketRef`]s into one pool instead of 64-byte packets in
//! per-port ring buffers. The pool hands out the most recently freed slot first, so the
//! few thousand packets alive at any moment stay in one compact block that the caches
//! keep; per-port ring buffers of whole packets spread them over megabytes. Slots are
//! reused, never returned: once grown to the most packets ever alive, the pool allocates
//! nothing.

use super::Packet;

/// A packet parked in the [`PacketPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRef(u32);

impl PacketRef {
    /// No packet (a placeholder where an `Option` would cost more room).
    pub(crate) const NONE: PacketRef = PacketRef(u32::MAX);
}

/// A pool slot: one packet on one cache line of its own (a `Vec<Packet>` is only 8-byte
/// aligned, so most of its 64-byte packets would straddle two lines).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Slot(Packet);

/// Slab of parked packets with a LIFO free list.
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Slot>,
    /// The packet after each slot's in its egress queue ([`PacketQueue`]; stale for a
    /// queue's last packet); beside the slots because a packet fills its 64-byte slot.
    next: Vec<PacketRef>,
    free: Vec<u32>,
}

/// A first-in first-out queue of parked packets, linked through the pool: 8 bytes a queue
/// where a `VecDeque<PacketRef>` takes 32 and a buffer of its own. A switch has eight of
/// them on every port, and a fabric of a million hosts has five million switch ports.
///
/// The queue ends at `tail`, not at a link marked as the end: the last packet's link is
/// never written. A push onto an empty queue then writes nothing in the pool, and a push
/// behind others one link: each link written is a line of its own to the cache, the
/// packets being scattered over the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketQueue {
    head: PacketRef,
    tail: PacketRef,
}

impl Default for PacketQueue {
    fn default() -> Self {
        PacketQueue { head: PacketRef::NONE, tail: PacketRef::NONE }
    }
}

impl PacketQueue {
    /// True when the queue holds no packet.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head == PacketRef::NONE
    }

    /// The first packet.
    #[inline(always)]
    pub fn front(&self) -> Option<PacketRef> {
        (!self.is_empty()).then_some(self.head)
    }

    /// Appends a parked packet (one that is in no other queue).
    #[inline(always)]
    pub fn push_back(&mut self, r: PacketRef, pool: &mut PacketPool) {
        if self.is_empty() {
            self.head = r;
        } else {
            pool.next[self.tail.0 as usize] = r;
        }
        self.tail = r;
    }

    /// Removes and returns the first packet (still parked).
    #[inline(always)]
    pub fn pop_front(&mut self, pool: &PacketPool) -> Option<PacketRef> {
        let r = self.front()?;
        // Without a branch: whether this was the last packet is the data's to say, and a
        // mispredicted branch costs more than the link's load, which nothing waits for.
        let (last, next) = (r == self.tail, pool.next[r.0 as usize]);
        self.head = if last { PacketRef::NONE } else { next };
        self.tail = if last { PacketRef::NONE } else { self.tail };
        Some(r)
    }

    /// The packets in order, first to last.
    pub fn iter<'a>(&self, pool: &'a PacketPool) -> impl Iterator<Item = PacketRef> + 'a {
        let tail = self.tail;
        std::iter::successors(self.front(), move |&r| (r != tail).then(|| pool.next[r.0 as usize]))
    }
}

impl PacketPool {
    /// Parks `pkt`, returning its reference.
    #[inline]
    pub fn park(&mut self, pkt: Packet) -> PacketRef {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Slot(pkt);
                PacketRef(i)
            }
            None => {
                let room = self.slots.capacity();
                self.slots.push(Slot(pkt));
                self.next.push(PacketRef::NONE);
                if self.slots.capacity() != room {
                    advise_huge_pages(&self.slots);
                    advise_huge_pages(&self.next);
                }
                PacketRef((self.slots.len() - 1) as u32)
            }
        }
    }

    /// Takes a parked packet out; its slot is reused next.
    #[inline]
    pub fn take(&mut self, r: PacketRef) -> Packet {
        self.free.push(r.0);
        self.slots[r.0 as usize].0
    }

    /// A parked packet.
    #[inline]
    pub fn get(&self, r: PacketRef) -> &Packet {
        &self.slots[r.0 as usize].0
    }

    /// Starts fetching a parked packet's line (`fabric::prefetch`).
    #[inline(always)]
    pub fn prefetch(&self, r: PacketRef) {
        if let Some(slot) = self.slots.get(r.0 as usize) {
            super::prefetch(slot);
        }
    }

    /// `prefetch` for a queue's new head: its line, and its link to the packet behind it,
    /// which the pop that sends it reads (a separate array: without the hint, under deep
    /// queues, a second miss per hop).
    #[inline(always)]
    pub fn prefetch_head(&self, r: PacketRef) {
        self.prefetch(r);
        if let Some(link) = self.next.get(r.0 as usize) {
            super::prefetch(link);
        }
    }

    /// A parked packet, to change in place (a switch hop moves only its reference).
    #[inline]
    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.0 as usize].0
    }

    /// The sum of `f` over the packets in `queues` and those `loose` names, each counted
    /// once, read in slot order. A run cut short in a congested fabric leaves millions of
    /// packets queued over hundreds of megabytes: followed queue by queue, each link and
    /// each packet is a miss that waits for the one before. Here a bit per slot marks them
    /// first, walking `LANES` queues at once, a link of each in turn, so that their misses
    /// overlap; then the slots are read in address order, which the hardware streams.
    pub fn sum_parked(
        &self,
        queues: impl Iterator<Item = PacketQueue>,
        loose: impl Iterator<Item = PacketRef>,
        f: impl Fn(&Packet) -> u64,
    ) -> u64 {
        const LANES: usize = 32;
        let mut marked = vec![0u64; self.slots.len().div_ceil(64)];
        let mut mark = |r: PacketRef| marked[r.0 as usize / 64] |= 1 << (r.0 % 64);
        loose.for_each(&mut mark);
        let mut queues = queues.filter(|q| !q.is_empty());
        let mut lanes: Vec<PacketQueue> = Vec::with_capacity(LANES);
        loop {
            lanes.extend(queues.by_ref().take(LANES - lanes.len()));
            if lanes.is_empty() {
                break;
            }
            let mut i = 0;
            while i < lanes.len() {
                let q = &mut lanes[i];
                mark(q.head);
                if q.head == q.tail {
                    lanes.swap_remove(i);
                } else {
                    q.head = self.next[q.head.0 as usize];
                    i += 1;
                }
            }
        }
        let mut sum = 0;
        for (word, &bits) in marked.iter().enumerate() {
            let mut rest = bits;
            while rest != 0 {
                sum += f(&self.slots[word * 64 + rest.trailing_zeros() as usize].0);
                rest &= rest - 1;
            }
        }
        sum
    }

    /// Slots ever made: the most packets alive at once so far.
    #[inline(always)]
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Packets parked now.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when nothing is parked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Asks the kernel for 2 MiB pages under `v`'s buffer (`MADV_HUGEPAGE`), over the whole 4 KiB
/// pages that hold it: a buffer of this size is a mapping of its own (the program's allocator,
/// or the C library's), which the advice then covers whole. Advice on part of a mapping would
/// split it, and a growth by `mremap` cannot resize a range that spans two. Every hop reads a packet's slot at random in a pool that, in a
/// congested fabric of a thousand hosts, holds hundreds of megabytes: on 4 KiB pages each
/// such read also walks the page tables, whose entries then crowd the caches. The pool grows
/// while the run goes (its slots and links, each doubling a fresh mapping's tail), so the
/// advice comes from here, at each growth, and not from the program's allocator, which leaves
/// the largest blocks on small pages (`rdmalab_alloc`). A hint only: without transparent huge
/// pages, or off Linux, nothing changes; no result depends on it.
#[cold]
#[inline(never)]
fn advise_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        if end - start < 2 << 20 {
            return; // under one huge page: no mapping of its own (the allocator's small blocks)
        }
        let (first, last) = (start / PAGE * PAGE, end.next_multiple_of(PAGE));
        // SAFETY: advice only: it changes no byte, and pages of the range that are not
        // mapped are skipped (the call then reports ENOMEM, which changes nothing either).
        unsafe { libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::PacketKind;

    #[test]
    fn parked_packets_come_back_and_slots_are_reused_last_freed_first() {
        let mut pool = PacketPool::default();
        let a = pool.park(Packet::pfc(PacketKind::Pause, 1, 64));
        let b = pool.park(Packet::pfc(PacketKind::Resume, 2, 64));
        assert_eq!(pool.len(), 2);
        assert_eq!(pool.take(a).pg, 1);
        let c = pool.park(Packet::pfc(PacketKind::Pause, 3, 64));
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!(pool.get(b).pg, 2);
        assert_eq!(pool.take(c).pg, 3);
        assert_eq!(pool.take(b).kind, PacketKind::Resume);
        assert!(pool.is_empty());
    }

    #[test]
    fn a_sum_over_parked_packets_counts_each_once() {
        // Queues of many lengths (more of them than are walked at once), and loose packets
        // named out of order, one twice (the sum still counts it once).
        let mut pool = PacketPool::default();
        let mut queues = vec![PacketQueue::default(); 70];
        let mut want = 0;
        for i in 0..2000u32 {
            let r = pool.park(Packet::pfc(PacketKind::Pause, 0, 64 + i));
            let q = (i as usize * 7919) % 97;
            if q < queues.len() {
                queues[q].push_back(r, &mut pool);
                want += 64 + i as u64;
            } else {
                pool.take(r); // freed: named nowhere, and its slot reused
            }
        }
        let loose: Vec<_> = (0..50).map(|i| pool.park(Packet::pfc(PacketKind::Pause, 0, 10_000 + i))).collect();
        want += (0..50).map(|i| 10_000 + i as u64).sum::<u64>();
        let named = loose.iter().rev().chain(&loose[..1]).copied();
        assert_eq!(pool.sum_parked(queues.iter().copied(), named, |p| p.wire as u64), want);
        assert_eq!(pool.sum_parked(std::iter::empty(), std::iter::empty(), |p| p.wire as u64), 0);
    }

    /// A pool grown past a few huge pages asks for them: the mapping under its slots is
    /// advised (`hg` among the kernel's `VmFlags` for it in `/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_grown_pool_advises_huge_pages_under_its_slots() {
        let mut pool = PacketPool::default();
        for _ in 0..(1 << 17) {
            pool.park(Packet::pfc(PacketKind::Pause, 0, 64)); // 8 MiB of slots
        }
        let at = pool.slots.as_ptr() as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let flags = smaps
            .split('\n')
            .scan(false, |inside, line| {
                let range = line.split(' ').next().and_then(|r| r.split_once('-'));
                if let Some((lo, hi)) = range
                    .and_then(|(l, h)| Some((usize::from_str_radix(l, 16).ok()?, usize::from_str_radix(h, 16).ok()?)))
                {
                    *inside = (lo..hi).contains(&at);
                }
                Some((*inside, line))
            })
            .find_map(|(inside, line)| line.strip_prefix("VmFlags:").filter(|_| inside))
            .expect("the mapping under the slots");
        assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
    }

    #[test]
    fn linked_queues_are_first_in_first_out_and_share_one_pool() {
        // Two queues interleaved over reused slots, checked against VecDeques.
        use rand::{Rng, SeedableRng};
        use std::collections::VecDeque;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut pool = PacketPool::default();
        let mut queues = [PacketQueue::default(); 2];
        let mut want: [VecDeque<u8>; 2] = Default::default();
        for step in 0..20_000u32 {
            let q = rng.gen_range(0..2);
            if rng.gen_bool(0.55) {
                let tag = (step % 251) as u8;
                let r = pool.park(Packet::pfc(PacketKind::Pause, tag, 64));
                queues[q].push_back(r, &mut pool);
                want[q].push_back(tag);
            } else {
                let got = queues[q].pop_front(&pool).map(|r| pool.take(r).pg);
                assert_eq!(got, want[q].pop_front(), "step {step}");
            }
            for (queue, w) in queues.iter().zip(&want) {
                assert_eq!(queue.is_empty(), w.is_empty());
                let listed: Vec<u8> = queue.iter(&pool).map(|r| pool.get(r).pg).collect();
                assert_eq!(listed, w.iter().copied().collect::<Vec<_>>());
            }
        }
        assert_eq!(pool.len(), want.iter().map(VecDeque::len).sum::<usize>());
    }
}
