//! WRs an application keeps because its QP's send queue was full (`ibv_post_send`'s ENOMEM;
//! `[rnic] max_send_wr`), posted in order as completions free slots. The program's own
//! memory, not the RNIC's: bounded by the WRs the application has to post.

use std::collections::VecDeque;

use super::{Verbs, Wr};
use crate::ids::QpId;

/// One QP's held WRs, oldest first.
#[derive(Clone, Debug, Default)]
pub struct HeldWrs(VecDeque<Wr>);

impl HeldWrs {
    /// Posts `wr` on `qp`, or holds it: behind those already held (they go first), or
    /// because the queue is full.
    pub fn post_or_hold(&mut self, qp: QpId, wr: Wr, v: &mut impl Verbs) {
        if !self.0.is_empty() || v.post(qp, wr).is_err() {
            self.0.push_back(wr);
        }
    }

    /// Posts the held WRs on `qp`, oldest first, while the queue takes them; `posted` is
    /// told of each one posted.
    pub fn post_while_room(&mut self, qp: QpId, v: &mut impl Verbs, mut posted: impl FnMut(&Wr)) {
        while let Some(&wr) = self.0.front() {
            if v.post(qp, wr).is_err() {
                return;
            }
            self.0.pop_front();
            posted(&wr);
        }
    }

    /// Takes every held WR out, oldest first (to be put back behind others).
    pub fn take(&mut self) -> HeldWrs {
        std::mem::take(self)
    }

    /// Puts `later` behind the WRs held now.
    pub fn append(&mut self, mut later: HeldWrs) {
        self.0.append(&mut later.0);
    }
}
