//! Rate-based DCTCP as the reference implements it (CC_MODE 8, `RdmaHw::HandleAckDctcp`): alpha is the
//! EWMA of the fraction of CE-echoing ACKs per window of data ("batch"); one cut of
//! Rc (1 - alpha/2) per window (a CWR state until the data sent at the cut is
//! acknowledged), and an additive step per window without marks.

use super::{scale, AckEvent};
use crate::units::Rate;

/// DCTCP parameters (config keys in brackets; defaults are those of the reference's `run.py`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpParams {
    /// Alpha EWMA gain [EWMA_GAIN], 1/256.
    pub g: f64,
    /// Additive step per window [DCTCP_RATE_AI], 1000 Mb/s.
    pub rate_ai: Rate,
    /// Rate floor [MIN_RATE], 1000 Mb/s.
    pub min_rate: Rate,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { g: 1.0 / 256.0, rate_ai: Rate::mbps(1000), min_rate: Rate::mbps(1000) }
    }
}

/// The sender's state (alpha starts at 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpState {
    /// Fraction-of-marks EWMA.
    pub alpha: f64,
    /// CE echoes in the current batch.
    pub ecn_count: u32,
    /// snd_nxt when the current batch started (0: none yet).
    pub last_update_seq: u64,
    /// Packets in the current batch.
    pub batch: u64,
    /// In congestion-window-reduced state (one cut per window).
    pub cwr: bool,
    /// CWR ends when an ACK passes this sequence.
    pub high_seq: u64,
}

impl Default for DctcpState {
    fn default() -> Self {
        DctcpState::new()
    }
}

impl DctcpState {
    /// The state of a new QP.
    pub fn new() -> DctcpState {
        DctcpState { alpha: 1.0, ecn_count: 0, last_update_seq: 0, batch: 0, cwr: false, high_seq: 0 }
    }

    /// An ACK/NACK (in `RdmaHw::HandleAckDctcp`'s order: alpha, CWR exit, cut, additive step).
    pub fn on_ack(&mut self, p: &DctcpParams, rate: &mut Rate, line: Rate, ack: &AckEvent<'_>) {
        let mtu = ack.mtu.max(1) as u64;
        self.ecn_count += ack.cnp as u32;
        let new_batch = ack.seq > self.last_update_seq;
        if new_batch {
            if self.last_update_seq == 0 {
                self.batch = ack.snd_nxt / mtu + 1;
            } else {
                let frac = (self.ecn_count as f64 / self.batch as f64).min(1.0);
                self.alpha = (1.0 - p.g) * self.alpha + p.g * frac;
                self.ecn_count = 0;
                self.batch = ack.snd_nxt.saturating_sub(ack.seq) / mtu + 1;
            }
            self.last_update_seq = ack.snd_nxt;
        }
        if self.cwr && ack.seq > self.high_seq {
            self.cwr = false;
        }
        if ack.cnp && !self.cwr {
            *rate = scale(*rate, 1.0 - self.alpha / 2.0).max(p.min_rate);
            self.cwr = true;
            self.high_seq = ack.snd_nxt;
        }
        if !self.cwr && new_batch {
            *rate = Rate(rate.0 + p.rate_ai.0).min(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    const LINE: Rate = Rate::gbps(100);

    fn ack(seq: u64, snd_nxt: u64, cnp: bool) -> AckEvent<'static> {
        AckEvent { now: Time::ZERO, seq, snd_nxt, cnp, nack: false, int: None, mtu: 1000, int_multi: 1, share: Rate(0) }
    }

    #[test]
    fn first_mark_cuts_by_half_alpha_then_cwr_holds() {
        let p = DctcpParams::default();
        let mut s = DctcpState::new();
        let mut rate = LINE;
        // First ACK: batch = 10000/1000 + 1 = 11; marked: cut with alpha = 1 -> 50G.
        s.on_ack(&p, &mut rate, LINE, &ack(1000, 10_000, true));
        assert_eq!(s.batch, 11);
        assert_eq!(rate, Rate::gbps(50));
        assert!(s.cwr);
        // Another mark inside the window: no second cut.
        s.on_ack(&p, &mut rate, LINE, &ack(2000, 11_000, true));
        assert_eq!(rate, Rate::gbps(50));
        // ACK past high_seq and lastUpdateSeq (10000): alpha update with frac = 2/11 (the
        // first batch only sets the batch size, so both marks count), CWR exits and the
        // new batch adds AI.
        s.on_ack(&p, &mut rate, LINE, &ack(12_000, 20_000, false));
        let frac = 2.0 / 11.0;
        let g = 1.0 / 256.0;
        assert!((s.alpha - ((1.0 - g) * 1.0 + g * frac)).abs() < 1e-15);
        assert_eq!(s.batch, 8_000 / 1000 + 1);
        assert!(!s.cwr);
        assert_eq!(rate, Rate::gbps(51));
    }
}
