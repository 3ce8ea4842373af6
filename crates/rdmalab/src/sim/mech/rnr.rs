//! Receive queues and RNR NAKs of RC transport (`[rnic] recv_queue_depth`; docs/model/rnic.md,
//! "Receive queues and RNR NAKs").
//!
//! A SEND lands in the buffer of the responder's next receive WQE; a WRITE needs none. A
//! responder with no receive WQE posted when a SEND's first packet arrives in order
//! discards the packet and answers an RNR NAK carrying that packet's PSN and the timer it
//! asks for (IBA vol. 1 §9.7.5.2.8, the AETH's RNR NAK code, Table 45's timer values). The
//! requester stops the QP for the timer, then sends again from that PSN (go-back-N from
//! there, §9.7.5.2.8); after `rnr_retry` RNR NAKs without progress (7: never) the WR completes
//! in error, as the retry limit's does (`mech::retry`, `host/completions.rs::fail_qp`).
//!
//! Hooks (reached only when `Mechanisms::rnr` is `Some`):
//! - receiver, per in-order RC data packet (`host/rx.rs::receive_data`): [`on_arrival`]
//!   consumes a WQE at a SEND's first packet or refuses it, and at its last packet schedules
//!   the repost;
//! - sender, an RNR NAK (`host/rx.rs::receive_ack`, tested only on NACKs): [`on_nak`].
//!
//! Reposting needs no event: a consumed WQE is posted again `recv_repost_delay` after its
//! message's receive completion has been handled (`mech::recv_processing`), so the times are
//! known when the message ends and are consumed lazily, in order, by the next first packet
//! (the delay is the same for all and a host's handling times never decrease, so the list
//! stays sorted).
//!
//! The receive queue belongs to the connection between two hosts, not to the simulator's
//! QP slot: a plain flow is one message on a QP of its own, while an application keeps one
//! RC QP per peer and sends its messages on it, so the flows from one host to another are
//! that QP's messages and draw on one receive queue.

use std::collections::{HashMap, VecDeque};

use super::recv_processing::RecvProcessing;
use crate::config::{RnrConfig, RNR_RETRY_FOREVER};
use crate::fabric::Packet;
use crate::ids::QpId;
use crate::rnic::Qp;
use crate::stats::table::{ColumnKind, Table, TableSchema};
use crate::stats::NamedCounts;
use crate::units::Time;
use crate::workload::FlowSpec;

/// The responder's receive queue of one connection.
#[derive(Debug, Default)]
struct RecvQueue {
    /// WQEs posted now (not counting `reposts` that are not yet due).
    posted: u32,
    /// When each consumed WQE is posted again, oldest first. Bounded by the depth: a WQE is
    /// taken at a message's first packet and queued here at its last, so posted, in use and
    /// waiting to be reposted always add up to `recv_queue_depth` (checked in debug builds).
    reposts: VecDeque<Time>,
}

impl RecvQueue {
    /// Takes one WQE posted by `now` (reposts that fell due first); false: none is posted.
    fn take(&mut self, now: Time) -> bool {
        while self.reposts.front().is_some_and(|&t| t <= now) {
            self.reposts.pop_front();
            self.posted += 1;
        }
        if self.posted == 0 {
            return false;
        }
        self.posted -= 1;
        true
    }
}

/// The requester's count of RNR NAKs without progress, per QP slot.
#[derive(Clone, Copy, Debug, Default)]
struct Requester {
    /// The slot's occupant it belongs to (`Qp::gen`).
    gen: u16,
    /// The PSN the last RNR NAK named: a NAK naming another means the responder took
    /// something in between.
    psn: u64,
    /// RNR NAKs in a row at `psn`.
    naks: u32,
}

/// The mechanism's state: receive queues by connection at responders, RNR retry counts at
/// requesters, and what it counted.
#[derive(Debug)]
pub(crate) struct Rnr {
    cfg: RnrConfig,
    timer: Time,
    nack_interval: Time,
    /// By (requester host, responder host), packed in a u64, or by responder host alone
    /// under `shared` (looked up, never iterated).
    queues: HashMap<u64, RecvQueue>,
    /// The responder's application, which hands each message's WQE back after handling it.
    processing: RecvProcessing,
    /// By requester QP slot, grown on the first RNR NAK of a slot.
    requesters: Vec<Requester>,
    /// RNR NAKs sent per plain flow (by flow index), grown on a flow's first.
    per_flow: Vec<u32>,
    /// RNR NAKs sent by responders.
    pub naks: u64,
    /// WRs failed by `rnr_retry`.
    pub retry_exceeded: u64,
    /// The latest time a receive WQE is posted again or a requester's RNR timer runs out:
    /// the run is waiting on this mechanism, not stalled, until then (`sim::watch`).
    pub busy_until: Time,
}

