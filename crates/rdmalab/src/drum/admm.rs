//! Scaled ADMM for (P) with one dual per (host, app), fused per host and parallel over hosts.
//!
//! ```text
//! x ← argmin  −Σ I U(x) + ρ/2 ‖a∘x − z + w‖²   s.t. x ≥ 0, Σ_j x_ij ≤ Q_i
//! z ← argmin  β Σ z^-2 + ρ/2 ‖a∘x − z + w‖²     s.t. z > 0, Σ_j z_ij ≤ C_i
//! w ← w + a∘x − z
//! ```
//!
//! The paper's single global dual and its `+` sign in the dual step are wrong (docs/drum.md);
//! with per-(host, app) duals the problem separates by host, so one host's whole iteration
//! (x-row, z-row, dual step, residual partials) runs in one pass over its row while the row
//! is hot in cache. Stopping follows Boyd et al. (2011, §3.3) on the global residual norms;
//! ρ may be fixed or residual-balanced (§3.4.1). The state is plain data so that an agent
//! can keep it between control periods and warm-start the next solve.

use rayon::prelude::*;

use super::problem::Problem;
use super::rows::{solve_x_row, solve_z_row, RowStats, Scratch};
use crate::error::{Error, Result};

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct AdmmSettings {
    /// Penalty parameter ρ (initial value when residual balancing is on).
    pub rho: f64,
    /// Absolute tolerance of the Boyd stopping rule.
    pub eps_abs: f64,
    /// Relative tolerance of the Boyd stopping rule.
    pub eps_rel: f64,
    /// Iteration limit.
    pub max_iter: usize,
    /// Residual balancing: every 10 iterations, double or halve ρ when one residual
    /// exceeds the other tenfold (the scaled dual is rescaled to keep `u = ρ w`).
    pub adaptive_rho: bool,
}

impl Default for AdmmSettings {
    fn default() -> Self {
        AdmmSettings { rho: 0.3, eps_abs: 1e-9, eps_rel: 1e-9, max_iter: 10_000, adaptive_rho: false }
    }
}

impl AdmmSettings {
    /// Rejects non-positive or non-finite parameters.
    pub fn validate(&self) -> Result<()> {
        if !(self.rho.is_finite() && self.rho > 0.0) {
            return Err(Error::drum("rho", format!("ρ = {} must be finite and > 0", self.rho)));
        }
        if !(self.eps_abs >= 0.0 && self.eps_rel >= 0.0 && (self.eps_abs + self.eps_rel) > 0.0) {
            return Err(Error::drum("tol", "tolerances must be ≥ 0 and not both 0"));
        }
        Ok(())
    }
}

/// The ADMM iterate: everything needed to resume (warm start).
#[derive(Clone, Debug, PartialEq)]
pub struct AdmmState {
    /// WQE rates, host-major `n*m`.
    pub x: Vec<f64>,
    /// CQE rates (splitting copy of `a∘x`).
    pub z: Vec<f64>,
    /// Scaled duals `w = u/ρ` of `a∘x = z`.
    pub w: Vec<f64>,
    /// Multipliers of `Σ_j x_ij ≤ Q_i` (from the x-update).
    pub lam: Vec<f64>,
    /// Multipliers of `Σ_j z_ij ≤ C_i` (from the z-update).
    pub mu: Vec<f64>,
    /// Current ρ.
    pub rho: f64,
}

impl AdmmState {
    /// A feasible uniform start: `x_ij = min(Q_i/m, C_i/Σ_j a_ij)`, `z = a∘x`, `w = 0`.
    pub fn cold(p: &Problem<'_>, rho: f64) -> AdmmState {
        let (n, m) = (p.n, p.m);
        let mut x = vec![0.0; n * m];
        for i in 0..n {
            let sa: f64 = p.a_row(i).iter().sum();
            let v = (p.q[i] / m as f64).min(p.c[i] / sa);
            x[i * m..(i + 1) * m].fill(v);
        }
        let z = x.iter().zip(p.a).map(|(x, a)| a * x).collect();
        AdmmState { x, z, w: vec![0.0; n * m], lam: vec![0.0; n], mu: vec![0.0; n], rho }
    }

