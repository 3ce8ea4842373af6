//! A partition's side of the exchange: packets leave the wires of its cut at the end of a
//! window and join the receiving partition's copy of the same wire.

use super::Partition;
use crate::app::AppHeader;
use crate::fabric::packet::NO_INT;
use crate::fabric::{IntHeader, Packet};
use crate::ids::{HeaderSlot, NodeId, PortId, QpId};
use crate::rnic::Qp;
use crate::sim::{Event, Simulation};
use crate::units::Time;

/// What crosses a cut at a barrier: a packet, or an event for a node of the receiving
/// partition (`Simulation::push_to_node`).
#[derive(Clone, Copy, Debug)]
pub struct Crossing(Carried);

// Packets are nearly all of what crosses: boxing one would allocate per crossing packet,
// for an event now and then that needs less room.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum Carried {
    /// A packet that left `port`'s wire and reaches the peer at `at`.
    Packet {
        port: PortId,
        at: Time,
        /// The destination host the wire carries beside the packet (`fabric::wire`).
        dst: NodeId,
        pkt: Packet,
        /// Its INT header (the slab slot is the sender partition's).
        int: Option<IntHeader>,
        /// Its application header (`app::Headers`; the slot is the sender partition's).
        app: Option<AppHeader>,
    },
    /// An event at `at` with the tie key `key` it took where it was pushed.
    Event { at: Time, key: u64, ev: Event },
}

impl Simulation {
    /// Makes this simulation one partition of a parallel run.
    pub(super) fn make_partition(&mut self, mut part: Partition) {
        part.shared_qps = self.qps.len() as u32;
        self.part = Some(Box::new(part));
        // A dequeue's deadline may fall past a window's end, too late for a packet that
        // crosses the cut: every switch dequeue is an event (`mech::deferred_dequeues`).
        // (Letting them wait, with a window's start no later than the first that waits, cut
        // two threads' events by 16 % but not their time: docs/benchmarks.md@7f113c4, stop 68.)
        self.mech.deferred = None;
        // Deadlock and stall detection need the whole fabric: the driver watches instead.
        self.watch.next_check = Time::MAX;
    }

    /// True if this simulation handles `node` (every node when it is not partitioned).
    #[inline]
    pub(in crate::sim) fn owns(&self, node: NodeId) -> bool {
        self.part.as_ref().is_none_or(|p| p.owns(node))
    }

    /// The slot holding the receiver's state of data packet `pkt`'s QP here: the QP's own
    /// slot, unless a host of another partition opened it while running; then the receiver
    /// half this partition keeps for it (made on its first packet, like a responder QP).
    #[inline]
    pub(in crate::sim) fn rx_slot(&mut self, pkt: &Packet) -> QpId {
        match self.part.as_deref() {
            Some(p) if pkt.qp.0 >= p.shared_qps && !p.owns(pkt.src) => self.mirror_slot(pkt),
            _ => pkt.qp,
        }
    }

    #[cold]
    fn mirror_slot(&mut self, pkt: &Packet) -> QpId {
        let key = (pkt.src, pkt.qp);
        let part = self.part.as_deref_mut().expect("a partition");
        if let Some(&slot) = part.mirrors.get(&key) {
            return slot;
        }
        let slot = QpId::new(self.qps.len());
        part.mirrors.insert(key, slot);
        // Only the receiver's fields are used; `finished: false` keeps it off the free list,
        // and it joins no CC group, so nothing takes it for a sending QP.
        self.qps.push(Qp {
            src: pkt.src,
            dst: pkt.dst,
            sip: pkt.sip,
            dip: pkt.dip,
            sport: pkt.sport,
            dport: pkt.dport,
            pg: pkt.pg,
            tenant: pkt.tenant,
            finished: false,
            ..Qp::placeholder()
        });
        slot
    }

    /// True if this simulation keeps the sender's state of the QP whose packet `pkt` is
    /// (data goes from the sender, ACKs and NACKs to it).
    #[inline]
    pub(in crate::sim) fn holds_sender_of(&self, pkt: &Packet) -> bool {
        let sender = if pkt.kind == crate::fabric::PacketKind::Data { pkt.src } else { pkt.dst };
        self.owns(sender)
    }