impl Rnr {
    pub(crate) fn new(cfg: RnrConfig, nack_interval: Time) -> Rnr {
        let timer = cfg.timer();
        Rnr {
            cfg,
            timer,
            nack_interval,
            queues: HashMap::new(),
            processing: RecvProcessing::new(cfg.recv_processing),
            requesters: Vec::new(),
            per_flow: Vec::new(),
            naks: 0,
            retry_exceeded: 0,
            busy_until: Time::ZERO,
        }
    }

    /// (flow, RNR NAKs) of every plain flow that met one, by flow.
    pub(crate) fn flow_rows(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.per_flow.iter().enumerate().filter(|(_, &n)| n > 0).map(|(f, &n)| (f as u64, n as u64))
    }
}

/// The settings no run can use, naming the field. A scenario file or a Python scenario is
/// refused earlier, at its line (`scenario::rnic`); this is the check of a configuration
/// built in code.
pub(super) fn check(cfg: &crate::config::SimConfig) -> crate::error::Result<()> {
    use crate::error::Error;
    let Some(r) = cfg.rnr else { return Ok(()) };
    let depth = if r.shared { "rnic.srq_depth" } else { "rnic.recv_queue_depth" };
    if r.recv_queue_depth == 0 {
        return Err(Error::scenario(depth, "must be at least 1 (leave it out: unlimited)"));
    }
    if r.min_rnr_timer > 31 {
        return Err(Error::scenario("rnic.min_rnr_timer", format!("{}: the encoding is 0 to 31", r.min_rnr_timer)));
    }
    if r.rnr_retry > RNR_RETRY_FOREVER {
        return Err(Error::scenario("rnic.rnr_retry", format!("{}: 0 to 7 (7: retry forever)", r.rnr_retry)));
    }
    if cfg.irn.is_some() {
        let m =
            "receive queues and RNR NAKs are modelled with go-back-N only (not with `fabric.loss_recovery = \"irn\"`)";
        return Err(Error::scenario(depth, m));
    }
    Ok(())
}

/// Hook "receiver, per in-order RC data packet" on receiver slot `qp` (whose `rx.expected`
/// is `pkt.seq`): a SEND's first packet takes a receive WQE, or, with none posted, is
/// refused (returns true: the caller discards it and answers an RNR NAK at `rx.expected`);
/// a SEND's last packet schedules its WQE's repost. The QP tells whether its messages are
/// SENDs (`RxState::sends`: a plain flow's verb, or a staggered incast's); `flows` sizes the
/// per-flow counts. Out of line: the receive path of a run without the
/// mechanism keeps only the test of `Mechanisms::rnr`.
#[inline(never)]
pub(in crate::sim) fn on_arrival(rnr: &mut Rnr, qp: &mut Qp, flows: &[FlowSpec], pkt: &Packet, now: Time) -> bool {
    if pkt.seq != qp.rx.expected || !qp.rx.sends {
        return false;
    }
    let depth = rnr.cfg.recv_queue_depth;
    // A shared receive queue is the responder's, whichever requester the SEND comes from.
    let requester = if rnr.cfg.shared { u32::MAX } else { qp.src.0 };
    let rq = rnr
        .queues
        .entry(((requester as u64) << 32) | qp.dst.0 as u64)
        .or_insert_with(|| RecvQueue { posted: depth, reposts: VecDeque::new() });
    if pkt.seq == qp.rx.msg_start && !rq.take(now) {
        rnr.naks += 1;
        if !qp.rx.flow.is_none() {
            let f = qp.rx.flow.idx();
            if rnr.per_flow.len() <= f {
                rnr.per_flow.resize(flows.len().max(f + 1), 0);
            }
            rnr.per_flow[f] += 1;
        }
        // One NAK per error, as after a sequence error: the packets behind it, already on
        // their way, are dropped without a NACK each (they would only repeat it).
        qp.rx.last_nack = qp.rx.expected;
        qp.rx.nack_quiet_until = now + rnr.nack_interval;
        return true;
    }
    if pkt.last_of_msg {
        // The receive completion is made now; the application polls it, consumes the data
        // (one message at a time, `recv_processing` each) and posts the buffer again
        // (`ibv_post_recv`) `recv_repost_delay` later.
        let handled = rnr.processing.handled_at(qp.dst.0, now);
        let back = handled + rnr.cfg.recv_repost_delay;
        rq.reposts.push_back(back);
        rnr.busy_until = rnr.busy_until.max(back);
        debug_assert!(rq.posted as usize + rq.reposts.len() <= depth as usize, "more WQEs than the queue's depth");
    }
    false
}

