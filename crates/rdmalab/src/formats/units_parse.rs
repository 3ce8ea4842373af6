//! ns-3 `DataRate` and `Time` strings (`100Gbps`, `20Mb/s`, `1000ns`, `0.001ms`), parsed
//! exactly, and the reference's conversion of a flow's start seconds to nanoseconds.
//!
//! ns-3 goes through `double`; we parse the decimal digits into an integer mantissa and a
//! power of ten, so `0.001ms` is exactly 1,000,000 ps and `1.5Gbps` exactly 1.5e9 bit/s. A
//! value that is not a whole number of the target unit (bit/s, ps) is an error rather than
//! a silent rounding. The one place where the reference's binary rounding is part of the
//! format, the flow file's start time, is reproduced bit for bit by
//! [`f64_seconds_to_ns_floor`].

use std::fmt;

use super::tokens::show;
use crate::units::{Rate, Time};

/// Why a unit string was refused. The callers add the file, line and field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValueError {}

fn bad(msg: String) -> ValueError {
    ValueError(msg)
}

/// An exact non-negative decimal: `mantissa × 10^exp10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    /// The significant digits as an integer.
    pub mantissa: u128,
    /// The power of ten that scales the mantissa.
    pub exp10: i32,
}

/// Largest exponent magnitude accepted in `1e<exp>`; far beyond any meaningful value.
const MAX_EXP: i32 = 10_000;

impl Decimal {
    /// Parses `[+]digits[.digits][(e|E)[+|-]digits]` (at least one digit before or after the
    /// point). Refuses a leading `-` as negative.
    pub fn parse(s: &str) -> Result<Decimal, ValueError> {
        if s.starts_with('-') {
            return Err(bad(format!("`{}` is negative", show(s))));
        }
        let body = s.strip_prefix('+').unwrap_or(s);
        let (num, exp) = match body.find(['e', 'E']) {
            Some(i) => (body.get(..i).unwrap_or(""), Some(body.get(i + 1..).unwrap_or(""))),
            None => (body, None),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return Err(bad(format!("`{}` is not a decimal number", show(s))));
        }
        let mut d = Decimal::from_digits(int.bytes().chain(frac.bytes()), s)?;
        let shift = exp.map(|e| parse_exp(e, s)).transpose()?.unwrap_or(0);
        let frac_len = i32::try_from(frac.len()).map_err(|_| bad(format!("`{}` has too many digits", show(s))))?;
        d.exp10 = d.exp10.saturating_add(shift).saturating_sub(frac_len);
        Ok(d)
    }

    /// Mantissa and exponent of a digit string; zeros are counted, not multiplied, so
    /// `1.000…0` with many zeros does not overflow.
    fn from_digits(digits: impl Iterator<Item = u8>, s: &str) -> Result<Decimal, ValueError> {
        let mut mantissa: u128 = 0;
        let mut zeros: u32 = 0;
        for b in digits {
            let d = u128::from(b - b'0');
            if d == 0 {
                zeros = zeros.saturating_add(1);
                continue;
            }
            mantissa = if mantissa == 0 {
                d
            } else {
                10u128
                    .checked_pow(zeros + 1)
                    .and_then(|p| mantissa.checked_mul(p))
                    .and_then(|m| m.checked_add(d))
                    .ok_or_else(|| bad(format!("`{}` has too many significant digits", show(s))))?
            };
            zeros = 0;
        }
        let exp10 = if mantissa == 0 { 0 } else { i32::try_from(zeros).unwrap_or(i32::MAX) };
        Ok(Decimal { mantissa, exp10 })
    }

    /// The value times `mult × 10^pow10`, if that is a whole number that fits in `u128`.
    pub fn scaled(self, mult: u128, pow10: i32) -> Option<u128> {
        let m = self.mantissa.checked_mul(mult)?;
        if m == 0 {
            return Some(0);
        }
        let e = self.exp10.checked_add(pow10)?;
        if e >= 0 {
            m.checked_mul(10u128.checked_pow(e.unsigned_abs())?)
        } else {
            let div = 10u128.checked_pow(e.unsigned_abs())?;
            (m % div == 0).then_some(m / div)
        }
    }

