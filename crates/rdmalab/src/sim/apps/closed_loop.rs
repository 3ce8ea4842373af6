//! The DRUM paper's host model in the simulator: closed-loop applications (`app::closed_loop`)
//! posting through the RNIC's WQE engine, CQ polling on shared cores, and the three ways
//! of reaching the RNIC (`app::host_model::Mechanism`): RAW, SHARE and DRUM
//! (`app::drum_agent`). Everything here acts on one host's own NIC and QPs; completions
//! arrive from that host's ACK processing through the application hook (`sim::apps`).
//!
//! Events: `Event::App(app, token)` for an application's own steps (start of a batch,
//! a SHARE lock released, its CQE seen) and a DRUM scheduler's (`drum`) or control loop's
//! (`drum_control`), each a row of the application table; `Event::WqeDone(nic)` for the
//! RNIC's WQE engine, which is hardware, not an application.

use super::drum_control::NET_PERIOD;
use super::AppState;
use crate::app::closed_loop::{poll_sees, BatchRecord, ClosedLoop, ClosedLoopSpec, Phase};
use crate::app::drum_agent::DrumRow;
use crate::app::host_model::{Control, DrumConfig, HostConfig, HostModelSpec, Mechanism};
use crate::app::{AgentId, AppId, AppKind, SendCompletion, SendDone, Verbs, Wr};
use crate::engine::{stream, StreamKind};
use crate::error::Result;
use crate::ids::{NodeId, QpId};
use crate::rnic::transport::Transport;
use crate::rnic::WqeEngine;
use crate::sim::{Event, Simulation};
use crate::units::Time;
use crate::workload::FlowSpec;

/// Application timer tokens.
const START: u32 = 0;
const POSTED: u32 = 1;
const SEEN: u32 = 2;
/// Room for its batch may have come free in its QP's send queue.
const ROOM: u32 = 3;
/// The cookie's low bit: a batch's signalled (last) WQE; the rest is the batch's row in
/// the run's records (`cookie >> 1`).
pub(super) const SIGNALLED: u32 = 1;

/// The cookie of a WQE of batch record `batch`, signalled or not.
pub(super) fn cookie(batch: u32, signalled: bool) -> u32 {
    batch << 1 | signalled as u32
}

/// The run's closed-loop applications and their hosts.
#[derive(Debug)]
pub(in crate::sim) struct HostModel {
    pub(in crate::sim) cfg: HostConfig,
    pub(in crate::sim) drum: DrumConfig,
    pub(super) period: Time,
    /// Application id (row of the table, which holds its state) of each closed-loop
    /// application, by its index in the scenario.
    pub(in crate::sim) ids: Vec<AppId>,
    pub(in crate::sim) batches: Vec<BatchRecord>,
    /// Per NIC: application threads busy-polling now (RAW, SHARE).
    pub(super) polling: Vec<u32>,
    /// SHARE: per application its shared QP's lock; per lock when it is free and how many
    /// posters are queued on it (holder included).
    pub(super) lock_of: Vec<u32>,
    pub(super) locks: Vec<(Time, u32)>,
    /// RAW/SHARE: applications waiting for room for their batch in their QP's send queue,
    /// oldest first, with the QP (at most one entry per application).
    pub(super) sq_wait: Vec<(QpId, u32)>,
    /// DRUM: per application (agent, local index); the agents and their application ids;
    /// their shared QPs by dst.
    pub(super) agent_of: Vec<(AgentId, u32)>,
    pub(in crate::sim) agent_ids: Vec<AppId>,
    pub(super) shared_qp: Vec<Vec<(NodeId, QpId)>>,
    pub(in crate::sim) drum_rows: Vec<DrumRow>,
    /// The network-wide control loop (`control = "out_of_band"`).
    pub(in crate::sim) net: Option<super::drum_control::DrumNet>,
}

