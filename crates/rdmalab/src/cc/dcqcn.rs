//! DCQCN as the reference implements it (its "Mellanox version", CC_MODE 1, `RdmaHw::*Mlx` in
//! `simulation/src/point-to-point/model/rdma-hw.cc`).
//!
//! Only the reaction point lives here. The congestion point is the switch's ECN marking
//! at dequeue (`sim::switch`), and the notification point is the receiver, which sets the
//! CNP flag on the ACK of every CE-marked packet (`RdmaHw::ReceiveUdp`; the reference has no
//! separate CNP packets and no CNP pacing, though `SimConfig::cnp_interval` adds one).
//!
//! The quirks are kept on purpose: the first CNP does not cut the rate; cuts happen on a
//! decrease grid offset 1 ns after the alpha grid; the increase timer is started only by
//! a cut; the target is clamped only after an increase (unless CLAMP_TARGET_RATE); hyper
//! increase is a constant step.
//!
//! The reference has no byte counter. DCQCN defines one (Zhu et al., SIGCOMM 2015, §3.1:
//! an increase event every B bytes sent, beside the timer's), and ConnectX NICs run it
//! (firmware `RPG_BYTE_RESET`, 32,767 bytes by default). `byte_counter` > 0 turns it on:
//! after a cut, every `byte_counter` bytes the group sends is an increase event, counted
//! apart from the timer's (BC beside T); the phase then follows both counts (see
//! [`DcqcnState::increase`]). At 0 (the default) nothing of it runs.

use super::{scale, AckEvent, CcTimers};
use crate::units::{Rate, Time};

/// Timer kind: alpha EWMA update.
pub const ALPHA_TIMER: usize = 0;
/// Timer kind: rate-decrease check.
pub const DECREASE_TIMER: usize = 1;
/// Timer kind: rate-increase (RP) timer.
pub const INCREASE_TIMER: usize = 2;

/// DCQCN parameters (config keys in brackets; defaults are those of the reference's `run.py`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    /// Alpha EWMA gain g [EWMA_GAIN], 1/256.
    pub g: f64,
    /// Alpha update period [ALPHA_RESUME_INTERVAL], 1 us.
    pub alpha_interval: Time,
    /// Rate-decrease check period [RATE_DECREASE_INTERVAL], 4 us.
    pub decrease_interval: Time,
    /// Rate-increase timer period [RP_TIMER], 300 us.
    pub rp_timer: Time,
    /// Fast-recovery steps before additive increase, F [FAST_RECOVERY_TIMES], 1.
    pub fast_recovery_times: u32,
    /// Additive increase step R_AI [RATE_AI], 20 Mb/s.
    pub rate_ai: Rate,
    /// Hyper increase step R_HAI [RATE_HAI], 200 Mb/s.
    pub rate_hai: Rate,
    /// Rate floor [MIN_RATE], 1000 Mb/s.
    pub min_rate: Rate,
    /// Always clamp the target to the current rate on a cut [CLAMP_TARGET_RATE], off.
    pub clamp_target: bool,
    /// Fraction of the rate kept on the first CNP (the attribute RateOnFirstCnp), 1.0.
    pub rate_on_first_cnp: f64,
    /// Alpha taken at the first CNP [initial_alpha], 1.0 as in the reference and the DCQCN
    /// paper: the first cut (at the decrease check after it) keeps about 1/2. ns3-rdma starts
    /// every flow at 0.5, so its first cut keeps about 3/4.
    pub initial_alpha: f64,
    /// Bytes sent per byte-counter increase event, B (`byte_counter`); 0 = none, as the
    /// reference.
    pub byte_counter: u64,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_interval: Time::from_us(1),
            decrease_interval: Time::from_us(4),
            rp_timer: Time::from_us(300),
            fast_recovery_times: 1,
            rate_ai: Rate::mbps(20),
            rate_hai: Rate::mbps(200),
            min_rate: Rate::mbps(1000),
            clamp_target: false,
            rate_on_first_cnp: 1.0,
            initial_alpha: 1.0,
            byte_counter: 0,
        }
    }
}