    fn check(&self, p: &Problem<'_>) -> Result<()> {
        let nm = p.n * p.m;
        if self.x.len() != nm
            || self.z.len() != nm
            || self.w.len() != nm
            || self.lam.len() != p.n
            || self.mu.len() != p.n
        {
            return Err(Error::drum("warm_start", "warm-start state does not match the problem shape"));
        }
        if !(self.rho.is_finite() && self.rho > 0.0) {
            return Err(Error::drum("warm_start", "warm-start ρ must be finite and > 0"));
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if !(finite(&self.x) && finite(&self.z) && finite(&self.w) && finite(&self.lam) && finite(&self.mu)) {
            return Err(Error::drum("warm_start", "warm-start state holds NaN or infinite values"));
        }
        Ok(())
    }
}

/// One line of the convergence history.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IterRecord {
    /// Iteration number (1-based).
    pub iter: usize,
    /// Objective at the feasible recovery `x̂ = x·min(1, Q/Σx, C/Σax)` (a lower bound on p*).
    pub objective: f64,
    /// Objective at the raw iterate `(x, z)` (not feasible for the coupling).
    pub raw_objective: f64,
    /// Primal residual ‖a∘x − z‖.
    pub r_norm: f64,
    /// Dual residual ‖ρ a∘(z − z_prev)‖.
    pub s_norm: f64,
    /// Primal tolerance.
    pub eps_pri: f64,
    /// Dual tolerance.
    pub eps_dual: f64,
    /// ρ used in this iteration.
    pub rho: f64,
    /// Joint Newton sweeps summed over hosts (x and z rows).
    pub sweeps: u64,
    /// Rows that needed the nested reference solver.
    pub fallbacks: u64,
    /// Wall-clock seconds of this iteration.
    pub seconds: f64,
}

/// Per-host sums produced by one fused iteration.
#[derive(Clone, Copy, Debug, Default)]
struct HostPart {
    r2: f64,
    s2: f64,
    ax2: f64,
    z2: f64,
    aw2: f64,
    util: f64,
    pen_x: f64,
    pen_z: f64,
    sum_x: f64,
    sum_ax: f64,
    sweeps: u32,
    fallbacks: u32,
}

/// The ADMM solver, holding the problem, settings, iterate and history.
#[derive(Debug)]
pub struct Admm<'p, 'a> {
    problem: &'p Problem<'a>,
    settings: AdmmSettings,
    /// The current iterate.
    pub state: AdmmState,
    /// One record per iteration run so far.
    pub history: Vec<IterRecord>,
    parts: Vec<HostPart>,
    converged: bool,
}

impl<'p, 'a> Admm<'p, 'a> {
    /// A solver from the cold start, or from `warm` (a previous state of the same shape).
    pub fn new(problem: &'p Problem<'a>, settings: AdmmSettings, warm: Option<AdmmState>) -> Result<Self> {
        settings.validate()?;
        let state = match warm {
            Some(s) => {
                s.check(problem)?;
                s
            }
            None => AdmmState::cold(problem, settings.rho),
        };
        let parts = vec![HostPart::default(); problem.n];
        Ok(Admm { problem, settings, state, history: Vec::new(), parts, converged: false })
    }

    /// Whether the last iteration met the stopping rule.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Runs until the stopping rule holds or `max_iter` iterations were made.
    pub fn run(&mut self) -> bool {
        while !self.converged && self.history.len() < self.settings.max_iter {
            self.step();
        }
        self.converged
    }

