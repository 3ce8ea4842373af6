//! The m4 fork's switch buffer (`MmuRule::M4`, docs/hpcc-dialects.md cites the fork's lines).
//!
//! The fork runs a SONiC-style MMU with dynamic thresholds. As its main program configures
//! it for the HPCC experiments:
//!
//! - classes 0 and 3 are lossless; each (port, class) of the two owns a headroom of
//!   `2 · (payload + 48) + 3860 + 2 · min(rate, 10 Gb/s) · delay / 8` bytes (`m4_headroom`);
//! - the ingress pool is the buffer less the sum of those headrooms, the sum capped at 80 %
//!   of the buffer; the headroom pool is the uncapped sum;
//! - no reserves; every alpha is 1 (the fork reads them from `mix_m3/alphas`, and its
//!   published logs print 1 for all eight), so a queue's PFC threshold is what remains of
//!   the ingress pool after the bytes not in headroom;
//! - a packet that finds its queue (all its bytes, headroom included) over the threshold
//!   goes into headroom whole, and so does every later one until the headroom drains; a
//!   queue with headroom in use pauses its upstream;
//! - a packet is dropped when its queue's headroom is in use and would overflow, when the
//!   headroom pool would overflow, or when the switch's bytes would pass the buffer;
//! - a paused queue resumes when its headroom is empty and it holds under 1,248 bytes, or
//!   2,496 bytes less than the threshold.
//!
//! Here `SwitchMmu::shared_used` counts every byte not in headroom, `ClassAcct::ingress`
//! a queue's bytes not in headroom and `ClassAcct::headroom` its headroom (0 for the lossy
//! classes, which the fork gives none).

use super::{Admission, ClassAcct, MmuConfig, PortParams, SwitchMmu};
use crate::fabric::NUM_PRIOS;
use crate::units::Rate;

/// The fork's resume levels: `xon` and `xon_offset`, its defaults (`SwitchMmu()`).
const XON: u64 = 1248;
const XON_OFFSET: u64 = 2496;
/// The rate the fork's headroom formula caps a port's rate at (`max_rate_int`).
const MAX_RATE_INT: u64 = 10_000_000_000;

/// A switch's pools under the m4 rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct M4Pools {
    /// The buffer (`bufferPool`).
    pub buffer: u64,
    /// The buffer less the capped headroom (`ingressPool`).
    pub ingress_pool: u64,
    /// The uncapped sum of every (port, lossless class) headroom (`xoffTotal`).
    pub headroom_total: u64,
    /// Headroom bytes in use over the switch (`xoffTotalUsed`).
    pub headroom_used: u64,
}

/// The fork's headroom of one (port, lossless class): computed in `double` and truncated,
/// as its main program does.
pub fn m4_headroom(payload: u32, rate: Rate, delay_ns: u64) -> u64 {
    let fixed = (u64::from(payload) + 48) * 2 + 3860;
    let flight = (2 * rate.0.min(MAX_RATE_INT)) as f64 * (delay_ns as f64 / 1e9) / 8.0;
    (fixed as f64 + flight) as u32 as u64
}

/// Whether class `q` is one of the fork's lossless classes.
fn lossless_class(q: usize) -> bool {
    q == 0 || q == 3
}

pub(super) fn new(cfg: MmuConfig, payload: u32, ports: &[(Rate, u64)]) -> SwitchMmu {
    let pfc = cfg.pfc_classes.unwrap_or(if cfg.lossless { u8::MAX } else { 0 });
    let mut total = 0u64;
    // Every class's records from the start: the fork's headroom differs by class.
    let (mut params, mut acct) = (Vec::with_capacity(ports.len()), Vec::with_capacity(ports.len() * NUM_PRIOS));
    for &(rate, delay_ns) in ports {
        let xoff = m4_headroom(payload, rate, delay_ns);
        for q in 0..NUM_PRIOS {
            let mut c = ClassAcct { pfc: pfc & (1 << q) != 0, ..ClassAcct::default() };
            if lossless_class(q) {
                c.headroom = xoff;
                total += xoff;
            }
            acct.push(c);
        }
        params.push(PortParams { headroom: xoff, shift: 0 });
    }
    let capped = total.min((cfg.buffer as f64 * 0.8) as u64);
    let ingress_pool = cfg.buffer - capped;
    let m4 = M4Pools { buffer: cfg.buffer, ingress_pool, headroom_total: total, headroom_used: 0 };
    let cfg = MmuConfig { reserve: 0, ..cfg };
    SwitchMmu { m4: Some(m4), ..SwitchMmu::with_records(cfg, ingress_pool, pfc, params, acct) }
}

impl SwitchMmu {
    /// The m4 fork's pools, under `MmuRule::M4`.
    pub fn m4_pools(&self) -> Option<M4Pools> {
        self.m4
    }

