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
use crate::rnic::uet::{align, fresh_ev, Arrival, Spray, UetTable};
use crate::rnic::Qp;
use crate::sim::mech::retry;
use crate::units::Time;

/// Hook "QP opened": the slot's UET state starts fresh, and the window never lets a PSN go
/// out past the receiver's tracked window (the smaller one when a window is set).
pub(in crate::sim) fn on_open(uet: &mut UetTable, id: QpId, qp: &mut Qp, mtu: u32) {
    let w = uet.cfg.window_packets;
    uet.qp(id.idx()).reset(w);
    let cap = w as u64 * mtu as u64;
    qp.win = if qp.win == 0 { cap } else { qp.win.min(cap) };
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

/// Hook "sender, per data packet sent": `pkt` left (the caller moved `snd_nxt` and
/// `high_sent` to its end). A resent PSN is taken off the list; `high_sent` moves to the
/// next packet boundary; `snd_nxt` to the next PSN to resend, else to new data.
#[inline]
pub(in crate::sim) fn after_send(uet: &mut UetTable, id: QpId, qp: &mut Qp, pkt: &Packet, mtu: u32) {
    let m = mtu as u64;
    let st = uet.qp(id.idx());
    st.resent(pkt.seq / m);
    qp.high_sent = align(qp.high_sent, mtu);
    qp.snd_nxt = st.next_resend(qp.snd_una / m, qp.high_sent / m).map_or(qp.high_sent, |p| p * m);
}

/// Hook "sender, ACK or NACK", after the cumulative ACK moved `qp.snd_una` from `old_una`:
/// the SACK's PSNs are not resent; a NACK's trimmed packet is
/// ([`retransmit_lost`]); the timer is re-armed while anything is outstanding.
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
    let rto = uet.cfg.rto;
    recycle(uet, id, ack);
    let st = uet.qp(id.idx());
    let (una, high, base) = (qp.snd_una / m, qp.high_sent / m, ack.seq / m);
    if qp.snd_una > old_una {
        st.advance(old_una / m, una);
        qp.rto_deadline = if qp.high_sent > qp.snd_una { now + rto } else { Time::MAX };
    }
    if ack.kind == PacketKind::Nack {
        retransmit_lost(uet, id, qp, Loss::Trimmed(base + ack.app_hdr.0 as u64), mtu);
    } else {
        let bits = ack.app_hdr.0 as u64 | (ack.payload as u64) << 32;
        st.on_sack(base + ack.int_hops as u64, bits, una, high);
        let st = uet.qp(id.idx());
        qp.snd_nxt = st.next_resend(una, high).map_or(qp.high_sent, |p| p * m);
    }
}

/// Hook "sender, per data packet sent": the entropy value (EV) the packet carries in its
/// source port, which the switches' ECMP hash reads: the connection's own port without
/// spraying; a fresh EV per packet (`ev_spray`); under REPS the oldest EV whose ACK came
/// back unmarked, else a fresh one.
#[inline]
pub(in crate::sim) fn entropy(uet: &mut UetTable, id: QpId, qp: &Qp) -> u16 {
    let cfg = uet.cfg;
    if cfg.spray == Spray::Off {
        return qp.sport;
    }
    let st = uet.qp(id.idx());
    if cfg.spray == Spray::Reps {
        if let Some(ev) = st.evs.pop_front() {
            return ev;
        }
    }
    st.drawn += 1;
    fresh_ev(qp.sip, qp.dip, qp.sport, st.drawn - 1, cfg.entropies)
}

/// REPS at the sender: an ACK (not a NACK: a trimmed packet's path was congested) whose
/// packet was not CE-marked gives its EV back (the ACK echoes it in its destination port,
/// the mark in `last_of_msg`).
fn recycle(uet: &mut UetTable, id: QpId, ack: &Packet) {
    if uet.cfg.spray == Spray::Reps && ack.kind == PacketKind::Ack && !ack.last_of_msg {
        let cap = uet.cfg.reps_buffer;
        uet.qp(id.idx()).recycle(ack.dport, cap);
    }
}

/// What a UET sender learnt it lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) enum Loss {
    /// A NACK named this PSN: a switch trimmed the packet to its header.
    Trimmed(u64),
    /// The retransmission timer fired: every PSN sent and not acknowledged.
    Timeout,
}

