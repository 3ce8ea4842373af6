//! An optimality certificate for (P), independent of the solver that produced the point.
//!
//! Eliminating `z = a∘x`, the KKT conditions of (P) read, for every host `i` and app `j`,
//!
//! ```text
//! g_ij := I_ij x_ij^-α + 2β a_ij^-2 x_ij^-3 = λ_i + μ_i a_ij,   λ_i, μ_i ≥ 0,
//! λ_i (Q_i − Σ_j x_ij) = 0,  μ_i (C_i − Σ_j a_ij x_ij) = 0,  x within both budgets.
//! ```
//!
//! [`certify`] measures every condition in relative terms. Multipliers may be given (e.g.
//! the solver's) or inferred per host by a non-negative weighted least-squares fit of the
//! stationarity equations, so that the certificate does not trust the solver.

use rayon::prelude::*;

use super::problem::Problem;
use crate::error::{Error, Result};

/// Relative KKT residuals of a point (all 0 at the exact optimum).
#[derive(Clone, Debug, PartialEq)]
pub struct KktReport {
    /// max over (i, j) of |g_ij − λ_i − μ_i a_ij| / g_ij.
    pub stationarity: f64,
    /// max over hosts of the relative budget violation (and of −x if negative).
    pub primal: f64,
    /// max over hosts of the relative negativity of λ_i, μ_i.
    pub dual: f64,
    /// max over hosts of (λ_i |Q_i − Σx| + μ_i |C_i − Σax|) / Σ_j g_ij x_ij.
    pub complementarity: f64,
    /// Multipliers used (given or inferred).
    pub lam: Vec<f64>,
    /// Multipliers used (given or inferred).
    pub mu: Vec<f64>,
}

impl KktReport {
    /// The largest of the four residuals.
    pub fn max_residual(&self) -> f64 {
        self.stationarity.max(self.primal).max(self.dual).max(self.complementarity)
    }
    /// Whether every residual is within `tol` (NaN is never accepted).
    pub fn accepts(&self, tol: f64) -> bool {
        let r = self.max_residual();
        r.is_finite() && r <= tol
    }
}

/// Per-host residuals and multipliers.
struct HostKkt {
    stat: f64,
    primal: f64,
    dual: f64,
    compl: f64,
    lam: f64,
    mu: f64,
}

/// Certifies `x` (host-major `n*m`) for `p`, with given multipliers or inferred ones.
pub fn certify(p: &Problem<'_>, x: &[f64], multipliers: Option<(&[f64], &[f64])>) -> Result<KktReport> {
    if x.len() != p.n * p.m {
        return Err(Error::drum("x", format!("x has {} entries, expected n*m = {}", x.len(), p.n * p.m)));
    }
    if let Some((l, u)) = multipliers {
        if l.len() != p.n || u.len() != p.n {
            return Err(Error::drum("lam/mu", "multipliers must have one entry per host"));
        }
    }
    let hosts: Vec<HostKkt> = (0..p.n)
        .into_par_iter()
        .map(|i| host_kkt(p, i, &x[i * p.m..(i + 1) * p.m], multipliers.map(|(l, u)| (l[i], u[i]))))
        .collect();
    let max =
        |f: fn(&HostKkt) -> f64| hosts.iter().map(f).fold(0.0f64, |a, v| if v.is_nan() { f64::NAN } else { a.max(v) });
    Ok(KktReport {
        stationarity: max(|h| h.stat),
        primal: max(|h| h.primal),
        dual: max(|h| h.dual),
        complementarity: max(|h| h.compl),
        lam: hosts.iter().map(|h| h.lam).collect(),
        mu: hosts.iter().map(|h| h.mu).collect(),
    })
}

/// The gradient terms `g_j = I_j x_j^-α + 2β a_j^-2 x_j^-3` of one host.
fn gradients(p: &Problem<'_>, i: usize, x: &[f64]) -> Vec<f64> {
    let a = p.a_row(i);
    let mut g: Vec<f64> = x.iter().zip(a).map(|(&x, &a)| 2.0 * p.beta / (a * a * x * x * x)).collect();
    for &j in p.active.row(i) {
        g[j as usize] += x[j as usize].powf(-p.alpha);
    }
    g
}

fn host_kkt(p: &Problem<'_>, i: usize, x: &[f64], given: Option<(f64, f64)>) -> HostKkt {
    let a = p.a_row(i);
    let g = gradients(p, i, x);
    let (lam, mu) = given.unwrap_or_else(|| fit_multipliers(&g, a));
    let stat = g
        .iter()
        .zip(a)
        .map(|(&g, &a)| if g.is_finite() { (g - lam - mu * a).abs() / g } else { f64::INFINITY })
        .fold(0.0f64, f64::max);
    let sx: f64 = x.iter().sum();
    let sax: f64 = x.iter().zip(a).map(|(x, a)| x * a).sum();
    let neg = x.iter().fold(0.0f64, |m, &v| m.max(-v)) / (p.q[i] / p.m as f64);
    let primal = ((sx - p.q[i]) / p.q[i]).max((sax - p.c[i]) / p.c[i]).max(0.0).max(neg);
    let scale: f64 = g.iter().zip(x).map(|(g, x)| g * x).sum();
    let dual = (-lam).max(-mu).max(0.0) * (sx + sax) / scale;
    let compl = (lam.abs() * (p.q[i] - sx).abs() + mu.abs() * (p.c[i] - sax).abs()) / scale;
    HostKkt { stat, primal, dual, compl, lam, mu }
}

/// Non-negative least squares of `Σ_j ((g_j − λ − μ a_j)/g_j)²` over `λ, μ ≥ 0`.
fn fit_multipliers(g: &[f64], a: &[f64]) -> (f64, f64) {
    // Normal equations with weights 1/g².
    let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (&g, &a) in g.iter().zip(a) {
        let w = 1.0 / (g * g);
        s11 += w;
        s12 += w * a;
        s22 += w * a * a;
        b1 += w * g;
        b2 += w * g * a;
    }
    let cost = |l: f64, u: f64| g.iter().zip(a).map(|(&g, &a)| ((g - l - u * a) / g).powi(2)).sum::<f64>();
    let det = s11 * s22 - s12 * s12;
    let mut cands = vec![(0.0, 0.0), ((b1 / s11).max(0.0), 0.0), (0.0, (b2 / s22).max(0.0))];
    if det > 0.0 {
        let l = (b1 * s22 - b2 * s12) / det;
        let u = (s11 * b2 - s12 * b1) / det;
        if l >= 0.0 && u >= 0.0 {
            cands.push((l, u));
        }
    }
    cands.into_iter().min_by(|p, q| cost(p.0, p.1).total_cmp(&cost(q.0, q.1))).unwrap_or((0.0, 0.0))
}
