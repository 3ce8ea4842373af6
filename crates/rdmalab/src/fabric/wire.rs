//! The packets on a link's wire, in arrival order (a link delivers in order), with the
//! first one kept inline in the sending port's state (`PortState::in_flight`).

use crate::fabric::PacketRef;
use crate::ids::NodeId;
use crate::units::Time;

/// The packets on a wire, in arrival order, each with its arrival time and destination
/// host: the first one inline (with the port's other per-arrival fields, so that an
/// arrival reads one line of the port), the rest behind it. The destination rides beside
/// the reference (in what would be padding) so that a switch starts its route lookup
/// while the packet itself is still being fetched.
#[derive(Debug)]
pub struct Wire {
    /// The first packet (`due == Time::MAX`: none), 16 bytes where an `Option` takes 24.
    head: (Time, PacketRef, NodeId),
    rest: Ring,
}

type Entry = (Time, PacketRef, NodeId);

const NO_HEAD: Entry = (Time::MAX, PacketRef::NONE, NodeId::NONE);

impl Default for Wire {
    fn default() -> Self {
        Wire { head: NO_HEAD, rest: Ring::default() }
    }
}

/// A FIFO over a power-of-two buffer that doubles when full (a wire holds at most its
/// bandwidth-delay product over the smallest frame, so it stops growing early in a run).
/// Kept here rather than a `VecDeque` because every arrival pops one and every send pushes
/// one: a mask instead of a wrap test, and push and pop that are always inlined (the
/// compiler inlined `VecDeque`'s or not depending on what else grew in the caller).
#[derive(Debug, Default)]
struct Ring {
    /// The slots (a boxed slice: the port's state keeps its per-hop fields in its first line,
    /// `fabric::port`'s layout test, so the wire stays small).
    buf: Box<[Entry]>,
    /// Index of the first entry (32 bits, as the length: the wire then leaves room in the
    /// port's first line for the fields a switch reads of the port a packet reaches).
    start: u32,
    len: u32,
}

impl Ring {
    #[inline(always)]
    fn front(&self) -> Option<&Entry> {
        (self.len != 0).then(|| self.at(self.start))
    }

    #[inline(always)]
    fn pop_front(&mut self) -> Option<Entry> {
        if self.len == 0 {
            return None;
        }
        let e = *self.at(self.start);
        self.start = (self.start + 1) & self.mask();
        self.len -= 1;
        Some(e)
    }

    #[inline(always)]
    fn push_back(&mut self, e: Entry) {
        if self.len as usize == self.buf.len() {
            self.grow();
        }
        let at = (self.start + self.len) & self.mask();
        *self.at_mut(at) = e; // `grow` made room: the buffer is not empty
        self.len += 1;
    }

    /// The slot at `index`, an index masked by `mask()`, of a ring whose buffer is not
    /// empty. Every arrival reads one and every send writes one: their bounds tests go.
    #[inline(always)]
    fn at(&self, index: u32) -> &Entry {
        debug_assert!((index as usize) < self.buf.len());
        // SAFETY: the buffer's length is a power of two and not zero (callers read only
        // while `len != 0`, and write after `grow`), so a masked index is below it.
        unsafe { self.buf.get_unchecked(index as usize) }
    }

    /// `at`, to write.
    #[inline(always)]
    fn at_mut(&mut self, index: u32) -> &mut Entry {
        debug_assert!((index as usize) < self.buf.len());
        // SAFETY: as `at`'s.
        unsafe { self.buf.get_unchecked_mut(index as usize) }
    }

    /// The buffer's length less one (a power of two: the mask that wraps an index).
    #[inline(always)]
    fn mask(&self) -> u32 {
        self.buf.len().wrapping_sub(1) as u32
    }

