//! The Ultra Ethernet transport's packet delivery in the RNIC (UEC 1.0, the PDS's reliable
//! unordered delivery): every packet of a connection has a packet sequence number (PSN), the
//! receiver accepts packets in any order and never twice, and acknowledges them with a
//! cumulative PSN and a bitmap of the 64 PSNs from a base (the spec's SACK: `cack_psn`,
//! `sack_psn_offset`, a 64-bit `sack_bitmap`), one ACK for several packets (coalescing); the
//! sender resends a packet a NACK names (a switch trimmed it) or, at a timeout, every packet
//! sent and not acknowledged.
//!
//! Sequence numbers here are byte offsets in the QP's stream, as for RC; a UET QP starts
//! every message at a multiple of the MTU ([`align`]), so that a packet's PSN is its offset
//! divided by the MTU, and PSNs count the connection's packets without a gap. The state is
//! bounded as a NIC's is: the receiver tracks `window_packets` PSNs past its cumulative one
//! (one bit each), the sender as many (acknowledged, to resend), and the sender never has a
//! PSN outstanding that far past the cumulative ACK.
//!
//! This module holds the state and its rules; `sim::mech::uet` hands them the QP at the hook
//! points.

use crate::units::Time;

pub use crate::rnic::uet_ev::{fresh_ev, EvConfig, Spray};

/// `[fabric.uet]`, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UetConfig {
    /// ACK coalescing: the receiver acknowledges every this many packets (and at once a
    /// message's last packet, a CE-marked packet, a duplicate or a trimmed header).
    pub ack_every: u32,
    /// The retransmission timeout, re-armed at each advance of the cumulative ACK.
    pub rto: Time,
    /// PSNs tracked past the cumulative one, by the receiver and the sender (a multiple of
    /// 64): the most a sender has outstanding.
    pub window_packets: u32,
    /// The entropy of each packet.
    pub spray: Spray,
    /// Distinct EVs a sender draws from (oblivious spraying and REPS's fresh ones).
    pub entropies: u32,
    /// REPS's buffer of recycled EVs, per connection.
    pub reps_buffer: u32,
    /// REPS: how long a timeout freezes the buffer (`None`: never; `rnic::uet_ev`).
    pub reps_freeze: Option<Time>,
}

impl UetConfig {
    /// The settings that pick each packet's entropy value.
    pub fn ev(&self) -> EvConfig {
        EvConfig {
            spray: self.spray,
            entropies: self.entropies,
            reps_buffer: self.reps_buffer,
            reps_freeze: self.reps_freeze,
        }
    }
}

impl Default for UetConfig {
    fn default() -> Self {
        UetConfig {
            ack_every: 4,
            rto: Time::from_us(100),
            window_packets: 1024,
            spray: Spray::Off,
            entropies: 256,
            reps_buffer: 8,
            reps_freeze: None,
        }
    }
}

/// The stream offset where a UET QP's next message starts: `posted` rounded up to the MTU,
/// so that every packet begins at a multiple of it (its PSN is the quotient).
#[inline]
pub fn align(posted: u64, mtu: u32) -> u64 {
    posted.next_multiple_of(mtu as u64)
}

/// A ring of one bit per PSN over a window of `words * 64` PSNs: bit `psn % window`.
#[derive(Clone, Debug, Default)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn reset(&mut self, words: usize) {
        self.words.clear();
        self.words.resize(words, 0);
    }
    #[inline]
    fn at(&self, psn: u64) -> (usize, u64) {
        let w = self.words.len() as u64 * 64;
        let i = psn % w;
        ((i / 64) as usize, 1u64 << (i % 64))
    }
    #[inline]
    fn get(&self, psn: u64) -> bool {
        let (w, b) = self.at(psn);
        self.words[w] & b != 0
    }
    #[inline]
    fn set(&mut self, psn: u64, on: bool) {
        let (w, b) = self.at(psn);
        if on {
            self.words[w] |= b;
        } else {
            self.words[w] &= !b;
        }
    }
}

/// What a data packet is to a UET receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// First time here: placed. `.0`: the cumulative PSN after it (the first one missing).
    New(u64),
    /// Already received: discarded (and acknowledged again).
    Duplicate,
    /// Past the tracked window: discarded unanswered (a sender never sends so far ahead).
    Beyond,
}

