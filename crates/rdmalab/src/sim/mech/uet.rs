//! The Ultra Ethernet transport (`transport = "uet"`) at the simulator's hook points; the
//! state and its rules are the RNIC's (`rnic::uet`). Every hook is reached only from a UET
//! QP's packets: one test of the QP's transport (or of its receiver's copy, `RxState::uet`).
//!
//! - QP opened (`host/mod.rs::open_qp_in`): [`on_open`], fresh state, the window capped at
//!   the tracked PSNs;
//! - a message posted (`sim/apps/send_queue.rs`, `sim/apps/attacks.rs`): [`align_post`]
//!   starts it on a packet boundary;
//! - receiver, per data packet (`host/rx.rs::receive_data` → `host/uet_rx.rs::receive_uet`):
//!   [`receive`], [`sack`] for the ACK, [`nack_offset`] for a trimmed header,
//!   [`next_message`] for the receive completions;
//! - sender, per data packet sent (`host/tx.rs::send_data`): [`after_send`] picks what goes
//!   next (a packet to resend, else new data);
//! - sender, ACK or NACK (`host/rx.rs::receive_ack` → `host/uet_rx.rs::uet_on_ack`): [`on_ack`];
//!   a NACK (a trimmed packet) goes to [`retransmit_lost`];
//! - sender, timeout (`host/mod.rs::on_rto`): [`on_timeout`], which goes to
//!   [`retransmit_lost`] too.
//!
//! ACK fields: the cumulative point travels in `seq` (bytes, a multiple of the MTU); the
//! 64-bit SACK bitmap in `app_hdr` (low half) and `payload` (high half), which an ACK uses
//! for an IRN NACK's offset and Blitz's share only (neither runs with UET); the SACK base's
//! offset past the cumulative PSN in `int_hops`, which switches stamp on data only; the
//! acknowledged packet's CE mark in `last_of_msg` (REPS reads it; the CNP flag follows the
//! CC's own rules) and its entropy in `dport`, as every reply echoes the ports. A NACK
//! names the trimmed packet's PSN as an offset past the cumulative one, in `app_hdr`. On a
//! UET data packet, the `cnp` flag (which only UC/UD data use otherwise) says a switch
//! trimmed it to its header.

use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, QpId};
use crate::rnic::qp::RxState;
use crate::rnic::transport::Transport;
use crate::rnic::uet::{align, Arrival, Spray, UetQp, UetTable};
use crate::rnic::uet_ev::{Conn, Feedback};
use crate::rnic::Qp;
use crate::sim::mech::retry;
use crate::units::Time;

/// Hook "QP opened": the slot's UET state starts fresh, and the window never lets a PSN go
/// out past the receiver's tracked window (the smaller one when a window is set).
pub(in crate::sim) fn on_open(uet: &mut UetTable, id: QpId, qp: &mut Qp, mtu: u32) {
    let w = uet.cfg.window_packets;
    let st = uet.qp(id.idx());
    st.reset(w);
    let cap = w as u64 * mtu as u64;
    qp.win = if qp.win == 0 { cap } else { qp.win.min(cap) };
    st.cc_win = qp.win;
}

/// Hook "window changed" (`host/cc.rs::set_member_rates`): a window congestion control set
/// QP `id`'s window to `w` (bytes in flight at which it stops, as the NIC tests it).
pub(in crate::sim) fn set_window(uet: &mut UetTable, id: QpId, qp: &mut Qp, w: u64, mtu: u32) {
    let windowed = uet.windowed;
    let st = uet.qp(id.idx());
    st.cc_win = w;
    gate(st, qp, mtu, windowed);
}

/// Points the sender at what it sends next and opens or closes its window for it. Without a
/// window congestion control: the lowest PSN marked lost, else new data, the QP's window
/// (the tracked PSNs') bounding the span from the cumulative ACK, as before. Under one
/// (NSCC, Swift), as htsim's UEC sender does (`can_send_NSCC`: a packet, first or resent,
/// goes when the bytes in flight leave room for it): the window bounds the packets in flight
/// (sent, not acknowledged, not marked lost), so that a resend waits for room as new data
/// does; resends go first, new data also within the tracked span. The NIC tests
/// `snd_nxt - snd_una >= win` (`Qp::window_bound`), so `win` carries the room left past
/// `snd_nxt` when open, and 1 (with `snd_nxt` at `high_sent`, past the cumulative ACK)
/// when shut.
fn gate(st: &mut UetQp, qp: &mut Qp, mtu: u32, windowed: bool) {
    let m = mtu as u64;
    let (una, high) = (qp.snd_una / m, qp.high_sent / m);
    let resend = st.next_resend(una, high);
    if !windowed {
        qp.snd_nxt = resend.map_or(qp.high_sent, |p| p * m);
        return;
    }
    let flight = st.in_flight(una, high) * m;
    let room = st.cc_win.saturating_sub(flight);
    let span = qp.high_sent - qp.snd_una < st.span() * m;
    match resend {
        Some(p) if room > 0 => qp.snd_nxt = p * m,
        None if room > 0 && span => qp.snd_nxt = qp.high_sent,
        _ => {
            qp.snd_nxt = qp.high_sent;
            qp.win = 1;
            return;
        }
    }
    qp.win = qp.snd_nxt - qp.snd_una + room;
}

