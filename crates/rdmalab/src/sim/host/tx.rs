//! The RNIC's transmitter: wake-ups, arbitration among ACKs and QPs with data, the QP
//! context cache's serial fetch, and building a data packet for the wire.

use crate::app::{SendCompletion, SendDone};
use crate::fabric::packet::NO_INT;
use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, NicId, PortId, QpId};
use crate::rnic::{transport, Pick};
use crate::sim::{Event, Simulation};
use crate::units::Time;

impl Simulation {
    pub(in crate::sim) fn on_nic_wake(&mut self, nic: NicId) {
        let n = &mut self.nics[nic.idx()];
        if n.wake_at != self.now {
            return; // superseded by an earlier wake-up
        }
        n.wake_at = Time::MAX;
        self.nic_kick(nic);
    }

    /// `qp_id` was rewound (or resumed): if that left it bytes to send, its NIC's arbiter
    /// visits it again (`rnic::nic`: it unmarks a QP found with nothing unsent).
    #[inline]
    pub(in crate::sim) fn mark_if_unsent(&mut self, qp_id: QpId) {
        let qp = &self.qps[qp_id.idx()];
        if qp.has_data() {
            let nic = qp.nic;
            self.nics[nic.idx()].mark(qp);
            self.nic_changed(nic);
        }
    }

    /// The RNIC's transmitter: ACKs first, then one data packet by round robin.
    ///
    /// A packet started here has its `TxDone` pushed only once everything the sending did
    /// is done (a send completion's handler may post more), and not at all when the RNIC is
    /// then quiet (`Nic::quiet`): that event would find nothing to do. Its sequence number
    /// was reserved when the packet started (`transmit`); the next kick, or a change of the
    /// NIC that kicks nothing (`nic_changed`), pushes it with that number while the packet
    /// is still serialising, so it runs exactly in its place.
    pub(in crate::sim) fn nic_kick(&mut self, nic_idx: NicId) {
        let port = self.nics[nic_idx.idx()].port;
        let st = &self.ports[port.idx()];
        if st.busy || st.down || self.rearm_tx_done(port) {
            return;
        }
        let before = self.ports[port.idx()].tx_end;
        let sent = self.nic_send(nic_idx, port);
        if self.ports[port.idx()].tx_end != before {
            self.settle_tx_done(nic_idx, port, sent);
        }
    }

    /// After a host port started a packet (from QP `sent`, or an ACK): pushes its `TxDone`,
    /// unless the RNIC is quiet and nothing in the run can change that without a kick
    /// (mechanisms that act on the RNIC or its QPs between kicks keep every event).
    #[inline]
    fn settle_tx_done(&mut self, nic_idx: NicId, port: PortId, sent: Option<QpId>) {
        let st = &self.ports[port.idx()];
        let (nic, end) = (&self.nics[nic_idx.idx()], st.tx_end.0);
        // The QP just served usually has more to send: the event is needed, nothing else to read.
        let more = sent.is_some_and(|q| nic.would_act(&self.qps[q.idx()], &st.paused, end));
        if !more && self.host_tx_skips && nic.quiet(&self.qps, &st.paused, end) {
            self.ports[port.idx()].busy = false;
        } else {
            let at = st.tx_end;
            self.queue.push_reserved(at.0, at.1, Event::TxDone(port));
        }
    }

    /// A host port whose `TxDone` was skipped (`settle_tx_done`) and that is still
    /// serialising: pushes that event in its reserved place, where it runs the arbiter as it
    /// would have. True in that case (the port is busy now).
    #[inline(always)]
    pub(in crate::sim) fn rearm_tx_done(&mut self, port: PortId) -> bool {
        let st = &mut self.ports[port.idx()];
        let (end, seq) = st.tx_end;
        if st.busy || end < self.now || (end == self.now && seq <= self.queue.popped_seq()) {
            return false;
        }
        st.busy = true;
        self.queue.push_reserved(st.tx_end.0, st.tx_end.1, Event::TxDone(port));
        true
    }

    /// The RNIC's arbiter may have work that no kick announces (a QP marked, finished or
    /// reconnected): a skipped `TxDone` goes back in its place (`rearm_tx_done`).
    #[inline]
    pub(in crate::sim) fn nic_changed(&mut self, nic: NicId) {
        let port = self.nics[nic.idx()].port;
        self.rearm_tx_done(port);
    }

