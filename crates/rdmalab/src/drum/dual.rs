//! The dual-decomposition (subgradient) baseline, on the same model (P) as ADMM.
//!
//! The paper compares ADMM on its model with dual decomposition on a *different* model
//! (standard NUM), so its "69.3 % better utility" is a model comparison. Here only the
//! coupling `a∘x = z` is dualised with prices `y_ij`; the budgets stay in the subproblems:
//!
//! ```text
//! d(y) = max_{x ≥ 0, Σx ≤ Q} [Σ I U(x) − y·(a∘x)] + max_{z > 0, Σz ≤ C} [−β Σ z^-2 + y·z] ≥ p*
//! y ← y − t_k (z(y) − a∘x(y)),   t_k = t0/√k   (the paper's rule, t0 = 1e-3)
//! ```
//!
//! The x-subproblem is linear in the inactive rates (bang-bang: all spare budget goes to the
//! most negative price, or none), which is why dual decomposition is intrinsically poor on
//! this model. We report the dual bound, the raw objective `F(x(y), z(y))` (not feasible)
//! and the best of two feasible recoveries (x-driven and z-driven) separately.
//!
//! Cost: each evaluation of a budget multiplier's equation touches a whole row (one cube
//! root per app for `z`). Each host's multipliers start from their previous values (the
//! prices move by small steps); the z multiplier is found by Newton on `S^-3`, which is
//! concave and nearly linear (see `z_multiplier`), in about three row evaluations where
//! the bracketed solver on `S` took ~85 at m = 5000; cube roots use
//! [`cbrt_pos`]. At (500, 5000) an iteration went from 1.9 to
//! 0.35 CPU-seconds, which makes the baseline affordable at the paper's largest scale.
//! The baseline's trajectory is sensitive to rounding (the bang-bang inactive rates flip
//! on tiny price differences): solving the roots differently moves its iterates from the
//! third on by up to ~1e-3 relative, though every bound stays valid.

use rayon::prelude::*;

use super::problem::{HostTerms, Problem};
use super::roots::{cbrt_pos, multiplier_root_from};
use crate::error::{Error, Result};

/// Settings of the subgradient method.
#[derive(Clone, Copy, Debug)]
pub struct DualSettings {
    /// Step scale `t0` of `t_k = t0/√k` (paper: 1e-3).
    pub step0: f64,
    /// Iterations to run.
    pub iterations: usize,
}

impl Default for DualSettings {
    fn default() -> Self {
        DualSettings { step0: 1e-3, iterations: 100 }
    }
}

/// One iteration of the baseline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DualRecord {
    /// Iteration number (1-based).
    pub iter: usize,
    /// Dual function value `d(y)`, an upper bound on p*.
    pub dual: f64,
    /// `F(x(y), z(y))` ignoring the coupling (may exceed p*).
    pub raw: f64,
    /// Best feasible recovered objective (a lower bound on p*).
    pub recovered: f64,
    /// Norm of the subgradient `z(y) − a∘x(y)`.
    pub residual: f64,
    /// Step size used.
    pub step: f64,
}

/// Result of [`solve_dual`].
#[derive(Clone, Debug)]
pub struct DualResult {
    /// Final prices `y`.
    pub y: Vec<f64>,
    /// Best feasible point found (by recovered objective).
    pub x_best: Vec<f64>,
    /// Per-iteration records.
    pub history: Vec<DualRecord>,
}

/// Per-host outcome of one dual evaluation.
#[derive(Clone, Copy, Debug, Default)]
struct HostDual {
    dual: f64,
    raw: f64,
    rec_x: f64,
    rec_z: f64,
    res2: f64,
}

