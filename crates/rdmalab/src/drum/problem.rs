//! The convex DRUM model (P): data, validation, the active set and the objective.
//!
//! For each host `i` and application `j`, `x_ij` is the WQE fetch rate and `z_ij = a_ij x_ij`
//! the completion (CQE) rate it causes. With a fixed active set `I`,
//!
//! ```text
//! maximise  Σ_ij I_ij U(x_ij) − β Σ_ij z_ij^-2,   U(x) = x^(1−α) / (1−α)
//! s.t.      z_ij = a_ij x_ij,  Σ_j x_ij ≤ Q_i,  Σ_j z_ij ≤ C_i,  x ≥ 0
//! ```
//!
//! is convex with a unique optimum, and it separates across hosts. The paper's
//! log-sum constraints `Σ_j log x_ij ≤ q_i` are refused ([`CapacityForm::LogSum`]): their
//! feasible set is not convex and the problem is unbounded above under them.
//!
//! Layout: every per-(host, app) array is host-major and contiguous, row `i` is
//! `[i*m .. (i+1)*m]`; per-host scalars are arrays of length `n`.

use crate::error::{Error, Result};

/// How the per-host resource budgets are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacityForm {
    /// `Σ_j x_ij ≤ Q_i` and `Σ_j a_ij x_ij ≤ C_i`: a WQE-rate and a CQ-polling budget.
    Linear,
    /// The paper's `Σ_j log x_ij ≤ q_i` (and the same for `z`). Always rejected.
    LogSum,
}

impl CapacityForm {
    /// Parses `"linear"` or `"log"`; the latter is then refused by [`CapacityForm::check`].
    pub fn parse(s: &str) -> Result<CapacityForm> {
        match s {
            "linear" => Ok(CapacityForm::Linear),
            "log" | "logsum" | "log-sum" => Ok(CapacityForm::LogSum),
            other => Err(Error::drum("capacity", format!("unknown form {other:?}; use \"linear\""))),
        }
    }

    /// Accepts the linear form and explains why the log-sum form cannot be solved.
    pub fn check(self) -> Result<()> {
        match self {
            CapacityForm::Linear => Ok(()),
            CapacityForm::LogSum => Err(Error::drum(
                "capacity",
                "the paper's constraint Σ_j log x_ij ≤ q_i is rejected: log is concave, so the set \
                 {x : Σ log x ≤ q} is not convex (e.g. x1·x2 ≤ e^q), and the problem is unbounded: \
                 x_i1 = T with the other rates shrunk to keep Σ log x fixed makes the utility grow like \
                 T^(1−α) while the CQ penalty grows only like T^(2/(m−1)), so the objective → ∞ for \
                 m > 1 + 2/(1−α). Use linear budgets Σ_j x_ij ≤ Q_i, Σ_j a_ij x_ij ≤ C_i (docs/drum.md)",
            )),
        }
    }
}

/// The active QPs of each host, as compressed rows of column indices (ascending).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveSet {
    /// `ptr[i]..ptr[i+1]` indexes the active columns of host `i` in `idx`.
    pub ptr: Vec<usize>,
    /// Active column indices, host by host.
    pub idx: Vec<u32>,
}

impl ActiveSet {
    /// Active columns of host `i`.
    pub fn row(&self, i: usize) -> &[u32] {
        &self.idx[self.ptr[i]..self.ptr[i + 1]]
    }

    /// From a host-major 0/1 mask of `n*m` entries.
    pub fn from_mask(n: usize, m: usize, mask: &[bool]) -> Result<ActiveSet> {
        if mask.len() != n * m {
            return Err(Error::drum("active", format!("mask has {} entries, expected n*m = {}", mask.len(), n * m)));
        }
        let mut ptr = Vec::with_capacity(n + 1);
        let mut idx = Vec::new();
        ptr.push(0);
        for row in mask.chunks_exact(m.max(1)).take(n) {
            idx.extend(row.iter().enumerate().filter(|(_, &b)| b).map(|(j, _)| j as u32));
            ptr.push(idx.len());
        }
        Ok(ActiveSet { ptr, idx })
    }

