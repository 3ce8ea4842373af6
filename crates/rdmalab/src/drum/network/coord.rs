//! The coordinator of the network-wide model: sums the agents' loads (in agent order),
//! projects each resource onto its capacity and broadcasts the new scaled prices.
//!
//! Per resource `k` with `N_k` coefficients, capacity `cap_k` and total load `L_k`,
//! the copy update is a half-space projection whose shift is the new scaled price:
//! `u_k ← max(0, u_k + (L_k − cap_k)/N_k)`. The copy residual is then
//! `‖A x − y‖² = Σ_k N_k (u_k^new − u_k)²`.

use super::{stat, AgentReport, NetworkProblem};
use crate::error::{Error, Result};

/// Settings of the sharing ADMM.
#[derive(Clone, Copy, Debug)]
pub struct NetworkSettings {
    /// Penalty ρ.
    pub rho: f64,
    /// Absolute tolerance (Boyd stopping rule).
    pub eps_abs: f64,
    /// Relative tolerance.
    pub eps_rel: f64,
    /// Iteration limit.
    pub max_iter: usize,
}

impl Default for NetworkSettings {
    fn default() -> Self {
        NetworkSettings { rho: 0.3, eps_abs: 1e-9, eps_rel: 1e-9, max_iter: 10_000 }
    }
}

impl NetworkSettings {
    /// Rejects non-positive parameters.
    pub fn validate(&self) -> Result<()> {
        if !(self.rho.is_finite() && self.rho > 0.0) {
            return Err(Error::drum("rho", format!("ρ = {} must be finite and > 0", self.rho)));
        }
        if !(self.eps_abs >= 0.0 && self.eps_rel >= 0.0 && self.eps_abs + self.eps_rel > 0.0) {
            return Err(Error::drum("tol", "tolerances must be ≥ 0 and not both 0"));
        }
        Ok(())
    }
}

/// One iteration of the network-wide solve.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetworkRecord {
    /// Iteration number (1-based).
    pub iter: usize,
    /// Objective of the raw rates (ignores shared-capacity violations).
    pub objective: f64,
    /// Primal residual (local coupling and resource copies).
    pub r_norm: f64,
    /// Dual residual (its copy part is one iteration behind).
    pub s_norm: f64,
    /// Primal tolerance.
    pub eps_pri: f64,
    /// Dual tolerance.
    pub eps_dual: f64,
    /// Largest relative capacity violation of the raw rates.
    pub violation: f64,
}

/// Result of a network-wide solve.
#[derive(Clone, Debug)]
pub struct NetworkResult {
    /// Raw final rates, host-major.
    pub x: Vec<f64>,
    /// Feasible recovery of `x`.
    pub x_hat: Vec<f64>,
    /// Objective at `x_hat`.
    pub objective: f64,
    /// Resource prices (CQ budgets first, then links): the multipliers `ρ u` of the
    /// capacity rows as given (before row scaling).
    pub prices: Vec<f64>,
    /// Per-iteration records.
    pub history: Vec<NetworkRecord>,
    /// Whether the stopping rule was met.
    pub converged: bool,
}

/// The coordinator state: prices, capacities and the history.
#[derive(Clone, Debug)]
pub struct Coordinator {
    cap: Vec<f64>,
    count: Vec<f64>,
    u: Vec<f64>,
    u_prev: Vec<f64>,
    settings: NetworkSettings,
    n_vars: f64,
    history: Vec<NetworkRecord>,
    met_once: bool,
    converged: bool,
}

impl Coordinator {
    /// A coordinator for `np` with zero prices.
    pub fn new(np: &NetworkProblem<'_>, settings: NetworkSettings) -> Coordinator {
        let k = np.n_resources();
        Coordinator {
            cap: np.res_cap.clone(),
            count: np.res_count.clone(),
            u: vec![0.0; k],
            u_prev: vec![0.0; k],
            settings,
            n_vars: (np.base.n * np.base.m + np.res.len()) as f64,
            history: Vec::new(),
            met_once: false,
            converged: false,
        }
    }

    /// Scaled prices `(u^(T−1), u^T)` to broadcast.
    pub fn prices(&self) -> (Vec<f64>, Vec<f64>) {
        (self.u_prev.clone(), self.u.clone())
    }

    /// Whether to stop: converged (twice in a row, as the copy dual residual lags one
    /// iteration) or out of iterations.
    pub fn done(&self) -> bool {
        self.converged || self.history.len() >= self.settings.max_iter
    }

    /// Whether the stopping rule was met.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Per-iteration records so far.
    pub fn history(&self) -> &[NetworkRecord] {
        &self.history
    }

    /// Consumes the agents' reports (in agent order), updates the prices, records.
    pub fn update(&mut self, reports: &[AgentReport]) -> Result<NetworkRecord> {
        let k = self.u.len();
        if reports.iter().any(|r| r.load.len() != k) {
            return Err(Error::drum("load", format!("every agent load must have {k} entries (one per resource)")));
        }
        let mut load = vec![0.0; k];
        let mut st = [0.0f64; stat::N];
        for rep in reports {
            load.iter_mut().zip(&rep.load).for_each(|(l, v)| *l += v);
            for (s, (acc, v)) in st.iter_mut().zip(&rep.stats).enumerate() {
                *acc = if s == stat::QVIOL { acc.max(*v) } else { *acc + v };
            }
        }
        let mut ry2 = 0.0;
        let mut viol = st[stat::QVIOL];
        #[allow(clippy::needless_range_loop)]
        for r in 0..k {
            let new =
                if self.count[r] > 0.0 { (self.u[r] + (load[r] - self.cap[r]) / self.count[r]).max(0.0) } else { 0.0 };
            ry2 += self.count[r] * (new - self.u[r]) * (new - self.u[r]);
            self.u_prev[r] = self.u[r];
            self.u[r] = new;
            viol = viol.max(load[r] / self.cap[r] - 1.0);
        }
        let s = &self.settings;
        let sq = self.n_vars.sqrt();
        let rec = NetworkRecord {
            iter: self.history.len() + 1,
            objective: st[stat::OBJ],
            r_norm: (st[stat::R2] + ry2).sqrt(),
            s_norm: (st[stat::S2] + st[stat::SY2_PREV]).sqrt(),
            eps_pri: sq * s.eps_abs + s.eps_rel * st[stat::AX2].sqrt(),
            eps_dual: sq * s.eps_abs + s.eps_rel * st[stat::AW2].sqrt(),
            violation: viol.max(0.0),
        };
        let met = rec.iter > 1 && rec.r_norm <= rec.eps_pri && rec.s_norm <= rec.eps_dual;
        self.converged = met && self.met_once;
        self.met_once = met;
        self.history.push(rec);
        Ok(rec)
    }

    /// Builds the result from the agents' rates (concatenated in host order).
    pub fn finish(self, np: &NetworkProblem<'_>, x: Vec<f64>) -> NetworkResult {
        let (x_hat, objective) = np.recover(&x);
        let rho = self.settings.rho;
        NetworkResult {
            x,
            x_hat,
            objective,
            // A row divided by f has price f times smaller; undo it.
            prices: self.u.iter().zip(&np.res_scale).map(|(u, f)| rho * u / f).collect(),
            history: self.history,
            converged: self.converged,
        }
    }
}
