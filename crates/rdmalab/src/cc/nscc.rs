//! NSCC, the Ultra Ethernet transport's network-signal (sender) congestion control, from
//! SMaRTT ("SMaRTT-REPS: Sender-based Marked Rapidly-adapting Trimmed & Timed Transport with
//! Recycled Entropies", arXiv 2404.01630) as htsim's UEC sender (`uec.cpp`,
//! `updateCwndOnAck_NSCC`, `updateCwndOnNack_NSCC`, `initNsccParams`) runs it.
//!
//! A window (`cwnd`, bytes) moves on two signals per ACK, the ECN echo and the queueing
//! delay (`rtt - base_rtt`, the base the smallest RTT seen), in four quadrants:
//!
//! | ECN | delay vs target | action |
//! |---|---|---|
//! | no | at or above | fair increase: `fi` bytes per window acknowledged |
//! | no | below | proportional increase, `alpha * (target - delay)` per window; on a near-empty path (delay < 1 us for a whole window) fast increase, `fi_scale` per byte acknowledged |
//! | yes | at or above | multiplicative decrease, once per base RTT: `cwnd *= max(1 - gamma (avg - target) / avg, 0.5)` on the delay's moving average |
//! | yes | below | nothing (the path, not the window, is at fault) |
//!
//! Increases are gathered and applied every `8 MTU` acknowledged or every network RTT
//! (`fulfill_adjustment`), with `eta` more per network RTT. QuickAdapt: once per
//! `base_rtt + target`, if a loss (a NACK of a trimmed packet, a timeout) was seen or the
//! delay passed `4 x target`, and the bytes delivered in that period are below
//! `maxwnd / 2^qa_gate`, the window drops to those bytes; the marked ACKs of packets already
//! in flight are then ignored. A NACK takes its packet's bytes off the window.
//!
//! The constants scale with the fabric: `a = BDP / (100 Gb/s x 12 us)` and
//! `b = target / 12 us` (the reference network of `initNsccParams`); `alpha = 4 mss a b /
//! target`, `fi = 5 mss a`, `eta = 0.15 mss a`, `fi_scale = 0.25 a`, `gamma = 0.8`, the
//! delay average's gain 0.0125, the window's bounds one MTU and 1.5 BDP, a start at 1.5 BDP.

use super::{AckEvent, LossKind};
use crate::units::{Rate, Time};

/// The reference network of htsim's `initNsccParams`: 100 Gb/s and 12 us.
const REF_RATE: Rate = Rate::gbps(100);
const REF_RTT: Time = Time::from_us(12);
/// Below this queueing delay the path counts as empty (fast increase; htsim `timeFromUs(1u)`).
const EMPTY_DELAY: Time = Time::from_us(1);

/// NSCC's parameters (`fabric.cc_params` keys in brackets).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NsccParams {
    /// Target queueing delay [nscc_target_qdelay]; `None`: the network RTT (three quarters
    /// of it when the fabric trims, `trimming`), as `initNsccParams` chooses.
    pub target_qdelay: Option<Time>,
    /// The network RTT the constants scale with [nscc_network_rtt]; `None`: the
    /// connection's own base RTT.
    pub network_rtt: Option<Time>,
    /// The fabric trims packets (sets the default target).
    pub trimming: bool,
    /// Multiplicative decrease gain [nscc_gamma]: 0.8.
    pub gamma: f64,
    /// Gain of the delay's moving average [nscc_delay_gain]: 0.0125.
    pub delay_gain: f64,
    /// QuickAdapt acts only when the bytes delivered in its period are below
    /// `maxwnd / 2^qa_gate` [nscc_qa_gate]: 3.
    pub qa_gate: u32,
    /// QuickAdapt on [nscc_quick_adapt]: true.
    pub quick_adapt: bool,
    /// Largest window in BDPs, also the first [nscc_max_window]: 1.5.
    pub max_window: f64,
}

impl Default for NsccParams {
    fn default() -> Self {
        NsccParams {
            target_qdelay: None,
            network_rtt: None,
            trimming: false,
            gamma: 0.8,
            delay_gain: 0.0125,
            qa_gate: 3,
            quick_adapt: true,
            max_window: 1.5,
        }
    }
}

impl NsccParams {
    /// A value out of its range, as (key, reason).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.gamma > 0.0 && self.gamma < 1.0) {
            return Err(("nscc_gamma", format!("must lie in (0, 1), got {}", self.gamma)));
        }
        if !(self.max_window >= 1.0 && self.max_window.is_finite()) {
            return Err(("nscc_max_window", format!("must be at least 1 (BDP), got {}", self.max_window)));
        }
        if self.qa_gate > 30 {
            return Err(("nscc_qa_gate", format!("must be at most 30, got {}", self.qa_gate)));
        }
        Ok(())
    }
}

