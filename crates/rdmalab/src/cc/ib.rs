//! InfiniBand congestion control, the channel adapter's half (IBA annex A10, `cc = "ib"`).
//! See `docs/model/infiniband.md`, "InfiniBand congestion control".
//!
//! Switches mark FECN on packets of congested queues (`fabric::fecn`); the destination
//! returns each mark as a BECN on the ACK it sends at once. The source keeps a congestion
//! control table index (CCTI) per QP or per (source, SL): each BECN raises it by
//! `ccti_increase`, up to `ccti_limit`; a free-running timer lowers it by one every
//! `ccti_timer` while it is above `ccti_min`. The index selects an entry of the congestion
//! control table (CCT), an inter-packet delay: after a packet of transmission time T the
//! source waits T · multiplier / 2^shift before the next (how QLogic/Intel PSM reads an
//! entry's 2-bit shift and 14-bit multiplier: `(time_to_send >> shift) * ipd`). With
//! packets sent back to back otherwise, that is the rate line · 2^shift / (2^shift +
//! multiplier), whatever the packet size, so the simulator paces the QPs at that rate.

use super::{AckEvent, CcTimers};
use crate::fabric::fecn::FecnParams;
use crate::units::{Rate, Time};

/// The one timer kind: the CCTI timer.
pub const CCTI_TIMER: usize = 0;

/// Largest table: `ControlTableCap` counts 64-entry blocks in 8 bits (A10's
/// CongestionInfo).
pub const MAX_CCT_ENTRIES: usize = 255 * 64;

/// The spec's unit of `CCTI_Timer`, 1.024 µs; the 16-bit field bounds the timer.
pub const MAX_CCTI_TIMER: Time = Time(65_535 * 1_024_000);

/// One CCT entry as the spec encodes it: `CCT_Shift` (bits 15-14), `CCT_Multiplier`
/// (bits 13-0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CctEntry {
    /// 0..=3.
    pub shift: u8,
    /// 0..=16383.
    pub multiplier: u16,
}

impl CctEntry {
    /// From the 16-bit encoding.
    pub fn from_bits(v: u16) -> CctEntry {
        CctEntry { shift: (v >> 14) as u8, multiplier: v & 0x3FFF }
    }

    /// The 16-bit encoding.
    pub fn bits(self) -> u16 {
        (self.shift as u16) << 14 | self.multiplier
    }

    /// The rate a source sends at under this delay: line · 2^s / (2^s + m).
    pub fn rate(self, line: Rate) -> Rate {
        let unit = 1u128 << self.shift;
        Rate((line.0 as u128 * unit / (unit + self.multiplier as u128)) as u64)
    }

    /// Whether this entry's delay is at most `other`'s (m/2^s compared exactly).
    pub fn delay_le(self, other: CctEntry) -> bool {
        (self.multiplier as u64) << other.shift <= (other.multiplier as u64) << self.shift
    }
}

/// The table of our own set `rdmalab_v1` (†, ours; `cct = "rdmalab_v1"`): 128 entries (the
/// size QLogic/Intel PSM builds by default, two of A10's 64-entry blocks), entry i a delay of
/// i/8 packet times (shift 3, multiplier i): entry 0 sends at line rate (as in PSM's and
/// Mellanox's tables), entry 8 at half, entry 127 at 8/135 of it, each step at most 1/9 of
/// the rate below the last.
pub fn default_cct() -> Vec<CctEntry> {
    (0..128).map(|i| CctEntry { shift: 3, multiplier: i }).collect()
}

/// The preset a run gets when it names none: our own choices (†; the named sets are in
/// `cc::ib_presets`, which builds on this file, not the other way round).
pub const DEFAULT_PRESET: &str = "rdmalab_v1";

/// Queue depth per threshold level below 16 (†, ours): A10 gives the level's meaning (0 no
/// marking, 1 loosest, 15 most aggressive) and leaves the depth to the switch vendor.
pub const THRESHOLD_STEP: u64 = 16 * 1024;

/// The queue depth (bytes) above which a switch marks at A10 threshold level `level`
/// (1..=15): (16 − level) × 16 KiB, so 15 gives 16 KiB (eight 2048-byte IB MTU packets) and 1
/// gives 240 KiB; level 0 never marks (`u64::MAX`). None past 15.
pub fn threshold_bytes(level: u8) -> Option<u64> {
    match level {
        0 => Some(u64::MAX),
        1..=15 => Some((16 - level as u64) * THRESHOLD_STEP),
        _ => None,
    }
}