    /// `nic_kick`'s choice and send, on an idle port: the QP it sent from, if any.
    #[inline(always)]
    fn nic_send(&mut self, nic_idx: NicId, port: PortId) -> Option<QpId> {
        let nic = &mut self.nics[nic_idx.idx()];
        let st = &self.ports[port.idx()];
        let ack_class = if self.cfg.ack_high_prio { 0 } else { 3 };
        if !nic.acks.is_empty() && (ack_class == 0 || !st.paused[ack_class]) {
            if let Some(ack) = nic.acks.pop_front() {
                self.transmit(port, ack);
                return None;
            }
        }
        if nic.stall.is_some() && self.serial_stall(nic_idx, port) {
            return None;
        }
        loop {
            let nic = &mut self.nics[nic_idx.idx()];
            match nic.select(&mut self.qps, &self.ports[port.idx()].paused, self.now) {
                Pick::Send(qp) => {
                    if let Some(cache) = nic.cache.as_mut() {
                        let key = transport::cache_key(qp, self.qps[qp.idx()].transport, nic_idx);
                        if !cache.touch(key) {
                            if cache.serial() {
                                self.serial_miss(nic_idx, qp);
                                return None;
                            }
                            // Context fetch: this QP waits, the NIC serves others meanwhile.
                            self.qps[qp.idx()].next_avail = cache.fetched_at(self.now, Time::ZERO);
                            continue;
                        }
                    }
                    self.send_data(qp, port);
                    return Some(qp);
                }
                Pick::Wait(t) => {
                    if t < nic.wake_at {
                        nic.wake_at = t;
                        self.queue.push(t, Event::NicWake(nic_idx));
                    }
                    return None;
                }
                Pick::Idle => return None,
            }
        }
    }

    /// Serial context fetches: the arbiter handles one QP at a time, so a miss stalls it
    /// until the context is loaded (the knee of the DRUM paper's Fig 2c).
    #[cold]
    pub(super) fn serial_miss(&mut self, nic_idx: NicId, qp: QpId) {
        let nic = &mut self.nics[nic_idx.idx()];
        let look = self.cfg.timing.tx_time(nic.rate, self.cfg.data_wire(self.cfg.mtu) as u64);
        let t = nic.cache.as_mut().expect("serial miss without cache").fetched_at(self.now, look);
        nic.stall = Some((qp, t));
        self.arm_nic_wake(nic_idx, t);
    }

    /// A stalled arbiter: wait, or send the packet whose context was fetched. True when
    /// the NIC has nothing more to do now.
    #[cold]
    pub(super) fn serial_stall(&mut self, nic_idx: NicId, port: PortId) -> bool {
        let nic = &mut self.nics[nic_idx.idx()];
        let Some((qp, t)) = nic.stall else { return false };
        if self.now < t {
            self.arm_nic_wake(nic_idx, t);
            return true;
        }
        nic.stall = None;
        let q = &self.qps[qp.idx()];
        if q.finished || !q.has_data() || q.window_bound() || self.ports[port.idx()].paused[q.pg as usize] {
            return false;
        }
        if let Some(c) = nic.cache.as_mut() {
            c.touch(transport::cache_key(qp, q.transport, nic_idx)); // served by the fetch that just completed
        }
        self.send_data(qp, port);
        true
    }

    pub(super) fn arm_nic_wake(&mut self, nic_idx: NicId, t: Time) {
        let nic = &mut self.nics[nic_idx.idx()];
        if t < nic.wake_at {
            nic.wake_at = t;
            self.queue.push(t, Event::NicWake(nic_idx));
        }
    }

