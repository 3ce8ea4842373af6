//! The network-wide model: hosts coupled by shared resources, solved by sharing ADMM
//! between host agents and a coordinator (the paper's Algorithms 1–2 on a sound footing).
//!
//! With per-host duals (P) separates by host and needs no coordinator. Hosts do share two
//! physical things, both linear in the rates:
//! - a host's CQ polling budget also serves completions of data *received* from other
//!   hosts (the paper's eq. 24): `Σ_j a_hj x_hj + Σ_(i,j) T_(i,j)→h x_ij ≤ C_h`;
//! - fabric links: `Σ_(i,j) R_l,(i,j) x_ij ≤ cap_l`, `R` being bytes per WQE times the
//!   share of the flow routed over link `l`.
//!
//! Every nonzero coefficient `A_e` (element `(i,j)`, resource `k`) gets a copy `y_e`, and
//! the block `(z, y)` is split from `x`. The agents' x-update is then again separable per
//! app with one budget (`Σ_j x_ij ≤ Q_i`), so it reuses the row kernels of (P); the CQ
//! penalty keeps its own copy `z = a∘x`, now without a budget. The copy update is a
//! projection onto a half-space per resource, `y_e = v_e − θ_k`, so the scaled dual of every
//! copy of resource `k` equals `θ_k =: u_k`. Hence per iteration an agent sends one load per
//! resource it touches and receives `u` — the coordinator never sees per-app data.
//! Loads are summed in agent order, so iterates do not depend on where agents run.

use rayon::prelude::*;

use super::problem::{ActiveSet, HostTerms, Problem};
use crate::error::{Error, Result};

/// One coupling coefficient: rate `x[host, app]` loads `resource` with weight `coef`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coupling {
    /// Host of the sending application.
    pub host: usize,
    /// Application index on that host.
    pub app: usize,
    /// Resource index: `0..n` are host CQ budgets, `n..n+L` fabric links.
    pub resource: usize,
    /// Load per unit rate (> 0).
    pub coef: f64,
}

/// The network-wide model: (P)'s data plus shared resources.
#[derive(Clone, Debug)]
pub struct NetworkProblem<'a> {
    /// Local data; `base.c` are the CQ budgets, now shared with remote senders.
    pub base: Problem<'a>,
    /// Capacity of each resource (`n` CQ budgets, then the links), in row-scaled units.
    pub res_cap: Vec<f64>,
    /// Factor each resource's row (coefficients and capacity) was divided by: 1 for the
    /// CQ budgets, the largest coefficient for a link (see [`NetworkProblem::new`]).
    pub res_scale: Vec<f64>,
    /// Number of coefficients touching each resource.
    pub res_count: Vec<f64>,
    /// Per element `e = i*m + j`, its coefficients are `ptr[e]..ptr[e+1]`.
    pub ptr: Vec<usize>,
    /// Resource of each coefficient.
    pub res: Vec<u32>,
    /// Value of each coefficient.
    pub coef: Vec<f64>,
}

impl<'a> NetworkProblem<'a> {
    /// Builds the model from (P)'s data, receiver-side completion coefficients
    /// (`resource` = receiving host) and link coefficients (`resource` = link index).
    ///
    /// Each link row is divided by its largest coefficient. The feasible set is unchanged,
    /// but ADMM is not invariant to row scaling: link loads in bytes (coefficients of
    /// thousands) against per-app coefficients `a_ij` of 1–10 make the copies of the links
    /// dominate the penalty and stall convergence. Scaled, a link's capacity is counted
    /// in WQEs of its heaviest user, the same scale as the rates. Prices are reported for
    /// the rows as given.
    pub fn new(base: Problem<'a>, recv: &[Coupling], link_cap: &[f64], route: &[Coupling]) -> Result<Self> {
        let (n, m) = (base.n, base.m);
        super::problem::check_positive("link_cap", link_cap)?;
        let mut per: Vec<Vec<(u32, f64)>> = (0..n * m).map(|e| vec![(e as u32 / m as u32, base.a[e])]).collect();
        for (list, off, lim, name) in [(recv, 0, n, "recv"), (route, n, link_cap.len(), "route")] {
            for c in list {
                if c.host >= n || c.app >= m || c.resource >= lim {
                    return Err(Error::drum(
                        name,
                        format!("coupling {c:?} is out of range (n = {n}, m = {m}, {lim} targets)"),
                    ));
                }
                if !(c.coef.is_finite() && c.coef > 0.0) {
                    return Err(Error::drum(name, format!("coupling {c:?}: coefficient must be finite and > 0")));
                }
                per[c.host * m + c.app].push(((off + c.resource) as u32, c.coef));
            }
        }
        let k_total = n + link_cap.len();
        let mut res_count = vec![0.0; k_total];
        let (mut ptr, mut res, mut coef) = (vec![0], Vec::new(), Vec::new());
        for mut list in per {
            list.sort_by_key(|t| t.0);
            for (k, v) in merge_sorted(&list) {
                res.push(k);
                coef.push(v);
                res_count[k as usize] += 1.0;
            }
            ptr.push(res.len());
        }
        let mut res_scale = vec![0.0f64; k_total];
        for (&r, &v) in res.iter().zip(&coef) {
            res_scale[r as usize] = res_scale[r as usize].max(v);
        }
        // CQ rows keep their units (their coefficients a_ij are already O(1)); unused
        // links keep factor 1.
        res_scale.iter_mut().enumerate().for_each(|(r, f)| *f = if r < n || *f == 0.0 { 1.0 } else { *f });
        for (r, v) in res.iter().zip(coef.iter_mut()) {
            *v /= res_scale[*r as usize];
        }
        let res_cap = base.c.iter().chain(link_cap).zip(&res_scale).map(|(c, f)| c / f).collect();
        Ok(NetworkProblem { base, res_cap, res_scale, res_count, ptr, res, coef })
    }