    /// One ADMM iteration over all hosts; returns its record.
    pub fn step(&mut self) -> IterRecord {
        let t0 = std::time::Instant::now();
        let p = self.problem;
        let m = p.m;
        let rho = self.state.rho;
        let st = &mut self.state;
        let min_len = (p.n / (8 * rayon::current_num_threads().max(1))).max(1);
        st.x.par_chunks_mut(m)
            .zip(st.z.par_chunks_mut(m))
            .zip(st.w.par_chunks_mut(m))
            .zip(st.lam.par_iter_mut().zip(st.mu.par_iter_mut()))
            .zip(self.parts.par_iter_mut())
            .enumerate()
            .with_min_len(min_len)
            .for_each_init(
                || Scratch::new(m),
                |sc, (i, ((((x, z), w), (lam, mu)), part))| {
                    *part = host_iteration(p, i, rho, x, z, w, lam, mu, sc);
                },
            );
        let mut rec = self.record(rho);
        rec.seconds = t0.elapsed().as_secs_f64();
        self.converged = rec.r_norm <= rec.eps_pri && rec.s_norm <= rec.eps_dual;
        self.history.push(rec);
        if self.settings.adaptive_rho && rec.iter.is_multiple_of(10) && !self.converged {
            self.balance_rho(rec.r_norm, rec.s_norm);
        }
        rec
    }

    /// Residual balancing (Boyd §3.4.1) with `u = ρ w` held fixed.
    fn balance_rho(&mut self, r: f64, s: f64) {
        let factor = if r > 10.0 * s {
            2.0
        } else if s > 10.0 * r {
            0.5
        } else {
            return;
        };
        self.state.rho *= factor;
        self.state.w.par_iter_mut().for_each(|w| *w /= factor);
    }

    /// Reduces the per-host partials (in host order, so results are deterministic).
    fn record(&self, rho: f64) -> IterRecord {
        let p = self.problem;
        let mut t = HostPart::default();
        let (mut obj, mut raw) = (0.0, 0.0);
        for (i, h) in self.parts.iter().enumerate() {
            t.r2 += h.r2;
            t.s2 += h.s2;
            t.ax2 += h.ax2;
            t.z2 += h.z2;
            t.aw2 += h.aw2;
            t.sweeps += h.sweeps;
            t.fallbacks += h.fallbacks;
            let terms =
                super::problem::HostTerms { sum_x: h.sum_x, sum_ax: h.sum_ax, utility: h.util, penalty: h.pen_x };
            obj += terms.scaled_value(terms.recovery_scale(p.q[i], p.c[i]), p.alpha, p.beta);
            raw += h.util - p.beta * h.pen_z;
        }
        let sq = ((p.n * p.m) as f64).sqrt();
        let s = &self.settings;
        IterRecord {
            iter: self.history.len() + 1,
            objective: obj,
            raw_objective: raw,
            r_norm: t.r2.sqrt(),
            s_norm: t.s2.sqrt(),
            eps_pri: sq * s.eps_abs + s.eps_rel * t.ax2.sqrt().max(t.z2.sqrt()),
            eps_dual: sq * s.eps_abs + s.eps_rel * t.aw2.sqrt(),
            rho,
            sweeps: t.sweeps as u64,
            fallbacks: t.fallbacks as u64,
            seconds: 0.0,
        }
    }

    /// Per-host factors `min(1, Q_i/Σx, C_i/Σax)` of the feasible recovery.
    pub fn recovery_scales(&self) -> Vec<f64> {
        recovery_scales(self.problem, &self.state.x)
    }
}

/// Per-host factors `min(1, Q_i/Σ_j x_ij, C_i/Σ_j a_ij x_ij)` that make `x` feasible.
pub fn recovery_scales(p: &Problem<'_>, x: &[f64]) -> Vec<f64> {
    (0..p.n)
        .into_par_iter()
        .map(|i| {
            let row = &x[i * p.m..(i + 1) * p.m];
            let sx: f64 = row.iter().sum();
            let sax: f64 = row.iter().zip(p.a_row(i)).map(|(x, a)| x * a).sum();
            1.0f64.min(p.q[i] / sx).min(p.c[i] / sax)
        })
        .collect()
}

