//! UC and UD queue pairs in the loop (`rnic/transport.rs` holds the decisions). Two hooks:
//! the receiver of a UC/UD data packet (`host/rx.rs::receive_data`, one test of the QP's
//! transport) and the sender after a UC/UD packet left (`host/tx.rs::send_data`): with no
//! ACK to wait for, its bytes count as done and the messages it ends complete at once.
//! Both are decisions on the QP; the host's handlers carry them out.

use crate::fabric::Packet;
use crate::ids::AppId;
use crate::rnic::transport::{self, Verdict};
use crate::rnic::Qp;

/// UC/UD's counts (`res.counters`, zero in runs without them).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally {
    /// UC messages lost: a gap in one (a dropped packet) discards the rest of it.
    pub messages_lost: u64,
}

/// What a UC or UD receiver decided for one data packet; `host/rx.rs::receive_unreliable`
/// carries it out (counts, the INT slot, the application's receive completion).
pub(in crate::sim) struct Received {
    /// Placed, a message lost, a message complete.
    pub verdict: Verdict,
    /// A receive completion for application `.0` of `.1` bytes (UD: the datagram; UC: the
    /// message from its first byte), when the packet completed a message it listens to.
    pub deliver: Option<(AppId, u64)>,
}

/// A UC or UD data packet at its receiver's half of the QP: placed or discarded, never
/// answered.
pub(in crate::sim) fn receive(qp: &mut Qp, pkt: &Packet) -> Received {
    // Wrapping: in a parallel run the sender's count lives in its own partition.
    qp.in_flight = qp.in_flight.wrapping_sub(1);
    let start = qp.rx.msg_start;
    let first = transport::starts_message(pkt);
    let verdict = transport::receive(&mut qp.rx, qp.transport, pkt.seq, pkt.payload, first, pkt.last_of_msg);
    let app = qp.rx.app;
    let deliver = (verdict.placed && !pkt.app_hdr.is_none() && !app.is_none()).then(|| {
        let bytes = if first { pkt.payload as u64 } else { pkt.seq + pkt.payload as u64 - start };
        (app, bytes)
    });
    Received { verdict, deliver }
}

/// A UC or UD packet left its sender: nothing will acknowledge it, so its bytes are done
/// (the spec's local send completion); the caller completes the messages it ends.
pub(in crate::sim) fn sent(qp: &mut Qp) {
    qp.snd_una = qp.snd_nxt;
}
