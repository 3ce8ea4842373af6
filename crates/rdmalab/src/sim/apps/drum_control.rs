//! DRUM with `control = "out_of_band"`: the hosts' schedulers and a coordinator solve one
//! network-wide problem by sharing ADMM (docs/drum.md §6), reusing the solver's
//! `drum::Agent` (one per host) and `drum::Coordinator` step by step.
//!
//! Coupling: the fabric links of every application's path (its first shortest path),
//! loaded by its bytes per WQE (the mean of its size range), with capacity the link's
//! payload rate. Rates are WQEs per µs, as in `app::drum_agent`.
//!
//! Every period each scheduler measures its own applications, rebuilds its agent on the new
//! data (warm-started from its previous iterate) and takes a step with the last prices; its
//! report (one load per resource) reaches the coordinator `control_delay` later as an event,
//! and the new prices reach the schedulers another `control_delay` later: a round costs
//! 2 × `control_delay`. After `iterations` rounds each scheduler enforces its feasible
//! recovery: its rates scaled by `min(1, Q/Σx, cap_k/load_k)` over the resources it loads,
//! the loads being those the coordinator summed in the last round. The schedulers of one
//! period act at the same instant, so one event serves all of them; nothing a host does
//! depends on another host's data except through the reports and prices.
//! `control = "in_band"` carries the same rounds as messages (`drum_inband`).
//!
//! The loop is one row of the application table (`AppKind::DrumNet`), of no one host: a
//! period, the coordinator's round and new prices at the schedulers are its timers.

use crate::app::{AppId, AppKind};
use crate::drum::network::{Coupling, NetworkSettings};
use crate::drum::{ActiveSet, Agent, AgentReport, Coordinator, NetworkProblem, Problem};
use crate::ids::PortId;
use crate::sim::{Event, Simulation};
use crate::units::Time;

/// The control loop's timer tokens: a period of every scheduler, the coordinator's round
/// (out of band), and new prices at the schedulers (out of band).
pub(super) const NET_PERIOD: u32 = 3;
const COORD: u32 = 4;
const ROUND: u32 = 5;

/// The network-wide control loop.
#[derive(Debug)]
pub(in crate::sim) struct DrumNet {
    delay: Time,
    iterations: u32,
    period: Time,
    rho: f64,
    agents: Vec<Option<Agent>>,
    coord: Option<Coordinator>,
    /// The current round's report of each scheduler.
    reports: Vec<Option<AgentReport>>,
    round: u32,
    /// The feasible allocation of the period, once its last round is done.
    final_x: Vec<f64>,
    /// Its row in the application table.
    id: AppId,
    /// `control = "in_band"`: the control connections.
    pub(in crate::sim) inband: Option<super::drum_inband::InBand>,
    /// Measured release rates of the period that ended, per host.
    rates: Vec<Vec<f64>>,
    data: NetData,
}

/// The network-wide problem's data of one period, host-major.
#[derive(Debug)]
struct NetData {
    m: usize,
    route: Vec<Coupling>,
    link_cap: Vec<f64>,
    a: Vec<f64>,
    q: Vec<f64>,
    c: Vec<f64>,
    mask: Vec<bool>,
    alpha: f64,
    beta: f64,
}

impl DrumNet {
    /// Its row in the application table.
    pub(super) fn id(&self) -> AppId {
        self.id
    }
}

impl NetData {
    fn problem(&self) -> NetworkProblem<'_> {
        let n = self.q.len();
        let active = ActiveSet::from_mask(n, self.m, &self.mask).expect("mask of the problem's shape");
        let base = Problem::new(n, self.m, &self.a, &self.q, &self.c, self.alpha, self.beta, active)
            .expect("parameters checked at setup");
        NetworkProblem::new(base, &[], &self.link_cap, &self.route).expect("couplings built at setup")
    }
}

/// Mean bytes per WQE of a size range drawn log-uniform.
fn mean_size((lo, hi): (u64, u64)) -> f64 {
    if lo == hi {
        lo as f64
    } else {
        (hi - lo) as f64 / ((hi as f64) / (lo as f64)).ln()
    }
}

