//! DRUM's per-host schedulers (seed 000, `app::drum_agent`) in the simulator: each host's
//! scheduler is the sole poster and poller of its closed-loop applications
//! (`closed_loop`). It releases their WQEs by weighted fair order onto their own QPs or one
//! shared QP per destination, polls their completion rings, and re-weights them every
//! control period (locally, or network-wide: `drum_control`, `drum_inband`).
//!
//! Events: `Event::Drum(agent, kind)` (release, poll, control period; the network-wide
//! kinds of `drum_control`).

use super::closed_loop::{HostModel, SIGNALLED};
use super::HostVerbs;
use crate::app::closed_loop::Phase;
use crate::app::drum_agent::DrumAgent;
use crate::app::host_model::{Control, HostModelSpec};
use crate::app::{Verbs, Wr};
use crate::sim::{Event, Simulation};
use crate::units::Time;

/// DRUM scheduler event kinds.
pub(in crate::sim) const RELEASE: u8 = 0;
pub(in crate::sim) const POLL: u8 = 1;
pub(in crate::sim) const PERIOD: u8 = 2;
/// `control = "out_of_band"` (`drum_control`): a period of every scheduler, the
/// coordinator's round, and new prices at the schedulers.
pub(in crate::sim) const NET_PERIOD: u8 = 3;
pub(in crate::sim) const COORD: u8 = 4;
pub(in crate::sim) const ROUND: u8 = 5;

impl Simulation {
    /// DRUM: application `i` joins its host's scheduler (made at the host's first
    /// application), which opens one shared QP per destination.
    pub(super) fn drum_register(
        &mut self,
        m: &mut HostModel,
        agent_of_nic: &mut [Option<u32>],
        spec: &HostModelSpec,
        i: u32,
    ) {
        let s = &spec.apps[i as usize];
        let nic = self.nic_of[s.host.idx()].idx();
        let cfg = spec.host;
        let ag = *agent_of_nic[nic].get_or_insert_with(|| {
            m.agents.push(DrumAgent::new(spec.drum, Vec::new(), Vec::new(), cfg.wqe_cost, cfg.poll_cost));
            m.shared_qp.push(Vec::new());
            m.agents.len() as u32 - 1
        });
        m.agent_of.push((ag, m.agents[ag as usize].apps.len() as u32));
        m.agents[ag as usize].apps.push(i);
        if !m.shared_qp[ag as usize].iter().any(|&(d, _)| d == s.dst) {
            let q = self.host_qp(s.host, s.dst);
            m.shared_qp[ag as usize].push((s.dst, q));
        }
    }

    /// DRUM: every scheduler gets its final settings (k fitted to the QP cache, a = 1/wr_num)
    /// and, under local control, its first control period now.
    pub(super) fn drum_start_agents(&mut self, m: &mut HostModel, spec: &HostModelSpec) {
        let entries = self.cfg.qp_cache.map(|c| c.entries);
        let cfg = spec.host;
        for (a, ag) in m.agents.iter_mut().enumerate() {
            // Dedicated QPs plus the shared ones must fit the QP-context cache.
            let shared = m.shared_qp[a].len() as u32;
            let k = entries.map_or(spec.drum.k, |e| spec.drum.k.min(e.saturating_sub(shared).max(1)));
            let drum = crate::app::host_model::DrumConfig { k, ..spec.drum };
            let mean_wr = |i: u32| {
                let (lo, hi) = m.apps[i as usize].spec.wr_num;
                (lo as f64 + hi as f64) / 2.0
            };
            let a0: Vec<f64> = ag.apps.iter().map(|&i| 1.0 / mean_wr(i)).collect();
            *ag = DrumAgent::new(drum, std::mem::take(&mut ag.apps), a0, cfg.wqe_cost, cfg.poll_cost);
            if spec.drum.control == Control::Local {
                self.queue.push(self.now, Event::Drum(a as u32, PERIOD));
            }
        }
    }

    /// A DRUM scheduler's event.
    pub(in crate::sim) fn on_drum(&mut self, ag: u32, kind: u8) {
        match kind {
            RELEASE => self.drum_release(ag),
            POLL => self.drum_poll_done(ag),
            PERIOD => self.drum_period(ag),
            NET_PERIOD => self.drum_net_period(),
            COORD => self.drum_net_coord(),
            _ => self.drum_net_round(),
        }
    }

    /// Schedules the next release at rate Q if WQEs wait and none is scheduled.
    pub(super) fn drum_arm_release(&mut self, ag: u32) {
        let now = self.now;
        let a = &mut self.hostm.as_mut().expect("host model").agents[ag as usize];
        if a.release_armed || !a.backlogged() {
            return;
        }
        a.release_armed = true;
        let at = (a.last_release + a.gap).max(now);
        self.queue.push(at, Event::Drum(ag, RELEASE));
    }

    /// Releases one WQE by weighted fair order onto its application's QP.
    pub(super) fn drum_release(&mut self, ag: u32) {
        let now = self.now;
        let m = self.hostm.as_mut().expect("host model");
        let a = &mut m.agents[ag as usize];
        a.release_armed = false;
        let Some((j, size, last)) = a.release_one() else { return };
        a.last_release = now;
        let i = a.apps[j];
        let app = &m.apps[i as usize];
        let qp = if a.active[j] {
            app.qp
        } else {
            m.shared_qp[ag as usize].iter().find(|&&(d, _)| d == app.spec.dst).expect("shared QP per destination").1
        };
        let id = m.ids[i as usize];
        let cookie = if last { SIGNALLED } else { 0 };
        HostVerbs { sim: self, app: id }.post(qp, Wr { bytes: size, cookie, header: None, notify_sent: false });
        let nic = self.qps[qp.idx()].nic;
        self.nic_kick(nic);
        self.drum_arm_release(ag);
    }

    /// The poller starts reading the next non-empty ring (stride order), if any.
    pub(super) fn drum_start_poll(&mut self, ag: u32) {
        let m = self.hostm.as_mut().expect("host model");
        if m.agents[ag as usize].start_poll().is_some() {
            let at = self.now + m.cfg.poll_cost;
            self.queue.push(at, Event::Drum(ag, POLL));
        }
    }

    /// A poll ended: its CQE reaches the application, and the poller goes on.
    pub(super) fn drum_poll_done(&mut self, ag: u32) {
        let m = self.hostm.as_mut().expect("host model");
        let a = &mut m.agents[ag as usize];
        let Some(j) = a.polling else { return };
        a.end_poll(j);
        let i = a.apps[j];
        self.closed_seen(i);
        self.drum_start_poll(ag);
    }

    /// A control period: solve, re-weight, record; again after `period` while apps run.
    pub(super) fn drum_period(&mut self, ag: u32) {
        let now = self.now;
        let m = self.hostm.as_mut().expect("host model");
        let period_us = if now == Time::ZERO { 0.0 } else { m.period.0 as f64 / 1e6 };
        let rows = m.agents[ag as usize].control(now, period_us);
        m.drum_rows.extend(rows);
        let a = &m.agents[ag as usize];
        if a.apps.iter().any(|&i| m.apps[i as usize].phase != Phase::Done) {
            let at = now + m.period;
            self.queue.push(at, Event::Drum(ag, PERIOD));
        }
    }
}