impl Simulation {
    /// Sets up the host model: WQE engines on every NIC, each application's QP (by
    /// mechanism) and its first batch, and DRUM's schedulers.
    pub fn host_model_set_up(&mut self, spec: &HostModelSpec) -> Result<()> {
        let cfg = spec.host;
        if cfg.wqe_cost > Time::ZERO {
            for nic in &mut self.nics {
                nic.engine = Some(WqeEngine::new(cfg.wqe_cost));
            }
        }
        let mut m = HostModel {
            cfg,
            drum: spec.drum,
            period: spec.drum.period,
            ids: Vec::with_capacity(spec.apps.len()),
            batches: Vec::new(),
            polling: vec![0; self.nics.len()],
            lock_of: Vec::new(),
            locks: Vec::new(),
            sq_wait: Vec::new(),
            agent_of: Vec::new(),
            agent_ids: Vec::new(),
            shared_qp: Vec::new(),
            drum_rows: Vec::new(),
            net: None,
        };
        let mut groups = Vec::new();
        let mut agent_of_nic: Vec<Option<AgentId>> = vec![None; self.nics.len()];
        let mut agents = Vec::new();
        for (i, s) in spec.apps.iter().enumerate() {
            let qp = match cfg.mechanism {
                Mechanism::Raw | Mechanism::Drum => self.host_qp(s.host, s.dst, s.transport, cfg.max_send_wr),
                Mechanism::Share => self.share_qp(&mut m, &mut groups, s),
            };
            let rng = stream(self.cfg.seed, StreamKind::Other, 0xC105_ED00 + i as u64);
            let app = ClosedLoop::new(s.clone(), rng, qp);
            let id = self.apps.add(AppKind::Closed(i as u32), AppState::Closed(app));
            m.ids.push(id);
            self.queue.push(s.start.max(self.now), Event::App(id, START));
            if cfg.mechanism == Mechanism::Drum {
                self.drum_register(&mut m, &mut agents, &mut agent_of_nic, spec, i as u32);
            }
        }
        self.drum_start_agents(&mut m, agents, spec);
        let network = !m.agent_ids.is_empty() && spec.drum.control != Control::Local;
        let host_of = |id: &AppId| {
            let first = self.apps.state(*id).drum_agent().apps[0];
            self.apps.state(m.ids[first as usize]).closed().spec.host
        };
        let hosts: Vec<NodeId> = m.agent_ids.iter().map(host_of).collect();
        self.hostm = Some(Box::new(m));
        if network {
            let mut net = self.drum_net_new(spec.drum);
            if spec.drum.control == Control::InBand {
                net.inband = Some(self.drum_inband_new(&hosts)?);
            }
            let id = net.id();
            self.hostm.as_mut().expect("just set").net = Some(net);
            self.queue.push(self.now, Event::App(id, NET_PERIOD));
        }
        Ok(())
    }

    /// SHARE: the QP of the open group of `s`'s (host, destination), or a new group (QP and
    /// lock) when that one holds `share_ratio` connections. `groups`: (host, dst, QP, lock,
    /// members) of the open group per pair.
    fn share_qp(
        &mut self,
        m: &mut HostModel,
        groups: &mut Vec<(NodeId, NodeId, QpId, u32, u32)>,
        s: &ClosedLoopSpec,
    ) -> QpId {
        let ratio = m.cfg.share_ratio;
        let (qp, lock) = match groups.iter_mut().find(|g| g.0 == s.host && g.1 == s.dst && g.4 < ratio) {
            Some(g) => {
                g.4 += 1;
                (g.2, g.3)
            }
            None => {
                let qp = self.host_qp(s.host, s.dst, s.transport, m.cfg.max_send_wr);
                m.locks.push((Time::ZERO, 0));
                let lock = m.locks.len() as u32 - 1;
                groups.retain(|g| !(g.0 == s.host && g.1 == s.dst));
                groups.push((s.host, s.dst, qp, lock, 1));
                (qp, lock)
            }
        };
        m.lock_of.push(lock);
        qp
    }