    /// Doubles the buffer (at least 4 entries), unwrapping the entries to its start.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(4);
        assert!(cap <= 1 << 31, "a wire of 2^31 packets: its 32-bit indices would wrap");
        let mut buf = Vec::with_capacity(cap);
        buf.extend(self.iter().copied());
        buf.resize(cap, NO_HEAD);
        self.buf = buf.into_boxed_slice();
        self.start = 0;
    }

    fn iter(&self) -> impl Iterator<Item = &Entry> {
        let mask = self.mask();
        (0..self.len).map(move |i| &self.buf[((self.start + i) & mask) as usize])
    }
}

impl Wire {
    /// The first packet and its arrival time.
    #[inline(always)]
    pub fn front(&self) -> Option<&(Time, PacketRef, NodeId)> {
        (self.head.0 != Time::MAX).then_some(&self.head)
    }

    /// Removes the first packet.
    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<(Time, PacketRef, NodeId)> {
        if self.head.0 == Time::MAX {
            return None;
        }
        let head = self.head;
        self.head = self.rest.pop_front().unwrap_or(NO_HEAD);
        if let Some(next) = self.rest.front() {
            super::prefetch(next); // read at the arrival after next, a packet time away
        }
        Some(head)
    }

    /// Appends a packet arriving at `due` (not before those already on the wire).
    #[inline(always)]
    pub fn push_back(&mut self, entry: (Time, PacketRef, NodeId)) {
        debug_assert!(entry.0 != Time::MAX);
        if self.head.0 == Time::MAX {
            self.head = entry;
        } else {
            self.rest.push_back(entry);
        }
    }

    /// True when nothing is on the wire.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head.0 == Time::MAX
    }

    /// Starts fetching the entry behind the head, which the head's pop moves into its
    /// place (a hint for the event loop, one event ahead of that pop).
    #[inline(always)]
    pub fn prefetch_behind_head(&self) {
        if let Some(next) = self.rest.front() {
            super::prefetch(next);
        }
    }

    /// The packets on the wire, first to arrive first.
    pub fn iter(&self) -> impl Iterator<Item = &(Time, PacketRef, NodeId)> {
        self.front().into_iter().chain(self.rest.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{Packet, PacketPool};

    #[test]
    fn a_wire_is_a_fifo_with_its_head_inline() {
        let mut pool = PacketPool::default();
        let refs: Vec<PacketRef> =
            (0..5).map(|i| pool.park(Packet::pfc(crate::fabric::PacketKind::Pause, i, 64))).collect();
        let mut w = Wire::default();
        assert!(w.is_empty() && w.front().is_none() && w.pop_front().is_none());
        for (i, &r) in refs.iter().enumerate().take(3) {
            w.push_back((Time(i as u64), r, NodeId(7)));
        }
        assert_eq!(w.pop_front(), Some((Time(0), refs[0], NodeId(7))));
        w.push_back((Time(3), refs[3], NodeId(7)));
        assert_eq!(w.iter().map(|e| e.0 .0).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(w.front(), Some(&(Time(1), refs[1], NodeId(7))));
        let drained: Vec<u64> = std::iter::from_fn(|| w.pop_front()).map(|e| e.0 .0).collect();
        assert_eq!(drained, vec![1, 2, 3]);
        assert!(w.is_empty());
    }

    #[test]
    fn the_ring_behind_the_head_keeps_fifo_order_across_wraps_and_growth() {
        let mut ring = Ring::default();
        let mut want = std::collections::VecDeque::new();
        let mut next = 0u64;
        // Pushes outrun pops (growth with the entries wrapped), then pops catch up (wraps).
        for round in 0..200u64 {
            for _ in 0..(round % 7) {
                let e = (Time(next), PacketRef::NONE, NodeId(next as u32));
                ring.push_back(e);
                want.push_back(e);
                next += 1;
            }
            for _ in 0..(round % 5) {
                assert_eq!(ring.pop_front(), want.pop_front());
            }
            assert_eq!(ring.front(), want.front());
            assert!(ring.iter().eq(want.iter()));
        }
        assert!(ring.buf.len().is_power_of_two());
    }
}
