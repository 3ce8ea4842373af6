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
//! window. A log holds one window's changes: the openings and releases, and what decides a
//! release that another partition sees (below).
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
//! The count is one thread's as long as each QP is released at the event one thread
//! releases it: the first event that finds it finished with none of its packets in the
//! network (`host::release_if_quiet`, called where a packet of it leaves the network and where
//! its sender handles an ACK). Each partition counts packets in the network in its own copy
//! of `Qp::in_flight`; a packet that leaves the network outside its sender's partition (a data
//! packet its receiver takes without an ACK, with `ack_interval` above 1 or an unreliable
//! transport, or a packet a switch there drops) is counted off in another partition's copy,
//! so the sender's partition alone cannot see when the run's count reaches zero. Such a
//! partition logs the departure (`Change::Left`, the QP named by its sending host and slot),
//! and the sender's partition logs its own count of a finished QP that it finds not quiet
//! (`Change::Busy`). The copies sum to the run's count, so the merge, walking the changes in
//! the run's order, releases the QP at the first of these events where the departures logged
//! elsewhere equal the sender's count: the event one thread releases it at. A sender's
//! partition that reaches zero in its own copy has seen every packet of the QP leave, and
//! releases it itself (`Change::Released`). Everything else that reads `Qp::in_flight` (a
//! DCQCN group's quiet test, a stall's cause) reads the partitions' copies, not the logs.
//!
//! A departure costs a partition one entry in its log of the window, and the merge one
//! look-up of the QP, only in a parallel run and only for a packet that leaves the network
//! outside its sender's partition; a one-thread run tests one `Option` there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::fabric::{Packet, PacketKind};
use crate::ids::{NodeId, QpId};
use crate::sim::Simulation;
use crate::units::Time;

/// One change of a partition's live QPs, or of what decides when one is released, placed in
/// the run's event order.
#[derive(Clone, Copy, Debug)]
pub(in crate::sim) struct QpChange {
    time: Time,
    /// The tie key of the event being handled.
    key: u64,
    /// Flows of the list admitted so far (orders the openings of one flow-admission event).
    flows: u64,
    what: Change,
}

/// What a logged change is. A QP is named by its sending host and the slot its sender's
/// partition keeps it in (a slot opened while running is that partition's own).
#[derive(Clone, Copy, Debug)]
enum Change {
    Opened,
    /// Released by its sender's partition, whose copy of its packets in the network is zero.
    Released(NodeId, QpId),
    /// A packet of a QP whose sender another partition holds left the network here: a data
    /// packet its receiver took without a reply, or a packet a switch dropped.
    Left(NodeId, QpId),
    /// In the sender's partition, the QP is finished with `count` packets in the network as
    /// that partition counts them; `call`: at an event where one thread releases a QP it
    /// finds quiet (`host::release_if_quiet`), rather than where it only finishes.
    Busy {
        host: NodeId,
        qp: QpId,
        count: u32,
        call: bool,
    },
}

impl Simulation {
    /// Logs, in a partition of a parallel run, that a QP was opened by the event being
    /// handled. One test of an `Option` elsewhere, at QP open only.
    #[inline]
    pub(in crate::sim) fn log_opened_qp(&mut self) {
        self.log_qp_change(Change::Opened);
    }

    /// Logs, in a partition, that its sender's partition released QP `id`.
    #[inline]
    pub(in crate::sim) fn log_released_qp(&mut self, id: QpId) {
        if self.part.is_some() {
            self.log_qp_change(Change::Released(self.qps[id.idx()].src, id));
        }
    }

    /// Data packet, ACK or NACK `pkt` left the network at the event being handled (taken
    /// without a reply, or dropped): in a partition that does not hold its QP's sender, the
    /// run's count learns of it from the log. One test of an `Option` elsewhere.
    #[inline]
    pub(in crate::sim) fn log_left_network(&mut self, pkt: &Packet) {
        if self.part.is_some() {
            self.log_left_away(pkt);
        }
    }

