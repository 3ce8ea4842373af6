//! DCQCN as the reference implements it (its "Mellanox version", CC_MODE 1, MODEL.md §3).
//!
//! Only the reaction point lives here. The congestion point is the switch's ECN marking
//! at dequeue (`sim::switch`), and the notification point is the receiver, which sets the
//! CNP flag on the ACK of every CE-marked packet (MODEL.md §2.4; the reference has no
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

/// DCQCN parameters (config keys in brackets; defaults are run.py's, FORMATS.md §4).
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

/// The reaction point's state (MODEL.md §2.1: alpha = 1, first_cnp = true, Rt = line).
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
        }
    }

    /// Whether the alpha timer may be parked under `p` when no ACK can come back sooner than
    /// `min_ack`: an unparked timer's next tick is at most one alpha interval away, so no
    /// CNP can reach the group at that tick, and (the decrease interval a multiple of the
    /// alpha interval, which is over 1 ns) no decrease check can fall on an alpha tick.
    pub fn can_park(p: &DcqcnParams, min_ack: Time) -> bool {
        let (a, d) = (p.alpha_interval, p.decrease_interval);
        a > Time::from_ns(1) && d.0 % a.0 == 0 && a <= min_ack
    }

    /// Parks the alpha timer the tick just re-armed (issue 45 §2): the group has nothing in
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
        if self.parked == Time::MAX {
            return;
        }
        self.catch_up_alpha(p, now + Time(1));
        timers.arm(ALPHA_TIMER, self.parked);
        self.parked = Time::MAX;
    }

    /// Runs the parked alpha ticks due before `t`.
    fn catch_up_alpha(&mut self, p: &DcqcnParams, t: Time) {
        while self.parked < t {
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
        debug_assert_eq!(self.parked, Time::MAX, "a CNP reached a parked group");
        self.unpark_alpha(p, timers, ack.now);
        self.alpha_cnp = true;
        self.decrease_cnp = true;
        if self.first_cnp {
            self.alpha = p.initial_alpha;
            self.alpha_cnp = false;
            timers.arm(ALPHA_TIMER, ack.now + p.alpha_interval);
            // +1 ns: the decrease check runs just after the alpha update of the same µs.
            timers.arm(DECREASE_TIMER, ack.now + p.decrease_interval + Time::from_ns(1));
            *rate = scale(*rate, p.rate_on_first_cnp);
            self.target = *rate;
            self.first_cnp = false;
        }
    }

    /// Timer `kind` fired at `now`. Each handler re-arms itself first (MODEL.md §7).
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
                timers.arm(INCREASE_TIMER, now + p.rp_timer);
                self.increase(p, rate, line, Counter::Timer);
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
mod tests {
    use super::*;

    const LINE: Rate = Rate::gbps(100);

    fn ack(now: Time, cnp: bool) -> AckEvent<'static> {
        AckEvent { now, seq: 1000, snd_nxt: 2000, cnp, nack: false, int: None, mtu: 1000, int_multi: 1, share: Rate(0) }
    }

    fn fire(s: &mut DcqcnState, p: &DcqcnParams, t: &mut CcTimers, rate: &mut Rate, kind: usize) -> Time {
        let now = t.due[kind];
        s.on_timer(p, t, rate, LINE, kind, now);
        now
    }

    #[test]
    fn first_cnp_arms_timers_without_a_cut() {
        let p = DcqcnParams::default();
        let mut s = DcqcnState::new(LINE);
        let mut t = CcTimers::default();
        let mut rate = LINE;
        s.on_ack(&p, &mut t, &mut rate, &ack(Time::from_us(10), false));
        assert_eq!(t.dirty, 0, "no CNP, nothing armed");
        s.on_ack(&p, &mut t, &mut rate, &ack(Time::from_us(10), true));
        assert_eq!(rate, LINE, "no cut on the first CNP");
        assert_eq!(s.alpha, 1.0);
        assert!(!s.alpha_cnp && s.decrease_cnp && !s.first_cnp);
        assert_eq!(t.due[ALPHA_TIMER], Time::from_us(11));
        assert_eq!(t.due[DECREASE_TIMER], Time::from_ns(14_001));
        assert_eq!(t.due[INCREASE_TIMER], Time::MAX);
    }

    #[test]
    fn cut_recovery_additive_and_hyper_steps() {
        let p = DcqcnParams::default();
        let mut s = DcqcnState::new(LINE);
        let mut t = CcTimers::default();
        let mut rate = LINE;
        s.on_ack(&p, &mut t, &mut rate, &ack(Time::ZERO, true));
        // Alpha at 1 us without a new CNP: (1 - 1/256) * 1.
        fire(&mut s, &p, &mut t, &mut rate, ALPHA_TIMER);
        let a1 = 1.0 - 1.0 / 256.0;
        assert_eq!(s.alpha, a1);
        for _ in 0..3 {
            fire(&mut s, &p, &mut t, &mut rate, ALPHA_TIMER);
        }
        let a4 = a1 * a1 * a1 * a1;
        assert!((s.alpha - a4).abs() < 1e-15);
        // Decrease check at 4 us + 1 ns: Rc = 100G * (1 - alpha/2), truncated; Rt stays.
        let now = fire(&mut s, &p, &mut t, &mut rate, DECREASE_TIMER);
        assert_eq!(now, Time::from_ns(4_001));
        let cut = (100e9 * (1.0 - s.alpha / 2.0)) as u64;
        assert_eq!(rate, Rate(cut));
        assert_eq!(s.target, LINE, "no clamp when T == 0");
        assert_eq!(t.due[INCREASE_TIMER], Time::from_ns(304_001));
        assert_eq!(t.due[DECREASE_TIMER], Time::from_ns(8_001));
        // Next check without a CNP: nothing.
        fire(&mut s, &p, &mut t, &mut rate, DECREASE_TIMER);
        assert_eq!(rate, Rate(cut));
        // Fast recovery: Rc/2 + Rt/2.
        fire(&mut s, &p, &mut t, &mut rate, INCREASE_TIMER);
        let r1 = cut / 2 + 50_000_000_000;
        assert_eq!(rate, Rate(r1));
        assert_eq!(s.stage, 1);
        // T == F: additive, Rt capped at line.
        fire(&mut s, &p, &mut t, &mut rate, INCREASE_TIMER);
        assert_eq!(s.target, LINE);
        assert_eq!(rate, Rate(r1 / 2 + 50_000_000_000));
        assert_eq!(t.due[INCREASE_TIMER], Time::from_ns(904_001));
    }

    #[test]
    fn initial_alpha_one_half_makes_the_first_cut_keep_three_quarters() {
        // ns3-rdma (`qbb-net-device.cc`) starts alpha at 0.5 and each CNP's cut keeps
        // 1 - alpha/2 of the rate. Here the first CNP's decrease check (4 us + 1 ns later,
        // after four alpha decays without a CNP) keeps 1 - a0 (1 - 1/256)^4 / 2: 0.7539 for
        // ns3-rdma's a0 = 0.5, 0.5078 for the reference's 1.
        let decay = (1.0 - 1.0f64 / 256.0).powi(4);
        for (alpha0, kept) in [(0.5, 1.0 - 0.5 * decay / 2.0), (1.0, 1.0 - decay / 2.0)] {
            let p = DcqcnParams { initial_alpha: alpha0, ..DcqcnParams::default() };
            let mut s = DcqcnState::new(LINE);
            let mut t = CcTimers::default();
            let mut rate = LINE;
            s.on_ack(&p, &mut t, &mut rate, &ack(Time::ZERO, true));
            assert_eq!(rate, LINE, "the first CNP itself does not cut");
            for _ in 0..4 {
                fire(&mut s, &p, &mut t, &mut rate, ALPHA_TIMER);
            }
            fire(&mut s, &p, &mut t, &mut rate, DECREASE_TIMER);
            let got = rate.0 as f64 / 100e9;
            assert!((got - kept).abs() < 1e-4, "alpha0 {alpha0}: kept {got}, closed form {kept}");
        }
    }

    #[test]
    fn a_byte_counter_that_never_fires_holds_increase_at_additive() {
        // ns3-rdma's shipped BYTE_COUNTER (300 MB) never fires in a run of megabytes, and its
        // hyper increase needs both counts past F: after fast recovery every timer event adds
        // R_AI, never R_HAI.
        let p = DcqcnParams {
            fast_recovery_times: 5,
            byte_counter: 300_000_000,
            clamp_target: true,
            ..DcqcnParams::default()
        };
        let mut s = DcqcnState::new(LINE);
        let mut rate = Rate::gbps(10);
        s.first_cnp = false;
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        let target = s.target;
        assert_eq!(target, Rate::gbps(10), "clamped to the rate before the cut");
        for _ in 0..5 {
            s.increase(&p, &mut rate, LINE, Counter::Timer);
        }
        assert_eq!(s.target, target, "fast recovery leaves the target");
        for i in 1..=20u64 {
            s.increase(&p, &mut rate, LINE, Counter::Timer);
            assert_eq!(s.target, Rate(target.0 + i * p.rate_ai.0), "event {i}: additive");
        }
    }

    #[test]
    fn target_clamped_only_after_an_increase_and_floor_holds() {
        let p = DcqcnParams { min_rate: Rate::gbps(60), ..DcqcnParams::default() };
        let mut s = DcqcnState::new(LINE);
        let mut t = CcTimers::default();
        let mut rate = Rate::gbps(80);
        s.target = LINE;
        s.first_cnp = false;
        s.stage = 2;
        s.alpha = 0.5;
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        assert_eq!(s.target, Rate::gbps(80), "clamped: T != 0");
        assert_eq!(rate, Rate::gbps(60), "80G * 0.75 = 60G, at the floor");
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        assert_eq!(rate, Rate::gbps(60), "floored at MIN_RATE");
        assert_eq!(s.target, Rate::gbps(80), "T == 0: no clamp");
        let _ = &mut t;
    }

    #[test]
    fn hyper_increase_is_a_constant_step() {
        let p = DcqcnParams::default();
        let mut s = DcqcnState::new(LINE);
        let mut rate = Rate::gbps(10);
        s.target = Rate::gbps(10);
        s.stage = 5;
        s.increase(&p, &mut rate, LINE, Counter::Timer);
        assert_eq!(s.target, Rate(10_200_000_000));
        assert_eq!(rate, Rate(5_000_000_000 + 5_100_000_000));
        s.increase(&p, &mut rate, LINE, Counter::Timer);
        assert_eq!(s.target, Rate(10_400_000_000));
    }

    #[test]
    fn byte_counter_raises_events_after_a_cut_only() {
        let p = DcqcnParams { byte_counter: 32_767, ..DcqcnParams::default() };
        let mut s = DcqcnState::new(LINE);
        let mut rate = LINE;
        s.on_sent(&p, &mut rate, LINE, 1_000_000);
        assert_eq!((rate, s.byte_stage, s.bytes), (LINE, 0, 0), "no cut yet: nothing counted");
        s.first_cnp = false;
        s.alpha = 1.0;
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        assert_eq!(rate, Rate::gbps(50), "alpha 1 halves the rate");
        // 32,766 bytes: no event yet; one more byte: fast recovery (both counts below F = 1).
        s.on_sent(&p, &mut rate, LINE, 32_766);
        assert_eq!((rate, s.byte_stage), (Rate::gbps(50), 0));
        s.on_sent(&p, &mut rate, LINE, 1);
        assert_eq!((rate, s.target, s.byte_stage, s.bytes), (Rate::gbps(75), LINE, 1, 0));
        // Two events in one call (BC = 1, 2: additive, since T = 0 < F), 10 bytes left over.
        let (rt, r1) = (Rate::gbps(90), Rate::gbps(80));
        (s.target, rate) = (rt, r1);
        s.on_sent(&p, &mut rate, LINE, 2 * 32_767 + 10);
        let t1 = 90_000_000_000 + 20_000_000;
        let t2 = t1 + 20_000_000;
        let r2 = 40_000_000_000 + t1 / 2;
        assert_eq!((s.target, rate, s.byte_stage, s.bytes), (Rate(t2), Rate(r2 / 2 + t2 / 2), 3, 10));
        // The timer's events count apart: additive at T = 0 and 1 (min(T, BC) <= F), hyper at
        // T = 2 (both counts past F).
        let mut t = CcTimers::default();
        for (i, step) in [20_000_000, 20_000_000, 200_000_000].into_iter().enumerate() {
            let before = s.target.0;
            s.on_timer(&p, &mut t, &mut rate, LINE, INCREASE_TIMER, Time::from_us(300 * (i as u64 + 1)));
            assert_eq!(s.target.0, before + step, "timer event {i}");
        }
        // A cut clears both counts and the bytes.
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        assert_eq!((s.stage, s.byte_stage, s.bytes), (0, 0, 0));
    }

    #[test]
    fn no_byte_counter_keeps_the_timer_only_rule() {
        let p = DcqcnParams::default();
        let mut s = DcqcnState::new(LINE);
        let mut rate = Rate::gbps(40);
        s.first_cnp = false;
        s.decrease_cnp = true;
        s.cut(&p, &mut rate);
        assert!(!s.counting, "byte_counter 0: the counter never runs");
        let before = rate;
        s.on_sent(&p, &mut rate, LINE, 1 << 30);
        assert_eq!((rate, s.byte_stage), (before, 0));
    }

    /// Issue 45 §2: a parked alpha timer's ticks, run at a cut or when the group sends
    /// again, leave the state the running timer leaves, and re-arm it at the same time.
    #[test]
    fn a_parked_alpha_timer_ends_where_the_running_one_does() {
        let p = DcqcnParams::default();
        let (mut a, mut b) = (DcqcnState::new(LINE), DcqcnState::new(LINE));
        let (mut ta, mut tb) = (CcTimers::default(), CcTimers::default());
        let (mut ra, mut rb) = (LINE, LINE);
        for now in [Time::ZERO, Time::from_ns(500)] {
            a.on_ack(&p, &mut ta, &mut ra, &ack(now, true));
            b.on_ack(&p, &mut tb, &mut rb, &ack(now, true));
        }
        // The first tick (with the second CNP's +g) runs in both; then b's timer parks.
        fire(&mut a, &p, &mut ta, &mut ra, ALPHA_TIMER);
        fire(&mut b, &p, &mut tb, &mut rb, ALPHA_TIMER);
        b.park_alpha(&mut tb);
        assert_eq!((tb.due[ALPHA_TIMER], b.parked), (Time::MAX, Time::from_us(2)));
        // a ticks at 2, 3 and 4 us, then both cut at 4 us + 1 ns: b runs its ticks first.
        for _ in 0..3 {
            fire(&mut a, &p, &mut ta, &mut ra, ALPHA_TIMER);
        }
        fire(&mut a, &p, &mut ta, &mut ra, DECREASE_TIMER);
        fire(&mut b, &p, &mut tb, &mut rb, DECREASE_TIMER);
        assert_eq!((a.alpha, ra), (b.alpha, rb));
        assert!(ra < LINE, "a cut");
        // b sends at 6.5 us: the ticks of 5 and 6 us run, the timer is armed at 7 us.
        for _ in 0..2 {
            fire(&mut a, &p, &mut ta, &mut ra, ALPHA_TIMER);
        }
        b.unpark_alpha(&p, &mut tb, Time::from_ns(6_500));
        assert_eq!(a, b);
        assert_eq!(tb.due[ALPHA_TIMER], ta.due[ALPHA_TIMER]);
        assert_eq!(tb.due[ALPHA_TIMER], Time::from_us(7));
        // The conditions: a decrease grid that never meets the alpha grid, no ACK within a tick.
        assert!(DcqcnState::can_park(&p, Time::from_us(2)));
        assert!(!DcqcnState::can_park(&p, Time::from_ns(999)));
        assert!(!DcqcnState::can_park(&DcqcnParams { decrease_interval: Time::from_ns(4_500), ..p }, Time::from_us(2)));
    }
}
