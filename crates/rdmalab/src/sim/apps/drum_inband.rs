//! DRUM with `control = "in_band"`: the rounds of `drum_control` carried by 64 B
//! control messages in the highest class (class 0, strict priority, never paused) through
//! the simulated fabric, instead of fixed-delay events.
//!
//! The coordinator runs on the lowest-numbered host without a DRUM scheduler. Each
//! scheduler has one control connection to it and one back, opened at setup; a message is a
//! WR with an application header (`op`: report, prices or final) posted through the host
//! application layer (`app/`, `Verbs::post`) and heard of as a receive completion. A round
//! ends when the coordinator has every report; each scheduler steps when its prices arrive,
//! so hosts nearer the coordinator step earlier. The vectors a message stands for (loads,
//! prices) stay out of line, as packet headers do here; only their size crosses the wire. A
//! period that starts while the previous one's rounds are still in flight is skipped (its
//! measurement then spans two periods).

use crate::app::{AgentId, AppHeader, AppId, AppKind, RecvCompletion, Verbs, Wr};
use crate::error::{Error, Result};
use crate::ids::{NodeId, QpId};
use crate::sim::Simulation;
use crate::workload::FlowSpec;

/// Bytes of a control message (64 B: docs/drum-fabric.md).
const CONTROL_BYTES: u64 = 64;
/// Message kinds (`AppHeader::op`).
const REPORT: u8 = 1;
const PRICES: u8 = 2;
const FINAL: u8 = 3;

/// The control connections.
#[derive(Debug)]
pub(in crate::sim) struct InBand {
    /// Per scheduler: its connection to the coordinator, and back.
    up: Vec<QpId>,
    down: Vec<QpId>,
    /// Application ids: the coordinator's, and each scheduler's control endpoint.
    coord_app: AppId,
    host_app: Vec<AppId>,
    /// Reports received in the current round.
    arrived: usize,
    /// Schedulers that have not yet enforced this period's allocation.
    pending: usize,
}

impl InBand {
    /// Rounds of the current period still in flight.
    pub(in crate::sim) fn busy(&self) -> bool {
        self.pending > 0
    }
}

impl Simulation {
    /// Opens the control connections of the schedulers on `hosts` (agent order).
    pub(in crate::sim) fn drum_inband_new(&mut self, hosts: &[NodeId]) -> Result<InBand> {
        let coord = self.topo.hosts().find(|h| !hosts.contains(h)).ok_or_else(|| {
            Error::scenario("drum.control", "in_band needs a host without a DRUM scheduler to run the coordinator")
        })?;
        let coord_app = self.apps.add(AppKind::DrumCtl(AgentId::NONE), super::AppState::Elsewhere);
        let (mut up, mut down, mut host_app) = (Vec::new(), Vec::new(), Vec::new());
        for (h, &host) in hosts.iter().enumerate() {
            let app = self.apps.add(AppKind::DrumCtl(AgentId::new(h)), super::AppState::Elsewhere);
            up.push(self.control_qp(host, coord, coord_app));
            down.push(self.control_qp(coord, host, app));
            host_app.push(app);
        }
        Ok(InBand { up, down, coord_app, host_app, arrived: 0, pending: 0 })
    }

    /// A connection in class 0 whose messages complete at application `to` on `dst`. Its
    /// send queue is as deep as the device allows (`rnic::DEFAULT_MAX_SEND_WR`, ConnectX-3's
    /// `max_qp_wr`), or `[rnic] max_send_wr` where that is deeper: a small depth meant for
    /// the data QPs is not the control loop's. It carries one message a period,
    /// acknowledged a round trip later, so it never reaches that depth; a bound all the same.
    fn control_qp(&mut self, src: NodeId, dst: NodeId, to: AppId) -> QpId {
        let qp = self.open_kept_qp(&FlowSpec { pg: 0, ..FlowSpec::new(src, dst, 0, self.now) }, to);
        self.qps[qp.idx()].sq_depth = self.cfg.max_send_wr.max(crate::rnic::DEFAULT_MAX_SEND_WR);
        qp
    }

    /// Sends one control message on `qp` from application `app`.
    fn control_send(&mut self, qp: QpId, app: AppId, op: u8, round: u32) {
        let header = AppHeader { data_id: round as u64, total: CONTROL_BYTES, offset: 0, length: 0, op };
        let wr = Wr { bytes: CONTROL_BYTES, cookie: 0, header: Some(header), notify_sent: false };
        self.app_verbs(app, |v| v.post(qp, wr)).expect("a control QP holds one message a period, far below its depth");
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
    }

    /// Scheduler `h` reports its loads to the coordinator.
    pub(in crate::sim) fn drum_inband_report(&mut self, h: usize, round: u32) {
        let net = self.hostm.as_ref().and_then(|m| m.net.as_ref()).expect("in-band control");
        let ib = net.inband.as_ref().expect("in-band control");
        let (qp, app) = (ib.up[h], ib.host_app[h]);
        self.control_send(qp, app, REPORT, round);
    }

    /// A period's rounds begin: every scheduler has stepped and reports.
    pub(in crate::sim) fn drum_inband_start(&mut self, n: usize, round: u32) {
        let ib = self.inband_mut();
        ib.arrived = 0;
        ib.pending = n;
        for h in 0..n {
            self.drum_inband_report(h, round);
        }
    }

    /// A control message reached the control end of scheduler `who` (the coordinator's:
    /// [`AgentId::NONE`]).
    pub(in crate::sim) fn drum_inband_recv(&mut self, who: AgentId, c: RecvCompletion) {
        let round = c.header.data_id as u32;
        if who.is_none() {
            return self.drum_inband_coordinator(round);
        }
        let h = who.idx();
        match c.header.op {
            FINAL => {
                self.drum_net_allocate_host(h);
                self.inband_mut().pending -= 1;
            }
            _ => {
                self.drum_net_step_host(h);
                self.drum_inband_report(h, round);
            }
        }
    }

    /// The coordinator got a report; with all of them it updates and answers every host.
    fn drum_inband_coordinator(&mut self, round: u32) {
        let ib = self.inband_mut();
        ib.arrived += 1;
        if ib.arrived < ib.up.len() {
            return;
        }
        ib.arrived = 0;
        let last = self.drum_net_update();
        let net = self.hostm.as_ref().and_then(|m| m.net.as_ref()).expect("in-band control");
        let ib = net.inband.as_ref().expect("in-band control");
        let (down, coord_app) = (ib.down.clone(), ib.coord_app);
        let op = if last { FINAL } else { PRICES };
        for qp in down {
            self.control_send(qp, coord_app, op, round + 1);
        }
    }

    fn inband_mut(&mut self) -> &mut InBand {
        self.hostm.as_mut().and_then(|m| m.net.as_mut()).and_then(|n| n.inband.as_mut()).expect("in-band control")
    }
}