/// One host's fused iteration: x-row, z-row, dual step and residual partials.
#[allow(clippy::too_many_arguments)]
fn host_iteration(
    p: &Problem<'_>,
    i: usize,
    rho: f64,
    x: &mut [f64],
    z: &mut [f64],
    w: &mut [f64],
    lam: &mut f64,
    mu: &mut f64,
    sc: &mut Scratch,
) -> HostPart {
    let a = p.a_row(i);
    let m = p.m;
    // x-update: x_j − ip_j x_j^-α = cp_j − λ ip_j with cp = (z − w)/a, ip = 1/(ρ a²).
    // One division per element (by a), the 1/ρ is hoisted: divisions are the scarce unit.
    let inv_rho = 1.0 / rho;
    for j in 0..m {
        let ia = 1.0 / a[j];
        sc.cp[j] = (z[j] - w[j]) * ia;
        sc.ip[j] = ia * ia * inv_rho;
    }
    let sx = solve_x_row(p.active.row(i), p.alpha, p.q[i], lam, x, sc);
    // z-update: ρ z − 2β z^-3 = ρ (a x + w) − μ.
    for j in 0..m {
        sc.zold[j] = z[j];
        sc.cp[j] = rho * (a[j] * x[j] + w[j]);
    }
    let sz = solve_z_row(rho, p.beta, p.c[i], mu, z, sc);
    let mut h = dual_step(a, x, z, w, &sc.zold[..m], rho);
    h.util = p.active.row(i).iter().map(|&j| p.utility(x[j as usize])).sum();
    let RowStats { sweeps: s1, fallbacks: f1 } = sx;
    h.sweeps = s1 + sz.sweeps;
    h.fallbacks = f1 + sz.fallbacks;
    h
}

/// Accumulators of [`dual_step`], in the order of [`HostPart`]'s first nine fields.
const NACC: usize = 9;

/// One element of the dual step; adds its partials to `acc`.
#[inline(always)]
fn dual_one(a: f64, x: f64, z: f64, w: &mut f64, zold: f64, rho: f64, acc: &mut [f64; NACC]) {
    let ax = a * x;
    let r = ax - z;
    *w += r;
    let s = rho * a * (z - zold);
    let aw = rho * a * *w;
    // One division for both penalties: 1/(ax·z)² times z² or (ax)².
    let (ax2, z2) = (ax * ax, z * z);
    let inv = 1.0 / (ax2 * z2);
    let terms = [r * r, s * s, ax2, z2, aw * aw, z2 * inv, ax2 * inv, x, ax];
    for (acc, t) in acc.iter_mut().zip(terms) {
        *acc += t;
    }
}

