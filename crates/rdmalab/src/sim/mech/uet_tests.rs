//! The unit tests of `sim::mech::uet` (a file of their own: `uet.rs` stays under the size rule).

use super::*;
use crate::rnic::uet::{fresh_ev, UetConfig};

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

/// Sends the QP's next packet at `now` as `host/tx.rs::send_data` does.
fn send(uet: &mut UetTable, qp: &mut Qp, now: Time) -> u64 {
    assert!(!qp.window_bound(), "the window is shut");
    let mut pkt = Packet::pfc(PacketKind::Data, 3, 1000);
    (pkt.seq, pkt.payload) = (qp.snd_nxt, 1000);
    qp.snd_nxt += 1000;
    qp.high_sent = qp.high_sent.max(qp.snd_nxt);
    after_send(uet, QpId(0), qp, &pkt, now, 1000);
    pkt.seq / 1000
}

fn nack(uet: &mut UetTable, qp: &mut Qp, psn: u32) {
    let mut a = ack(PacketKind::Nack, 0, false);
    (a.seq, a.app_hdr) = (qp.snd_una, HeaderSlot(psn - (qp.snd_una / 1000) as u32));
    on_ack(uet, QpId(0), qp, &a, qp.snd_una, Time::ZERO, 1000);
}

#[test]
fn under_a_window_cc_a_nacked_packet_is_resent_only_when_the_window_has_room() {
    // htsim's `can_send_NSCC`: a packet, new or resent, goes when `cwnd >= in_flight +
    // size`; a NACKed packet's bytes leave `_in_flight` (`processNack`).
    let (mut uet, mut qp) = reps();
    uet.cfg.spray = Spray::Off;
    uet.windowed = true;
    qp.posted = 10_000;
    // cwnd = 3 packets: the NIC stops at 3000 - 1000 + 1 bytes in flight (`Group::window`).
    set_window(&mut uet, QpId(0), &mut qp, 2001, 1000);
    let sent: Vec<u64> = (0..3).map(|_| send(&mut uet, &mut qp, Time::ZERO)).collect();
    assert_eq!(sent, [0, 1, 2]);
    assert!(qp.window_bound(), "three packets in flight fill three packets of window");
    // PSN 1 trimmed; NSCC takes its packet off the window: 2 in flight, cwnd 2 packets.
    nack(&mut uet, &mut qp, 1);
    set_window(&mut uet, QpId(0), &mut qp, 1001, 1000);
    assert!(qp.window_bound(), "no room: the resend waits");
    // PSN 0 acknowledged: one packet in flight, room for the resend, and only it.
    let mut a = ack(PacketKind::Ack, 0, false);
    a.seq = 1000;
    qp.snd_una = 1000;
    on_ack(&mut uet, QpId(0), &mut qp, &a, 0, Time::ZERO, 1000);
    assert_eq!(send(&mut uet, &mut qp, Time::ZERO), 1, "the NACKed PSN first");
    assert!(qp.window_bound());
    // A SACK of PSN 2 frees the window for new data (PSN 3), the resent PSN 1 in flight.
    let mut a = ack(PacketKind::Ack, 0, false);
    (a.seq, a.app_hdr, a.int_hops) = (1000, HeaderSlot(0b10), 0);
    on_ack(&mut uet, QpId(0), &mut qp, &a, 1000, Time::ZERO, 1000);
    assert_eq!(send(&mut uet, &mut qp, Time::ZERO), 3);
    assert!(qp.window_bound());
}

#[test]
fn without_a_window_cc_a_nacked_packet_goes_next() {
    let (mut uet, mut qp) = reps();
    uet.cfg.spray = Spray::Off;
    qp.posted = 10_000;
    for _ in 0..3 {
        send(&mut uet, &mut qp, Time::ZERO);
    }
    nack(&mut uet, &mut qp, 1);
    assert_eq!(send(&mut uet, &mut qp, Time::ZERO), 1, "the rate, not a window, paces it");
    assert_eq!(send(&mut uet, &mut qp, Time::ZERO), 3);
}

#[test]
fn a_timeout_resends_what_was_sent_rto_ago_and_waits_for_the_next_oldest() {
    let (mut uet, mut qp) = reps();
    uet.cfg.spray = Spray::Off;
    qp.posted = 10_000;
    send(&mut uet, &mut qp, Time::from_us(0));
    send(&mut uet, &mut qp, Time::from_us(50));
    let rto = uet.cfg.rto;
    assert_eq!(on_timeout(&mut uet, QpId(0), &mut qp, None, rto, 1000), Expired::Resend(1));
    assert_eq!((qp.snd_nxt, qp.rto_deadline), (0, Time::from_us(150)), "PSN 0 goes again; PSN 1's deadline");
    send(&mut uet, &mut qp, rto);
    assert_eq!(on_timeout(&mut uet, QpId(0), &mut qp, None, Time::from_us(120), 1000), Expired::Idle);
    assert_eq!(qp.rto_deadline, Time::from_us(150));
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