    /// The provably optimal top-k rule: on each host the `k` applications with the smallest
    /// `a_ij` (ties broken by the smaller index). An exchange argument shows that no other
    /// subset of size `k` does better (docs/drum.md, "top-k").
    pub fn top_k(n: usize, m: usize, a: &[f64], k: usize) -> Result<ActiveSet> {
        if k >= m {
            return Err(Error::drum("k", format!("k = {k} must be smaller than the number of apps m = {m}")));
        }
        if a.len() != n * m {
            return Err(Error::drum("a", format!("a has {} entries, expected n*m = {}", a.len(), n * m)));
        }
        use rayon::prelude::*;
        let rows: Vec<Vec<u32>> = a.par_chunks(m.max(1)).take(n).map(|row| smallest_k(row, k)).collect();
        let mut ptr = Vec::with_capacity(n + 1);
        let mut idx = Vec::with_capacity(n * k);
        ptr.push(0);
        for r in rows {
            idx.extend(r);
            ptr.push(idx.len());
        }
        Ok(ActiveSet { ptr, idx })
    }

    /// Host-major boolean mask of the set.
    pub fn to_mask(&self, n: usize, m: usize) -> Vec<bool> {
        let mut mask = vec![false; n * m];
        for i in 0..n {
            for &j in self.row(i) {
                mask[i * m + j as usize] = true;
            }
        }
        mask
    }
}

/// Indices of the `k` smallest entries by `(value, index)`, ascending by index.
fn smallest_k(row: &[f64], k: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..row.len() as u32).collect();
    if k == 0 {
        return Vec::new();
    }
    let key = |&j: &u32| (row[j as usize], j);
    order.select_nth_unstable_by(k - 1, |p, q| key(p).partial_cmp(&key(q)).unwrap_or(std::cmp::Ordering::Equal));
    let mut out = order[..k].to_vec();
    out.sort_unstable();
    out
}

/// One instance of (P), borrowing its large arrays (so that NumPy buffers need no copy).
#[derive(Clone, Debug)]
pub struct Problem<'a> {
    /// Hosts.
    pub n: usize,
    /// Applications per host.
    pub m: usize,
    /// CQE-per-WQE ratios `a_ij`, host-major, all > 0.
    pub a: &'a [f64],
    /// WQE-rate budgets `Q_i`.
    pub q: &'a [f64],
    /// CQ-polling budgets `C_i`.
    pub c: &'a [f64],
    /// Fairness exponent α ∈ (0, 1).
    pub alpha: f64,
    /// Weight β > 0 of the CQ latency penalty.
    pub beta: f64,
    /// The active QPs.
    pub active: ActiveSet,
}

/// Checks that every entry of `v` is finite and > 0.
pub(crate) fn check_positive(field: &str, v: &[f64]) -> Result<()> {
    match v.iter().position(|x| !(x.is_finite() && *x > 0.0)) {
        None => Ok(()),
        Some(p) => Err(Error::drum(field, format!("entry {p} is {}; every entry must be finite and > 0", v[p]))),
    }
}

/// Checks the scalar model parameters α and β.
pub(crate) fn check_params(alpha: f64, beta: f64) -> Result<()> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(Error::drum("alpha", format!("α = {alpha} must lie in (0, 1) (α-fair utility x^(1−α)/(1−α))")));
    }
    if !(beta.is_finite() && beta > 0.0) {
        return Err(Error::drum("beta", format!("β = {beta} must be finite and > 0")));
    }
    Ok(())
}

