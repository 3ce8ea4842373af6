//! IRN's loss recovery in the RNIC (Mittal et al., "Revisiting Network Support for RDMA",
//! SIGCOMM'18, §3): the receiver keeps out-of-order packets and NACKs each one with the
//! cumulative ACK and the sequence that triggered it; the sender keeps what those NACKs
//! selectively acknowledged, retransmits only the holes, caps the bytes past the cumulative
//! ACK at one BDP (BDP-FC), and picks a short or a long timeout by how much is outstanding.
//!
//! This module holds the state and its rules; `sim::mech::irn` hands them the QP at the
//! hook points. Sequence numbers are byte offsets in the QP's stream, as everywhere here;
//! a packet's boundaries are the sender's segmentation (MTU cuts within a message), so the
//! holes between held or acknowledged ranges are whole packets.

use std::collections::VecDeque;

use crate::units::Time;

/// `[fabric.irn]`, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrnConfig {
    /// Timeout when at most `low_packets` packets are outstanding (the paper's RTO_low:
    /// 100 µs, §4.1; ConWeave's artifact sets the same).
    pub rto_low: Time,
    /// Timeout otherwise (RTO_high: 320 µs, the paper's worst-case queueing estimate).
    pub rto_high: Time,
    /// The paper's N: RTO_low applies with at most this many MTU packets outstanding (3).
    pub low_packets: u32,
    /// BDP-FC's cap in bytes; `None`: the topology's largest bandwidth-delay product (what
    /// ConWeave's artifact uses, one value for every QP).
    pub bdp: Option<u64>,
}

impl Default for IrnConfig {
    fn default() -> Self {
        IrnConfig { rto_low: Time::from_us(100), rto_high: Time::from_us(320), low_packets: 3, bdp: None }
    }
}

impl IrnConfig {
    /// The timeout for `outstanding` bytes past the cumulative ACK: RTO_low when they fit in
    /// `low_packets` MTU packets. Chosen when the timer is (re)armed.
    #[inline]
    pub fn rto(&self, outstanding: u64, mtu: u32) -> Time {
        if outstanding <= self.low_packets as u64 * mtu as u64 {
            self.rto_low
        } else {
            self.rto_high
        }
    }

    /// BDP-FC's cap as a window in bytes: whole MTU packets, at least one.
    pub fn window(&self, path_bdp: u64, mtu: u32) -> u64 {
        let bdp = self.bdp.unwrap_or(path_bdp);
        (bdp / mtu as u64).max(1) * mtu as u64
    }
}

/// Disjoint, sorted byte ranges `[start, end)` above a moving base: what a receiver holds
/// out of order, or what a sender knows was received. Adjacent ranges are merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges {
    ranges: Vec<(u64, u64)>,
}

impl Ranges {
    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Forgets everything (a slot reused by another QP). Keeps the capacity.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Bytes covered.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// The end of the highest range (0 when empty).
    pub fn highest_end(&self) -> u64 {
        self.ranges.last().map_or(0, |r| r.1)
    }

    /// True when `[start, end)` is wholly covered.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.ranges.iter().any(|&(s, e)| s <= start && end <= e)
    }

    /// Adds `[start, end)`; returns the bytes newly covered.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let before = self.bytes();
        // First range that ends at or after `start` (could merge with it).
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            s = s.min(self.ranges[j].0);
            e = e.max(self.ranges[j].1);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once((s, e)));
        self.bytes() - before
    }

    /// Drops everything below `base`. If a range starts at `base`, removes it and returns
    /// its end (the base may move there); else returns `base`.
    pub fn advance(&mut self, base: u64) -> u64 {
        let below = self.ranges.partition_point(|r| r.1 <= base);
        self.ranges.drain(..below);
        match self.ranges.first() {
            Some(&(s, e)) if s <= base => {
                self.ranges.remove(0);
                e.max(base)
            }
            _ => base,
        }
    }

    /// The first byte at or after `from` and below `limit` that no range covers.
    pub fn first_gap(&self, from: u64, limit: u64) -> Option<u64> {
        let mut at = from;
        for &(s, e) in &self.ranges {
            if at >= limit {
                return None;
            }
            if e <= at {
                continue;
            }
            if s > at {
                return Some(at);
            }
            at = e;
        }
        (at < limit).then_some(at)
    }
}

