//! A shuffled-overlay member (`workload::attacks`'s `HostApp::PairQps`): one reused QP per
//! destination, each of its flows a message on it, the QP closed after the last message
//! planned to that destination. A row of the application table run by `AppRun::PairQps`.

use super::attacks::NO_QP;
use super::AppRun;
use crate::app::{AppId, Verbs};
use crate::ids::{FlowId, NodeId, QpId};
use crate::sim::Simulation;
use crate::workload::FlowSpec;

#[derive(Debug)]
pub(in crate::sim) struct PairRun {
    /// The sending host.
    host: NodeId,
    /// Per destination: its reused QP (opened at its first message) and messages still to post.
    dsts: Vec<(NodeId, QpId, u32)>,
}

impl PairRun {
    /// A member on `host` with `planned` messages to each destination.
    pub(super) fn new(host: NodeId, planned: &[(NodeId, u32)]) -> PairRun {
        PairRun { host, dsts: planned.iter().map(|&(d, n)| (d, NO_QP, n)).collect() }
    }

    /// The sending host.
    pub(super) fn host(&self) -> NodeId {
        self.host
    }
}

impl Simulation {
    /// Flow `flow` (`f`) of overlay member `app` starts: it is posted on the QP to its
    /// destination.
    pub(super) fn overlay_admit(&mut self, app: u32, flow: FlowId, f: FlowSpec) {
        let AppRun::PairQps(run) = self.attack_run(app) else { unreachable!() };
        let i = run.dsts.iter().position(|d| d.0 == f.dst).expect("overlay flow to a planned member");
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
}