/// Hook "message posted": a UET QP's message starts at a multiple of the MTU, so that PSNs
/// count packets (`rnic::uet::align`). Nothing for other transports.
#[inline]
pub(in crate::sim) fn align_post(qp: &mut Qp, mtu: u32) {
    if qp.transport == Transport::Uet {
        qp.posted = align(qp.posted, mtu);
    }
}

/// True for a UET data packet a switch trimmed to its header.
#[inline]
pub(in crate::sim) fn trimmed(pkt: &Packet) -> bool {
    pkt.cnp
}

/// Hook "receiver, per data packet" (not trimmed): what it is to receiver slot `rx_id`;
/// `rx.expected` moves past every packet now received in order.
pub(in crate::sim) fn receive(uet: &mut UetTable, rx_id: QpId, rx: &mut RxState, pkt: &Packet, mtu: u32) -> Arrival {
    let m = mtu as u64;
    let arrival = uet.qp(rx_id.idx()).receive(pkt.seq / m, rx.expected / m);
    if let Arrival::New(cum) = arrival {
        rx.expected = cum * m;
        if pkt.last_of_msg && !pkt.app_hdr.is_none() && !rx.app.is_none() {
            hold_message_end(uet, rx_id, pkt);
        }
    }
    arrival
}

/// A message's last packet arrived on a QP an application listens on: its completion waits
/// until every byte before its end has arrived. Kept in order of end.
fn hold_message_end(uet: &mut UetTable, rx_id: QpId, pkt: &Packet) {
    let ends = &mut uet.qp(rx_id.idx()).ends;
    let end = pkt.seq + pkt.payload as u64;
    let at = ends.iter().rposition(|e| e.0 < end).map_or(0, |i| i + 1);
    ends.insert(at, (end, pkt.app_hdr.0));
}

/// The next message now wholly received (the receiver expects past its end), as its
/// header and its bytes; `None` when none is. The host delivers each in turn.
pub(in crate::sim) fn next_message(
    uet: &mut UetTable,
    rx_id: QpId,
    rx: &mut RxState,
    mtu: u32,
) -> Option<(HeaderSlot, u64)> {
    let ends = &mut uet.qp(rx_id.idx()).ends;
    let &(end, hdr) = ends.front()?;
    if end > rx.expected {
        return None;
    }
    ends.pop_front();
    let bytes = end - rx.msg_start;
    rx.msg_start = align(end, mtu);
    Some((HeaderSlot(hdr), bytes))
}

/// Whether new data packet `pkt` at receiver slot `rx_id` is acknowledged at once, beyond
/// the coalescing count (`rnic::uet::UetQp::ack_at_once`, htsim's sink's rule); the
/// cumulative point was `before` bytes and is now `after`.
pub(in crate::sim) fn ack_at_once(
    uet: &mut UetTable,
    rx_id: QpId,
    pkt: &Packet,
    before: u64,
    after: u64,
    mtu: u32,
) -> bool {
    let m = mtu as u64;
    let asked = pkt.deflections & crate::fabric::transport::UET_ACK_REQUEST != 0;
    uet.qp(rx_id.idx()).ack_at_once(pkt.seq / m, before / m, after / m, asked)
}

/// The SACK an ACK carries after `pkt` arrived at receiver slot `rx_id`: (its low half,
/// its high half, the base's offset past the cumulative PSN).
pub(in crate::sim) fn sack(uet: &mut UetTable, rx_id: QpId, rx: &RxState, pkt: &Packet, mtu: u32) -> (u32, u32, u16) {
    let m = mtu as u64;
    let (off, bits) = uet.qp(rx_id.idx()).sack(pkt.seq / m, rx.expected / m);
    (bits as u32, (bits >> 32) as u32, off)
}