impl<'a> Problem<'a> {
    /// Validates the data and builds the problem. `active` must come from
    /// [`ActiveSet::from_mask`] or [`ActiveSet::top_k`] for the same `(n, m)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        n: usize,
        m: usize,
        a: &'a [f64],
        q: &'a [f64],
        c: &'a [f64],
        alpha: f64,
        beta: f64,
        active: ActiveSet,
    ) -> Result<Problem<'a>> {
        if n == 0 || m == 0 {
            return Err(Error::drum("a", format!("empty problem: n = {n} hosts, m = {m} apps")));
        }
        if a.len() != n * m {
            return Err(Error::drum("a", format!("a has {} entries, expected n*m = {}", a.len(), n * m)));
        }
        if q.len() != n || c.len() != n {
            return Err(Error::drum(
                "Q/C",
                format!("Q has {} and C has {} entries, expected n = {n}", q.len(), c.len()),
            ));
        }
        check_params(alpha, beta)?;
        check_positive("a", a)?;
        check_positive("Q", q)?;
        check_positive("C", c)?;
        if active.ptr.len() != n + 1 || active.idx.iter().any(|&j| j as usize >= m) {
            return Err(Error::drum("active", "active set does not match the problem shape"));
        }
        Ok(Problem { n, m, a, q, c, alpha, beta, active })
    }

    /// Row `i` of `a`.
    pub fn a_row(&self, i: usize) -> &'a [f64] {
        &self.a[i * self.m..(i + 1) * self.m]
    }

    /// The α-fair utility `U(x) = x^(1−α)/(1−α)`.
    pub fn utility(&self, x: f64) -> f64 {
        utility(self.alpha, x)
    }

    /// Per-host parts of the objective of `x` with `z = a x`, before any scaling.
    pub fn host_terms(&self, i: usize, x: &[f64]) -> HostTerms {
        let a = self.a_row(i);
        let mut t = HostTerms::default();
        for (&aj, &xj) in a.iter().zip(x) {
            t.sum_x += xj;
            t.sum_ax += aj * xj;
            let z = aj * xj;
            t.penalty += 1.0 / (z * z);
        }
        t.utility = self.active.row(i).iter().map(|&j| self.utility(x[j as usize])).sum();
        t
    }

    /// Objective of (P) at `x` (with `z = a x`); `−∞` if some rate is 0.
    pub fn objective(&self, x: &[f64]) -> f64 {
        (0..self.n).map(|i| self.host_terms(i, &x[i * self.m..(i + 1) * self.m]).value(self.beta)).sum()
    }
}

/// `U(x) = x^(1−α)/(1−α)`, with the α = 1/2 case as a square root.
pub fn utility(alpha: f64, x: f64) -> f64 {
    if alpha == 0.5 {
        2.0 * x.max(0.0).sqrt()
    } else {
        x.max(0.0).powf(1.0 - alpha) / (1.0 - alpha)
    }
}

/// Sums that give a host's objective, also after uniform scaling of its rates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostTerms {
    /// `Σ_j x_ij`.
    pub sum_x: f64,
    /// `Σ_j a_ij x_ij`.
    pub sum_ax: f64,
    /// `Σ_{j active} U(x_ij)`.
    pub utility: f64,
    /// `Σ_j (a_ij x_ij)^-2`.
    pub penalty: f64,
}

impl HostTerms {
    /// The host's objective `utility − β penalty`.
    pub fn value(&self, beta: f64) -> f64 {
        self.utility - beta * self.penalty
    }

    /// The largest `s ≤ 1` with `s x` within both budgets (the feasible recovery).
    pub fn recovery_scale(&self, q: f64, c: f64) -> f64 {
        1.0f64.min(q / self.sum_x).min(c / self.sum_ax)
    }

    /// The objective of `s x`: `s^(1−α) utility − β s^-2 penalty`.
    pub fn scaled_value(&self, s: f64, alpha: f64, beta: f64) -> f64 {
        let su = if alpha == 0.5 { s.sqrt() } else { s.powf(1.0 - alpha) };
        su * self.utility - beta * self.penalty / (s * s)
    }
}