/// The reaction point's state (as the reference's new QP: alpha = 1, first_cnp = true, Rt = line).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnState {
    /// Target rate Rt.
    pub target: Rate,
    /// Congestion estimate alpha.
    pub alpha: f64,
    /// A CNP arrived since the last alpha update.
    pub alpha_cnp: bool,
    /// A CNP arrived since the last decrease check.
    pub decrease_cnp: bool,
    /// No CNP seen yet.
    pub first_cnp: bool,
    /// Timer increase events since the last cut, T.
    pub stage: u32,
    /// Byte-counter increase events since the last cut, BC (0 without a byte counter).
    pub byte_stage: u32,
    /// Bytes sent since the last byte-counter event or cut (0 until the first cut).
    pub bytes: u64,
    /// A cut has happened: the byte counter runs from then on (as the increase timer).
    pub counting: bool,
    /// The alpha timer's next tick while it is parked (`Time::MAX`: it is not; see
    /// [`DcqcnState::park_alpha`]).
    pub parked: Time,
    /// An ACK left its QP with nothing in the network since the group last looked at its
    /// members (a hint: only then does an alpha tick look whether it may park).
    pub maybe_quiet: bool,
    /// The decrease check's next run while it is parked (`Time::MAX`: it is not; see
    /// [`DcqcnState::park_decrease`]).
    pub decrease_parked: Time,
    /// The tie key the parked check's event took when it was parked.
    pub decrease_key: u64,
    /// Where the next decrease check waits without an event (`sim::mech::dcqcn_checks`), its
    /// host's cycle slot; `u32::MAX`: it does not.
    pub virtual_slot: u32,
    /// The alpha timer is never an event (see [`DcqcnState::tick_lazily`]): `parked` holds
    /// its next tick from the first CNP on, and its ticks run when a CNP or a cut next
    /// touches alpha.
    pub lazy_alpha: bool,
}

impl DcqcnState {
    /// The state of a new QP at line rate.
    pub fn new(line: Rate) -> DcqcnState {
        DcqcnState {
            target: line,
            alpha: 1.0,
            alpha_cnp: false,
            decrease_cnp: false,
            first_cnp: true,
            stage: 0,
            byte_stage: 0,
            bytes: 0,
            counting: false,
            parked: Time::MAX,
            maybe_quiet: false,
            decrease_parked: Time::MAX,
            decrease_key: 0,
            virtual_slot: u32::MAX,
            lazy_alpha: false,
        }
    }

    /// Whether alpha ticks can run lazily in the partition-independent event
    /// order, where an arrival at the picosecond of a tick always comes after it (an
    /// arrival's tie key sorts after every node's, `sim::order`): a CNP's ACK then finds
    /// the ticks due at its own picosecond already run, whenever its event was pushed. A
    /// tick touches alpha and its CNP flag only; alpha is read only by a cut, at a decrease
    /// check, which never falls on a tick (the decrease interval a multiple of the alpha
    /// interval, which is over 1 ns: the checks run 1 ns after a tick). So running a tick
    /// as late as the next CNP or cut, with the same arithmetic in the same order, changes
    /// nothing; a busy group's ticks, one event a microsecond each, then cost no event.
    pub fn can_tick_lazily(p: &DcqcnParams) -> bool {
        let (a, d) = (p.alpha_interval, p.decrease_interval);
        a > Time::from_ns(1) && d.0 % a.0 == 0
    }

    /// Turns lazy alpha ticks on for a new group (see [`DcqcnState::can_tick_lazily`]).
    pub fn tick_lazily(&mut self) {
        debug_assert!(self.first_cnp, "only a fresh state");
        self.lazy_alpha = true;
    }

    /// Whether the alpha timer may be parked under `p` when no ACK can come back sooner than
    /// `min_ack`: an unparked timer's next tick is at most one alpha interval away, so no
    /// CNP can reach the group at that tick, and (the decrease interval a multiple of the
    /// alpha interval, which is over 1 ns) no decrease check can fall on an alpha tick.
    pub fn can_park(p: &DcqcnParams, min_ack: Time) -> bool {
        let (a, d) = (p.alpha_interval, p.decrease_interval);
        a > Time::from_ns(1) && d.0 % a.0 == 0 && a <= min_ack
    }

    /// Parks the alpha timer the tick just re-armed: the group has nothing in
    /// the network, so no CNP can reach it before it sends again, and alpha is read only by
    /// a cut. Its ticks then run later, all at once and with the same arithmetic in the same
    /// order: when the group sends ([`DcqcnState::unpark_alpha`]) or before a cut. An idle
    /// QP's DCQCN state costs no event per microsecond.
    pub fn park_alpha(&mut self, timers: &mut CcTimers) {
        self.parked = timers.due[ALPHA_TIMER];
        timers.due[ALPHA_TIMER] = Time::MAX;
        timers.dirty &= !(1 << ALPHA_TIMER);
    }

