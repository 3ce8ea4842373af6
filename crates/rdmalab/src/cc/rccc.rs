//! Receiver-credit congestion control (RCCC), the Ultra Ethernet transport's receiver-side
//! algorithm (`cc = "rccc"`, or `"nscc+rccc"` beside NSCC's window): a sender may send a
//! packet only against credit it holds; its receiver hands out credit, paced at its own
//! downlink's rate and shared round robin among the senders that ask for it. The design is
//! that of EQDS ("An edge-queued datagram service for all datacenter traffic", NSDI 2022) as
//! htsim's UEC model runs it (its pull pacer and `_credit_per_pull`), counted in packets
//! because UET's PSNs count packets here.
//!
//! - **Initial credit.** A connection starts with `initial` packets of credit it may send at
//!   once (EQDS's speculative credit), by default one bandwidth-delay product of its path.
//! - **Requests.** Every data packet carries the sender's *target*: the cumulative credit it
//!   needs from the receiver to finish what it has to send now (packets sent, plus packets
//!   still to send, less the initial credit). It travels in 16 bits and is read against the
//!   receiver's own count (`unwrap16`), as EQDS's quantised pull target is.
//! - **Grants.** The receiver keeps, per connection, the highest target heard and the credit
//!   it granted; a connection owed credit waits in its NIC's round robin. The NIC's pacer
//!   grants `grant_packets` (or what is owed, if less) to the connection at the head, sends
//!   the cumulative grant back in a credit packet, and waits the time its link takes to carry
//!   that many full packets before the next grant.
//! - **Trims and timeouts.** A trimmed packet's NACK makes its sender resend it, so the
//!   receiver counts one packet owed per NACK it sends (EQDS's retransmission backlog), and
//!   the sender's target leaves out one packet per NACK it heard: the two halves add, each
//!   resend asked for once. A timeout with no credit left gives the sender one packet of
//!   credit, so that its resend carries a new target (EQDS's request to send).
//!
//! This module holds the state and its rules; `sim::mech::rccc` hands them the QP, the
//! packet and the time at the hook points.

use std::collections::VecDeque;

use crate::fabric::Packet;
use crate::units::Time;

/// `[fabric.rccc]`, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcccConfig {
    /// Packets of credit a connection starts with (`None`: one BDP of its path, in packets).
    pub initial_packets: Option<u32>,
    /// Packets granted at a time by a receiver's pacer (htsim's UEC model: four MTUs per
    /// pull, which its source gives as the specification's default).
    pub grant_packets: u32,
}

impl Default for RcccConfig {
    fn default() -> Self {
        RcccConfig { initial_packets: None, grant_packets: 4 }
    }
}

/// The largest target a request can carry past the receiver's count: it travels in 16 bits.
pub const MAX_REQUEST: u64 = 1 << 14;

/// A sender's credit on one connection, in packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCredit {
    /// The credit the connection opened with: what a new message on an idle connection
    /// starts with again (`top_up`).
    pub base: u64,
    /// The credit not granted by the receiver: the initial credit, topped up for each
    /// message posted to an idle connection, plus one packet per timeout that found none
    /// left.
    pub initial: u64,
    /// The highest cumulative grant heard from the receiver.
    pub granted: u64,
    /// Packets sent: first sends and resends alike.
    pub spent: u64,
    /// NACKs heard: each a resend its receiver counts itself, left out of the target.
    pub nacks: u64,
    /// The QP waits for credit (its pacing time is parked in `resume_at`).
    pub held: bool,
    /// Where the QP's pacing stood when it ran out of credit.
    pub resume_at: Time,
    /// Credit packets for this slot sent by its receiver and not yet heard by its sender
    /// (wrapping: in a parallel run the two halves count in different partitions). The
    /// slot is reused only at zero, so that no credit reaches its next occupant.
    pub credits_out: u32,
}