    #[cold]
    #[inline(never)]
    fn log_left_away(&mut self, pkt: &Packet) {
        if !self.holds_sender_of(pkt) {
            let host = if pkt.kind == PacketKind::Data { pkt.src } else { pkt.dst };
            self.log_qp_change(Change::Left(host, pkt.qp));
        }
    }

    /// QP `id` is finished with packets in the network as this partition counts them
    /// (`call`: `release_if_quiet` found it so): in its sender's partition of a parallel run,
    /// logs its count, which the run's count compares with the packets that left elsewhere.
    /// One test of an `Option` elsewhere.
    #[inline]
    pub(in crate::sim) fn log_busy_qp(&mut self, id: QpId, call: bool) {
        if self.part.is_some() {
            self.log_busy_here(id, call);
        }
    }

    #[cold]
    #[inline(never)]
    fn log_busy_here(&mut self, id: QpId, call: bool) {
        let q = &self.qps[id.idx()];
        // (A receiver's half of a slot, or a setup QP's copy in another partition, is not
        // the sender's state.)
        if q.finished && q.in_flight != 0 && self.owns(q.src) {
            let (host, count) = (q.src, q.in_flight);
            self.log_qp_change(Change::Busy { host, qp: id, count, call });
        }
    }

    #[inline]
    fn log_qp_change(&mut self, what: Change) {
        if let Some(p) = self.part.as_deref_mut() {
            let (time, key, flows) = (self.now, self.queue.popped_seq(), self.next_flow as u64);
            p.qp_log.push(QpChange { time, key, flows, what });
        }
    }
}

/// A QP some of whose packets left the network outside its sender's partition, as the run's
/// count follows it.
#[derive(Clone, Copy, Debug, Default)]
struct Away {
    /// Its packets that left the network outside its sender's partition (wrapping, as the
    /// partitions' copies count).
    left: u32,
    /// Its sender finished it.
    finished: bool,
    /// Its packets in the network as its sender's partition last counted them.
    count: u32,
}

/// The run's live QPs and their highest count so far, carried across windows and calls.
#[derive(Clone, Debug, Default)]
pub(super) struct LiveQps {
    pub(super) live: u64,
    pub(super) peak: u64,
    /// The QPs not yet released some of whose packets left the network outside their
    /// sender's partition, by (sending host, slot).
    away: HashMap<(NodeId, QpId), Away>,
}

impl LiveQps {
    /// The count `live` after setup, its highest `peak`.
    pub(super) fn new(live: u64, peak: u64) -> LiveQps {
        LiveQps { live, peak, away: HashMap::new() }
    }

    /// One QP fewer alive.
    fn release(&mut self) {
        debug_assert!(self.live > 0, "a QP released before it opened");
        self.live = self.live.saturating_sub(1);
    }

    /// Applies `c`, the next change in the run's order.
    fn apply(&mut self, c: &QpChange) {
        match c.what {
            Change::Opened => {
                self.live += 1;
                self.peak = self.peak.max(self.live);
            }
            Change::Released(host, qp) => {
                if !self.away.is_empty() {
                    self.away.remove(&(host, qp));
                }
                self.release();
            }
            // One thread releases a finished QP at the first event that leaves none of its
            // packets in the network and looks (`host::release_if_quiet`): a packet leaving
            // anywhere, or the sender's own look. The partitions' copies sum to the run's.
            Change::Left(host, qp) => {
                let a = self.away.entry((host, qp)).or_default();
                a.left = a.left.wrapping_add(1);
                if a.finished && a.left == a.count {
                    self.away.remove(&(host, qp));
                    self.release();
                }
            }
            Change::Busy { host, qp, count, call } => {
                let a = self.away.entry((host, qp)).or_default();
                (a.finished, a.count) = (true, count);
                if call && a.left == count {
                    self.away.remove(&(host, qp));
                    self.release();
                }
            }
        }
    }
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
            count.apply(c);
        }
    }

    /// The count once the threads have left.
    pub(super) fn into_count(self) -> LiveQps {
        self.count.into_inner().expect("qp count").0
    }
}