/// One QP's IRN state: the sender's half and the receiver's half of the same slot, like
/// `Qp` and its `RxState`.
#[derive(Clone, Debug, Default)]
pub struct IrnQp {
    /// Sender: byte ranges above the cumulative ACK that NACKs reported received.
    pub sacked: Ranges,
    /// Sender: in loss recovery.
    pub recovery: bool,
    /// Sender: the highest byte sent when recovery began; it ends when the cumulative ACK
    /// reaches it.
    pub recovery_point: u64,
    /// Sender: bytes below this not covered by `sacked` are taken as lost (the highest
    /// selectively acknowledged byte, or everything sent after a timeout). A packet whose
    /// NACK was lost is among them, though its receiver holds it: the paper's rule (§3.1),
    /// since no other report names it.
    pub lost_below: u64,
    /// Sender: the next byte whose loss is still to be repaired (holes below it were
    /// retransmitted this recovery).
    pub retx_from: u64,
    /// Receiver: byte ranges held beyond the next expected byte.
    pub held: Ranges,
    /// Receiver: the ends of messages whose last packet is held, with that packet's
    /// application header slot (raw), in order of end: their receive completions wait
    /// until the bytes before them arrive. Only QPs an application listens on record them.
    pub held_ends: VecDeque<(u64, u32)>,
}

impl IrnQp {
    /// Back to a fresh QP's state, keeping the ranges' capacity.
    pub fn reset(&mut self) {
        self.sacked.clear();
        self.held.clear();
        self.held_ends.clear();
        self.recovery = false;
        self.recovery_point = 0;
        self.lost_below = 0;
        self.retx_from = 0;
    }

    /// Sender: the next byte to send. A hole taken as lost comes first (a retransmission),
    /// then new data from `high_sent`.
    pub fn next_to_send(&self, snd_una: u64, high_sent: u64) -> u64 {
        if !self.recovery {
            return high_sent;
        }
        let from = self.retx_from.max(snd_una);
        let limit = self.lost_below.min(high_sent);
        self.sacked.first_gap(from, limit).unwrap_or(high_sent)
    }

    /// Sender: the cumulative ACK moved to `snd_una`; leaves recovery once it passes the
    /// recovery point (§3.1).
    pub fn on_cumulative_ack(&mut self, snd_una: u64) {
        self.sacked.advance(snd_una);
        if self.recovery && snd_una >= self.recovery_point {
            self.recovery = false;
            // The next recovery judges losses by the reports it hears, not by this one's.
            self.lost_below = 0;
        }
    }

    /// Sender: a NACK reported `[start, end)` received. Returns true when this starts a
    /// recovery (the caller counts a retry round).
    pub fn on_sack(&mut self, start: u64, end: u64, snd_una: u64, high_sent: u64) -> bool {
        if start >= snd_una {
            self.sacked.insert(start, end);
        }
        self.lost_below = self.lost_below.max(self.sacked.highest_end());
        self.enter_recovery(snd_una, high_sent)
    }

    /// Sender: the timer fired; everything outstanding and not acknowledged is lost.
    pub fn on_timeout(&mut self, snd_una: u64, high_sent: u64) {
        self.lost_below = high_sent;
        self.recovery = false; // restart the pass over the holes from the cumulative ACK
        self.enter_recovery(snd_una, high_sent);
    }

    fn enter_recovery(&mut self, snd_una: u64, high_sent: u64) -> bool {
        if self.recovery {
            return false;
        }
        self.recovery = true;
        self.recovery_point = high_sent;
        self.retx_from = snd_una;
        true
    }

