//! When DCQCN's timers that are not events would have run.
//!
//! The shortcuts of `dcqcn_timers` and `dcqcn_checks` leave out timer events that change
//! nothing, but two things read event times as such: one simulation's watch (its deadlock
//! and stall checks, `sim::watch`) runs before the first event at or after its check time,
//! and a run that pauses or stops at a time ends at its last event before it (the results'
//! `end_time`). So the times of the events left out are kept here, as the phases of their
//! grids: every group's alpha ticks recur each alpha interval, its decrease checks each
//! decrease interval, and a group's grid stays put for as long as its timer runs without
//! events. The watch and the clock read the earliest and the latest point of them. (The
//! checks waiting in a host's cycle, `dcqcn_checks`, come and go with every CNP: that
//! module answers for them itself, from the cycles.)

use std::collections::BTreeMap;

use crate::units::Time;

/// The phases of every timer of one period that runs without events, counted.
#[derive(Debug)]
struct Grid {
    period: u64,
    phases: BTreeMap<u64, u32>,
}

impl Grid {
    fn new(period: Time) -> Grid {
        Grid { period: period.0.max(1), phases: BTreeMap::new() }
    }

    fn add(&mut self, at: Time) {
        *self.phases.entry(at.0 % self.period).or_insert(0) += 1;
    }

    fn remove(&mut self, at: Time) {
        let phase = at.0 % self.period;
        let n = self.phases.get_mut(&phase).expect("a grid that was added");
        *n -= 1;
        if *n == 0 {
            self.phases.remove(&phase);
        }
    }

    /// The first point of any grid at or after `x` (`Time::MAX`: no grid).
    fn first_from(&self, x: Time) -> Time {
        let Some((&lowest, _)) = self.phases.first_key_value() else { return Time::MAX };
        let r = x.0 % self.period;
        let base = x.0 - r;
        match self.phases.range(r..).next() {
            Some((&p, _)) => Time(base + p),
            None => Time(base + self.period + lowest),
        }
    }

    /// The last point of any grid at or before `y` (`Time::ZERO`: no grid, or none so early).
    fn last_by(&self, y: Time) -> Time {
        let Some((&highest, _)) = self.phases.last_key_value() else { return Time::ZERO };
        let r = y.0 % self.period;
        let base = y.0 - r;
        match self.phases.range(..=r).next_back() {
            Some((&p, _)) => Time(base + p),
            None => Time((base + highest).saturating_sub(self.period)),
        }
    }
}

/// The grids of DCQCN's alpha ticks and decrease checks that run without events.
#[derive(Debug)]
pub(crate) struct TimerGrids {
    alpha: Grid,
    decrease: Grid,
}

impl TimerGrids {
    pub(crate) fn new(alpha_interval: Time, decrease_interval: Time) -> TimerGrids {
        TimerGrids { alpha: Grid::new(alpha_interval), decrease: Grid::new(decrease_interval) }
    }

    /// Empty grids with DCQCN's intervals under `cc` (any others for another algorithm:
    /// nothing is ever added to them).
    pub(crate) fn for_config(cc: &crate::cc::CcConfig) -> TimerGrids {
        match cc {
            crate::cc::CcConfig::Dcqcn(p) => TimerGrids::new(p.alpha_interval, p.decrease_interval),
            _ => TimerGrids::new(Time(1), Time(1)),
        }
    }

    /// A group's alpha ticks, due next at `next`, run without events from now on.
    pub(crate) fn alpha_leaves_queue(&mut self, next: Time) {
        self.alpha.add(next);
    }

    /// A group's alpha ticks on the grid through `at` are events again, or end.
    pub(crate) fn alpha_returns(&mut self, at: Time) {
        self.alpha.remove(at);
    }

    /// A group's decrease checks, due next at `next`, run without events from now on.
    pub(crate) fn checks_leave_queue(&mut self, next: Time) {
        self.decrease.add(next);
    }

    /// A group's decrease checks on the grid through `at` are events again, or end.
    pub(crate) fn checks_return(&mut self, at: Time) {
        self.decrease.remove(at);
    }

    /// When the first timer without an event is due at or after `x` (`Time::MAX`: none).
    /// Meaningful for `x` no earlier than the last event (a grid reaches back before its
    /// start).
    pub(crate) fn first_from(&self, x: Time) -> Time {
        self.alpha.first_from(x).min(self.decrease.first_from(x))
    }

    /// When the last timer without an event was due at or before `y`, if later than the
    /// last event (earlier answers may precede a grid's start: compare with the clock).
    pub(crate) fn last_by(&self, y: Time) -> Time {
        self.alpha.last_by(y).max(self.decrease.last_by(y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_before_and_after_a_time_follow_every_grid() {
        let mut g = TimerGrids::new(Time(1_000), Time(4_000));
        assert_eq!((g.first_from(Time(5)), g.last_by(Time(5))), (Time::MAX, Time::ZERO));
        g.alpha_leaves_queue(Time(10_300)); // ..., 9_300, 10_300, 11_300, ...
        g.checks_leave_queue(Time(8_001)); // ..., 4_001, 8_001, 12_001, ...
        assert_eq!(g.first_from(Time(10_301)), Time(11_300));
        assert_eq!(g.first_from(Time(11_301)), Time(12_001));
        assert_eq!(g.first_from(Time(12_001)), Time(12_001));
        assert_eq!(g.last_by(Time(12_000)), Time(11_300));
        assert_eq!(g.last_by(Time(12_001)), Time(12_001));
        assert_eq!(g.last_by(Time(9_299)), Time(8_300));
        g.alpha_leaves_queue(Time(20_300)); // the same phase twice
        g.alpha_returns(Time(10_300));
        assert_eq!(g.first_from(Time(10_301)), Time(11_300), "one of the two is left");
        g.alpha_returns(Time(300));
        assert_eq!(g.first_from(Time(10_301)), Time(12_001));
        g.checks_return(Time(1));
        assert_eq!((g.first_from(Time(5)), g.last_by(Time(5))), (Time::MAX, Time::ZERO));
    }
}
