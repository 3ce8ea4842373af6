//! The two vector kernels of the row solvers, written once over four f64 lanes ([`Quad`])
//! and compiled twice: as two SSE2 pairs ([`Pair`], part of the x86_64 baseline) and as one
//! AVX register ([`Wide`], chosen at run time where the CPU has it). Element `j` accumulates
//! in lane `j % 4` at both widths and every lane sees the same operations in the same order
//! (no FMA: AVX alone does not contract), so the two builds give the same bits.

use super::TOL_REL;
use std::arch::x86_64::*;

/// Four f64 lanes and the operations the kernels need. Every method is `unsafe`: the caller
/// guarantees the instruction set, and `load`/`store` touch four elements from `p`.
trait Quad: Copy {
    unsafe fn load(p: *const f64) -> Self;
    unsafe fn store(self, p: *mut f64);
    unsafe fn splat(v: f64) -> Self;
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    unsafe fn div(self, o: Self) -> Self;
    unsafe fn and(self, o: Self) -> Self;
    unsafe fn or(self, o: Self) -> Self;
    /// `!self & o`, bit by bit.
    unsafe fn andnot(self, o: Self) -> Self;
    /// All ones in the lanes where `self > o` (false for NaN), else zero.
    unsafe fn gt(self, o: Self) -> Self;

    /// `a` in the lanes where `self` is all ones, `b` elsewhere.
    #[inline(always)]
    unsafe fn select(self, a: Self, b: Self) -> Self {
        self.and(a).or(self.andnot(b))
    }
}

/// Four lanes as two SSE2 registers (lanes 0–1 and 2–3).
#[derive(Clone, Copy)]
struct Pair([__m128d; 2]);

/// Four lanes as one AVX register.
#[derive(Clone, Copy)]
struct Wide(__m256d);

/// A binary operation of [`Quad`] on each half of a [`Pair`].
macro_rules! pair_op {
    ($($name:ident => $f:ident),*) => {$(
        #[inline(always)]
        unsafe fn $name(self, o: Self) -> Self {
            Pair([$f(self.0[0], o.0[0]), $f(self.0[1], o.0[1])])
        }
    )*};
}

/// A binary operation of [`Quad`] on a [`Wide`] register.
macro_rules! wide_op {
    ($($name:ident => $f:expr),*) => {$(
        #[inline(always)]
        unsafe fn $name(self, o: Self) -> Self {
            Wide($f(self.0, o.0))
        }
    )*};
}

impl Quad for Pair {
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        Pair([_mm_loadu_pd(p), _mm_loadu_pd(p.add(2))])
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm_storeu_pd(p, self.0[0]);
        _mm_storeu_pd(p.add(2), self.0[1]);
    }
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        Pair([_mm_set1_pd(v); 2])
    }
    pair_op!(add => _mm_add_pd, sub => _mm_sub_pd, mul => _mm_mul_pd, div => _mm_div_pd, and => _mm_and_pd,
        or => _mm_or_pd, andnot => _mm_andnot_pd, gt => _mm_cmpgt_pd);
}

impl Quad for Wide {
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        Wide(_mm256_loadu_pd(p))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm256_storeu_pd(p, self.0)
    }
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        Wide(_mm256_set1_pd(v))
    }
    wide_op!(add => _mm256_add_pd, sub => _mm256_sub_pd, mul => _mm256_mul_pd, div => _mm256_div_pd,
        and => _mm256_and_pd, or => _mm256_or_pd, andnot => _mm256_andnot_pd, gt => _mm256_cmp_pd::<_CMP_GT_OQ>);
}

/// Σ of max(0, cp − l·ip) and of its slope, added to `s` and `g` lane by lane, over a
/// multiple of four elements.
#[inline(always)]
unsafe fn inactive_body<V: Quad>(cp: &[f64], ip: &[f64], l: f64, s: &mut [f64; 4], g: &mut [f64; 4]) {
    let (vl, zero) = (V::splat(l), V::splat(0.0));
    let (mut acs, mut acg) = (V::load(s.as_ptr()), V::load(g.as_ptr()));
    let mut o = 0;
    while o + 4 <= cp.len() {
        let i = V::load(ip.as_ptr().add(o));
        let t = V::load(cp.as_ptr().add(o)).sub(vl.mul(i));
        let pos = t.gt(zero);
        acs = acs.add(pos.and(t));
        acg = acg.add(pos.and(i));
        o += 4;
    }
    acs.store(s.as_mut_ptr());
    acg.store(g.as_mut_ptr());
}

