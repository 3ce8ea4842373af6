//! The receiving side of a QP and the sender's side of its ACKs: in-order placement, ACK,
//! NACK and CNP at the receiver; at the sender, ACK processing, completions and the end of a
//! flow (the completions themselves: `completions.rs`).

use crate::fabric::packet::NO_INT;
use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, PortId, QpId};
use crate::rnic::irn::Arrival;
use crate::sim::mech::{irn, retry, rnr};
use crate::sim::{GaveUp, Simulation};
use crate::units::Time;

impl Simulation {
    /// A packet reached its destination host.
    pub(in crate::sim) fn host_receive(&mut self, pkt: Packet) {
        match pkt.kind {
            PacketKind::Data => self.receive_data(pkt),
            PacketKind::Ack | PacketKind::Nack => self.receive_ack(pkt),
            PacketKind::Pause | PacketKind::Resume | PacketKind::FlowControl => unreachable!("PFC handled before"),
            PacketKind::LbControl => {} // a balancer's control packet ends at a ToR; none gets here
            PacketKind::Credit => self.rccc_credit(pkt), // an RCCC receiver's grant (`host/uet_rx.rs`)
        }
    }

    /// The receiver: accept in order, NACK a gap (go-back-N), discard duplicates.
    pub(super) fn receive_data(&mut self, pkt: Packet) {
        // The receiver's half of the QP (the packet names the sender's slot, which the ACK
        // echoes back).
        let rx_id = self.rx_slot(&pkt);
        // The receiver's copy of the transport: an answered arrival then reads only the
        // receiver's line of the QP.
        debug_assert_eq!(self.qps[rx_id.idx()].rx.unreliable, !self.qps[rx_id.idx()].transport.reliable());
        if self.qps[rx_id.idx()].rx.unreliable {
            return self.receive_unreliable(pkt, rx_id); // UC/UD (`mech::transport`)
        }
        if self.qps[rx_id.idx()].rx.uet {
            return self.receive_uet(pkt, rx_id); // UET (`host/uet_rx.rs`)
        }
        // A SEND with no receive WQE posted is refused (`mech::rnr`, `[rnic] recv_queue_depth`).
        if let Some(r) = self.mech.rnr.as_deref_mut() {
            if rnr::on_arrival(r, &mut self.qps[rx_id.idx()], &self.flows, &pkt, self.now) {
                return self.refuse_send(pkt, rx_id);
            }
        }
        // The packet stays counted in `in_flight` until it is known whether a reply takes its
        // place: an ACK or NACK inherits its count, so the common arrival leaves the count
        // (and the QP's line that holds it) alone.
        let qp = &mut self.qps[rx_id.idx()];
        let rx = &mut qp.rx;
        let mut placed = None;
        // IRN holds what comes beyond a gap (`mech::irn`); go-back-N takes only the next.
        // `next`: where the stream continues if the packet is in order (under IRN it may
        // join held bytes, all delivered now).
        let irn_on = self.mech.irn.is_some();
        let (in_order, new_data, ooo, next) = match self.mech.irn.as_deref_mut() {
            None => (
                pkt.seq == rx.expected,
                pkt.seq >= rx.expected,
                pkt.seq > rx.expected,
                rx.expected + pkt.payload as u64,
            ),
            Some(irn) => {
                let (a, next) = irn::receive(irn, rx_id, &pkt, rx.expected);
                (a == Arrival::InOrder, a != Arrival::Duplicate, a == Arrival::OutOfOrder, next)
            }
        };
        let reply = if in_order {
            let delivered = next - rx.expected;
            self.counters.payload_bytes_delivered += delivered;
            rx.expected = next;
            rx.unacked_packets += 1;
            if self.cfg.tenant_meter {
                let nic = self.nic_of[pkt.dst.idx()].idx();
                // The QP's tenant, as the packet carries it (the QP's line holding it stays cold).
                self.mech.meters[nic].add(pkt.tenant, self.now, delivered as u32);
            }
            if pkt.last_of_msg {
                // The message ends with this packet (under IRN, held bytes past it may have
                // joined: they belong to later messages).
                let end = pkt.seq + pkt.payload as u64;
                if !pkt.app_hdr.is_none() && !rx.app.is_none() {
                    placed = Some((rx.app, end - rx.msg_start));
                }
                rx.msg_start = end;
            }
            // InfiniBand CC: a FECN is answered at once by a BECN (annex A10).
            let becn_now = pkt.ce && self.mech.fecn.is_some();
            // An IRN receiver that just joined held bytes tells the sender at once.
            let joined = delivered != pkt.payload as u64;
            if rx.unacked_packets >= self.cfg.ack_interval || pkt.last_of_msg || becn_now || joined {
                rx.unacked_packets = 0;
                Some(PacketKind::Ack)
            } else {
                None
            }
        } else if ooo && irn_on {
            if pkt.last_of_msg && !rx.app.is_none() {
                irn::hold_message_end(self.mech.irn.as_deref_mut().unwrap(), rx_id, &pkt);
            }
            Some(PacketKind::Nack) // IRN NACKs every packet it holds
        } else {
            self.counters.payload_bytes_discarded += pkt.payload as u64;
            if ooo {
                let quiet = self.now < rx.nack_quiet_until && rx.last_nack == rx.expected;
                rx.nack_quiet_until = self.now + self.cfg.nack_interval;
                rx.last_nack = rx.expected;
                (!quiet).then_some(PacketKind::Nack)
            } else {
                self.cfg.ack_duplicates.then_some(PacketKind::Ack)
            }
        };
        if ooo {
            self.count_ooo(rx_id);
        }
        if self.cfg.fct_at_receiver && in_order && pkt.last_of_msg {
            self.note_delivered(rx_id);
        }
        if let Some((app, bytes)) = placed {
            self.app_recv_done(app, rx_id, pkt.app_hdr, bytes);
        }
        if irn_on && in_order && next != pkt.seq + pkt.payload as u64 {
            self.complete_held_messages(rx_id);
        }
        let dasr = self.mech.dasr.as_deref_mut();
        let share_kbps = crate::sim::mech::dasr::share_for_ack(dasr, &self.nic_of, &pkt, rx_id, new_data, in_order);
        let Some(kind) = reply else {
            if pkt.int_slot != NO_INT {
                self.int.release(pkt.int_slot);
            }
            // No reply: the packet leaves the network here. Wrapping: in a parallel run the
            // sender's count lives in its own partition.
            let qp = &mut self.qps[rx_id.idx()];
            qp.in_flight = qp.in_flight.wrapping_sub(1);
            self.log_left_network(&pkt);
            self.release_if_quiet(rx_id);
            return;
        };
        let sack =
            if ooo && irn_on { irn::sack_field(pkt.seq, self.qps[rx_id.idx()].rx.expected) } else { HeaderSlot::NONE };
        self.reply(&pkt, rx_id, kind, ooo, sack, share_kbps, false);
    }

