//! One pacing clock per tenant state, and when its HPCC samples are meaningful.
//!
//! Under the tenant defense the QPs of a (NIC, tenant) state take turns under a single
//! clock at the state's rate, as one QP would, instead of each running its own clock at
//! rate / n. n clocks at R/n send the same bytes as one clock at R, but not at the same
//! moments: their phases drift (each QP's gap restarts when the round robin reaches it), so
//! the tenant's packets reach the bottleneck in clumps. HPCC reads utilisation from the INT
//! records its own packets carry, each weighted by the time since the previous one, so a
//! clumped sender samples the queue at other moments than a smooth one; near the target its
//! only force towards fairness is the additive increase, 0.1 % of its rate per round trip,
//! so a bias of a few 1e-4 in the utilisation it reads moves the shares. A NIC that enforces
//! a tenant's rate does it with one rate limiter per tenant; this is that limiter. The
//! windows stay per QP (the state's window split like its rate).
//!
//! A tenant state also pauses, where a long-lived QP rarely does: a staggered tenant runs
//! out of data between chunks. The first INT sample after a pause would span it, measure
//! only the others' traffic and read it as room for the tenant's own rate. So a state
//! remembers when it last ran out of data, and the first ACK of a packet sent after that
//! only records the hops again (as a new QP's first ACK does), keeping rate and EWMA.

use crate::units::Time;

/// What to do with an INT sample of a tenant state (see [`TenantPacer::classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntSample {
    /// A sample between two packets of one busy period: use it.
    Use,
    /// The first packet after a pause: record its hops as the new baseline only.
    Rebase,
    /// A packet from before the pause acknowledged after the new baseline: ignore it.
    Skip,
}

/// The clock of one tenant state and its pauses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TenantPacer {
    /// Earliest time the state's next packet may leave.
    pub next: Time,
    /// The gap between the last packet sent and `next`.
    pub gap: Time,
    /// Wire bytes of the last packet sent (0: none yet).
    pub wire: u32,
    /// When the state last sent a packet that left no member with data.
    pub paused_at: Option<Time>,
    /// An ACK of a packet sent after `paused_at` has been seen since.
    pub rebased: bool,
}

impl TenantPacer {
    /// A member sent a packet of `wire` bytes at `now`; the next one, of any member, waits
    /// `gap` (that packet's time at the state's rate). `more`: some member still has data.
    pub fn sent(&mut self, now: Time, wire: u32, gap: Time, more: bool) -> Time {
        self.next = now + gap;
        self.gap = gap;
        self.wire = wire;
        if !more {
            self.paused_at = Some(now);
            self.rebased = false;
        }
        self.next
    }

    /// The state's rate changed and HPCC re-times the pending gap (the reference's
    /// `RdmaHw::ChangeRate`): `gap` is the last packet's time at the new rate. Returns the new
    /// `next`.
    pub fn retime(&mut self, gap: Time) -> Time {
        self.next = Time((self.next.0 + gap.0).saturating_sub(self.gap.0));
        self.gap = gap;
        self.next
    }

    /// How to treat the INT records of an ACK for a packet sent at `sent`.
    pub fn classify(&mut self, sent: Time) -> IntSample {
        let Some(paused) = self.paused_at else { return IntSample::Use };
        match (sent > paused, self.rebased) {
            (true, true) | (false, false) => IntSample::Use,
            (true, false) => {
                self.rebased = true;
                IntSample::Rebase
            }
            (false, true) => IntSample::Skip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(t: u64) -> Time {
        Time::from_ns(t)
    }

    #[test]
    fn one_gap_after_each_packet_and_retimed_from_the_last() {
        let mut p = TenantPacer::default();
        assert_eq!(p.sent(ns(100), 1000, ns(80), true), ns(180));
        // Twice the rate: half the gap, counted from the same packet.
        assert_eq!(p.retime(ns(40)), ns(140));
        // Back to the old rate: the full gap again.
        assert_eq!(p.retime(ns(80)), ns(180));
        assert_eq!(p.sent(ns(200), 125, ns(10), true), ns(210));
    }

    #[test]
    fn the_first_ack_after_a_pause_rebases_once() {
        let mut p = TenantPacer::default();
        p.sent(ns(100), 1000, ns(10), true);
        assert_eq!(p.classify(ns(100)), IntSample::Use, "never paused");
        p.sent(ns(110), 1000, ns(10), false); // the last packet with data: a pause
        assert_eq!(p.classify(ns(100)), IntSample::Use, "sent before the pause");
        assert_eq!(p.classify(ns(110)), IntSample::Use, "the packet that ended the busy period");
        assert_eq!(p.classify(ns(500)), IntSample::Rebase, "the first one after it");
        assert_eq!(p.classify(ns(510)), IntSample::Use);
        assert_eq!(p.classify(ns(105)), IntSample::Skip, "late ACK of an old packet");
        p.sent(ns(600), 1000, ns(10), false);
        assert_eq!(p.classify(ns(700)), IntSample::Rebase, "every pause");
    }
}
