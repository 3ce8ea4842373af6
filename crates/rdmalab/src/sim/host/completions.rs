//! The host's carry-out of what a mechanism decided that completes WRs: the mechanism's
//! function returns the decision over the QP (`mech::retry::fail`: the WRs to fail and to
//! flush), and this file delivers the completions to the applications, so that a
//! mechanism's file never reaches the application table.

use crate::app::{SendCompletion, SendDone};
use crate::ids::QpId;
use crate::sim::mech::retry;
use crate::sim::Simulation;

impl Simulation {
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
}
