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

/// No header out of line (`Carried::Packet`'s `int` and `app`).
const NO_HEADER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Carried {
    /// A packet that left `port`'s wire and reaches the peer at `at`.
    Packet {
        port: PortId,
        at: Time,
        /// The destination host the wire carries beside the packet (`fabric::wire`).
        dst: NodeId,
        pkt: Packet,
        /// Its INT header's place in `Mail::ints` (the slab slot is the sender partition's).
        int: u32,
        /// Its application header's place in `Mail::apps` (`app::Headers`; the slot is the
        /// sender partition's).
        app: u32,
    },
    /// An event at `at` with the tie key `key` it took where it was pushed.
    Event { at: Time, key: u64, ev: Event },
}

/// What one partition hands another at a barrier: the crossings, with the INT and
/// application headers of their packets out of line. A crossing that held its headers
/// would be a few hundred bytes, copied at every move; most packets carry neither (the
/// exchange cost two threads 17 % more instructions than one on the 1,024-host incasts,
/// half of it copying: `docs/parallel.md`, "What limits two threads").
#[derive(Debug, Default)]
pub struct Mail {
    items: Vec<Crossing>,
    ints: Vec<IntHeader>,
    apps: Vec<AppHeader>,
}

impl Mail {
    /// Nothing to hand over.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Moves everything into `to`: by swapping when `to` is empty, as it is whenever its
    /// receiver took its mail before (every window), so nothing is copied and `self` gets
    /// back the receiver's emptied buffers; else appended, headers renumbered.
    pub fn post(&mut self, to: &mut Mail) {
        if to.is_empty() {
            to.ints.clear();
            to.apps.clear();
            std::mem::swap(self, to);
            return;
        }
        let (ints, apps) = (to.ints.len() as u32, to.apps.len() as u32);
        let shift = |i: u32, by: u32| if i == NO_HEADER { i } else { i + by };
        to.items.extend(self.items.drain(..).map(|c| match c.0 {
            Carried::Packet { port, at, dst, pkt, int, app } => {
                Crossing(Carried::Packet { port, at, dst, pkt, int: shift(int, ints), app: shift(app, apps) })
            }
            event => Crossing(event),
        }));
        to.ints.append(&mut self.ints);
        to.apps.append(&mut self.apps);
    }
}

impl Simulation {
    /// Makes this simulation one partition of a parallel run.
    pub(super) fn make_partition(&mut self, mut part: Partition) {
        part.shared_qps = self.qps.len() as u32;
        self.part = Some(Box::new(part));
        // A dequeue's deadline may fall past a window's end, too late for a packet that
        // crosses the cut: every switch dequeue is an event (`mech::deferred_dequeues`).
        // (Letting them wait, with a window's start no later than the first that waits, cut
        // two threads' events by 16 % but not their time.)
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
    pub(super) fn export_crossings(&mut self, out: &mut [Mail]) {
        let Some(mut part) = self.part.take() else { return };
        for &(port, to) in &part.cut_out {
            while let Some((at, parked, dst)) = self.ports[port.idx()].in_flight.pop_front() {
                let mut pkt = self.packets.take(parked);
                let mail = &mut out[to as usize];
                let int = if pkt.int_slot != NO_INT {
                    mail.ints.push(*self.int.get(pkt.int_slot));
                    self.int.release(pkt.int_slot);
                    (mail.ints.len() - 1) as u32
                } else {
                    NO_HEADER
                };
                pkt.int_slot = NO_INT;
                // The headers are append-only: the sender's slot simply stays behind. Only
                // data names a slot (an IRN NACK's field is an offset, `mech::irn::sack_field`).
                let app = if pkt.kind == crate::fabric::PacketKind::Data && !pkt.app_hdr.is_none() {
                    mail.apps.push(self.apps.headers.read(pkt.app_hdr));
                    pkt.app_hdr = HeaderSlot::NONE;
                    (mail.apps.len() - 1) as u32
                } else {
                    NO_HEADER
                };
                mail.items.push(Crossing(Carried::Packet { port, at, dst, pkt, int, app }));
                part.crossed += 1;
            }
        }
        for (to, at, key, ev) in part.outbox.drain(..) {
            out[to as usize].items.push(Crossing(Carried::Event { at, key, ev }));
            part.crossed += 1;
        }
        self.part = Some(part);
    }

    /// Takes everything `mail` holds (leaving it empty, its buffers kept), in order.
    pub(super) fn import_mail(&mut self, mail: &mut Mail) {
        for i in 0..mail.items.len() {
            self.import_crossing(mail.items[i], mail);
        }
        mail.items.clear();
        mail.ints.clear();
        mail.apps.clear();
    }

    /// Puts a packet from another partition on this partition's copy of its wire (its
    /// arrival is keyed by the wire, `sim::order`, so it takes the place it would have had
    /// in one partition), or an event in the queue under the key it was pushed with.
    fn import_crossing(&mut self, c: Crossing, mail: &Mail) {
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
        if int != NO_HEADER {
            let slot = self.int.alloc();
            *self.int.get_mut(slot) = mail.ints[int as usize];
            pkt.int_slot = slot;
        }
        if app != NO_HEADER {
            pkt.app_hdr = self.apps.headers.write(mail.apps[app as usize]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::PacketKind;

    /// A mail of packets with and without headers; `tag` marks each header.
    fn mail(tags: &[Option<u64>]) -> Mail {
        let mut m = Mail::default();
        for (i, tag) in tags.iter().enumerate() {
            let pkt = Packet::pfc(PacketKind::Pause, 3, 100);
            let app = tag.map_or(NO_HEADER, |t| {
                m.apps.push(AppHeader { data_id: t, ..Default::default() });
                m.ints.push(IntHeader { nhop: t as u16, ..Default::default() });
                (m.apps.len() - 1) as u32
            });
            let at = Time(i as u64);
            m.items.push(Crossing(Carried::Packet { port: PortId(0), at, dst: NodeId(0), pkt, int: app, app }));
        }
        m
    }

    /// What a mailbox holds, each packet with its headers' tags, in order.
    fn read(m: &Mail) -> Vec<(Time, Option<(u64, u16)>)> {
        let tag =
            |int: u32, app: u32| (app != NO_HEADER).then(|| (m.apps[app as usize].data_id, m.ints[int as usize].nhop));
        m.items
            .iter()
            .map(|c| match c.0 {
                Carried::Packet { at, int, app, .. } => (at, tag(int, app)),
                Carried::Event { at, .. } => (at, None),
            })
            .collect()
    }

    /// Posting into an empty mailbox swaps; into one the receiver has not emptied, it appends
    /// and renumbers the headers, so each packet keeps its own.
    #[test]
    fn posted_mail_keeps_each_packet_with_its_headers() {
        let mut to = Mail::default();
        let mut first = mail(&[Some(7), None, Some(9)]);
        first.post(&mut to);
        assert!(first.is_empty());
        assert_eq!(read(&to), vec![(Time(0), Some((7, 7))), (Time(1), None), (Time(2), Some((9, 9)))]);
        let mut second = mail(&[None, Some(11)]);
        second.post(&mut to);
        assert!(second.is_empty() && second.ints.is_empty() && second.apps.is_empty());
        let got = read(&to);
        assert_eq!(got.len(), 5);
        assert_eq!(&got[3..], &[(Time(0), None), (Time(1), Some((11, 11)))]);
        assert_eq!(got[2], (Time(2), Some((9, 9))));
    }
}