/// The z sweep over a multiple of four elements: the lane-wise form of `rows::z_one`,
/// with `Σb`, `Σd` and the worst excess kept per lane in `sb`, `sd`, `w`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn z_body<V: Quad>(
    z: &mut [f64],
    c: &[f64],
    b: &mut [f64],
    d: &mut [f64],
    p: f64,
    two_beta: f64,
    l: f64,
    mv: bool,
    sb: &mut [f64; 4],
    sd: &mut [f64; 4],
    w: &mut [f64; 4],
) {
    let (vp, vtb, vtb3, vl) = (V::splat(p), V::splat(two_beta), V::splat(3.0 * two_beta), V::splat(l));
    let (one, tenth, tol, sign, zero) =
        (V::splat(1.0), V::splat(0.1), V::splat(TOL_REL), V::splat(-0.0), V::splat(0.0));
    let (mut acc, mut acd, mut acw) = (V::load(sb.as_ptr()), V::load(sd.as_ptr()), V::load(w.as_ptr()));
    let (zp, cp, bp, dp) = (z.as_mut_ptr(), c.as_ptr(), b.as_mut_ptr(), d.as_mut_ptr());
    let mut o = 0;
    while o + 4 <= z.len() {
        let old = V::load(zp.add(o));
        let moved = if mv { V::load(bp.add(o)).sub(vl.mul(V::load(dp.add(o)))) } else { old };
        let new = moved.gt(zero).select(moved, tenth.mul(old));
        let z2 = new.mul(new);
        let z4 = z2.mul(z2);
        let r = one.div(vp.mul(z4).add(vtb3));
        let lin = V::load(cp.add(o)).sub(vp.mul(new)).mul(z4);
        let nb = new.add(lin.add(vtb.mul(new)).mul(r));
        let nd = z4.mul(r);
        new.store(zp.add(o));
        nb.store(bp.add(o));
        nd.store(dp.add(o));
        let e = sign.andnot(new.sub(old)).sub(tol.mul(new));
        acw = e.gt(acw).select(e, acw);
        acc = acc.add(nb);
        acd = acd.add(nd);
        o += 4;
    }
    acc.store(sb.as_mut_ptr());
    acd.store(sd.as_mut_ptr());
    acw.store(w.as_mut_ptr());
}

/// SSE2 build of [`inactive_body`].
pub(super) unsafe fn inactive_bulk(cp: &[f64], ip: &[f64], l: f64, s: &mut [f64; 4], g: &mut [f64; 4]) {
    inactive_body::<Pair>(cp, ip, l, s, g)
}

/// AVX build of [`inactive_body`].
#[target_feature(enable = "avx")]
pub(super) unsafe fn inactive_bulk_avx(cp: &[f64], ip: &[f64], l: f64, s: &mut [f64; 4], g: &mut [f64; 4]) {
    inactive_body::<Wide>(cp, ip, l, s, g)
}

/// SSE2 build of [`z_body`].
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn z_bulk(
    z: &mut [f64],
    c: &[f64],
    b: &mut [f64],
    d: &mut [f64],
    p: f64,
    two_beta: f64,
    l: f64,
    mv: bool,
    sb: &mut [f64; 4],
    sd: &mut [f64; 4],
    w: &mut [f64; 4],
) {
    z_body::<Pair>(z, c, b, d, p, two_beta, l, mv, sb, sd, w)
}

/// AVX build of [`z_body`]: twice the width for everything but the divider, whose
/// throughput per element is the same at both widths.
#[target_feature(enable = "avx")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn z_bulk_avx(
    z: &mut [f64],
    c: &[f64],
    b: &mut [f64],
    d: &mut [f64],
    p: f64,
    two_beta: f64,
    l: f64,
    mv: bool,
    sb: &mut [f64; 4],
    sd: &mut [f64; 4],
    w: &mut [f64; 4],
) {
    z_body::<Wide>(z, c, b, d, p, two_beta, l, mv, sb, sd, w)
}
