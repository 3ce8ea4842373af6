//! HPCC as the reference implements it (CC_MODE 3, `RdmaHw::UpdateRateHp` in
//! `simulation/src/point-to-point/model/rdma-hw.cc`).
//!
//! The state is a rate: the reference rate `cur_rate` (the paper's Wc) changes once per
//! RTT (a "full" update, when an ACK acknowledges a byte sent after the previous full
//! update), while the sending rate reacts on every ACK from Wc (FAST_REACT). The window is
//! derived from the rate by VAR_WIN (`Qp::window`). Utilisation comes from the INT hop
//! records switches stamp at dequeue; `u` is an EWMA with weight tau/T, tau clipped to T.
//! MULTI_RATE keeps one u, Rc and stage per hop; SAMPLE_FEEDBACK skips hops with an empty
//! queue on fast updates.
//!
//! Deliberate deviation: a hop whose timestamp did not move (tau = 0, possible only for a
//! re-used record) is skipped instead of producing the reference's NaN.

use super::{div, AckEvent, PathInfo};
use crate::fabric::int::{IntHop, MAX_HOPS};
use crate::fabric::IntHeader;
use crate::units::Rate;

/// HPCC parameters (config keys in brackets; defaults are those of the reference's `run.py`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HpccParams {
    /// Target utilisation eta [U_TARGET], 0.95.
    pub eta: f64,
    /// Additive-increase stages before a multiplicative step, maxStage [MI_THRESH], 0.
    pub max_stage: u32,
    /// Additive increase W_AI as a rate [RATE_AI], 50 Mb/s.
    pub rate_ai: Rate,
    /// Rate floor [MIN_RATE], 1000 Mb/s.
    pub min_rate: Rate,
    /// React on every ACK [FAST_REACT], on.
    pub fast_react: bool,
    /// One rate per hop [MULTI_RATE], off.
    pub multi_rate: bool,
    /// Skip empty-queue hops on fast updates [SAMPLE_FEEDBACK], off.
    pub sample_feedback: bool,
}

impl Default for HpccParams {
    fn default() -> Self {
        HpccParams {
            eta: 0.95,
            max_stage: 0,
            rate_ai: Rate::mbps(50),
            min_rate: Rate::mbps(1000),
            fast_react: true,
            multi_rate: false,
            sample_feedback: false,
        }
    }
}

/// Per-hop state of MULTI_RATE.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopState {
    /// Utilisation EWMA of this hop.
    pub u: f64,
    /// Reference rate of this hop.
    pub rc: Rate,
    /// Additive-increase stage of this hop.
    pub stage: u32,
}

/// The sender's state (as the reference's new QP: u = 1, every hop u = 1, stage 0, lastUpdateSeq 0).
#[derive(Clone, Debug, PartialEq)]
pub struct HpccState {
    /// Reference rate Wc.
    pub cur_rate: Rate,
    /// Utilisation EWMA.
    pub u: f64,
    /// Additive-increase stage.
    pub inc_stage: u32,
    /// snd_nxt at the last full update (0: no ACK seen yet).
    pub last_update_seq: u64,
    /// The last INT record seen of each hop.
    pub hops: [IntHop; MAX_HOPS],
    /// MULTI_RATE per-hop state.
    pub per_hop: [HopState; MAX_HOPS],
}

/// Which hops an ACK updated and the per-hop candidates.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    updated: [bool; MAX_HOPS],
    any: bool,
    /// Largest u over hops and its tau (single rate).
    big_u: f64,
    dt: u64,
}

impl HpccState {
    /// The state of a new QP at line rate.
    pub fn new(line: Rate) -> HpccState {
        HpccState {
            cur_rate: line,
            u: 1.0,
            inc_stage: 0,
            last_update_seq: 0,
            hops: [IntHop::default(); MAX_HOPS],
            per_hop: [HopState { u: 1.0, rc: line, stage: 0 }; MAX_HOPS],
        }
    }

    /// An ACK/NACK: returns the new sending rate when one is computed (the caller applies
    /// it with `ChangeRate` semantics).
    pub fn on_ack(&mut self, p: &HpccParams, ack: &AckEvent<'_>, line: Rate, path: PathInfo) -> Option<Rate> {
        let fast = if ack.seq > self.last_update_seq {
            false
        } else if p.fast_react {
            true
        } else {
            return None;
        };
        let ih = ack.int?;
        if self.last_update_seq == 0 {
            // First ACK: only initialise.
            self.last_update_seq = ack.snd_nxt;
            let n = (ih.nhop as usize).min(MAX_HOPS);
            self.hops[..n].copy_from_slice(&ih.hops[..n]);
            return None;
        }
        let mut out = None;
        if ih.nhop as usize <= MAX_HOPS {
            let s = self.sample(p, ih, fast, ack.int_multi, line, path);
            if s.any {
                out = Some(if p.multi_rate {
                    self.multi_rate(p, ih, &s, fast, line)
                } else {
                    self.single_rate(p, &s, fast, line, path)
                });
            }
        }
        if !fast && ack.snd_nxt > self.last_update_seq {
            self.last_update_seq = ack.snd_nxt;
        }
        out
    }

