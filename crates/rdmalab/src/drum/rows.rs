//! Fast per-host ("row") solvers for the two ADMM block updates.
//!
//! Both updates have the shape: independent 1-D problems per element, tied by one capacity
//! constraint with multiplier `l ≥ 0`. The reference method (FORMULATION §4.4) nests an
//! exact 1-D Newton inside a Newton on `l`, i.e. several full-row solves per update. Here
//! we run Newton on the joint system `{ψ_j(x_j) = rhs_j − l w_j, Σ x_j = cap}` instead:
//! one sweep per step linearises every element (`x_j(l) ≈ b_j − l d_j`), the capacity
//! then fixes `l` exactly, and the next sweep moves all elements at once.
//!
//! Why it is safe: each `ψ_j` is increasing and concave, so a tangent step lands at or
//! left of the element's root; with the sum held at `cap` this puts `l` at or left of the
//! optimal multiplier, and from there `l` and the rates increase monotonically (the same
//! argument as the nested method). A positivity guard handles tangent undershoot, and a
//! sweep limit hands the row to the nested reference solver (`roots.rs`), which always
//! converges. Sweeps are written over fixed lanes so that LLVM vectorises them; inactive
//! elements (linear in `x`) are solved exactly from the piecewise-linear capacity model.

use super::roots::{droot_dc, multiplier_root, root_1d};

/// Joint Newton sweeps before falling back on the nested reference solver.
const MAX_SWEEPS: usize = 60;
/// Relative size of a Newton move below which the iteration is in its quadratic phase:
/// the relative error contracts like `ε ← κ ε²` with `κ ≤ 2` for both kernels (for
/// `p z − 2β z^-3`, `|z ψ''/2ψ'| < 2`; for `x − q x^-1/2`, `< 0.75`), so one more move
/// lands within ~1e-14 and is applied without re-evaluating.
const TOL_REL: f64 = 1e-7;
/// Lanes of the hand-unrolled reductions.
const LANES: usize = 4;

/// Per-thread scratch rows, reused across hosts and iterations (no allocation per step).
#[derive(Debug, Default)]
pub struct Scratch {
    /// `c_j/p_j` of each element (x rows), or the right-hand side (z rows).
    pub cp: Vec<f64>,
    /// `1/p_j` of each element (x rows).
    pub ip: Vec<f64>,
    /// Linearisation offsets `b_j`.
    pub b: Vec<f64>,
    /// Linearisation slopes `d_j`.
    pub d: Vec<f64>,
    /// Previous `z` row (for the dual residual).
    pub zold: Vec<f64>,
    /// Compact `c/p` of the active elements.
    acp: Vec<f64>,
    /// Compact `1/p` of the active elements.
    aip: Vec<f64>,
}

impl Scratch {
    /// Scratch for rows of `m` elements.
    pub fn new(m: usize) -> Scratch {
        let v = || vec![0.0; m];
        Scratch { cp: v(), ip: v(), b: v(), d: v(), zold: v(), acp: v(), aip: v() }
    }
}

/// Outcome counters of one row solve.
#[derive(Clone, Copy, Debug, Default)]
pub struct RowStats {
    /// Joint Newton sweeps (each one evaluation per nonlinear element).
    pub sweeps: u32,
    /// 1 if the row needed the nested reference solver.
    pub fallbacks: u32,
}

/// One active element's tangent in `(b, d)` form for `x − ip·x^-α = cp − l·ip`.
#[inline(always)]
fn x_tangent(x: f64, cp: f64, ip: f64, alpha: f64) -> (f64, f64) {
    if alpha == 0.5 {
        let sx = x.sqrt() * x; // x^(3/2)
        let r = 1.0 / (sx + 0.5 * ip);
        (x + ((cp - x) * sx + ip * x) * r, ip * sx * r)
    } else {
        let t = x.powf(-alpha);
        let r = 1.0 / (x + alpha * ip * t);
        (x + (cp - x + ip * t) * x * r, ip * x * r)
    }
}

