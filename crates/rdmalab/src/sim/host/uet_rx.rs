//! A UET QP's receiver and its sender's ACK handling (`transport = "uet"`; the decisions are
//! `mech::uet`'s over `rnic::uet`'s state): packets placed in any order, never twice; one
//! ACK with a SACK bitmap every `ack_every` packets; a NACK naming each trimmed header.

use crate::fabric::packet::NO_INT;
use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, QpId};
use crate::rnic::uet::Arrival;
use crate::sim::mech::{rccc, uet, Timer};
use crate::sim::{Event, Simulation};

impl Simulation {
    /// A UET data packet at its receiver's half of the QP, slot `rx_id`. Out of line, so
    /// that `receive_data` stays as small as it was for other transports.
    #[cold]
    #[inline(never)]
    pub(super) fn receive_uet(&mut self, pkt: Packet, rx_id: QpId) {
        let mtu = self.cfg.mtu;
        if self.mech.rccc.is_some() {
            self.rccc_on_data(&pkt, rx_id);
        }
        if uet::trimmed(&pkt) {
            // A header without its payload: the NACK names it, the sender resends it.
            if let Some(c) = self.flow_rx_counts(rx_id) {
                c.trimmed_packets += 1; // `flows.trimmed_packets`: learnt here, at the receiver
            }
            let off = uet::nack_offset(&pkt, &self.qps[rx_id.idx()].rx, mtu);
            let nack = self.make_reply(&pkt, rx_id, PacketKind::Nack, false, off, 0, false);
            return self.queue_reply(&pkt, nack);
        }
        let qp = &mut self.qps[rx_id.idx()];
        let old = qp.rx.expected;
        let arrival = uet::receive(&mut self.mech.uet, rx_id, &mut qp.rx, &pkt, mtu);
        let ack = match arrival {
            Arrival::Beyond => {
                // Past the tracked PSNs: dropped unanswered (the sender's window keeps it
                // from happening; a timeout repairs it).
                self.counters.payload_bytes_discarded += pkt.payload as u64;
                return self.absorb(&pkt, rx_id);
            }
            Arrival::Duplicate => {
                self.counters.payload_bytes_discarded += pkt.payload as u64;
                true // acknowledged again: the first ACK may have been lost
            }
            Arrival::New(_) => {
                // Placed at once: delivery is unordered.
                self.counters.payload_bytes_delivered += pkt.payload as u64;
                if self.cfg.tenant_meter {
                    let nic = self.nic_of[pkt.dst.idx()].idx();
                    self.mech.meters[nic].add(pkt.tenant, self.now, pkt.payload);
                }
                let rx = &mut qp.rx;
                rx.unacked_packets += 1;
                // Every `ack_every` packets; a CE mark at once (each ACK carries the mark of
                // the packet that triggered it); the first packet, one that asks for an ACK
                // and, after such a request, the one that leaves nothing out of order
                // (htsim's sink: `mech::uet::ack_at_once`).
                let every = rx.unacked_packets >= self.cfg.uet.ack_every || pkt.ce;
                let now = rx.expected;
                uet::ack_at_once(&mut self.mech.uet, rx_id, &pkt, old, now, mtu) || every
            }
        };
        let ooo = pkt.seq > old;
        if ooo {
            self.count_ooo(rx_id);
        }
        let now_expected = self.qps[rx_id.idx()].rx.expected;
        if now_expected > old {
            self.uet_delivered(rx_id, old, now_expected);
        }
        if !ack {
            return self.absorb(&pkt, rx_id);
        }
        self.qps[rx_id.idx()].rx.unacked_packets = 0;
        let (lo, hi, off) = uet::sack(&mut self.mech.uet, rx_id, &self.qps[rx_id.idx()].rx, &pkt, mtu);
        let mut reply = self.make_reply(&pkt, rx_id, PacketKind::Ack, ooo, HeaderSlot(lo), hi, false);
        reply.int_hops = off;
        reply.last_of_msg = pkt.ce; // the ECN echo REPS reads (`mech::uet`)
        self.queue_reply(&pkt, reply);
    }

    /// The receiver's cumulative point moved from `old` to `now` bytes: the messages now
    /// wholly received complete to their application, and a plain flow's last byte notes its
    /// delivery (`fct_at_receiver`).
    fn uet_delivered(&mut self, rx_id: QpId, old: u64, now: u64) {
        let flow = self.qps[rx_id.idx()].rx.flow;
        if self.cfg.fct_at_receiver && !flow.is_none() {
            let size = self.flows[flow.idx()].size;
            if old < size && size <= now {
                self.note_delivered(rx_id);
            }
        }
        let mtu = self.cfg.mtu;
        while let Some((hdr, bytes)) = uet::next_message(&mut self.mech.uet, rx_id, &mut self.qps[rx_id.idx()].rx, mtu)
        {
            let app = self.qps[rx_id.idx()].rx.app;
            self.app_recv_done(app, rx_id, hdr, bytes);
        }
    }