/// A NACK's name for the trimmed packet `pkt`: its PSN's offset past the receiver's
/// cumulative PSN (a trimmed packet already received names offset 0, which the sender
/// finds acknowledged).
pub(in crate::sim) fn nack_offset(pkt: &Packet, rx: &RxState, mtu: u32) -> HeaderSlot {
    HeaderSlot((pkt.seq.saturating_sub(rx.expected) / mtu as u64) as u32)
}

/// Hook "sender, per data packet sent": `pkt` left at `now` (the caller moved `snd_nxt` and
/// `high_sent` to its end). A resent PSN is taken off the list and its send time noted (the
/// retransmission timer reads it); `high_sent` moves to the next packet boundary; `snd_nxt`
/// to the next PSN to resend, else to new data ([`gate`]).
#[inline]
pub(in crate::sim) fn after_send(uet: &mut UetTable, id: QpId, qp: &mut Qp, pkt: &Packet, now: Time, mtu: u32) {
    let m = mtu as u64;
    let windowed = uet.windowed;
    let st = uet.qp(id.idx());
    st.resent(pkt.seq / m);
    st.note_sent(pkt.seq / m, now);
    qp.high_sent = align(qp.high_sent, mtu);
    gate(st, qp, mtu, windowed);
}

/// Hook "sender, ACK or NACK", after the cumulative ACK moved `qp.snd_una` from `old_una`:
/// the SACK's PSNs are not resent; a NACK's trimmed packet is
/// ([`retransmit_lost`]). The timer stays where it is while anything is outstanding: it
/// times each packet from its own send time ([`on_timeout`]), so the deadline set for the
/// oldest is never late.
pub(in crate::sim) fn on_ack(
    uet: &mut UetTable,
    id: QpId,
    qp: &mut Qp,
    ack: &Packet,
    old_una: u64,
    now: Time,
    mtu: u32,
) {
    let m = mtu as u64;
    path_feedback(uet, id, qp.sport, ack, now);
    let windowed = uet.windowed;
    let st = uet.qp(id.idx());
    let (una, high, base) = (qp.snd_una / m, qp.high_sent / m, ack.seq / m);
    if qp.snd_una > old_una {
        st.advance(old_una / m, una);
        if qp.high_sent <= qp.snd_una {
            qp.rto_deadline = Time::MAX;
        }
    }
    if ack.kind == PacketKind::Nack {
        retransmit_lost(uet, id, qp, Loss::Trimmed(base + ack.app_hdr.0 as u64), mtu);
    } else {
        let bits = ack.app_hdr.0 as u64 | (ack.payload as u64) << 32;
        st.on_sack(base + ack.int_hops as u64, bits, una, high);
        gate(st, qp, mtu, windowed);
    }
}

/// Hook "sender, per data packet sent": the entropy value (EV) the packet carries in its
/// source port, which the switches' ECMP hash reads: the connection's own port without
/// spraying; else as `fabric.path_selection` picks (`rnic::uet_ev`: a random EV per packet,
/// each EV once per round, the round passing over penalised EVs, or REPS's recycled EVs).
#[inline]
pub(in crate::sim) fn entropy(uet: &mut UetTable, id: QpId, qp: &Qp) -> u16 {
    let cfg = uet.cfg.ev();
    if cfg.spray == Spray::Off {
        return qp.sport;
    }
    uet.qp(id.idx()).ev.next(&cfg, Conn { sip: qp.sip, dip: qp.dip, sport: qp.sport })
}

/// What an ACK or a NACK says of its packet's EV (the ACK echoes it in its destination port,
/// the packet's CE mark in `last_of_msg`); REPS reuses the EV of an unmarked ACK, and a
/// timeout may freeze it; the bitmap penalises a marked or trimmed EV (`rnic::uet_ev`).
fn path_feedback(uet: &mut UetTable, id: QpId, sport: u16, ack: &Packet, now: Time) {
    if !matches!(uet.cfg.spray, Spray::Reps | Spray::Bitmap) {
        return;
    }
    let what = match ack.kind {
        PacketKind::Nack => Feedback::Trimmed,
        PacketKind::Ack if ack.last_of_msg => Feedback::Marked,
        PacketKind::Ack => Feedback::Good,
        _ => return,
    };
    let cfg = uet.cfg.ev();
    uet.qp(id.idx()).ev.feedback(&cfg, sport, ack.dport, what, now);
}