/// The tangent of `p z − 2β z^-3 = c − l` at `z`: `z(l) ≈ b − l d` (one division).
#[inline(always)]
fn z_tangent(z: f64, c: f64, p: f64, two_beta: f64) -> (f64, f64) {
    let z2 = z * z;
    let z4 = z2 * z2;
    let r = 1.0 / (p * z4 + 3.0 * two_beta);
    (z + ((c - p * z) * z4 + two_beta * z) * r, z4 * r)
}

/// Σ of max(0, cp − l·ip) and of its slope over the inactive elements, in four lanes
/// (AVX or SSE2 on x86_64, the same arithmetic and lanes as the portable loop).
fn inactive_sum(cp: &[f64], ip: &[f64], l: f64) -> (f64, f64) {
    let n = cp.len().min(ip.len());
    let n4 = n / LANES * LANES;
    let (mut s, mut g) = ([0.0; LANES], [0.0; LANES]);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX was detected at run time; accesses stay below n4 ≤ len.
        unsafe { simd::inactive_bulk_avx(&cp[..n4], &ip[..n4], l, &mut s, &mut g) };
    } else {
        // SAFETY: SSE2 is part of the x86_64 baseline; accesses stay below n4 ≤ len.
        unsafe { simd::inactive_bulk(&cp[..n4], &ip[..n4], l, &mut s, &mut g) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    for j in 0..n4 {
        let t = cp[j] - l * ip[j];
        let k = j % LANES;
        s[k] += if t > 0.0 { t } else { 0.0 };
        g[k] += if t > 0.0 { ip[j] } else { 0.0 };
    }
    let (mut ss, mut gg) = (s.iter().sum::<f64>(), g.iter().sum::<f64>());
    for j in n4..n {
        let t = cp[j] - l * ip[j];
        if t > 0.0 {
            ss += t;
            gg += ip[j];
        }
    }
    (ss, gg)
}

/// Solves `ba − l·da + Σ max(0, cp − l·ip) = cap` for `l ≥ 0` (0 if the left side at 0 is
/// within `cap`). The function is convex, decreasing and piecewise linear, so Newton from
/// the left ends on the exact piece after finitely many steps. `cache` holds the last
/// inactive evaluation `(l, sum, slope)` so that a warm start costs no extra pass.
fn solve_model(ba: f64, da: f64, cp: &[f64], ip: &[f64], cap: f64, n0: f64, cache: &mut (f64, f64, f64)) -> f64 {
    if !cap.is_finite() || ba + n0 <= cap {
        return 0.0;
    }
    let (mut l, mut ns, mut ng) = *cache;
    let mut f = ba - l * da + ns - cap;
    let mut g = da + ng;
    if f < 0.0 {
        // Right of the root: the tangent of a convex function crosses zero to its left.
        l = if g > 0.0 { (l + f / g).max(0.0) } else { 0.0 };
        (ns, ng) = inactive_sum(cp, ip, l);
        f = ba - l * da + ns - cap;
        g = da + ng;
    }
    for _ in 0..cp.len() + 8 {
        if f <= 1e-15 * cap || g <= 0.0 {
            break;
        }
        let next = l + f / g;
        if next <= l {
            break;
        }
        l = next;
        (ns, ng) = inactive_sum(cp, ip, l);
        f = ba - l * da + ns - cap;
        g = da + ng;
    }
    *cache = (l, ns, ng);
    l
}

/// x-update of one host: minimises `Σ_j [−I_j U(x_j) + (x_j − cp_j)²/(2 ip_j)]` over
/// `x ≥ 0, Σ x ≤ cap`, i.e. `x_j − ip_j x_j^-α = cp_j − l ip_j` for actives and
/// `x_j = max(0, cp_j − l ip_j)` otherwise. `sc.cp`, `sc.ip` hold the inputs (length `m`)
/// and are clobbered; `x` holds the warm start and receives the solution, `lam` likewise.
pub fn solve_x_row(act: &[u32], alpha: f64, cap: f64, lam: &mut f64, x: &mut [f64], sc: &mut Scratch) -> RowStats {
    let m = x.len();
    let k = act.len();
    let l0 = (*lam).max(0.0);
    for (t, &j) in act.iter().enumerate() {
        let j = j as usize;
        sc.acp[t] = sc.cp[j];
        sc.aip[t] = sc.ip[j];
        sc.cp[j] = f64::NEG_INFINITY;
        sc.ip[j] = 0.0;
        let warm = x[j];
        x[j] = if warm.is_finite() && warm > 0.0 {
            warm
        } else {
            root_1d(1.0, sc.aip[t], alpha, sc.acp[t] - l0 * sc.aip[t], f64::NAN)
        };
    }
    let (cp, ip) = (&sc.cp[..m], &sc.ip[..m]);
    let n0 = inactive_sum(cp, ip, 0.0).0;
    let mut cache = (l0, 0.0, 0.0);
    (cache.1, cache.2) = inactive_sum(cp, ip, l0);
    let (acp, aip, b, d) = (&sc.acp[..k], &sc.aip[..k], &mut sc.b[..k], &mut sc.d[..k]);
    let (mut ba, mut da) = (0.0, 0.0);
    for t in 0..k {
        (b[t], d[t]) = x_tangent(x[act[t] as usize], acp[t], aip[t], alpha);
        ba += b[t];
        da += d[t];
    }
    let scale = if cap.is_finite() { cap } else { 1.0 };
    let mut stats = RowStats::default();
    let mut l = l0;
    let mut converged = false;
    while (stats.sweeps as usize) < MAX_SWEEPS {
        stats.sweeps += 1;
        l = solve_model(ba, da, cp, ip, cap, n0, &mut cache);
        let mut worst = 0.0f64;
        (ba, da) = (0.0, 0.0);
        for t in 0..k {
            let j = act[t] as usize;
            let old = x[j];
            let moved = b[t] - l * d[t];
            // `moved > 0` is false for NaN too: fall back to a positive point.
            let new = if moved > 0.0 { moved } else { 0.1 * old };
            worst = worst.max((new - old).abs() - TOL_REL * new);
            x[j] = new;
            (b[t], d[t]) = x_tangent(new, acp[t], aip[t], alpha);
            ba += b[t];
            da += d[t];
        }
        if worst <= 1e-15 * scale {
            // As for z rows: the last, predicted-tiny Newton move without new tangents.
            l = solve_model(ba, da, cp, ip, cap, n0, &mut cache);
            for t in 0..k {
                let v = b[t] - l * d[t];
                let j = act[t] as usize;
                x[j] = if v > 0.0 { v } else { x[j] };
            }
            converged = true;
            break;
        }
    }
    if !converged {
        stats.fallbacks = 1;
        l = nested_x_row(act, alpha, cap, x, sc);
    }
    *lam = l;
    write_inactive(x, &sc.cp[..m], &sc.ip[..m], l);
    stats
}

/// `x_j = max(0, cp_j − l ip_j)` for the inactive elements (actives carry `ip = 0`).
fn write_inactive(x: &mut [f64], cp: &[f64], ip: &[f64], l: f64) {
    for ((xj, &c), &i) in x.iter_mut().zip(cp).zip(ip) {
        let v = (c - l * i).max(0.0);
        *xj = if i > 0.0 { v } else { *xj };
    }
}

/// Sets a row at the multiplier `l` that brings its sum down to `cap` (`l = 0` when the
/// sum is already within it, or when `cap` is infinite: no cap) and returns `l`.
/// `solve(l)` writes the row at `l` and returns its sum and the sum's slope in `l`.
fn solve_capped(cap: f64, mut solve: impl FnMut(f64) -> (f64, f64)) -> f64 {
    let l = if cap.is_finite() { multiplier_root(cap, &mut solve) } else { 0.0 };
    solve(l);
    l
}

/// Reference x-row solver: exact 1-D roots inside a bracketed Newton on the multiplier.
fn nested_x_row(act: &[u32], alpha: f64, cap: f64, x: &mut [f64], sc: &mut Scratch) -> f64 {
    let k = act.len();
    let (acp, aip) = (&sc.acp[..k], &sc.aip[..k]);
    let (cp, ip) = (&sc.cp[..x.len()], &sc.ip[..x.len()]);
    let solve = |l: f64| {
        let (mut s, mut g) = inactive_sum(cp, ip, l);
        for t in 0..k {
            let j = act[t] as usize;
            x[j] = root_1d(1.0, aip[t], alpha, acp[t] - l * aip[t], x[j]);
            s += x[j];
            g += aip[t] * droot_dc(1.0, aip[t], alpha, x[j]);
        }
        (s, g)
    };
    solve_capped(cap, solve)
}

/// z-update of one host: minimises `Σ_j [β z_j^-2 + p/2 z_j² − c_j z_j]` over `z > 0`,
/// `Σ z ≤ cap` (`cap = ∞` for none): `p z_j − 2β z_j^-3 = c_j − l`. `sc.cp` holds `c`,
/// `z` the warm start and the result, `mu` the multiplier.
pub fn solve_z_row(p: f64, beta: f64, cap: f64, mu: &mut f64, z: &mut [f64], sc: &mut Scratch) -> RowStats {
    let m = z.len();
    let two_beta = 2.0 * beta;
    let (c, b, d) = (&sc.cp[..m], &mut sc.b[..m], &mut sc.d[..m]);
    for j in 0..m {
        if !(z[j].is_finite() && z[j] > 0.0) {
            z[j] = root_1d(p, two_beta, 3.0, c[j] - *mu, f64::NAN);
        }
    }
    let (mut bs, mut ds, _) = z_sweep(z, c, b, d, p, two_beta, f64::NAN);
    let scale = if cap.is_finite() { cap } else { z.iter().sum::<f64>() };
    let mut stats = RowStats::default();
    let mut l = 0.0;
    let mut converged = false;
    while (stats.sweeps as usize) < MAX_SWEEPS {
        stats.sweeps += 1;
        l = if cap.is_finite() && bs > cap { (bs - cap) / ds } else { 0.0 };
        let worst;
        (bs, ds, worst) = z_sweep(z, c, b, d, p, two_beta, l);
        if worst <= 1e-15 * scale {
            // Every move was below MOVE_TOL: the error squares each step, so one more
            // Newton step is within ~1e-14 and needs no new tangents.
            l = if cap.is_finite() && bs > cap { (bs - cap) / ds } else { 0.0 };
            z.iter_mut().zip(b.iter()).zip(d.iter()).for_each(|((zj, bj), dj)| {
                let v = bj - l * dj;
                *zj = if v > 0.0 { v } else { *zj };
            });
            converged = true;
            break;
        }
    }
    if !converged {
        stats.fallbacks = 1;
        l = nested_z_row(p, two_beta, cap, z, c);
    }
    *mu = l;
    stats
}

/// One z element of a sweep: optional move `z ← b − l d` (guarded positive), then the
/// new tangent; returns the move's excess over the relative tolerance.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn z_one(zj: &mut f64, cj: f64, bj: &mut f64, dj: &mut f64, p: f64, two_beta: f64, l: f64, mv: bool) -> f64 {
    let old = *zj;
    let moved = if mv { *bj - l * *dj } else { old };
    let new = if moved > 0.0 { moved } else { 0.1 * old };
    *zj = new;
    (*bj, *dj) = z_tangent(new, cj, p, two_beta);
    (new - old).abs() - TOL_REL * new
}