/// Hook "sender, an RNR NAK" naming `psn` on QP `qp_id` (the ACK it also is has been
/// applied: `snd_una` is at least `psn`). Stops the QP for the timer and rewinds it to
/// `psn`; returns false when `rnr_retry` is exhausted (the caller fails the WR, `fail_qp`).
#[inline(never)]
pub(in crate::sim) fn on_nak(rnr: &mut Rnr, qp_id: QpId, qp: &mut Qp, psn: u64, now: Time) -> bool {
    if psn < qp.snd_una || qp.snd_nxt <= psn {
        return true; // a late NAK: the QP has gone past it, or is already back there
    }
    let i = qp_id.idx();
    if rnr.requesters.len() <= i {
        rnr.requesters.resize(i + 1, Requester::default());
    }
    let r = &mut rnr.requesters[i];
    if r.gen != qp.gen || r.psn != psn {
        *r = Requester { gen: qp.gen, psn, naks: 0 };
    }
    r.naks += 1;
    if rnr.cfg.rnr_retry != RNR_RETRY_FOREVER && r.naks > rnr.cfg.rnr_retry as u32 {
        rnr.retry_exceeded += 1;
        return false;
    }
    qp.snd_nxt = psn;
    // Nothing is outstanding while the QP waits: its transport timer stops (the next
    // packet sent arms it again, `host/tx.rs::send_data`), and the NIC's arbiter skips it
    // until the timer runs out (the QP stays marked, its bytes unsent: `Simulation::mark_if_unsent`).
    qp.rto_deadline = Time::MAX;
    qp.next_avail = qp.next_avail.max(now + rnr.timer);
    rnr.busy_until = rnr.busy_until.max(now + rnr.timer);
    true
}

/// `rnr`: RNR NAKs sent per plain flow, for the flows that met one (docs/model/rnic.md,
/// "Receive queues and RNR NAKs").
pub(crate) const TABLE: TableSchema =
    TableSchema { name: "rnr", columns: &[("flow", ColumnKind::U32), ("rnr_naks", ColumnKind::U64)] };

/// Its counters, zeros when receive queues are off (every run reports the same names).
pub(super) fn counters(r: Option<&Rnr>, c: &mut NamedCounts) {
    c.push("rnr_naks", r.map_or(0, |r| r.naks));
    c.push("rnr_retry_exceeded", r.map_or(0, |r| r.retry_exceeded));
}

/// Its table, when receive queues are on.
pub(super) fn tables(r: Option<&Rnr>, out: &mut Vec<Table>) {
    if let Some(r) = r {
        let (flows, naks): (Vec<u64>, Vec<u64>) = r.flow_rows().unzip();
        out.push(Table::new(TABLE.name, &["flow"]).u64("flow", flows).u64("rnr_naks", naks));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_hands_out_its_depth_then_what_was_reposted_by_now() {
        let mut q = RecvQueue { posted: 2, reposts: VecDeque::new() };
        assert!(q.take(Time::ZERO) && q.take(Time::ZERO));
        assert!(!q.take(Time::ZERO));
        q.reposts.extend([Time::from_us(5), Time::from_us(7)]);
        assert!(!q.take(Time::from_us(4)));
        assert!(q.take(Time::from_us(5)));
        assert!(!q.take(Time::from_us(6)));
        // Both due by 8 µs: one taken, one left posted.
        q.reposts.push_back(Time::from_us(8));
        assert!(q.take(Time::from_us(8)) && q.take(Time::from_us(8)) && !q.take(Time::from_us(8)));
    }

    #[test]
    fn the_timer_codes_follow_table_45() {
        // Table 45 from 0.01 ms (code 1): 10, 20, 30 µs, then each value twice the one two
        // codes before (40, 60, 80, 120, ...); code 0, the longest, is 2^16 times 0.01 ms.
        let t = |c: u8| {
            let cfg = RnrConfig {
                recv_queue_depth: 1,
                shared: false,
                recv_repost_delay: Time::ZERO,
                recv_processing: Time::ZERO,
                min_rnr_timer: c,
                rnr_retry: 0,
            };
            cfg.timer()
        };
        assert_eq!([t(1), t(2), t(3)], [10, 20, 30].map(Time::from_us));
        for c in 4..=31u8 {
            assert_eq!(t(c).0, 2 * t(c - 2).0, "code {c}");
        }
        assert_eq!(t(0).0, (1 << 16) * t(1).0, "0 is 655.36 ms");
        assert_eq!(t(31), Time::from_us(491_520));
    }
}
