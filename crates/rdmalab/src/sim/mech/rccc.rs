//! Receiver-credit congestion control (`cc = "rccc"`, `"nscc+rccc"`) at the simulator's hook
//! points; the state and its rules are `cc::rccc`'s. Every hook is reached only from a UET
//! QP's packets, or from the run's RCCC timer, so a run without RCCC pays nothing new on its
//! common path.
//!
//! - QP opened (`host/mod.rs::open_qp_in`, UET only): [`on_open`], the initial credit;
//! - sender, per data packet sent (`host/tx.rs::send_data`, UET only): [`on_send`] spends a
//!   packet of credit, writes the sender's target into the packet, and parks the QP's pacing
//!   when no credit is left;
//! - receiver, per data packet (`host/uet_rx.rs::receive_uet`): [`on_data`] reads the target,
//!   adds a trimmed packet's resend, and arms the NIC's pacer;
//! - the pacer's timer at the receiving NIC's port (`Event::Mech(Timer::RcccGrant)`):
//!   [`on_timer`] grants the connection at the head of the round robin and sends its credit
//!   packet (`Action::Frame`, ahead of the NIC's data), then re-arms itself;
//! - sender, credit packet (`host/rx.rs::host_receive` → `host/uet_rx.rs::rccc_credit`):
//!   [`on_credit`]; a QP that was waiting resumes;
//! - sender, NACK (`host/uet_rx.rs::uet_on_ack`): [`on_nack`], a resend its receiver counts;
//! - sender, timeout (`host/mod.rs::on_rto`, UET only): [`on_timeout`];
//! - a message posted to a QP's send queue (`apps/send_queue.rs::post_to_qp`: collectives'
//!   and `[[app]]`s' WRs): [`on_post`], an idle connection's opening credit again.
//!
//! Fields: a data packet's target travels in `int_hops` (16 bits; switches stamp INT hops
//! only under HPCC, which RCCC does not run with); the credit packet's cumulative grant in
//! `seq`.

use super::actions::{Action, SwitchView};
use super::Timer;
use crate::cc::rccc::{Rccc, TxCredit};
use crate::fabric::packet::NO_INT;
use crate::fabric::{Packet, PacketKind};
use crate::ids::{HeaderSlot, NicId, PortId, QpId};
use crate::rnic::uet::UetTable;
use crate::rnic::Qp;
use crate::sim::Event;
use crate::stats::NamedCounts;
use crate::units::Time;

/// Hook "QP opened" (UET): the connection's credit starts at `initial_packets`, or at its
/// path's bandwidth-delay product `bdp` (bytes) in packets of `mtu`, at least one.
pub(in crate::sim) fn on_open(r: &mut Rccc, id: QpId, bdp: u64, mtu: u32) {
    let initial = r.cfg.initial_packets.map_or_else(|| bdp.div_ceil(mtu as u64).max(1), |n| n as u64);
    *r.tx(id.idx()) = TxCredit::new(initial);
    r.forget(id.idx()); // a reused slot: its last occupant's grants are gone
}

/// Hook "sender, per data packet sent", after `mech::uet::after_send`: the packet spends one
/// packet of credit and carries the sender's target (the packets it still has to send: new
/// ones and those marked to resend). With no credit left the QP's pacing is parked
/// (`next_avail` at the end of time) until a credit packet or a timeout gives some back.
#[inline]
pub(in crate::sim) fn on_send(r: &mut Rccc, uet: &mut UetTable, id: QpId, qp: &mut Qp, pkt: &mut Packet, mtu: u32) {
    let pending = uet.qp(id.idx()).pending as u64;
    let c = r.tx(id.idx());
    c.spent += 1;
    let unsent = qp.posted.saturating_sub(qp.high_sent).div_ceil(mtu as u64);
    pkt.int_hops = c.target(unsent + pending) as u16;
    if c.left() == 0 {
        // No credit left: the packet asks for an ACK (htsim's `sendNewPacket`, `uec.cpp`
        // line 2090).
        pkt.deflections |= crate::fabric::transport::UET_ACK_REQUEST;
        c.held = true;
        c.resume_at = qp.next_avail;
        qp.next_avail = Time::MAX;
    }
}

/// A credit packet for the connection of data packet `pkt`, back to its sender (its
/// cumulative grant goes in `seq` when sent), `wire` bytes long (an ACK's size).
pub(in crate::sim) fn credit_packet(pkt: &Packet, wire: u32) -> Packet {
    Packet {
        seq: 0,
        qp: pkt.qp,
        src: pkt.dst,
        dst: pkt.src,
        sip: pkt.dip,
        dip: pkt.sip,
        ingress: PortId::NONE,
        ingress_local: 0,
        int_slot: NO_INT,
        app_hdr: HeaderSlot::NONE,
        payload: 0,
        wire,
        sport: pkt.dport,
        dport: pkt.sport,
        kind: PacketKind::Credit,
        pg: pkt.pg,
        ce: false,
        cnp: false,
        last_of_msg: false,
        deflections: 0,
        int_hops: 0,
        tenant: pkt.tenant,
    }
}

/// Hook "receiver, per data packet" (a trimmed header included: `nacked`): receiver slot
/// `rx_id` hears the target; NIC `nic`'s pacer (a full packet takes `packet_time` on its
/// link) queues the connection when owed credit. Returns when the pacer's timer must fire,
/// if this armed it.
#[allow(clippy::too_many_arguments)]
pub(in crate::sim) fn on_data(
    r: &mut Rccc,
    nic: NicId,
    rx_id: QpId,
    pkt: &Packet,
    nacked: bool,
    wire: u32,
    packet_time: Time,
    now: Time,
) -> Option<Time> {
    r.pacers[nic.idx()].packet_time = packet_time;
    r.on_data(nic.idx(), rx_id.0, pkt.int_hops, nacked, credit_packet(pkt, wire), now)
}

