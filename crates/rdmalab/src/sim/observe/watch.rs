//! The run's watch: PFC deadlock detection and the stall watchdog.
//!
//! Both are observers of the whole fabric, like the counters: they read the PAUSE state of
//! the ports and the contents of switch queues, and decide only whether the run goes on.
//! No node acts on what they find, so they do not break locality (a parallel engine runs
//! them at a synchronisation barrier).
//!
//! They touch the event loop through one comparison per event (`Simulation::run` looks at
//! `Watch::next_check`) and one call per PFC frame that changes a pause (`pause_changed`).
//! Nothing is scheduled in the event queue, so a run's events, their order and its end time
//! are the same with and without them.
//!
//! *Deadlock.* A switch port paused for class `q` cannot send the packets of `q` it holds.
//! It waits on the peer switch's ingress buffer for `q`, which drains only through the
//! peer's egress queues holding those packets. If every such queue is itself paused (and
//! holds packets), the wait goes on; the wait-for graph has an edge from the first port to
//! each of them. A cycle in this graph, among ports paused for at least
//! `SimConfig::deadlock_timeout`, is a deadlock: nothing in the cycle can ever send again.
//! An ingress with any packet in a queue that is not paused (or not paused long enough)
//! still drains, so its upstream port gets no edge; a long but recovering pause (a heavy
//! incast) has such a queue, and no cycle (see `docs/model/pfc.md#pfc-deadlocks-and-runs-that-cannot-progress`).
//!
//! *Stall.* A run whose flows cannot finish may still have timers that re-arm forever (a
//! retransmission timer firing into a paused NIC). The watchdog ends the run when no payload
//! byte was delivered, no flow completed and none started for a whole `stall_window`, with
//! unfinished flows (or multipath messages) and none left to start.

use super::deadlock::key;
pub use super::deadlock::{CycleHop, Deadlock};
pub(crate) use super::deadlock::{Found, WaitShare};
use crate::fabric::NUM_PRIOS;
use crate::ids::PortId;
use crate::sim::{SimConfig, Simulation, StopReason};
use crate::units::Time;

/// State of the watch (see the module doc).
#[derive(Debug)]
pub(crate) struct Watch {
    /// The earliest time at which either check is due (`Time::MAX`: neither).
    pub next_check: Time,
    next_deadlock_check: Time,
    next_stall_check: Time,
    /// Since when each (switch port, class) is paused; meaningful while it is.
    paused_at: Vec<[Time; NUM_PRIOS]>,
    /// (Switch port, class) pairs paused now.
    paused_pairs: u32,
    /// How long a run may go without progress before it is stalled.
    stall_window: Time,
    /// (bytes delivered, flows done, flows started) at the last stall check.
    progress_mark: (u64, usize, usize),
    /// Deadlocks found.
    pub found: Found,
    /// Why the run stalled, when it did.
    pub stall_cause: Option<String>,
    /// The first packet a lossless class lost at admission (`first_loss`).
    pub first_loss: Option<super::first_loss::LossSite>,
}

/// The stall window: ten retransmission timeouts or 100 ms, whichever is longer, plus
/// twice the sum of every link's delay (more than any round trip). A healthy run, even one
/// losing packets and waiting for its timeouts, delivers something in far less.
fn stall_window(cfg: &SimConfig, total_link_delay: Time) -> Time {
    let rto = cfg.rto.map_or(Time::ZERO, |r| Time(r.0.saturating_mul(10)));
    later(rto.max(Time::from_ms(100)), Time(total_link_delay.0.saturating_mul(2)))
}

/// Why a run whose stall check at `t` found no progress stopped (`left`: flows unfinished;
/// `formed`: when the first PFC deadlock found formed). The parallel driver says the same.
pub(crate) fn stall_cause(window: Time, t: Time, left: usize, formed: Option<Time>) -> String {
    let mut cause = format!(
        "no payload byte delivered for {} (until {}) with {left} flow(s) unfinished; only timers were left",
        us(window),
        us(t),
    );
    if let Some(formed) = formed {
        cause += &format!(" (a PFC deadlock formed at {})", us(formed));
    }
    cause
}

