//! UC and UD queue pairs in the loop (`rnic/transport.rs` holds the decisions). Two hooks:
//! the receiver of a UC/UD data packet (`host/rx.rs::receive_data`, one test of the QP's
//! transport) and the sender after a UC/UD packet left (`host/tx.rs::send_data`): with no
//! ACK to wait for, its bytes count as done and the messages it ends complete at once.

use crate::fabric::packet::NO_INT;
use crate::fabric::Packet;
use crate::ids::QpId;
use crate::rnic::transport;
use crate::sim::Simulation;

impl Simulation {
    /// A UC or UD data packet at its receiver: placed or discarded, never answered.
    pub(in crate::sim) fn receive_unreliable(&mut self, pkt: Packet, rx_id: QpId) {
        let qp = &mut self.qps[rx_id.idx()];
        // Wrapping: in a parallel run the sender's count lives in its own partition.
        qp.in_flight = qp.in_flight.wrapping_sub(1);
        let start = qp.rx.msg_start;
        let first = transport::starts_message(&pkt);
        let v = transport::receive(&mut qp.rx, qp.transport, pkt.seq, pkt.payload, first, pkt.last_of_msg);
        let app = qp.rx.app;
        if v.lost_message {
            self.counters.messages_lost += 1;
        }
        if v.accept {
            self.counters.payload_bytes_delivered += pkt.payload as u64;
        } else {
            self.counters.payload_bytes_dropped += pkt.payload as u64;
        }
        if pkt.int_slot != NO_INT {
            self.int.release(pkt.int_slot); // no ACK carries it back
        }
        if v.placed && !pkt.app_hdr.is_none() && !app.is_none() {
            // UD: the datagram alone; UC: the message from its first byte.
            let bytes = if first { pkt.payload as u64 } else { pkt.seq + pkt.payload as u64 - start };
            self.app_recv_done(app, rx_id, pkt.app_hdr, bytes);
        }
        self.release_if_quiet(rx_id);
    }

    /// A UC or UD packet left its sender: nothing will acknowledge it, so its bytes are done
    /// and the messages it ends complete (the spec's local send completion).
    pub(in crate::sim) fn unreliable_sent(&mut self, qp_id: QpId) {
        let qp = &mut self.qps[qp_id.idx()];
        qp.snd_una = qp.snd_nxt;
        if let Some((app, first, n)) = self.complete_messages(qp_id) {
            self.app_chunks_done(app, first, n, qp_id);
        }
    }
}