    /// Reads every hop of the ACK against the stored record and stores the new one.
    fn sample(&mut self, p: &HpccParams, ih: &IntHeader, fast: bool, multi: u32, b: Rate, path: PathInfo) -> Sample {
        let mut s = Sample::default();
        let t = path.base_rtt.ns().max(1);
        let (bytes_unit, qlen_unit) = (128 * multi.max(1) as u64, 80 * multi.max(1) as u64);
        for i in 0..ih.nhop as usize {
            let h = ih.hops[i];
            if p.sample_feedback && fast && h.qlen == 0 {
                continue;
            }
            let old = self.hops[i];
            let tau = time_delta(&h, &old);
            if tau == 0 {
                continue;
            }
            s.updated[i] = true;
            s.any = true;
            let line = h.line_rate.max(1) as f64;
            let tx_rate = (bytes_delta(&h, &old) * bytes_unit) as f64 * 8.0 / (tau as f64 * 1e-9);
            let qlen = (h.qlen.min(old.qlen) as u64 * qlen_unit) as f64;
            let w = path.bdp.max(1) as f64;
            let u = tx_rate / line + qlen * b.0 as f64 / line / w;
            if p.multi_rate {
                let tau = tau.min(t);
                let hs = &mut self.per_hop[i];
                hs.u = (hs.u * (t - tau) as f64 + u * tau as f64) / t as f64;
            } else if u > s.big_u {
                s.big_u = u;
                s.dt = tau;
            }
            self.hops[i] = h;
        }
        s
    }

    /// One rate from the most utilised hop: c = u/eta; multiplicative (plus AI) when c >= 1
    /// or the stage reached maxStage, else additive. Full updates commit Wc and the stage.
    fn single_rate(&mut self, p: &HpccParams, s: &Sample, fast: bool, line: Rate, path: PathInfo) -> Rate {
        let t = path.base_rtt.ns().max(1);
        let dt = s.dt.min(t);
        self.u = (self.u * (t - dt) as f64 + s.big_u * dt as f64) / t as f64;
        let (rate, stage) = step(p, self.u, self.cur_rate, self.inc_stage, line);
        if !fast {
            self.cur_rate = rate;
            self.inc_stage = stage;
        }
        rate
    }

    /// MULTI_RATE: each updated hop proposes a rate from its own u, Rc and stage; the
    /// others propose their Rc; the smallest wins. Full updates commit the hops' Rc.
    fn multi_rate(&mut self, p: &HpccParams, ih: &IntHeader, s: &Sample, fast: bool, line: Rate) -> Rate {
        let mut rate = line;
        for i in 0..ih.nhop as usize {
            let hs = &mut self.per_hop[i];
            if !s.updated[i] {
                rate = rate.min(hs.rc);
                continue;
            }
            let (r, stage) = step(p, hs.u, hs.rc, hs.stage, line);
            rate = rate.min(r);
            if !fast {
                hs.rc = r;
                hs.stage = stage;
            }
        }
        rate
    }
}

/// One HPCC step from utilisation `u`, reference rate `rc` and stage: returns the new rate
/// clamped to [min, line] and the new stage (`RdmaHw::UpdateRateHp`; truncation before adding AI).
fn step(p: &HpccParams, u: f64, rc: Rate, stage: u32, line: Rate) -> (Rate, u32) {
    let c = u / p.eta;
    let (r, st) = if c >= 1.0 || stage >= p.max_stage {
        (Rate(div(rc, c).0.saturating_add(p.rate_ai.0)), 0)
    } else {
        (Rate(rc.0 + p.rate_ai.0), stage + 1)
    };
    (r.max(p.min_rate).min(line), st)
}

/// Nanoseconds between two stamps of a hop (24-bit field, one wrap handled).
fn time_delta(new: &IntHop, old: &IntHop) -> u64 {
    (new.time_ns.wrapping_sub(old.time_ns) & 0xFF_FFFF) as u64
}

