//! Why packets reach a host out of order under ConWeave, measured at the
//! destination ToR. Every packet of a tracked flow leaves this ToR for its host through one
//! egress queue per class, in the order the ToR sends it on (forwarded now, or released
//! from a reorder queue), and nothing reorders it on that last link; so the ToR can follow,
//! per flow, what a go-back-N receiver makes of that order: the next byte it expects, and
//! the furthest byte sent on. A packet that starts beyond the expected byte arrives out of
//! order. The first one opens a *gap* and names its cause (why the ToR let that packet
//! through); every out-of-order packet until the receiver has caught up with all that was
//! sent on (go-back-N's discarded window, its retransmissions) counts under that gap's
//! cause. The receiver's next byte is taken to be the first one the ToR sends on, unless
//! the flow's packets that reached the ToR before it were all REROUTED (phase 1; under the
//! exact table, through which all of a flow's packets pass tracked while it has room): then
//! the flow's start is still on its old path, and what is sent on counts as out of order
//! (`unseen_start`) until a packet from before all of it comes. Exact for go-back-N without
//! losses past the ToR (lossless fabrics); under IRN the receiver keeps what comes past a
//! gap, which this does not follow. Flows the ToR does not track (`lb_untracked`) are not
//! followed: the run's `ooo_packets` minus the sum here is theirs.
//!
//! A measurement: no rule of ConWeave reads it.

/// Number of causes.
pub const CAUSES: usize = 6;
/// The causes' names, as the counters `reorder_ooo_<name>` and `reorder_gaps_<name>` carry
/// them: a reorder queue released by its deadline before the TAIL came; a REROUTED packet
/// sent on because all of the port's reorder queues were taken; a new epoch's packet sent on
/// while the previous epoch's reorder queue still held packets; a packet of an epoch that
/// started on another uplink than the previous one's (a move without a TAIL: the flow was
/// idle past `conweave_tx_expiry` with packets still on the old path); anything else; a
/// packet sent on before any packet of its flow's old path had reached the ToR (its
/// REROUTED packets came first, the flow's start still behind them on the old path: the
/// ToR had no phase-0 timing to predict the TAIL by and waited `conweave_default_wait`).
pub const CAUSE_NAMES: [&str; CAUSES] = ["deadline", "unheld", "epoch_held", "moved", "other", "unseen_start"];

pub(super) const DEADLINE: u8 = 0;
pub(super) const UNHELD: u8 = 1;
pub(super) const EPOCH_HELD: u8 = 2;
pub(super) const MOVED: u8 = 3;
pub(super) const OTHER: u8 = 4;
pub(super) const UNSEEN_START: u8 = 5;
const NO_GAP: u8 = u8::MAX;

/// Out-of-order arrivals at the hosts behind the destination ToRs, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Causes {
    /// Data packets that reached their host out of order, by the cause of their gap.
    pub ooo: [u64; CAUSES],
    /// Gaps opened, by cause.
    pub gaps: [u64; CAUSES],
}

/// One flow's stream as its host receives it from this ToR.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seen {
    expected: u64,
    high: u64,
    started: bool,
    /// Before the first packet is sent on: whether the packets that reached the ToR so far
    /// are all REROUTED ones (phase 1), so that the receiver still waits for earlier bytes.
    /// After it, while set: `expected` is the lowest byte sent on, above the receiver's.
    headless: bool,
    gap: u8,
    /// The uplink tag of the flow's latest packet, and whether its epoch began on another.
    tag: u16,
    pub(super) moved: bool,
}

pub(super) const SEEN_EMPTY: Seen =
    Seen { expected: 0, high: 0, started: false, headless: false, gap: NO_GAP, tag: 0, moved: false };

impl Seen {
    /// A packet of the flow on uplink `tag`; `new_epoch` when it opens an epoch here;
    /// `behind` when packets of the flow must come before it that have not passed here (a
    /// REROUTED one, behind its epoch's TAIL and phase-0 packets).
    pub(super) fn on_tag(&mut self, tag: u16, new_epoch: bool, behind: bool) {
        if !self.started {
            // Until a packet not behind others comes, the stream's start is still to come.
            self.headless = behind;
        }
        if new_epoch {
            self.moved = self.started && tag != self.tag;
        }
        self.tag = tag;
    }

    /// The packet (`seq`, `payload`) sent on to the host; `cause`: why, should it open a gap.
    pub(super) fn forward(&mut self, seq: u64, payload: u32, cause: u8, c: &mut Causes) {
        if !self.started {
            self.started = true;
            self.expected = seq;
            self.high = seq;
        }
        if self.headless && self.still_headless(seq, payload, c) {
            return;
        }
        let end = seq + payload as u64;
        if seq > self.expected {
            if self.gap == NO_GAP {
                self.gap = cause;
                c.gaps[cause as usize] += 1;
            }
            c.ooo[self.gap as usize] += 1;
        } else if seq == self.expected {
            self.expected = end;
        }
        self.high = self.high.max(end);
        if self.expected >= self.high {
            self.gap = NO_GAP;
        }
    }

    /// `forward` while the stream's start has not been sent on: a packet at or past the
    /// lowest byte sent on arrives out of order (true: counted); one before it is taken as
    /// the receiver's next byte (the start, or go-back-N's resend of it), and the stream is
    /// followed as usual from it (false).
    fn still_headless(&mut self, seq: u64, payload: u32, c: &mut Causes) -> bool {
        if seq < self.expected {
            self.headless = false;
            self.expected = seq;
            return false;
        }
        if self.gap == NO_GAP {
            self.gap = UNSEEN_START;
            c.gaps[UNSEEN_START as usize] += 1;
        }
        c.ooo[self.gap as usize] += 1;
        self.high = self.high.max(seq + payload as u64);
        true
    }
}
