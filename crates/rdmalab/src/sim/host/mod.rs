//! Host-side handlers: flow admission, RNIC transmit arbitration, the receiver (ACK,
//! NACK, go-back-N), ACK processing at the sender, and retransmission timeouts.

mod cc;

pub(super) use cc::GroupKey;

use std::collections::VecDeque;

use crate::app::{SendCompletion, SendDone};
use crate::fabric::packet::NO_INT;
use crate::fabric::{Packet, PacketKind};
use crate::ids::{AppId, CcGroupId, HeaderSlot, PortId, QpId};
use crate::rnic::{Completion, Pick, Qp};
use crate::sim::{Event, Simulation};
use crate::stats::FlowRecord;
use crate::units::Time;
use crate::workload::FlowSpec;

/// `Qp::cc_group` of a QP whose slot was released.
const RELEASED: u32 = u32::MAX - 1;

impl Simulation {
    /// Admits every flow starting now, one QP each (or to the application that carries
    /// it), then schedules the next arrival.
    pub(in crate::sim) fn on_flow_arrival(&mut self) {
        while let Some(&f) = self.flows.get(self.next_flow) {
            if f.start > self.now {
                self.set_global_origin(crate::sim::order::Global::Flows);
                self.queue.push(f.start, Event::FlowArrival);
                break;
            }
            let flow = self.next_flow as u32;
            self.next_flow += 1;
            if !self.owns(f.src) {
                continue; // another partition's flow
            }
            // What admitting the flow pushes comes from its source host.
            self.set_node_origin(f.src.0);
            if !self.reachable(f.src, f.dst) {
                self.record_unreachable(flow);
                continue;
            }
            if !f.app.is_none() {
                self.app_admit(flow, f);
                continue;
            }
            let slot = self.origin_order.then_some(QpId(flow));
            let qp = self.open_qp_in(&f, slot);
            self.note_qp_flow(qp, flow);
            self.qps[qp.idx()].post(flow, f.size, self.now);
            let nic = self.qps[qp.idx()].nic;
            self.nic_kick(nic);
        }
    }

    /// Creates a QP for traffic like `f` (its source address, ports, class and tenant;
    /// `f.size` is the first message's size) and puts it in its congestion-control group.
    /// A released slot is reused when there is one, so memory follows the QPs alive at
    /// once, not the QPs ever opened.
    pub(in crate::sim) fn open_qp(&mut self, f: &FlowSpec) -> QpId {
        self.open_qp_in(f, None)
    }

    /// `open_qp` into a given slot (the origin order puts flow `i`'s QP in slot `i`, set up
    /// by `Simulation::with_apps`), or a free or new one.
    fn open_qp_in(&mut self, f: &FlowSpec, slot: Option<QpId>) -> QpId {
        let nic_idx = self.nic_of[f.src.idx()];
        let nic = &mut self.nics[nic_idx as usize];
        let sport = f.sport.unwrap_or_else(|| nic.allocate_sport(f.dst));
        let line = nic.rate;
        let path = self.path_info(f.src, f.dst);
        let (id, messages, gen) = match slot.or_else(|| self.free_qps.pop()) {
            Some(id) => {
                // Its NIC may still list the old occupant until its next arbitration (a
                // given slot never had one: it holds a placeholder).
                if slot.is_none() {
                    let old_nic = self.qps[id.idx()].nic as usize;
                    self.nics[old_nic].forget_finished(&self.qps);
                }
                let mut m = std::mem::take(&mut self.qps[id.idx()].messages);
                m.clear();
                (id, m, self.qps[id.idx()].gen.wrapping_add(1))
            }
            None => {
                self.qps.push(Qp::placeholder());
                (QpId::new(self.qps.len() - 1), VecDeque::new(), 0)
            }
        };
        self.qps[id.idx()] = Qp {
            nic: nic_idx,
            src: f.src,
            dst: f.dst,
            sip: f.src_ip.unwrap_or(self.topo.nodes[f.src.idx()].ips[0]),
            dip: self.topo.nodes[f.dst.idx()].ips[0],
            sport,
            dport: f.dport,
            pg: f.pg,
            messages,
            next_avail: self.now,
            rate: line,
            max_rate: line,
            win: if self.cfg.window.enabled { path.bdp } else { 0 },
            var_win: self.cfg.window.variable,
            base_rtt: path.base_rtt,
            finished: false,
            tenant: f.tenant,
            gen,
            ..Qp::placeholder()
        };
        if self.opens_while_running(slot.is_some()) {
            self.note_runtime_open(id, f.src);
        }
        self.counters.qps_opened += 1;
        self.live_qps += 1;
        self.counters.qps_peak = self.counters.qps_peak.max(self.live_qps);
        if self.cfg.defense != crate::tenancy::Defense::None {
            self.grant_line_rate_start(id, f.size);
        }
        self.join_group(id, path);
        self.nics[nic_idx as usize].qps.push(id);
        id
    }

