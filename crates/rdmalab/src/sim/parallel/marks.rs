//! What the driver's windows carry between threads and calls: where the windows stand
//! (`Window`), and each partition's numbers after a window's exchange (`Mark`, with its
//! stall watchdog's part, `StallMark`). Plain data: the loop that fills them is
//! `window.rs`, the checks that read them `stall.rs` and `deadlock.rs`.

use crate::units::Time;

/// Buckets of `Window::spread`: spreads of 2^15 = 32,768 events and more share the last.
pub const SPREAD_BUCKETS: usize = 16;

/// The bucket of a window whose partitions' events spread by `events`.
pub(super) fn spread_bucket(events: u64) -> usize {
    (events.max(1).ilog2() as usize).min(SPREAD_BUCKETS - 1)
}

/// Where the windows stand between calls: the next window's start, the stall watchdog's
/// schedule and mark (`stall`), and why the last call returned.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub(super) start: Time,
    /// The next stall check (`Time::MAX`: none armed) and the progress it compares with:
    /// (bytes delivered, work done, flows started) at the previous check.
    pub(super) stall_next: Time,
    pub(super) stall_mark: (u64, usize, usize),
    /// The caller's limit was reached.
    pub(super) paused: bool,
    /// The run stopped as stalled at this time (the watchdog found no progress).
    pub(super) stall_at: Option<Time>,
    /// The run's work is done but a connection is left open: it stops (finished) here.
    pub(super) idle_apps_at: Option<Time>,
    /// Windows run so far.
    pub(super) windows: u64,
    /// Sum over windows of the most events one partition ran in it: the run's critical
    /// path in events (total events / this = the speed-up the map allows, sync aside).
    pub(super) critical: u64,
    /// Windows by the spread of their partitions' events (the most one ran less the fewest):
    /// entry `i` counts spreads in [2^i, 2^(i+1)) (entry 0: 0 or 1), the last every larger
    /// one. A spread is the work the early threads wait for at the window's barrier.
    pub(super) spread: [u64; SPREAD_BUCKETS],
    /// Every flow is done and the partitions know when the last completed (`observe`).
    pub(super) flows_ended: bool,
    /// The next PFC deadlock check (`deadlock`; `Time::MAX`: none armed).
    pub(super) check: Time,
    /// The run stopped for a PFC deadlock found at this time.
    pub(super) deadlock_at: Option<Time>,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            start: Time::ZERO,
            stall_next: Time::MAX,
            stall_mark: (0, 0, 0),
            paused: false,
            stall_at: None,
            idle_apps_at: None,
            windows: 0,
            critical: 0,
            spread: [0; SPREAD_BUCKETS],
            flows_ended: false,
            check: Time::MAX,
            deadlock_at: None,
        }
    }
}

/// A partition's numbers after a window's exchange.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    /// Its next event.
    pub(super) next: Time,
    /// Its next DCQCN timer that is not an event (`mech::dcqcn_grids`): one simulation's
    /// watch would have seen its event.
    pub(super) next_timer: Time,
    /// Its numbers for the stall watchdog (`stall`).
    pub(super) stall: StallMark,
    /// Events it ran so far.
    pub(super) events: u64,
    /// Flows it completed (or gave up), and when the last of them did.
    pub(super) done: usize,
    pub(super) last_completion: Time,
    /// The deadlock check its own pauses armed, the switch (port, class) pairs it has
    /// paused, and its latest event (`deadlock`).
    pub(super) check_due: Time,
    pub(super) paused_pairs: u32,
    pub(super) now: Time,
}

impl Default for Mark {
    fn default() -> Self {
        Mark {
            next: Time::MAX,
            next_timer: Time::MAX,
            stall: StallMark::default(),
            events: 0,
            done: 0,
            last_completion: Time::ZERO,
            check_due: Time::MAX,
            paused_pairs: 0,
            now: Time::ZERO,
        }
    }
}

/// A partition's numbers for the watchdog.
#[derive(Clone, Copy, Debug)]
pub(super) struct StallMark {
    /// Payload bytes delivered in order at its hosts.
    pub delivered: u64,
    /// Flows of the scenario admitted so far (every partition admits every flow's arrival).
    pub started: usize,
    /// The latest post of a message (posts are made at setup, alike in every partition).
    pub last_post: Time,
    /// The stall check it armed (`Time::MAX`: none).
    pub armed: Time,
    /// Until when its receive queues and RNR timers keep the run waiting.
    pub rnr_busy_until: Time,
}

impl Default for StallMark {
    fn default() -> Self {
        StallMark { delivered: 0, started: 0, last_post: Time::ZERO, armed: Time::MAX, rnr_busy_until: Time::ZERO }
    }
}
