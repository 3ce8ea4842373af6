//! The host's one carry-out of what a mechanism decided: the mechanism's function returns
//! its decision over the QP (`mech::retry::fail`: the WRs to fail and to flush;
//! `mech::transport::receive`: a UC/UD packet's verdict and the receive completion to make;
//! `mech::transport::sent`), and this file counts it and delivers the completions to the
//! applications, so that a mechanism's file never reaches the application table.

use crate::app::{SendCompletion, SendDone};
use crate::fabric::packet::NO_INT;
use crate::fabric::Packet;
use crate::ids::QpId;
use crate::sim::mech::{retry, transport};
use crate::sim::Simulation;

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
    pub(in crate::sim) fn record_unreachable(&mut self, flow: crate::ids::FlowId) {
        let f = &self.flows[flow.idx()];
        self.unreachable.push(crate::sim::mech::failures::unreachable_flow(flow, f, self.now));
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
            self.record_unreachable(f);
        }
        let nic = self.qps[q.idx()].nic;
        self.nics[nic.idx()].note_finished();
        self.nic_changed(nic); // its drop must not wait for a later kick
        self.leave_group(q);
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
    pub(in crate::sim) fn fail_qp(&mut self, qp_id: QpId) {
        let failed = retry::fail(&mut self.qps[qp_id.idx()], &mut self.counters);
        let now = self.now;
        for (i, m) in failed.into_iter().enumerate() {
            // (An attack generator ignores it: its transfer never completes.)
            if m.app.is_none() {
                // A plain flow is abandoned, as one whose destination became unreachable.
                self.record_unreachable(m.flow);
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
}