    /// Cuts the next segment of `qp` and puts it on the wire.
    pub(super) fn send_data(&mut self, qp_id: QpId, port: PortId) {
        let int_slot = if self.cfg.cc.carries_header() { self.int.alloc() } else { NO_INT };
        if int_slot != NO_INT {
            self.int.get_mut(int_slot).sent_at = self.now; // TIMELY's timestamp
        }
        let qp = &mut self.qps[qp_id.idx()];
        let reliable = qp.transport.reliable();
        // Packets never span two messages (each WQE is segmented on its own): cut at the
        // end of the message holding snd_nxt. A flow's QP has one message, its whole stream.
        // Nearly always the head holds it, and its end is kept inline (`rnic::posted`); the
        // message itself is read only for its last packet, and for its first where that is
        // marked (InfiniBand's RETH, UC/UD's first-packet flag).
        let (msg_end, in_head, mut msg) = match qp.messages.head_end() {
            Some(end) if end > qp.snd_nxt => (end, true, None),
            _ => {
                let m = qp.messages.iter().find(|m| m.end > qp.snd_nxt);
                (m.map_or(qp.posted, |m| m.end), false, m)
            }
        };
        let payload = (msg_end - qp.snd_nxt).min(self.cfg.mtu as u64) as u32;
        let end = qp.snd_nxt + payload as u64;
        let ib = self.mech.ib.is_some();
        if in_head && (end == msg_end || ib || !reliable) {
            msg = qp.messages.front();
        }
        // The message this packet ends, if any: (its header slot, and whom to tell it left).
        let ends = msg.filter(|m| m.end == end).map(|m| (m.hdr, m.notify_sent.then_some((m.app, m.cookie))));
        let last_of_msg = ends.is_some();
        let mut wire = self.cfg.data_wire(payload);
        if ib && msg.is_some_and(|m| m.end - m.size == qp.snd_nxt) {
            wire += crate::fabric::ib::RETH; // InfiniBand: a WRITE's first packet (paced with it)
        }
        let mut pkt = Packet {
            seq: qp.snd_nxt,
            qp: qp_id,
            src: qp.src,
            dst: qp.dst,
            sip: qp.sip,
            dip: qp.dip,
            ingress: PortId::NONE,
            ingress_local: 0,
            int_slot,
            app_hdr: ends.map_or(HeaderSlot::NONE, |e| e.0),
            payload,
            wire,
            sport: qp.sport,
            dport: qp.dport,
            kind: PacketKind::Data,
            pg: qp.pg,
            ce: false,
            // UC/UD: marks a message's first packet (`transport::starts_message`).
            cnp: !reliable && msg.is_some_and(|m| m.end - m.size == qp.snd_nxt),
            last_of_msg,
            int_hops: 0,
            deflections: 0,
            tenant: qp.tenant,
        };
        qp.snd_nxt = end;
        let resend = end <= qp.high_sent;
        if resend {
            qp.retx_packets += 1;
            self.counters.retx_packets += 1;
        } else {
            qp.high_sent = end;
        }
        let uet = qp.transport == transport::Transport::Uet;
        if uet {
            pkt.sport = crate::sim::mech::uet::entropy(&mut self.mech.uet, qp_id, qp); // the EV
            pkt.deflections = crate::fabric::transport::UET_TRIMMABLE;
            crate::sim::mech::uet::after_send(&mut self.mech.uet, qp_id, qp, &pkt, self.now, self.cfg.mtu);
            if qp.window_bound() || resend || qp.high_sent >= qp.posted {
                // The window is full, a resend, or nothing is left to send: htsim's UEC
                // sender asks for an ACK then (`uec.cpp` line 2090, `sendNewPacket`; line
                // 2147, `sendRtxPacket`): the sender waits on it.
                pkt.deflections |= crate::fabric::transport::UET_ACK_REQUEST;
            }
            // a PSN to resend, else new data
        } else if let Some(irn) = self.mech.irn.as_deref_mut() {
            qp.snd_nxt = crate::sim::mech::irn::after_send(irn, qp_id, qp, end);
            // a hole, else new data
        }
        // The first packet of a quiet QP: its group's DCQCN timers may be parked.
        let unpark = qp.in_flight == 0 && self.dcqcn.hints();
        qp.in_flight = qp.in_flight.wrapping_add(1); // a partition's share (`receive_data`)
        if qp.exempt_until != 0 && end >= qp.exempt_until {
            crate::sim::mech::tenancy::end_line_rate_start(qp);
            self.rejoin_group(qp_id);
        }
        if unpark {
            self.unpark_dcqcn_timers(self.qps[qp_id.idx()].cc_group);
        }
        let qp = &mut self.qps[qp_id.idx()];
        let pace = if self.cfg.rate_bound { qp.rate } else { qp.max_rate };
        qp.next_avail = self.now + self.cfg.timing.tx_time(pace, wire as u64);
        qp.last_wire = wire;
        if uet {
            if let Some(r) = self.mech.rccc.as_deref_mut() {
                // RCCC: a packet of credit spent, the target carried, no credit left: wait.
                crate::sim::mech::rccc::on_send(r, &mut self.mech.uet, qp_id, qp, &mut pkt, self.cfg.mtu);
            }
        }
        let rto = if uet { Some(self.cfg.uet.rto) } else { self.cfg.rto.filter(|_| reliable) };
        if let Some(rto) = rto {
            if qp.rto_deadline == Time::MAX {
                qp.rto_deadline = self.now + rto;
            }
            if !qp.rto_scheduled {
                qp.rto_scheduled = true;
                self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
            }
        }
        if self.cfg.defense != crate::tenancy::Defense::None {
            let g = self.qps[qp_id.idx()].cc_group;
            crate::sim::mech::tenancy::on_packet_sent(
                &self.cfg,
                self.now,
                &mut self.groups[g.idx()],
                &mut self.qps,
                &mut self.nics,
                wire,
            );
        }
        if crate::sim::mech::dcqcn_bytes::counts_bytes(&self.cfg.cc) {
            let g = self.qps[qp_id.idx()].cc_group;
            if crate::sim::mech::dcqcn_bytes::on_packet_sent(&self.cfg.cc, &mut self.groups[g.idx()], wire as u64) {
                self.set_member_rates(g, false);
            }
        }
        self.counters.data_packets_sent += 1;
        self.counters.payload_bytes_sent += payload as u64;
        if let Some(ib) = self.mech.ib.as_deref_mut() {
            crate::sim::mech::ib::on_send(ib, &mut self.ports, self.now, port, &pkt);
            // the VL's credits
        }
        self.transmit(port, pkt);
        if let Some((_, Some((app, cookie)))) = ends {
            let c = SendCompletion { qp: qp_id, cookie, done: SendDone::Sent, time: self.now };
            self.app_send_done(app, c);
        }
        if !reliable {
            self.unreliable_sent(qp_id); // UC/UD: no ACK will come (`completions.rs`)
        }
    }
}
