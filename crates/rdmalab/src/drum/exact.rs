//! The exact optimum of one host's row of (P), from its KKT system (docs/drum.md §1):
//!
//! ```text
//! g_j(x_j) := I_j x_j^-α + 2β a_j^-2 x_j^-3 = λ + μ a_j,   λ, μ ≥ 0,
//! λ (Q − Σ_j x_j) = 0,   μ (C − Σ_j a_j x_j) = 0.
//! ```
//!
//! Each `g_j` falls strictly and convexly from +∞ to 0, so `x_j(ν)`, its inverse, is
//! positive, decreasing and convex in ν, and so are the budget sums in the multipliers:
//! Newton from the side where a sum exceeds its budget converges monotonically (the same
//! argument as the ADMM's capacity multiplier, docs/drum.md §3). This is the point a
//! converged ADMM reaches; a DRUM agent uses it where its few ADMM steps per period would
//! enforce a non-converged iterate (docs/drum-fabric.md §3).

/// `x` with `I x^-α + b x^-3 = ν` (b = 2β/a², ν > 0): Newton from a point left of the
/// root, where `g` is convex and decreasing, never overshoots.
fn inverse(active: bool, alpha: f64, b: f64, nu: f64) -> (f64, f64) {
    let i = if active { 1.0 } else { 0.0 };
    // The root lies right of where either term alone equals ν.
    let mut x = (b / nu).cbrt();
    if active {
        x = x.max((1.0 / nu).powf(1.0 / alpha));
    }
    for _ in 0..200 {
        let (u, p) = (i * x.powf(-alpha), b / (x * x * x));
        let g = u + p;
        let dg = -alpha * u / x - 3.0 * p / x;
        let step = (g - nu) / -dg;
        x += step;
        if step <= 1e-15 * x {
            break;
        }
    }
    let (u, p) = (i * x.powf(-alpha), b / (x * x * x));
    (x, 1.0 / (-alpha * u / x - 3.0 * p / x))
}

/// Σ_j x_j and Σ_j a_j x_j at (λ, μ), with their derivatives in λ and in μ.
fn sums(a: &[f64], active: &[bool], alpha: f64, beta: f64, lam: f64, mu: f64, x: &mut [f64]) -> [f64; 4] {
    let mut s = [0.0; 4];
    for j in 0..a.len() {
        let (xj, dx) = inverse(active[j], alpha, 2.0 * beta / (a[j] * a[j]), lam + mu * a[j]);
        x[j] = xj;
        s[0] += xj;
        s[1] += a[j] * xj;
        s[2] += dx;
        s[3] += a[j] * a[j] * dx;
    }
    s
}

/// The `t` in `[lo, hi]` where the decreasing, convex `f(t) = (value, slope)` meets `cap`,
/// given `f(lo) ≥ cap ≥ f(hi)`: Newton from the left (monotone for a convex decreasing
/// function), with a bisection step whenever Newton would leave the bracket.
fn meet(cap: f64, mut lo: f64, mut hi: f64, mut f: impl FnMut(f64) -> (f64, f64)) -> f64 {
    let mut t = lo;
    let (mut v, mut d) = f(t);
    for _ in 0..300 {
        if (v - cap).abs() <= 1e-13 * cap || hi <= lo * (1.0 + 1e-15) {
            break;
        }
        if v > cap {
            lo = t;
        } else {
            hi = t;
        }
        let newton = t + (v - cap) / -d;
        t = if newton > lo && newton < hi { newton } else { (lo * hi).sqrt() };
        (v, d) = f(t);
    }
    t
}

/// A bracket of the multiplier ν at which Σ_j w_j x_j(ν) = cap: at `lo` every term alone
/// reaches `cap` (each x_j at least where one of its terms equals ν), at `hi` every term is
/// at most `cap / m` (each x_j at most where both terms equal ν/2).
fn bracket(a: &[f64], active: &[bool], alpha: f64, beta: f64, cap: f64, weighted: bool) -> (f64, f64) {
    let m = a.len() as f64;
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for j in 0..a.len() {
        let w = if weighted { a[j] } else { 1.0 };
        let b = 2.0 * beta / (a[j] * a[j]);
        let (x_lo, x_hi) = (cap / w, cap / (w * m));
        let mut l = b / (x_lo * x_lo * x_lo);
        let mut h = 2.0 * b / (x_hi * x_hi * x_hi);
        if active[j] {
            l = l.max(x_lo.powf(-alpha));
            h = h.max(2.0 * x_hi.powf(-alpha));
        }
        lo = lo.min(l);
        hi = hi.max(h);
    }
    (lo, hi)
}