/// Runs the baseline from `y = 0` for `settings.iterations` iterations.
pub fn solve_dual(p: &Problem<'_>, settings: DualSettings) -> Result<DualResult> {
    if !(settings.step0.is_finite() && settings.step0 > 0.0) {
        return Err(Error::drum("step0", "the subgradient step scale must be finite and > 0"));
    }
    let (n, m) = (p.n, p.m);
    let mut y = vec![0.0; n * m];
    let mut x = vec![0.0; n * m];
    let mut z = vec![0.0; n * m];
    let mut x_best = vec![0.0; n * m];
    let mut warm = vec![Multipliers::default(); n];
    let mut best = f64::NEG_INFINITY;
    let mut history = Vec::with_capacity(settings.iterations);
    for k in 1..=settings.iterations {
        let parts: Vec<HostDual> = x
            .par_chunks_mut(m)
            .zip(z.par_chunks_mut(m))
            .zip(y.par_chunks(m))
            .zip(warm.par_iter_mut())
            .enumerate()
            .map(|(i, (((x, z), y), w))| host_dual(p, i, y, x, z, w))
            .collect();
        let t = settings.step0 / (k as f64).sqrt();
        let mut rec = DualRecord { iter: k, step: t, ..Default::default() };
        let (mut rx, mut rz) = (0.0, 0.0);
        for h in &parts {
            rec.dual += h.dual;
            rec.raw += h.raw;
            rx += h.rec_x;
            rz += h.rec_z;
            rec.residual += h.res2;
        }
        rec.residual = rec.residual.sqrt();
        rec.recovered = rx.max(rz);
        if rec.recovered > best {
            best = rec.recovered;
            recover_into(p, &x, &z, rz > rx, &mut x_best);
        }
        history.push(rec);
        y.par_iter_mut().zip(&z).zip(&x).zip(p.a).for_each(|(((y, z), x), a)| *y -= t * (z - a * x));
    }
    Ok(DualResult { y, x_best, history })
}

/// Writes the chosen feasible recovery (x-driven or z-driven) into `out`.
fn recover_into(p: &Problem<'_>, x: &[f64], z: &[f64], from_z: bool, out: &mut [f64]) {
    let m = p.m;
    out.par_chunks_mut(m).enumerate().for_each(|(i, o)| {
        let a = p.a_row(i);
        for j in 0..m {
            o[j] = if from_z { z[i * m + j] / a[j] } else { x[i * m + j] };
        }
        let t = p.host_terms(i, o);
        let s = t.recovery_scale(p.q[i], p.c[i]);
        o.iter_mut().for_each(|v| *v *= s);
    });
}

/// A host's budget multipliers from the previous dual evaluation (starts of the next
/// root searches; 0 before the first).
#[derive(Clone, Copy, Debug, Default)]
struct Multipliers {
    l: f64,
    mu: f64,
}

/// Evaluates the dual subproblems of host `i` at prices `y`, writing `x(y)` and `z(y)`.
fn host_dual(p: &Problem<'_>, i: usize, y: &[f64], x: &mut [f64], z: &mut [f64], w: &mut Multipliers) -> HostDual {
    let a = p.a_row(i);
    let act = p.active.row(i);
    let vx = x_subproblem(p, a, act, y, p.q[i], x, &mut w.l);
    let vz = z_subproblem(p.beta, y, p.c[i], z, &mut w.mu);
    let mut h = HostDual { dual: vx + vz, ..Default::default() };
    let tx = p.host_terms(i, x);
    let mut pen_z = 0.0;
    let mut tz = HostTerms::default();
    for j in 0..a.len() {
        let r = z[j] - a[j] * x[j];
        h.res2 += r * r;
        pen_z += 1.0 / (z[j] * z[j]);
        tz.sum_x += z[j] / a[j];
        tz.sum_ax += z[j];
        tz.penalty += 1.0 / (z[j] * z[j]);
    }
    tz.utility = act.iter().map(|&j| p.utility(z[j as usize] / a[j as usize])).sum();
    h.raw = tx.utility - p.beta * pen_z;
    h.rec_x = tx.scaled_value(tx.recovery_scale(p.q[i], p.c[i]), p.alpha, p.beta);
    h.rec_z = tz.scaled_value(tz.recovery_scale(p.q[i], p.c[i]), p.alpha, p.beta);
    h
}

