//! InfiniBand's link layer (IBA Specification Vol. 1, Release 1.2.1, ch. 7): credit-based
//! flow control per virtual lane, the packet format's header bytes, and the link rates by
//! name. The state here belongs to one port; `sim::mech::ib` moves it through the run.
//!
//! Credits (§7.9): a receiver owns one input buffer per port and VL, counted in 64-byte
//! blocks. Its flow-control packets carry the absolute credit limit FCCL = blocks received
//! (ABR) + blocks free; the sender keeps FCTBS, the blocks it has sent, and may start a packet
//! on a VL only while FCCL − FCTBS covers it. The spec's counters are 12 bits wide and wrap;
//! ours are 64 bits and never do, which is the same arithmetic without the modulus.

use crate::fabric::NUM_PRIOS;
use crate::units::{Rate, Time};

/// Which link layer the fabric runs (`fabric.link_layer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkLayer {
    /// RoCEv2 over lossless Ethernet: PFC, the shared-buffer MMU, ECN (the default).
    #[default]
    Roce,
    /// InfiniBand: credit-based flow control per VL, no PAUSE, no drop.
    Infiniband,
}

/// Local Route Header (§7.7), in every packet.
pub const LRH: u32 = 8;
/// Global Route Header (§8.3), only when a packet leaves its subnet (never here: one subnet).
pub const GRH: u32 = 40;
/// Base Transport Header (§9.2), in every transport packet.
pub const BTH: u32 = 12;
/// RDMA Extended Transport Header (§9.3.3): on the first packet of an RDMA WRITE.
pub const RETH: u32 = 16;
/// ACK Extended Transport Header (§9.3.5): on an ACK.
pub const AETH: u32 = 4;
/// Invariant CRC (§7.8.1).
pub const ICRC: u32 = 4;
/// Variant CRC (§7.8.2).
pub const VCRC: u32 = 2;
/// Header and CRC bytes of a data packet of an RC WRITE after its first: LRH + BTH + ICRC +
/// VCRC = 26. The first adds `RETH`.
pub const DATA_HEADER: u32 = LRH + BTH + ICRC + VCRC;
/// Bytes of an RC ACK: LRH + BTH + AETH + ICRC + VCRC = 30.
pub const ACK_BYTES: u32 = LRH + BTH + AETH + ICRC + VCRC;
/// A flow-control packet (§7.9.4): Op 4 bits, FCTBS 12, VL 4, FCCL 12, LPCRC 16 = 6 bytes.
pub const FC_PACKET: u32 = 6;
/// Credits count buffer in blocks of this many bytes (§7.9.2).
pub const BLOCK: u64 = 64;
/// The path MTUs IB allows (§7.7.8 / the PortInfo MTU encodings 1..5).
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// The MTU of an IB run unless the scenario sets one: 2048, what `ibv_devinfo` reports as
/// the active MTU of ConnectX-3 ports under OpenSM's default partition (docs/model/infiniband.md#packet-format).
pub const DEFAULT_MTU: u32 = 2048;
/// Input buffer per port and VL unless the scenario sets `ib_vl_buffer` (a choice, see
/// docs/model/infiniband.md#infiniband-link-layer: no vendor publishes the SX6025's or ConnectX-3's per-VL figure; 32 KiB
/// covers the credit round trip of a 56 Gb/s link up to about 200 m with 4 KiB packets).
pub const DEFAULT_VL_BUFFER: u64 = 32 * 1024;

/// One IB link width and speed: signalling rate per lane and the line code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbRate {
    /// Name accepted wherever a link rate is (`"FDR4x"`).
    pub name: &'static str,
    /// Lanes.
    pub lanes: u64,
    /// Signalling rate of one lane, bit/s.
    pub lane_signal: u64,
    /// Line code: `data` bits of every `code` bits are data (8b/10b, 64b/66b).
    pub data: u64,
    /// See `data`.
    pub code: u64,
}

impl IbRate {
    /// Signalling rate of the link (all lanes).
    pub fn signal(&self) -> Rate {
        Rate(self.lanes * self.lane_signal)
    }
    /// The data rate: the link's rate in the simulator.
    pub fn data_rate(&self) -> Rate {
        Rate((self.lanes as u128 * self.lane_signal as u128 * self.data as u128 / self.code as u128) as u64)
    }
}