/// One sender's state.
#[derive(Clone, Debug, PartialEq)]
pub struct NsccState {
    /// Congestion window, bytes.
    pub cwnd: f64,
    /// Its upper bound (`max_window` BDPs at the base RTT).
    pub maxwnd: f64,
    /// Smallest RTT seen.
    pub base_rtt: Time,
    /// The delay's moving average, ps.
    pub avg_delay: f64,
    /// Target queueing delay.
    pub target: Time,
    /// The network RTT the constants scale with.
    pub network_rtt: Time,
    /// The scale factors `a` (BDP over the reference's) and `b` (target over 12 us).
    pub a: f64,
    /// See `a`.
    pub b: f64,
    line: Rate,
    acked: u64,
    achieved: u64,
    received: u64,
    ignored: u64,
    to_ignore: u64,
    inc_bytes: f64,
    fi_count: u64,
    increasing: bool,
    trigger_qa: bool,
    qa_end: Time,
    last_dec: Time,
    last_adjust: Time,
    last_hole: u64,
}

impl NsccState {
    /// A sender on a path of base RTT `base_rtt` at `line`, window at its largest.
    pub fn new(p: &NsccParams, line: Rate, base_rtt: Time) -> NsccState {
        let network_rtt = p.network_rtt.unwrap_or(base_rtt);
        let target = p.target_qdelay.unwrap_or(if p.trimming { Time(network_rtt.0 * 3 / 4) } else { network_rtt });
        let a = (network_rtt.0 as f64 * line.0 as f64) / (REF_RTT.0 as f64 * REF_RATE.0 as f64);
        let maxwnd = p.max_window * bdp(base_rtt, line);
        NsccState {
            cwnd: maxwnd,
            maxwnd,
            base_rtt,
            avg_delay: 0.0,
            target,
            network_rtt,
            a,
            b: target.0 as f64 / REF_RTT.0 as f64,
            line,
            acked: 0,
            achieved: 0,
            received: 0,
            ignored: 0,
            to_ignore: 0,
            inc_bytes: 0.0,
            fi_count: 0,
            increasing: false,
            trigger_qa: false,
            qa_end: Time::ZERO,
            last_dec: Time::ZERO,
            last_adjust: Time::ZERO,
            last_hole: u64::MAX,
        }
    }

    fn bounds(&mut self, mtu: f64) {
        self.cwnd = self.cwnd.min(self.maxwnd).max(mtu);
    }

    fn update_avg(&mut self, p: &NsccParams, delay: Time, ecn: bool) {
        let (d, base) = (delay.0 as f64, self.base_rtt.0 as f64);
        let g = p.delay_gain;
        self.avg_delay = if !ecn && delay > self.target {
            g * base * 0.25 + (1.0 - g) * self.avg_delay
        } else if d > 5.0 * base {
            // A fixed gain, not `delay_gain`: htsim's UEC sender averages a delay above five
            // base RTTs with 0.0125 whatever its `_delay_alpha` (UecSrc's delay update).
            0.0125 * d + (1.0 - 0.0125) * self.avg_delay
        } else {
            g * d + (1.0 - g) * self.avg_delay
        };
    }

    /// QuickAdapt; true when it acted or the ACK is to be ignored. `alarm`: a loss, or a
    /// delay above four times the target.
    fn quick_adapt(&mut self, p: &NsccParams, alarm: bool, ecn: bool, now: Time, in_flight: u64, mtu: f64) -> bool {
        if !p.quick_adapt {
            return false;
        }
        let mut done = false;
        if self.ignored < self.to_ignore && ecn {
            done = true;
        } else if now > self.qa_end {
            let gate = (self.achieved as f64) < self.maxwnd / (1u64 << p.qa_gate) as f64;
            let signal = self.trigger_qa || alarm;
            if self.qa_end != Time::ZERO && signal && gate {
                self.cwnd = (self.achieved as f64).max(mtu);
                self.to_ignore = in_flight;
                self.ignored = 0;
                self.trigger_qa = false;
                done = true;
            }
            self.achieved = 0;
            self.qa_end = now + self.base_rtt + self.target;
        }
        if done {
            self.inc_bytes = 0.0;
            self.received = 0;
        }
        done
    }