/// The level whose depth is exactly `bytes`, if any (for printing).
pub fn threshold_level(bytes: u64) -> Option<u8> {
    (0..=15).find(|&l| threshold_bytes(l) == Some(bytes))
}

/// The adapter's settings and the switches' (`[fabric.cc_params]`).
#[derive(Clone, Debug, PartialEq)]
pub struct IbParams {
    /// Switch marking: `threshold`, `marking_rate`, `packet_size`.
    pub marking: FecnParams,
    /// Index steps per BECN [ccti_increase], 1 (Mellanox's congestion-control manager and
    /// PSM).
    pub ccti_increase: u16,
    /// Highest index [ccti_limit], the table's last entry (as OpenSM sets it).
    pub ccti_limit: u16,
    /// Lowest index [ccti_min], 0 (Mellanox's manager and PSM).
    pub ccti_min: u16,
    /// Period of the index's decrease [ccti_timer], 50 µs (†: no vendor publishes one;
    /// chosen from the floor r_min = P·(marking_rate + 1)/T below which marks can no longer
    /// hold a source, set to 1/16 of 56 Gb/s for 2 KiB packets, the Blitz poster's 16→1 incast;
    /// see `docs/model/infiniband.md#infiniband-congestion-control`).
    pub ccti_timer: Time,
    /// The table [cct], `default_cct()`.
    pub cct: Vec<CctEntry>,
    /// The named set these values started from [ib_cc_preset], `rdmalab_v1` (ours).
    pub preset: &'static str,
    /// The table's name when it is a named one [cct = "<name>"]; None for an explicit list.
    pub cct_name: Option<&'static str>,
}

impl Default for IbParams {
    fn default() -> Self {
        let cct = default_cct();
        IbParams {
            marking: FecnParams::default(),
            ccti_increase: 1,
            ccti_limit: cct.len() as u16 - 1,
            ccti_min: 0,
            ccti_timer: Time::from_us(50),
            cct,
            preset: DEFAULT_PRESET,
            cct_name: Some(DEFAULT_PRESET),
        }
    }
}

impl IbParams {
    /// The rate at index `i` for a source of line rate `line`.
    #[inline]
    pub fn rate_at(&self, i: u16, line: Rate) -> Rate {
        self.cct[i as usize].rate(line)
    }

    /// One line naming the set, the table and every value a run uses (what `rdmalab run`
    /// prints).
    pub fn describe(&self) -> String {
        let m = &self.marking;
        let threshold = match threshold_level(m.threshold) {
            Some(0) => "level 0 (no marking)".to_string(),
            Some(l) => format!("{} B (level {l})", m.threshold),
            None => format!("{} B", m.threshold),
        };
        let cct = match self.cct_name {
            Some(n) => format!("{n} ({} entries)", self.cct.len()),
            None => format!("explicit ({} entries)", self.cct.len()),
        };
        let units = self.ccti_timer.0 as f64 / 1_024_000.0;
        format!(
            "IB CC preset {}: threshold {threshold}, marking_rate {}, packet_size {} B, ccti_increase {}, \
             ccti_min {}, ccti_limit {}, ccti_timer {:.3} us ({units:.2} x 1.024 us), cct {cct}",
            self.preset,
            m.marking_rate,
            m.packet_size,
            self.ccti_increase,
            self.ccti_min,
            self.ccti_limit,
            self.ccti_timer.0 as f64 / 1e6,
        )
    }

    /// The settings' consistency: (the key to blame, why) when broken.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.cct.is_empty() {
            return Err(("cct", "the table has no entry".into()));
        }
        if self.cct.len() > MAX_CCT_ENTRIES {
            return Err(("cct", format!("{} entries, at most {MAX_CCT_ENTRIES}", self.cct.len())));
        }
        if let Some(i) = (1..self.cct.len()).find(|&i| !self.cct[i - 1].delay_le(self.cct[i])) {
            return Err(("cct", format!("entry {i} has a smaller delay than entry {} (not monotone)", i - 1)));
        }
        let last = self.cct.len() - 1;
        if self.ccti_limit as usize > last {
            return Err(("ccti_limit", format!("{} is past the table's last entry {last}", self.ccti_limit)));
        }
        if self.ccti_min > self.ccti_limit {
            return Err(("ccti_min", format!("{} is above ccti_limit {}", self.ccti_min, self.ccti_limit)));
        }
        Ok(())
    }
}