impl TxCredit {
    /// A connection that starts with `initial` packets of credit.
    pub fn new(initial: u64) -> TxCredit {
        TxCredit { base: initial, initial, ..TxCredit::default() }
    }

    /// A message was posted to a connection with nothing left to send: it starts as a new
    /// connection does, with at least its opening credit to send before a grant comes back.
    /// True when this added credit.
    pub fn top_up(&mut self) -> bool {
        let left = self.left();
        if left >= self.base {
            return false;
        }
        self.initial += self.base - left;
        true
    }

    /// Packets the sender may still send.
    #[inline]
    pub fn left(&self) -> u64 {
        (self.initial + self.granted).saturating_sub(self.spent)
    }

    /// The target a data packet carries when `need` packets remain to send after it: the
    /// cumulative grant that covers them, less one packet per NACK heard (the receiver counts
    /// those resends itself, [`RxGrants::nacks`]).
    #[inline]
    pub fn target(&self, need: u64) -> u64 {
        (self.spent + need).saturating_sub(self.initial + self.nacks)
    }

    /// A credit packet carrying the cumulative grant `cum` arrived: true when it adds credit
    /// (a reordered or repeated one does not).
    #[inline]
    pub fn on_grant(&mut self, cum: u64) -> bool {
        if cum > self.granted {
            self.granted = cum;
            true
        } else {
            false
        }
    }

    /// A timeout: with no credit left, one packet of credit for the resend that carries the
    /// new target. True when it gave one.
    pub fn on_timeout(&mut self) -> bool {
        if self.left() == 0 {
            self.initial += 1;
            true
        } else {
            false
        }
    }
}

/// The 16-bit field `r` read as the cumulative count nearest `reference` (within ±2^15).
#[inline]
pub fn unwrap16(reference: u64, r: u16) -> u64 {
    let d = r.wrapping_sub(reference as u16) as i16;
    reference.saturating_add_signed(d as i64)
}

/// A receiver's view of one connection.
#[derive(Clone, Copy, Debug)]
pub struct RxGrants {
    /// The highest target heard.
    pub target: u64,
    /// NACKs sent for trimmed headers: each a resend owed beside the target (the sender's
    /// target leaves out the NACKs it heard). Kept apart from the target: folded into it by
    /// taking the larger of the two, a NACK's resend would vanish into a target that rose for
    /// another reason (packets a timeout marked), and the sender would wait for a grant its
    /// receiver does not know it owes.
    pub nacks: u64,
    /// The cumulative credit granted.
    pub granted: u64,
    /// Waiting in its NIC's round robin.
    pub queued: bool,
    /// The credit packet, addressed back to the sender (its cumulative grant in `seq`);
    /// its entropy value (`dport`, where a reply carries it) moves on at each grant.
    pub reply: Packet,
    /// Credit packets sent so far: which of the [`CREDIT_EVS`] entropy values the next
    /// one takes.
    pub sent: u64,
}

impl RxGrants {
    /// The cumulative grant the connection needs: its target and the resends of its NACKs.
    #[inline]
    pub fn owed(&self) -> u64 {
        self.target + self.nacks
    }
}

/// How many entropy values a receiver's credit packets cycle through, one after another:
/// htsim's UEC sink gives each pull packet the next value of the low `TGT_EV_SIZE = 7` bits
/// of its entropy (`uec.cpp`: line 23, and `UecSink::nextEntropy`, lines 2900-2909, which
/// `UecSink::pull` calls for every pull, line 2944), so that the credit of one connection spreads over
/// the paths back as its data does, and a lost path costs a few grants, not all of them.
pub const CREDIT_EVS: u64 = 1 << 7;

/// One receiving NIC's pacer: the connections owed credit, in turn.
#[derive(Clone, Debug, Default)]
pub struct Pacer {
    /// Receiver slots owed credit, each at most once, in round-robin order: bounded by the
    /// NIC's receive-QP table, as a NIC's credit scheduler is by its connection table.
    pub active: VecDeque<u32>,
    /// A grant event is pending.
    pub armed: bool,
    /// The earliest time of the next grant (the link's time for the last one's packets).
    pub free_at: Time,
    /// The link's time for one full packet.
    pub packet_time: Time,
}

