//! The host's one carry-out of what a mechanism decided: the mechanism's function returns
//! its decision over the QP (`mech::retry::fail`: the WRs to fail and to flush;
//! `mech::transport::receive`: a UC/UD packet's verdict and the receive completion to make;
//! `mech::transport::sent`), and this file counts it and delivers the completions to the
//! applications, so that a mechanism's file never reaches the application table. It also
//! completes the messages an ACK covers (a flow's FCT record, a send completion) and retires
//! a QP once idle.

use crate::app::{SendCompletion, SendDone};
use crate::fabric::packet::NO_INT;
use crate::fabric::Packet;
use crate::ids::{AppId, QpId};
use crate::rnic::Completion;
use crate::sim::mech::{retry, transport};
use crate::sim::{GaveUp, Simulation};
use crate::stats::FlowRecord;
use crate::units::Time;

impl Simulation {
    /// The receiver of slot `rx_id` holds its flow's last byte in order now: the flow's
    /// completion under `SimConfig::fct_at_receiver` (m4's FCT).
    #[cold]
    pub(in crate::sim) fn note_delivered(&mut self, rx_id: QpId) {
        let now = self.now;
        if let Some(c) = self.flow_rx_counts(rx_id) {
            c.delivered = now;
        }
    }

    /// True if `src` has a route to `dst` now (checked when a flow starts).
    pub(in crate::sim) fn reachable(&self, src: crate::ids::NodeId, dst: crate::ids::NodeId) -> bool {
        !self.routes.next_hops(src, dst).is_empty()
    }

    /// Records flow `flow` as unreachable now (`mech::failures`).
    pub(in crate::sim) fn record_unreachable(&mut self, flow: crate::ids::FlowId, why: GaveUp) {
        let f = &self.flows[flow.idx()];
        self.unreachable.push(crate::sim::mech::failures::unreachable_flow(flow, f, self.now, why));
        self.flows_done += 1;
        self.note_work_done();
    }

    /// Gives up the messages of `q` (`mech::failures::abandon`: its destination has no
    /// route) and takes it out of its group.
    pub(in crate::sim) fn abandon_qp(&mut self, q: QpId) {
        let apps = &self.apps;
        let abandoned = crate::sim::mech::failures::abandon(&mut self.qps[q.idx()], |a| apps.learns_of_failures(a));
        let Some(flows) = abandoned else { return };
        for f in flows {
            self.record_unreachable(f, GaveUp::Unreachable);
        }
        let nic = self.qps[q.idx()].nic;
        self.nics[nic.idx()].note_finished();
        self.nic_changed(nic); // its drop must not wait for a later kick
        self.leave_group(q);
        self.log_busy_qp(q, false); // packets of it may still leave in other partitions
    }

    /// IRN: every message whose last packet was held and is now in order completes, in
    /// order (`mech::irn::next_held_message`), told to the listening application when the
    /// packet named a header.
    #[inline(never)]
    pub(in crate::sim) fn complete_held_messages(&mut self, rx_id: QpId) {
        loop {
            let Some(irn) = self.mech.irn.as_deref_mut() else { return };
            let rx = &mut self.qps[rx_id.idx()].rx;
            let app = rx.app;
            let Some((hdr, bytes)) = crate::sim::mech::irn::next_held_message(irn, rx_id, rx) else { return };
            if hdr != crate::ids::HeaderSlot::NONE && !app.is_none() {
                self.app_recv_done(app, rx_id, hdr, bytes);
            }
        }
    }

