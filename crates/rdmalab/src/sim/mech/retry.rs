//! The retry limit of RC transport (`fabric.retry_limit`, verbs' `retry_cnt`): a QP may go
//! back N times (a NACK or a timeout that rewinds its sender) without acknowledged
//! progress; the next go-back fails the WR at the head of the QP with an error status,
//! flushes the WRs behind it and puts the QP in the error state. An application may then
//! reconnect the QP (`Verbs::reconnect`).
//!
//! Hooks: [`go_back`] is called where the sender rewinds (NACK, timeout), never per packet,
//! and is handed only the QP; progress resets the count in `receive_ack`. Without a limit
//! nothing here fails. When it does, [`fail`] puts the QP in the error state and hands back
//! its WRs; the host then delivers their completions (`sim/host/completions.rs::fail_qp`).

use crate::rnic::{Message, Qp};
use crate::stats::Counters;
use crate::units::Time;

/// Hook "sender, NACK or timeout rewinds": the sender of `qp` is about to go back. Counts
/// the round; returns false when `limit` is exceeded (the caller then fails the QP with
/// `fail_qp`, `sim/host/completions.rs`, instead of rewinding).
#[inline]
pub(in crate::sim) fn go_back(limit: Option<u32>, qp: &mut Qp) -> bool {
    qp.rewinds = qp.rewinds.wrapping_add(1);
    match limit {
        Some(limit) if qp.retries >= limit => false,
        _ => {
            qp.retries += 1;
            true
        }
    }
}

/// Retry exceeded: the QP stops sending and forgets what was in flight (late ACKs and NACKs
/// are ignored while in error). Returns its WRs, head first: the head fails, the rest are
/// flushed.
pub(in crate::sim) fn fail(qp: &mut Qp, counters: &mut Counters) -> Vec<Message> {
    counters.wr_failures += 1;
    qp.error = true;
    qp.snd_una = qp.posted;
    qp.snd_nxt = qp.posted;
    qp.rto_deadline = Time::MAX;
    qp.messages.drain_all().collect()
}

/// Brings a QP in the error state back to ready to send: both ends agree that the stream
/// goes on after everything the failed WRs used (so none of their packets can be taken for
/// new data); WRs posted meanwhile are sent then. The caller models the handshake's time
/// (`Verbs::reconnect`).
pub(in crate::sim) fn reconnect(qp: &mut Qp) {
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