/// The 4x speeds (IBTA; lane signalling QDR 10, FDR 14.0625, EDR 25.78125, HDR 53.125 Gb/s).
/// HDR's lanes are PAM4 with 256b/257b transcoding and RS(544,514) FEC; its net 16/17 is
/// written as the line code so that 4x gives the 200 Gb/s the IBTA quotes.
pub const IB_RATES: [IbRate; 4] = [
    IbRate { name: "QDR4x", lanes: 4, lane_signal: 10_000_000_000, data: 8, code: 10 },
    IbRate { name: "FDR4x", lanes: 4, lane_signal: 14_062_500_000, data: 64, code: 66 },
    IbRate { name: "EDR4x", lanes: 4, lane_signal: 25_781_250_000, data: 64, code: 66 },
    IbRate { name: "HDR4x", lanes: 4, lane_signal: 53_125_000_000, data: 16, code: 17 },
];

/// The data rate of an IB rate name (`"FDR4x"`: 54.545 Gb/s), if `s` is one.
pub fn rate_by_name(s: &str) -> Option<Rate> {
    IB_RATES.iter().find(|r| r.name.eq_ignore_ascii_case(s)).map(IbRate::data_rate)
}

/// Blocks of buffer a packet of `bytes` takes.
#[inline]
pub fn blocks(bytes: u32) -> u64 {
    (bytes as u64).div_ceil(BLOCK)
}

/// Credit state of one port: as a sender towards its peer's input buffer, and as the
/// receiver owning its own input buffer. Both halves live on the port's node.
#[derive(Clone, Debug)]
pub struct PortCredits {
    /// FCTBS per VL: blocks sent.
    sent: [u64; NUM_PRIOS],
    /// FCCL per VL: the latest credit limit heard from the peer.
    limit: [u64; NUM_PRIOS],
    /// ABR per VL: blocks received into this port's input buffer.
    received: [u64; NUM_PRIOS],
    /// Blocks of this port's input buffer freed per VL.
    freed: [u64; NUM_PRIOS],
    /// Bit `v`: VL `v` lacks credits for a full packet.
    stalled: u8,
    /// Since when some VL has been stalled.
    stalled_since: Time,
    /// Picoseconds with some VL stalled, closed intervals only.
    stall_ps: u64,
    /// Most blocks ever held in one VL's input buffer.
    pub max_held: u64,
    /// Packets that arrived with no room (a credit violation: never on a healthy link).
    pub overruns: u64,
    /// Test hook: this input buffer is never freed (a receiver that stops draining).
    pub hold: bool,
}

impl PortCredits {
    /// A port whose peer's input buffer and its own hold `capacity` blocks per VL.
    pub fn new(capacity: u64) -> PortCredits {
        PortCredits {
            sent: [0; NUM_PRIOS],
            limit: [capacity; NUM_PRIOS],
            received: [0; NUM_PRIOS],
            freed: [0; NUM_PRIOS],
            stalled: 0,
            stalled_since: Time::ZERO,
            stall_ps: 0,
            max_held: 0,
            overruns: 0,
            hold: false,
        }
    }

    /// Credits left on `vl`, blocks.
    #[inline]
    pub fn available(&self, vl: usize) -> u64 {
        self.limit[vl].saturating_sub(self.sent[vl])
    }

    /// A packet of `b` blocks leaves on `vl`; true when the VL now lacks `need` blocks (the
    /// largest packet) and stalls.
    pub fn on_send(&mut self, vl: usize, b: u64, need: u64, now: Time) -> bool {
        debug_assert!(self.available(vl) >= b, "sent without credits");
        self.sent[vl] += b;
        let stall = self.available(vl) < need && self.stalled & (1 << vl) == 0;
        if stall {
            if self.stalled == 0 {
                self.stalled_since = now;
            }
            self.stalled |= 1 << vl;
        }
        stall
    }

    /// A flow-control packet brought `fccl` for `vl`; true when the VL was stalled and now
    /// has credits for `need` blocks again.
    pub fn on_credit(&mut self, vl: usize, fccl: u64, need: u64, now: Time) -> bool {
        self.limit[vl] = self.limit[vl].max(fccl);
        let resume = self.stalled & (1 << vl) != 0 && self.available(vl) >= need;
        if resume {
            self.stalled &= !(1 << vl);
            if self.stalled == 0 {
                self.stall_ps += (now - self.stalled_since).0;
            }
        }
        resume
    }

