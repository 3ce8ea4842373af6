//! DRUM's per-host schedulers (the DRUM paper, `app::drum_agent`) in the simulator: each host's
//! scheduler is the sole poster and poller of its closed-loop applications
//! (`closed_loop`). It releases their WQEs by weighted fair order onto their own QPs or one
//! shared QP per destination, polls their completion rings, and re-weights them every
//! control period (locally, or network-wide: `drum_control`, `drum_inband`).
//!
//! Each scheduler is a row of the application table (`AppKind::DrumAgent`); its release,
//! poll and control period are its timers (`Event::App(its id, token)`). The network-wide
//! control loop is one row of its own (`AppKind::DrumNet`, `drum_control`).

use super::closed_loop::{cookie, HostModel};
use super::AppState;
use crate::app::closed_loop::Phase;
use crate::app::drum_agent::DrumAgent;
use crate::app::host_model::{Control, HostModelSpec};
use crate::app::{AgentId, AppId, AppKind, Verbs, Wr};
use crate::ids::QpId;
use crate::sim::{Event, Simulation};
use crate::units::Time;

/// A DRUM scheduler's timer tokens: the next release, the end of a poll, a control period.
const RELEASE: u32 = 0;
const POLL: u32 = 1;
const PERIOD: u32 = 2;

impl Simulation {
    /// DRUM: application `i` joins its host's scheduler (made at the host's first
    /// application), which opens one shared QP per destination.
    pub(super) fn drum_register(
        &mut self,
        m: &mut HostModel,
        agents: &mut Vec<DrumAgent>,
        agent_of_nic: &mut [Option<AgentId>],
        spec: &HostModelSpec,
        i: u32,
    ) {
        let s = &spec.apps[i as usize];
        let nic = self.nic_of[s.host.idx()].idx();
        let cfg = spec.host;
        let ag = *agent_of_nic[nic].get_or_insert_with(|| {
            agents.push(DrumAgent::new(spec.drum, Vec::new(), Vec::new(), cfg.wqe_cost, cfg.poll_cost));
            m.shared_qp.push(Vec::new());
            AgentId::new(agents.len() - 1)
        });
        m.agent_of.push((ag, agents[ag.idx()].apps.len() as u32));
        agents[ag.idx()].apps.push(i);
        if !m.shared_qp[ag.idx()].iter().any(|&(d, _)| d == s.dst) {
            let q = self.host_qp(s.host, s.dst, s.transport, spec.host.max_send_wr);
            m.shared_qp[ag.idx()].push((s.dst, q));
        }
    }

    /// DRUM: every scheduler (`agents`, as `drum_register` gathered them) gets its final
    /// settings (k fitted to the QP cache, a = 1/wr_num), its row in the application table
    /// and, under local control, its first control period now.
    pub(super) fn drum_start_agents(&mut self, m: &mut HostModel, agents: Vec<DrumAgent>, spec: &HostModelSpec) {
        let entries = self.cfg.qp_cache.map(|c| c.entries);
        let cfg = spec.host;
        for (a, ag) in agents.into_iter().enumerate() {
            // Dedicated QPs plus the shared ones (and in band the control connection to the
            // coordinator) must fit the QP-context cache.
            let shared = m.shared_qp[a].len() as u32 + (spec.drum.control == Control::InBand) as u32;
            let k = entries.map_or(spec.drum.k, |e| spec.drum.k.min(e.saturating_sub(shared).max(1)));
            let drum = crate::app::host_model::DrumConfig { k, ..spec.drum };
            let mean_wr = |i: u32| {
                let (lo, hi) = self.apps.state(m.ids[i as usize]).closed().spec.wr_num;
                (lo as f64 + hi as f64) / 2.0
            };
            let a0: Vec<f64> = ag.apps.iter().map(|&i| drum.a.of(mean_wr(i), 1.0)).collect();
            let mut ag = DrumAgent::new(drum, ag.apps, a0, cfg.wqe_cost, cfg.poll_cost);
            ag.qps = ag.apps.iter().map(|&i| self.drum_qps(m, a, i)).collect();
            // The active set is the host's own data: hold it from the start, before a
            // coupled control's first allocation arrives (else every application would
            // post on a dedicated QP until then and thrash the QP-context cache).
            ag.start_with(ag.active_set().to_mask(1, ag.apps.len()));
            let id = self.apps.add(AppKind::DrumAgent(AgentId::new(a)), AppState::DrumAgent(ag));
            m.agent_ids.push(id);
            if spec.drum.control == Control::Local {
                self.queue.push(self.now, Event::App(id, PERIOD));
            }
        }
    }

    /// A timer of DRUM scheduler `ag`.
    pub(in crate::sim) fn drum_timer(&mut self, ag: AgentId, token: u32) {
        match token {
            RELEASE => self.drum_release(ag),
            POLL => self.drum_poll_done(ag),
            _ => self.drum_period(ag),
        }
    }

