//! The driver's loop: conservative windows of one lookahead each. Every partition runs its
//! events up to the window's end, posts the packets that cross the cut into the others'
//! mailboxes, and waits at the barrier; the mark of the earliest next event decides the
//! next window (or that the run is over). `ParallelRun` (the module above) owns the
//! partitions between calls; this module owns what the threads share during one.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::barrier::{thread_cpu_s, SpinBarrier, ThreadTimes};
use super::deadlock::{self, WatchMarks};
use super::marks::{spread_bucket, Mark, Window};
use super::peak::PeakMerge;
use super::stall::{RunMarks, StallRule};
use super::Mail;
use crate::sim::watch::WaitShare;
use crate::sim::{RunLimit, Simulation};
use crate::units::Time;

/// What the threads share: the barrier, the mailboxes (`mail[from * n + to]`), each
/// partition's `Mark` after the exchange, and the limits of this call.
pub(super) struct Shared {
    pub(super) barrier: SpinBarrier,
    pub(super) mail: Vec<Mutex<Mail>>,
    pub(super) next: Vec<Mutex<Mark>>,
    pub(super) lookahead: Time,
    pub(super) stop_time: Time,
    pub(super) flows_total: usize,
    /// The stall watchdog's window and the scenario's flow counts (`stall`).
    pub(super) stall_rule: StallRule,
    pub(super) until: Time,
    pub(super) budget: u64,
    pub(super) events_before: u64,
    /// Some partition panicked: every thread leaves after this window's exchange instead of
    /// waiting at a barrier the panicked thread would never reach.
    pub(super) failed: AtomicBool,
    /// The first panic's payload, re-raised by the driver once every thread has left.
    pub(super) panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Per thread, this call's CPU seconds and seconds waited at the windows' barriers.
    pub(super) times: Vec<Mutex<ThreadTimes>>,
    /// PFC deadlock detection: the timeout, each partition's part of the wait-for graph,
    /// what was found, and thread 0's verdict (`deadlock`).
    pub(super) watch_timeout: Time,
    pub(super) shares: Vec<Mutex<WaitShare>>,
    pub(super) watch: Mutex<deadlock::DeadlockWatch>,
    pub(super) verdict: AtomicBool,
    /// The partitions' logs of live QPs and the run's count (`peak`).
    pub(super) peak: PeakMerge,
}

impl Shared {
    /// Runs a partition's step; a panic is kept for the driver and flags the run as failed,
    /// and the thread goes on to the barriers so that the others are not left waiting.
    pub(super) fn guard(&self, step: impl FnOnce()) {
        if self.failed.load(Ordering::Acquire) {
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(step)) {
            self.failed.store(true, Ordering::Release);
            self.panic.lock().expect("panic slot").get_or_insert(payload);
        }
    }

    /// One partition's thread: window after window until every partition is idle, past the
    /// stop time, stuck, or at the caller's limit. Every thread computes the same decisions
    /// from the same shared numbers, so they stop together.
    pub(super) fn work(&self, me: usize, sim: &mut Simulation, w: Window) -> Window {
        let cpu = thread_cpu_s();
        let mut waited = Duration::ZERO;
        let w = self.windows(me, sim, w, &mut waited);
        *self.times[me].lock().expect("times") =
            ThreadTimes { cpu_s: thread_cpu_s() - cpu, wait_s: waited.as_secs_f64() };
        w
    }

    /// The barrier's wait, its wall time added to `waited`.
    fn wait(&self, waited: &mut Duration) {
        let t = Instant::now();
        self.barrier.wait();
        *waited += t.elapsed();
    }