/// Every RCCC connection's state: the sender's credit and the receiver's grants per QP slot,
/// each receiving NIC's pacer, and the counts.
#[derive(Clone, Debug)]
pub struct Rccc {
    /// The settings.
    pub cfg: RcccConfig,
    /// Per QP slot, the sender's half.
    pub tx: Vec<TxCredit>,
    /// Per QP slot, the receiver's half (`None` until its first packet).
    pub rx: Vec<Option<RxGrants>>,
    /// Per NIC.
    pub pacers: Vec<Pacer>,
    /// Credit packets sent.
    pub credits: u64,
    /// Packets of credit granted.
    pub granted: u64,
    /// The most connections one NIC's pacer held at once.
    pub peak_active: u64,
    /// Timeouts that found a sender with nothing in flight, work left and no credit, and
    /// lent it the packet that asks again.
    pub timer_asks: u64,
}

/// What one grant did: the receiver slot served, the credit packet to send, and when the
/// pacer runs next (`None`: it goes idle).
#[derive(Clone, Copy, Debug)]
pub struct Grant {
    /// The receiver slot granted.
    pub slot: u32,
    /// Its credit packet, the cumulative grant in `seq`.
    pub credit: Packet,
    /// When the pacer runs next (`None`: it goes idle).
    pub next: Option<Time>,
}

impl Rccc {
    /// No connection yet, an idle pacer per NIC.
    pub fn new(cfg: RcccConfig, nics: usize) -> Rccc {
        Rccc {
            cfg,
            tx: Vec::new(),
            rx: Vec::new(),
            pacers: vec![Pacer::default(); nics],
            credits: 0,
            granted: 0,
            peak_active: 0,
            timer_asks: 0,
        }
    }

    /// The sender's half of slot `i` (grown on first use).
    pub fn tx(&mut self, i: usize) -> &mut TxCredit {
        if self.tx.len() <= i {
            self.tx.resize(i + 1, TxCredit::default());
        }
        &mut self.tx[i]
    }

    /// True when slot `i` may be reused: no credit packet of it travels and its receiver
    /// owes it no grant.
    pub fn quiet(&self, i: usize) -> bool {
        self.tx.get(i).is_none_or(|c| c.credits_out == 0)
            && self.rx.get(i).is_none_or(|x| x.as_ref().is_none_or(|x| !x.queued))
    }

    /// Slot `i` opens for a new connection: its receiver's view starts afresh.
    pub fn forget(&mut self, i: usize) {
        if let Some(x) = self.rx.get_mut(i) {
            *x = None;
        }
    }

    /// A data packet asking for `target` (its 16-bit field) reached receiver slot `slot`
    /// (a fresh connection's first packet makes its state, with `reply` as its credit
    /// packet); `nacked`: its header came trimmed and its NACK will make the sender resend
    /// it. Returns the time the NIC's pacer must run at when this armed it.
    pub fn on_data(
        &mut self,
        nic: usize,
        slot: u32,
        target: u16,
        nacked: bool,
        reply: Packet,
        now: Time,
    ) -> Option<Time> {
        let i = slot as usize;
        if self.rx.len() <= i {
            self.rx.resize(i + 1, None);
        }
        let rx = self.rx[i].get_or_insert(RxGrants { target: 0, nacks: 0, granted: 0, queued: false, reply, sent: 0 });
        rx.target = rx.target.max(unwrap16(rx.target, target));
        rx.nacks += nacked as u64;
        if rx.owed() <= rx.granted || rx.queued {
            return None;
        }
        rx.queued = true;
        let p = &mut self.pacers[nic];
        p.active.push_back(slot);
        self.peak_active = self.peak_active.max(p.active.len() as u64);
        if p.armed {
            return None;
        }
        p.armed = true;
        Some(p.free_at.max(now))
    }

