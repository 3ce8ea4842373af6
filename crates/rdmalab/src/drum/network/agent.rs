//! A host agent of the network-wide model: owns a contiguous group of hosts, their data
//! and their iterate, and performs the local ADMM updates given the resource prices.
//!
//! Agents are plain owned data so that they can live in another process (a Ray actor):
//! [`Agent::to_bytes`] / [`Agent::from_bytes`] move one there without the full problem.

use super::{stat, AgentReport, NetworkProblem};
use crate::drum::problem::ActiveSet;
use crate::drum::rows::{solve_x_row, solve_z_row, Scratch};
use crate::error::{Error, Result};

/// Local state and data of a group of hosts `h0..h0+nh`.
#[derive(Debug)]
pub struct Agent {
    h0: usize,
    nh: usize,
    m: usize,
    k_total: usize,
    alpha: f64,
    beta: f64,
    rho: f64,
    a: Vec<f64>,
    q: Vec<f64>,
    active: ActiveSet,
    ptr: Vec<usize>,
    res: Vec<u32>,
    coef: Vec<f64>,
    x: Vec<f64>,
    z: Vec<f64>,
    w: Vec<f64>,
    dx: Vec<f64>,
    lam: Vec<f64>,
    u_prev2: Vec<f64>,
    have_dx: bool,
    sc: Scratch,
}

impl Agent {
    /// The agent of hosts `h0..h1`, cold-started at a uniform point within `Q` and `C`.
    pub fn new(np: &NetworkProblem<'_>, h0: usize, h1: usize, rho: f64) -> Result<Agent> {
        let p = &np.base;
        if !(h0 < h1 && h1 <= p.n) {
            return Err(Error::drum("groups", format!("bad host range {h0}..{h1} for n = {}", p.n)));
        }
        let (m, nh) = (p.m, h1 - h0);
        let (e0, e1) = (h0 * m, h1 * m);
        let (t0, t1) = (np.ptr[e0], np.ptr[e1]);
        let a = p.a[e0..e1].to_vec();
        let mut x = vec![0.0; nh * m];
        for r in 0..nh {
            let sa: f64 = a[r * m..(r + 1) * m].iter().sum();
            let v = (p.q[h0 + r] / m as f64).min(p.c[h0 + r] / sa);
            x[r * m..(r + 1) * m].fill(v);
        }
        let z = x.iter().zip(&a).map(|(x, a)| x * a).collect();
        Ok(Agent {
            h0,
            nh,
            m,
            k_total: np.n_resources(),
            alpha: p.alpha,
            beta: p.beta,
            rho,
            q: p.q[h0..h1].to_vec(),
            active: super::host_slice_active(&p.active, h0, h1),
            ptr: np.ptr[e0..=e1].iter().map(|v| v - t0).collect(),
            res: np.res[t0..t1].to_vec(),
            coef: np.coef[t0..t1].to_vec(),
            a,
            x,
            z,
            w: vec![0.0; nh * m],
            dx: vec![0.0; nh * m],
            lam: vec![0.0; nh],
            u_prev2: vec![0.0; np.n_resources()],
            have_dx: false,
            sc: Scratch::new(m),
        })
    }

    /// `groups` agents over contiguous, near-equal host ranges (clamped to `1..=n`).
    pub fn split(np: &NetworkProblem<'_>, groups: usize, rho: f64) -> Result<Vec<Agent>> {
        let n = np.base.n;
        let g = groups.clamp(1, n);
        (0..g).map(|k| Agent::new(np, k * n / g, (k + 1) * n / g, rho)).collect()
    }

    /// Continues from `prev`'s iterate (rates, copies, duals, multipliers): the warm start of
    /// a host agent whose data (`a`, the active set) changed between two control periods.
    pub fn warm_from(&mut self, prev: &Agent) -> Result<()> {
        if (prev.h0, prev.nh, prev.m, prev.k_total) != (self.h0, self.nh, self.m, self.k_total) {
            return Err(Error::drum("warm_start", "the previous agent has another shape"));
        }
        self.x.copy_from_slice(&prev.x);
        self.z.copy_from_slice(&prev.z);
        self.w.copy_from_slice(&prev.w);
        self.dx.copy_from_slice(&prev.dx);
        self.lam.copy_from_slice(&prev.lam);
        self.u_prev2.copy_from_slice(&prev.u_prev2);
        self.have_dx = prev.have_dx;
        Ok(())
    }