    /// `work`'s windows.
    fn windows(&self, me: usize, sim: &mut Simulation, mut w: Window, waited: &mut Duration) -> Window {
        let n = self.next.len();
        let mut out: Vec<Mail> = (0..n).map(|_| Mail::default()).collect();
        // Every partition's events so far, for the critical path (one more wait per call).
        *self.next[me].lock().expect("next") = Mark { events: sim.counters.events, ..Mark::default() };
        self.wait(waited);
        let mut last: Vec<u64> = self.next.iter().map(|s| s.lock().expect("next").events).collect();
        w.paused = false;
        loop {
            if w.start == Time::MAX || w.start > self.stop_time {
                return w;
            }
            let end = w.end(w.start, self.lookahead, self.watch_timeout);
            w.windows += 1;
            self.guard(|| {
                sim.run(RunLimit { until: Time(end.0 - 1), max_events: u64::MAX });
                sim.export_crossings(&mut out);
                self.peak.post(me, sim);
            });
            for (to, v) in out.iter_mut().enumerate().filter(|(_, v)| !v.is_empty()) {
                v.post(&mut self.mail[me * n + to].lock().expect("mailbox"));
            }
            self.wait(waited);
            self.guard(|| {
                for from in 0..n {
                    sim.import_mail(&mut self.mail[from * n + me].lock().expect("mailbox"));
                }
                if me == 0 {
                    self.peak.merge(); // every log of the window is in, none of the next
                }
            });
            let mine = Mark {
                next: sim.next_event_time().unwrap_or(Time::MAX),
                next_timer: sim.next_timer_time(),
                stall: sim.stall_mark(),
                events: sim.counters.events,
                done: sim.flows_done,
                last_completion: sim.last_completion,
                check_due: sim.deadlock_check_due(),
                paused_pairs: sim.paused_pairs(),
                now: sim.now,
            };
            *self.next[me].lock().expect("next") = mine;
            self.wait(waited);
            // No third wait: nobody writes `next` or a mailbox again before the next
            // window's first wait, which every thread reaches only after reading these.
            if self.failed.load(Ordering::Acquire) {
                return w;
            }
            let (mut next, mut next_timer, mut events, mut most, mut least) =
                (Time::MAX, Time::MAX, 0u64, 0u64, u64::MAX);
            let (mut done, mut last_completion, mut run) = (0usize, Time::ZERO, RunMarks::new());
            let mut watch =
                WatchMarks { due: Time::MAX, paused: 0, last_event: Time::ZERO, next: Time::MAX, unfinished: false };
            for (i, slot) in self.next.iter().enumerate() {
                let m = *slot.lock().expect("next");
                watch.due = watch.due.min(m.check_due);
                watch.paused += m.paused_pairs;
                watch.last_event = watch.last_event.max(m.now);
                next = next.min(m.next);
                next_timer = next_timer.min(m.next_timer);
                run.add(&m);
                events += m.events;
                most = most.max(m.events - last[i]);
                least = least.min(m.events - last[i]);
                last[i] = m.events;
                done += m.done;
                last_completion = last_completion.max(m.last_completion);
            }
            w.critical += most;
            w.spread[spread_bucket(most - least)] += 1;
            // The run's next event as one simulation would have it: a DCQCN timer left out of
            // the queue counts (`mech::dcqcn_grids`), for the watch, which runs before it, and for
            // the next window's start, which must not pass a check time such a timer reaches.
            let seen = next.min(next_timer);
            (watch.next, watch.unfinished) = (seen, done < self.flows_total);
            if self.deadlock_check(me, sim, &mut w, watch) {
                return w;
            }
            w.check = sim.deadlock_check_due();
            // The sample and monitor chains end once every flow is done (`observe`).
            if !w.flows_ended {
                w.flows_ended = done == self.flows_total;
                let end = w.flows_ended.then_some(last_completion);
                self.guard(|| sim.observers_at_window_end(end));
            }
            if w.stall_check(run, seen, self.stall_rule) {
                // One simulation stops before that event (stalled) or right after the last
                // completion (idle connections): its clock, for the ports' counters.
                sim.now = w.stall_at.unwrap_or(last_completion);
                w.start = seen;
                return w;
            }
            w.start = if seen == Time::MAX { Time::MAX } else { seen.max(end) };
            if w.start != Time::MAX && (w.start > self.until || events - self.events_before >= self.budget) {
                w.paused = w.start <= self.stop_time;
                if w.paused {
                    return w;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(n: usize) -> Shared {
        Shared {
            barrier: SpinBarrier::new(n),
            times: (0..n).map(|_| Mutex::new(ThreadTimes::default())).collect(),
            mail: (0..n * n).map(|_| Mutex::new(Mail::default())).collect(),
            next: (0..n).map(|_| Mutex::new(Mark::default())).collect(),
            lookahead: Time::from_ns(1),
            stop_time: Time::MAX,
            flows_total: 0,
            stall_rule: StallRule {
                window: Time::MAX,
                flows_listed: 0,
                work_total: 0,
                stop_time: Time::MAX,
                open_conns: false,
            },
            until: Time::MAX,
            budget: u64::MAX,
            events_before: 0,
            failed: AtomicBool::new(false),
            panic: Mutex::new(None),
            watch_timeout: Time::from_ms(1),
            shares: (0..n).map(|_| Mutex::new(WaitShare::default())).collect(),
            watch: Mutex::new(deadlock::DeadlockWatch::default()),
            verdict: AtomicBool::new(false),
            peak: PeakMerge::new(n, Default::default()),
        }
    }

    /// A panic in one thread's step is kept, and the other thread still gets through the
    /// same barriers and sees the failure after them (before the fix it waited forever).
    #[test]
    fn a_panicking_partition_releases_the_others() {
        let s = shared(2);
        let seen: Vec<bool> = std::thread::scope(|scope| {
            let hs: Vec<_> = (0..2)
                .map(|me| {
                    let s = &s;
                    scope.spawn(move || {
                        s.guard(|| {
                            if me == 1 {
                                panic!("partition 1 fails");
                            }
                        });
                        s.barrier.wait();
                        s.guard(|| {});
                        s.barrier.wait();
                        s.failed.load(Ordering::Acquire)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("no thread may die")).collect()
        });
        assert_eq!(seen, vec![true, true]);
        let payload = s.panic.lock().unwrap().take().expect("the panic is kept");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"partition 1 fails"));
    }
}
