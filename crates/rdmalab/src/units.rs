//! Physical units as integer newtypes.
//!
//! Time is an integer count of picoseconds (`u64` covers 213 days). At the rates the field
//! uses (25/50/100/200/400/800 Gb/s) one byte takes a whole number of picoseconds, so
//! serialisation is exact. Rates are integer bit/s, as in ns-3's `DataRate`.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time or a duration, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

impl Time {
    /// Time zero.
    pub const ZERO: Time = Time(0);
    /// The largest representable time; used as "never".
    pub const MAX: Time = Time(u64::MAX);
    /// Picoseconds per nanosecond.
    pub const PS_PER_NS: u64 = 1_000;

    /// From whole picoseconds.
    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }
    /// From whole nanoseconds.
    pub const fn from_ns(ns: u64) -> Time {
        Time(ns * 1_000)
    }
    /// From whole microseconds.
    pub const fn from_us(us: u64) -> Time {
        Time(us * 1_000_000)
    }
    /// From whole milliseconds.
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms * 1_000_000_000)
    }
    /// Picoseconds.
    pub const fn ps(self) -> u64 {
        self.0
    }
    /// Whole nanoseconds, truncated.
    pub const fn ns(self) -> u64 {
        self.0 / 1_000
    }
    /// Seconds as a float (for display only, never for simulation arithmetic).
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 * 1e-12
    }
    /// Saturating subtraction.
    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
}

impl Add for Time {
    type Output = Time;
    #[inline]
    fn add(self, rhs: Time) -> Time {
        Time(self.0 + rhs.0)
    }
}
impl AddAssign for Time {
    #[inline]
    fn add_assign(&mut self, rhs: Time) {
        self.0 += rhs.0
    }
}
impl Sub for Time {
    type Output = Time;
    #[inline]
    fn sub(self, rhs: Time) -> Time {
        Time(self.0 - rhs.0)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ps", self.0)
    }
}

/// A data rate in bit/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    /// From Gb/s (powers of 1000).
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    /// From Mb/s (powers of 1000).
    pub const fn mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }
    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Exact serialisation time of `bytes` at this rate, rounded up to a whole picosecond.
    ///
    /// Exact (no rounding) for every rate that divides 8e12, which includes all the
    /// usual Ethernet rates.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Time {
        let num = bytes as u128 * 8 * 1_000_000_000_000u128;
        let r = self.0 as u128;
        Time(num.div_ceil(r) as u64)
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1_000_000_000) {
            write!(f, "{}Gbps", self.0 / 1_000_000_000)
        } else if self.0.is_multiple_of(1_000_000) {
            write!(f, "{}Mbps", self.0 / 1_000_000)
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

/// How serialisation and pacing times are turned into simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimingModel {
    /// Exact picoseconds (the native default).
    #[default]
    Exact,
    /// The ns-3 HPCC simulator's convention: whole nanoseconds, truncated slightly below
    /// floor. Used by `rdmalab hpcc`.
    Ns3,
    /// A later ns-3's convention (m4's fork on Unison): whole nanoseconds, the exact time
    /// truncated (its `DataRate` divides in 64.64 fixed point, no `double` on the way). Used
    /// by `rdmalab hpcc --dialect m4`.
    Ns3Floor,
}

impl TimingModel {
    /// Time to put `bytes` on a wire of rate `rate` under this model.
    #[inline]
    pub fn tx_time(self, rate: Rate, bytes: u64) -> Time {
        match self {
            TimingModel::Exact => rate.tx_time(bytes),
            TimingModel::Ns3 => Time::from_ns(ns3_tx_ns(bytes, rate.0)),
            TimingModel::Ns3Floor => Time::from_ns((bytes as u128 * 8_000_000_000 / rate.0.max(1) as u128) as u64),
        }
    }
}

/// ns-3.17's conversion of `Seconds(bytes*8/(double)bps)` to integer nanoseconds: the double
/// becomes a 64.64 fixed-point number whose fraction is truncated, then is scaled by 1e9 and
/// truncated again. The result is `floor(exact)` except that an exact integer comes out one
/// less (`int64x64_t(double)` in ns-3's `int64x64-128.h`, `Time(int64x64_t)` in `nstime.h`).
#[inline]
pub fn ns3_tx_ns(bytes: u64, bps: u64) -> u64 {
    let x = bytes as f64 * 8.0 / bps as f64;
    // Below 2^52 seconds (every real packet time) the truncating conversion to an integer is
    // `x.floor()` (x is not negative) and exact both ways, without the library call that the
    // baseline x86-64 target makes for `floor` (it has no SSE4.1 rounding instruction).
    if x < 4_503_599_627_370_496.0 {
        let whole = x as i64;
        return ns_of_seconds(x, whole as f64, whole as u64);
    }
    ns3_tx_ns_huge(x)
}