    /// Carries out a failure `retry::go_back` decided: the failed and flushed WRs complete to
    /// their applications (a plain flow is recorded unreachable), then the QP may close.
    #[cold]
    pub(in crate::sim) fn fail_qp(&mut self, qp_id: QpId, why: GaveUp) {
        let failed = retry::fail(&mut self.qps[qp_id.idx()], &mut self.counters);
        let now = self.now;
        for (i, m) in failed.into_iter().enumerate() {
            // (An attack generator ignores it: its transfer never completes.)
            if m.app.is_none() {
                // A plain flow is given up, with the limit it exhausted.
                self.record_unreachable(m.flow, why);
                continue;
            }
            let done = if i == 0 { SendDone::Failed } else { SendDone::Flushed };
            self.app_send_done(m.app, SendCompletion { qp: qp_id, cookie: m.cookie, done, time: now });
        }
        self.close_if_idle(qp_id);
    }

    /// A UC or UD data packet at its receiver: `mech::transport::receive` decides, this
    /// carries it out.
    pub(super) fn receive_unreliable(&mut self, pkt: Packet, rx_id: QpId) {
        let got = transport::receive(&mut self.qps[rx_id.idx()], &pkt);
        if got.verdict.lost_message {
            self.mech.transport.messages_lost += 1;
        }
        if got.verdict.accept {
            self.counters.payload_bytes_delivered += pkt.payload as u64;
        } else {
            self.counters.payload_bytes_dropped += pkt.payload as u64;
        }
        if pkt.int_slot != NO_INT {
            self.int.release(pkt.int_slot); // no ACK carries it back
        }
        if let Some((app, bytes)) = got.deliver {
            self.app_recv_done(app, rx_id, pkt.app_hdr, bytes);
        }
        self.log_left_network(&pkt);
        self.release_if_quiet(rx_id);
    }

    /// A UC or UD packet left its sender (`mech::transport::sent`): the messages it ends
    /// complete to their application.
    pub(super) fn unreliable_sent(&mut self, qp_id: QpId) {
        transport::sent(&mut self.qps[qp_id.idx()]);
        if let Some((app, first, n)) = self.complete_messages(qp_id) {
            self.app_chunks_done(app, first, n, qp_id);
        }
    }

    /// Reports every message whose last byte is now acknowledged: a flow's FCT, an
    /// application's send completion, or an attack generator's chunks (returned: (app,
    /// first chunk, how many); a QP's chunks are one slot's, every `qps`-th chunk). The
    /// generator hears of them only once the QP's slot may be released, since the next
    /// chunk of its slot may open a QP in it. (A shuffled-overlay member holding flows for
    /// this QP's room hears of a plain flow's completion the same way, as 0 chunks.)
    pub(in crate::sim) fn complete_messages(&mut self, qp_id: QpId) -> Option<(AppId, u64, u64)> {
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
            let flow = &self.flows[m.flow.idx()];
            let owner = flow.app;
            let record = FlowRecord {
                flow: m.flow.0,
                src: qp.src,
                dst: qp.dst,
                sip: qp.sip,
                dip: qp.dip,
                sport: qp.sport,
                dport: qp.dport,
                size: m.size,
                start: flow.start,
                fct: self.now - m.posted,
                ideal: self.ideal[m.flow.idx()],
                tenant: qp.tenant,
                retx_packets: qp.retx_packets,
                nacks: qp.nacks,
                timeouts: self.flow_timeouts.get(m.flow.idx()).copied().unwrap_or(0),
                rx: Default::default(), // the receiver's, joined in `results`
            };
            let nic = qp.nic.idx();
            self.push_record(record);
            self.flows_done += 1;
            self.nics[nic].cq.push_back(Completion { flow: m.flow, time: self.now });
            self.note_work_done();
            if self.apps.overlay_held > 0 && chunks_done.is_none() && self.is_overlay_member(owner) {
                // The flow's member may hold others for this room: told as no chunks.
                chunks_done = Some((owner, 0, 0));
            }
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
            let nic = qp.nic;
            self.nics[nic.idx()].note_finished();
            // The completion queue is drained by applications; flows have none here.
            self.nics[nic.idx()].cq.clear();
            self.nic_changed(nic); // its drop must not wait for a later kick
            self.leave_group(qp_id);
            self.log_busy_qp(qp_id, false); // packets of it may still leave in other partitions
        }
    }
}
