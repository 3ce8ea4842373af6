//! Queue-pair transport services (InfiniBand Architecture Specification vol. 1, §9.7–9.8,
//! the same over RoCEv2): reliable connection (RC), unreliable connection (UC) and
//! unreliable datagram (UD). RC is the engine's default path (ACK, NACK, go-back-N, RTO).
//! This file holds what differs for the other two, as decisions on one QP's state; the
//! simulator's glue is `sim/mech/transport.rs`.
//!
//! - **UC**: no ACK, no retransmission. The sender completes a message once its last packet
//!   has left (the spec's UC send completion is local). The receiver places packets in
//!   order; a gap loses the message it falls in: the rest of that message is discarded
//!   until the first packet of a later message, and the loss is counted.
//! - **UD**: datagrams of at most one MTU (checked at setup), no ACK, no order between
//!   datagrams. One UD QP reaches any destination, so the RNIC holds one context for it:
//!   every UD QP of a NIC shares one entry of the QP-context cache (`cache_key`).

use crate::fabric::Packet;
use crate::ids::{NicId, QpId};
use crate::rnic::qp::RxState;

pub use crate::fabric::transport::Transport;

/// The QP-context cache entry a QP uses: its own, or for UD the NIC's one datagram context
/// (numbered from the top of the id space, where no QP slot reaches).
#[inline]
pub fn cache_key(qp: QpId, transport: Transport, nic: NicId) -> QpId {
    if transport == Transport::Ud {
        QpId(u32::MAX - 1 - nic.0)
    } else {
        qp
    }
}

/// A UC or UD data packet begins a message. The sender marks it in the packet's `cnp` flag,
/// which only ACKs use otherwise (a data packet never carries a CNP), so that the receiver
/// can tell where the next message starts after a loss without a field of its own (the
/// spec's FIRST / ONLY opcodes).
#[inline]
pub fn starts_message(pkt: &Packet) -> bool {
    pkt.cnp
}

/// What a UC or UD receiver does with one data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Place the packet (its bytes are delivered).
    pub accept: bool,
    /// A message was lost (counted once per gap).
    pub lost_message: bool,
    /// The packet completed a message: it is placed whole.
    pub placed: bool,
}

/// The receiver's decision for a packet of `[seq, seq + payload)` that begins a message
/// (`first`) and/or ends one (`last`). UD accepts every datagram; UC accepts in order and
/// discards the rest of a message with a gap. Updates `rx.expected`, `rx.msg_start` (where the
/// message being received began; `expected` once it is complete) and `rx.discarding`.
pub fn receive(rx: &mut RxState, transport: Transport, seq: u64, payload: u32, first: bool, last: bool) -> Verdict {
    let end = seq + payload as u64;
    let (mut accept, mut lost_message) = (true, false);
    if transport == Transport::Ud {
        // Datagrams: each stands alone; a missing one is simply never placed.
        rx.msg_start = seq;
        rx.expected = rx.expected.max(end);
    } else if first {
        // A new message: a gap before it, or the previous message cut short, lost one.
        lost_message = !rx.discarding && (seq > rx.expected || rx.expected > rx.msg_start);
        rx.discarding = false;
        rx.msg_start = seq;
        rx.expected = end;
    } else if rx.discarding {
        accept = false;
    } else if seq == rx.expected {
        rx.expected = end;
    } else {
        // A gap inside a message: it is lost; wait for the next message's first packet.
        rx.discarding = true;
        (accept, lost_message) = (false, true);
    }
    let placed = accept && last;
    if placed {
        rx.msg_start = rx.expected;
    }
    Verdict { accept, lost_message, placed }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three UC messages of three 1000 B packets; `drop` names the packets lost on the way.
    fn uc_run(drop: &[usize]) -> (u32, u32) {
        let mut rx = RxState::default();
        let (mut placed, mut lost) = (0, 0);
        for p in 0..9usize {
            if drop.contains(&p) {
                continue;
            }
            let v = receive(&mut rx, Transport::Uc, p as u64 * 1000, 1000, p % 3 == 0, p % 3 == 2);
            placed += v.placed as u32;
            lost += v.lost_message as u32;
        }
        (placed, lost)
    }

    #[test]
    fn uc_loses_exactly_the_message_with_a_gap() {
        assert_eq!(uc_run(&[]), (3, 0));
        for p in 0..8 {
            assert_eq!(uc_run(&[p]), (2, 1), "packet {p} lost");
        }
        // The stream's very last packet: no later packet reveals the gap, so the message is
        // not placed and not yet counted (a next message's first packet would count it).
        assert_eq!(uc_run(&[8]), (2, 0));
        assert_eq!(uc_run(&[1, 2]), (2, 1), "two packets of one message: one message");
        assert_eq!(uc_run(&[1, 4]), (1, 2));
        assert_eq!(uc_run(&[3, 4, 5]), (2, 1), "a whole message");
    }

    #[test]
    fn ud_takes_every_datagram_and_shares_one_context() {
        let mut rx = RxState::default();
        for &s in &[2000u64, 0, 1000] {
            assert!(receive(&mut rx, Transport::Ud, s, 1000, true, true).placed);
        }
        let (a, b) = (cache_key(QpId(3), Transport::Ud, NicId(0)), cache_key(QpId(9), Transport::Ud, NicId(0)));
        assert_eq!(a, b);
        assert_ne!(a, cache_key(QpId(3), Transport::Ud, NicId(1)));
        assert_eq!(cache_key(QpId(3), Transport::Uc, NicId(0)), QpId(3));
    }
}