/// Hook "the pacer's timer" at the receiving NIC's `port`: one grant, its credit packet out
/// ahead of the NIC's data, the next grant's timer while connections are owed credit.
pub(in crate::sim) fn on_timer(r: &mut Rccc, view: &SwitchView<'_>, port: PortId, actions: &mut Vec<Action>) {
    let nic = view.ports[port.idx()].nic();
    if let Some(g) = r.grant(nic.idx(), view.now) {
        actions.push(Action::Frame { port, frame: g.credit });
        if let Some(at) = g.next {
            actions.push(Action::Timer(at, Event::Mech(Timer::RcccGrant { port })));
        }
    }
}

/// Hook "sender, credit packet" for QP `id` with the cumulative grant `cum`: the time its
/// pacing resumes at when the QP was waiting for credit and now has some.
#[inline]
pub(in crate::sim) fn on_credit(r: &mut Rccc, id: QpId, cum: u64) -> Option<Time> {
    let c = r.tx(id.idx());
    (c.on_grant(cum) && c.held).then(|| release(c))
}

/// Hook "sender, NACK" of UET QP `id` (`host/uet_rx.rs::uet_on_ack`): its receiver counted
/// the resend this NACK asks for when it sent it, so the sender's target leaves it out.
#[inline]
pub(in crate::sim) fn on_nack(r: &mut Rccc, id: QpId) {
    r.tx(id.idx()).nacks += 1;
}

/// A credit packet for slot `id` reached its sender (whether or not the QP still sends):
/// one fewer travelling.
#[inline]
pub(in crate::sim) fn credit_arrived(r: &mut Rccc, id: QpId) {
    let c = r.tx(id.idx());
    c.credits_out = c.credits_out.wrapping_sub(1);
}

/// Hook "message posted" (`sim/apps/send_queue.rs::post_to_qp`: a collective's or an
/// `[[app]]`'s WR) on QP `id`, whose stream ended at `before` bytes: a UET connection that
/// had sent everything (nothing new, nothing marked to resend) starts the message with its
/// opening credit, as a new connection would. True when a QP that waited for credit may
/// send again (its pacing time is back in `next_avail`, not earlier than `now`).
pub(in crate::sim) fn on_post(r: &mut Rccc, uet: &mut UetTable, id: QpId, qp: &mut Qp, before: u64, now: Time) -> bool {
    use crate::rnic::transport::Transport;
    if qp.transport != Transport::Uet || qp.high_sent < before || uet.qp(id.idx()).pending != 0 {
        return false;
    }
    let c = r.tx(id.idx());
    if !(c.top_up() && c.held) {
        return false;
    }
    qp.next_avail = release(c).max(now);
    true
}

/// Hook "sender, timeout" of UET QP `id` (after its packets were marked to resend): with no
/// credit left, one packet of it, so that the first resend carries the new target; the time
/// its pacing resumes at when the QP was waiting.
pub(in crate::sim) fn on_timeout(r: &mut Rccc, id: QpId) -> Option<Time> {
    let c = r.tx(id.idx());
    (c.on_timeout() && c.held).then(|| release(c))
}

/// Hook "sender, timeout" of UET QP `id` with nothing in flight and work left (new data, or
/// packets marked to resend): [`on_timeout`], counted when it lends the packet that asks
/// again (`rccc_timer_asks`): the sender waited a whole timeout for a grant its receiver did
/// not know it owed, or whose credit packet was lost or is still on its way.
pub(in crate::sim) fn on_idle_timeout(r: &mut Rccc, id: QpId) -> Option<Time> {
    let at = on_timeout(r, id);
    r.timer_asks += at.is_some() as u64;
    at
}

/// True when UET QP `id` waits for credit (it spent all it had). With nothing of it in
/// flight, only a grant from its receiver moves it; a lost credit packet is never resent
/// (htsim's pulls are not either), so the retransmission timer covers that wait as it covers
/// a packet: htsim's sender sends a request to send when its timer fires without credit
/// (`UecSrc::rtxTimerExpired`, `uec.cpp` lines 2400-2411, "to cover the case where the
/// receiver doesn't know to send us credit"), and [`on_timeout`] gives the packet that
/// carries the request (its target) here.
pub(in crate::sim) fn starved(r: &mut Rccc, id: QpId) -> bool {
    r.tx(id.idx()).held
}

fn release(c: &mut TxCredit) -> Time {
    c.held = false;
    c.resume_at
}

/// The counter of the most connections one receiver's pacer held at once: a peak, which a
/// parallel run merges by its maximum (`Mechanisms::PEAK_COUNTERS`).
pub(crate) const PEAK_SENDERS: &str = "rccc_peak_senders";

/// RCCC's counts (`res.counters`), in runs with RCCC only: credit packets sent, packets of
/// credit granted, the most connections one receiver's pacer served at once, and the
/// timeouts that lent a waiting sender the packet that asks again.
pub(super) fn counters(r: Option<&Rccc>, c: &mut NamedCounts) {
    let Some(r) = r else { return };
    c.push_conditional("rccc_credits", r.credits);
    c.push_conditional("rccc_granted_packets", r.granted);
    c.push_conditional(PEAK_SENDERS, r.peak_active);
    c.push_conditional("rccc_timer_asks", r.timer_asks);
}