/// λ with Σ x_j(λ + μ a_j) = q, or 0 when even λ = 0 leaves the WQE budget slack.
fn lambda_for(a: &[f64], active: &[bool], alpha: f64, beta: f64, q: f64, mu: f64, x: &mut [f64]) -> f64 {
    if mu > 0.0 && sums(a, active, alpha, beta, 0.0, mu, x)[0] <= q {
        return 0.0;
    }
    let (lo, hi) = bracket(a, active, alpha, beta, q, false);
    meet(q, lo, hi, |l| {
        let s = sums(a, active, alpha, beta, l, mu, x);
        (s[0], s[2])
    })
}

/// The optimal rates of one host: `a` its CQE-per-WQE ratios, `active` its QP mask, `q`
/// and `c` its WQE and CQ budgets. Returns x (every entry > 0) and (λ, μ).
pub fn solve_host(a: &[f64], active: &[bool], q: f64, c: f64, alpha: f64, beta: f64) -> (Vec<f64>, f64, f64) {
    let mut x = vec![0.0; a.len()];
    // The WQE budget alone (μ = 0): it always binds then, since x_j(0) is unbounded.
    let lam = lambda_for(a, active, alpha, beta, q, 0.0, &mut x);
    let s = sums(a, active, alpha, beta, lam, 0.0, &mut x);
    if s[1] <= c * (1.0 + 1e-12) {
        return (x, lam, 0.0);
    }
    // The CQ budget binds: along λ(μ), Σ a x falls with μ; bisection in log μ between 0+
    // (Σ a x > c, just measured) and the bracket's top (every term at most c/m).
    let (mut lo, mut hi) = (0.0f64, bracket(a, active, alpha, beta, c, true).1);
    for _ in 0..200 {
        let mu = if lo == 0.0 { hi * 1e-12 } else { (lo * hi).sqrt() };
        let l = lambda_for(a, active, alpha, beta, q, mu, &mut x);
        let sax = sums(a, active, alpha, beta, l, mu, &mut x)[1];
        if sax > c {
            lo = mu;
        } else {
            hi = mu;
        }
        if lo > 0.0 && (hi / lo - 1.0 < 1e-14 || (sax / c - 1.0).abs() < 1e-13) {
            break;
        }
    }
    let mu = if lo == 0.0 { hi } else { (lo * hi).sqrt() };
    let lam = lambda_for(a, active, alpha, beta, q, mu, &mut x);
    sums(a, active, alpha, beta, lam, mu, &mut x);
    (x, lam, mu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drum::{certify, ActiveSet, Problem};

    fn check(a: &[f64], k: usize, q: f64, c: f64) -> (Vec<f64>, f64, f64) {
        let m = a.len();
        let set = ActiveSet::top_k(1, m, a, k).unwrap();
        let mask = set.to_mask(1, m);
        let (x, lam, mu) = solve_host(a, &mask, q, c, 0.5, 1.0);
        let (qv, cv) = ([q], [c]);
        let p = Problem::new(1, m, a, &qv, &cv, 0.5, 1.0, set).unwrap();
        let rep = certify(&p, &x, Some((&[lam], &[mu]))).unwrap();
        assert!(rep.accepts(1e-9), "KKT residuals {rep:?}");
        assert!(x.iter().all(|&v| v > 0.0));
        (x, lam, mu)
    }

    /// The testbed's scale (TC2 at cc = 100: a = 1/wr_num, Q = 0.9/0.68 per µs, C = 10 per
    /// µs), where the CQ penalty dominates: the KKT certificate accepts the point, the WQE
    /// budget binds, every rate is positive, and x ∝ a^(-2/3) (the penalty's own law) to
    /// within the utility's small share.
    #[test]
    fn the_testbed_instance_is_solved_exactly() {
        let a: Vec<f64> = (0..100).map(|j| 1.0 / (100.0 - 0.8 * j as f64)).collect();
        let (x, lam, mu) = check(&a, 19, 0.9 / 0.68, 10.0);
        assert!((x.iter().sum::<f64>() / (0.9 / 0.68) - 1.0).abs() < 1e-12 && lam > 0.0 && mu == 0.0);
        let law = |j: usize| a[j].powf(-2.0 / 3.0);
        let r = (x[0] / x[99]) / (law(0) / law(99));
        assert!((r - 1.0).abs() < 1e-3, "x ∝ a^-2/3: {r}");
    }

    /// Large ratios and a small CQ budget: C binds (μ > 0), certified.
    #[test]
    fn a_binding_cq_budget_is_solved_exactly() {
        let a: Vec<f64> = (0..30).map(|j| 1.0 + 0.3 * j as f64).collect();
        let (x, _, mu) = check(&a, 10, 50.0, 5.0);
        let sax: f64 = x.iter().zip(&a).map(|(x, a)| x * a).sum();
        assert!(mu > 0.0 && (sax / 5.0 - 1.0).abs() < 1e-9, "C binds: {sax} mu {mu}");
    }
}