    /// Number of shared resources.
    pub fn n_resources(&self) -> usize {
        self.res_cap.len()
    }

    /// Loads `Σ A x` of every resource, in the row-scaled units of `res_cap`.
    pub fn loads(&self, x: &[f64]) -> Vec<f64> {
        let mut load = vec![0.0; self.n_resources()];
        for (e, &xe) in x.iter().enumerate() {
            for t in self.ptr[e]..self.ptr[e + 1] {
                load[self.res[t] as usize] += self.coef[t] * xe;
            }
        }
        load
    }

    /// A feasible point from `x`: each host scaled by `min(1, Q_i/Σx, min_k cap_k/load_k)`
    /// over the resources it loads; returns it with its objective.
    pub fn recover(&self, x: &[f64]) -> (Vec<f64>, f64) {
        let p = &self.base;
        let load = self.loads(x);
        let f: Vec<f64> = load.iter().zip(&self.res_cap).map(|(l, c)| if *l > *c { c / l } else { 1.0 }).collect();
        let mut out = x.to_vec();
        let mut obj = 0.0;
        for i in 0..p.n {
            let row = &mut out[i * p.m..(i + 1) * p.m];
            let mut s = (p.q[i] / row.iter().sum::<f64>()).min(1.0);
            for e in i * p.m..(i + 1) * p.m {
                for t in self.ptr[e]..self.ptr[e + 1] {
                    s = s.min(f[self.res[t] as usize]);
                }
            }
            row.iter_mut().for_each(|v| *v *= s);
            obj += p.host_terms(i, row).value(p.beta);
        }
        (out, obj)
    }
}

/// Sums the values of equal keys of a key-sorted list.
fn merge_sorted(list: &[(u32, f64)]) -> Vec<(u32, f64)> {
    let mut out: Vec<(u32, f64)> = Vec::with_capacity(list.len());
    for &(k, v) in list {
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 += v,
            _ => out.push((k, v)),
        }
    }
    out
}

/// Statistics an agent returns with its loads (indices into [`AgentReport::stats`]).
pub mod stat {
    /// ‖a∘x − z‖² of the agent's hosts.
    pub const R2: usize = 0;
    /// ‖ρ a∘(z − z_prev)‖².
    pub const S2: usize = 1;
    /// ‖a∘x‖² + Σ_e (A_e x)².
    pub const AX2: usize = 2;
    /// ‖ρ a∘w‖² + Σ_e (ρ A_e u_k)².
    pub const AW2: usize = 3;
    /// Copy part of the dual residual of the *previous* iteration (one step behind).
    pub const SY2_PREV: usize = 4;
    /// Objective `Σ I U(x) − β Σ (a x)^-2` of the agent's raw rates.
    pub const OBJ: usize = 5;
    /// Largest relative violation of `Σ_j x_ij ≤ Q_i`.
    pub const QVIOL: usize = 6;
    /// Number of statistics.
    pub const N: usize = 7;
}

/// What an agent sends to the coordinator after one step.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentReport {
    /// Load `Σ A_e x_e` per resource (all resources, zero where untouched).
    pub load: Vec<f64>,
    /// Scalars indexed by [`stat`].
    pub stats: [f64; stat::N],
}

mod agent;
pub use agent::Agent;
mod coord;
pub use coord::{Coordinator, NetworkResult, NetworkSettings};

/// Solves the network-wide model in process with `groups` agents (hosts split evenly),
/// running the agents of one iteration in parallel and reducing in agent order.
pub fn solve_network_local(np: &NetworkProblem<'_>, settings: NetworkSettings, groups: usize) -> Result<NetworkResult> {
    settings.validate()?;
    let mut agents = Agent::split(np, groups, settings.rho)?;
    let mut coord = Coordinator::new(np, settings);
    while !coord.done() {
        let (u_prev, u) = coord.prices();
        let reports: Vec<AgentReport> = agents.par_iter_mut().map(|a| a.step(&u_prev, &u)).collect::<Result<_>>()?;
        coord.update(&reports)?;
    }
    let x: Vec<f64> = agents.iter().flat_map(|a| a.x().to_vec()).collect();
    Ok(coord.finish(np, x))
}

/// The rows `h0..h1` of an active set, re-based to start at 0.
pub(crate) fn host_slice_active(active: &ActiveSet, h0: usize, h1: usize) -> ActiveSet {
    let base = active.ptr[h0];
    ActiveSet {
        ptr: active.ptr[h0..=h1].iter().map(|p| p - base).collect(),
        idx: active.idx[base..active.ptr[h1]].to_vec(),
    }
}

/// Objective terms of a row (utility and CQ penalty at `z = a x`).
pub(crate) fn row_objective(a: &[f64], act: &[u32], x: &[f64], alpha: f64, beta: f64) -> f64 {
    let mut t = HostTerms::default();
    for (&aj, &xj) in a.iter().zip(x) {
        t.penalty += 1.0 / (aj * xj * aj * xj);
    }
    t.utility = act.iter().map(|&j| super::problem::utility(alpha, x[j as usize])).sum();
    t.value(beta)
}