/// `max Σ_act U(x) − Σ g x` over `x ≥ 0, Σ x ≤ Q` with `g = y∘a`; returns the value.
/// `l_prev` is the previous budget multiplier (start of the search), updated.
fn x_subproblem(p: &Problem<'_>, a: &[f64], act: &[u32], y: &[f64], q: f64, x: &mut [f64], l_prev: &mut f64) -> f64 {
    let inv_alpha = 1.0 / p.alpha;
    // U'(x) = x^-α inverted; α = ½ (the paper's) without a power.
    let rate = |t: f64| if p.alpha == 0.5 { 1.0 / (t * t) } else { t.powf(-inv_alpha) };
    let is_act = |j: usize| act.binary_search(&(j as u32)).is_ok();
    // Lower bound of the budget price: inactive payoffs −(g + l) must be ≤ 0.
    let (mut lb_in, mut arg_in) = (0.0f64, usize::MAX);
    let mut lb_act = f64::NEG_INFINITY;
    for j in 0..a.len() {
        let g = y[j] * a[j];
        if is_act(j) {
            lb_act = lb_act.max(-g);
        } else if -g > lb_in {
            (lb_in, arg_in) = (-g, j);
        }
    }
    let demand = |l: f64| -> (f64, f64) {
        let (mut s, mut ds) = (0.0, 0.0);
        for &j in act {
            let t = y[j as usize] * a[j as usize] + l;
            let v = rate(t);
            s += v;
            ds += inv_alpha * v / t;
        }
        (s, ds)
    };
    let l0 = lb_in.max(lb_act.max(0.0));
    let strict = lb_act >= lb_in && lb_act >= 0.0 && !act.is_empty();
    let l =
        if strict || demand(l0).0 > q { l0 + multiplier_root_from(q, *l_prev - l0, |t| demand(l0 + t)) } else { l0 };
    *l_prev = l;
    x.fill(0.0);
    let mut used = 0.0;
    let mut value = 0.0;
    for &j in act {
        let j = j as usize;
        x[j] = rate(y[j] * a[j] + l);
        used += x[j];
        value += p.utility(x[j]) - y[j] * a[j] * x[j];
    }
    if arg_in != usize::MAX && l == lb_in && lb_in > 0.0 {
        // Bang-bang: the spare budget goes to the inactive app with the most negative price.
        x[arg_in] = (q - used).max(0.0);
        value -= y[arg_in] * a[arg_in] * x[arg_in];
    }
    value
}

/// `max −β Σ z^-2 + y·z` over `z > 0, Σ z ≤ C`: `z = (2β/(μ − y))^(1/3)`; returns the value.
/// `mu_prev` is the previous multiplier (start of the search), updated.
fn z_subproblem(beta: f64, y: &[f64], c: f64, z: &mut [f64], mu_prev: &mut f64) -> f64 {
    let ymax = y.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v));
    let m0 = ymax.max(0.0);
    let supply = |mu: f64| -> (f64, f64) {
        let (mut s, mut ds) = (0.0, 0.0);
        for &yj in y {
            let t = mu - yj;
            let v = cbrt_pos(2.0 * beta / t);
            s += v;
            ds += v / (3.0 * t);
        }
        (s, ds)
    };
    // With a price ≥ 0 the supply has a pole at m0 and z's own left bound applies: the
    // largest term alone reaches C at t = 2β/C³. Otherwise S(m0) decides.
    let strict = ymax >= 0.0;
    let mu = if strict || supply(m0).0 > c {
        let left = if strict { 2.0 * beta / (c * c * c) } else { 0.0 };
        m0 + z_multiplier(c, left, *mu_prev - m0, |t| supply(m0 + t))
    } else {
        m0
    };
    *mu_prev = mu;
    let mut value = 0.0;
    for (zj, &yj) in z.iter_mut().zip(y) {
        *zj = cbrt_pos(2.0 * beta / (mu - yj));
        value += -beta / (*zj * *zj) + yj * *zj;
    }
    value
}

/// The shift `t ≥ left` with `S(t) = C` for the z-budget, where `S(t) = Σ_j (2β/(t + d_j))^(1/3)`
/// (`d_j ≥ 0`, given as `supply(t) = (S, −S')`) and `S(left) ≥ C`.
///
/// Newton runs on `g(t) = S^-3 − C^-3` rather than on `S`. `S^-3` is, up to the factor
/// `(2β)⁻¹ m⁻³`, the power mean of order −1/3 of the `t + d_j`, which is concave in `t`
/// (power means of order ≤ 1 are concave), and exactly linear when one term dominates.
/// So Newton started left of the root climbs monotonically (a start right of it lands left
/// after one step) and needs two or three row evaluations.
fn z_multiplier(c: f64, left: f64, start: f64, supply: impl Fn(f64) -> (f64, f64)) -> f64 {
    let mut t = if start > left && start.is_finite() { start } else { left };
    for it in 0..100 {
        let (s, d) = supply(t);
        // −g/g' with g' = 3 S^-4 (−S').
        let r = s / c;
        let step = s * (r * r * r - 1.0) / (3.0 * d);
        // Stop on the moves, not on |S − C|: a sum of thousands of terms carries rounding
        // noise above 1e-13 relative, and a test on S then cycles (the bracketed solver
        // this replaces did until its bracket collapsed: ~85 row evaluations per root at
        // m = 5000). From the left every exact move is upward, so after the first move a
        // move that is not is noise. The first move usually lands within 1e-12.
        if !step.is_finite() || (it > 0 && step <= 0.0) {
            break;
        }
        t = (t + step).max(left);
        if step.abs() <= 1e-13 * t {
            break;
        }
    }
    t
}