    /// An ACK: its ECN echo and RTT sample move the window.
    pub fn on_ack(&mut self, p: &NsccParams, ack: &AckEvent<'_>) {
        let newly = ack.seq.saturating_sub(self.acked);
        self.acked = self.acked.max(ack.seq);
        self.achieved += newly;
        self.received += newly;
        self.ignored += newly;
        let Some(ih) = ack.int else { return };
        let (now, mtu, ecn) = (ack.now, ack.mtu.max(1) as f64, ack.cnp);
        let raw = now.saturating_sub(ih.sent_at);
        if raw < self.base_rtt {
            self.base_rtt = raw;
            self.maxwnd = p.max_window * bdp(raw, self.line);
        }
        let delay = raw.saturating_sub(self.base_rtt);
        self.update_avg(p, delay, ecn);
        let in_flight = ack.snd_nxt.saturating_sub(ack.seq);
        if self.quick_adapt(p, delay.0 > 4 * self.target.0, ecn, now, in_flight, mtu) {
            return;
        }
        let n = newly as f64;
        match (ecn, delay >= self.target) {
            (false, true) => self.inc_bytes += 5.0 * mtu * self.a * n, // fair increase
            (false, false) => {
                self.fast_increase(newly, delay, mtu);
                if !self.increasing {
                    let alpha = 4.0 * mtu * self.a * self.b / self.target.0 as f64;
                    self.inc_bytes += alpha * n * (self.target.0 - delay.0) as f64;
                }
            }
            (true, true) => self.multiplicative_decrease(p, now, mtu),
            (true, false) => {}
        }
        self.bounds(mtu);
        if self.received as f64 > 8.0 * mtu || now.saturating_sub(self.last_adjust) > self.network_rtt {
            self.cwnd += self.inc_bytes / self.cwnd;
            if now.saturating_sub(self.last_adjust) >= self.network_rtt {
                self.cwnd += 0.15 * mtu * self.a; // eta
                self.last_adjust = now;
            }
            self.inc_bytes = 0.0;
            self.received = 0;
        }
        self.bounds(mtu);
    }

    fn fast_increase(&mut self, newly: u64, delay: Time, mtu: f64) {
        if delay < EMPTY_DELAY {
            self.fi_count += newly;
            if self.fi_count as f64 > self.cwnd || self.increasing {
                self.cwnd += newly as f64 * 0.25 * self.a;
                self.increasing = true;
                return;
            }
        } else {
            self.fi_count = 0;
        }
        let _ = mtu;
        self.increasing = false;
    }

    fn multiplicative_decrease(&mut self, p: &NsccParams, now: Time, mtu: f64) {
        self.increasing = false;
        self.fi_count = 0;
        let target = self.target.0 as f64;
        if self.avg_delay > target && now.saturating_sub(self.last_dec) > self.base_rtt {
            self.cwnd *= (1.0 - p.gamma * (self.avg_delay - target) / self.avg_delay).max(0.5);
            self.cwnd = self.cwnd.max(mtu);
            self.last_dec = now;
        }
    }

    /// A loss of `bytes`: a NACK (a trimmed or dropped packet) or a timeout.
    pub fn on_loss(&mut self, p: &NsccParams, bytes: u64, kind: LossKind, now: Time, in_flight: u64, mtu: u32) {
        let mtu = mtu.max(1) as f64;
        if let LossKind::Hole(h) = kind {
            if std::mem::replace(&mut self.last_hole, h) == h {
                return; // a further NACK of a hole already counted
            }
        }
        if kind == LossKind::Timeout {
            self.cwnd = (self.cwnd - bytes as f64).max(mtu); // mark_packet_for_retransmission
            return;
        }
        self.ignored += bytes;
        let sample = self.network_rtt;
        self.update_avg(p, sample, true);
        self.trigger_qa = true;
        if !self.quick_adapt(p, true, true, now, in_flight, mtu) {
            self.cwnd -= bytes as f64;
            self.bounds(mtu);
        }
    }
}