    /// The value times `mult × 10^pow10` as a `u64`, or a message saying why not.
    fn whole(self, mult: u128, pow10: i32, s: &str, unit: &str) -> Result<u64, ValueError> {
        let v = self
            .scaled(mult, pow10)
            .ok_or_else(|| bad(format!("`{}` is not a whole number of {unit} or is too large", show(s))))?;
        u64::try_from(v).map_err(|_| bad(format!("`{}` is too large", show(s))))
    }
}

fn parse_exp(e: &str, s: &str) -> Result<i32, ValueError> {
    let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
    let ok = !digits.is_empty() && digits.len() <= 6 && digits.bytes().all(|b| b.is_ascii_digit());
    match e.parse::<i32>() {
        Ok(v) if ok && v.abs() <= MAX_EXP => Ok(v),
        _ => Err(bad(format!("`{}` has a bad exponent", show(s)))),
    }
}

/// Splits `100Gbps` into (`100`, `Gbps`): the number is the longest prefix made of digits,
/// `.`, signs and exponent letters (no unit starts with `e`/`E`).
fn split_unit(s: &str) -> (&str, &str) {
    let i = s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-' | 'e' | 'E'))).unwrap_or(s.len());
    (s.get(..i).unwrap_or(""), s.get(i..).unwrap_or(""))
}

/// ns-3 `DataRate` units: bit or byte based, SI (1000) or binary (1024) prefixes.
const RATE_UNITS: &[(&str, u128)] = &[
    ("bps", 1),
    ("b/s", 1),
    ("Bps", 8),
    ("B/s", 8),
    ("kbps", 1_000),
    ("Kbps", 1_000),
    ("kb/s", 1_000),
    ("Kb/s", 1_000),
    ("kBps", 8_000),
    ("KBps", 8_000),
    ("kB/s", 8_000),
    ("KB/s", 8_000),
    ("Kib/s", 1 << 10),
    ("KiB/s", 8 << 10),
    ("Mbps", 1_000_000),
    ("Mb/s", 1_000_000),
    ("MBps", 8_000_000),
    ("MB/s", 8_000_000),
    ("Mib/s", 1 << 20),
    ("MiB/s", 8 << 20),
    ("Gbps", 1_000_000_000),
    ("Gb/s", 1_000_000_000),
    ("GBps", 8_000_000_000),
    ("GB/s", 8_000_000_000),
    ("Gib/s", 1 << 30),
    ("GiB/s", 8 << 30),
    ("Tbps", 1_000_000_000_000),
    ("Tb/s", 1_000_000_000_000),
];

/// ns-3 `Time` units in picoseconds (`fs` is allowed when it makes whole picoseconds).
/// A bare number would be seconds in ns-3; we refuse it as a likely mistake.
const TIME_UNITS: &[(&str, u128, i32)] = &[
    ("s", 1, 12),
    ("ms", 1, 9),
    ("us", 1, 6),
    ("ns", 1, 3),
    ("ps", 1, 0),
    ("fs", 1, -3),
    ("min", 60, 12),
    ("h", 3_600, 12),
    ("d", 86_400, 12),
];

/// Parses an ns-3 `DataRate` string (`100Gbps`, `20Mb/s`, `1.5Gbps`, `8KBps`) into bit/s.
/// Zero is allowed here; see [`parse_nonzero_rate`].
pub fn parse_rate(s: &str) -> Result<Rate, ValueError> {
    let (num, unit) = split_unit(s);
    if unit.is_empty() {
        return Err(bad(format!("`{}` has no unit (expected e.g. `100Gbps`, `20Mb/s`)", show(s))));
    }
    let mult = RATE_UNITS.iter().find(|(u, _)| *u == unit).map(|&(_, m)| m).ok_or_else(|| {
        bad(format!(
            "unknown data-rate unit `{}` in `{}` (known: bps, b/s, Kbps, Mbps, Gbps, ...)",
            show(unit),
            show(s)
        ))
    })?;
    let d = Decimal::parse(num).map_err(|e| bad(format!("`{}`: {e}", show(s))))?;
    d.whole(mult, 0, s, "bit/s").map(Rate)
}

/// [`parse_rate`], refusing zero.
pub fn parse_nonzero_rate(s: &str) -> Result<Rate, ValueError> {
    match parse_rate(s)? {
        Rate(0) => Err(bad(format!("`{}` is a zero rate", show(s)))),
        r => Ok(r),
    }
}