    /// A data packet that leaves the network at its receiver without a reply.
    fn absorb(&mut self, pkt: &Packet, rx_id: QpId) {
        if pkt.int_slot != NO_INT {
            self.int.release(pkt.int_slot);
        }
        // Wrapping: in a parallel run the sender's count lives in its own partition.
        let qp = &mut self.qps[rx_id.idx()];
        qp.in_flight = qp.in_flight.wrapping_sub(1);
        self.log_left_network(pkt);
        self.release_if_quiet(rx_id);
    }

    /// The sender of UET QP `qp_id` got ACK or NACK `pkt`; the cumulative ACK already moved
    /// `snd_una` from `old_una`. A NACK's packet is marked to resend here
    /// (`mech::uet::retransmit_lost`, through `on_ack`): a congestion control's trim signal
    /// goes beside this call.
    #[cold]
    #[inline(never)]
    pub(super) fn uet_on_ack(&mut self, qp_id: QpId, pkt: &Packet, old_una: u64) {
        let qp = &mut self.qps[qp_id.idx()];
        uet::on_ack(&mut self.mech.uet, qp_id, qp, pkt, old_una, self.now, self.cfg.mtu);
        if qp.rto_deadline == crate::units::Time::MAX && qp.posted > qp.high_sent {
            if let Some(r) = self.mech.rccc.as_deref_mut() {
                if rccc::starved(r, qp_id) {
                    // Nothing in flight, data left, no credit: the timer covers the grant
                    // the sender waits for (`host/mod.rs::on_rto`).
                    qp.rto_deadline = self.now + self.cfg.uet.rto;
                    if !qp.rto_scheduled {
                        qp.rto_scheduled = true;
                        self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
                    }
                }
            }
        }
        if pkt.kind == PacketKind::Nack {
            if let Some(r) = self.mech.rccc.as_deref_mut() {
                rccc::on_nack(r, qp_id);
            }
            // A trimmed packet: one packet's loss for a window CC (NSCC, Swift); a no-op otherwise.
            self.cc_on_loss(qp_id, self.cfg.mtu as u64, crate::cc::LossKind::Packet);
        }
    }

    /// RCCC at the receiver: data packet `pkt` on slot `rx_id` names its sender's target
    /// (a trimmed header also the resend its NACK asks for); the pacer of the NIC that sends
    /// the credit back runs when this arms it.
    fn rccc_on_data(&mut self, pkt: &Packet, rx_id: QpId) {
        let nic = self.egress_nic(pkt.dst, pkt.src);
        let n = &self.nics[nic.idx()];
        let (port, packet_time) = (n.port, self.cfg.timing.tx_time(n.rate, self.cfg.data_wire(self.cfg.mtu) as u64));
        let (wire, now, nacked) = (self.cfg.ack_wire(), self.now, uet::trimmed(pkt));
        let r = self.mech.rccc.as_deref_mut().expect("called with RCCC on");
        if let Some(at) = rccc::on_data(r, nic, rx_id, pkt, nacked, wire, packet_time, now) {
            self.queue.push(at, Event::Mech(Timer::RcccGrant { port }));
        }
    }

    /// RCCC at the sender: a credit packet for QP `pkt.qp`; a QP that waited for credit
    /// resumes.
    #[cold]
    #[inline(never)]
    pub(super) fn rccc_credit(&mut self, pkt: Packet) {
        let id = pkt.qp;
        let Some(r) = self.mech.rccc.as_deref_mut() else { return };
        rccc::credit_arrived(r, id);
        let q = &self.qps[id.idx()];
        if q.finished || q.error {
            self.release_if_quiet(id); // a finished QP's slot waited for this credit
            return;
        }
        let r = self.mech.rccc.as_deref_mut().expect("tested above");
        if let Some(at) = rccc::on_credit(r, id, pkt.seq) {
            self.rccc_resume(id, at);
        }
    }

    /// QP `id` has credit again: its pacing resumes at `at` (or now), and its NIC visits it.
    pub(super) fn rccc_resume(&mut self, id: QpId, at: crate::units::Time) {
        let qp = &mut self.qps[id.idx()];
        qp.next_avail = at.max(self.now);
        let nic = qp.nic;
        self.nics[nic.idx()].pacing_moved(&self.qps[id.idx()]);
        self.mark_if_unsent(id);
        self.nic_kick(nic);
    }
}