/// `w ← w + a∘x − z` and the residual and objective partials of one row, accumulated in
/// four lanes (AVX or SSE2 on x86_64; the portable loop uses the same lanes and arithmetic).
fn dual_step(a: &[f64], x: &[f64], z: &[f64], w: &mut [f64], zold: &[f64], rho: f64) -> HostPart {
    let m = a.len().min(x.len()).min(z.len()).min(w.len()).min(zold.len());
    let n4 = m / 4 * 4;
    let mut lanes = [[0.0; NACC]; 4];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX was detected at run time; all accesses are below n4 ≤ m.
        unsafe { simd_dual_avx(&a[..n4], &x[..n4], &z[..n4], &mut w[..n4], &zold[..n4], rho, &mut lanes) };
    } else {
        // SAFETY: SSE2 is part of the x86_64 baseline; all accesses are below n4 ≤ m.
        unsafe { simd_dual(&a[..n4], &x[..n4], &z[..n4], &mut w[..n4], &zold[..n4], rho, &mut lanes) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    for j in 0..n4 {
        dual_one(a[j], x[j], z[j], &mut w[j], zold[j], rho, &mut lanes[j % 4]);
    }
    let mut acc = [0.0; NACC];
    for (q, v) in acc.iter_mut().enumerate() {
        *v = lanes.iter().map(|l| l[q]).sum();
    }
    for j in n4..m {
        dual_one(a[j], x[j], z[j], &mut w[j], zold[j], rho, &mut acc);
    }
    let [r2, s2, ax2, z2, aw2, pen_x, pen_z, sum_x, sum_ax] = acc;
    HostPart { r2, s2, ax2, z2, aw2, pen_x, pen_z, sum_x, sum_ax, ..Default::default() }
}

/// SSE2 body of [`dual_step`] over a multiple of four elements.
#[cfg(target_arch = "x86_64")]
unsafe fn simd_dual(
    a: &[f64],
    x: &[f64],
    z: &[f64],
    w: &mut [f64],
    zold: &[f64],
    rho: f64,
    lanes: &mut [[f64; NACC]; 4],
) {
    use std::arch::x86_64::*;
    let (vr, one) = (_mm_set1_pd(rho), _mm_set1_pd(1.0));
    let mut acc = [[_mm_setzero_pd(); NACC]; 2];
    let mut j = 0;
    while j + 4 <= a.len() {
        for (h, acc) in acc.iter_mut().enumerate() {
            let o = j + 2 * h;
            let (va, vx, vz) =
                (_mm_loadu_pd(a.as_ptr().add(o)), _mm_loadu_pd(x.as_ptr().add(o)), _mm_loadu_pd(z.as_ptr().add(o)));
            let ax = _mm_mul_pd(va, vx);
            let r = _mm_sub_pd(ax, vz);
            let vw = _mm_add_pd(_mm_loadu_pd(w.as_ptr().add(o)), r);
            _mm_storeu_pd(w.as_mut_ptr().add(o), vw);
            let s = _mm_mul_pd(_mm_mul_pd(vr, va), _mm_sub_pd(vz, _mm_loadu_pd(zold.as_ptr().add(o))));
            let aw = _mm_mul_pd(_mm_mul_pd(vr, va), vw);
            let (ax2, z2) = (_mm_mul_pd(ax, ax), _mm_mul_pd(vz, vz));
            let inv = _mm_div_pd(one, _mm_mul_pd(ax2, z2));
            let terms = [
                _mm_mul_pd(r, r),
                _mm_mul_pd(s, s),
                ax2,
                z2,
                _mm_mul_pd(aw, aw),
                _mm_mul_pd(z2, inv),
                _mm_mul_pd(ax2, inv),
                vx,
                ax,
            ];
            for (q, t) in terms.into_iter().enumerate() {
                acc[q] = _mm_add_pd(acc[q], t);
            }
        }
        j += 4;
    }
    for h in 0..2 {
        for q in 0..NACC {
            let mut pair = [0.0; 2];
            _mm_storeu_pd(pair.as_mut_ptr(), acc[h][q]);
            lanes[2 * h][q] = pair[0];
            lanes[2 * h + 1][q] = pair[1];
        }
    }
}

/// AVX body of [`dual_step`]: the operations of [`simd_dual`] on four lanes at once, element
/// `j` in lane `j % 4` as there, so the partials are bit-identical.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn simd_dual_avx(
    a: &[f64],
    x: &[f64],
    z: &[f64],
    w: &mut [f64],
    zold: &[f64],
    rho: f64,
    lanes: &mut [[f64; NACC]; 4],
) {
    use std::arch::x86_64::*;
    let (vr, one) = (_mm256_set1_pd(rho), _mm256_set1_pd(1.0));
    let mut acc = [_mm256_setzero_pd(); NACC];
    let mut o = 0;
    while o + 4 <= a.len() {
        let (va, vx, vz) = (
            _mm256_loadu_pd(a.as_ptr().add(o)),
            _mm256_loadu_pd(x.as_ptr().add(o)),
            _mm256_loadu_pd(z.as_ptr().add(o)),
        );
        let ax = _mm256_mul_pd(va, vx);
        let r = _mm256_sub_pd(ax, vz);
        let vw = _mm256_add_pd(_mm256_loadu_pd(w.as_ptr().add(o)), r);
        _mm256_storeu_pd(w.as_mut_ptr().add(o), vw);
        let s = _mm256_mul_pd(_mm256_mul_pd(vr, va), _mm256_sub_pd(vz, _mm256_loadu_pd(zold.as_ptr().add(o))));
        let aw = _mm256_mul_pd(_mm256_mul_pd(vr, va), vw);
        let (ax2, z2) = (_mm256_mul_pd(ax, ax), _mm256_mul_pd(vz, vz));
        let inv = _mm256_div_pd(one, _mm256_mul_pd(ax2, z2));
        let terms = [
            _mm256_mul_pd(r, r),
            _mm256_mul_pd(s, s),
            ax2,
            z2,
            _mm256_mul_pd(aw, aw),
            _mm256_mul_pd(z2, inv),
            _mm256_mul_pd(ax2, inv),
            vx,
            ax,
        ];
        for (q, t) in terms.into_iter().enumerate() {
            acc[q] = _mm256_add_pd(acc[q], t);
        }
        o += 4;
    }
    for (q, v) in acc.iter().enumerate() {
        let mut quad = [0.0; 4];
        _mm256_storeu_pd(quad.as_mut_ptr(), *v);
        for (k, lane) in lanes.iter_mut().enumerate() {
            lane[q] = quad[k];
        }
    }
}

