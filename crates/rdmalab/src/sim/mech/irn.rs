//! IRN's loss recovery (`fabric.loss_recovery = "irn"`) at the simulator's hook points;
//! the state and its rules are the RNIC's (`rnic::irn`).
//!
//! Hooks (each reached only when `Simulation::irn` is `Some`; go-back-N runs test it once
//! per packet sent and per ACK):
//! - QP opened (`host/mod.rs::open_qp_in`): [`on_open`], fresh state and BDP-FC's window;
//! - receiver, per data packet (`host/rx.rs::receive_data`): [`receive`] holds an
//!   out-of-order packet, and the NACK carries the triggering sequence ([`sack_field`]);
//!   a held packet that ends a message on a QP an application listens on is remembered
//!   ([`hold_message_end`]) and its receive completion made when the bytes before it
//!   arrive ([`next_held_message`], delivered by `host/completions.rs`);
//! - sender, per data packet sent (`host/tx.rs::send_data`): [`after_send`] moves the
//!   send pointer to the next hole or back to new data;
//! - sender, ACK or NACK (`host/rx.rs::receive_ack`): [`on_ack`];
//! - sender, timeout (`host/mod.rs::on_rto`): [`on_timeout`].
//!
//! A recovery round (a NACK that starts one, or a timeout) counts against
//! `fabric.retry_limit` as a go-back-N round does (`mech::retry`).

use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, QpId};
use crate::rnic::irn::{Arrival, IrnTable};
use crate::rnic::Qp;
use crate::sim::mech::retry;
use crate::units::Time;

/// Hook "QP opened": the slot's IRN state starts fresh, and BDP-FC caps the bytes past the
/// cumulative ACK through the QP's window (the smaller one when `fabric.window` gives one).
pub(in crate::sim) fn on_open(irn: &mut IrnTable, id: QpId, qp: &mut Qp) {
    irn.qp(id.idx()).reset();
    qp.win = if qp.win == 0 { irn.window } else { qp.win.min(irn.window) };
}

/// Hook "receiver, per data packet": what the packet is to receiver slot `rx_id` whose next
/// expected byte is `expected`, and the next expected byte after it (held bytes it joins
/// included).
pub(in crate::sim) fn receive(irn: &mut IrnTable, rx_id: QpId, pkt: &Packet, expected: u64) -> (Arrival, u64) {
    let payload = pkt.payload as u64;
    let (arrival, next) = irn.qp(rx_id.idx()).receive(pkt.seq, pkt.seq + payload, expected);
    match arrival {
        Arrival::OutOfOrder => irn.held_bytes += payload,
        Arrival::InOrder => irn.held_bytes -= next - expected - payload,
        Arrival::Duplicate => {}
    }
    (arrival, next)
}

/// Hook "receiver, out-of-order packet that ends a message" on a QP an application
/// listens on: its completion waits for the bytes before it.
#[inline(never)]
pub(in crate::sim) fn hold_message_end(irn: &mut IrnTable, rx_id: QpId, pkt: &Packet) {
    irn.qp(rx_id.idx()).hold_message_end(pkt.seq + pkt.payload as u64, pkt.app_hdr.0);
}

/// Hook "receiver, held bytes joined": the next message whose last packet was held and is
/// now in order (the receiver expects past its end), as its listening application's header
/// and the message's bytes since the previous one's end; `None` when none is. The host's
/// carry-out (`host/completions.rs`) delivers each, in order, as it would have on its last
/// packet's in-order arrival.
pub(in crate::sim) fn next_held_message(
    irn: &mut IrnTable,
    rx_id: QpId,
    rx: &mut crate::rnic::qp::RxState,
) -> Option<(HeaderSlot, u64)> {
    let (end, hdr) = irn.qp(rx_id.idx()).take_message_end(rx.expected)?;
    let bytes = end - rx.msg_start;
    rx.msg_start = end;
    Some((HeaderSlot(hdr), bytes))
}