    /// Application `i`'s dedicated QP and its destination's shared QP on scheduler `a`.
    fn drum_qps(&self, m: &HostModel, a: usize, i: u32) -> (QpId, QpId) {
        let app = self.apps.state(m.ids[i as usize]).closed();
        let shared = m.shared_qp[a].iter().find(|&&(d, _)| d == app.spec.dst).expect("shared QP per destination").1;
        (app.qp, shared)
    }

    /// A WQE of application `i` completed: room may have come free for its scheduler.
    pub(super) fn drum_wqe_done(&mut self, i: u32) {
        let ag = self.hostm.as_ref().expect("host model").agent_of[i as usize].0;
        self.drum_arm_release(ag);
    }

    /// The application id of scheduler `ag`.
    fn agent_app(&self, ag: AgentId) -> AppId {
        self.hostm.as_ref().expect("host model").agent_ids[ag.idx()]
    }

    /// Scheduler `ag`'s state (in its row of the application table).
    pub(super) fn agent_mut(&mut self, ag: AgentId) -> &mut DrumAgent {
        let id = self.agent_app(ag);
        self.apps.state_mut(id).drum_agent_mut()
    }

    /// Schedules the next release at rate Q if WQEs wait and none is scheduled.
    pub(super) fn drum_arm_release(&mut self, ag: AgentId) {
        let now = self.now;
        let id = self.agent_app(ag);
        let a = self.apps.state_mut(id).drum_agent_mut();
        if a.release_armed || !a.backlogged() {
            return;
        }
        a.release_armed = true;
        let at = (a.last_release + a.gap).max(now);
        self.queue.push(at, Event::App(id, RELEASE));
    }

    /// Releases one WQE by weighted fair order onto its application's QP, among the
    /// applications whose QP has room; none when none has (a completion re-arms it).
    pub(super) fn drum_release(&mut self, ag: AgentId) {
        let now = self.now;
        let id = self.agent_app(ag);
        let (qps, nics) = (&self.qps, &self.nics);
        let view = |q: QpId| {
            let qp = &qps[q.idx()];
            let (in_engine, engine_bytes) = super::send_queue::in_engine(nics, qps, q);
            let room = qp.sq_room(in_engine);
            (qp.sq_depth.saturating_sub(room), room, qp.posted - qp.snd_una + engine_bytes)
        };
        let a = self.apps.state_mut(id).drum_agent_mut();
        a.release_armed = false;
        let Some((j, qp, size, last)) = a.release_one(view) else { return };
        a.last_release = now;
        let i = a.apps[j];
        let m = self.hostm.as_mut().expect("host model");
        let current = self.apps.state(m.ids[i as usize]).closed().current;
        m.batches[current as usize].released += 1;
        let id = m.ids[i as usize];
        let wr = Wr { bytes: size, cookie: cookie(current, last), header: None, notify_sent: false };
        self.app_verbs(id, |v| v.post(qp, wr)).expect("the scheduler checked the QP's room");
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
        self.drum_arm_release(ag);
    }

    /// The poller starts reading the next non-empty ring (stride order), if any.
    pub(super) fn drum_start_poll(&mut self, ag: AgentId) {
        if self.agent_mut(ag).start_poll().is_some() {
            let m = self.hostm.as_ref().expect("host model");
            let at = self.now + m.cfg.poll_cost;
            self.queue.push(at, Event::App(m.agent_ids[ag.idx()], POLL));
        }
    }

    /// A poll ended: its CQE reaches the application, and the poller goes on.
    pub(super) fn drum_poll_done(&mut self, ag: AgentId) {
        let a = self.agent_mut(ag);
        let Some(j) = a.polling else { return };
        a.end_poll(j);
        let i = a.apps[j];
        self.closed_seen(i);
        self.drum_start_poll(ag);
    }

    /// A control period: solve, re-weight, record; again after `period` while apps run.
    pub(super) fn drum_period(&mut self, ag: AgentId) {
        let now = self.now;
        let m = self.hostm.as_mut().expect("host model");
        let period_us = if now == Time::ZERO { 0.0 } else { m.period.0 as f64 / 1e6 };
        let a = self.apps.state_mut(m.agent_ids[ag.idx()]).drum_agent_mut();
        m.drum_rows.extend(a.control(now, period_us));
        let a = self.apps.state(m.agent_ids[ag.idx()]).drum_agent();
        if a.apps.iter().any(|&i| self.apps.state(m.ids[i as usize]).closed().phase != Phase::Done) {
            let at = now + m.period;
            self.queue.push(at, Event::App(m.agent_ids[ag.idx()], PERIOD));
        }
    }
}