/// Result of [`solve_admm`].
#[derive(Clone, Debug)]
pub struct AdmmResult {
    /// The final iterate (usable as a warm start).
    pub state: AdmmState,
    /// Per-iteration records.
    pub history: Vec<IterRecord>,
    /// Whether the stopping rule was met.
    pub converged: bool,
    /// Per-host recovery factors of the final iterate.
    pub scales: Vec<f64>,
}

impl AdmmResult {
    /// Objective at the feasible recovery of the final iterate.
    pub fn objective(&self) -> f64 {
        self.history.last().map_or(f64::NAN, |r| r.objective)
    }
}

/// Solves (P) by ADMM from a cold or warm start.
pub fn solve_admm(problem: &Problem<'_>, settings: AdmmSettings, warm: Option<AdmmState>) -> Result<AdmmResult> {
    let mut admm = Admm::new(problem, settings, warm)?;
    let converged = admm.run();
    let scales = admm.recovery_scales();
    Ok(AdmmResult { state: admm.state, history: admm.history, converged, scales })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX dual step gives the same bits as the SSE2 one (same operations per lane).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx_dual_step_matches_sse2_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx") {
            return;
        }
        let n = 4 * 53;
        let v = |k: usize| (0..n).map(|j| 0.05 + ((j * 7919 + k * 104729) % 1000) as f64 / 250.0).collect::<Vec<f64>>();
        let (a, x, z, zold, w0) = (v(1), v(2), v(3), v(4), v(5));
        let mut outs = Vec::new();
        for avx in [false, true] {
            let (mut w, mut lanes) = (w0.clone(), [[0.0; NACC]; 4]);
            // SAFETY: lengths are a multiple of four; AVX was detected above.
            unsafe {
                if avx {
                    simd_dual_avx(&a, &x, &z, &mut w, &zold, 0.3, &mut lanes);
                } else {
                    simd_dual(&a, &x, &z, &mut w, &zold, 0.3, &mut lanes);
                }
            }
            let bits: Vec<u64> = w.iter().chain(lanes.iter().flatten()).map(|f| f.to_bits()).collect();
            outs.push(bits);
        }
        assert_eq!(outs[0], outs[1]);
    }
}