    /// Receiver: a packet `[start, end)` arrived with `expected` the next in-order byte.
    /// Returns what it is and the new next expected byte.
    pub fn receive(&mut self, start: u64, end: u64, expected: u64) -> (Arrival, u64) {
        if end <= expected || self.held.covers(start, end) {
            return (Arrival::Duplicate, expected);
        }
        if start > expected {
            self.held.insert(start, end);
            return (Arrival::OutOfOrder, expected);
        }
        // In order: the held ranges it joins become in order too.
        (Arrival::InOrder, self.held.advance(end))
    }

    /// Receiver: a held packet ends a message at `end` (header slot `hdr`). Kept in order
    /// of end; packets mostly arrive in order, so the search runs from the back.
    pub fn hold_message_end(&mut self, end: u64, hdr: u32) {
        let at = self.held_ends.iter().rposition(|e| e.0 < end).map_or(0, |i| i + 1);
        self.held_ends.insert(at, (end, hdr));
    }

    /// Receiver: the first held message end at or below `expected` (now in order), taken.
    pub fn take_message_end(&mut self, expected: u64) -> Option<(u64, u32)> {
        match self.held_ends.front() {
            Some(&(end, _)) if end <= expected => self.held_ends.pop_front(),
            _ => None,
        }
    }
}

/// Every QP's IRN state on one simulation, by QP slot (grown on first use: a receiver's
/// mirror slot in a parallel run is made there), with the run's settings.
#[derive(Clone, Debug)]
pub struct IrnTable {
    /// The settings.
    pub cfg: IrnConfig,
    /// BDP-FC's window in bytes (the configured BDP, else the topology's largest), whole
    /// MTU packets.
    pub window: u64,
    /// Payload bytes receivers hold out of order (part of byte conservation).
    pub held_bytes: u64,
    qps: Vec<IrnQp>,
}

impl IrnTable {
    /// An empty table; `window` as [`IrnConfig::window`] gives it.
    pub fn new(cfg: IrnConfig, window: u64) -> IrnTable {
        IrnTable { cfg, window, held_bytes: 0, qps: Vec::new() }
    }

    /// The state of QP slot `i`, made fresh if the slot was never used.
    pub fn qp(&mut self, i: usize) -> &mut IrnQp {
        if self.qps.len() <= i {
            self.qps.resize_with(i + 1, IrnQp::default);
        }
        &mut self.qps[i]
    }

    /// QP slot `i` sent a packet ending at `end`: the next byte it sends (see
    /// [`IrnQp::next_to_send`]).
    #[inline]
    pub fn after_send(&mut self, i: usize, end: u64, snd_una: u64, high_sent: u64) -> u64 {
        match self.qps.get_mut(i) {
            Some(q) if q.recovery => {
                // A repair (a hole lies below `lost_below`) moves the pass on; new data sent
                // meanwhile does not, or a hole whose later packets are reported after it
                // went would be skipped until the timeout.
                if end <= q.lost_below {
                    q.retx_from = q.retx_from.max(end); // the hole below `end` went out
                }
                q.next_to_send(snd_una, high_sent)
            }
            _ => high_sent,
        }
    }
}

