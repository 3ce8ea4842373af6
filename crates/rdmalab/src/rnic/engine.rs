//! The RNIC's WQE engine (the DRUM paper's Fig 2a): WQEs are processed one at a time, `cost`
//! each, in doorbell order across every QP of the NIC, before their bytes join the QP's
//! send stream (and so the per-packet round robin). A batch of 100 WQEs rung before a
//! single foreground WQE therefore delays it by 100 · cost, whatever the QPs.
//! Only present when a scenario has `[host]`; otherwise posting is immediate.

use std::collections::{HashMap, VecDeque};

use crate::ids::QpId;
use crate::rnic::Message;
use crate::units::Time;

/// One NIC's doorbell FIFO.
#[derive(Clone, Debug, Default)]
pub struct WqeEngine {
    /// Processing time per WQE.
    pub cost: Time,
    /// WQEs rung and not yet processed, oldest first (the head is in process when `busy`).
    pub fifo: VecDeque<(QpId, Message)>,
    /// A `WqeDone` event is pending for the head.
    pub busy: bool,
    /// WQEs processed.
    pub processed: u64,
    /// Per QP with WQEs in `fifo`: how many, and their bytes (they hold send-queue slots).
    /// Kept here, not in the QP, so that runs without the engine carry nothing for it.
    pending: HashMap<QpId, (u32, u64)>,
}

impl WqeEngine {
    /// An idle engine.
    pub fn new(cost: Time) -> WqeEngine {
        WqeEngine { cost, ..WqeEngine::default() }
    }

    /// Rings WQE `m` on `qp`: it joins the FIFO.
    pub fn ring(&mut self, qp: QpId, m: Message) {
        self.fifo.push_back((qp, m));
        let p = self.pending.entry(qp).or_default();
        p.0 += 1;
        p.1 += m.size;
    }

    /// Takes the head of the FIFO, processed.
    pub fn take_head(&mut self) -> Option<(QpId, Message)> {
        let (qp, m) = self.fifo.pop_front()?;
        let p = self.pending.get_mut(&qp).expect("a WQE in the FIFO is counted");
        p.0 -= 1;
        p.1 -= m.size;
        if p.0 == 0 {
            self.pending.remove(&qp);
        }
        Some((qp, m))
    }

    /// WQEs of `qp` in the FIFO, and their bytes.
    pub fn pending(&self, qp: QpId) -> (u32, u64) {
        self.pending.get(&qp).copied().unwrap_or((0, 0))
    }
}
