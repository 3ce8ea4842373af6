//! Unit tests of `cc::dcqcn` (kept apart so that the algorithm reads in one screenful).

use super::*;

const LINE: Rate = Rate::gbps(100);

fn ack(now: Time, cnp: bool) -> AckEvent<'static> {
    AckEvent { now, seq: 1000, snd_nxt: 2000, cnp, nack: false, int: None, mtu: 1000, int_multi: 1, share: Rate(0) }
}

fn fire(s: &mut DcqcnState, p: &DcqcnParams, t: &mut CcTimers, rate: &mut Rate, kind: usize) -> Time {
    let now = std::mem::replace(&mut t.due[kind], Time::MAX); // as `Simulation::on_cc_timer`
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
    let p =
        DcqcnParams { fast_recovery_times: 5, byte_counter: 300_000_000, clamp_target: true, ..DcqcnParams::default() };
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

/// A parked alpha timer's ticks, run at a cut or when the group sends
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

/// A parked decrease check comes back as the event it would have been (its
/// time and its own tie key) when the group sends before it is due, and otherwise at the
/// next point of its grid (strictly after the send: a check at the send's own picosecond
/// finds no CNP, whichever runs first).
#[test]
fn a_parked_decrease_check_returns_with_its_key_or_on_its_grid() {
    let p = DcqcnParams::default();
    let parked = || {
        let (mut s, mut t, mut rate) = (DcqcnState::new(LINE), CcTimers::default(), LINE);
        s.on_ack(&p, &mut t, &mut rate, &ack(Time::ZERO, true));
        fire(&mut s, &p, &mut t, &mut rate, ALPHA_TIMER);
        s.park_alpha(&mut t); // nothing in the network: the alpha timer parked first
        s.decrease_cnp = false;
        let first = fire(&mut s, &p, &mut t, &mut rate, DECREASE_TIMER); // no CNP: no cut
        assert_eq!((first, rate), (Time::from_ns(4_001), LINE));
        t.take_dirty();
        s.park_decrease(&mut t, 77);
        assert_eq!((t.due[DECREASE_TIMER], t.dirty, s.decrease_parked), (Time::MAX, 0, Time::from_ns(8_001)));
        (s, t)
    };
    let (mut s, mut t) = parked();
    assert_eq!(s.unpark_decrease(&p, &mut t, Time::from_ns(6_000)), Some(77));
    assert_eq!((t.due[DECREASE_TIMER], t.dirty, s.decrease_parked), (Time::from_ns(8_001), 0, Time::MAX));
    for (now, next) in [(8_001, 12_001), (8_002, 12_001), (17_000, 20_001), (20_001, 24_001)] {
        let (mut s, mut t) = parked();
        assert_eq!(s.unpark_decrease(&p, &mut t, Time::from_ns(now)), None);
        assert_eq!((t.due[DECREASE_TIMER], t.dirty), (Time::from_ns(next), 1 << DECREASE_TIMER), "send at {now} ns");
    }
    // Not parked: nothing to do.
    assert_eq!(DcqcnState::new(LINE).unpark_decrease(&p, &mut CcTimers::default(), Time::ZERO), None);
    // The condition: no CNP can come back within a decrease interval of a send.
    assert!(DcqcnState::can_park_decrease(&p, Time::from_us(4)));
    assert!(!DcqcnState::can_park_decrease(&p, Time::from_ns(3_999)));
}

/// An increase that moves neither rate with the target at line rate schedules no further
/// tick: the ticks it saves would leave both as they are, and the next cut arms the timer
/// again.
#[test]
fn the_increase_timer_stops_at_line_rate_and_a_cut_restarts_it() {
    let p = DcqcnParams::default();
    let (mut s, mut t) = (DcqcnState::new(LINE), CcTimers::default());
    s.first_cnp = false;
    let mut rate = Rate::gbps(99);
    t.arm(INCREASE_TIMER, Time::from_us(300));
    let mut ticks = 0;
    while t.due[INCREASE_TIMER] != Time::MAX {
        fire(&mut s, &p, &mut t, &mut rate, INCREASE_TIMER);
        ticks += 1;
        assert!(ticks < 100, "the timer never stopped");
    }
    // Rc/2 + Rt/2 in whole bits per second stops one short of the target.
    assert_eq!((rate, s.target), (Rate(LINE.0 - 1), LINE));
    // Had it run on, the next ticks would have changed nothing.
    let before = (s.target, rate);
    for _ in 0..3 {
        s.increase(&p, &mut rate, LINE, Counter::Timer);
        assert_eq!((s.target, rate), before);
    }
    // A cut arms it again.
    s.decrease_cnp = true;
    t.arm(DECREASE_TIMER, Time::from_ms(1));
    fire(&mut s, &p, &mut t, &mut rate, DECREASE_TIMER);
    assert!(rate < LINE);
    assert_eq!(t.due[INCREASE_TIMER], Time::from_ms(1) + p.rp_timer);
}

/// Lazy alpha ticks (the origin order) give the rates, and at every cut the
/// alpha, that a timer firing every microsecond gives, when CNPs arrive at random
/// picoseconds and some on the alpha grid itself (where the tick runs first, as a node's
/// event runs before an arrival in that order), in bursts with quiet gaps between.
#[test]
fn lazy_alpha_ticks_give_what_the_timer_gives() {
    let p = DcqcnParams::default();
    let (mut a, mut b) = (DcqcnState::new(LINE), DcqcnState::new(LINE));
    b.tick_lazily();
    let (mut ta, mut tb) = (CcTimers::default(), CcTimers::default());
    let (mut ra, mut rb) = (LINE, LINE);
    // CNP arrivals: bursts of 40 over 40 us each, 200 us apart; every fifth on a tick
    // of the grid the first CNP starts (7,777 ps + k us).
    let mut x = 12_345u64;
    let mut cnps = Vec::new();
    for burst in 0..30u64 {
        for i in 0..40u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let at = 7_777 + burst * 240_000_000 + i * 1_000_000;
            cnps.push(if i % 5 == 3 || burst + i == 0 { at } else { at + (x >> 33) % 1_000_000 });
        }
    }
    let (mut cuts, mut ticks_on_grid) = (0, 0);
    let mut next_cnp = cnps.iter().copied().peekable();
    loop {
        let timer = (0..3).map(|k| ta.due[k]).min().unwrap();
        let arrival = next_cnp.peek().map_or(u64::MAX, |&t| t);
        if timer > Time::from_ms(8) && arrival == u64::MAX {
            break;
        }
        if timer.0 <= arrival {
            // The timers due now, a node's events, before an arrival at the same picosecond.
            let kind = (0..3).find(|&k| ta.due[k] == timer).unwrap();
            ticks_on_grid += (kind == ALPHA_TIMER && timer.0 == arrival) as u32;
            let cut = kind == DECREASE_TIMER && a.decrease_cnp;
            fire(&mut a, &p, &mut ta, &mut ra, kind);
            if kind != ALPHA_TIMER {
                assert_eq!(tb.due[kind], timer, "the same timer {kind}");
                fire(&mut b, &p, &mut tb, &mut rb, kind);
            }
            if cut {
                assert_eq!(a.alpha, b.alpha, "alpha at the cut of {timer:?}");
                cuts += 1;
            }
        } else {
            next_cnp.next();
            a.on_ack(&p, &mut ta, &mut ra, &ack(Time(arrival), true));
            b.on_ack(&p, &mut tb, &mut rb, &ack(Time(arrival), true));
        }
        assert_eq!((ra, a.target), (rb, b.target));
        assert_eq!(tb.due[ALPHA_TIMER], Time::MAX, "a lazy group arms no alpha timer");
    }
    assert!(ticks_on_grid >= 100, "CNPs on the grid: {ticks_on_grid}");
    assert!(cuts >= 100, "cuts with equal alpha: {cuts}");
    assert!(ra < LINE);
    // The conditions: a decrease grid that never meets the alpha grid; no bound on ACKs.
    assert!(DcqcnState::can_tick_lazily(&p));
    assert!(!DcqcnState::can_tick_lazily(&DcqcnParams { decrease_interval: Time::from_ns(4_500), ..p }));
    assert!(!DcqcnState::can_tick_lazily(&DcqcnParams { alpha_interval: Time::from_ns(1), ..p }));
}