/// Bytes `line` carries in `rtt`.
fn bdp(rtt: Time, line: Rate) -> f64 {
    rtt.0 as f64 * line.0 as f64 / 8e12
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::IntHeader;

    const MTU: u32 = 1000;
    const LINE: Rate = Rate::gbps(100);

    fn ack(now_ns: u64, rtt_ns: u64, seq: u64, ecn: bool, ih: &mut IntHeader) -> AckEvent<'_> {
        ih.sent_at = Time::from_ns(now_ns - rtt_ns);
        AckEvent {
            now: Time::from_ns(now_ns),
            seq,
            snd_nxt: seq + 50_000,
            cnp: ecn,
            nack: false,
            int: Some(ih),
            mtu: MTU,
            int_multi: 1,
            share: Rate(0),
        }
    }

    /// A state on a 12 us path at 100G (the reference network: a = 1, b = 1).
    fn reference() -> (NsccParams, NsccState) {
        let p = NsccParams { quick_adapt: false, ..NsccParams::default() };
        let s = NsccState::new(&p, LINE, Time::from_us(12));
        (p, s)
    }

    #[test]
    fn constants_scale_with_the_reference_network() {
        let (_, s) = reference();
        assert_eq!((s.a, s.b, s.target), (1.0, 1.0, Time::from_us(12)));
        assert!((s.maxwnd - 1.5 * 150_000.0).abs() < 1e-6 && s.cwnd == s.maxwnd);
        let t =
            NsccState::new(&NsccParams { trimming: true, ..NsccParams::default() }, Rate::gbps(400), Time::from_us(6));
        assert_eq!(t.target, Time::from_ns(4_500)); // three quarters of the RTT when trimming
        assert!((t.a - 2.0).abs() < 1e-12 && (t.b - 0.375).abs() < 1e-12);
    }

    #[test]
    fn unmarked_at_target_adds_fi_per_window() {
        let (p, mut s) = reference();
        s.cwnd = 100_000.0;
        let mut ih = IntHeader::default();
        s.on_ack(&p, &ack(1_000_000, 12_000 + 12_000, 1, false, &mut ih)); // arms the adjust clock
        let before = s.cwnd;
        s.last_adjust = Time::from_ns(1_000_000);
        // A window's worth (100 kB) at delay = target: inc = fi * 100 kB, applied as / cwnd.
        s.on_ack(&p, &ack(1_001_000, 24_000, 100_001, false, &mut ih));
        let fi = 5.0 * 1000.0;
        assert!((s.cwnd - (before + fi * 100_000.0 / before)).abs() < 1e-6, "{} vs {before}", s.cwnd);
    }

    #[test]
    fn unmarked_below_target_adds_in_proportion_to_the_gap() {
        let (p, mut s) = reference();
        s.cwnd = 100_000.0;
        s.last_adjust = Time::from_ns(1_000_000);
        s.acked = 1;
        let mut ih = IntHeader::default();
        // Delay 6 us = target / 2 (not empty: no fast increase): alpha * 6 us per byte.
        s.on_ack(&p, &ack(1_001_000, 18_000, 10_001, false, &mut ih));
        let alpha = 4.0 * 1000.0 / 12e6;
        let expect = 100_000.0 + alpha * 10_000.0 * 6e6 / 100_000.0;
        assert!((s.cwnd - expect).abs() < 1e-6, "{} vs {expect}", s.cwnd);
    }

    #[test]
    fn marked_above_target_cuts_by_gamma_on_the_average_once_per_rtt() {
        let (p, mut s) = reference();
        s.cwnd = 100_000.0;
        s.avg_delay = 24e6; // twice the target
        s.last_adjust = Time::from_ns(1_000_000); // no eta step inside this test
        let mut ih = IntHeader::default();
        s.on_ack(&p, &ack(1_000_000, 12_000 + 24_000, 1, true, &mut ih));
        let avg = 0.0125 * 24e6 + 0.9875 * 24e6;
        let expect = 100_000.0 * (1.0 - 0.8 * (avg - 12e6) / avg);
        assert!((s.cwnd - expect).abs() < 1e-6, "{} vs {expect}", s.cwnd);
        s.on_ack(&p, &ack(1_005_000, 36_000, 2, true, &mut ih));
        assert!((s.cwnd - expect).abs() < 1e-6, "a second cut within a base RTT");
        // Marked below target: no change at all.
        s.last_adjust = Time::from_ns(1_100_000);
        s.on_ack(&p, &ack(1_100_000, 12_500, 3, true, &mut ih));
        assert!((s.cwnd - expect).abs() < 1e-6);
    }

    #[test]
    fn a_nack_takes_its_bytes_off_and_quick_adapt_drops_to_what_was_delivered() {
        let (p, mut s) = reference();
        s.cwnd = 100_000.0;
        s.on_loss(&p, 1000, LossKind::Packet, Time::from_us(10), 0, MTU);
        assert_eq!(s.cwnd, 99_000.0);
        s.on_loss(&p, 1000, LossKind::Timeout, Time::from_us(11), 0, MTU);
        assert_eq!(s.cwnd, 98_000.0);
        // With QuickAdapt: a period delivering 20 kB (< 225 kB / 8), then a NACK after it.
        let q = NsccParams::default();
        let mut s = NsccState::new(&q, LINE, Time::from_us(12));
        let mut ih = IntHeader::default();
        s.on_ack(&q, &ack(12_000, 12_000, 0, false, &mut ih)); // opens the first period
        let end = s.qa_end;
        assert_eq!(end, Time::from_us(36));
        s.on_ack(&q, &ack(20_000, 12_000, 20_000, false, &mut ih));
        s.on_loss(&q, 1000, LossKind::Hole(3), end + Time::from_ns(1), 7_000, MTU);
        assert_eq!(s.cwnd, 20_000.0);
        assert_eq!((s.to_ignore, s.ignored), (7_000, 0));
    }
}