/// Why a run with unfinished work ran out of events at `now` (`left`: flows unfinished;
/// `formed`: when the first PFC deadlock found formed; `unrepaired`: packets dropped, when
/// `fabric.rto` is none; `paused`: switch port classes paused; `stuck`: the first stuck QP).
/// The parallel driver says the same from the partitions' numbers.
pub(crate) fn idle_cause(
    now: Time,
    left: usize,
    formed: Option<Time>,
    unrepaired: Option<u64>,
    paused: u32,
    stuck: Option<String>,
) -> String {
    let mut cause = format!("nothing left to simulate at {} with {left} flow(s) unfinished", us(now));
    if let Some(formed) = formed {
        cause += &format!("; a PFC deadlock formed at {}", us(formed));
    } else if let Some(drops) = unrepaired.filter(|&d| d > 0) {
        cause += &format!("; {drops} packet(s) were dropped and fabric.rto is none: nothing retransmits them");
    } else if paused > 0 {
        cause += &format!("; {paused} switch port class(es) stay paused");
    }
    if let Some(q) = stuck {
        cause += &format!("; first stuck QP: {q}");
    }
    cause
}

/// `t + d`, saturating at `Time::MAX` (a huge timeout means never).
pub(crate) fn later(t: Time, d: Time) -> Time {
    Time(t.0.saturating_add(d.0))
}

/// A time for messages, in microseconds.
pub(crate) fn us(t: Time) -> String {
    format!("{:.3} us", t.0 as f64 / 1e6)
}

impl Watch {
    pub(in crate::sim) fn new(
        cfg: &SimConfig,
        ports: usize,
        total_link_delay: Time,
        first_start: Option<Time>,
    ) -> Watch {
        let window = stall_window(cfg, total_link_delay);
        let next_stall_check = first_start.map_or(Time::MAX, |t| later(t, window));
        Watch {
            next_check: next_stall_check,
            next_deadlock_check: Time::MAX,
            next_stall_check,
            paused_at: vec![[Time::ZERO; NUM_PRIOS]; ports],
            paused_pairs: 0,
            stall_window: window,
            progress_mark: (0, 0, 0),
            found: Found::default(),
            stall_cause: None,
            first_loss: None,
        }
    }

    /// How often the deadlock check looks while something is paused: a quarter of the
    /// timeout, at most 1 ms, so a cycle is found within the timeout plus that.
    pub(crate) fn period(timeout: Time) -> Time {
        Time((timeout.0 / 4).clamp(1, Time::from_us(1000).0))
    }

    /// A switch port's class `q` became paused (or resumed) at `now`.
    pub(in crate::sim) fn pause_changed(&mut self, port: PortId, q: usize, paused: bool, now: Time, timeout: Time) {
        if paused {
            self.paused_at[port.idx()][q] = now;
            self.paused_pairs += 1;
            if self.next_deadlock_check == Time::MAX {
                self.next_deadlock_check = later(now, timeout);
                self.next_check = self.next_check.min(self.next_deadlock_check);
            }
        } else {
            self.paused_pairs -= 1;
        }
    }

    /// Work starts at `at` (a message posted by an application after setup): the stall
    /// check runs a window after it at the latest.
    pub(in crate::sim) fn arm_stall_check(&mut self, at: Time) {
        if self.next_stall_check == Time::MAX {
            self.next_stall_check = later(at, self.stall_window);
            self.rearm();
        }
    }

    fn rearm(&mut self) {
        self.next_check = self.next_deadlock_check.min(self.next_stall_check);
    }
}