    /// Puts a finished QP's slot on the free list once no packet of it is in the network
    /// (a timeout event still pending carries the old generation and is ignored). Slots are not reused while
    /// per-QP rate sampling or the QP-context cache name QPs by id.
    pub(in crate::sim) fn release_if_quiet(&mut self, id: QpId) {
        let qp = &self.qps[id.idx()];
        if !qp.finished || qp.in_flight != 0 || qp.cc_group.0 == RELEASED {
            return;
        }
        self.qps[id.idx()].cc_group = CcGroupId(RELEASED);
        self.live_qps -= 1;
        // The origin order keeps ids apart from other nodes' history: no reuse.
        if self.cfg.rate_sample_interval.is_none() && self.cfg.qp_cache.is_none() && !self.origin_order {
            self.free_qps.push(id);
        }
    }

    pub(in crate::sim) fn on_nic_wake(&mut self, nic: u32) {
        let n = &mut self.nics[nic as usize];
        if n.wake_at != self.now {
            return; // superseded by an earlier wake-up
        }
        n.wake_at = Time::MAX;
        self.nic_kick(nic);
    }

    /// The RNIC's transmitter: ACKs first, then one data packet by round robin.
    pub(in crate::sim) fn nic_kick(&mut self, nic_idx: u32) {
        let nic = &mut self.nics[nic_idx as usize];
        let port = nic.port;
        let st = &self.ports[port.idx()];
        if st.busy || st.down {
            return;
        }
        let ack_class = if self.cfg.ack_high_prio { 0 } else { 3 };
        if !nic.acks.is_empty() && (ack_class == 0 || !st.paused[ack_class]) {
            if let Some(ack) = nic.acks.pop_front() {
                self.transmit(port, ack);
                return;
            }
        }
        if nic.stall.is_some() && self.serial_stall(nic_idx, port) {
            return;
        }
        loop {
            let nic = &mut self.nics[nic_idx as usize];
            match nic.select(&self.qps, &self.ports[port.idx()].paused, self.now) {
                Pick::Send(qp) => {
                    if let Some(cache) = nic.cache.as_mut() {
                        if !cache.touch(qp) {
                            if cache.serial() {
                                return self.serial_miss(nic_idx, qp);
                            }
                            // Context fetch: this QP waits, the NIC serves others meanwhile.
                            self.qps[qp.idx()].next_avail = cache.fetched_at(self.now, Time::ZERO);
                            continue;
                        }
                    }
                    self.send_data(qp, port);
                    return;
                }
                Pick::Wait(t) => {
                    if t < nic.wake_at {
                        nic.wake_at = t;
                        self.queue.push(t, Event::NicWake(nic_idx));
                    }
                    return;
                }
                Pick::Idle => return,
            }
        }
    }

    /// Serial context fetches: the arbiter handles one QP at a time, so a miss stalls it
    /// until the context is loaded (seed 000 Fig 2c's knee).
    #[cold]
    fn serial_miss(&mut self, nic_idx: u32, qp: QpId) {
        let nic = &mut self.nics[nic_idx as usize];
        let look = self.cfg.timing.tx_time(nic.rate, self.cfg.data_wire(self.cfg.mtu) as u64);
        let t = nic.cache.as_mut().expect("serial miss without cache").fetched_at(self.now, look);
        nic.stall = Some((qp, t));
        self.arm_nic_wake(nic_idx, t);
    }