/// Byte units between two stamps of a hop (20-bit field, one wrap handled).
fn bytes_delta(new: &IntHop, old: &IntHop) -> u64 {
    (new.tx_bytes.wrapping_sub(old.tx_bytes) & 0xF_FFFF) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    const LINE: Rate = Rate::gbps(100);
    const PATH: PathInfo = PathInfo { base_rtt: Time::from_ns(10_000), bdp: 125_000 };

    fn header(time_ns: u32, tx_bytes: u32, qlen: u32) -> IntHeader {
        let mut h = IntHeader::default();
        h.push(IntHop { line_rate: LINE.0, time_ns, tx_bytes, qlen });
        h
    }

    fn ack(seq: u64, snd_nxt: u64, ih: &IntHeader) -> AckEvent<'_> {
        AckEvent {
            now: Time::ZERO,
            seq,
            snd_nxt,
            cnp: false,
            nack: false,
            int: Some(ih),
            mtu: 1000,
            int_multi: 1,
            share: Rate(0),
        }
    }

    #[test]
    fn first_ack_only_initialises() {
        let p = HpccParams::default();
        let mut s = HpccState::new(LINE);
        let h = header(1000, 10, 0);
        assert_eq!(s.on_ack(&p, &ack(1000, 50_000, &h), LINE, PATH), None);
        assert_eq!(s.last_update_seq, 50_000);
        assert_eq!(s.hops[0], h.hops[0]);
        assert_eq!(s.u, 1.0);
    }

    #[test]
    fn full_update_follows_u_over_eta() {
        let p = HpccParams::default();
        let mut s = HpccState::new(LINE);
        s.on_ack(&p, &ack(1000, 50_000, &header(1000, 0, 0)), LINE, PATH);
        // 1000 ns later the hop has sent 50 units of 128 B = 6400 B: txRate = 51.2 Gb/s,
        // u_hop = 0.512, no queue; the EWMA weight is tau/T = 0.1.
        let h = header(2000, 50, 0);
        let r = s.on_ack(&p, &ack(60_000, 70_000, &h), LINE, PATH).unwrap();
        let u = (1.0 * 9000.0 + 0.512 * 1000.0) / 10_000.0;
        assert!((s.u - u).abs() < 1e-12);
        let expect = Rate(((100e9 / (u / 0.95)) as u64 + 50_000_000).min(LINE.0));
        assert_eq!(r, expect);
        assert_eq!(s.cur_rate, expect, "full update commits Wc");
        assert_eq!(s.last_update_seq, 70_000);
    }

    #[test]
    fn fast_update_moves_rate_but_not_wc() {
        let p = HpccParams::default();
        let mut s = HpccState::new(LINE);
        s.on_ack(&p, &ack(1000, 50_000, &header(1000, 0, 0)), LINE, PATH);
        s.cur_rate = Rate::gbps(50);
        // tau = T = 10 us, 7813 units of 128 B sent: u = 0.80005...; the stored qlen was 0,
        // so the queue term min(100, 0) is 0.
        let h = header(11_000, 7813, 100);
        let r = s.on_ack(&p, &ack(2000, 60_000, &h), LINE, PATH).unwrap();
        let tx = 7813.0 * 128.0 * 8.0 / 1e-5 / 1e11;
        let u = tx;
        assert!((s.u - u).abs() < 1e-12);
        assert_eq!(r, Rate((50e9 / (u / 0.95)) as u64 + 50_000_000).min(LINE));
        assert_eq!(s.cur_rate, Rate::gbps(50), "fast update keeps Wc");
        assert_eq!(s.last_update_seq, 50_000);
    }

    #[test]
    fn queue_term_uses_the_smaller_of_two_samples() {
        let p = HpccParams::default();
        let mut s = HpccState::new(LINE);
        s.on_ack(&p, &ack(1000, 50_000, &header(1000, 0, 50)), LINE, PATH);
        s.on_ack(&p, &ack(60_000, 70_000, &header(11_000, 0, 100)), LINE, PATH);
        // min(100, 50) units of 80 B = 4000 B; * B / line / W = 4000 / 125000.
        assert!((s.u - 0.032).abs() < 1e-12, "u = {}", s.u);
    }

    #[test]
    fn additive_branch_below_max_stage() {
        let p = HpccParams { max_stage: 5, ..HpccParams::default() };
        let (r, st) = step(&p, 0.5, Rate::gbps(40), 0, LINE);
        assert_eq!((r, st), (Rate(40_050_000_000), 1));
        let (r, st) = step(&p, 0.5, Rate::gbps(40), 5, LINE);
        assert_eq!((r, st), (Rate((40e9 / (0.5 / 0.95)) as u64 + 50_000_000).min(LINE), 0));
        let (r, _) = step(&p, 10.0, Rate::gbps(1), 0, LINE);
        assert_eq!(r, p.min_rate, "floored");
    }

    #[test]
    fn wrapped_fields() {
        let a = IntHop { line_rate: 1, time_ns: 0xFF_FFF0, tx_bytes: 0xF_FFFE, qlen: 0 };
        let b = IntHop { line_rate: 1, time_ns: 0x10, tx_bytes: 0x2, qlen: 0 };
        assert_eq!(time_delta(&b, &a), 0x20);
        assert_eq!(bytes_delta(&b, &a), 4);
    }

    #[test]
    fn no_fast_react_ignores_old_acks() {
        let p = HpccParams { fast_react: false, ..HpccParams::default() };
        let mut s = HpccState::new(LINE);
        s.on_ack(&p, &ack(1000, 50_000, &header(1000, 0, 0)), LINE, PATH);
        assert_eq!(s.on_ack(&p, &ack(2000, 60_000, &header(2000, 10, 0)), LINE, PATH), None);
        assert_eq!(s.hops[0].time_ns, 1000, "not even stored");
    }
}