impl Simulation {
    /// Runs the checks due at `t` (before the event at `t`). Returns why the run must stop,
    /// if it must.
    pub(in crate::sim) fn on_watch(&mut self, t: Time) -> Option<StopReason> {
        if self.part.is_some() {
            // One partition sees part of the fabric: the parallel driver watches instead.
            self.watch.next_check = Time::MAX;
            return None;
        }
        if t >= self.watch.next_deadlock_check {
            self.watch.next_deadlock_check = Time::MAX;
            if self.watch.paused_pairs > 0 {
                if let Some(stop) = self.look_for_deadlock(t, self.cfg.deadlock_timeout) {
                    self.now = t;
                    return Some(stop);
                }
                self.watch.next_deadlock_check = later(t, Watch::period(self.cfg.deadlock_timeout));
            }
        }
        if t >= self.watch.next_stall_check {
            if let Some(cause) = self.stall_check(t) {
                self.now = t;
                self.watch.stall_cause = Some(cause);
                return Some(StopReason::Stalled);
            }
        }
        self.watch.rearm();
        None
    }

    /// Why the run ends when no event is left: finished, or stalled with its cause (a
    /// deadlock if the paused ports form one: nothing will ever resume them).
    pub(in crate::sim) fn idle_reason(&mut self) -> StopReason {
        if self.part.is_some() {
            return StopReason::Paused; // the parallel driver decides when the run is over
        }
        if self.flows_done == self.work_total() {
            return StopReason::Finished;
        }
        if self.watch.paused_pairs > 0 {
            if let Some(stop) = self.look_for_deadlock(self.now, Time::ZERO) {
                return stop;
            }
        }
        if self.watch.stall_cause.is_none() {
            self.watch.stall_cause = Some(self.idle_cause());
        }
        StopReason::Stalled
    }

    fn idle_cause(&self) -> String {
        let formed = self.watch.found.first.as_ref().map(|d| d.formed);
        let left = self.work_total() - self.flows_done;
        let unrepaired = self.cfg.rto.is_none().then_some(self.counters.drops);
        let stuck = self.stuck_qp().map(|i| self.describe_stuck_qp(i, self.qps[i].in_flight));
        idle_cause(self.now, left, formed, unrepaired, self.watch.paused_pairs, stuck)
    }

    /// The first QP of this simulation's hosts with unacknowledged work (its slot).
    pub(in crate::sim) fn stuck_qp(&self) -> Option<usize> {
        self.qps.iter().position(|q| !q.finished && q.snd_una < q.posted && self.owns(q.src))
    }

    /// QP `i` described by what could hold it, `in_flight` of its packets in the network
    /// (for a stall's cause: what a user, or a bug report, needs to see why it stopped).
    pub(in crate::sim) fn describe_stuck_qp(&self, i: usize, in_flight: u32) -> String {
        let qp = &self.qps[i];
        let nic = &self.nics[qp.nic.idx()];
        let listed = nic.qps.iter().any(|&x| x.idx() == i);
        format!(
            "{i} ({}->{}): acked {} of {} bytes, sent {}, {in_flight} packet(s) in the network, window {} bytes, \
             rate {}, next send at {}, NIC wake {}, listed by its NIC {listed}, {} QP(s) in its CC group",
            qp.src.0,
            qp.dst.0,
            qp.snd_una,
            qp.posted,
            qp.snd_nxt,
            qp.window(),
            qp.rate,
            us(qp.next_avail),
            if nic.wake_at == Time::MAX { "none".to_string() } else { us(nic.wake_at) },
            // Its group's size, not its id: ids are a partition's own under `--threads`.
            self.groups.get(qp.cc_group.idx()).map_or(0, |g| g.members.len()),
        )
    }