    /// A packet of `b` blocks arrived into this port's input buffer of `vl`, which holds
    /// `capacity` blocks.
    pub fn on_receive(&mut self, vl: usize, b: u64, capacity: u64) {
        self.received[vl] += b;
        let held = self.received[vl] - self.freed[vl];
        if held > capacity {
            self.overruns += 1;
        }
        self.max_held = self.max_held.max(held);
    }

    /// `b` blocks of `vl`'s input buffer are freed; returns the FCCL to advertise.
    pub fn free(&mut self, vl: usize, b: u64, capacity: u64) -> u64 {
        self.freed[vl] += b;
        self.freed[vl] + capacity
    }

    /// A packet of `b` blocks sent on `vl` was lost on the wire when its link failed: it
    /// never reached the peer's input buffer, which therefore never frees its blocks, so they
    /// go back to the sender (link retraining restarts IB's flow control from the peer's
    /// actual buffer, §7.9.4).
    pub fn unsend(&mut self, vl: usize, b: u64) {
        self.sent[vl] -= b;
    }

    /// The credit limit this port's input buffer of `vl` advertises now.
    pub fn fccl(&self, vl: usize, capacity: u64) -> u64 {
        self.freed[vl] + capacity
    }

    /// Brings every VL's stall to its credits (after `unsend`); returns the stalled VLs, one
    /// bit each.
    pub fn restall(&mut self, need: u64, now: Time) -> u8 {
        let was = self.stalled;
        let stalled = (0..NUM_PRIOS).filter(|&vl| self.available(vl) < need).fold(0u8, |m, vl| m | 1 << vl);
        if was == 0 && stalled != 0 {
            self.stalled_since = now;
        } else if was != 0 && stalled == 0 {
            self.stall_ps += (now - self.stalled_since).0;
        }
        self.stalled = stalled;
        stalled
    }

    /// Stalled time up to `now`, the open interval included.
    pub fn stall_ps(&self, now: Time) -> u64 {
        let open = if self.stalled != 0 { now.saturating_sub(self.stalled_since).0 } else { 0 };
        self.stall_ps + open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_are_the_specs_sums() {
        assert_eq!(DATA_HEADER, 8 + 12 + 4 + 2);
        assert_eq!(DATA_HEADER + RETH, 42);
        assert_eq!(ACK_BYTES, 30);
    }

    #[test]
    fn rate_names_give_the_data_rates() {
        assert_eq!(rate_by_name("QDR4x"), Some(Rate::gbps(32)));
        assert_eq!(rate_by_name("fdr4x"), Some(Rate(54_545_454_545)));
        assert_eq!(rate_by_name("EDR4x"), Some(Rate::gbps(100)));
        assert_eq!(rate_by_name("HDR4x"), Some(Rate::gbps(200)));
        assert_eq!(IB_RATES[1].signal(), Rate(56_250_000_000));
        assert_eq!(rate_by_name("100Gbps"), None);
    }

    #[test]
    fn a_sender_stalls_when_credits_fall_short_and_resumes_on_the_limit() {
        let mut c = PortCredits::new(128); // 8 KiB
        let (pkt, t) = (blocks(2048 + DATA_HEADER), Time::from_ns(1));
        assert_eq!(pkt, 33);
        assert!(!c.on_send(1, pkt, pkt, t));
        assert!(!c.on_send(1, pkt, pkt, t));
        assert!(c.on_send(1, pkt, pkt, Time::from_ns(10)), "29 blocks left of 128: n = 3");
        assert!(!c.on_credit(1, 128 + 3, pkt, Time::from_ns(20)), "32 blocks: still short");
        assert!(c.on_credit(1, 128 + pkt, pkt, Time::from_ns(30)));
        assert_eq!(c.stall_ps(Time::from_ns(99)), 20_000);
    }

    #[test]
    fn the_receiver_advertises_received_plus_free() {
        let mut c = PortCredits::new(100);
        c.on_receive(2, 40, 100);
        c.on_receive(2, 40, 100);
        assert_eq!(c.free(2, 40, 100), 140);
        c.on_receive(2, 60, 100);
        assert_eq!((c.max_held, c.overruns), (100, 0));
        c.on_receive(2, 1, 100);
        assert_eq!(c.overruns, 1);
    }
}