    /// True in a partition if QP slot `qp` was opened at setup, so names the same QP in every
    /// partition.
    #[inline]
    pub(in crate::sim) fn shares_slot(&self, qp: QpId) -> bool {
        self.part.as_ref().is_some_and(|p| qp.0 < p.shared_qps)
    }

    /// Moves every packet on a wire towards another partition, and every event pushed for
    /// one of its nodes, into `out[that partition]`.
    pub(super) fn export_crossings(&mut self, out: &mut [Vec<Crossing>]) {
        let Some(mut part) = self.part.take() else { return };
        let before: usize = out.iter().map(Vec::len).sum();
        for &(port, to) in &part.cut_out {
            while let Some((at, parked, dst)) = self.ports[port.idx()].in_flight.pop_front() {
                let mut pkt = self.packets.take(parked);
                let int = (pkt.int_slot != NO_INT).then(|| {
                    let h = *self.int.get(pkt.int_slot);
                    self.int.release(pkt.int_slot);
                    h
                });
                pkt.int_slot = NO_INT;
                // The headers are append-only: the sender's slot simply stays behind. Only
                // data names a slot (an IRN NACK's field is an offset, `mech::irn::sack_field`).
                let named = pkt.kind == crate::fabric::PacketKind::Data && !pkt.app_hdr.is_none();
                let app = named.then(|| self.apps.headers.read(pkt.app_hdr));
                if named {
                    pkt.app_hdr = HeaderSlot::NONE;
                }
                out[to as usize].push(Crossing(Carried::Packet { port, at, dst, pkt, int, app }));
            }
        }
        for (to, at, key, ev) in part.outbox.drain(..) {
            out[to as usize].push(Crossing(Carried::Event { at, key, ev }));
        }
        part.crossed += (out.iter().map(Vec::len).sum::<usize>() - before) as u64;
        self.part = Some(part);
    }

    /// Puts a packet from another partition on this partition's copy of its wire (its
    /// arrival is keyed by the wire, `sim::order`, so it takes the place it would have had
    /// in one partition), or an event in the queue under the key it was pushed with.
    pub(super) fn import_crossing(&mut self, c: Crossing) {
        let (port, at, dst, mut pkt, int, app) = match c.0 {
            Carried::Packet { port, at, dst, pkt, int, app } => (port, at, dst, pkt, int, app),
            Carried::Event { at, key, ev } => {
                debug_assert!(at >= self.now, "an event from another partition arrives late");
                self.queue.push_reserved(at, key, ev);
                return;
            }
        };
        // A window never ends before what was sent across the cut in it arrives
        // (`Window::end`); a packet that did would reach a partition already past its arrival.
        assert!(
            at > self.now,
            "a packet from another partition arrives late: at {at:?}, the partition at {:?}",
            self.now
        );
        if let Some(h) = int {
            let slot = self.int.alloc();
            *self.int.get_mut(slot) = h;
            pkt.int_slot = slot;
        }
        if let Some(h) = app {
            pkt.app_hdr = self.apps.headers.write(h);
        }
        let parked = self.packets.park(pkt);
        let wire = &mut self.ports[port.idx()].in_flight;
        let was_empty = wire.is_empty();
        wire.push_back((at, parked, dst));
        if was_empty {
            self.push_arrive(at, port);
        }
    }

    /// When this partition's next event is due.
    pub(super) fn next_event_time(&mut self) -> Option<Time> {
        if self.queue.peek_time().is_none() {
            self.wake_waiting_check(); // a decrease check without an event becomes one
        }
        self.queue.peek_time()
    }

    /// When this partition's next DCQCN timer that is not an event is due (`Time::MAX`:
    /// none; `mech::dcqcn_grids`, `mech::dcqcn_checks`). Called after a window, whose end
    /// took every waiting check due by then.
    pub(super) fn next_timer_time(&self) -> Time {
        let checks = self.mech.idle_checks.as_deref().map_or(Time::MAX, |c| c.earliest_due());
        self.mech.dcqcn_grids.first_from(self.now + Time(1)).min(checks)
    }
}
