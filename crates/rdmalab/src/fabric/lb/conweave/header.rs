//! ConWeave's header on data packets and its control packets (`PacketKind::LbControl`).

use super::super::{Packet, PacketKind};
use crate::units::Time;

/// What a data packet's header asks (2 bits; 0: no header).
pub(super) const DATA: u16 = 1;
pub(super) const INIT: u16 = 2;
pub(super) const TAIL: u16 = 3;
/// What a control packet says.
pub(super) const RTT_REPLY: u16 = 1;
pub(super) const CLEAR: u16 = 2;
pub(super) const NOTIFY: u16 = 3;

/// The header fields (data or control), 24 bits: `int_hops` holds the flag (2 bits), the
/// phase (1), the uplink tag (4), the epoch (5) and the timestamp's high 4 bits;
/// `deflections` its low 8 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) flag: u16,
    pub(super) phase: u16,
    pub(super) tag: u16,
    pub(super) epoch: u8,
    /// A send time in units of `TS_UNIT_NS`, modulo 2^12 (1.05 ms).
    pub(super) ts: u16,
}

pub(super) const EPOCH_MASK: u8 = 31;
pub(super) const TS_MASK: u16 = 0xFFF;
/// The timestamp's unit: 256 ns (the artifact keeps ns; our header has 12 bits for it).
pub(super) const TS_UNIT_NS: u64 = 256;

impl Header {
    pub(super) fn read(p: &Packet) -> Header {
        let h = p.int_hops;
        Header {
            flag: h >> 14 & 3,
            phase: h >> 13 & 1,
            tag: h >> 9 & 15,
            epoch: (h >> 4 & 31) as u8,
            ts: (h & 15) << 8 | p.deflections as u16,
        }
    }

    pub(super) fn write(self, p: &mut Packet) {
        p.int_hops = self.flag << 14 | self.phase << 13 | self.tag << 9 | (self.epoch as u16) << 4 | self.ts >> 8;
        p.deflections = self.ts as u8;
    }
}

/// Whether epoch `a` is after `b` (serial arithmetic modulo 32).
pub(super) fn after(a: u8, b: u8) -> bool {
    let d = a.wrapping_sub(b) & EPOCH_MASK;
    d != 0 && d < 16
}

/// `t` as a header timestamp.
pub(super) fn stamp(t: Time) -> u16 {
    (t.ns() / TS_UNIT_NS) as u16 & TS_MASK
}

/// `later - earlier` of two header timestamps (0 when `later` is not later).
pub(super) fn stamp_gap(later: u16, earlier: u16) -> Time {
    let d = later.wrapping_sub(earlier) & TS_MASK;
    if d >= 2048 {
        Time::ZERO
    } else {
        Time::from_ns(d as u64 * TS_UNIT_NS)
    }
}

/// A 64-byte control packet from the destination ToR back to the source ToR of data packet
/// `d`, in the control class (0, ahead of data, as the artifact gives it ACK's priority).
pub(super) fn control(d: &Packet, h: Header) -> Packet {
    let mut c = Packet::pfc(PacketKind::LbControl, 0, 64);
    c.src = d.dst;
    c.dst = d.src;
    c.sip = d.dip;
    c.dip = d.sip;
    c.sport = d.dport;
    c.dport = d.sport;
    c.qp = d.qp;
    c.tenant = d.tenant;
    h.write(&mut c);
    c
}