/// Byte units: decimal (`KB` = 1000 B) and binary (`KiB` = 1024 B).
const BYTE_UNITS: [(&str, u128); 9] = [
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// Parses a byte count (`64MiB`, `1.5KB`, `4096B`) exactly: its value must be whole bytes.
pub fn parse_bytes(s: &str) -> Result<u64, ValueError> {
    let (num, unit) = split_unit(s);
    if unit.is_empty() {
        return Err(bad(format!("`{}` has no unit (expected e.g. `64MiB`, `4096B`)", show(s))));
    }
    let mult = BYTE_UNITS.iter().find(|(u, _)| *u == unit).map(|&(_, m)| m).ok_or_else(|| {
        bad(format!(
            "unknown byte unit `{}` in `{}` (known: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
            show(unit),
            show(s)
        ))
    })?;
    let d = Decimal::parse(num).map_err(|e| bad(format!("`{}`: {e}", show(s))))?;
    d.whole(mult, 0, s, "bytes")
}

/// Parses an ns-3 `Time` string (`1000ns`, `0.001ms`, `1us`, `2s`) into exact picoseconds.
pub fn parse_time(s: &str) -> Result<Time, ValueError> {
    let (num, unit) = split_unit(s);
    if unit.is_empty() {
        return Err(bad(format!("`{}` has no unit (expected e.g. `1000ns`, `1us`)", show(s))));
    }
    let (mult, pow10) = TIME_UNITS.iter().find(|(u, _, _)| *u == unit).map(|&(_, m, p)| (m, p)).ok_or_else(|| {
        bad(format!("unknown time unit `{}` in `{}` (known: s, ms, us, ns, ps)", show(unit), show(s)))
    })?;
    let d = Decimal::parse(num).map_err(|e| bad(format!("`{}`: {e}", show(s))))?;
    d.whole(mult, pow10, s, "picoseconds").map(Time)
}

/// A plain decimal number of some unit (`1` µs, `4.00` s) as exact picoseconds:
/// `ps_pow10` is the unit's power of ten in picoseconds (6 for µs, 12 for s).
pub fn parse_decimal_time(s: &str, ps_pow10: i32) -> Result<Time, ValueError> {
    Decimal::parse(s)?.whole(1, ps_pow10, s, "picoseconds").map(Time)
}

/// `floor(exact(x) × 1e9)`: the reference's start time in ns for a flow-file start of `x`
/// seconds, where `x` is the `f64` nearest the printed decimal (as its FCT files show). Computed
/// from the float's mantissa and exponent, without rounding. `None` for negative,
/// non-finite or too large values.
pub fn f64_seconds_to_ns_floor(x: f64) -> Option<u64> {
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // x = m × 2^e exactly.
    let (m, e) = if exp_bits == 0 { (frac, -1074) } else { (frac | (1u64 << 52), exp_bits - 1075) };
    let scaled = u128::from(m) * 1_000_000_000; // < 2^83
    let ns = if e >= 0 {
        let e = e.unsigned_abs();
        if e >= scaled.leading_zeros() {
            return None;
        }
        scaled << e
    } else {
        let s = e.unsigned_abs();
        if s >= 128 {
            0
        } else {
            scaled >> s
        }
    };
    u64::try_from(ns).ok()
}

/// A flow-file start (`2.000000067`, seconds) as the reference's start time: the decimal is
/// read as the nearest `f64`, then [`f64_seconds_to_ns_floor`], in whole ns.
pub fn parse_start_seconds(s: &str) -> Result<Time, ValueError> {
    let x = super::tokens::parse_f64(s).map_err(bad)?;
    f64_seconds_to_ns_floor(x)
        .and_then(|ns| ns.checked_mul(Time::PS_PER_NS))
        .map(Time)
        .ok_or_else(|| bad(format!("`{}` seconds is too large", show(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_the_reference_files() {
        assert_eq!(parse_rate("100Gbps"), Ok(Rate::gbps(100)));
        assert_eq!(parse_rate("400Gbps"), Ok(Rate::gbps(400)));
        assert_eq!(parse_rate("25Gbps"), Ok(Rate::gbps(25)));
        assert_eq!(parse_rate("20Mb/s"), Ok(Rate::mbps(20)));
        assert_eq!(parse_rate("1000Mb/s"), Ok(Rate::mbps(1000)));
        assert_eq!(parse_rate("10Kbps"), Ok(Rate(10_000)));
        assert_eq!(parse_rate("7bps"), Ok(Rate(7)));
        assert_eq!(parse_rate("1.5Gbps"), Ok(Rate(1_500_000_000)));
        assert_eq!(parse_rate("1KiB/s"), Ok(Rate(8192)));
        assert_eq!(parse_rate("1e2Gbps"), Ok(Rate::gbps(100)));
        assert_eq!(parse_rate("0bps"), Ok(Rate(0)));
    }

    #[test]
    fn bad_rates() {
        assert!(parse_rate("100Gbs").unwrap_err().0.contains("unknown data-rate unit"));
        assert!(parse_rate("-1Gbps").unwrap_err().0.contains("negative"));
        assert!(parse_rate("100").unwrap_err().0.contains("no unit"));
        assert!(parse_rate("bps").unwrap_err().0.contains("not a decimal"));
        assert!(parse_rate("0.5bps").unwrap_err().0.contains("whole number"));
        assert!(parse_nonzero_rate("0Gbps").unwrap_err().0.contains("zero"));
        assert!(parse_rate("99999999999Tbps").is_err());
        assert!(parse_rate("1.2.3Gbps").is_err());
    }

    #[test]
    fn byte_counts_are_exact() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_bytes("0.5KiB"), Ok(512));
        assert_eq!(parse_bytes("4096B"), Ok(4096));
        assert_eq!(parse_bytes("1e3MB"), Ok(1_000_000_000));
        assert!(parse_bytes("0.1B").unwrap_err().0.contains("whole number"));
        assert!(parse_bytes("64").unwrap_err().0.contains("no unit"));
        assert!(parse_bytes("64Mb").unwrap_err().0.contains("unknown byte unit"));
        assert!(parse_bytes("-1KB").unwrap_err().0.contains("negative"));
    }

    #[test]
    fn times_are_exact() {
        assert_eq!(parse_time("1000ns"), Ok(Time(1_000_000)));
        assert_eq!(parse_time("0.001ms"), Ok(Time(1_000_000)));
        assert_eq!(parse_time("1us"), Ok(Time(1_000_000)));
        assert_eq!(parse_time("2s"), Ok(Time(2_000_000_000_000)));
        assert_eq!(parse_time("0.000000000001s"), Ok(Time(1)));
        assert_eq!(parse_time("1000fs"), Ok(Time(1)));
        assert_eq!(parse_time("1.0000000000000000000000000000000000000000000ns"), Ok(Time(1000)));
        assert!(parse_time("1fs").unwrap_err().0.contains("whole number"));
        assert!(parse_time("1000").unwrap_err().0.contains("no unit"));
        assert!(parse_time("-1ns").unwrap_err().0.contains("negative"));
        assert!(parse_time("1xs").unwrap_err().0.contains("unknown time unit"));
        assert_eq!(parse_decimal_time("4.00", 12), Ok(Time(4_000_000_000_000)));
    }

    #[test]
    fn start_seconds_floor_the_exact_double() {
        // S1_flow.txt line 2 `2.000000067` is 2000000067 in S1_*_fct.txt (the reference's output).
        assert_eq!(parse_start_seconds("2.000000067"), Ok(Time::from_ns(2_000_000_067)));
        // S1_flow.txt line 4 `2.000000273` is a double just below the decimal; the reference
        // prints 2000000272 (S1_dcqcn_fct.txt, flow 0b00b301 -> 0b002601).
        assert_eq!(f64_seconds_to_ns_floor(2.000000273), Some(2_000_000_272));
        assert_eq!(f64_seconds_to_ns_floor(2.000000183), Some(2_000_000_183));
        assert_eq!(f64_seconds_to_ns_floor(0.0), Some(0));
        assert_eq!(f64_seconds_to_ns_floor(5e-324), Some(0));
        assert_eq!(f64_seconds_to_ns_floor(1.0), Some(1_000_000_000));
        assert_eq!(f64_seconds_to_ns_floor(-1.0), None);
        assert_eq!(f64_seconds_to_ns_floor(1e300), None);
        assert!(parse_start_seconds("nan").is_err());
    }
}