    /// A QP that lives as long as the run (an application's connection), its send queue
    /// `depth` WQEs deep.
    pub(super) fn host_qp(&mut self, src: NodeId, dst: NodeId, transport: Transport, depth: u32) -> QpId {
        let qp = self.open_kept_qp(&FlowSpec { transport, ..FlowSpec::new(src, dst, 0, self.now) }, AppId::NONE);
        self.qps[qp.idx()].sq_depth = depth;
        qp
    }

    /// A timer of closed-loop application `i`.
    pub(in crate::sim) fn closed_timer(&mut self, i: u32, token: u32) {
        match token {
            START => self.closed_start(i),
            POSTED => {
                let m = self.hostm.as_mut().expect("host model");
                m.locks[m.lock_of[i as usize] as usize].1 -= 1;
                self.closed_ring(i)
            }
            ROOM => {
                // (A second CQE may have scheduled this again after the batch rang.)
                let m = self.hostm.as_ref().expect("host model");
                if m.sq_wait.iter().any(|w| w.1 == i) {
                    self.closed_ring(i);
                }
            }
            _ => self.closed_seen(i),
        }
    }

    /// Application `i` starts its next batch (or is done).
    fn closed_start(&mut self, i: u32) {
        let now = self.now;
        let m = self.hostm.as_mut().expect("closed-loop app without host model");
        let app = self.apps.state_mut(m.ids[i as usize]).closed_mut();
        let Some((wr, size)) = app.next_batch() else {
            app.phase = Phase::Done;
            return;
        };
        app.bytes_posted += wr as u64 * size;
        app.current = m.batches.len() as u32;
        let b = BatchRecord { app: i, batch: app.batches, wr_num: wr, size, posted: now, ..BatchRecord::default() };
        m.batches.push(b);
        app.batches += 1;
        match m.cfg.mechanism {
            Mechanism::Raw => self.closed_ring(i),
            Mechanism::Share => {
                // The group's FIFO lock, held `lock_cost` per WQE plus one cache-line transfer
                // per poster already queued on it; the doorbell rings on release.
                let lock = m.lock_of[i as usize] as usize;
                let (free, queued) = m.locks[lock];
                let contention = Time(m.cfg.lock_transfer.0 * if free > now { queued as u64 } else { 0 });
                let free = free.max(now) + contention + Time(m.cfg.lock_cost.0 * wr as u64);
                m.locks[lock].0 = free;
                if free == now {
                    self.closed_ring(i);
                } else {
                    app.phase = Phase::Posting;
                    m.locks[lock].1 += 1;
                    let id = m.ids[i as usize];
                    self.queue.push(free, Event::App(id, POSTED));
                }
            }
            Mechanism::Drum => {
                app.phase = Phase::Waiting;
                let (ag, j) = m.agent_of[i as usize];
                self.apps.state_mut(m.agent_ids[ag.idx()]).drum_agent_mut().submit(j as usize, wr, size);
                self.drum_arm_release(ag);
            }
        }
    }

    /// RAW/SHARE: the batch's WQEs are rung on the application's QP (the last one
    /// signalled) and its thread starts busy-polling. The poster checks for room first: a
    /// batch that does not fit the send queue waits, in arrival order with the QP's other
    /// waiters, until a CQE on the QP tells it WQEs completed (a batch fits an empty queue:
    /// `wr_num` ≤ `max_send_wr` is checked at input).
    fn closed_ring(&mut self, i: u32) {
        let m = self.hostm.as_mut().expect("host model");
        let id = m.ids[i as usize];
        let app = self.apps.state_mut(id).closed_mut();
        let (qp, current) = (app.qp, app.current);
        let b = m.batches[current as usize];
        let waiting = m.sq_wait.iter().position(|w| w.1 == i);
        let first = m.sq_wait.iter().position(|w| w.0 == qp);
        let in_engine = super::send_queue::in_engine(&self.nics, &self.qps, qp).0;
        if self.qps[qp.idx()].sq_room(in_engine) < b.wr_num || (first.is_some() && first != waiting) {
            app.phase = Phase::Posting;
            if waiting.is_none() {
                m.sq_wait.push((qp, i));
            }
            return;
        }
        if let Some(w) = waiting {
            m.sq_wait.remove(w);
        }
        app.phase = Phase::Waiting;
        app.poll_start = self.now;
        let nic = self.qps[qp.idx()].nic;
        m.polling[nic.idx()] += 1;
        m.batches[current as usize].released = b.wr_num;
        self.app_verbs(id, |v| {
            for k in 0..b.wr_num {
                let wr =
                    Wr { bytes: b.size, cookie: cookie(current, k + 1 == b.wr_num), header: None, notify_sent: false };
                v.post(qp, wr).expect("room checked for the whole batch");
            }
        });
        self.nic_kick(nic);
        self.closed_wake_waiter(qp);
    }

