//! The stall watchdog and the end of a run's work across partitions (`sim::watch` for one
//! simulation): the same checks, at the same simulated times, on the whole run's numbers.
//!
//! - **Stall.** One simulation arms a check a stall window after its first flow's start (or
//!   first message's post) and, before its first event at or after the check time, stops
//!   as stalled if nothing was delivered, completed or started since the previous check
//!   while work is unfinished and every flow has started; else it checks again a window
//!   later. Each partition arms its own copy at setup or at its hosts' first post; the
//!   driver takes the earliest, ends windows at the check time, and checks the sums of the
//!   partitions' marks before the run's next event (no partition can tell alone: its own
//!   hosts may be idle while others deliver). A stalled run therefore ends at the same time,
//!   with the same files, for any thread count.
//! - **Idle connections.** One simulation stops (`finished`) at the event after the last
//!   work completed when a multipath connection is still open, rather than idling through
//!   its congestion-control timers; the driver stops at the end of that window.

use super::marks::{Mark, StallMark, Window};
use super::ParallelRun;
use crate::sim::watch::{idle_cause, later};
use crate::sim::Simulation;
use crate::units::Time;

impl Simulation {
    /// This partition's numbers for the watchdog, after a window.
    pub(super) fn stall_mark(&self) -> StallMark {
        StallMark {
            delivered: self.counters.payload_bytes_delivered,
            started: self.next_flow,
            last_post: self.apps.last_post,
            armed: self.stall_schedule().0,
            rnr_busy_until: self.rnr_busy_until(),
        }
    }
}

/// The whole run's numbers after a window, summed from every partition's `Mark`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RunMarks {
    pub delivered: u64,
    pub done: usize,
    pub started: usize,
    pub last_post: Time,
    pub armed: Time,
    pub rnr_busy_until: Time,
}

impl RunMarks {
    pub(super) fn new() -> RunMarks {
        RunMarks { armed: Time::MAX, ..RunMarks::default() }
    }

    pub(super) fn add(&mut self, m: &Mark) {
        self.delivered += m.stall.delivered;
        self.done += m.done;
        self.started = self.started.max(m.stall.started);
        self.last_post = self.last_post.max(m.stall.last_post);
        self.armed = self.armed.min(m.stall.armed);
        self.rnr_busy_until = self.rnr_busy_until.max(m.stall.rnr_busy_until);
    }
}

/// The scenario's numbers the watchdog needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct StallRule {
    pub window: Time,
    pub flows_listed: usize,
    pub work_total: usize,
    pub stop_time: Time,
    /// A multipath connection is left open (`mp_disconnect` is a setup call, made alike in
    /// every partition before the run).
    pub open_conns: bool,
}

impl Window {
    /// After a window's exchange, before the run's next event at `next`: runs the stall
    /// check one simulation would run there, and stops the run when its work is done but a
    /// connection is left open. Returns true if the run ends here (`stall_at` or
    /// `idle_apps_at` set).
    pub(super) fn stall_check(&mut self, m: RunMarks, next: Time, rule: StallRule) -> bool {
        if next == Time::MAX || next > rule.stop_time {
            return false; // the run ends anyway: idle or at the stop time
        }
        if rule.open_conns && rule.work_total > 0 && m.done == rule.work_total {
            self.idle_apps_at = Some(next);
            return true;
        }
        if self.stall_next == Time::MAX {
            self.stall_next = m.armed; // the first arm of any partition, as in one simulation
        }
        if next < self.stall_next {
            return false;
        }
        let mark = (m.delivered, m.done, m.started);
        let unfinished = m.done < rule.work_total;
        let all_started = m.started == rule.flows_listed && next >= m.last_post;
        let waiting = m.rnr_busy_until > next.saturating_sub(rule.window); // as `Simulation::stall_check`
        if mark != self.stall_mark || !unfinished || !all_started || waiting {
            self.stall_mark = mark;
            self.stall_next = later(next, rule.window);
            return false;
        }
        self.stall_at = Some(next);
        true
    }
}

impl ParallelRun {
    /// Why the run, with `left` flows unfinished, ran out of events: one simulation's words,
    /// from the partitions' numbers (the first stuck QP is the lowest slot of any partition's
    /// own hosts).
    pub(super) fn idle_cause(&self, left: usize) -> String {
        let formed = self.watch.found.first.as_ref().map(|d| d.formed);
        let drops: u64 = self.parts.iter().map(|p| p.counters.drops).sum();
        let unrepaired = self.parts[0].cfg.rto.is_none().then_some(drops);
        let paused = self.parts.iter().map(|p| p.paused_pairs()).sum();
        let first = self.parts.iter().enumerate().filter_map(|(k, p)| Some((p.stuck_qp()?, k))).min();
        let stuck = first.map(|(i, k)| self.parts[k].describe_stuck_qp(i, self.packets_in_network(i, k)));
        idle_cause(self.end_time(), left, formed, unrepaired, paused, stuck)
    }

    /// Packets of QP slot `i` (owned by partition `k`) in the network: a QP opened at setup
    /// has its slot everywhere, and each partition counts what it sent, received and
    /// dropped of it, so the counts sum (wrapping) to one simulation's; a QP opened while
    /// running is counted by its sender's partition alone.
    fn packets_in_network(&self, i: usize, k: usize) -> u32 {
        let shared = self.parts[k].part.as_ref().is_some_and(|p| i < p.shared_qps as usize);
        if !shared {
            return self.parts[k].qps[i].in_flight;
        }
        self.parts.iter().fold(0u32, |n, p| n.wrapping_add(p.qps[i].in_flight))
    }
}
