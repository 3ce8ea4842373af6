//! Virtuoso's receiver half, on the destination host: places WRITE sub-flows without
//! telling software (a WRITE leaves the receiver passive), takes the one receive
//! completion of a SEND (the whole small SEND, or the notice after a large SEND's WRITEs),
//! and answers READ requests on the reverse QP of the path they came on, as the
//! responder's RNIC does.

use std::collections::BTreeMap;

use super::sender::op;
use crate::app::held::HeldWrs;
use crate::app::{AppHeader, RecvCompletion, SendCompletion, SendDone, Verbs, Wr};
use crate::ids::QpId;
use crate::units::Time;

/// A message as the receiver sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VRecv {
    /// Size from the headers.
    pub total: u64,
    /// Data bytes placed so far.
    pub placed: u64,
    /// When the last byte was placed.
    pub done: Option<Time>,
    /// The receiver's completion (SEND only): the RECV it consumed.
    pub cqe: Option<Time>,
}

/// The receiving (and READ-responding) half of a Virtuoso connection.
#[derive(Clone, Debug, Default)]
pub struct VirtuosoReceiver {
    /// QPs arriving here, by path.
    forward: Vec<QpId>,
    /// QPs from here back to the source, by path (READ data).
    reverse: Vec<QpId>,
    /// Messages by data id.
    pub messages: BTreeMap<u64, VRecv>,
    /// Receive completions that came before all of their message's bytes, or headers that
    /// contradict earlier ones (a bug if ever non-zero).
    pub anomalies: u64,
    /// Per path: READ answers that found the reverse QP's send queue full, posted as
    /// acknowledgements free slots (at most one per READ request received).
    held: Vec<HeldWrs>,
}

impl VirtuosoReceiver {
    /// A receiver of `forward`'s paths, answering READs on `reverse` (same order).
    pub fn new(forward: Vec<QpId>, reverse: Vec<QpId>) -> VirtuosoReceiver {
        let held = vec![HeldWrs::default(); reverse.len()];
        VirtuosoReceiver { forward, reverse, held, ..Default::default() }
    }

    /// A READ answer on the reverse QP of path `c.cookie` completed: if acknowledged, its
    /// slot takes the answers waiting for one.
    pub fn on_send_done(&mut self, c: SendCompletion, v: &mut impl Verbs) {
        if c.done != SendDone::Acked {
            return;
        }
        let path = c.cookie as usize;
        self.held[path].post_while_room(self.reverse[path], v, |_| {});
    }

    /// A WR with a Virtuoso header was placed in order on this host.
    pub fn on_receive(&mut self, c: RecvCompletion, v: &mut impl Verbs) {
        let h = c.header;
        if h.op == op::READ_REQ {
            self.answer_read(c.qp, h, v);
            return;
        }
        let m = self.messages.entry(h.data_id).or_insert(VRecv { total: h.total, ..Default::default() });
        if m.total != h.total {
            self.anomalies += 1;
        }
        if h.op == op::WRITE || h.op == op::SEND {
            if h.offset + c.bytes > h.total || m.placed + c.bytes > m.total {
                self.anomalies += 1;
            }
            m.placed += c.bytes;
            if m.placed == m.total {
                m.done = Some(c.time);
            }
        }
        if h.op == op::SEND || h.op == op::NOTICE {
            // The one completion the receiver's software sees: never before the last byte.
            if m.placed != m.total || m.cqe.is_some() {
                self.anomalies += 1;
            }
            m.cqe = Some(c.time);
        }
    }

    /// Sends the requested bytes back on the reverse QP of the request's path.
    fn answer_read(&mut self, qp: QpId, h: AppHeader, v: &mut impl Verbs) {
        let Some(path) = self.forward.iter().position(|&q| q == qp) else {
            self.anomalies += 1;
            return;
        };
        let header = AppHeader { op: op::READ_DATA, ..h };
        let wr = Wr { bytes: h.length, cookie: path as u32, header: Some(header), notify_sent: false };
        self.held[path].post_or_hold(self.reverse[path], wr, v);
    }
}
