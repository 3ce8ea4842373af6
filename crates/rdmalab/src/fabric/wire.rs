//! The packets on a link's wire, in arrival order (a link delivers in order), with the
//! first one kept inline in the sending port's state (`PortState::in_flight`).

use std::collections::VecDeque;

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
    rest: VecDeque<(Time, PacketRef, NodeId)>,
}

const NO_HEAD: (Time, PacketRef, NodeId) = (Time::MAX, PacketRef::NONE, NodeId::NONE);

impl Default for Wire {
    fn default() -> Self {
        Wire { head: NO_HEAD, rest: VecDeque::new() }
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
}
