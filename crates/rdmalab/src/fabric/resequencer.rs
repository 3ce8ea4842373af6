//! IOFD's last-hop re-sequencing buffer (the Blitz poster's §2 ¶3: "hardware support in the switch to
//! keep a flow's packets in order"; the mechanism is ours †, docs/blitz.md).
//!
//! The last switch before a receiver tracks, per QP, the next byte it should forward. A
//! data packet at that byte goes on (and with it every held packet that now follows in
//! order); a packet ahead of it waits here, outside the MMU's accounting, so held packets
//! never cause a PAUSE and cannot deadlock. A packet behind it (a go-back-N retransmission)
//! goes on as is. When the buffer is full, or (lossy runs) when the oldest held packet of
//! the QP has waited `timeout`, packets go as they are and are counted as escapes; the
//! timeout is checked when the QP's next packet arrives (a sender with data in flight
//! always sends one: its go-back-N timer retransmits the gap).
//!
//! Packets it lets go (in order or escaping) enter the MMU at their ingress like any
//! arrival. In a lossless class the MMU may have no room for them then: upstream was never
//! paused for bytes held here, and a gap that fills releases a burst at once. Such packets
//! must not be dropped, so they wait in this buffer's *waiting line*, in order and still
//! outside PFC accounting, until the MMU admits them (the switch retries when one of its
//! packets leaves). While anything waits, every packet the re-sequencer lets go queues
//! behind it, so each QP stays in order.

use std::collections::{HashMap, VecDeque};

use super::Packet;
use crate::ids::{PortId, QpKey};
use crate::units::Time;

/// One QP's order at this switch.
#[derive(Clone, Debug, Default)]
struct FlowOrder {
    /// Next byte to forward (QPs start at 0).
    expected: u64,
    /// Held packets with their arrival time, ascending by sequence.
    held: Vec<(Packet, Time)>,
}

/// What to do with an arriving data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward it now; then forward whatever `take_released` hands out.
    Forward,
    /// Forward it out of order (the buffer is full or the gap timed out).
    Escape,
    /// Held here.
    Held,
}

/// A switch's re-sequencing buffer.
#[derive(Clone, Debug, Default)]
pub struct Resequencer {
    flows: HashMap<QpKey, FlowOrder>,
    held_bytes: u64,
    held_payload: u64,
    /// Packets released in order by the last arrival, for the caller to forward (kept
    /// allocated between calls).
    released: Vec<Packet>,
    /// Let go but not yet admitted by the MMU (lossless classes): packet and egress port.
    waiting: VecDeque<(Packet, PortId)>,
}

impl Resequencer {
    /// Handles an arriving data packet. `timeout` only in lossy runs.
    pub fn arrive(&mut self, pkt: &Packet, now: Time, capacity: u64, timeout: Option<Time>) -> Verdict {
        let key = pkt.qp_key();
        let flow = self.flows.entry(key).or_default();
        if pkt.seq < flow.expected {
            return Verdict::Forward; // a retransmission: the receiver sorts it out
        }
        if pkt.seq == flow.expected {
            flow.expected += pkt.payload as u64;
            self.release_in_order(key);
            return Verdict::Forward;
        }
        let timed_out = timeout.is_some_and(|t| flow.held.first().is_some_and(|h| now >= h.1 + t));
        if timed_out {
            self.flush(key, pkt.seq + pkt.payload as u64);
            return Verdict::Escape;
        }
        if self.held_bytes + pkt.wire as u64 > capacity {
            return Verdict::Escape;
        }
        let at = flow.held.partition_point(|(h, _)| h.seq <= pkt.seq);
        flow.held.insert(at, (*pkt, now));
        self.held_bytes += pkt.wire as u64;
        self.held_payload += pkt.payload as u64;
        Verdict::Held
    }

    /// Moves every held packet of `qp` that now follows in order to `released`.
    fn release_in_order(&mut self, qp: QpKey) {
        let Some(flow) = self.flows.get_mut(&qp) else { return };
        let mut n = 0;
        for (p, _) in &flow.held {
            if p.seq > flow.expected {
                break;
            }
            if p.seq == flow.expected {
                flow.expected += p.payload as u64;
            }
            n += 1;
        }
        for (p, _) in flow.held.drain(..n) {
            self.held_bytes -= p.wire as u64;
            self.held_payload -= p.payload as u64;
            self.released.push(p);
        }
    }

    /// Gives up on the gap of `qp`: every held packet goes as is, and forwarding resumes
    /// after `upto` (the end of the packet that found the gap timed out).
    fn flush(&mut self, qp: QpKey, upto: u64) {
        let Some(flow) = self.flows.get_mut(&qp) else { return };
        let end = flow.held.last().map_or(0, |(p, _)| p.seq + p.payload as u64);
        flow.expected = end.max(upto);
        for (p, _) in flow.held.drain(..) {
            self.held_bytes -= p.wire as u64;
            self.held_payload -= p.payload as u64;
            self.released.push(p);
        }
    }