    /// `admit` under the m4 rule.
    #[inline(never)]
    pub(super) fn admit_m4(&mut self, p: usize, q: usize, size: u64) -> Admission {
        let i = self.index(p, q);
        let m = self.m4.as_mut().expect("m4 pools");
        let c = &mut self.acct[i];
        let total = self.shared_used + m.headroom_used;
        let in_hdrm = c.hdrm > 0;
        // The queue's headroom in use and full, or the headroom pool full (each only once
        // the queue is in headroom), or the ingress pool and headroom, or the buffer, full.
        let refused = (in_hdrm && (c.hdrm + size > c.headroom || m.headroom_used + size > m.headroom_total))
            || total + size > m.ingress_pool + m.headroom_total
            || total + size > m.buffer;
        if refused {
            return Admission::Drop;
        }
        // The threshold with this packet counted (the fork adds it to its total first).
        let th = m.ingress_pool.saturating_sub(self.shared_used + size);
        if in_hdrm || c.ingress + size > th {
            c.hdrm += size;
            m.headroom_used += size;
        } else {
            c.ingress += size;
            self.shared_used += size;
        }
        let pause = c.pfc && !c.paused && c.hdrm > 0;
        if pause {
            c.paused = true;
        }
        Admission::Accept { pause }
    }

    /// `release` under the m4 rule.
    #[inline(never)]
    pub(super) fn release_m4(&mut self, p: usize, q: usize, size: u64) -> bool {
        let i = self.index(p, q);
        let m = self.m4.as_mut().expect("m4 pools");
        let c = &mut self.acct[i];
        let from_hdrm = size.min(c.hdrm);
        c.hdrm -= from_hdrm;
        m.headroom_used -= from_hdrm;
        let rest = (size - from_hdrm).min(c.ingress);
        c.ingress -= rest;
        self.shared_used -= rest;
        if c.paused && c.hdrm == 0 {
            let th = m.ingress_pool.saturating_sub(self.shared_used);
            if c.ingress < XON || c.ingress + XON_OFFSET <= th {
                c.paused = false;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::mmu::MmuRule;

    fn fat_tree_switch() -> SwitchMmu {
        // m4's published demo 0: 159 KiB buffers, 20 ports of 10 Gb/s and 1 us.
        let cfg = MmuConfig { buffer: 159 * 1024, rule: MmuRule::M4 { payload: 1000 }, ..MmuConfig::default() };
        SwitchMmu::new(cfg, &[(Rate::gbps(10), 1000); 20])
    }

    #[test]
    fn pools_are_the_ones_the_forks_log_prints() {
        // Its log_sim.txt: "total headroom: 130252 ingressPool 32564" on every switch.
        let m = fat_tree_switch().m4_pools().unwrap();
        assert_eq!(m4_headroom(1000, Rate::gbps(10), 1000), 2 * 1048 + 3860 + 2500);
        assert_eq!(m.buffer - m.ingress_pool, 130_252);
        assert_eq!(m.ingress_pool, 32_564);
        assert_eq!(m.headroom_total, 20 * 2 * 8456);
    }

    #[test]
    fn a_queue_pauses_past_the_remaining_pool_and_resumes_below_it() {
        let mut m = fat_tree_switch();
        // 32,564 bytes of ingress pool: one queue alone passes half of what remains, with
        // its own bytes counted, after 16 packets of 1,048 bytes (16,768 > 32,564 - 16,768).
        let mut paused_at = None;
        for i in 1..=40 {
            if let Admission::Accept { pause: true } = m.admit(1, 3, 1048) {
                paused_at = Some(i);
                break;
            }
        }
        assert_eq!(paused_at, Some(16));
        assert_eq!(m.record(1, 3).hdrm, 1048);
        // Headroom in use: every later packet goes there too, up to its 8,456 bytes.
        for _ in 0..7 {
            assert_eq!(m.admit(1, 3, 1048), Admission::Accept { pause: false });
        }
        assert_eq!(m.admit(1, 3, 1048), Admission::Drop, "8 x 1,048 > 8,456");
        // Draining: the headroom first; resume once under the threshold by 2,496 bytes.
        let mut resumed_after = None;
        for i in 1..=23 {
            if m.release(1, 3, 1048) {
                resumed_after = Some(i);
                break;
            }
        }
        // 8 packets empty the headroom; 15 remain (15,720 B), threshold 32,564 - 15,720:
        // 15,720 + 2,496 > 16,844 until 14 remain (14,672 + 2,496 <= 17,892).
        assert_eq!(resumed_after, Some(9));
    }

    #[test]
    fn a_lossy_fabric_never_pauses_and_drops_when_headroom_overflows() {
        let cfg = MmuConfig { lossless: false, ..fat_tree_switch().cfg };
        let mut m = SwitchMmu::new(cfg, &[(Rate::gbps(10), 1000); 20]);
        let got: Vec<_> = (0..30).map(|_| m.admit(2, 3, 1048)).collect();
        assert!(got.iter().all(|a| *a != Admission::Accept { pause: true }));
        // 15 packets in the pool, 8 in headroom (the fork accounts headroom without PFC too).
        assert_eq!(got.iter().filter(|a| **a == Admission::Drop).count(), 30 - 15 - 8);
    }
}
