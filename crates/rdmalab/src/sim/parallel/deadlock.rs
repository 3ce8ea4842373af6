//! PFC deadlock detection across partitions (`sim::watch` for one simulation).
//!
//! A deadlock cycle may run through switches of several partitions, so no partition can
//! find it alone. The driver runs the same checks as one simulation, at the same simulated
//! times, on the wait-for graph merged from every partition's part (`WaitShare`):
//!
//! - **When.** One simulation arms a check `deadlock_timeout` after the first pause while
//!   it is disarmed, and re-checks every `period` while anything is paused. Each partition
//!   arms its own copy of that schedule from its own pauses; at a barrier the driver takes
//!   the earliest (the run's first pause) and writes it back to every partition, so a
//!   partition re-arms only when the whole run is disarmed. Windows end at the check time
//!   and last at most `deadlock_timeout`, so a check never falls inside a window.
//! - **What.** One simulation checks before its first event at or after the check time, on
//!   the state every earlier event left. At the barrier that ends the window before the
//!   check time, every partition holds exactly that state, and the next event of the run
//!   is the earliest next event of any partition: the check runs at that event's time.
//! - **Found.** Thread 0 merges the parts and searches (`Found::search`, the code one
//!   simulation uses); the others wait for its verdict at a second barrier. Checks run only
//!   while something is paused, every quarter of the timeout at most: the extra barriers
//!   cost nothing a run without PFC pauses would notice.

use std::sync::atomic::Ordering;

use super::{Shared, Window};
use crate::sim::watch::{later, Found, WaitShare, Watch};
use crate::sim::{OnDeadlock, Simulation};
use crate::units::Time;

/// What every partition reported at a window's end, summed for the check.
#[derive(Clone, Copy, Debug)]
pub(super) struct WatchMarks {
    /// The earliest check any partition's pauses armed (`Time::MAX`: none).
    pub due: Time,
    /// Switch (port, class) pairs paused in the whole run.
    pub paused: u32,
    /// The latest event any partition ran.
    pub last_event: Time,
    /// The run's next event.
    pub next: Time,
    /// Flows remain unfinished.
    pub unfinished: bool,
}

/// The driver's side: the checks' settings and what they found.
#[derive(Debug, Default)]
pub(super) struct DeadlockWatch {
    pub timeout: Time,
    pub on_deadlock: OnDeadlock,
    pub found: Found,
}

impl Shared {
    /// After a window's exchange: runs the deadlock check due before the run's next event, as
    /// one simulation would, and sets the check schedule in every partition. Returns true if
    /// the run stops for a deadlock (then `w.deadlock_at` is when it was found).
    pub(super) fn deadlock_check(&self, me: usize, sim: &mut Simulation, w: &mut Window, m: WatchMarks) -> bool {
        let timed = m.due != Time::MAX && m.next != Time::MAX && m.next >= m.due && m.next <= self.stop_time;
        // With nothing left to run, one simulation looks once more, for pauses of any age.
        let idle = m.next == Time::MAX && m.unfinished;
        let mut schedule = m.due;
        let mut stop = false;
        if (timed || idle) && m.paused > 0 {
            let (t, min_age) = if timed { (m.next, self.watch_timeout) } else { (m.last_event, Time::ZERO) };
            stop = self.search_together(me, sim, t, min_age);
            if stop {
                w.deadlock_at = Some(t);
                // One simulation's clock when it stops there, at which the ports' paused time
                // is closed (`PortState::finish`).
                sim.now = t;
            }
        }
        if timed {
            schedule = if m.paused > 0 { later(m.next, Watch::period(self.watch_timeout)) } else { Time::MAX };
        }
        sim.set_deadlock_check(schedule);
        stop
    }

    /// Every partition gives its part of the wait-for graph at `t`; thread 0 searches the
    /// merged graph and records what it finds; all return its verdict (stop or go on).
    fn search_together(&self, me: usize, sim: &mut Simulation, t: Time, min_age: Time) -> bool {
        self.guard(|| *self.shares[me].lock().expect("share") = sim.wait_share(t, min_age));
        self.barrier.wait();
        if me == 0 {
            self.guard(|| {
                let shares: Vec<WaitShare> =
                    self.shares.iter().map(|s| std::mem::take(&mut *s.lock().expect("share"))).collect();
                let mut watch = self.watch.lock().expect("watch");
                let found = watch.found.search(sim.topology(), &shares, t).is_some();
                // The barrier below orders this store before every thread's load.
                self.verdict.store(found && watch.on_deadlock == OnDeadlock::Stop, Ordering::Relaxed);
            });
        }
        self.barrier.wait();
        self.verdict.load(Ordering::Relaxed)
    }
}

impl Window {
    /// Where a window starting at `start` ends: a lookahead later, but no later than the next
    /// deadlock or stall check nor a deadlock timeout later (a pause in it arms a check no
    /// earlier).
    pub(super) fn end(&self, start: Time, lookahead: Time, timeout: Time) -> Time {
        let end = Time(start.0.saturating_add(lookahead.min(timeout).0));
        end.min(self.check).min(self.stall_next).max(Time(start.0.saturating_add(1)))
    }
}