/// The sender's reaction to a loss, NACK or timeout: the PSNs lost are marked to resend
/// (never one a SACK reported, never one already marked), and the send pointer goes to the
/// lowest of them. Returns how many it marked. A congestion control's trim or loss signal
/// belongs beside the call of this function (`host/uet_rx.rs::uet_on_ack` for a NACK,
/// `host/mod.rs::on_rto` for a timeout).
pub(in crate::sim) fn retransmit_lost(uet: &mut UetTable, id: QpId, qp: &mut Qp, loss: Loss, mtu: u32) -> u32 {
    let m = mtu as u64;
    let st = uet.qp(id.idx());
    let (una, high) = (qp.snd_una / m, qp.high_sent / m);
    let marked = match loss {
        Loss::Trimmed(psn) => st.mark_lost(psn, una, high) as u32,
        Loss::Timeout => (una..high).filter(|&p| st.mark_lost(p, una, high)).count() as u32,
    };
    qp.snd_nxt = st.next_resend(una, high).map_or(qp.high_sent, |p| p * m);
    marked
}

/// What a timeout did to a UET QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::sim) enum Expired {
    /// Nothing was outstanding.
    Idle,
    /// Every PSN outstanding and not selectively acknowledged goes again.
    Resend,
    /// The round exceeded `fabric.retry_limit`.
    Failed,
}

/// Hook "sender, timeout": the QP's timer fired at its deadline. A timeout counts against
/// `fabric.retry_limit` as a go-back-N round does; a trimmed packet's NACK does not (it is a
/// congestion signal, and the packet's header proved the path alive).
pub(in crate::sim) fn on_timeout(uet: &mut UetTable, id: QpId, qp: &mut Qp, limit: Option<u32>, mtu: u32) -> Expired {
    if qp.high_sent <= qp.snd_una {
        return Expired::Idle;
    }
    if !retry::go_back(limit, qp) {
        return Expired::Failed;
    }
    retransmit_lost(uet, id, qp, Loss::Timeout, mtu);
    Expired::Resend
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rnic::uet::UetConfig;

    fn reps() -> (UetTable, Qp) {
        let cfg = UetConfig { spray: Spray::Reps, reps_buffer: 4, ..UetConfig::default() };
        let mut uet = UetTable::new(cfg);
        let mut qp = Qp { sip: 1, dip: 2, sport: 5000, transport: Transport::Uet, ..Qp::placeholder() };
        on_open(&mut uet, QpId(0), &mut qp, 1000);
        (uet, qp)
    }

    fn ack(kind: PacketKind, ev: u16, marked: bool) -> Packet {
        let mut a = Packet::pfc(kind, 3, 60);
        (a.dport, a.last_of_msg, a.app_hdr) = (ev, marked, HeaderSlot(0));
        a
    }

    #[test]
    fn reps_reuses_an_unmarked_entropy_and_only_that() {
        let (mut uet, mut qp) = reps();
        let e0 = entropy(&mut uet, QpId(0), &qp);
        let e1 = entropy(&mut uet, QpId(0), &qp);
        assert_eq!((e0, e1), (fresh_ev(1, 2, 5000, 0, 256), fresh_ev(1, 2, 5000, 1, 256)));
        on_ack(&mut uet, QpId(0), &mut qp, &ack(PacketKind::Ack, e1, false), 0, Time::ZERO, 1000);
        assert_eq!(entropy(&mut uet, QpId(0), &qp), e1, "the unmarked EV comes back");
        on_ack(&mut uet, QpId(0), &mut qp, &ack(PacketKind::Ack, e0, true), 0, Time::ZERO, 1000);
        on_ack(&mut uet, QpId(0), &mut qp, &ack(PacketKind::Nack, e0, false), 0, Time::ZERO, 1000);
        assert_eq!(entropy(&mut uet, QpId(0), &qp), fresh_ev(1, 2, 5000, 2, 256), "marked or trimmed: a fresh one");
    }

    #[test]
    fn oblivious_spraying_draws_a_fresh_entropy_for_every_packet() {
        let (mut uet, mut qp) = reps();
        uet.cfg.spray = Spray::EvSpray;
        on_ack(&mut uet, QpId(0), &mut qp, &ack(PacketKind::Ack, 77, false), 0, Time::ZERO, 1000);
        let evs: Vec<u16> = (0..3).map(|_| entropy(&mut uet, QpId(0), &qp)).collect();
        assert_eq!(evs, (0..3).map(|k| fresh_ev(1, 2, 5000, k, 256)).collect::<Vec<_>>());
        uet.cfg.spray = Spray::Off;
        assert_eq!(entropy(&mut uet, QpId(0), &qp), 5000, "no spraying: the QP's own port");
    }
}