impl Simulation {
    /// The coupling of every application (agent order, then application order) with the
    /// links of its path; the loop takes its row in the application table.
    pub(in crate::sim) fn drum_net_new(&mut self, drum: crate::app::host_model::DrumConfig) -> DrumNet {
        let id = self.apps.add(AppKind::DrumNet, super::AppState::Elsewhere);
        let m = self.hostm.as_ref().expect("host model");
        let mut links: Vec<PortId> = Vec::new();
        let mut route = Vec::new();
        for (h, &ag) in m.agent_ids.iter().enumerate() {
            for (j, &i) in self.apps.state(ag).drum_agent().apps.iter().enumerate() {
                let s = &self.apps.state(m.ids[i as usize]).closed().spec;
                for p in self.routes.first_path(&self.topo, s.host, s.dst) {
                    let l = links.iter().position(|&q| q == p).unwrap_or_else(|| {
                        links.push(p);
                        links.len() - 1
                    });
                    route.push(Coupling { host: h, app: j, resource: l, coef: mean_size(s.size) });
                }
            }
        }
        let payload = self.cfg.mtu as f64 / (self.cfg.mtu + self.cfg.header_bytes) as f64;
        let link_cap = links.iter().map(|&p| self.topo.port_rate(p).0 as f64 / 8.0 / 1e6 * payload).collect();
        let n = m.agent_ids.len();
        let first = m.agent_ids.first().map(|&ag| self.apps.state(ag).drum_agent());
        DrumNet {
            delay: drum.control_delay,
            iterations: drum.iterations,
            period: drum.period,
            rho: NetworkSettings::default().rho,
            agents: (0..n).map(|_| None).collect(),
            coord: None,
            reports: (0..n).map(|_| None).collect(),
            round: 0,
            final_x: Vec::new(),
            id,
            inband: None,
            rates: Vec::new(),
            data: NetData {
                m: first.map_or(0, |a| a.apps.len()),
                route,
                link_cap,
                a: Vec::new(),
                q: Vec::new(),
                c: Vec::new(),
                mask: Vec::new(),
                alpha: drum.alpha,
                beta: drum.beta,
            },
        }
    }

    /// A timer of the control loop.
    pub(in crate::sim) fn drum_net_timer(&mut self, token: u32) {
        match token {
            NET_PERIOD => self.drum_net_period(),
            COORD => self.drum_net_coord(),
            _ => self.drum_net_round(),
        }
    }

    /// The control loop's row in the application table.
    pub(super) fn drum_net_id(&self) -> AppId {
        self.hostm.as_ref().and_then(|m| m.net.as_ref()).expect("network control").id
    }

    /// A period starts: every scheduler measures, rebuilds its agent and steps; reports go out.
    pub(in crate::sim) fn drum_net_period(&mut self) {
        let now = self.now;
        let hm = self.hostm.as_mut().expect("host model");
        let mut net = hm.net.take().expect("network control");
        let done = |id: &AppId| self.apps.state(*id).closed().phase == crate::app::closed_loop::Phase::Done;
        let running = !hm.ids.iter().all(done);
        if running {
            self.queue.push(now + net.period, Event::App(net.id, NET_PERIOD));
        }
        if net.inband.as_ref().is_some_and(|ib| ib.busy()) {
            // The last period's messages are still in flight: skip this solve.
            self.hostm.as_mut().expect("host model").net = Some(net);
            return;
        }
        let hm = self.hostm.as_mut().expect("host model");
        let period_us = if now == Time::ZERO { 0.0 } else { net.period.0 as f64 / 1e6 };
        let d = &mut net.data;
        d.a.clear();
        d.q.clear();
        d.c.clear();
        d.mask.clear();
        net.rates.clear();
        for &id in &hm.agent_ids {
            let ag = self.apps.state_mut(id).drum_agent_mut();
            net.rates.push(ag.measure(period_us));
            let (a, q, c, _, _) = ag.data();
            d.a.extend_from_slice(a);
            d.q.push(q);
            d.c.push(c);
            d.mask.extend(ag.active_set().to_mask(1, a.len()));
        }
        let rho = net.rho;
        {
            let np = net.data.problem();
            if net.coord.is_none() {
                net.coord = Some(Coordinator::new(&np, NetworkSettings { rho, ..Default::default() }));
            }
            for h in 0..net.agents.len() {
                let mut agent = Agent::new(&np, h, h + 1, rho).expect("host in range");
                if let Some(prev) = net.agents[h].take() {
                    agent.warm_from(&prev).expect("same shape every period");
                }
                net.agents[h] = Some(agent);
            }
        }
        net.round = 0;
        let n = net.agents.len();
        let inband = net.inband.is_some();
        self.hostm.as_mut().expect("host model").net = Some(net);
        if self.net().iterations == 0 {
            self.drum_net_finish();
            (0..n).for_each(|h| self.drum_net_allocate_host(h));
            return;
        }
        (0..n).for_each(|h| self.drum_net_step_host(h));
        if inband {
            self.drum_inband_start(n, 0);
        } else {
            let at = now + self.net().delay;
            self.queue.push(at, Event::App(self.drum_net_id(), COORD));
        }
    }

