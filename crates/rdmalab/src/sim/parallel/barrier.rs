//! The barrier between windows: spin briefly, then sleep.
//!
//! Every window ends with two barrier waits, thousands per run (5,354 windows on the
//! 1,024-host fat tree). `std::sync::Barrier` puts every early thread to sleep on a condition
//! variable at once, and waking a sleeping thread costs a futex call and, on a virtual
//! machine whose idle core has gone to sleep, tens of microseconds before it runs again:
//! a fit of the run times gave about 100 us per window on an idle 2-core machine, as much as a window's
//! work in the smaller runs. A thread that arrives early here first spins on the barrier's
//! generation for up to [`SPIN`] (the partitions of a balanced cut arrive within
//! microseconds of each other), then sleeps as `std`'s does, so a thread that waits long
//! (an unbalanced window, or a machine with more threads than free cores) costs no more
//! CPU than the spin.
//!
//! What it changes is only how long a thread takes to notice that the others arrived; the
//! order of every event and every result is the windows', as before.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long an early thread spins before it sleeps: a few times the wake-up latency it
/// avoids, short against a window's work on a loaded machine. The environment variable
/// `RDMALAB_BARRIER_SPIN_US` overrides it (0: sleep at once, as `std::sync::Barrier`), for
/// measuring the barrier's cost; results never depend on it.
pub(super) const SPIN: Duration = Duration::from_micros(50);

fn spin_limit() -> Duration {
    let us = std::env::var("RDMALAB_BARRIER_SPIN_US").ok().and_then(|v| v.parse::<u64>().ok());
    us.map_or(SPIN, Duration::from_micros)
}

pub(super) struct SpinBarrier {
    n: usize,
    /// How long an early thread spins ([`SPIN`]).
    spin: Duration,
    /// Threads arrived in the current generation.
    arrived: AtomicUsize,
    /// Generations completed; a change releases the waiters.
    generation: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl SpinBarrier {
    pub(super) fn new(n: usize) -> SpinBarrier {
        SpinBarrier {
            n,
            spin: spin_limit(),
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Blocks until all `n` threads have called `wait` in this generation. Everything a
    /// thread wrote before its call is visible to every thread after theirs.
    pub(super) fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // The last: reset the count before the new generation frees anyone (who may
            // come straight back to the next wait).
            self.arrived.store(0, Ordering::Relaxed);
            let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.wake.notify_all();
            return;
        }
        let since = Instant::now();
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            spin_loop();
            spins += 1;
            // Reading the clock costs more than a spin: look every 64.
            if spins.is_multiple_of(64) && since.elapsed() >= self.spin {
                return self.sleep(generation);
            }
        }
    }

    /// Sleeps until the generation changes (checked under the lock the last thread takes
    /// to change it, so no wake-up is lost).
    fn sleep(&self, generation: usize) {
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.generation.load(Ordering::Acquire) == generation {
            held = self.wake.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Where a partition's thread spent a call of `ParallelRun::run`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadTimes {
    /// CPU seconds the thread used (user + system; 10 ms resolution).
    pub cpu_s: f64,
    /// Wall seconds it waited at the windows' barriers (spinning or asleep).
    pub wait_s: f64,
}

/// The calling thread's CPU seconds so far, user + system (`/proc/thread-self/stat`, in
/// clock ticks of 1/100 s; 0 where there is no such file).
pub(super) fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let mut fields = rest.split_whitespace().skip(11); // utime is the 14th field of the line
    let mut tick = || fields.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick() + tick()) / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads that each add to a shared total between waits always see every thread's
    /// additions of the previous round, whether they spin or sleep (a thread that arrives
    /// late in every other round makes the others sleep).
    #[test]
    fn every_round_sees_every_thread_of_the_round_before() {
        for n in [1usize, 2, 3, 4] {
            let barrier = SpinBarrier::new(n);
            let total = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                for me in 0..n {
                    let (barrier, total) = (&barrier, &total);
                    scope.spawn(move || {
                        for round in 0..200usize {
                            if me == 0 && round % 50 == 1 {
                                std::thread::sleep(SPIN * 4);
                            }
                            total.fetch_add(1, Ordering::Relaxed);
                            barrier.wait();
                            assert_eq!(total.load(Ordering::Relaxed), n * (round + 1), "round {round}");
                            barrier.wait();
                        }
                    });
                }
            });
        }
    }
}