/// What a data packet was to an IRN receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The next expected bytes (and any held bytes they join).
    InOrder,
    /// Beyond a gap: held, NACKed.
    OutOfOrder,
    /// Already received: discarded.
    Duplicate,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_advance() {
        let mut r = Ranges::default();
        assert_eq!(r.insert(2000, 3000), 1000);
        assert_eq!(r.insert(4000, 5000), 1000);
        assert_eq!(r.insert(3000, 4000), 1000); // joins both
        assert_eq!(r.ranges, vec![(2000, 5000)]);
        assert_eq!(r.insert(2500, 3500), 0);
        assert_eq!(r.advance(1000), 1000);
        assert_eq!(r.advance(2000), 5000);
        assert!(r.is_empty());
    }

    #[test]
    fn gaps_below_the_limit() {
        let mut r = Ranges::default();
        r.insert(1000, 2000);
        r.insert(3000, 4000);
        assert_eq!(r.first_gap(0, 4000), Some(0));
        assert_eq!(r.first_gap(1000, 4000), Some(2000));
        assert_eq!(r.first_gap(3000, 4000), None);
        assert_eq!(r.first_gap(2000, 2000), None);
    }

    #[test]
    fn sender_retransmits_only_holes_below_the_highest_sack() {
        let mut q = IrnQp::default();
        // Sent [0, 10000); packet [2000, 3000) lost; NACKs for 3000.. arrive.
        assert!(q.on_sack(3000, 4000, 2000, 10_000));
        assert!(!q.on_sack(4000, 5000, 2000, 10_000));
        assert_eq!(q.next_to_send(2000, 10_000), 2000);
        q.retx_from = 3000; // the hole went out
        assert_eq!(q.next_to_send(2000, 10_000), 10_000, "[5000, 10000) is in flight, not lost");
        q.on_cumulative_ack(5000);
        assert!(q.recovery);
        q.on_cumulative_ack(10_000);
        assert!(!q.recovery);
    }

    #[test]
    fn new_data_sent_in_recovery_does_not_skip_a_hole_reported_later() {
        // Sent [0, 10000) in packets of 1000; [2000, 3000) and [5000, 6000) lost. The first
        // NACK (for 3000) starts recovery; the hole goes out, then new data [10000, 11000)
        // while the NACKs for 4000.. are still on their way. The NACK for 6000 then shows the
        // second hole, which goes next, not at the timeout (as a 10 MB IRN flow at 1 % loss
        // did, one RTO_high per such pair of losses).
        let mut t = IrnTable::new(IrnConfig::default(), 10_000);
        assert!(t.qp(0).on_sack(3000, 4000, 2000, 10_000));
        assert_eq!(t.qp(0).next_to_send(2000, 10_000), 2000);
        assert_eq!(t.after_send(0, 3000, 2000, 10_000), 10_000, "no other hole known yet");
        assert_eq!(t.after_send(0, 11_000, 2000, 11_000), 11_000);
        assert!(!t.qp(0).on_sack(4000, 5000, 2000, 11_000));
        assert!(!t.qp(0).on_sack(6000, 7000, 2000, 11_000));
        assert_eq!(t.qp(0).next_to_send(2000, 11_000), 5000);
        assert_eq!(t.after_send(0, 6000, 2000, 11_000), 11_000);
    }

    #[test]
    fn receiver_holds_and_releases() {
        let mut q = IrnQp::default();
        assert_eq!(q.receive(1000, 2000, 0), (Arrival::OutOfOrder, 0));
        assert_eq!(q.receive(1000, 2000, 0), (Arrival::Duplicate, 0));
        assert_eq!(q.receive(0, 1000, 0), (Arrival::InOrder, 2000));
    }

    #[test]
    fn held_message_ends_complete_in_order_once_in_order() {
        let mut q = IrnQp::default();
        q.hold_message_end(3000, 7);
        q.hold_message_end(2000, 5); // arrived after a later message's end
        q.hold_message_end(5000, 9);
        assert_eq!(q.take_message_end(1000), None);
        assert_eq!(q.take_message_end(3000), Some((2000, 5)));
        assert_eq!(q.take_message_end(3000), Some((3000, 7)));
        assert_eq!(q.take_message_end(3000), None);
        q.reset();
        assert_eq!(q.take_message_end(u64::MAX), None);
    }

    #[test]
    fn timeout_value_by_outstanding_packets() {
        let c = IrnConfig::default();
        assert_eq!(c.rto(3000, 1000), Time::from_us(100));
        assert_eq!(c.rto(3001, 1000), Time::from_us(320));
        assert_eq!(c.window(104_000, 1000), 104_000);
        assert_eq!(c.window(500, 1000), 1000);
    }
}