    /// The group sends again at `now`: the parked ticks due by then run and the timer is
    /// armed at the next one (a tick at `now` itself commutes with the send, which reads no
    /// alpha).
    pub fn unpark_alpha(&mut self, p: &DcqcnParams, timers: &mut CcTimers, now: Time) {
        if self.parked == Time::MAX || self.lazy_alpha {
            return;
        }
        self.catch_up_alpha(p, now + Time(1));
        timers.arm(ALPHA_TIMER, self.parked);
        self.parked = Time::MAX;
    }

    /// Whether the decrease check may be parked too, where `min_rtt` (the link delays of the
    /// shortest round trip; its transmissions make every real one longer) is at least a
    /// decrease interval: then no CNP reaches the group before the first check after it sends
    /// again, which therefore cannot cut, wherever among that picosecond's events it runs.
    pub fn can_park_decrease(p: &DcqcnParams, min_rtt: Time) -> bool {
        p.decrease_interval <= min_rtt
    }

    /// Parks the decrease check just re-armed, at a check that found no CNP in
    /// a group whose alpha timer is parked (nothing in the network, so no CNP before the group
    /// sends again). `key` is the tie key its event would have taken now
    /// (`EventQueue::reserve_seq`): a group that sends again before that check is due gets
    /// the very event back ([`DcqcnState::unpark_decrease`]).
    pub fn park_decrease(&mut self, timers: &mut CcTimers, key: u64) {
        debug_assert!(!self.decrease_cnp && (self.parked != Time::MAX || self.lazy_alpha));
        self.decrease_parked = timers.due[DECREASE_TIMER];
        self.decrease_key = key;
        timers.due[DECREASE_TIMER] = Time::MAX;
        timers.dirty &= !(1 << DECREASE_TIMER);
    }

    /// The group sends again at `now`. Before the parked check is due, the timer is set to it
    /// and its reserved key is returned, for the caller to push the event the check would
    /// have had. Later, the checks due by now found no CNP (none could come) and the timer
    /// is armed at the next point of the same grid (`None`: an ordinary arming).
    pub fn unpark_decrease(&mut self, p: &DcqcnParams, timers: &mut CcTimers, now: Time) -> Option<u64> {
        let due = std::mem::replace(&mut self.decrease_parked, Time::MAX);
        if due == Time::MAX {
            return None;
        }
        if due > now {
            timers.due[DECREASE_TIMER] = due;
            return Some(self.decrease_key);
        }
        let missed = (now.0 - due.0) / p.decrease_interval.0 + 1;
        timers.arm(DECREASE_TIMER, Time(due.0 + missed * p.decrease_interval.0));
        None
    }

    /// Runs the parked alpha ticks due before `t`.
    fn catch_up_alpha(&mut self, p: &DcqcnParams, t: Time) {
        while self.parked < t {
            if self.alpha == 0.0 && !self.alpha_cnp {
                // Decayed to zero (after some 190,000 quiet ticks): every tick left keeps it.
                let left = (t.0 - self.parked.0).div_ceil(p.alpha_interval.0);
                self.parked = Time(self.parked.0 + left * p.alpha_interval.0);
                return;
            }
            self.update_alpha(p);
            self.parked += p.alpha_interval;
        }
    }