    /// The pacer of `nic` runs at `now`: the connection at the head of its round robin gets
    /// up to `grant_packets` (what it is owed, at most) and goes to the back if still owed.
    pub fn grant(&mut self, nic: usize, now: Time) -> Option<Grant> {
        let k = self.cfg.grant_packets as u64;
        let p = &mut self.pacers[nic];
        let Some(slot) = p.active.pop_front() else {
            p.armed = false;
            return None;
        };
        let rx = self.rx[slot as usize].as_mut().expect("a queued connection has its state");
        let g = (rx.owed() - rx.granted).min(k);
        rx.granted += g;
        if rx.owed() > rx.granted {
            p.active.push_back(slot);
        } else {
            rx.queued = false;
        }
        let mut credit = rx.reply;
        credit.seq = rx.granted;
        credit.dport = credit.dport.wrapping_add((rx.sent % CREDIT_EVS) as u16);
        rx.sent += 1;
        p.free_at = now + Time(p.packet_time.0 * g);
        let next = if p.active.is_empty() {
            p.armed = false;
            None
        } else {
            Some(p.free_at)
        };
        self.credits += 1;
        self.granted += g;
        let c = self.tx(slot as usize);
        c.credits_out = c.credits_out.wrapping_add(1);
        Some(Grant { slot, credit, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::PacketKind;

    fn reply() -> Packet {
        Packet::pfc(PacketKind::Credit, 0, 64)
    }

    #[test]
    fn the_target_covers_what_is_left_beyond_the_initial_credit() {
        let mut c = TxCredit::new(10);
        // 25 packets to send: after the first, 24 remain; 15 must be granted.
        c.spent = 1;
        assert_eq!(c.target(24), 15);
        assert_eq!(c.left(), 9);
        c.spent = 10;
        assert_eq!(c.left(), 0);
        assert!(c.on_grant(4) && !c.on_grant(3), "a stale grant adds nothing");
        assert_eq!(c.left(), 4);
        // A flow smaller than its initial credit asks for nothing.
        assert_eq!(TxCredit::new(10).target(3), 0);
    }

    #[test]
    fn a_timeout_without_credit_gives_one_packet() {
        let mut c = TxCredit { spent: 5, ..TxCredit::new(5) };
        assert!(c.on_timeout());
        assert_eq!(c.left(), 1);
        assert!(!c.on_timeout(), "credit left: nothing more");
    }

    #[test]
    fn a_new_message_on_an_idle_connection_starts_with_the_opening_credit() {
        let mut c = TxCredit::new(10);
        c.spent = 30;
        c.on_grant(20);
        assert_eq!(c.left(), 0);
        assert!(c.top_up());
        assert_eq!(c.left(), 10, "the opening credit again");
        assert!(!c.top_up(), "credit left at the opening credit: nothing added");
        // It asks only for what the opening credit does not cover: 25 more packets, 15 granted.
        c.spent += 1;
        assert_eq!(c.target(24), 20 + 15);
        let mut rich = TxCredit::new(4);
        rich.on_grant(9);
        assert!(!rich.top_up());
        assert_eq!(rich.left(), 13);
    }

    #[test]
    fn one_connection_s_credit_packets_cycle_through_128_entropy_values() {
        let mut r = Rccc::new(RcccConfig { initial_packets: Some(0), grant_packets: 1 }, 1);
        let mut first = reply();
        first.dport = 65_500; // the first data packet's EV: the cycle wraps past 65,535
        r.on_data(0, 0, 300, false, first, Time(0));
        let evs: Vec<u16> = (0..130).map(|_| r.grant(0, Time(0)).unwrap().credit.dport).collect();
        let want: Vec<u16> = (0..130u64).map(|k| 65_500u16.wrapping_add((k % 128) as u16)).collect();
        assert_eq!(evs, want);
        assert_eq!(evs[..128].iter().collect::<std::collections::HashSet<_>>().len(), 128);
    }

    #[test]
    fn sixteen_bits_unwrap_around_the_receivers_count() {
        assert_eq!(unwrap16(0, 7), 7);
        assert_eq!(unwrap16(65_530, 3), 65_539);
        assert_eq!(unwrap16(70_000, (69_990u64 % 65_536) as u16), 69_990, "an older target reads as older");
        assert_eq!(unwrap16(5, 4), 4);
        assert_eq!(unwrap16(5, 65_535), 0, "a count below zero reads as zero");
    }

    #[test]
    fn the_pacer_grants_round_robin_at_the_link_rate_and_stops_when_none_is_owed() {
        let mut r = Rccc::new(RcccConfig { initial_packets: Some(0), grant_packets: 4 }, 1);
        r.pacers[0].packet_time = Time(100);
        assert_eq!(r.on_data(0, 0, 6, false, reply(), Time(5)), Some(Time(5)), "the first request arms it at once");
        assert_eq!(r.on_data(0, 1, 4, false, reply(), Time(5)), None, "already armed");
        let g = r.grant(0, Time(5)).unwrap();
        assert_eq!((g.slot, g.credit.seq, g.next), (0, 4, Some(Time(405))));
        let g = r.grant(0, Time(405)).unwrap();
        assert_eq!((g.slot, g.credit.seq, g.next), (1, 4, Some(Time(805))));
        // Slot 0 is owed 2 more: a partial grant, paced by its own size; then nothing is owed.
        let g = r.grant(0, Time(805)).unwrap();
        assert_eq!((g.slot, g.credit.seq, g.next), (0, 6, None));
        assert!(!r.pacers[0].armed && r.pacers[0].active.is_empty());
        // A new request waits until the link has carried the last grant.
        assert_eq!(r.on_data(0, 1, 5, false, reply(), Time(810)), Some(Time(1005)));
        assert_eq!((r.credits, r.granted, r.peak_active), (3, 10, 2));
    }

    #[test]
    fn a_nack_s_resend_stays_owed_when_the_target_rises_for_another_reason() {
        // The sender, 10 packets past its initial credit, has them all granted. Its packet
        // comes trimmed (target 10): one resend owed. Before the NACK reaches it, its timer
        // marks another packet to resend, and a packet carries target 11. Both resends are
        // owed: 12, not the larger of 11 and 11.
        let mut r = Rccc::new(RcccConfig { initial_packets: Some(0), grant_packets: 4 }, 1);
        r.on_data(0, 0, 10, false, reply(), Time(0));
        while r.grant(0, Time(0)).is_some_and(|g| g.next.is_some()) {}
        assert_eq!(r.granted, 10);
        r.on_data(0, 0, 10, true, reply(), Time(0));
        r.on_data(0, 0, 11, false, reply(), Time(0));
        assert_eq!(r.grant(0, Time(0)).unwrap().credit.seq, 12);
        // The sender's side: hearing the NACK marks the packet to resend (one more packet to
        // send) and leaves it out of the target, which the receiver counted already.
        let mut c = TxCredit::new(0);
        c.spent = 12;
        assert_eq!(c.target(0), 12);
        c.nacks += 1;
        assert_eq!(c.target(1), 12, "the NACK's resend asked for once");
    }

    #[test]
    fn a_trimmed_packet_adds_one_to_what_is_owed() {
        let mut r = Rccc::new(RcccConfig::default(), 1);
        r.on_data(0, 0, 0, false, reply(), Time(0));
        assert!(r.pacers[0].active.is_empty(), "nothing owed");
        assert_eq!(r.on_data(0, 0, 0, true, reply(), Time(0)), Some(Time(0)));
        assert_eq!(r.grant(0, Time(0)).unwrap().credit.seq, 1);
    }
}
