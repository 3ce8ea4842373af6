//! The NIC's transmit arbitration.
//!
//! Like the reference's `RdmaEgressQueue`: ACK/NACKs the host generates go first, then
//! data by per-packet round robin over the QPs, starting after the last one served. A QP
//! is eligible when its priority is not paused, it has bytes left, its window has room and
//! its pacing time has come. When none is eligible the NIC sleeps until the earliest pacing
//! time (a paused or window-bound QP is woken by the RESUME or ACK that frees it).

use std::collections::{HashMap, VecDeque};

use crate::fabric::{Packet, NUM_PRIOS};
use crate::ids::{NodeId, PortId, QpId};
use crate::rnic::{Completion, Qp, QpCache};
use crate::units::{Rate, Time};

/// What the arbiter decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the next packet of this QP.
    Send(QpId),
    /// Nothing now; the earliest paced QP may send at this time.
    Wait(Time),
    /// Nothing to send until an ACK, RESUME or new WQE arrives.
    Idle,
}

/// Whether `qp` could send now but for its pacing: its class is not paused, it has bytes
/// left and its window has room. The tenant arbiter asks this; the per-QP loop in
/// [`Nic::select`] writes the same test out, because calling this there (or a negated twin)
/// cost the reference's S2 DCQCN run 0.7-1.6 M more instructions in the LTO build.
#[inline]
pub(crate) fn may_send(qp: &Qp, paused: &[bool; NUM_PRIOS]) -> bool {
    !paused[qp.pg as usize] && qp.has_data() && !qp.window_bound()
}

/// One host's RNIC.
#[derive(Debug)]
pub struct Nic {
    /// The host.
    pub node: NodeId,
    /// Its (single) port.
    pub port: PortId,
    /// Line rate.
    pub rate: Rate,
    /// Active QPs in arbitration order.
    pub qps: Vec<QpId>,
    /// Position in `qps` of the last QP served.
    pub rr_last: usize,
    /// Some QPs in `qps` are finished and should be dropped from the list.
    pub has_finished: bool,
    /// ACK/NACKs waiting to leave (always before data).
    pub acks: VecDeque<Packet>,
    /// Time of the pending wake-up event (`Time::MAX` = none).
    pub wake_at: Time,
    /// QP-context cache, when modelled.
    pub cache: Option<QpCache>,
    /// Next source port per destination host (the reference's per-pair counter).
    pub next_sport: HashMap<NodeId, u16>,
    /// Completion queue (drained by applications or by the results collector).
    pub cq: VecDeque<Completion>,
    /// WQE engine (doorbell FIFO), with a host model (`[host]`); `None`: posting is immediate.
    pub engine: Option<crate::rnic::WqeEngine>,
    /// Serial context fetches: the arbiter waits for this QP's context until this time.
    pub stall: Option<(QpId, Time)>,
    /// `nic_arbitration = "tenant"`: data turns by tenant first (`rnic::tenant_rr`).
    pub by_tenant: Option<crate::rnic::TenantRr>,
}

impl Nic {
    /// A NIC with no QPs.
    pub fn new(node: NodeId, port: PortId, rate: Rate) -> Nic {
        Nic {
            node,
            port,
            rate,
            qps: Vec::new(),
            rr_last: 0,
            has_finished: false,
            acks: VecDeque::new(),
            wake_at: Time::MAX,
            cache: None,
            next_sport: HashMap::new(),
            cq: VecDeque::new(),
            engine: None,
            stall: None,
            by_tenant: None,
        }
    }

    /// The reference's source port for the next QP towards `dst`: 10000, 10001, ...
    pub fn allocate_sport(&mut self, dst: NodeId) -> u16 {
        let next = self.next_sport.entry(dst).or_insert(10000);
        let sport = *next;
        *next = next.wrapping_add(1);
        sport
    }

    /// Chooses the next QP to send from, round robin after the last one served.
    pub fn select(&mut self, qps: &[Qp], paused: &[bool; NUM_PRIOS], now: Time) -> Pick {
        if self.has_finished {
            self.drop_finished(qps);
        }
        if let Some(rr) = &mut self.by_tenant {
            return rr.select(&self.qps, qps, paused, now);
        }
        let n = self.qps.len();
        let mut wake = Time::MAX;
        // Walk the ring once, starting after the last QP served (no division per step).
        let mut idx = if n == 0 { 0 } else { self.rr_last % n };
        for _ in 0..n {
            idx = if idx + 1 == n { 0 } else { idx + 1 };
            let qp = &qps[self.qps[idx].idx()];
            if paused[qp.pg as usize] || !qp.has_data() || qp.window_bound() {
                continue; // `may_send`, written out (see there)
            }
            if qp.next_avail <= now {
                self.rr_last = idx;
                return Pick::Send(self.qps[idx]);
            }
            wake = wake.min(qp.next_avail);
        }
        if wake == Time::MAX {
            Pick::Idle
        } else {
            Pick::Wait(wake)
        }
    }

    /// Removes finished QPs now if any are listed (before their slots are reused).
    pub fn forget_finished(&mut self, qps: &[Qp]) {
        if self.has_finished {
            self.drop_finished(qps);
        }
    }

    /// Removes finished QPs, keeping the round-robin position: the last QP served keeps its
    /// turn if it stays, else its successor in the list serves next.
    fn drop_finished(&mut self, qps: &[Qp]) {
        let last = self.rr_last;
        let mut kept_before = 0; // QPs kept at positions before `last`
        let mut last_kept = false;
        let mut pos = 0;
        self.qps.retain(|q| {
            let keep = !qps[q.idx()].finished;
            if keep && pos < last {
                kept_before += 1;
            }
            if pos == last {
                last_kept = keep;
            }
            pos += 1;
            keep
        });
        let len = self.qps.len();
        self.rr_last = match len {
            0 => 0,
            _ if last_kept => kept_before,
            // The successor now sits at `kept_before`; serve it next.
            _ => (kept_before + len - 1) % len,
        };
        self.has_finished = false;
    }
}