/// One connection's UET state: the sender's half and the receiver's half of the same slot.
#[derive(Clone, Debug, Default)]
pub struct UetQp {
    /// Sender: PSNs past the cumulative ACK that a SACK reported received.
    acked: Bits,
    /// Sender: PSNs marked to send again (a NACK named them, or a timeout).
    resend: Bits,
    /// Sender: how many PSNs `resend` marks.
    pub pending: u32,
    /// Sender: how many PSNs past the cumulative ACK `acked` marks (a SACK reported them).
    pub sacked: u32,
    /// Sender: when each PSN of the window last went out (the ring of `acked`, made at the
    /// first send: a receiver's half never fills it); its retransmission timer reads it.
    sent_at: Vec<Time>,
    /// Sender: the congestion control's window in the NIC's form (bytes in flight at which
    /// the QP stops: `Group::window`), or the tracked PSNs' span without a window CC.
    pub cc_win: u64,
    /// Sender: no PSN below this is marked to resend (where the search for one starts).
    resend_from: u64,
    /// Receiver: PSNs received past the cumulative one.
    got: Bits,
    /// Receiver: one past the highest PSN received (0: none yet).
    rx_high: u64,
    /// Receiver: a packet asked for an ACK while packets were out of order; another ACK is
    /// owed when the cumulative point passes them all.
    ack_request: bool,
    /// Receiver: the ends of messages whose last packet arrived, with that packet's
    /// application header slot (raw), in order of end; each completes once every byte
    /// before its end arrived. Only QPs an application listens on record them; at most one
    /// per PSN in the window.
    pub ends: std::collections::VecDeque<(u64, u32)>,
    /// Sender: how it picks each packet's entropy value (`rnic::uet_ev`).
    pub ev: crate::rnic::uet_ev::EvPicker,
}

impl UetQp {
    /// A fresh connection with a window of `window` PSNs (a multiple of 64), keeping the
    /// buffers' capacity.
    pub fn reset(&mut self, window: u32) {
        let words = (window / 64) as usize;
        self.acked.reset(words);
        self.resend.reset(words);
        self.got.reset(words);
        self.rx_high = 0;
        self.ack_request = false;
        self.pending = 0;
        self.sacked = 0;
        self.sent_at.clear();
        self.resend_from = 0;
        self.ends.clear();
        self.ev.reset();
    }

    fn window(&self) -> u64 {
        self.got.words.len() as u64 * 64
    }

    /// The PSNs tracked past the cumulative one (`window_packets`).
    pub fn span(&self) -> u64 {
        self.window()
    }

    /// Receiver: PSN `psn` arrived with `cum` the first PSN not yet received.
    pub fn receive(&mut self, psn: u64, cum: u64) -> Arrival {
        if psn < cum || (psn < cum + self.window() && self.got.get(psn)) {
            return Arrival::Duplicate;
        }
        if psn >= cum + self.window() {
            return Arrival::Beyond;
        }
        self.got.set(psn, true);
        let mut c = cum;
        while c < cum + self.window() && self.got.get(c) {
            self.got.set(c, false);
            c += 1;
        }
        Arrival::New(c)
    }

    /// Receiver: whether new PSN `psn` (the cumulative PSN `before` it arrived, `after` it
    /// was placed; `asked`: it carries the ACK request) is acknowledged at once, beyond the
    /// coalescing count, by htsim's UEC sink's rule (`UecSink::processData`, `uec.cpp` lines
    /// 2658-2714): the connection's first packet; a packet asking for an ACK; and, after
    /// such a request, the in-order packet that leaves nothing out of order (`_ack_request`
    /// and `_out_of_order_count`). A packet that fills a hole is not acknowledged for that.
    pub fn ack_at_once(&mut self, psn: u64, before: u64, after: u64, asked: bool) -> bool {
        let first = self.rx_high == 0;
        self.rx_high = self.rx_high.max(psn + 1);
        self.ack_request |= asked;
        let drained = psn == before && after >= self.rx_high && self.ack_request;
        if drained {
            self.ack_request = false;
        }
        first || asked || drained
    }