    /// `Some(cause)` when the run made no progress since the last check and cannot.
    fn stall_check(&mut self, t: Time) -> Option<String> {
        let mark = (self.counters.payload_bytes_delivered, self.flows_done, self.next_flow);
        let unfinished = self.flows_done < self.work_total();
        let all_started = self.next_flow == self.flows.len() && t >= self.apps.last_post;
        // A receive WQE reposted, or an RNR timer run out, within the window or later: the
        // run waits on the responder's application, it is not stuck (`mech::rnr`).
        let waiting = self.rnr_busy_until() > t.saturating_sub(self.watch.stall_window);
        if mark != self.watch.progress_mark || !unfinished || !all_started || waiting {
            self.watch.progress_mark = mark;
            self.watch.next_stall_check = later(t, self.watch.stall_window);
            return None;
        }
        let formed = self.watch.found.first.as_ref().map(|d| d.formed);
        Some(stall_cause(self.watch.stall_window, t, self.work_total() - self.flows_done, formed))
    }

    /// Looks for a cycle among ports paused for at least `min_age`. A new one is recorded;
    /// returns the stop reason when the run must end for it.
    fn look_for_deadlock(&mut self, t: Time, min_age: Time) -> Option<StopReason> {
        let share = self.wait_share(t, min_age);
        self.watch.found.search(&self.topo, std::slice::from_ref(&share), t)?;
        match self.cfg.on_deadlock {
            crate::sim::OnDeadlock::Stop => Some(StopReason::PfcDeadlock),
            crate::sim::OnDeadlock::Continue => None,
        }
    }

    /// This simulation's part of the wait-for graph at `t`: the (switch port, class) pairs
    /// of its own switches paused at least `min_age` and holding packets of the class, and
    /// for every class queue that holds packets, the upstream port of each ingress they
    /// came through. A partition sees only its own switches; the parts of every partition
    /// together are what one simulation sees.
    pub(in crate::sim) fn wait_share(&self, t: Time, min_age: Time) -> WaitShare {
        let mut share = WaitShare::default();
        for (e, st) in self.ports.iter().enumerate() {
            if st.on_host || !self.owns(st.node) {
                continue;
            }
            for q in 1..NUM_PRIOS {
                if st.queues[q].is_empty() {
                    continue;
                }
                let at = key(e, q);
                let paused_at = self.watch.paused_at[e][q];
                if st.paused[q] && t.saturating_sub(paused_at) >= min_age {
                    share.stuck.push((at, paused_at));
                }
                let mut last = PortId::NONE;
                for r in st.queued(q, &self.packets) {
                    let ingress = self.packets.get(r).ingress;
                    if ingress != last {
                        last = ingress;
                        share.waits.push((key(self.ports[ingress.idx()].peer.idx(), q), at));
                    }
                }
            }
        }
        share
    }

    /// The earliest time this simulation's own pauses ask for a deadlock check (`Time::MAX`:
    /// none since the last disarm), for the parallel driver.
    pub(in crate::sim) fn deadlock_check_due(&self) -> Time {
        self.watch.next_deadlock_check
    }

    /// Switch (port, class) pairs this simulation has paused now.
    pub(in crate::sim) fn paused_pairs(&self) -> u32 {
        self.watch.paused_pairs
    }

    /// Until when receive queues and RNR timers keep the run waiting (`mech::rnr`).
    pub(in crate::sim) fn rnr_busy_until(&self) -> Time {
        self.mech.rnr.as_ref().map_or(Time::ZERO, |r| r.busy_until)
    }

    /// The stall check this simulation armed (at its first flow's start or its first
    /// message's post, a stall window later; `Time::MAX`: none) and the window, for the
    /// parallel driver, which runs the checks on the whole run's progress.
    pub(in crate::sim) fn stall_schedule(&self) -> (Time, Time) {
        (self.watch.next_stall_check, self.watch.stall_window)
    }

    /// The parallel driver's global check schedule, so that a pause re-arms only when the
    /// whole run's schedule is disarmed (as in one simulation).
    pub(in crate::sim) fn set_deadlock_check(&mut self, at: Time) {
        self.watch.next_deadlock_check = at;
    }
}
