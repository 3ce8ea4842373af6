//! The run's most QPs alive at once (`Counters::qps_peak`) over every partition, as one
//! thread counts it in the origin order.
//!
//! Each partition counts the QPs its own hosts open and release. The run's count at any
//! point of the partition-independent event order is the sum of the partitions' counts, so
//! its peak is the highest running total of their changes merged in that order, not the sum
//! of the partitions' peaks (which two partitions may reach at different times). A
//! partition logs each change with the time and tie key of the event being handled
//! (`EventQueue::popped_seq`) and the flows admitted so far; at every window's barrier the
//! logs are merged by (time, key, flows), partition after partition and each in its own
//! order among equals, and the running total and its highest value carry over to the next
//! window. A log holds one window's changes: at most one opening and one release per QP
//! that changed in that window. A run whose QPs are all opened at setup logs nothing.
//!
//! Why the merged order is the one-thread order (`docs/model/determinism.md`): an event's
//! key is its origin (the node whose handler pushed it) and that origin's own counter, the
//! same however the nodes are cut, and a node's events run in one partition, so two
//! partitions never log the same (time, key) for a node's events. Events that every
//! partition runs share their key: flow admission, where the flows admitted so far order the
//! QPs as one thread opens them, flow after flow, and link events, which only release. Host
//! applications' events take their keys from a counter each partition keeps for itself, but
//! they only open QPs (a QP released in one needs a packet lost on its own wire as it is
//! sent), and a run of openings (or of releases) between the same two other changes reaches
//! the same highest total in any order.
//!
//! The count is one thread's as long as each partition releases a QP at the event one
//! thread does. A partition releases a QP when its own copy of `Qp::in_flight` reaches zero
//! (`host::release_if_quiet`), and packets that leave the network elsewhere are counted off
//! in another partition's copy: the data packets a receiver takes without an ACK
//! (`ack_interval` above 1, an unreliable transport) and those a switch outside the
//! sender's partition drops. Such a QP is released later, or not before the run ends, so the count is then
//! higher than one thread's, never lower (the partitions' copies only hold back releases),
//! and never above the sum of the partitions' peaks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::sim::Simulation;
use crate::units::Time;

/// One change of a partition's live QPs, placed in the run's event order.
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) struct QpChange {
    time: Time,
    /// The tie key of the event being handled.
    key: u64,
    /// Flows of the list admitted so far (orders the openings of one flow-admission event).
    flows: u64,
    /// Opened (else released).
    opened: bool,
}

impl Simulation {
    /// Logs, in a partition of a parallel run, that a QP was opened (`opened`) or released
    /// by the event being handled. One test of an `Option` elsewhere, at QP open and release
    /// only.
    #[inline]
    pub(in crate::sim) fn log_live_qps(&mut self, opened: bool) {
        if let Some(p) = self.part.as_deref_mut() {
            let (time, key, flows) = (self.now, self.queue.popped_seq(), self.next_flow as u64);
            p.qp_log.push(QpChange { time, key, flows, opened });
        }
    }
}

/// The run's live QPs and their highest count so far, carried across windows and calls.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LiveQps {
    pub(super) live: u64,
    pub(super) peak: u64,
}

/// What the threads share for the count during one call of `ParallelRun::run`: each
/// partition's log of the window, and the run's count, which thread 0 advances between the
/// window's two barrier waits.
pub(super) struct PeakMerge {
    logs: Vec<Mutex<Vec<QpChange>>>,
    /// Some partition posted a log this window.
    posted: AtomicBool,
    count: Mutex<(LiveQps, Vec<QpChange>)>,
}

impl PeakMerge {
    pub(super) fn new(parts: usize, count: LiveQps) -> PeakMerge {
        PeakMerge {
            logs: (0..parts).map(|_| Mutex::new(Vec::new())).collect(),
            posted: AtomicBool::new(false),
            count: Mutex::new((count, Vec::new())),
        }
    }

    /// Partition `me`, after its window and before the first wait: hands over its log
    /// (swapped with the emptied buffer of the window before, so nothing is copied).
    pub(super) fn post(&self, me: usize, sim: &mut Simulation) {
        let Some(p) = sim.part.as_deref_mut().filter(|p| !p.qp_log.is_empty()) else { return };
        let mut slot = self.logs[me].lock().expect("qp log");
        if slot.is_empty() {
            std::mem::swap(&mut *slot, &mut p.qp_log);
        } else {
            slot.append(&mut p.qp_log); // a window whose merge did not run (a failed run)
        }
        self.posted.store(true, Ordering::Release);
    }

    /// Thread 0, between the window's two waits (every log of the window posted, none of
    /// the next): the changes in the run's order, added to the count.
    pub(super) fn merge(&self) {
        if !self.posted.swap(false, Ordering::AcqRel) {
            return;
        }
        let mut held = self.count.lock().expect("qp count");
        let (count, all) = &mut *held;
        all.clear();
        for slot in &self.logs {
            let mut log = slot.lock().expect("qp log");
            all.extend_from_slice(&log);
            log.clear();
        }
        // Stable: among equal keys, partition after partition, each in its own order.
        all.sort_by_key(|c| (c.time, c.key, c.flows));
        for c in all.iter() {
            if c.opened {
                count.live += 1;
                count.peak = count.peak.max(count.live);
            } else {
                debug_assert!(count.live > 0, "a QP released before it opened");
                count.live = count.live.saturating_sub(1);
            }
        }
    }

    /// The count once the threads have left.
    pub(super) fn into_count(self) -> LiveQps {
        self.count.into_inner().expect("qp count").0
    }
}
