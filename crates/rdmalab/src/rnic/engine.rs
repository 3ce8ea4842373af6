//! The RNIC's WQE engine (seed 000 Fig 2a): WQEs are processed one at a time, `cost`
//! each, in doorbell order across every QP of the NIC, before their bytes join the QP's
//! send stream (and so the per-packet round robin). A batch of 100 WQEs rung before a
//! single foreground WQE therefore delays it by 100 · cost, whatever the QPs.
//! Only present when a scenario has `[host]`; otherwise posting is immediate.

use std::collections::VecDeque;

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
}

impl WqeEngine {
    /// An idle engine.
    pub fn new(cost: Time) -> WqeEngine {
        WqeEngine { cost, ..WqeEngine::default() }
    }
}