/// [`ns3_tx_ns`] of a time of 2^52 seconds or more (whose nanoseconds overflow), infinity or
/// NaN (a zero rate), with `floor`, out of line.
#[cold]
#[inline(never)]
fn ns3_tx_ns_huge(x: f64) -> u64 {
    let hi = x.floor();
    ns_of_seconds(x, hi, hi as u64)
}

/// ns-3.17's integer nanoseconds of `x` seconds whose whole part is `hi` (`hi_int` as an
/// integer): the fraction as a 64-bit fixed-point number, scaled by 1e9 and truncated.
#[inline(always)]
fn ns_of_seconds(x: f64, hi: f64, hi_int: u64) -> u64 {
    let lo = ((x - hi) * 18446744073709551616.0) as u64; // (x - hi) * 2^64, exact in double
    hi_int * 1_000_000_000 + ((lo as u128 * 1_000_000_000u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_serialisation() {
        assert_eq!(Rate::gbps(100).tx_time(1), Time(80));
        assert_eq!(Rate::gbps(400).tx_time(1048), Time(20_960));
        assert_eq!(Rate::gbps(25).tx_time(1000), Time(320_000));
    }

    #[test]
    fn ns3_truncation_matches_model_examples() {
        // Packet times of the reference's runs, as its ns-3 library computes them.
        assert_eq!(ns3_tx_ns(1000, 100_000_000_000), 79);
        assert_eq!(ns3_tx_ns(500, 100_000_000_000), 39);
        assert_eq!(ns3_tx_ns(1000, 400_000_000_000), 19);
        assert_eq!(ns3_tx_ns(1048, 100_000_000_000), 83);
        assert_eq!(ns3_tx_ns(1048, 400_000_000_000), 20);
        assert_eq!(ns3_tx_ns(1090, 100_000_000_000), 87);
        assert_eq!(ns3_tx_ns(1090, 400_000_000_000), 21);
        assert_eq!(ns3_tx_ns(60, 100_000_000_000), 4);
        assert_eq!(ns3_tx_ns(88, 100_000_000_000), 7);
        assert_eq!(ns3_tx_ns(60, 400_000_000_000), 1);
    }

    /// The conversion as ns-3.17 writes it, with `floor`, at any size.
    fn with_floor(bytes: u64, bps: u64) -> u64 {
        let x = bytes as f64 * 8.0 / bps as f64;
        ns3_tx_ns_huge(x)
    }

    #[test]
    fn ns3_time_without_the_floor_call_is_the_same() {
        for bytes in (0..20_000u64).step_by(3) {
            for bps in [
                1_000_000_000u64,
                10_000_000_000,
                25_000_000_000,
                40_000_000_000,
                100_000_000_000,
                400_000_000_000,
                3,
                1_000,
                7_777_777_777,
                123_456_789_012,
            ] {
                assert_eq!(ns3_tx_ns(bytes, bps), with_floor(bytes, bps), "{bytes} B at {bps} b/s");
            }
        }
        // Up to the largest time whose nanoseconds fit in 64 bits (some 1.8e10 s).
        for bytes in [1u64 << 40, 1 << 50, u64::MAX / 8] {
            let bps = bytes / 2_000_000_000 + 1;
            assert_eq!(ns3_tx_ns(bytes, bps), with_floor(bytes, bps), "{bytes} B at {bps} b/s");
        }
    }

    #[test]
    fn ns3_floor_truncates_the_exact_time() {
        // m4's published FCTs: 130 B at 10 Gb/s take 104 ns (the reference's ns-3: 103), 226 B 180 ns.
        assert_eq!(TimingModel::Ns3Floor.tx_time(Rate::gbps(10), 130), Time::from_ns(104));
        assert_eq!(TimingModel::Ns3.tx_time(Rate::gbps(10), 130), Time::from_ns(103));
        assert_eq!(TimingModel::Ns3Floor.tx_time(Rate::gbps(10), 226), Time::from_ns(180));
    }
}