    /// Packets released by the last `arrive`, in order; the caller forwards them. The
    /// buffer is handed back with `restore_released` so its capacity is kept.
    pub fn take_released(&mut self) -> Vec<Packet> {
        std::mem::take(&mut self.released)
    }

    /// Returns the (emptied) buffer from `take_released`.
    pub fn restore_released(&mut self, mut buf: Vec<Packet>) {
        buf.clear();
        self.released = buf;
    }

    /// Payload bytes of data packets held now.
    pub fn held_payload(&self) -> u64 {
        self.held_payload
    }

    /// Packets held now (waiting for the MMU included).
    pub fn held_packets(&self) -> usize {
        self.flows.values().map(|f| f.held.len()).sum::<usize>() + self.waiting.len()
    }

    /// Whether packets wait for the MMU.
    pub fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// A packet the MMU refused joins the end of the waiting line; it keeps its buffer
    /// space (it counts against the capacity, which may go over it by what PFC lets in).
    pub fn wait(&mut self, pkt: Packet, egress: PortId) {
        self.held_bytes += pkt.wire as u64;
        self.held_payload += pkt.payload as u64;
        self.waiting.push_back((pkt, egress));
    }

    /// The head of the waiting line, taken out to offer it to the MMU.
    pub fn next_waiting(&mut self) -> Option<(Packet, PortId)> {
        let (p, e) = self.waiting.pop_front()?;
        self.held_bytes -= p.wire as u64;
        self.held_payload -= p.payload as u64;
        Some((p, e))
    }

    /// Puts back the head `next_waiting` took (the MMU still refuses it).
    pub fn put_back(&mut self, pkt: Packet, egress: PortId) {
        self.held_bytes += pkt.wire as u64;
        self.held_payload += pkt.payload as u64;
        self.waiting.push_front((pkt, egress));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::PacketKind;
    use crate::ids::QpId;

    fn data(seq: u64) -> Packet {
        let mut p = Packet::pfc(PacketKind::Data, 3, 1048);
        p.qp = QpId(1);
        p.seq = seq;
        p.payload = 1000;
        p
    }

    fn arrive(r: &mut Resequencer, seq: u64, cap: u64) -> (Verdict, Vec<u64>) {
        let v = r.arrive(&data(seq), Time::ZERO, cap, None);
        let out = r.take_released();
        let seqs = out.iter().map(|p| p.seq).collect();
        r.restore_released(out);
        (v, seqs)
    }

    #[test]
    fn holds_until_the_gap_fills_then_releases_in_order() {
        let mut r = Resequencer::default();
        assert_eq!(arrive(&mut r, 0, 10_000), (Verdict::Forward, vec![]));
        assert_eq!(arrive(&mut r, 3000, 10_000), (Verdict::Held, vec![]));
        assert_eq!(arrive(&mut r, 2000, 10_000), (Verdict::Held, vec![]));
        assert_eq!(r.held_payload(), 2000);
        assert_eq!(arrive(&mut r, 1000, 10_000), (Verdict::Forward, vec![2000, 3000]));
        assert_eq!(r.held_packets(), 0);
        assert_eq!(arrive(&mut r, 500, 10_000), (Verdict::Forward, vec![]), "old: as is");
    }

    #[test]
    fn a_full_buffer_lets_packets_escape() {
        let mut r = Resequencer::default();
        assert_eq!(arrive(&mut r, 1000, 1048), (Verdict::Held, vec![]));
        assert_eq!(arrive(&mut r, 2000, 1048), (Verdict::Escape, vec![]));
        assert_eq!(arrive(&mut r, 0, 1048), (Verdict::Forward, vec![1000]));
    }

    #[test]
    fn the_waiting_line_keeps_order_and_counts() {
        let mut r = Resequencer::default();
        r.wait(data(0), PortId(1));
        r.wait(data(1000), PortId(1));
        assert_eq!((r.held_packets(), r.held_payload()), (2, 2000));
        let (p, e) = r.next_waiting().unwrap();
        assert_eq!((p.seq, r.held_payload()), (0, 1000));
        r.put_back(p, e);
        assert_eq!(r.next_waiting().map(|(p, _)| p.seq), Some(0));
        assert_eq!(r.next_waiting().map(|(p, _)| p.seq), Some(1000));
        assert!(!r.has_waiting() && r.held_payload() == 0);
    }

    #[test]
    fn a_timed_out_gap_is_given_up() {
        let mut r = Resequencer::default();
        let t = Some(Time::from_us(100));
        assert_eq!(r.arrive(&data(1000), Time::ZERO, 1 << 20, t), Verdict::Held);
        assert_eq!(r.arrive(&data(2000), Time::from_us(50), 1 << 20, t), Verdict::Held);
        assert_eq!(r.arrive(&data(3000), Time::from_us(100), 1 << 20, t), Verdict::Escape);
        let out = r.take_released();
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![1000, 2000]);
        r.restore_released(out);
        assert_eq!(r.held_payload(), 0);
        assert_eq!(r.arrive(&data(4000), Time::from_us(101), 1 << 20, t), Verdict::Forward);
    }
}
