//! A shuffled-overlay member (`workload::attacks`'s `HostApp::PairQps`): one reused QP per
//! destination, each of its flows a message on it, the QP closed after the last message
//! planned to that destination. A row of the application table run by `AppRun::PairQps`.
//!
//! A flow that starts while its QP's send queue is full (`[rnic] max_send_wr`) waits, behind
//! any already waiting for that QP, and is posted when a completion on the QP frees room.
//! The flows are plain (each its own record), so the member hears of room through
//! `complete_messages`, which asks only while some overlay flow is held (`overlay_held`).

use std::collections::VecDeque;

use super::AppRun;
use crate::app::{AppId, Verbs};
use crate::ids::{FlowId, NodeId, QpId};
use crate::sim::Simulation;
use crate::workload::FlowSpec;

const NO_QP: QpId = QpId::NONE;

#[derive(Debug)]
pub(in crate::sim) struct PairRun {
    /// The sending host.
    host: NodeId,
    /// Per destination: its reused QP (opened at its first message) and messages still to post.
    dsts: Vec<(NodeId, QpId, u32)>,
    /// Per destination: its flows held for room, oldest first: at most the messages still
    /// to post there (`dsts`' count), so the plan bounds it.
    held: Vec<VecDeque<FlowId>>,
}

impl PairRun {
    /// A member on `host` with `planned` messages to each destination.
    pub(super) fn new(host: NodeId, planned: &[(NodeId, u32)]) -> PairRun {
        let dsts = planned.iter().map(|&(d, n)| (d, NO_QP, n)).collect();
        PairRun { host, dsts, held: vec![VecDeque::new(); planned.len()] }
    }

    /// The sending host.
    pub(super) fn host(&self) -> NodeId {
        self.host
    }
}

impl Simulation {
    /// Flow `flow` (`f`) of overlay member `app` starts: it is posted on the QP to its
    /// destination, or held while that QP's send queue is full or others wait for it.
    pub(super) fn overlay_admit(&mut self, app: u32, flow: FlowId, f: FlowSpec) {
        let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
        let i = run.dsts.iter().position(|d| d.0 == f.dst).expect("overlay flow to a planned member");
        let (qp, waiting) = (run.dsts[i].1, !run.held[i].is_empty());
        if qp != NO_QP && (waiting || self.app_verbs(AppId(app), |v| v.sq_room(qp)) == 0) {
            let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
            // Bounded by the member's plan: a held flow is one of those still to post.
            debug_assert!(run.held[i].len() < run.dsts[i].2 as usize);
            run.held[i].push_back(flow);
            self.apps.overlay_held += 1;
            return;
        }
        self.overlay_post(app, i, flow);
    }

    /// Posts flow `flow` of overlay member `app` on its QP to destination `i`.
    fn overlay_post(&mut self, app: u32, i: usize, flow: FlowId) {
        let f = self.flows[flow.idx()];
        let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
        let qp = match run.dsts[i].1 {
            NO_QP => self.app_verbs(f.app, |v| v.open_qp(&f, AppId::NONE)),
            q => q,
        };
        let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
        let d = &mut run.dsts[i];
        d.2 -= 1;
        let last = d.2 == 0;
        d.1 = if last { NO_QP } else { qp };
        crate::sim::mech::uet::align_post(&mut self.qps[qp.idx()], self.cfg.mtu);
        self.qps[qp.idx()].post(flow, f.size, self.now);
        self.nics[self.qps[qp.idx()].nic.idx()].mark(&self.qps[qp.idx()]);
        if last {
            self.app_verbs(f.app, |v| v.close_qp(qp));
        }
        self.trace_post(app, flow.0 as u64, f.dst.0, qp, f.size);
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
    }

    /// True when `app` is a shuffled-overlay member: a completion of one of its flows may
    /// free room for flows it holds (asked by `complete_messages` only while some are held).
    pub(in crate::sim) fn is_overlay_member(&self, app: AppId) -> bool {
        !app.is_none() && matches!(&self.apps.rows[app.idx()].state, super::AppState::Attack(AppRun::PairQps(_)))
    }

    /// A completion on `qp` freed room: overlay member `app` posts the flows it holds for
    /// that QP, oldest first, while the queue takes them.
    pub(super) fn overlay_room(&mut self, app: u32, qp: QpId) {
        let AppRun::PairQps(run) = self.attack_run(app) else { return };
        let Some(i) = run.dsts.iter().position(|d| d.1 == qp) else { return };
        loop {
            let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
            if run.held[i].is_empty() || self.app_verbs(AppId(app), |v| v.sq_room(qp)) == 0 {
                return;
            }
            let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
            let flow = run.held[i].pop_front().expect("checked");
            self.apps.overlay_held -= 1;
            self.overlay_post(app, i, flow);
        }
    }
}