/// A source's state: its index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IbState {
    /// The current CCTI.
    pub ccti: u16,
}

impl IbState {
    /// A fresh source at `ccti_min`.
    pub fn new(p: &IbParams) -> IbState {
        IbState { ccti: p.ccti_min }
    }

    /// An ACK: a BECN raises the index (and starts the timer if it is idle). Returns the
    /// rate at the index.
    #[inline]
    pub fn on_ack(&mut self, p: &IbParams, timers: &mut CcTimers, line: Rate, ack: &AckEvent<'_>) -> Rate {
        if ack.cnp {
            self.ccti = self.ccti.saturating_add(p.ccti_increase).min(p.ccti_limit);
            if self.ccti > p.ccti_min && timers.due[CCTI_TIMER] == Time::MAX {
                timers.arm(CCTI_TIMER, ack.now + p.ccti_timer);
            }
        }
        p.rate_at(self.ccti, line)
    }

    /// The CCTI timer fired: one step down, and again a period later while above the
    /// minimum.
    pub fn on_timer(&mut self, p: &IbParams, timers: &mut CcTimers, line: Rate, now: Time) -> Rate {
        if self.ccti > p.ccti_min {
            self.ccti -= 1;
        }
        if self.ccti > p.ccti_min {
            timers.arm(CCTI_TIMER, now + p.ccti_timer);
        }
        p.rate_at(self.ccti, line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(now: Time, becn: bool) -> AckEvent<'static> {
        AckEvent { now, seq: 0, snd_nxt: 0, cnp: becn, nack: false, int: None, mtu: 1000, int_multi: 1, share: Rate(0) }
    }

    #[test]
    fn entry_encoding_and_rate() {
        let e = CctEntry::from_bits(0b10 << 14 | 12);
        assert_eq!((e.shift, e.multiplier, e.bits()), (2, 12, 0b10 << 14 | 12));
        // 12/4 = 3 packet times of delay: a quarter of the line.
        assert_eq!(e.rate(Rate::gbps(100)), Rate::gbps(25));
        assert_eq!(CctEntry { shift: 0, multiplier: 0 }.rate(Rate::gbps(56)), Rate::gbps(56));
        assert!(CctEntry { shift: 3, multiplier: 8 }.delay_le(CctEntry { shift: 0, multiplier: 1 }));
        assert!(!CctEntry { shift: 0, multiplier: 2 }.delay_le(CctEntry { shift: 2, multiplier: 7 }));
    }

    #[test]
    fn index_follows_becns_and_timer() {
        let p = IbParams { ccti_increase: 3, ccti_limit: 10, ..IbParams::default() };
        let mut s = IbState::new(&p);
        let mut t = CcTimers::default();
        let line = Rate::gbps(100);
        for k in 1..=5u16 {
            s.on_ack(&p, &mut t, line, &ack(Time::from_us(k as u64), true));
            assert_eq!(s.ccti, (3 * k).min(10));
        }
        // Armed by the first BECN only: free running.
        assert_eq!(t.due[CCTI_TIMER], Time::from_us(1) + p.ccti_timer);
        s.on_ack(&p, &mut t, line, &ack(Time::from_us(6), false));
        assert_eq!(s.ccti, 10);
        let r = s.on_timer(&p, &mut t, line, Time::from_us(51));
        assert_eq!((s.ccti, r), (9, p.cct[9].rate(line)));
        assert_eq!(t.due[CCTI_TIMER], Time::from_us(101));
    }

    #[test]
    fn checks_table_and_limits() {
        assert!(IbParams::default().check().is_ok());
        let bad = |f: fn(&mut IbParams)| {
            let mut p = IbParams::default();
            f(&mut p);
            p.check().unwrap_err().0
        };
        assert_eq!(bad(|p| p.cct.clear()), "cct");
        assert_eq!(bad(|p| p.cct[5] = CctEntry { shift: 0, multiplier: 0 }), "cct");
        assert_eq!(bad(|p| p.ccti_limit = 128), "ccti_limit");
        assert_eq!(bad(|p| p.ccti_min = 200), "ccti_min");
    }
}
