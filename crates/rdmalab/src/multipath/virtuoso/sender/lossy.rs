//! The sender's lossy-mode parts: the WR size search of §3.5 (all paths in lockstep) and
//! the repost of WRs that completed with an error (`fabric.retry_limit`).

use super::{
    op, Search, VOutcome, VirtuosoSender, WrKind, WrLog, NO_MESSAGE, READ_REQUEST_BYTES, RECONNECT, SEARCH_ROUND,
};
use crate::app::{AppHeader, SendCompletion, SendDone, Verbs};
use crate::multipath::virtuoso::chunk::ChunkSearch;
use crate::multipath::virtuoso::MpVerb;

impl VirtuosoSender {
    /// §3.5 lossy mode: the size search, all paths in lockstep (one size for all: a
    /// round posts it on every path at once and succeeds only if every path's WR did).
    pub(super) fn start_search(&mut self, v: &mut impl Verbs) {
        let c = self.cfg.chunk_probe.unwrap_or_default();
        self.search = Search::Running;
        self.sizer = ChunkSearch::new(c.start, c.step);
        self.post_round(v);
    }

    pub(super) fn post_round(&mut self, v: &mut impl Verbs) {
        self.round_open = self.qps.len() as u32;
        self.round_ok = true;
        self.round_start = v.now();
        for path in 0..self.qps.len() {
            self.post(NO_MESSAGE, path, WrKind::ChunkProbe, self.sizer.size, None, v);
        }
    }

    /// A size search WR succeeded (`ok`) or not; `errored`: it failed and left its QP in
    /// the error state, which is reconnected before the round counts as over.
    pub(super) fn on_search_wr(&mut self, w: WrLog, ok: bool, errored: bool, v: &mut impl Verbs) {
        self.round_ok &= ok;
        if errored {
            v.reconnect(self.qps[w.path as usize]);
            v.wake(v.now() + self.rtt, RECONNECT | w.path);
            return; // the round goes on in `on_reconnected`
        }
        self.round_part_done(v);
    }

    /// One path's part of the search round is over; the last one decides the next size.
    fn round_part_done(&mut self, v: &mut impl Verbs) {
        self.round_open -= 1;
        if self.round_open > 0 {
            return;
        }
        if self.sizer.on_result(self.round_ok).is_some() {
            if self.round_ok {
                return self.post_round(v);
            }
            // A failed round leaves its go-back-N copies queued on its paths (a timeout or
            // NACK resends what still waits in the queue), up to a whole buffer, after its
            // last byte was acknowledged. The next size must meet empty paths, or it fails
            // on the old backlog instead of its own. A path's queue holds at most what its
            // buffer takes, less than the failed WR put through that path (a WR fails only
            // by overflowing it), so waiting as long as the failed round took drains it.
            // The sender knows that time from its own completions: no fabric state read.
            let quiet = v.now() - self.round_start;
            return v.wake(v.now() + quiet, SEARCH_ROUND);
        }
        let limit = self.sizer.result();
        self.limits.iter_mut().for_each(|l| *l = limit);
        self.path_max_wr.iter_mut().for_each(|l| *l = limit);
        self.search = Search::Off;
        self.set_up(v);
    }

    /// Path `path`'s QP is ready again after a failed WR: what failed is posted again.
    pub(super) fn on_reconnected(&mut self, path: usize, v: &mut impl Verbs) {
        if self.search == Search::Running {
            return self.round_part_done(v);
        }
        // What failed was posted before what waits for room: it goes first.
        let waiting = self.held[path].take();
        for w in std::mem::take(&mut self.redo[path]) {
            self.repost(w, v);
        }
        self.held[path].append(waiting);
        self.post_held(path, v);
    }

    /// A WR failed (retry exceeded) or was flushed behind one. A size search WR is a
    /// finding. Anything else is posted again once its QP is reconnected (the middleware
    /// retries; the WRs flushed behind it go again in their order).
    pub(super) fn on_failure(&mut self, c: SendCompletion, v: &mut impl Verbs) -> VOutcome {
        let w = &mut self.wrs[c.cookie as usize];
        w.failed = true;
        w.done = Some(c.time);
        let w = *w;
        if w.kind == WrKind::ChunkProbe {
            self.on_search_wr(w, false, c.done == SendDone::Failed, v);
            return VOutcome::default();
        }
        self.redo[w.path as usize].push(w);
        if c.done == SendDone::Failed {
            v.reconnect(self.qps[w.path as usize]);
            v.wake(v.now() + self.rtt, RECONNECT | w.path);
        }
        VOutcome::default()
    }

    /// Posts failed WR `w` again, as a new WR with the same content.
    fn repost(&mut self, w: WrLog, v: &mut impl Verbs) {
        let path = w.path as usize;
        let Some(m) = self.messages.get(w.msg as usize) else {
            // A capacity probe: measured again from the original start (the failure counts).
            return self.post(NO_MESSAGE, path, w.kind, w.size, None, v);
        };
        let (id, total, verb) = (m.id as u64, m.size, m.verb);
        let header = match w.kind {
            WrKind::Notice => AppHeader { data_id: id, total, offset: 0, length: 0, op: op::NOTICE },
            WrKind::ReadRequest => {
                self.open_reads.insert((id, w.offset), self.wrs.len() as u32);
                AppHeader { data_id: id, total, offset: w.offset, length: w.size, op: op::READ_REQ }
            }
            _ if verb == MpVerb::Send && total < self.cfg.small_message => {
                AppHeader { data_id: id, total, offset: 0, length: w.size, op: op::SEND }
            }
            _ => AppHeader { data_id: id, total, offset: w.offset, length: w.size, op: op::WRITE },
        };
        let wire = if w.kind == WrKind::ReadRequest { READ_REQUEST_BYTES } else { w.size };
        self.post_wr(w.msg, path, w.kind, w.size, wire, Some(header), v);
    }
}
