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

use super::hostapps::{COORD, NET_PERIOD, ROUND};
use super::{Event, Simulation};
use crate::drum::network::{Coupling, NetworkSettings};
use crate::drum::{ActiveSet, Agent, AgentReport, Coordinator, NetworkProblem, Problem};
use crate::ids::PortId;
use crate::units::Time;

/// The network-wide control loop.
#[derive(Debug)]
pub(super) struct DrumNet {
    delay: Time,
    iterations: u32,
    period: Time,
    rho: f64,
    agents: Vec<Option<Agent>>,
    coord: Option<Coordinator>,
    reports: Vec<AgentReport>,
    round: u32,
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
    /// links of its path.
    pub(super) fn drum_net_new(&self, drum: crate::app::host_model::DrumConfig) -> DrumNet {
        let m = self.hostm.as_ref().expect("host model");
        let mut links: Vec<PortId> = Vec::new();
        let mut route = Vec::new();
        for (h, ag) in m.agents.iter().enumerate() {
            for (j, &i) in ag.apps.iter().enumerate() {
                let s = &m.apps[i as usize].spec;
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
        let n = m.agents.len();
        DrumNet {
            delay: drum.control_delay,
            iterations: drum.iterations,
            period: drum.period,
            rho: NetworkSettings::default().rho,
            agents: (0..n).map(|_| None).collect(),
            coord: None,
            reports: Vec::new(),
            round: 0,
            rates: Vec::new(),
            data: NetData {
                m: m.agents.first().map_or(0, |a| a.apps.len()),
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

    /// A period starts: every scheduler measures and steps; reports go out.
    pub(super) fn drum_net_period(&mut self) {
        let now = self.now;
        let hm = self.hostm.as_mut().expect("host model");
        let mut net = hm.net.take().expect("out_of_band control");
        let period_us = if now == Time::ZERO { 0.0 } else { net.period.0 as f64 / 1e6 };
        let d = &mut net.data;
        d.a.clear();
        d.q.clear();
        d.c.clear();
        d.mask.clear();
        net.rates.clear();
        for ag in hm.agents.iter_mut() {
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
        let running = hm.apps.iter().any(|a| a.phase != crate::app::closed_loop::Phase::Done);
        if running {
            self.queue.push(now + net.period, Event::Drum(0, NET_PERIOD));
        }
        if net.iterations == 0 {
            self.drum_net_allocate(&mut net);
        } else {
            self.drum_net_step(&mut net);
        }
        self.hostm.as_mut().expect("host model").net = Some(net);
    }

    /// Every scheduler steps with the last prices; its report reaches the coordinator later.
    fn drum_net_step(&mut self, net: &mut DrumNet) {
        let (u_prev, u) = net.coord.as_ref().expect("coordinator").prices();
        net.reports = net
            .agents
            .iter_mut()
            .map(|a| a.as_mut().expect("agent").step(&u_prev, &u).expect("prices of every resource"))
            .collect();
        self.queue.push(self.now + net.delay, Event::Drum(0, COORD));
    }

    /// The coordinator sums the reports and sends new prices back.
    pub(super) fn drum_net_coord(&mut self) {
        let now = self.now;
        let net = self.hostm.as_mut().expect("host model").net.as_mut().expect("out_of_band control");
        let reports = std::mem::take(&mut net.reports);
        net.coord.as_mut().expect("coordinator").update(&reports).expect("a report from every agent");
        net.reports = reports; // kept: the last loads serve the feasible recovery
        let at = now + net.delay;
        self.queue.push(at, Event::Drum(0, ROUND));
    }

    /// New prices reached the schedulers: another round, or enforce the result.
    pub(super) fn drum_net_round(&mut self) {
        let mut net = self.hostm.as_mut().expect("host model").net.take().expect("out_of_band control");
        net.round += 1;
        if net.round < net.iterations {
            self.drum_net_step(&mut net);
        } else {
            self.drum_net_allocate(&mut net);
        }
        self.hostm.as_mut().expect("host model").net = Some(net);
    }

    /// Each scheduler enforces its share of the feasible recovery of the last iterate.
    fn drum_net_allocate(&mut self, net: &mut DrumNet) {
        let now = self.now;
        let x: Vec<f64> = net.agents.iter().flat_map(|a| a.as_ref().expect("agent").x().to_vec()).collect();
        // The recovery uses only loads the coordinator summed and each host's own rows.
        let (xs, _) = net.data.problem().recover(&x);
        let hm = self.hostm.as_mut().expect("host model");
        let m = net.data.m;
        for (h, ag) in hm.agents.iter_mut().enumerate() {
            let active = net.data.mask[h * m..(h + 1) * m].to_vec();
            let rows = ag.allocate(now, &xs[h * m..(h + 1) * m], Some(active), &net.rates[h]);
            hm.drum_rows.extend(rows);
        }
    }
}