/// One joint sweep over a z row. With `l` = NaN only evaluates the tangents at `z`;
/// otherwise first moves `z ← b − l d` (guarded positive). Returns `Σb`, `Σd` and the
/// worst excess of the move over the relative tolerance. The bulk runs four lanes per
/// step, as one AVX register where the CPU has AVX, else two SSE2 pairs (explicit SIMD:
/// the autovectoriser leaves this loop scalar); the arithmetic is exactly that of
/// [`z_one`], so results do not depend on the path.
fn z_sweep(z: &mut [f64], c: &[f64], b: &mut [f64], d: &mut [f64], p: f64, two_beta: f64, l: f64) -> (f64, f64, f64) {
    let mv = !l.is_nan();
    let n = z.len().min(c.len()).min(b.len()).min(d.len());
    let n4 = n / LANES * LANES;
    let (mut sb, mut sd, mut w) = ([0.0; LANES], [0.0; LANES], [0.0f64; LANES]);
    #[cfg(target_arch = "x86_64")]
    {
        // AVX where the CPU has it (detected at run time), else SSE2, which every x86_64 has.
        let bulk = if std::arch::is_x86_feature_detected!("avx") { simd::z_bulk_avx } else { simd::z_bulk };
        // SAFETY: the chosen body's instruction set is present; all accesses are below n4 ≤ len.
        unsafe {
            bulk(&mut z[..n4], &c[..n4], &mut b[..n4], &mut d[..n4], p, two_beta, l, mv, &mut sb, &mut sd, &mut w)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    for j in 0..n4 {
        let e = z_one(&mut z[j], c[j], &mut b[j], &mut d[j], p, two_beta, l, mv);
        let k = j % LANES;
        w[k] = if e > w[k] { e } else { w[k] };
        sb[k] += b[j];
        sd[k] += d[j];
    }
    let mut worst = w.iter().fold(0.0f64, |a, &v| a.max(v));
    let (mut tb, mut td) = (sb.iter().sum::<f64>(), sd.iter().sum::<f64>());
    for j in n4..n {
        worst = worst.max(z_one(&mut z[j], c[j], &mut b[j], &mut d[j], p, two_beta, l, mv));
        tb += b[j];
        td += d[j];
    }
    (tb, td, worst)
}

#[cfg(target_arch = "x86_64")]
mod simd;

/// Reference z-row solver (exact 1-D roots, bracketed Newton on the multiplier).
fn nested_z_row(p: f64, two_beta: f64, cap: f64, z: &mut [f64], c: &[f64]) -> f64 {
    let solve = |l: f64| {
        let (mut s, mut g) = (0.0, 0.0);
        for (zj, &cj) in z.iter_mut().zip(c) {
            *zj = root_1d(p, two_beta, 3.0, cj - l, *zj);
            s += *zj;
            g += droot_dc(p, two_beta, 3.0, *zj);
        }
        (s, g)
    };
    solve_capped(cap, solve)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> f64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fast joint Newton and the nested reference solver agree on x rows.
    #[test]
    fn x_row_matches_reference() {
        let mut s = 7u64;
        for case in 0..200 {
            let m = 1 + case % 13;
            let alpha = [0.5, 0.3, 0.8][case % 3];
            let act: Vec<u32> = (0..m as u32).filter(|_| lcg(&mut s) < 0.5).collect();
            let cap = if case % 7 == 0 { f64::INFINITY } else { 0.1 + 5.0 * lcg(&mut s) };
            let mut sc = Scratch::new(m);
            let cp: Vec<f64> = (0..m).map(|_| 4.0 * lcg(&mut s) - 1.0).collect();
            let ip: Vec<f64> = (0..m).map(|_| 0.01 + lcg(&mut s)).collect();
            let run = |fast: bool, sc: &mut Scratch| {
                sc.cp[..m].copy_from_slice(&cp);
                sc.ip[..m].copy_from_slice(&ip);
                let mut x = vec![if case % 2 == 0 { 1.0 } else { f64::NAN }; m];
                let mut lam = 0.3;
                if fast {
                    solve_x_row(&act, alpha, cap, &mut lam, &mut x, sc);
                } else {
                    for (t, &j) in act.iter().enumerate() {
                        sc.acp[t] = sc.cp[j as usize];
                        sc.aip[t] = sc.ip[j as usize];
                        sc.cp[j as usize] = f64::NEG_INFINITY;
                        sc.ip[j as usize] = 0.0;
                    }
                    lam = nested_x_row(&act, alpha, cap, &mut x, sc);
                    write_inactive(&mut x, &sc.cp[..m], &sc.ip[..m], lam);
                }
                (x, lam)
            };
            let (xf, lf) = run(true, &mut sc);
            let (xr, lr) = run(false, &mut sc);
            let scale = xr.iter().sum::<f64>().max(1.0);
            for (a, b) in xf.iter().zip(&xr) {
                assert!((a - b).abs() <= 1e-9 * scale, "case {case}: {xf:?} vs {xr:?}");
            }
            assert!((lf - lr).abs() <= 1e-8 * (1.0 + lr), "case {case}: λ {lf} vs {lr}");
            if cap.is_finite() {
                assert!(xf.iter().sum::<f64>() <= cap * (1.0 + 1e-12));
            }
        }
    }

    /// Same for z rows, from warm starts far from the solution.
    #[test]
    fn z_row_matches_reference() {
        let mut s = 11u64;
        for case in 0..200 {
            let m = 1 + case % 17;
            let (p, beta) = (0.05 + lcg(&mut s), 0.1 + 3.0 * lcg(&mut s));
            let cap = if case % 5 == 0 { f64::INFINITY } else { 0.5 + 10.0 * lcg(&mut s) };
            let c: Vec<f64> = (0..m).map(|_| 6.0 * lcg(&mut s) - 2.0).collect();
            let mut sc = Scratch::new(m);
            sc.cp[..m].copy_from_slice(&c);
            let mut z: Vec<f64> = (0..m).map(|j| [1e-3, 1.0, 1e3][(j + case) % 3]).collect();
            let mut mu = 0.0;
            solve_z_row(p, beta, cap, &mut mu, &mut z, &mut sc);
            let mut zr = vec![1.0; m];
            let lr = nested_z_row(p, 2.0 * beta, cap, &mut zr, &c);
            for (a, b) in z.iter().zip(&zr) {
                assert!((a - b).abs() <= 1e-10 * b.max(1.0), "case {case}: {z:?} vs {zr:?}");
            }
            assert!((mu - lr).abs() <= 1e-8 * (1.0 + lr), "case {case}: μ {mu} vs {lr}");
        }
    }

    /// The AVX kernels give the same bits as the SSE2 ones (same operations per lane).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx_kernels_match_sse2_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx") {
            return;
        }
        let mut s = 5u64;
        let n = 4 * 97;
        let c: Vec<f64> = (0..n).map(|_| 6.0 * lcg(&mut s) - 2.0).collect();
        let ip: Vec<f64> = (0..n).map(|j| if j % 7 == 0 { 0.0 } else { 0.01 + lcg(&mut s) }).collect();
        let z0: Vec<f64> = (0..n).map(|_| 1e-3 + 3.0 * lcg(&mut s)).collect();
        let (b0, d0): (Vec<f64>, Vec<f64>) = (0..n).map(|_| (4.0 * lcg(&mut s) - 1.0, lcg(&mut s))).unzip();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (l, mv) in [(f64::NAN, false), (0.0, true), (0.7, true)] {
            let mut outs = Vec::new();
            for avx in [false, true] {
                let (mut z, mut b, mut d) = (z0.clone(), b0.clone(), d0.clone());
                let (mut sb, mut sd, mut w) = ([0.0; 4], [0.0; 4], [0.0; 4]);
                // SAFETY: lengths are a multiple of four; AVX was detected above.
                unsafe {
                    if avx {
                        simd::z_bulk_avx(&mut z, &c, &mut b, &mut d, 0.4, 1.5, l, mv, &mut sb, &mut sd, &mut w);
                    } else {
                        simd::z_bulk(&mut z, &c, &mut b, &mut d, 0.4, 1.5, l, mv, &mut sb, &mut sd, &mut w);
                    }
                }
                let (mut si, mut gi) = ([0.0; 4], [0.0; 4]);
                let li = if l.is_nan() { 0.3 } else { l };
                // SAFETY: as above.
                unsafe {
                    if avx {
                        simd::inactive_bulk_avx(&c, &ip, li, &mut si, &mut gi);
                    } else {
                        simd::inactive_bulk(&c, &ip, li, &mut si, &mut gi);
                    }
                }
                outs.push([bits(&z), bits(&b), bits(&d), bits(&sb), bits(&sd), bits(&w), bits(&si), bits(&gi)]);
            }
            assert_eq!(outs[0], outs[1], "l = {l}");
        }
    }
}