    /// The oldest application waiting for room on `qp` tries again now.
    fn closed_wake_waiter(&mut self, qp: QpId) {
        let m = self.hostm.as_ref().expect("host model");
        if let Some(&(_, j)) = m.sq_wait.iter().find(|w| w.0 == qp) {
            let id = m.ids[j as usize];
            self.queue.push(self.now, Event::App(id, ROOM));
        }
    }

    /// A WQE of application `i` completed at the RNIC; only the signalled one makes a CQE.
    pub(in crate::sim) fn closed_send_done(&mut self, i: u32, c: SendCompletion) {
        if c.done != SendDone::Acked {
            return;
        }
        let m = self.hostm.as_mut().expect("host model");
        m.batches[(c.cookie >> 1) as usize].completed += 1;
        if m.cfg.mechanism == Mechanism::Drum {
            self.drum_wqe_done(i);
        }
        if c.cookie & SIGNALLED == 0 {
            return;
        }
        let now = self.now;
        let m = self.hostm.as_mut().expect("host model");
        if m.cfg.mechanism == Mechanism::Drum {
            let (ag, j) = m.agent_of[i as usize];
            let a = self.apps.state_mut(m.agent_ids[ag.idx()]).drum_agent_mut();
            a.cqe(j as usize);
            if a.polling.is_none() {
                self.drum_start_poll(ag);
            }
            return;
        }
        // Busy-polling threads share the cores: each poll takes poll_cost of CPU, so
        // poll_cost · max(1, threads/cores) of wall time.
        let nic = self.qps[c.qp.idx()].nic.idx();
        let (threads, cores) = (m.polling[nic] as u64, m.cfg.cores.max(1) as u64);
        let period = Time(m.cfg.poll_cost.0 * threads.max(cores) / cores);
        let seen = poll_sees(self.apps.state(m.ids[i as usize]).closed().poll_start, now, period);
        let id = m.ids[i as usize];
        self.queue.push(seen, Event::App(id, SEEN));
        self.closed_wake_waiter(c.qp);
    }

    /// Application `i` sees its batch's CQE: record it, think, go again.
    pub(super) fn closed_seen(&mut self, i: u32) {
        let now = self.now;
        let m = self.hostm.as_mut().expect("host model");
        let app = self.apps.state_mut(m.ids[i as usize]).closed_mut();
        m.batches[app.current as usize].seen = now;
        app.phase = Phase::Idle;
        if m.cfg.mechanism != Mechanism::Drum {
            let nic = self.nic_of[app.spec.host.idx()].idx();
            m.polling[nic] -= 1;
        }
        if app.spec.think == Time::ZERO {
            self.closed_start(i);
        } else {
            let at = now + app.spec.think;
            let id = m.ids[i as usize];
            self.queue.push(at, Event::App(id, START));
        }
    }

    /// (name, host, dst, posted all its `total_bytes` and saw the last CQE) of every
    /// closed-loop application, for the results.
    pub(in crate::sim) fn host_app_table(&self) -> Vec<(String, NodeId, NodeId, bool)> {
        let row = |a: &ClosedLoop| (a.spec.name.clone(), a.spec.host, a.spec.dst, a.phase == Phase::Done);
        self.hostm
            .as_ref()
            .map_or_else(Vec::new, |m| m.ids.iter().map(|&id| row(self.apps.state(id).closed())).collect())
    }
}
