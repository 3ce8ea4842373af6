//! Safe scalar solvers: the 1-D root of `p x − q x^-r = c` and a bracketed monotone
//! Newton for a decreasing convex function of one multiplier.
//!
//! Both ADMM block updates reduce, per element, to `ψ(x) = p x − q x^-r − c = 0` with
//! `p > 0, q ≥ 0, r > 0`. On `(0, ∞)` `ψ` is increasing and concave, so it has one root and
//! Newton started where `ψ ≤ 0` climbs to it without overshooting (the tangent of a
//! concave function lies above it). These routines are the reference path; the fast
//! per-row kernels in `rows.rs` fall back on them if they ever fail to converge.

/// Evaluates `ψ(x)` and `ψ'(x)` for `ψ(x) = p x − q x^-r − c`.
#[inline]
pub fn psi(p: f64, q: f64, r: f64, c: f64, x: f64) -> (f64, f64) {
    let t = q * x.powf(-r);
    (p * x - t - c, p + r * t / x)
}

/// A point `L > 0` with `ψ(L) ≤ 0`, hence at or left of the root (requires `q > 0`).
///
/// With `xa = (q/2p)^(1/(r+1))`, `ψ(xa) = −p xa − c`; for `c > 0` both `xa` and `c/p` are
/// left of the root, for `c ≤ 0` so is `min(xa, (q/2|c|)^(1/r))`.
pub fn safe_left(p: f64, q: f64, r: f64, c: f64) -> f64 {
    let xa = (q / (2.0 * p)).powf(1.0 / (r + 1.0));
    if c > 0.0 {
        (c / p).max(xa)
    } else {
        xa.min((q / (-2.0 * c)).powf(1.0 / r))
    }
}

/// The root of `p x − q x^-r = c` on `(0, ∞)`; for `q = 0` the clipped linear solution
/// `max(0, c/p)`. `warm` (any value) is used when it helps. Always converges.
pub fn root_1d(p: f64, q: f64, r: f64, c: f64, warm: f64) -> f64 {
    if q == 0.0 {
        return (c / p).max(0.0);
    }
    let left = safe_left(p, q, r, c);
    let mut x = left;
    if warm.is_finite() && warm > 0.0 {
        let (f, df) = psi(p, q, r, c, warm);
        // From the right one Newton step lands left of the root; keep the better left point.
        x = if f <= 0.0 { warm.max(left) } else { (warm - f / df).max(left) };
    }
    for _ in 0..200 {
        let (f, df) = psi(p, q, r, c, x);
        let step = -f / df;
        x += step.max(-0.5 * x);
        if step.abs() <= 1e-15 * x {
            break;
        }
    }
    x
}

/// Sensitivity `dx/dc = 1/ψ'(x)` of the root (`[x > 0]/p` for the linear case).
pub fn droot_dc(p: f64, q: f64, r: f64, x: f64) -> f64 {
    if q == 0.0 {
        if x > 0.0 {
            1.0 / p
        } else {
            0.0
        }
    } else {
        1.0 / psi(p, q, r, 0.0, x).1
    }
}

/// Finds `l ≥ 0` with `S(l) = cap` for a continuous, decreasing, convex `S` (given as
/// `eval(l) -> (S(l), −S'(l))`), or `0` when `S(0) ≤ cap`. Newton from the left never
/// overshoots on such a function; a bisection bracket guards against rounding.
pub fn multiplier_root(cap: f64, mut eval: impl FnMut(f64) -> (f64, f64)) -> f64 {
    let (s0, mut slope) = eval(0.0);
    if s0 <= cap {
        return 0.0;
    }
    let (mut lo, mut hi, mut l, mut s) = (0.0f64, f64::INFINITY, 0.0f64, s0);
    for _ in 0..500 {
        let excess = s - cap;
        if excess.abs() <= 1e-13 * cap {
            break;
        }
        if excess > 0.0 {
            lo = l;
        } else {
            hi = l;
        }
        let newton = if slope > 0.0 { l + excess / slope } else { f64::NAN };
        l = if newton > lo && newton < hi {
            newton
        } else if hi.is_finite() {
            0.5 * (lo + hi)
        } else {
            2.0 * lo.max(1e-300) + 1.0
        };
        if hi.is_finite() && hi - lo <= 1e-15 * hi {
            break;
        }
        (s, slope) = eval(l);
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_solves_both_families() {
        for &(p, q, r, c) in &[(2.0, 1.0, 0.5, 3.0), (0.3, 1.0, 0.5, -5.0), (0.3, 0.2, 3.0, 0.7), (1.0, 4.0, 3.0, -1e3)]
        {
            for warm in [f64::NAN, 1e-9, 0.5, 1e6] {
                let x = root_1d(p, q, r, c, warm);
                let (f, df) = psi(p, q, r, c, x);
                assert!(x > 0.0 && (f / df).abs() <= 1e-13 * x, "p={p} q={q} r={r} c={c} x={x} f={f}");
            }
        }
        assert_eq!(root_1d(2.0, 0.0, 0.5, -1.0, 1.0), 0.0);
    }

    #[test]
    fn safe_left_is_left() {
        for &(p, q, r, c) in &[(2.0, 1.0, 0.5, 3.0), (0.3, 1.0, 0.5, -5.0), (0.3, 0.2, 3.0, 0.0), (1.0, 4.0, 3.0, -1e3)]
        {
            assert!(psi(p, q, r, c, safe_left(p, q, r, c)).0 <= 0.0);
        }
    }
}
