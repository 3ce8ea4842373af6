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

/// Cube root of `v > 0`, within about 1 ulp of `f64::cbrt` at a third of its cost here (the
/// toolchain links a correctly rounded software `cbrt` that dominated the dual baseline's
/// profile). Kahan's exponent-thirds guess (a few % off), two Halley steps (cubic: 1e-5,
/// then 1e-15) and one Newton polish. Inputs outside [1e-300, 1e300] (where `y³ + 2v`
/// could overflow or underflow), and NaN, go to `f64::cbrt`.
#[inline]
pub fn cbrt_pos(v: f64) -> f64 {
    if !(1e-300..=1e300).contains(&v) {
        return v.cbrt();
    }
    let mut y = f64::from_bits(v.to_bits() / 3 + 0x2A9F_7893_782D_A1CE);
    for _ in 0..2 {
        let y3 = y * y * y;
        y *= (y3 + 2.0 * v) / (2.0 * y3 + v);
    }
    let y2 = y * y;
    y - (y2 * y - v) / (3.0 * y2)
}

/// Finds `l ≥ 0` with `S(l) = cap` for a continuous, decreasing, convex `S` (given as
/// `eval(l) -> (S(l), −S'(l))`), or `0` when `S(0) ≤ cap`. Newton from the left never
/// overshoots on such a function; a bisection bracket guards against rounding.
pub fn multiplier_root(cap: f64, eval: impl FnMut(f64) -> (f64, f64)) -> f64 {
    multiplier_root_from(cap, 0.0, eval)
}

/// [`multiplier_root`] started at `start` (clamped to ≥ 0), for callers that know a
/// nearby point, such as the previous root when the data moved a little. A start right
/// of the root costs one Newton step that lands left of it (convexity), after which Newton
/// climbs monotonically again. With `start > 0` the caller must know that `S(0) > cap`.
pub fn multiplier_root_from(cap: f64, start: f64, mut eval: impl FnMut(f64) -> (f64, f64)) -> f64 {
    let start = if start > 0.0 && start.is_finite() { start } else { 0.0 };
    let (s0, mut slope) = eval(start);
    if start == 0.0 && s0 <= cap {
        return 0.0;
    }
    let (mut lo, mut hi, mut l, mut s) = (0.0f64, f64::INFINITY, start, s0);
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
    fn cbrt_pos_matches_cbrt() {
        let mut v = 1e-307f64;
        while v < 1e307 {
            for x in [v, v * 1.37, v * 2.9, v * 7.77] {
                let (a, b) = (x.cbrt(), cbrt_pos(x));
                assert!((a - b).abs() <= 4e-16 * a, "{x}: {a} vs {b}");
            }
            v *= 10.0;
        }
        assert_eq!(cbrt_pos(8.0), 2.0);
        assert_eq!(cbrt_pos(f64::INFINITY), f64::INFINITY);
        assert_eq!(cbrt_pos(0.0), 0.0);
        assert!(cbrt_pos(f64::NAN).is_nan() && cbrt_pos(1e-310) == 1e-310f64.cbrt());
    }

    #[test]
    fn multiplier_root_from_any_start() {
        // S(l) = Σ (2/(l + d_j))^(1/3), singular at l = 0 for d_0 = 0, as in the dual z-step.
        let d = [0.0, 0.3, 1.7, 4.0];
        let eval = |l: f64| {
            d.iter().fold((0.0, 0.0), |(s, ds), dj| {
                let v = (2.0 / (l + dj)).cbrt();
                (s + v, ds + v / (3.0 * (l + dj)))
            })
        };
        let cap = 3.0;
        let root = multiplier_root(cap, eval);
        assert!((eval(root).0 - cap).abs() <= 1e-12 * cap);
        for start in [1e-12, 0.5 * root, 0.999 * root, 1.001 * root, 3.0 * root, 1e6, f64::NAN] {
            let l = multiplier_root_from(cap, start, eval);
            assert!((l - root).abs() <= 1e-12 * root, "start {start}: {l} vs {root}");
        }
    }

    #[test]
    fn safe_left_is_left() {
        for &(p, q, r, c) in &[(2.0, 1.0, 0.5, 3.0), (0.3, 1.0, 0.5, -5.0), (0.3, 0.2, 3.0, 0.0), (1.0, 4.0, 3.0, -1e3)]
        {
            assert!(psi(p, q, r, c, safe_left(p, q, r, c)).0 <= 0.0);
        }
    }
}
