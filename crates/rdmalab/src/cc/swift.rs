//! Swift ("Swift: Delay is Simple and Effective for Congestion Control in the Datacenter",
//! SIGCOMM 2020), the delay-based window algorithm, as htsim's `swift.cpp` runs it.
//!
//! The data packet carries its send time (the NIC's dequeue, as TIMELY's stamp) and the ACK
//! echoes it, so each ACK gives one RTT sample. The window (`cwnd`, bytes of payload) grows
//! additively while the delay is below the target and shrinks multiplicatively, at most once
//! per smoothed RTT, when it is above (the paper's Algorithm 1). The target is the paper's
//! §3.5: a base target, plus a per-hop term, plus a flow-scaling term that grows as the
//! window shrinks, `fs = alpha / sqrt(cwnd / mss) + beta` clamped to `[0, fs_range]`, with
//! `alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))` and
//! `beta = -alpha / sqrt(fs_max_cwnd)`. Below one packet of window the sender paces at
//! `cwnd / rtt` instead (the paper's pacing delay `rtt / cwnd` per packet).
//!
//! Constants are htsim's `SwiftSrc` values (its comments call most of them guesses to be
//! confirmed by experiment); the paper gives the formulas, not numbers for our fabrics.

use super::{AckEvent, LossKind};
use crate::units::{Rate, Time};

/// Swift's parameters (`fabric.cc_params` keys in brackets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwiftParams {
    /// Additive increase in packets per RTT [swift_ai]: 1.0 (htsim `_ai`).
    pub ai: f64,
    /// Multiplicative decrease gain [swift_beta]: 0.8 (htsim `_beta`).
    pub beta: f64,
    /// Largest decrease in one step [swift_max_mdf]: 0.5 (htsim `_max_mdf`).
    pub max_mdf: f64,
    /// Base target delay [swift_base_target]: 20 us (htsim `_base_delay`).
    pub base_target: Time,
    /// Target added per switch on the path [swift_hop_scale]: htsim's `_base_delay / 6.55`,
    /// 3.053 us.
    pub hop_scale: Time,
    /// Flow-scaling range [swift_fs_range]: htsim's `5 * _base_delay`, 100 us.
    pub fs_range: Time,
    /// Window in packets at which the flow-scaling term reaches its range
    /// [swift_fs_min_cwnd]: 0.1 (htsim).
    pub fs_min_cwnd: f64,
    /// Window in packets at which it falls to 0 [swift_fs_max_cwnd]: 100 (htsim).
    pub fs_max_cwnd: f64,
    /// Smallest window, bytes [swift_min_cwnd]: 10 (htsim `_min_cwnd`).
    pub min_cwnd: f64,
    /// Largest window in packets [swift_max_cwnd]: 1000 (htsim `1000 * _mss`).
    pub max_cwnd: f64,
    /// Consecutive timeouts after which the window drops to `min_cwnd`
    /// [swift_retx_reset_threshold]: 5 (htsim `_rtx_reset_threshold`; the paper's
    /// RETX_RESET_THRESHOLD).
    pub retx_reset_threshold: u32,
}

impl Default for SwiftParams {
    fn default() -> Self {
        SwiftParams {
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            base_target: Time::from_us(20),
            hop_scale: Time((20_000_000.0_f64 / 6.55) as u64),
            fs_range: Time::from_us(100),
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            min_cwnd: 10.0,
            max_cwnd: 1000.0,
            retx_reset_threshold: 5,
        }
    }
}

impl SwiftParams {
    /// The paper's §3.5 target for a window of `cwnd` bytes (`mss` bytes a packet) on a
    /// path through `hops` switches.
    pub fn target(&self, cwnd: f64, mss: f64, hops: u32) -> Time {
        let a = self.fs_range.0 as f64 / (1.0 / self.fs_min_cwnd.sqrt() - 1.0 / self.fs_max_cwnd.sqrt());
        let b = -a / self.fs_max_cwnd.sqrt();
        let fs = if cwnd <= 0.0 { 0.0 } else { (a / (cwnd / mss).sqrt() + b).clamp(0.0, self.fs_range.0 as f64) };
        Time(self.base_target.0 + hops as u64 * self.hop_scale.0 + fs as u64)
    }