    /// The agent's current rates (its hosts' rows, host-major).
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// First host and number of hosts.
    pub fn hosts(&self) -> (usize, usize) {
        (self.h0, self.nh)
    }

    /// Number of shared resources the prices must cover.
    pub fn n_resources(&self) -> usize {
        self.k_total
    }

    /// One local iteration given the scaled prices `u_prev = u^(T−2)`, `u = u^(T−1)`.
    pub fn step(&mut self, u_prev: &[f64], u: &[f64]) -> Result<AgentReport> {
        if u_prev.len() != self.k_total || u.len() != self.k_total {
            return Err(Error::drum(
                "u",
                format!("price vectors must have {} entries (one per resource)", self.k_total),
            ));
        }
        let mut rep = AgentReport { load: vec![0.0; self.k_total], stats: [0.0; stat::N] };
        rep.stats[stat::SY2_PREV] = if self.have_dx { self.copy_dual_residual(u_prev, u) } else { 0.0 };
        for r in 0..self.nh {
            self.host_step(r, u_prev, u, &mut rep);
        }
        self.u_prev2.copy_from_slice(u_prev);
        self.have_dx = true;
        Ok(rep)
    }

    /// ‖ρ Aᵀ(y^(T−1) − y^(T−2))‖², from the stored rate change and three price vectors.
    fn copy_dual_residual(&self, u_prev: &[f64], u: &[f64]) -> f64 {
        let mut sum = 0.0;
        for e in 0..self.nh * self.m {
            let mut s = 0.0;
            for t in self.ptr[e]..self.ptr[e + 1] {
                let k = self.res[t] as usize;
                let delta = 2.0 * u_prev[k] - u[k] - self.u_prev2[k];
                s += self.coef[t] * (self.coef[t] * self.dx[e] + delta);
            }
            sum += (self.rho * s) * (self.rho * s);
        }
        sum
    }

    /// The fused x-row, z-row and dual step of local host `r`.
    fn host_step(&mut self, r: usize, u_prev: &[f64], u: &[f64], rep: &mut AgentReport) {
        let (m, rho) = (self.m, self.rho);
        let rows = r * m..(r + 1) * m;
        let a = &self.a[rows.clone()];
        let (x, z, w) = (&mut self.x[rows.clone()], &mut self.z[rows.clone()], &mut self.w[rows.clone()]);
        let dx = &mut self.dx[rows.clone()];
        for j in 0..m {
            let e = r * m + j;
            let (mut pe, mut ce) = (a[j] * a[j], a[j] * (z[j] - w[j]));
            for t in self.ptr[e]..self.ptr[e + 1] {
                let (k, c) = (self.res[t] as usize, self.coef[t]);
                pe += c * c;
                ce += c * (c * x[j] + u_prev[k] - 2.0 * u[k]);
            }
            self.sc.cp[j] = ce / pe;
            self.sc.ip[j] = 1.0 / (rho * pe);
            dx[j] = x[j];
        }
        solve_x_row(self.active.row(r), self.alpha, self.q[r], &mut self.lam[r], x, &mut self.sc);
        for j in 0..m {
            dx[j] = x[j] - dx[j];
            self.sc.zold[j] = z[j];
            self.sc.cp[j] = rho * (a[j] * x[j] + w[j]);
        }
        let mut mu = 0.0;
        solve_z_row(rho, self.beta, f64::INFINITY, &mut mu, z, &mut self.sc);
        let st = &mut rep.stats;
        for j in 0..m {
            let ax = a[j] * x[j];
            w[j] += ax - z[j];
            st[stat::R2] += (ax - z[j]) * (ax - z[j]);
            let s = rho * a[j] * (z[j] - self.sc.zold[j]);
            st[stat::S2] += s * s;
            st[stat::AX2] += ax * ax;
            st[stat::AW2] += (rho * a[j] * w[j]) * (rho * a[j] * w[j]);
            let e = r * m + j;
            for t in self.ptr[e]..self.ptr[e + 1] {
                let (k, c) = (self.res[t] as usize, self.coef[t]);
                rep.load[k] += c * x[j];
                st[stat::AX2] += (c * x[j]) * (c * x[j]);
                st[stat::AW2] += (rho * c * u[k]) * (rho * c * u[k]);
            }
        }
        st[stat::OBJ] += super::row_objective(a, self.active.row(r), x, self.alpha, self.beta);
        let viol = x.iter().sum::<f64>() / self.q[r] - 1.0;
        st[stat::QVIOL] = st[stat::QVIOL].max(viol);
    }
}

