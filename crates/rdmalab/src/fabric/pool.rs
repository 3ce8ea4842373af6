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
    free: Vec<u32>,
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
                self.slots.push(Slot(pkt));
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

    /// A parked packet, to change in place (a switch hop moves only its reference).
    #[inline]
    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.0 as usize].0
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
}