    /// A value out of its range, as (key, reason).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let positive = [("swift_ai", self.ai), ("swift_min_cwnd", self.min_cwnd), ("swift_max_cwnd", self.max_cwnd)];
        if let Some((k, v)) = positive.iter().find(|(_, v)| !(*v > 0.0 && v.is_finite())) {
            return Err((k, format!("must be a positive number, got {v}")));
        }
        for (k, v) in [("swift_beta", self.beta), ("swift_max_mdf", self.max_mdf)] {
            if !(v > 0.0 && v < 1.0) {
                return Err((k, format!("must lie in (0, 1), got {v}")));
            }
        }
        if !(self.fs_min_cwnd > 0.0 && self.fs_min_cwnd < self.fs_max_cwnd) {
            return Err(("swift_fs_min_cwnd", "must be positive and below swift_fs_max_cwnd".into()));
        }
        if self.retx_reset_threshold == 0 {
            return Err(("swift_retx_reset_threshold", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// One sender's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwiftState {
    /// Congestion window, bytes of payload.
    pub cwnd: f64,
    /// Smoothed RTT (htsim's TCP-like `_rtt`, gain 1/8); zero before the first sample.
    pub srtt: Time,
    /// When the window last shrank.
    pub last_decrease: Time,
    /// Highest cumulative acknowledgement seen.
    pub last_acked: u64,
    /// Timeouts since the last ACK.
    pub retransmit_cnt: u32,
    /// Switches on the path (the paper reads them from the TTL).
    pub hops: u32,
    /// The path's base RTT (the pacing rate's RTT before any sample).
    pub base_rtt: Time,
    /// The hole the last RoCE NACK named (`u64::MAX`: none).
    pub last_hole: u64,
}

impl SwiftState {
    /// A sender starting with a window of `bdp` bytes (the path's bandwidth-delay product:
    /// line rate from the first packet, as every algorithm here starts).
    pub fn new(p: &SwiftParams, bdp: u64, base_rtt: Time) -> SwiftState {
        SwiftState {
            cwnd: (bdp as f64).max(p.min_cwnd),
            srtt: Time::ZERO,
            last_decrease: Time::ZERO,
            last_acked: 0,
            retransmit_cnt: 0,
            hops: 0,
            base_rtt,
            last_hole: u64::MAX,
        }
    }

    fn can_decrease(&self, now: Time) -> bool {
        now.saturating_sub(self.last_decrease) >= self.srtt
    }

    /// Clamps the window and notes a decrease (htsim's `applySwiftLimits`).
    fn limit(&mut self, p: &SwiftParams, prev: f64, now: Time, mss: f64) {
        self.cwnd = self.cwnd.clamp(p.min_cwnd, p.max_cwnd * mss);
        if self.cwnd < prev {
            self.last_decrease = now;
        }
    }

    /// An ACK with its RTT sample (the paper's Algorithm 1, on receiving an ACK).
    pub fn on_ack(&mut self, p: &SwiftParams, ack: &AckEvent<'_>) {
        let newly = ack.seq.saturating_sub(self.last_acked);
        self.last_acked = self.last_acked.max(ack.seq);
        let Some(ih) = ack.int else { return };
        let delay = ack.now.saturating_sub(ih.sent_at);
        let (mss, prev) = (ack.mtu.max(1) as f64, self.cwnd);
        let can_decrease = self.can_decrease(ack.now);
        self.srtt = if self.srtt == Time::ZERO { delay } else { Time(self.srtt.0 - self.srtt.0 / 8 + delay.0 / 8) };
        self.retransmit_cnt = 0;
        let target = p.target(self.cwnd, mss, self.hops);
        if delay < target {
            let n = newly as f64;
            self.cwnd += if self.cwnd >= mss { mss * p.ai * n / self.cwnd } else { p.ai * n };
        } else if can_decrease {
            let cut = 1.0 - p.beta * (delay.0 - target.0) as f64 / delay.0 as f64;
            self.cwnd *= cut.max(1.0 - p.max_mdf);
        }
        self.limit(p, prev, ack.now, mss);
    }

    /// A loss: a NACK (the paper's fast recovery) or a retransmission timeout.
    pub fn on_loss(&mut self, p: &SwiftParams, kind: LossKind, now: Time, mss: u32) {
        if let LossKind::Hole(h) = kind {
            if std::mem::replace(&mut self.last_hole, h) == h {
                return; // a further NACK of a hole already counted
            }
        }
        let timeout = kind == LossKind::Timeout;
        let (mss, prev) = (mss.max(1) as f64, self.cwnd);
        let can_decrease = self.can_decrease(now);
        if timeout {
            self.retransmit_cnt += 1;
            if self.retransmit_cnt >= p.retx_reset_threshold {
                self.cwnd = p.min_cwnd;
            } else if can_decrease {
                self.cwnd *= 1.0 - p.max_mdf;
            }
        } else {
            self.retransmit_cnt = 0;
            if can_decrease {
                self.cwnd *= 1.0 - p.max_mdf;
            }
        }
        self.limit(p, prev, now, mss);
    }

    /// The rate: the line, or `cwnd / rtt` below one packet of window (the paper's pacing).
    pub fn rate(&self, line: Rate, mss: u32) -> Rate {
        if self.cwnd >= mss as f64 {
            return line;
        }
        let rtt = if self.srtt == Time::ZERO { self.base_rtt } else { self.srtt };
        let bps = self.cwnd * 8.0 * 1e12 / rtt.0.max(1) as f64;
        Rate((bps as u64).clamp(1, line.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::IntHeader;

    const MSS: u32 = 1000;

    fn ack(now_us: u64, rtt_us: u64, seq: u64, ih: &mut IntHeader) -> AckEvent<'_> {
        ih.sent_at = Time::from_us(now_us - rtt_us);
        AckEvent {
            now: Time::from_us(now_us),
            seq,
            snd_nxt: seq,
            cnp: false,
            nack: false,
            int: Some(ih),
            mtu: MSS,
            int_multi: 1,
            share: Rate(0),
        }
    }

    #[test]
    fn target_follows_the_papers_flow_scaling() {
        let p = SwiftParams::default();
        // At fs_max_cwnd packets the flow-scaling term is 0; at fs_min_cwnd it is the range.
        assert_eq!(p.target(100.0 * 1000.0, 1000.0, 0), Time::from_us(20));
        let at_min = p.target(0.1 * 1000.0, 1000.0, 0).0 as f64;
        assert!((at_min - 120e6).abs() < 2.0, "{at_min}");
        // Two switches add 2 h; a 25-packet window adds alpha/5 + beta, by hand:
        // alpha = 100 us / (1/sqrt(0.1) - 1/sqrt(100)) = 100 / 3.0623 = 32.655 us, beta = -3.2655 us.
        let t = p.target(25_000.0, 1000.0, 2).0 as f64 / 1e6;
        let expect = 20.0 + 2.0 * 20.0 / 6.55 + (100.0 / (1.0 / 0.1f64.sqrt() - 0.1)) * (1.0 / 5.0 - 1.0 / 10.0);
        assert!((t - expect).abs() < 1e-3, "{t} vs {expect}");
    }

    #[test]
    fn below_target_grows_by_ai_packets_per_window_acked() {
        let p = SwiftParams::default();
        let mut s = SwiftState::new(&p, 50_000, Time::from_us(5));
        let mut ih = IntHeader::default();
        // 50 packets' worth acknowledged at a low delay: cwnd += mss * ai * 50000 / 50000.
        s.on_ack(&p, &ack(100, 10, 50_000, &mut ih));
        assert!((s.cwnd - 51_000.0).abs() < 1e-9, "{}", s.cwnd);
        assert_eq!(s.srtt, Time::from_us(10));
    }

    #[test]
    fn above_target_cuts_once_per_rtt_by_beta_times_the_excess() {
        let p = SwiftParams::default();
        let mut s = SwiftState::new(&p, 100_000, Time::from_us(5));
        let mut ih = IntHeader::default();
        // 100 packets: target is the base 20 us; an RTT of 40 us cuts by 0.8 * 20/40 = 0.4.
        s.on_ack(&p, &ack(100, 40, 1000, &mut ih));
        assert!((s.cwnd - 60_000.0).abs() < 1e-6, "{}", s.cwnd);
        // Within one smoothed RTT of that cut, no second cut.
        s.on_ack(&p, &ack(110, 40, 2000, &mut ih));
        assert!((s.cwnd - 60_000.0).abs() < 1e-6);
        // A huge delay is capped at max_mdf: at most halved.
        s.on_ack(&p, &ack(20_000, 10_000, 3000, &mut ih));
        let t = p.target(60_000.0, 1000.0, 0);
        assert!(t < Time::from_us(10_000));
        assert!((s.cwnd - 30_000.0).abs() < 1e-6, "{}", s.cwnd);
    }

    #[test]
    fn losses_halve_and_repeated_timeouts_reset() {
        let p = SwiftParams::default();
        let mut s = SwiftState::new(&p, 80_000, Time::from_us(5));
        s.on_loss(&p, LossKind::Hole(7), Time::from_us(10), MSS);
        s.on_loss(&p, LossKind::Hole(7), Time::from_us(500), MSS); // the same hole again: nothing
        assert_eq!(s.cwnd, 40_000.0);
        for i in 1..=5 {
            s.on_loss(&p, LossKind::Timeout, Time::from_us(10 + 100 * i), MSS);
        }
        assert_eq!(s.cwnd, p.min_cwnd, "the fifth timeout in a row drops to min_cwnd");
    }

    #[test]
    fn below_one_packet_it_paces_at_cwnd_per_rtt() {
        let p = SwiftParams::default();
        let mut s = SwiftState::new(&p, 500, Time::from_us(8));
        assert_eq!(s.rate(Rate::gbps(100), MSS), Rate(500 * 8 * 1_000_000 / 8)); // 500 B per 8 us
        s.cwnd = 2000.0;
        assert_eq!(s.rate(Rate::gbps(100), MSS), Rate::gbps(100));
    }
}