    /// A stalled arbiter: wait, or send the packet whose context was fetched. True when
    /// the NIC has nothing more to do now.
    #[cold]
    fn serial_stall(&mut self, nic_idx: u32, port: PortId) -> bool {
        let nic = &mut self.nics[nic_idx as usize];
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
            c.touch(qp); // served by the fetch that just completed
        }
        self.send_data(qp, port);
        true
    }

    fn arm_nic_wake(&mut self, nic_idx: u32, t: Time) {
        let nic = &mut self.nics[nic_idx as usize];
        if t < nic.wake_at {
            nic.wake_at = t;
            self.queue.push(t, Event::NicWake(nic_idx));
        }
    }

    /// Cuts the next segment of `qp` and puts it on the wire.
    fn send_data(&mut self, qp_id: QpId, port: PortId) {
        let int_slot = if self.cfg.cc.carries_header() { self.int.alloc() } else { NO_INT };
        if int_slot != NO_INT {
            self.int.get_mut(int_slot).sent_at = self.now; // TIMELY's timestamp
        }
        let qp = &mut self.qps[qp_id.idx()];
        // Packets never span two messages (each WQE is segmented on its own): cut at the
        // end of the message holding snd_nxt. A flow's QP has one message, its whole stream.
        let msg = qp.messages.iter().find(|m| m.end > qp.snd_nxt);
        let msg_end = msg.map_or(qp.posted, |m| m.end);
        let payload = (msg_end - qp.snd_nxt).min(self.cfg.mtu as u64) as u32;
        let end = qp.snd_nxt + payload as u64;
        // The message this packet ends, if any: (its header slot, and whom to tell it left).
        let ends = msg.filter(|m| m.end == end).map(|m| (m.hdr, m.notify_sent.then_some((m.app, m.cookie))));
        let last_of_msg = ends.is_some();
        let wire = self.cfg.data_wire(payload);
        let pkt = Packet {
            seq: qp.snd_nxt,
            qp: qp_id,
            src: qp.src,
            dst: qp.dst,
            sip: qp.sip,
            dip: qp.dip,
            ingress: PortId(u32::MAX),
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
            cnp: false,
            last_of_msg,
            int_hops: 0,
            deflections: 0,
            tenant: qp.tenant,
        };
        qp.snd_nxt = end;
        qp.in_flight += 1;
        if qp.exempt_until != 0 && end >= qp.exempt_until {
            self.end_line_rate_start(qp_id);
        }
        let qp = &mut self.qps[qp_id.idx()];
        let pace = if self.cfg.rate_bound { qp.rate } else { qp.max_rate };
        qp.next_avail = self.now + self.cfg.timing.tx_time(pace, wire as u64);
        qp.last_wire = wire;
        if let Some(rto) = self.cfg.rto {
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
                wire,
            );
        }
        self.counters.data_packets_sent += 1;
        self.counters.payload_bytes_sent += payload as u64;
        self.transmit(port, pkt);
        if let Some((_, Some((app, cookie)))) = ends {
            let c = SendCompletion { qp: qp_id, cookie, done: SendDone::Sent, time: self.now };
            self.app_send_done(app, c);
        }
    }

    /// A packet reached its destination host.
    pub(in crate::sim) fn host_receive(&mut self, pkt: Packet) {
        match pkt.kind {
            PacketKind::Data => self.receive_data(pkt),
            PacketKind::Ack | PacketKind::Nack => self.receive_ack(pkt),
            PacketKind::Pause | PacketKind::Resume => unreachable!("PFC handled before"),
        }
    }

    /// The receiver: accept in order, NACK a gap (go-back-N), discard duplicates.
    fn receive_data(&mut self, pkt: Packet) {
        // The receiver's half of the QP (the packet names the sender's slot, which the ACK
        // echoes back).
        let rx_id = self.rx_slot(&pkt);
        let qp = &mut self.qps[rx_id.idx()];
        // Wrapping: in a parallel run the sender's count lives in its own partition.
        qp.in_flight = qp.in_flight.wrapping_sub(1);
        let rx = &mut qp.rx;
        let mut placed = None;
        let (in_order, new_data) = (pkt.seq == rx.expected, pkt.seq >= rx.expected);
        let reply = if in_order {
            rx.expected += pkt.payload as u64;
            rx.unacked_packets += 1;
            self.counters.payload_bytes_delivered += pkt.payload as u64;
            if self.cfg.tenant_meter {
                let nic = self.nic_of[pkt.dst.idx()] as usize;
                self.meters[nic].add(qp.tenant, self.now, pkt.payload);
            }
            if pkt.last_of_msg {
                if !pkt.app_hdr.is_none() && !rx.app.is_none() {
                    placed = Some((rx.app, rx.expected - rx.msg_start));
                }
                rx.msg_start = rx.expected;
            }
            if rx.unacked_packets >= self.cfg.ack_interval || pkt.last_of_msg {
                rx.unacked_packets = 0;
                Some(PacketKind::Ack)
            } else {
                None
            }
        } else {
            self.counters.payload_bytes_dropped += pkt.payload as u64;
            if pkt.seq > rx.expected {
                let quiet = self.now < rx.nack_quiet_until && rx.last_nack == rx.expected;
                rx.nack_quiet_until = self.now + self.cfg.nack_interval;
                rx.last_nack = rx.expected;
                (!quiet).then_some(PacketKind::Nack)
            } else {
                self.cfg.ack_duplicates.then_some(PacketKind::Ack)
            }
        };
        if let Some((app, bytes)) = placed {
            self.app_recv_done(app, rx_id, pkt.app_hdr, bytes);
        }
        let dasr = self.dasr.as_deref_mut();
        let share_kbps = crate::sim::mech::dasr::share_for_ack(dasr, &self.nic_of, &pkt, rx_id, new_data, in_order);
        let Some(kind) = reply else {
            if pkt.int_slot != NO_INT {
                self.int.release(pkt.int_slot);
            }
            self.release_if_quiet(rx_id);
            return;
        };
        self.qps[rx_id.idx()].in_flight += 1;
        if kind == PacketKind::Nack {
            self.counters.nacks += 1;
        }
        let cnp = pkt.ce && self.cnp_allowed(rx_id);
        let qp = &self.qps[rx_id.idx()];
        let ack = Packet {
            seq: qp.rx.expected,
            qp: pkt.qp,
            src: pkt.dst,
            dst: pkt.src,
            sip: pkt.dip,
            dip: pkt.sip,
            ingress: PortId(u32::MAX),
            ingress_local: 0,
            int_slot: pkt.int_slot,
            app_hdr: HeaderSlot::NONE,
            payload: share_kbps, // an ACK's payload field carries the DASR share
            wire: self.cfg.ack_wire(),
            sport: pkt.dport,
            dport: pkt.sport,
            kind,
            pg: pkt.pg,
            ce: false,
            cnp,
            last_of_msg: false,
            deflections: 0,
            int_hops: 0,
            tenant: pkt.tenant,
        };
        if pkt.int_slot != NO_INT {
            self.int.get_mut(pkt.int_slot).nhop = pkt.int_hops; // what the switches stamped
        }
        let nic = self.nic_of[pkt.dst.idx()];
        self.nics[nic as usize].acks.push_back(ack);
        self.nic_kick(nic);
    }

    /// The sender: advance snd_una, complete messages, go back on NACK, run CC.
    fn receive_ack(&mut self, pkt: Packet) {
        let qp_id = pkt.qp;
        self.qps[qp_id.idx()].in_flight -= 1;
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
        let advanced = pkt.seq > qp.snd_una;
        if advanced {
            qp.snd_una = pkt.seq;
            qp.retries = 0;
            if self.cfg.rto.is_some() {
                qp.rto_deadline =
                    if qp.snd_una < qp.snd_nxt { self.now + self.cfg.rto.unwrap_or(Time::MAX) } else { Time::MAX };
            }
        }
        let chunks_done = if advanced { self.complete_messages(qp_id) } else { None };
        let qp = &mut self.qps[qp_id.idx()];
        if pkt.kind == PacketKind::Nack && qp.snd_nxt > pkt.seq.max(qp.snd_una) && self.go_back(qp_id) {
            let qp = &mut self.qps[qp_id.idx()];
            qp.snd_nxt = pkt.seq.max(qp.snd_una);
        }
        self.cc_on_ack(qp_id, &pkt);
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
    }

    /// Traces an ACK or NACK (and its CNP flag) at the sender's NIC port.
    #[cold]
    fn trace_ack(&mut self, pkt: &Packet) {
        use crate::sim::trace::TraceEvent;
        let port = self.nics[self.nic_of[pkt.dst.idx()] as usize].port;
        let ev = if pkt.kind == PacketKind::Nack { TraceEvent::Nack } else { TraceEvent::Ack };
        self.trace_event(ev, port, pkt);
        if pkt.cnp {
            self.trace_event(TraceEvent::Cnp, port, pkt);
        }
    }

    /// Reports every message whose last byte is now acknowledged: a flow's FCT, an
    /// application's send completion, or an attack generator's chunks (returned: (app,
    /// first chunk, how many); a QP's chunks are one slot's, every `qps`-th chunk). The
    /// generator hears of them only once the QP's slot may be released, since the next
    /// chunk of its slot may open a QP in it.
    fn complete_messages(&mut self, qp_id: QpId) -> Option<(AppId, u64, u64)> {
        let mut chunks_done: Option<(AppId, u64, u64)> = None;
        loop {
            let qp = &mut self.qps[qp_id.idx()];
            let Some(m) = qp.messages.front().copied() else { break };
            if m.end > qp.snd_una {
                break;
            }
            qp.messages.pop_front();
            if self.apps.hears_chunks(m.app) {
                match &mut chunks_done {
                    Some((_, _, n)) => *n += 1,
                    None => chunks_done = Some((m.app, m.cookie as u64, 1)),
                }
                continue;
            }
            if !m.app.is_none() {
                let c = SendCompletion { qp: qp_id, cookie: m.cookie, done: SendDone::Acked, time: self.now };
                self.app_send_done(m.app, c);
                continue;
            }
            let flow = &self.flows[m.flow as usize];
            self.records.push(FlowRecord {
                flow: m.flow,
                src: qp.src,
                dst: qp.dst,
                sip: qp.sip,
                dip: qp.dip,
                sport: qp.sport,
                dport: qp.dport,
                size: m.size,
                start: flow.start,
                fct: self.now - m.posted,
                ideal: self.ideal[m.flow as usize],
                tenant: qp.tenant,
            });
            self.flows_done += 1;
            let nic = qp.nic as usize;
            self.nics[nic].cq.push_back(Completion { flow: m.flow, time: self.now });
            self.note_work_done();
        }
        self.close_if_idle(qp_id);
        chunks_done
    }

    /// Retires `qp_id` if it is to close when idle and everything posted is acknowledged.
    pub(in crate::sim) fn close_if_idle(&mut self, qp_id: QpId) {
        let qp = &mut self.qps[qp_id.idx()];
        if !qp.finished && qp.messages.is_empty() && qp.close_when_idle && qp.snd_una >= qp.posted {
            qp.finished = true;
            qp.rto_deadline = Time::MAX;
            self.nics[qp.nic as usize].has_finished = true;
            // The completion queue is drained by applications; flows have none here.
            self.nics[qp.nic as usize].cq.clear();
            self.leave_group(qp_id);
        }
    }

    /// Retransmission timer: go back to the oldest unacknowledged byte.
    pub(in crate::sim) fn on_rto(&mut self, qp_id: QpId, gen: u16) {
        let (Some(rto), qp) = (self.cfg.rto, &mut self.qps[qp_id.idx()]) else {
            return;
        };
        if qp.gen != gen {
            return; // armed by an earlier occupant of this slot
        }
        qp.rto_scheduled = false;
        if qp.finished {
            return;
        }
        if qp.rto_deadline == Time::MAX {
            return;
        }
        if self.now < qp.rto_deadline {
            qp.rto_scheduled = true;
            self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
            return;
        }
        if qp.snd_una < qp.snd_nxt {
            self.counters.timeouts += 1;
            if !self.go_back(qp_id) {
                return; // retry exceeded: the QP is in the error state
            }
            let qp = &mut self.qps[qp_id.idx()];
            qp.snd_nxt = qp.snd_una;
        }
        let qp = &mut self.qps[qp_id.idx()];
        qp.rto_deadline = self.now + rto;
        qp.rto_scheduled = true;
        self.queue.push(qp.rto_deadline, Event::Rto(qp_id, qp.gen));
        let nic = qp.nic;
        self.nic_kick(nic);
    }
}