    fn net(&mut self) -> &mut DrumNet {
        self.hostm.as_mut().and_then(|m| m.net.as_mut()).expect("network control")
    }

    /// Scheduler `h` steps with the prices it last received; its report is kept for the
    /// coordinator.
    pub(in crate::sim) fn drum_net_step_host(&mut self, h: usize) {
        let net = self.net();
        let (u_prev, u) = net.coord.as_ref().expect("coordinator").prices();
        let rep = net.agents[h].as_mut().expect("agent").step(&u_prev, &u).expect("prices of every resource");
        net.reports[h] = Some(rep);
    }

    /// The coordinator sums the reports (in scheduler order) and updates the prices. True
    /// when that was the period's last round (the allocation is then ready).
    pub(in crate::sim) fn drum_net_update(&mut self) -> bool {
        let net = self.net();
        let reports: Vec<AgentReport> = net.reports.iter_mut().map(|r| r.take().expect("every report")).collect();
        net.coord.as_mut().expect("coordinator").update(&reports).expect("a report from every agent");
        net.round += 1;
        let last = net.round >= net.iterations;
        if last {
            self.drum_net_finish();
        }
        last
    }

    /// Out of band: the coordinator's answer leaves; it reaches the schedulers later.
    pub(in crate::sim) fn drum_net_coord(&mut self) {
        self.drum_net_update();
        let at = self.now + self.net().delay;
        self.queue.push(at, Event::App(self.drum_net_id(), ROUND));
    }

    /// Out of band: new prices (or the final answer) reached every scheduler.
    pub(in crate::sim) fn drum_net_round(&mut self) {
        let n = self.net().agents.len();
        if self.net().round >= self.net().iterations {
            (0..n).for_each(|h| self.drum_net_allocate_host(h));
        } else {
            (0..n).for_each(|h| self.drum_net_step_host(h));
            let at = self.now + self.net().delay;
            self.queue.push(at, Event::App(self.drum_net_id(), COORD));
        }
    }

    /// The feasible recovery of the last iterate: each host's rates scaled by
    /// `min(1, Q/Σx, cap_k/load_k)` over the resources it loads. It needs only the loads the
    /// coordinator summed and each host's own rows, so the answer each host receives can
    /// carry its factor.
    fn drum_net_finish(&mut self) {
        let net = self.net();
        let x: Vec<f64> = net.agents.iter().flat_map(|a| a.as_ref().expect("agent").x().to_vec()).collect();
        net.final_x = net.data.problem().recover(&x).0;
    }

    /// Scheduler `h` enforces its rows of the period's allocation.
    pub(in crate::sim) fn drum_net_allocate_host(&mut self, h: usize) {
        let now = self.now;
        let hm = self.hostm.as_mut().expect("host model");
        let net = hm.net.as_ref().expect("network control");
        let m = net.data.m;
        let active = net.data.mask[h * m..(h + 1) * m].to_vec();
        let ag = self.apps.state_mut(hm.agent_ids[h]).drum_agent_mut();
        let rows = ag.allocate(now, &net.final_x[h * m..(h + 1) * m], Some(active), &net.rates[h]);
        hm.drum_rows.extend(rows);
    }
}
