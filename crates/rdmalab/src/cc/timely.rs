//! TIMELY as the reference implements it (CC_MODE 7, `RdmaHw::UpdateRateTimely`): RTT-gradient rate
//! control. The data packet carries its send timestamp (set when the NIC dequeues it,
//! 8 bytes of header) and the ACK echoes it. The rate changes only on ACKs that
//! acknowledge a byte sent after the previous update (about once per RTT); the
//! reference's fast reaction is a no-op.

use super::{scale, AckEvent};
use crate::units::Rate;

/// TIMELY parameters. The step sizes are config keys; the rest are the reference's fixed
/// attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelyParams {
    /// Additive step for the first 5 increases [RATE_AI], 20 Mb/s (run.py's DCQCN value).
    pub rate_ai: Rate,
    /// Step from the 6th consecutive increase on [RATE_HAI], 200 Mb/s.
    pub rate_hai: Rate,
    /// Rate floor [MIN_RATE], 1000 Mb/s.
    pub min_rate: Rate,
    /// RTT-difference EWMA weight, 0.875.
    pub alpha: f64,
    /// Multiplicative decrease factor, 0.8.
    pub beta: f64,
    /// Below this RTT always increase, ns: 50,000.
    pub t_low_ns: u64,
    /// Above this RTT always decrease, ns: 500,000.
    pub t_high_ns: u64,
    /// Gradient normaliser, ns: 20,000.
    pub min_rtt_ns: u64,
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            rate_ai: Rate::mbps(20),
            rate_hai: Rate::mbps(200),
            min_rate: Rate::mbps(1000),
            alpha: 0.875,
            beta: 0.8,
            t_low_ns: 50_000,
            t_high_ns: 500_000,
            min_rtt_ns: 20_000,
        }
    }
}

/// The sender's state (as the reference's new QP: curRate = line, rttDiff = 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelyState {
    /// Reference rate.
    pub cur_rate: Rate,
    /// Consecutive increases.
    pub inc_stage: u32,
    /// snd_nxt at the last update (0: none yet).
    pub last_update_seq: u64,
    /// RTT measured at the last update, ns.
    pub last_rtt_ns: u64,
    /// EWMA of RTT differences, ns.
    pub rtt_diff: f64,
}

impl TimelyState {
    /// The state of a new QP at line rate.
    pub fn new(line: Rate) -> TimelyState {
        TimelyState { cur_rate: line, inc_stage: 0, last_update_seq: 0, last_rtt_ns: 0, rtt_diff: 0.0 }
    }

    /// An ACK/NACK: update the rate once per RTT from the echoed timestamp.
    pub fn on_ack(&mut self, p: &TimelyParams, rate: &mut Rate, line: Rate, ack: &AckEvent<'_>) {
        if ack.seq <= self.last_update_seq {
            return;
        }
        let Some(ih) = ack.int else { return };
        let rtt = ack.now.ns().saturating_sub(ih.sent_at.ns());
        if self.last_update_seq != 0 {
            self.update(p, rate, line, rtt);
        }
        if ack.snd_nxt > self.last_update_seq {
            self.last_update_seq = ack.snd_nxt;
            self.last_rtt_ns = rtt;
        }
    }

    fn update(&mut self, p: &TimelyParams, rate: &mut Rate, line: Rate, rtt: u64) {
        let new_diff = rtt as i64 - self.last_rtt_ns as i64;
        let diff = (1.0 - p.alpha) * self.rtt_diff + p.alpha * new_diff as f64;
        let gradient = diff / p.min_rtt_ns as f64;
        let decrease = if rtt < p.t_low_ns {
            None
        } else if rtt > p.t_high_ns {
            Some(1.0 - p.beta * (1.0 - p.t_high_ns as f64 / rtt as f64))
        } else if gradient <= 0.0 {
            None
        } else {
            Some((1.0 - p.beta * gradient).max(0.0))
        };
        match decrease {
            None => {
                let step = if self.inc_stage < 5 { p.rate_ai } else { p.rate_hai };
                *rate = Rate(self.cur_rate.0 + step.0).min(line);
                self.inc_stage += 1;
            }
            Some(c) => {
                *rate = scale(self.cur_rate, c).max(p.min_rate);
                self.inc_stage = 0;
            }
        }
        self.cur_rate = *rate;
        self.rtt_diff = diff;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::IntHeader;
    use crate::units::Time;

    const LINE: Rate = Rate::gbps(100);

    fn ack_at(now_ns: u64, sent_ns: u64, seq: u64, snd_nxt: u64, ih: &mut IntHeader) -> AckEvent<'_> {
        ih.sent_at = Time::from_ns(sent_ns);
        AckEvent {
            now: Time::from_ns(now_ns),
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
    fn first_ack_records_rtt_then_gradient_decides() {
        let p = TimelyParams::default();
        let mut s = TimelyState::new(LINE);
        let mut rate = LINE;
        let mut ih = IntHeader::default();
        s.on_ack(&p, &mut rate, LINE, &ack_at(100_000, 40_000, 1000, 10_000, &mut ih));
        assert_eq!((s.last_update_seq, s.last_rtt_ns, rate), (10_000, 60_000, LINE));
        // RTT 80 us (between T_low and T_high), rising by 20 us: diff = 0.875 * 20000,
        // gradient 0.875, c = 1 - 0.8 * 0.875 = 0.3.
        s.on_ack(&p, &mut rate, LINE, &ack_at(200_000, 120_000, 11_000, 20_000, &mut ih));
        let c = 1.0 - 0.8 * (0.875 * 20_000.0 / 20_000.0);
        assert_eq!(rate, Rate((100e9 * c) as u64));
        assert_eq!(s.cur_rate, rate);
        assert_eq!(s.inc_stage, 0);
        // An old ACK (seq <= lastUpdateSeq) changes nothing.
        s.on_ack(&p, &mut rate, LINE, &ack_at(210_000, 0, 15_000, 25_000, &mut ih));
        assert_eq!(s.last_update_seq, 20_000);
    }

    #[test]
    fn low_rtt_increases_by_ai_then_hai() {
        let p = TimelyParams::default();
        let mut s = TimelyState::new(Rate::gbps(10));
        s.last_update_seq = 1;
        s.last_rtt_ns = 10_000;
        let mut rate = Rate::gbps(10);
        for i in 0..6 {
            s.update(&p, &mut rate, LINE, 10_000);
            let expect = 10_000_000_000 + 20_000_000 * (i.min(5) as u64 + 1) + if i >= 5 { 180_000_000 } else { 0 };
            assert_eq!(rate, Rate(expect), "step {i}");
        }
    }

    #[test]
    fn very_high_rtt_decreases_towards_t_high() {
        let p = TimelyParams::default();
        let mut s = TimelyState::new(LINE);
        let mut rate = LINE;
        s.update(&p, &mut rate, LINE, 1_000_000);
        assert_eq!(rate, Rate((100e9 * (1.0 - 0.8 * 0.5)) as u64));
    }
}