/// The NACK's second sequence number: where the packet that triggered it begins, as an
/// offset past the cumulative ACK. It travels in the field that names an application
/// header on data, which an ACK or NACK never uses (`Packet` stays 64 bytes); the offset
/// is below BDP-FC's window plus one packet, far below `u32::MAX` (the window is capped
/// when parsed).
#[inline]
pub(in crate::sim) fn sack_field(seq: u64, expected: u64) -> HeaderSlot {
    HeaderSlot((seq - expected) as u32)
}

/// Hook "sender, per data packet sent": `qp` sent a packet ending at `end`; the byte it
/// sends next.
#[inline]
pub(in crate::sim) fn after_send(irn: &mut IrnTable, id: QpId, qp: &Qp, end: u64) -> u64 {
    irn.after_send(id.idx(), end, qp.snd_una, qp.high_sent)
}

/// Hook "sender, ACK or NACK", after the cumulative ACK moved `qp.snd_una` (`advanced`):
/// a NACK's selective acknowledgement, recovery's start and end, the next byte to send,
/// and the timer re-armed by what is outstanding. False when a new recovery round exceeds
/// `fabric.retry_limit` (the caller fails the QP).
pub(in crate::sim) fn on_ack(
    irn: &mut IrnTable,
    id: QpId,
    qp: &mut Qp,
    ack: &Packet,
    advanced: bool,
    now: Time,
    fabric: &crate::sim::SimConfig,
) -> bool {
    let (mtu, limit) = (fabric.mtu, fabric.retry_limit);
    let cfg = irn.cfg;
    let st = irn.qp(id.idx());
    st.on_cumulative_ack(qp.snd_una);
    let mut within_limit = true;
    if ack.kind == PacketKind::Nack && !ack.app_hdr.is_none() {
        let start = ack.seq + ack.app_hdr.0 as u64;
        let end = packet_end(qp, start, mtu);
        if st.on_sack(start, end, qp.snd_una, qp.high_sent) {
            within_limit = retry::go_back(limit, qp);
        }
    }
    qp.snd_nxt = st.next_to_send(qp.snd_una, qp.high_sent);
    if advanced {
        qp.rto_deadline = match qp.high_sent - qp.snd_una {
            0 => Time::MAX,
            outstanding => now + cfg.rto(outstanding, mtu),
        };
    }
    within_limit
}

/// What a timeout did under IRN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) enum Expired {
    /// Nothing was outstanding.
    Idle,
    /// Everything outstanding and not selectively acknowledged goes again.
    Repair,
    /// The recovery round exceeded `fabric.retry_limit`.
    Failed,
}

/// Hook "sender, timeout": the QP's timer fired at its deadline.
pub(in crate::sim) fn on_timeout(irn: &mut IrnTable, id: QpId, qp: &mut Qp, limit: Option<u32>) -> Expired {
    if qp.high_sent <= qp.snd_una {
        return Expired::Idle;
    }
    if !retry::go_back(limit, qp) {
        return Expired::Failed;
    }
    let st = irn.qp(id.idx());
    st.on_timeout(qp.snd_una, qp.high_sent);
    qp.snd_nxt = st.next_to_send(qp.snd_una, qp.high_sent);
    Expired::Repair
}

/// The timeout for what `qp` has outstanding now (RTO_low or RTO_high).
pub(in crate::sim) fn rto(irn: &IrnTable, qp: &Qp, mtu: u32) -> Time {
    irn.cfg.rto(qp.high_sent.saturating_sub(qp.snd_una), mtu)
}

/// One past the last byte of the packet the sender cut at `start`: an MTU, or less at
/// its message's end (packets never span two messages, `host/tx.rs::send_data`).
fn packet_end(qp: &Qp, start: u64, mtu: u32) -> u64 {
    let msg_end = qp.messages.iter().find(|m| m.end > start).map_or(qp.posted, |m| m.end);
    (start + mtu as u64).min(msg_end)
}