    /// Receiver: the SACK an ACK carries after PSN `trigger` arrived, `cum` being the first
    /// PSN missing: its base's offset past `cum` and the bitmap of the 64 PSNs from the base
    /// (bit `i`: PSN base + i received). The base is `cum` unless the trigger lies 64 or more
    /// past it; then the bitmap ends at the trigger.
    pub fn sack(&self, trigger: u64, cum: u64) -> (u16, u64) {
        let base = if trigger < cum + 64 { cum } else { trigger - 63 };
        let mut bits = 0u64;
        let top = (base + 64).min(cum + self.window());
        for psn in base.max(cum)..top {
            if self.got.get(psn) {
                bits |= 1 << (psn - base);
            }
        }
        ((base - cum) as u16, bits)
    }

    /// Sender: the cumulative ACK moved from PSN `from` to `to`: forget what lies below.
    pub fn advance(&mut self, from: u64, to: u64) {
        let top = to.min(from + self.window());
        for psn in from..top {
            if self.acked.get(psn) {
                self.acked.set(psn, false);
                self.sacked -= 1;
            }
            if self.resend.get(psn) {
                self.resend.set(psn, false);
                self.pending -= 1;
            }
        }
    }

    /// Sender: a SACK with base `base` and bitmap `bits`; `una` the cumulative PSN and
    /// `high` one past the highest PSN sent. A PSN it reports is not resent.
    pub fn on_sack(&mut self, base: u64, bits: u64, una: u64, high: u64) {
        let mut b = bits;
        while b != 0 {
            let psn = base + b.trailing_zeros() as u64;
            b &= b - 1;
            if psn < una || psn >= high || psn >= una + self.window() || self.acked.get(psn) {
                continue;
            }
            self.acked.set(psn, true);
            self.sacked += 1;
            if self.resend.get(psn) {
                self.resend.set(psn, false);
                self.pending -= 1;
            }
        }
    }

    /// Sender: marks PSN `psn` to send again unless it is acknowledged or already marked.
    /// True when it was marked now.
    pub fn mark_lost(&mut self, psn: u64, una: u64, high: u64) -> bool {
        if psn < una || psn >= high || self.acked.get(psn) || self.resend.get(psn) {
            return false;
        }
        self.resend.set(psn, true);
        self.pending += 1;
        self.resend_from = self.resend_from.min(psn);
        true
    }

    /// Sender: the lowest PSN marked to send again, if any.
    pub fn next_resend(&mut self, una: u64, high: u64) -> Option<u64> {
        if self.pending == 0 {
            return None;
        }
        let mut psn = self.resend_from.max(una);
        while psn < high {
            if self.resend.get(psn) {
                self.resend_from = psn;
                return Some(psn);
            }
            psn += 1;
        }
        None
    }

    /// Sender: packets in flight between `una` and `high` (one past the highest PSN sent):
    /// sent, neither acknowledged (cumulatively or by a SACK) nor marked lost. A PSN marked
    /// lost leaves the flight until it is resent, as htsim's UEC sender takes a NACKed or
    /// timed-out packet's bytes off its `_in_flight`.
    pub fn in_flight(&self, una: u64, high: u64) -> u64 {
        (high - una).saturating_sub(self.sacked as u64 + self.pending as u64)
    }

    /// Sender: PSN `psn` goes out now.
    #[inline]
    pub fn note_sent(&mut self, psn: u64, now: Time) {
        if self.sent_at.is_empty() {
            self.sent_at.resize(self.window() as usize, Time::ZERO);
        }
        let w = self.sent_at.len() as u64;
        self.sent_at[(psn % w) as usize] = now;
    }

    /// Sender, at its retransmission timer: marks lost every PSN in flight (sent, not
    /// acknowledged, not already marked) that went out `rto` or longer before `now`, as
    /// htsim's UEC sender times each packet from its own send time. Returns how many it
    /// marked and the deadline of the oldest PSN still in flight (`Time::MAX`: none).
    pub fn expire(&mut self, una: u64, high: u64, now: Time, rto: Time) -> (u32, Time) {
        let (mut marked, mut next) = (0, Time::MAX);
        if self.sent_at.is_empty() {
            return (0, next);
        }
        let w = self.sent_at.len() as u64;
        for psn in una..high.min(una + self.window()) {
            if self.acked.get(psn) || self.resend.get(psn) {
                continue;
            }
            let due = self.sent_at[(psn % w) as usize] + rto;
            if due <= now {
                self.mark_lost(psn, una, high);
                marked += 1;
            } else {
                next = next.min(due);
            }
        }
        (marked, next)
    }

    /// Sender: PSN `psn` went out again.
    pub fn resent(&mut self, psn: u64) {
        if self.resend.get(psn) {
            self.resend.set(psn, false);
            self.pending -= 1;
            self.resend_from = psn + 1;
        }
    }
}