    /// An RNR NAK for a SEND refused for want of a receive WQE (`mech::rnr::on_arrival`):
    /// the packet is discarded and answered at once.
    #[cold]
    fn refuse_send(&mut self, pkt: Packet, rx_id: QpId) {
        self.counters.payload_bytes_discarded += pkt.payload as u64;
        let dasr = self.mech.dasr.as_deref_mut();
        let share_kbps = crate::sim::mech::dasr::share_for_ack(dasr, &self.nic_of, &pkt, rx_id, true, false);
        self.reply(&pkt, rx_id, PacketKind::Nack, false, HeaderSlot::NONE, share_kbps, true);
    }

    /// The receiver's ACK or NACK `kind` for data packet `pkt` on slot `rx_id`, queued at its
    /// NIC: `sack`, an IRN NACK's triggering sequence; `rnr`, a NACK that is an RNR NAK.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn reply(
        &mut self,
        pkt: &Packet,
        rx_id: QpId,
        kind: PacketKind,
        ooo: bool,
        sack: HeaderSlot,
        share_kbps: u32,
        rnr: bool,
    ) {
        let ack = self.make_reply(pkt, rx_id, kind, ooo, sack, share_kbps, rnr);
        self.queue_reply(pkt, ack);
    }

    /// `reply`'s packet, counted (NACKs, CNPs) but not yet queued.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn make_reply(
        &mut self,
        pkt: &Packet,
        rx_id: QpId,
        kind: PacketKind,
        ooo: bool,
        sack: HeaderSlot,
        share_kbps: u32,
        rnr: bool,
    ) -> Packet {
        // The reply takes the data packet's place in `in_flight` (its caller left the count
        // as it was): one packet out of the network, one in.
        if kind == PacketKind::Nack {
            self.counters.nacks += 1;
        }
        let ooo_cnp = ooo && self.cfg.cnp_on_ooo;
        let cnp = (pkt.ce || ooo_cnp) && self.cnp_allowed(rx_id);
        if cnp {
            self.count_cnp(rx_id, pkt.ce);
        }
        let qp = &self.qps[rx_id.idx()];
        Packet {
            seq: qp.rx.expected,
            qp: pkt.qp,
            src: pkt.dst,
            dst: pkt.src,
            sip: pkt.dip,
            dip: pkt.sip,
            ingress: PortId::NONE,
            ingress_local: 0,
            int_slot: pkt.int_slot,
            app_hdr: sack,       // an IRN NACK's triggering sequence (`mech::irn::sack_field`)
            payload: share_kbps, // an ACK's payload field carries the DASR share
            wire: self.cfg.ack_wire(),
            sport: pkt.dport,
            dport: pkt.sport,
            kind,
            pg: pkt.pg,
            ce: false,
            cnp,
            last_of_msg: rnr, // on a NACK: an RNR NAK (the AETH's syndrome, `mech::rnr`)
            deflections: 0,
            int_hops: 0,
            tenant: pkt.tenant,
        }
    }

    /// Queues `ack`, the reply to data packet `pkt`, at the receiving host's NIC.
    #[inline(always)]
    pub(super) fn queue_reply(&mut self, pkt: &Packet, ack: Packet) {
        if pkt.int_slot != NO_INT {
            self.int.get_mut(pkt.int_slot).nhop = pkt.int_hops; // what the switches stamped
        }
        let nic = self.egress_nic(pkt.dst, pkt.src);
        self.nics[nic.idx()].acks.push_back(ack);
        self.nic_kick(nic);
        if self.topo.egress_by_destination {
            self.kick_host(pkt.dst); // the receive's handler may have posted on another NIC
        }
    }

    /// The sender: advance snd_una, complete messages, go back on NACK, run CC.
    pub(super) fn receive_ack(&mut self, mut pkt: Packet) {
        let qp_id = pkt.qp;
        self.qps[qp_id.idx()].in_flight = self.qps[qp_id.idx()].in_flight.wrapping_sub(1); // a partition's share
        if self.trace.is_some() {
            self.trace_ack(&pkt);
        }
        let q = &self.qps[qp_id.idx()];
        if q.finished || q.error {
            if pkt.int_slot != NO_INT {
                self.int.release(pkt.int_slot);
            }
            self.release_if_quiet(qp_id);
            return;
        }
        let qp = &mut self.qps[qp_id.idx()];
        let old_una = qp.snd_una;
        let advanced = pkt.seq > qp.snd_una;
        if advanced {
            qp.snd_una = pkt.seq;
            qp.retries = 0;
            // UET times each packet from its send time (`mech::uet::on_timeout`).
            if self.cfg.rto.is_some() && qp.transport != crate::rnic::transport::Transport::Uet {
                qp.rto_deadline =
                    if qp.snd_una < qp.snd_nxt { self.now + self.cfg.rto.unwrap_or(Time::MAX) } else { Time::MAX };
            }
        }
        // Most ACKs end no message; `complete_messages` (out of line) pops none then, and
        // `close_if_idle` needs an empty message list, so the call can be skipped exactly.
        let ends_one = advanced && qp.messages.head_end().is_none_or(|end| end <= qp.snd_una);
        let chunks_done = if ends_one { self.complete_messages(qp_id) } else { None };
        let qp = &mut self.qps[qp_id.idx()];
        if pkt.kind == PacketKind::Nack {
            qp.nacks += 1;
        }
        if qp.transport == crate::rnic::transport::Transport::Uet {
            self.uet_on_ack(qp_id, &pkt, old_una); // SACK, a trimmed packet's NACK (`host/uet_rx.rs`)
            pkt.payload = 0; // the SACK's high half, no DASR share
        } else if let Some(irn) = self.mech.irn.as_deref_mut() {
            if !irn::on_ack(irn, qp_id, qp, &pkt, advanced, self.now, &self.cfg) {
                self.fail_qp(qp_id, GaveUp::RetryExceeded);
            }
        } else if pkt.kind == PacketKind::Nack {
            if pkt.last_of_msg {
                // An RNR NAK: wait the responder's timer, then resend from its PSN (`mech::rnr`).
                let r = self.mech.rnr.as_deref_mut().expect("only a responder with receive queues sends one");
                if !rnr::on_nak(r, qp_id, qp, pkt.seq, self.now) {
                    self.fail_qp(qp_id, GaveUp::RnrRetryExceeded);
                }
            } else if qp.snd_nxt > pkt.seq.max(qp.snd_una) {
                if retry::go_back(self.cfg.retry_limit, qp) {
                    qp.snd_nxt = pkt.seq.max(qp.snd_una);
                } else {
                    self.fail_qp(qp_id, GaveUp::RetryExceeded);
                }
            }
        }
        self.mark_if_unsent(qp_id); // a NACK (or IRN's repair) may have rewound it
        self.cc_on_ack(qp_id, &pkt);
        if self.mech.uet.windowed && self.qps[qp_id.idx()].transport == crate::rnic::transport::Transport::Uet {
            self.mark_if_unsent(qp_id); // the window may have opened for a resend (`mech::uet::gate`)
        }
        if pkt.int_slot != NO_INT {
            self.int.release(pkt.int_slot);
        }
        let nic = self.qps[qp_id.idx()].nic;
        // Only now may the slot go (and an application open a QP in it).
        self.release_if_quiet(qp_id);
        if let Some((app, first, n)) = chunks_done {
            self.app_chunks_done(app, first, n, qp_id);
        }
        self.nic_kick(nic);
        if self.topo.egress_by_destination {
            self.kick_host(pkt.dst); // a send completion's handler may have posted on another NIC
        }
    }

    /// Traces an ACK or NACK (and its CNP flag) at the sender's NIC port.
    #[cold]
    pub(super) fn trace_ack(&mut self, pkt: &Packet) {
        use crate::sim::trace::TraceEvent;
        let port = self.nics[self.egress_nic(pkt.dst, pkt.src).idx()].port;
        let ev = if pkt.kind == PacketKind::Nack { TraceEvent::Nack } else { TraceEvent::Ack };
        self.trace_event(ev, port, pkt);
        if pkt.cnp {
            self.trace_event(TraceEvent::Cnp, port, pkt);
        }
    }

    /// Counts an out-of-order arrival at receiver slot `rx_id` (run and flow).
    #[cold]
    pub(super) fn count_ooo(&mut self, rx_id: QpId) {
        self.counters.ooo_packets += 1;
        if let Some(c) = self.flow_rx_counts(rx_id) {
            c.ooo_packets += 1;
        }
    }

    /// Counts a CNP sent by receiver slot `rx_id`, by its cause: a CE mark, else an
    /// out-of-order arrival (`fabric.cnp_on_ooo`).
    fn count_cnp(&mut self, rx_id: QpId, ecn: bool) {
        if ecn {
            self.counters.cnps_ecn += 1;
        } else {
            self.counters.cnps_ooo += 1;
        }
        if let Some(c) = self.flow_rx_counts(rx_id) {
            if ecn {
                c.cnps_ecn += 1;
            } else {
                c.cnps_ooo += 1;
            }
        }
    }

    /// The receiver's counts of the plain flow on slot `rx_id` (`None` for an application's QP).
    pub(super) fn flow_rx_counts(&mut self, rx_id: QpId) -> Option<&mut crate::stats::RxFlowCounts> {
        let flow = self.qps[rx_id.idx()].rx.flow;
        if flow.is_none() {
            return None;
        }
        if self.flow_rx.len() <= flow.idx() {
            self.flow_rx.resize(self.flows.len().max(flow.idx() + 1), Default::default());
        }
        Some(&mut self.flow_rx[flow.idx()])
    }
}
