//! Instances "as in the paper" (Sec. III-D): `a_ij` normal and clipped to `[1, 10]`.
//!
//! The paper's budgets `q_i = 25`, `c_i = 15` belong to its log-sum constraints, which are
//! rejected, so the linear budgets are drawn at a scale where either one may bind:
//! `Q_i = (m/2)·U(0.8, 1.2)` and `C_i = Q_i · mean_j(a_ij) · U(0.8, 1.2)`. With this
//! scale rates are O(0.1–10) and ρ ≈ 0.3 is a good penalty. Rows are drawn from
//! independent streams keyed by `(seed, host)`, so generation is parallel and the same
//! seed gives the same instance on any machine and thread count.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Mean and standard deviation of the (pre-clipping) normal law of `a_ij`.
pub const A_MEAN: f64 = 5.5;
/// See [`A_MEAN`]: `[1, 10]` is the mean ± 2 standard deviations.
pub const A_STD: f64 = 2.25;

/// A generated instance (data only; the active set is chosen by the caller).
#[derive(Clone, Debug)]
pub struct Instance {
    /// Hosts.
    pub n: usize,
    /// Applications per host.
    pub m: usize,
    /// `a_ij`, host-major.
    pub a: Vec<f64>,
    /// WQE-rate budgets.
    pub q: Vec<f64>,
    /// CQ-polling budgets.
    pub c: Vec<f64>,
}

/// SplitMix64: a small, well-mixed generator, enough for instance data.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A stream keyed by `(seed, stream)`.
    pub fn new(seed: u64, stream: u64) -> SplitMix {
        let mut s = SplitMix(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        s.next_u64();
        s
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Standard normal (Box–Muller, one value per call).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// Generates an `n × m` instance from `seed`.
pub fn paper_instance(n: usize, m: usize, seed: u64) -> Result<Instance> {
    if n == 0 || m < 2 {
        return Err(Error::drum("n/m", format!("need n ≥ 1 hosts and m ≥ 2 apps, got n = {n}, m = {m}")));
    }
    let mut a = vec![0.0; n * m];
    let qc: Vec<(f64, f64)> = a
        .par_chunks_mut(m)
        .enumerate()
        .map(|(i, row)| {
            let mut g = SplitMix::new(seed, i as u64);
            for v in row.iter_mut() {
                *v = (A_MEAN + A_STD * g.normal()).clamp(1.0, 10.0);
            }
            let q = 0.5 * m as f64 * (0.8 + 0.4 * g.uniform());
            let mean_a = row.iter().sum::<f64>() / m as f64;
            (q, q * mean_a * (0.8 + 0.4 * g.uniform()))
        })
        .collect();
    let (q, c) = qc.into_iter().unzip();
    Ok(Instance { n, m, a, q, c })
}