/// What a UET sender learnt it lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) enum Loss {
    /// A NACK named this PSN: a switch trimmed the packet to its header.
    Trimmed(u64),
    /// The retransmission timer fired at `.0`: every PSN in flight sent `rto` or longer
    /// before.
    Timeout(Time),
}

/// The sender's reaction to a loss, NACK or timeout: the PSNs lost are marked to resend
/// (never one a SACK reported, never one already marked), and the send pointer goes to the
/// lowest of them when the window has room ([`gate`]). Returns how many it marked; after a
/// timeout, the timer's next deadline is the oldest PSN still in flight's. A congestion control's trim or loss signal
/// belongs beside the call of this function (`host/uet_rx.rs::uet_on_ack` for a NACK,
/// `host/mod.rs::on_rto` for a timeout).
pub(in crate::sim) fn retransmit_lost(uet: &mut UetTable, id: QpId, qp: &mut Qp, loss: Loss, mtu: u32) -> u32 {
    let m = mtu as u64;
    let (windowed, rto) = (uet.windowed, uet.cfg.rto);
    let st = uet.qp(id.idx());
    let (una, high) = (qp.snd_una / m, qp.high_sent / m);
    let marked = match loss {
        Loss::Trimmed(psn) => st.mark_lost(psn, una, high) as u32,
        Loss::Timeout(now) => {
            let (marked, next) = st.expire(una, high, now, rto);
            qp.rto_deadline = next;
            marked
        }
    };
    gate(st, qp, mtu, windowed);
    marked
}

/// The timer's deadline after a timeout of `qp`: the oldest packet in flight's, as
/// [`on_timeout`] left it, or none when nothing is outstanding.
pub(in crate::sim) fn next_deadline(qp: &Qp) -> Time {
    if qp.high_sent <= qp.snd_una {
        Time::MAX
    } else {
        qp.rto_deadline
    }
}

/// True when UET QP `id` has nothing in flight (every PSN past the cumulative ACK reported
/// by a SACK or marked to resend, or none sent) and work left: new data, or packets marked to
/// resend. Under RCCC such a QP waits for credit only: its timer's expiry is what asks again.
pub(in crate::sim) fn idle_with_work(uet: &mut UetTable, id: QpId, qp: &Qp, mtu: u32) -> bool {
    let m = mtu as u64;
    let st = uet.qp(id.idx());
    let high = qp.high_sent.max(qp.snd_una);
    st.in_flight(qp.snd_una / m, high / m) == 0 && (qp.posted > qp.high_sent || st.pending > 0)
}

/// What a timeout did to a UET QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) enum Expired {
    /// Nothing was outstanding, or nothing in flight was sent `rto` or longer ago (the
    /// timer then waits for the oldest PSN in flight: `qp.rto_deadline`).
    Idle,
    /// This many PSNs in flight, each sent `rto` or longer ago, go again.
    Resend(u32),
    /// The round exceeded `fabric.retry_limit`.
    Failed,
}

/// Hook "sender, timeout": the QP's timer fired at its deadline `now`. As htsim's UEC sender
/// times each packet from its own send time (`startRTO`, `rtxTimerExpired`), the PSNs in
/// flight sent `rto` or longer ago are lost, and only they; the timer moves to the oldest
/// one left ([`retransmit_lost`] sets `qp.rto_deadline`). A timeout that resends counts
/// against `fabric.retry_limit` as a go-back-N round does; a trimmed packet's NACK does not
/// (it is a congestion signal, and the packet's header proved the path alive). Under REPS
/// with `reps_freeze` a timeout that resends freezes the EVs (`rnic::uet_ev`), from `now`.
pub(in crate::sim) fn on_timeout(
    uet: &mut UetTable,
    id: QpId,
    qp: &mut Qp,
    limit: Option<u32>,
    now: Time,
    mtu: u32,
) -> Expired {
    if qp.high_sent <= qp.snd_una {
        return Expired::Idle;
    }
    match retransmit_lost(uet, id, qp, Loss::Timeout(now), mtu) {
        0 => Expired::Idle,
        n if retry::go_back(limit, qp) => {
            if uet.cfg.spray == Spray::Reps {
                let cfg = uet.cfg.ev();
                uet.qp(id.idx()).ev.feedback(&cfg, qp.sport, 0, Feedback::Timeout, now);
            }
            Expired::Resend(n)
        }
        _ => Expired::Failed,
    }
}

#[cfg(test)]
#[path = "uet_tests.rs"]
mod tests;