    /// The group sent `bytes` more (called only when `p.byte_counter` > 0): every
    /// `byte_counter` of them after a cut is an increase event.
    pub fn on_sent(&mut self, p: &DcqcnParams, rate: &mut Rate, line: Rate, bytes: u64) {
        if !self.counting {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= p.byte_counter {
            self.bytes -= p.byte_counter;
            self.increase(p, rate, line, Counter::Bytes);
        }
    }

    /// A CNP-flagged ACK/NACK (`cnp_received_mlx`); other ACKs do nothing.
    pub fn on_ack(&mut self, p: &DcqcnParams, timers: &mut CcTimers, rate: &mut Rate, ack: &AckEvent<'_>) {
        if !ack.cnp {
            return;
        }
        // A CNP comes on an ACK, so the group had a packet in the network and is unparked.
        debug_assert!(self.lazy_alpha || self.parked == Time::MAX, "a CNP reached a parked group");
        debug_assert_eq!(self.decrease_parked, Time::MAX, "a CNP reached a parked decrease check");
        if self.lazy_alpha {
            self.catch_up_alpha(p, ack.now + Time(1)); // a tick now came first (see can_tick_lazily)
        } else {
            self.unpark_alpha(p, timers, ack.now);
        }
        self.alpha_cnp = true;
        self.decrease_cnp = true;
        if self.first_cnp {
            self.alpha = p.initial_alpha;
            self.alpha_cnp = false;
            match self.lazy_alpha {
                true => self.parked = ack.now + p.alpha_interval,
                false => timers.arm(ALPHA_TIMER, ack.now + p.alpha_interval),
            }
            // +1 ns: the decrease check runs just after the alpha update of the same µs.
            timers.arm(DECREASE_TIMER, ack.now + p.decrease_interval + Time::from_ns(1));
            *rate = scale(*rate, p.rate_on_first_cnp);
            self.target = *rate;
            self.first_cnp = false;
        }
    }

    /// Timer `kind` fired at `now`. Each handler re-arms itself first (as the reference's
    /// `RdmaHw::CheckRateDecreaseMlx` and `RateIncEventTimerMlx` do).
    pub fn on_timer(
        &mut self,
        p: &DcqcnParams,
        timers: &mut CcTimers,
        rate: &mut Rate,
        line: Rate,
        kind: usize,
        now: Time,
    ) {
        match kind {
            ALPHA_TIMER => {
                timers.arm(ALPHA_TIMER, now + p.alpha_interval);
                self.update_alpha(p);
            }
            DECREASE_TIMER => {
                timers.arm(DECREASE_TIMER, now + p.decrease_interval);
                if self.decrease_cnp {
                    self.catch_up_alpha(p, now); // ticks of a parked timer before this check
                    self.cut(p, rate);
                    timers.arm(INCREASE_TIMER, now + p.rp_timer);
                }
            }
            INCREASE_TIMER => {
                let before = (*rate, self.target);
                self.increase(p, rate, line, Counter::Timer);
                // With the target at line rate, a tick that moved nothing is a fixed point
                // (Rc/2 + Rt/2 in whole bits per second settles at Rt - 1): every later tick
                // would leave both rates as they are, and only T grow, which nothing reads
                // before the next cut resets it. That cut arms the timer again; until then
                // no tick is scheduled.
                if before != (*rate, self.target) || self.target != line {
                    timers.arm(INCREASE_TIMER, now + p.rp_timer);
                }
            }
            _ => {}
        }
    }

    /// alpha = (1-g) alpha (+ g if a CNP arrived), then clear the flag.
    fn update_alpha(&mut self, p: &DcqcnParams) {
        self.alpha = if self.alpha_cnp { (1.0 - p.g) * self.alpha + p.g } else { (1.0 - p.g) * self.alpha };
        self.alpha_cnp = false;
    }

    /// The cut: clamp Rt only after an increase (or always with CLAMP_TARGET_RATE), then
    /// Rc = max(min, Rc (1 - alpha/2)), T = 0.
    fn cut(&mut self, p: &DcqcnParams, rate: &mut Rate) {
        if p.clamp_target || self.stage != 0 {
            self.target = *rate;
        }
        *rate = scale(*rate, 1.0 - self.alpha / 2.0).max(p.min_rate);
        self.stage = 0;
        self.decrease_cnp = false;
        self.byte_stage = 0;
        self.bytes = 0;
        self.counting = p.byte_counter > 0;
    }

    /// One increase event of `counter`: its step, then Rc = Rc/2 + Rt/2, then its count +1.
    ///
    /// Timer only (the reference): fast recovery while T < F, additive at T == F, hyper
    /// beyond. With a byte counter, DCQCN's rule on both counts (§3.1 of the DCQCN paper):
    /// fast recovery while both are below F, hyper increase once both are past F, additive
    /// otherwise (counts taken before this event's +1, as the timer-only rule does).
    fn increase(&mut self, p: &DcqcnParams, rate: &mut Rate, line: Rate, counter: Counter) {
        let f = p.fast_recovery_times;
        let (t, b) = (self.stage, self.byte_stage);
        let step = if p.byte_counter == 0 {
            match t.cmp(&f) {
                std::cmp::Ordering::Less => None,
                std::cmp::Ordering::Equal => Some(p.rate_ai),
                std::cmp::Ordering::Greater => Some(p.rate_hai),
            }
        } else if t.max(b) < f {
            None
        } else if t.min(b) > f {
            Some(p.rate_hai)
        } else {
            Some(p.rate_ai)
        };
        if let Some(step) = step {
            self.target = Rate(self.target.0 + step.0).min(line);
        }
        *rate = Rate(rate.0 / 2 + self.target.0 / 2);
        match counter {
            Counter::Timer => self.stage += 1,
            Counter::Bytes => self.byte_stage += 1,
        }
    }
}

/// Which counter raised an increase event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counter {
    Timer,
    Bytes,
}

#[cfg(test)]
#[path = "dcqcn_tests.rs"]
mod tests;
