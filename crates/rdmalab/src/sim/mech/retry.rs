//! The retry limit of RC transport (`fabric.retry_limit`, verbs' `retry_cnt`): a QP may go
//! back N times (a NACK or a timeout that rewinds its sender) without acknowledged
//! progress; the next go-back fails the WR at the head of the QP with an error status,
//! flushes the WRs behind it and puts the QP in the error state. An application may then
//! reconnect the QP (`Verbs::reconnect`).
//!
//! Hooks: `go_back` is called where the sender rewinds (NACK, timeout), never per packet;
//! progress resets the count in `receive_ack`. Without a limit nothing here fails.

use crate::app::{SendCompletion, SendDone};
use crate::ids::QpId;
use crate::sim::Simulation;
use crate::units::Time;

impl Simulation {
    /// The sender of `qp_id` is about to go back to `to` (NACK or timeout). Counts the
    /// round; returns false, having failed the QP, when the limit is exceeded.
    pub(in crate::sim) fn go_back(&mut self, qp_id: QpId) -> bool {
        let qp = &mut self.qps[qp_id.idx()];
        qp.rewinds = qp.rewinds.wrapping_add(1);
        match self.cfg.retry_limit {
            Some(limit) if qp.retries >= limit => {
                self.fail_qp(qp_id);
                false
            }
            _ => {
                qp.retries += 1;
                true
            }
        }
    }

    /// Retry exceeded: the head WR fails, the rest are flushed, the QP stops sending and
    /// forgets what was in flight (late ACKs and NACKs are ignored while in error).
    fn fail_qp(&mut self, qp_id: QpId) {
        self.counters.wr_failures += 1;
        let now = self.now;
        let qp = &mut self.qps[qp_id.idx()];
        qp.error = true;
        qp.snd_una = qp.posted;
        qp.snd_nxt = qp.posted;
        qp.rto_deadline = Time::MAX;
        let failed: Vec<_> = qp.messages.drain(..).collect();
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

    /// Brings a QP in the error state back to ready to send: both ends agree that the
    /// stream goes on after everything the failed WRs used (so none of their packets can be
    /// taken for new data); WRs posted meanwhile are sent then. The caller models the handshake's time (`Verbs::reconnect`).
    pub(in crate::sim) fn reconnect_qp(&mut self, qp_id: QpId) {
        let qp = &mut self.qps[qp_id.idx()];
        if !qp.error {
            return;
        }
        qp.error = false;
        qp.retries = 0;
        // WRs posted while in error wait at the end of the stream: resume at the first.
        let start = qp.messages.front().map_or(qp.posted, |m| m.end - m.size);
        qp.snd_una = start;
        qp.snd_nxt = start;
        qp.rx.expected = start;
        qp.rx.msg_start = start;
        qp.rx.unacked_packets = 0;
    }
}