const MAGIC: &[u8; 8] = b"DRUMAGT1";

/// Writes scalars and length-prefixed arrays, little-endian.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u(&mut self, v: usize) {
        self.0.extend_from_slice(&(v as u64).to_le_bytes());
    }
    fn f(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn fs(&mut self, v: &[f64]) {
        self.u(v.len());
        v.iter().for_each(|&x| self.f(x));
    }
    fn us(&mut self, v: &[usize]) {
        self.u(v.len());
        v.iter().for_each(|&x| self.u(x));
    }
    fn u32s(&mut self, v: &[u32]) {
        self.u(v.len());
        v.iter().for_each(|&x| self.u(x as usize));
    }
}

/// Reads what [`Enc`] wrote, failing cleanly on truncated input.
struct Dec<'b>(&'b [u8]);

impl Dec<'_> {
    fn take8(&mut self) -> Result<[u8; 8]> {
        if self.0.len() < 8 {
            return Err(Error::drum("agent", "truncated agent encoding"));
        }
        let (h, t) = self.0.split_at(8);
        self.0 = t;
        Ok(h.try_into().unwrap_or([0; 8]))
    }
    fn u(&mut self) -> Result<usize> {
        Ok(u64::from_le_bytes(self.take8()?) as usize)
    }
    fn f(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take8()?))
    }
    fn len(&mut self) -> Result<usize> {
        let n = self.u()?;
        if n > self.0.len() / 8 {
            return Err(Error::drum("agent", "corrupt agent encoding (array length)"));
        }
        Ok(n)
    }
    fn fs(&mut self) -> Result<Vec<f64>> {
        (0..self.len()?).map(|_| self.f()).collect()
    }
    fn us(&mut self) -> Result<Vec<usize>> {
        (0..self.len()?).map(|_| self.u()).collect()
    }
    fn u32s(&mut self) -> Result<Vec<u32>> {
        (0..self.len()?).map(|_| self.u().map(|v| v as u32)).collect()
    }
}

impl Agent {
    /// Encodes the agent (data and iterate) as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc::default();
        e.0.extend_from_slice(MAGIC);
        for v in [self.h0, self.nh, self.m, self.k_total, self.have_dx as usize] {
            e.u(v);
        }
        for v in [self.alpha, self.beta, self.rho] {
            e.f(v);
        }
        for v in [&self.a, &self.q, &self.coef, &self.x, &self.z, &self.w, &self.dx, &self.lam, &self.u_prev2] {
            e.fs(v);
        }
        e.us(&self.active.ptr);
        e.u32s(&self.active.idx);
        e.us(&self.ptr);
        e.u32s(&self.res);
        e.0
    }

    /// Decodes an agent written by [`Agent::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Agent> {
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err(Error::drum("agent", "not an encoded DRUM agent"));
        }
        let mut d = Dec(&bytes[8..]);
        let (h0, nh, m, k_total, have_dx) = (d.u()?, d.u()?, d.u()?, d.u()?, d.u()? != 0);
        let (alpha, beta, rho) = (d.f()?, d.f()?, d.f()?);
        let (a, q, coef, x, z, w, dx, lam, u_prev2) =
            (d.fs()?, d.fs()?, d.fs()?, d.fs()?, d.fs()?, d.fs()?, d.fs()?, d.fs()?, d.fs()?);
        let active = ActiveSet { ptr: d.us()?, idx: d.u32s()? };
        let (ptr, res) = (d.us()?, d.u32s()?);
        let nm = nh * m;
        let shapes_ok = [a.len(), x.len(), z.len(), w.len(), dx.len()].iter().all(|&l| l == nm)
            && q.len() == nh
            && lam.len() == nh
            && u_prev2.len() == k_total
            && active.ptr.len() == nh + 1
            && ptr.len() == nm + 1
            && res.len() == coef.len()
            && ptr.last() == Some(&res.len())
            && res.iter().all(|&k| (k as usize) < k_total)
            && active.idx.iter().all(|&j| (j as usize) < m)
            && active.ptr.last() == Some(&active.idx.len());
        if !shapes_ok {
            return Err(Error::drum("agent", "inconsistent agent encoding"));
        }
        let sc = Scratch::new(m);
        Ok(Agent {
            h0,
            nh,
            m,
            k_total,
            alpha,
            beta,
            rho,
            a,
            q,
            active,
            ptr,
            res,
            coef,
            x,
            z,
            w,
            dx,
            lam,
            u_prev2,
            have_dx,
            sc,
        })
    }
}