/// Every QP's UET state on one simulation, by QP slot (grown on first use: a receiver's
/// mirror slot in a parallel run is made there), with the run's settings.
#[derive(Clone, Debug, Default)]
pub struct UetTable {
    /// The settings.
    pub cfg: UetConfig,
    /// A window congestion control (NSCC, Swift) limits the packets in flight, resent ones
    /// included (`sim::mech::uet::gate`).
    pub windowed: bool,
    qps: Vec<UetQp>,
}

impl UetTable {
    /// An empty table.
    pub fn new(cfg: UetConfig) -> UetTable {
        UetTable { cfg, windowed: false, qps: Vec::new() }
    }

    /// The window congestion control's window of sender slot `i` (`UetQp::cc_win`), where
    /// one limits the flight (`windowed`): the QP's own `win` then holds the gate's
    /// working value.
    pub fn cc_window(&self, i: usize) -> Option<u64> {
        self.qps.get(i).filter(|_| self.windowed).map(|q| q.cc_win)
    }

    /// The state of QP slot `i`, made fresh (with the configured window) if the slot was
    /// never used.
    pub fn qp(&mut self, i: usize) -> &mut UetQp {
        if self.qps.len() <= i {
            let w = self.cfg.window_packets;
            self.qps.resize_with(i + 1, || {
                let mut q = UetQp::default();
                q.reset(w);
                q
            });
        }
        &mut self.qps[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(window: u32) -> UetQp {
        let mut q = UetQp::default();
        q.reset(window);
        q
    }

    #[test]
    fn the_receiver_acks_at_once_as_htsim_s_sink_does() {
        // htsim's `UecSink::processData`: the first packet; an AR packet; after an AR, the
        // in-order packet that leaves nothing out of order; never a hole-filler for itself.
        let mut q = fresh(64);
        assert!(q.ack_at_once(0, 0, 1, false), "the connection's first packet");
        assert!(!q.ack_at_once(2, 1, 1, false), "out of order, no request");
        assert!(!q.ack_at_once(1, 1, 3, false), "fills the hole: nothing owed for that");
        assert!(q.ack_at_once(5, 3, 3, true), "asks");
        assert!(!q.ack_at_once(3, 3, 4, false), "in order, PSN 5 still out of order");
        assert!(q.ack_at_once(4, 4, 6, false), "leaves nothing out of order after a request");
        assert!(!q.ack_at_once(6, 6, 7, false), "the request was answered");
        assert!(q.ack_at_once(7, 7, 8, true), "asks, in order: answered at once, nothing owed");
        assert!(!q.ack_at_once(8, 8, 9, false));
    }

    #[test]
    fn receiver_takes_any_order_once() {
        let mut q = fresh(64);
        assert_eq!(q.receive(2, 0), Arrival::New(0));
        assert_eq!(q.receive(2, 0), Arrival::Duplicate);
        assert_eq!(q.receive(1, 0), Arrival::New(0));
        assert_eq!(q.receive(0, 0), Arrival::New(3), "the held PSNs join");
        assert_eq!(q.receive(1, 3), Arrival::Duplicate);
        assert_eq!(q.receive(3 + 64, 3), Arrival::Beyond);
        // Every order of 0..64 delivers each PSN once and ends with the cumulative at 64.
        let mut q = fresh(64);
        let (mut cum, mut new) = (0, 0);
        for k in 0..64u64 {
            let psn = (k * 37) % 64; // a permutation (37 is odd)
            if let Arrival::New(c) = q.receive(psn, cum) {
                cum = c;
                new += 1;
            }
            assert_eq!(q.receive(psn, cum), Arrival::Duplicate);
        }
        assert_eq!((cum, new), (64, 64));
    }

    #[test]
    fn sack_reports_what_arrived_past_the_cumulative() {
        let mut q = fresh(128);
        for psn in [1, 3, 70] {
            q.receive(psn, 0);
        }
        assert_eq!(q.sack(3, 0), (0, 0b1010));
        // A trigger 64 or more past the cumulative moves the base so that it is reported.
        let (off, bits) = q.sack(70, 0);
        assert_eq!(off, 7);
        assert_eq!(bits, 1 << 63);
    }

    #[test]
    fn sender_resends_only_what_is_lost() {
        let mut q = fresh(64);
        // Sent PSNs 0..10; a SACK reports 2, 3 and 5.
        q.on_sack(0, 0b101100, 0, 10);
        assert!(!q.mark_lost(3, 0, 10), "acknowledged");
        assert!(q.mark_lost(4, 0, 10));
        assert!(!q.mark_lost(4, 0, 10), "marked once");
        assert!(q.mark_lost(1, 0, 10));
        assert_eq!(q.next_resend(0, 10), Some(1));
        q.resent(1);
        assert_eq!(q.next_resend(0, 10), Some(4));
        // A SACK of 4 arriving late takes it off.
        q.on_sack(0, 1 << 4, 0, 10);
        assert_eq!((q.pending, q.next_resend(0, 10)), (0, None));
        // A timeout marks every unacknowledged PSN; the cumulative ACK clears them.
        let marked = (0..10).filter(|&p| q.mark_lost(p, 0, 10)).count();
        assert_eq!(marked, 6, "0..10 less 2, 3, 4 and 5");
        q.advance(0, 6);
        assert_eq!(q.next_resend(6, 10), Some(6));
        assert_eq!(q.pending, 4);
    }

    #[test]
    fn a_timeout_marks_only_the_packets_sent_rto_or_longer_ago() {
        // htsim's UEC sender times each packet from its own send time (`startRTO` at the
        // oldest send time in flight plus `_min_rto`; `rtxTimerExpired` resends that packet).
        let mut q = fresh(64);
        let rto = Time::from_us(100);
        for (psn, at) in [(0, 0), (1, 10), (2, 20), (3, 30)] {
            q.note_sent(psn, Time::from_us(at));
        }
        q.on_sack(0, 1 << 1, 0, 4); // PSN 1 arrived: never timed out
        assert_eq!(q.in_flight(0, 4), 3);
        assert_eq!(q.expire(0, 4, Time::from_us(99), rto), (0, Time::from_us(100)), "not yet");
        assert_eq!(q.expire(0, 4, Time::from_us(115), rto), (1, Time::from_us(120)));
        assert_eq!((q.next_resend(0, 4), q.in_flight(0, 4)), (Some(0), 2), "PSN 0 only, out of the flight");
        assert_eq!(q.expire(0, 4, Time::from_us(130), rto), (2, Time::MAX), "PSNs 2 and 3");
        // A resent PSN is timed from its new send time.
        q.resent(0);
        q.note_sent(0, Time::from_us(140));
        assert_eq!(q.in_flight(0, 4), 1);
        assert_eq!(q.expire(0, 4, Time::from_us(150), rto), (0, Time::from_us(240)));
        // The cumulative ACK takes the SACKed and marked PSNs it passes out of the counts
        // (PSN 3, marked and not yet resent, stays marked).
        q.advance(0, 3);
        assert_eq!((q.sacked, q.pending, q.in_flight(3, 4)), (0, 1, 0));
    }

    #[test]
    fn reps_keeps_the_newest_unmarked_entropies() {
        use crate::rnic::uet_ev::Feedback;
        let cfg = UetConfig { spray: Spray::Reps, reps_buffer: 2, ..UetConfig::default() };
        let mut q = fresh(64);
        for ev in [10, 11, 12] {
            q.ev.feedback(&cfg.ev(), 0, ev, Feedback::Good, Time::ZERO);
        }
        assert_eq!(q.ev.evs.iter().copied().collect::<Vec<_>>(), vec![11, 12]);
    }

    #[test]
    fn fresh_entropies_stay_in_range_and_differ() {
        let evs: Vec<u16> = (0..256).map(|k| fresh_ev(1, 2, 1000, k, 256)).collect();
        assert!(evs.iter().all(|&e| (1000..1256).contains(&e)));
        let distinct = evs.iter().collect::<std::collections::BTreeSet<_>>().len();
        // 256 draws from 256 values: 256 (1 - (1 - 1/256)^256) = 162 distinct expected.
        assert!((140..185).contains(&distinct), "{distinct}");
        assert_eq!(fresh_ev(1, 2, 1000, 7, 256), fresh_ev(1, 2, 1000, 7, 256));
    }

    #[test]
    fn messages_start_on_a_packet_boundary() {
        assert_eq!(align(0, 1000), 0);
        assert_eq!(align(2500, 1000), 3000);
        assert_eq!(align(3000, 1000), 3000);
    }
}
