//! FECN marking at switch egress, InfiniBand congestion control's switch half (IBA annex
//! A10, `cc = "ib"`). See `docs/model/infiniband.md`, "InfiniBand congestion control".
//!
//! A port's queue of one class (the IB virtual lane) is congested while it holds more than
//! `threshold` bytes (the departing packet excluded, as for ECN). A data packet leaving a
//! congested queue is *eligible* when it is at least `packet_size` bytes on the wire; of
//! the eligible packets, one is marked and then `marking_rate` are let through unmarked
//! (OpenSM: "mean number of packets between markings"), so `marking_rate = 0` marks every
//! eligible packet. The count is kept per port and class, by the switch that owns the port.

use crate::fabric::NUM_PRIOS;

/// The switch's settings (`[fabric.cc_params]` keys `threshold`, `marking_rate`,
/// `packet_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FecnParams {
    /// Queue bytes above which the class's queue counts as congested.
    pub threshold: u64,
    /// Eligible packets let through unmarked after each mark.
    pub marking_rate: u16,
    /// Smallest packet (wire bytes) that may be marked.
    pub packet_size: u32,
}

impl Default for FecnParams {
    /// Mellanox OFED's congestion-control manager defaults for `marking_rate` (0xa) and
    /// `packet_size` (0x200 bytes); the threshold is ours (†), in bytes where the
    /// specification has a 4-bit aggressiveness level whose mapping to a queue depth is the
    /// vendor's (Mellanox's default is the most aggressive, 0xf): 16 KiB, eight packets of
    /// the 2048-byte IB MTU.
    fn default() -> Self {
        FecnParams { threshold: 16 * 1024, marking_rate: 10, packet_size: 512 }
    }
}

/// Marking state of every port of a partition: eligible packets seen since the last mark,
/// per (port, class).
#[derive(Clone, Debug)]
pub struct FecnMarker {
    /// The settings.
    pub params: FecnParams,
    since_mark: Vec<u16>,
}

impl FecnMarker {
    /// A marker for `ports` ports, each starting ready to mark its first eligible packet.
    pub fn new(params: FecnParams, ports: usize) -> FecnMarker {
        FecnMarker { params, since_mark: vec![params.marking_rate; ports * NUM_PRIOS] }
    }

    /// Whether the data packet of `wire` bytes leaving class `class` of port `port`, whose
    /// queue still holds `queued` bytes, gets FECN.
    #[inline]
    pub fn should_mark(&mut self, port: usize, class: usize, queued: u64, wire: u32) -> bool {
        let p = self.params;
        if queued <= p.threshold || wire < p.packet_size {
            return false;
        }
        let n = &mut self.since_mark[port * NUM_PRIOS + class];
        if *n >= p.marking_rate {
            *n = 0;
            true
        } else {
            *n += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(marking_rate: u16) -> FecnMarker {
        FecnMarker::new(FecnParams { threshold: 1000, marking_rate, packet_size: 512 }, 2)
    }

    #[test]
    fn marks_every_eligible_packet_at_rate_zero() {
        let mut m = marker(0);
        assert!((0..50).all(|_| m.should_mark(1, 3, 1001, 512)));
        assert!(!m.should_mark(1, 3, 1000, 2048), "at the threshold: not congested");
        assert!(!m.should_mark(1, 3, 5000, 511), "below packet_size: not eligible");
    }

    #[test]
    fn marks_one_then_lets_marking_rate_through() {
        let mut m = marker(3);
        let marks: Vec<bool> = (0..9).map(|_| m.should_mark(0, 3, 4000, 2048)).collect();
        assert_eq!(marks, [true, false, false, false, true, false, false, false, true]);
        // Ineligible packets do not advance the count; each (port, class) counts alone.
        assert!(!m.should_mark(0, 3, 10, 2048));
        assert!(m.should_mark(1, 3, 4000, 2048));
        assert!(m.should_mark(0, 4, 4000, 2048));
        assert!(!m.should_mark(0, 3, 4000, 2048));
    }
}
