//! `[fabric.cc_params]`: congestion-control parameters in a scenario, named as the reference's
//! config keys (lower case), so a sweep can vary them like any other field.
//!
//! ```toml
//! [fabric]
//! cc = "dcqcn"
//! [fabric.cc_params]
//! ewma_gain = 0.00390625
//! rate_ai = "40Mb/s"
//! rp_timer = "100us"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use super::super::{field_rate, field_time};
use crate::cc::ib::{CctEntry, IbParams, MAX_CCTI_TIMER, MAX_CCT_ENTRIES};
use crate::cc::ib_presets::{cct_static_name, named_cct, preset, threshold_bytes, CCT_NAMES, PRESET_NAMES};
use crate::cc::{CcConfig, DasrFallback};
use crate::error::{Error, Result};
use crate::units::{Rate, Time};

/// The raw table: key → TOML value.
pub(super) type CcParamTable = BTreeMap<String, toml::Value>;

/// Applies `table` to the parameters of `cc`; unknown keys and wrong types are errors naming
/// `fabric.cc_params.KEY`.
pub(super) fn apply(cc: &mut CcConfig, table: &CcParamTable, file: &Path) -> Result<()> {
    apply_ib_preset(cc, table, file)?;
    for (key, value) in table {
        let v = Value { file, key, value };
        let known = match cc {
            CcConfig::None => false,
            CcConfig::Dcqcn(p) => dcqcn_key(p, &v)?,
            CcConfig::Blitz(p) => match key.as_str() {
                "dasr_utilization" => set(&mut p.dasr.utilization, v.fraction()?),
                "dasr_count" => set(&mut p.dasr.count, v.dasr_count()?),
                "dasr_edge_ecn" => set(&mut p.dasr.edge_ecn, v.flag()?),
                "dasr_fallback" => set(&mut p.fallback, v.dasr_fallback()?),
                "byte_counter" => return Err(v.bad("nothing here: DCQCN's byte counter needs cc = \"dcqcn\"")),
                _ => ib_key(&mut p.ib, &v)? || dcqcn_key(&mut p.dcqcn, &v)?,
            },
            CcConfig::Ib(p) => ib_key(p, &v)?,
            CcConfig::Hpcc(p) => match key.as_str() {
                "u_target" => set(&mut p.eta, v.fraction()?),
                "mi_thresh" => set(&mut p.max_stage, v.count()?),
                "rate_ai" => set(&mut p.rate_ai, v.rate()?),
                "min_rate" => set(&mut p.min_rate, v.rate()?),
                "fast_react" => set(&mut p.fast_react, v.flag()?),
                "multi_rate" => set(&mut p.multi_rate, v.flag()?),
                "sample_feedback" => set(&mut p.sample_feedback, v.flag()?),
                _ => false,
            },
            CcConfig::Timely(p) => match key.as_str() {
                "rate_ai" => set(&mut p.rate_ai, v.rate()?),
                "rate_hai" => set(&mut p.rate_hai, v.rate()?),
                "min_rate" => set(&mut p.min_rate, v.rate()?),
                _ => false,
            },
            CcConfig::Dctcp(p) => match key.as_str() {
                "ewma_gain" => set(&mut p.g, v.fraction()?),
                "dctcp_rate_ai" => set(&mut p.rate_ai, v.rate()?),
                "min_rate" => set(&mut p.min_rate, v.rate()?),
                _ => false,
            },
            CcConfig::Swift(p) => swift_key(p, &v)?,
            CcConfig::Nscc(p) => nscc_key(p, &v)?,
        };
        if !known {
            return Err(Error::input(
                file,
                0,
                v.field(),
                format!("not a parameter of congestion control `{}`", cc.name()),
            ));
        }
    }
    check_blitz_fallback(cc, table, file)?;
    let window = match cc {
        CcConfig::Swift(p) => p.check(),
        CcConfig::Nscc(p) => p.check(),
        _ => Ok(()),
    };
    window.map_err(|(key, m)| Error::input(file, 0, format!("fabric.cc_params.{key}"), m))?;
    let Some(p) = ib_params_mut(cc) else {
        return Ok(());
    };
    if table.contains_key("cct") && !table.contains_key("ccti_limit") {
        p.ccti_limit = p.cct.len().saturating_sub(1) as u16; // OpenSM: the table's last entry
    }
    check_ib_keys(p, table, file)?;
    p.check().map_err(|(key, m)| Error::input(file, 0, format!("fabric.cc_params.{key}"), m))
}

/// `ib_cc_preset`: the named set replaces the InfiniBand parameters before any other key
/// applies (so that keys beside it override it, whatever their order in the file).
fn apply_ib_preset(cc: &mut CcConfig, table: &CcParamTable, file: &Path) -> Result<()> {
    let Some(value) = table.get("ib_cc_preset") else {
        return Ok(());
    };
    let v = Value { file, key: "ib_cc_preset", value };
    let target = match cc {
        CcConfig::Ib(p) => p,
        CcConfig::Blitz(b) => &mut b.ib, // the fall-back's check comes after
        _ => return Ok(()),              // refused as an unknown key below
    };
    let want = || format!("one of {}", PRESET_NAMES.map(|n| format!("\"{n}\"")).join(", "));
    let name = value.as_str().ok_or_else(|| v.bad(&want()))?;
    *target = preset(name).ok_or_else(|| v.bad(&want()))?.params;
    Ok(())
}

/// After every key: `threshold` and `threshold_level` are one setting, and a preset's open
/// keys must be given.
fn check_ib_keys(p: &IbParams, table: &CcParamTable, file: &Path) -> Result<()> {
    if table.contains_key("threshold") && table.contains_key("threshold_level") {
        let m = "give either threshold (bytes) or threshold_level (annex A10's 0-15), not both";
        return Err(Error::input(file, 0, "fabric.cc_params.threshold_level", m));
    }
    if !table.contains_key("ib_cc_preset") {
        return Ok(());
    }
    let open = preset(p.preset).map(|s| s.open).unwrap_or(&[]);
    let given = |key: &str| table.contains_key(key) || (key == "threshold_level" && table.contains_key("threshold"));
    if let Some((key, why)) = open.iter().find(|(key, _)| !given(key)) {
        let m = format!("ib_cc_preset = \"{}\" leaves it open ({why}): give one", p.preset);
        return Err(Error::input(file, 0, format!("fabric.cc_params.{key}"), m));
    }
    Ok(())
}

fn ib_params_mut(cc: &mut CcConfig) -> Option<&mut IbParams> {
    match cc {
        CcConfig::Ib(p) => Some(p),
        CcConfig::Blitz(b) if b.fallback == DasrFallback::Ib => Some(&mut b.ib),
        _ => None,
    }
}

/// Blitz's keys must belong to the fall-back it runs: InfiniBand keys need
/// `dasr_fallback = "ib"`, DCQCN keys the DCQCN fall-back.
fn check_blitz_fallback(cc: &CcConfig, table: &CcParamTable, file: &Path) -> Result<()> {
    let CcConfig::Blitz(b) = cc else {
        return Ok(());
    };
    for key in table.keys() {
        let is_ib = IB_KEYS.contains(&key.as_str());
        let wrong = match b.fallback {
            DasrFallback::Dcqcn if is_ib => "an InfiniBand CC key: needs `dasr_fallback = \"ib\"`",
            DasrFallback::Ib if !is_ib && !key.starts_with("dasr_") => {
                "a DCQCN key, but `dasr_fallback = \"ib\"` runs InfiniBand CC"
            }
            _ => continue,
        };
        return Err(Error::input(file, 0, format!("fabric.cc_params.{key}"), wrong));
    }
    Ok(())
}

/// The keys of InfiniBand congestion control.
const IB_KEYS: [&str; 10] = [
    "threshold",
    "threshold_level",
    "marking_rate",
    "packet_size",
    "ccti_increase",
    "ccti_limit",
    "ccti_min",
    "ccti_timer",
    "cct",
    "ib_cc_preset",
];

/// An InfiniBand CC key (`cc = "ib"`, Blitz's `ib` fall-back); false when `v` names none.
/// Ranges are the fields' widths in annex A10 (Mellanox's for `packet_size`, in bytes).
fn ib_key(p: &mut IbParams, v: &Value<'_>) -> Result<bool> {
    Ok(match v.key {
        "threshold" => set(&mut p.marking.threshold, v.int_in(0, u32::MAX as i64)? as u64),
        "threshold_level" => set(&mut p.marking.threshold, v.threshold_level()?),
        "ib_cc_preset" => true, // applied first (`apply_ib_preset`)
        "marking_rate" => set(&mut p.marking.marking_rate, v.int_in(0, u16::MAX as i64)? as u16),
        "packet_size" => set(&mut p.marking.packet_size, v.int_in(0, 0x3FC0)? as u32),
        "ccti_increase" => set(&mut p.ccti_increase, v.int_in(1, 255)? as u16),
        "ccti_limit" => set(&mut p.ccti_limit, v.int_in(0, MAX_CCT_ENTRIES as i64 - 1)? as u16),
        "ccti_min" => set(&mut p.ccti_min, v.int_in(0, 255)? as u16),
        "ccti_timer" => set(&mut p.ccti_timer, v.ccti_timer()?),
        "cct" => {
            let (cct, name) = v.cct()?;
            p.cct_name = name;
            set(&mut p.cct, cct)
        }
        _ => false,
    })
}

/// A DCQCN key (also Blitz's fall-back); false when `v` names none.
fn dcqcn_key(p: &mut crate::cc::DcqcnParams, v: &Value<'_>) -> Result<bool> {
    Ok(match v.key {
        "ewma_gain" => set(&mut p.g, v.fraction()?),
        "alpha_resume_interval" => set(&mut p.alpha_interval, v.time()?),
        "rate_decrease_interval" => set(&mut p.decrease_interval, v.time()?),
        "rp_timer" => set(&mut p.rp_timer, v.time()?),
        "fast_recovery_times" => set(&mut p.fast_recovery_times, v.count()?),
        "rate_ai" => set(&mut p.rate_ai, v.rate()?),
        "rate_hai" => set(&mut p.rate_hai, v.rate()?),
        "min_rate" => set(&mut p.min_rate, v.rate()?),
        "clamp_target_rate" => set(&mut p.clamp_target, v.flag()?),
        "byte_counter" => set(&mut p.byte_counter, v.bytes()?),
        "initial_alpha" => set(&mut p.initial_alpha, v.fraction()?),
        _ => false,
    })
}

/// A Swift key (`cc = "swift"`); false when `v` names none.
fn swift_key(p: &mut crate::cc::SwiftParams, v: &Value<'_>) -> Result<bool> {
    Ok(match v.key {
        "swift_ai" => set(&mut p.ai, v.positive()?),
        "swift_beta" => set(&mut p.beta, v.positive()?),
        "swift_max_mdf" => set(&mut p.max_mdf, v.positive()?),
        "swift_base_target" => set(&mut p.base_target, v.time()?),
        "swift_hop_scale" => set(&mut p.hop_scale, v.time_or_zero()?),
        "swift_fs_range" => set(&mut p.fs_range, v.time_or_zero()?),
        "swift_fs_min_cwnd" => set(&mut p.fs_min_cwnd, v.positive()?),
        "swift_fs_max_cwnd" => set(&mut p.fs_max_cwnd, v.positive()?),
        "swift_min_cwnd" => set(&mut p.min_cwnd, v.positive()?),
        "swift_max_cwnd" => set(&mut p.max_cwnd, v.positive()?),
        "swift_retx_reset_threshold" => set(&mut p.retx_reset_threshold, v.int_in(1, 1_000_000)? as u32),
        _ => false,
    })
}

/// An NSCC key (`cc = "nscc"`); false when `v` names none.
fn nscc_key(p: &mut crate::cc::NsccParams, v: &Value<'_>) -> Result<bool> {
    Ok(match v.key {
        "nscc_target_qdelay" => set(&mut p.target_qdelay, Some(v.time()?)),
        "nscc_network_rtt" => set(&mut p.network_rtt, Some(v.time()?)),
        "nscc_gamma" => set(&mut p.gamma, v.positive()?),
        "nscc_delay_gain" => set(&mut p.delay_gain, v.fraction()?),
        "nscc_qa_gate" => set(&mut p.qa_gate, v.int_in(0, 30)? as u32),
        "nscc_quick_adapt" => set(&mut p.quick_adapt, v.flag()?),
        "nscc_max_window" => set(&mut p.max_window, v.positive()?),
        _ => false,
    })
}

fn set<T>(slot: &mut T, value: T) -> bool {
    *slot = value;
    true
}

struct Value<'a> {
    file: &'a Path,
    key: &'a str,
    value: &'a toml::Value,
}

impl Value<'_> {
    fn field(&self) -> String {
        format!("fabric.cc_params.{}", self.key)
    }
    fn bad(&self, want: &str) -> Error {
        Error::input(self.file, 0, self.field(), format!("expected {want}, got {}", self.value))
    }
    fn fraction(&self) -> Result<f64> {
        let x = self.value.as_float().or_else(|| self.value.as_integer().map(|i| i as f64));
        match x {
            Some(x) if x > 0.0 && x <= 1.0 => Ok(x),
            _ => Err(self.bad("a number in (0, 1]")),
        }
    }
    fn positive(&self) -> Result<f64> {
        let x = self.value.as_float().or_else(|| self.value.as_integer().map(|i| i as f64));
        match x {
            Some(x) if x > 0.0 && x.is_finite() => Ok(x),
            _ => Err(self.bad("a positive number")),
        }
    }
    fn time_or_zero(&self) -> Result<Time> {
        let s = self.value.as_str().ok_or_else(|| self.bad("a time string such as \"4us\""))?;
        field_time(self.file, &self.field(), s)
    }
    /// A byte count: 0 (off) up to 1 GB, which no run sends between two increases.
    fn bytes(&self) -> Result<u64> {
        match self.value.as_integer() {
            Some(i) if (0..=1_000_000_000).contains(&i) => Ok(i as u64),
            _ => Err(self.bad("a byte count from 0 (off) to 1000000000")),
        }
    }
    fn count(&self) -> Result<u32> {
        match self.value.as_integer() {
            Some(i) if (0..=u32::MAX as i64).contains(&i) => Ok(i as u32),
            _ => Err(self.bad("a non-negative integer")),
        }
    }
    fn flag(&self) -> Result<bool> {
        self.value
            .as_bool()
            .or_else(|| self.value.as_integer().filter(|i| *i == 0 || *i == 1).map(|i| i == 1))
            .ok_or_else(|| self.bad("true/false"))
    }
    fn int_in(&self, lo: i64, hi: i64) -> Result<i64> {
        match self.value.as_integer() {
            Some(i) if (lo..=hi).contains(&i) => Ok(i),
            _ => Err(self.bad(&format!("an integer in [{lo}, {hi}]"))),
        }
    }
    fn dasr_fallback(&self) -> Result<DasrFallback> {
        let s = self.value.as_str().ok_or_else(|| self.bad("\"dcqcn\" or \"ib\""))?;
        DasrFallback::from_name(s).map_err(|_| self.bad("\"dcqcn\" or \"ib\""))
    }
    /// A10's threshold level, 0 (no marking) to 15 (most aggressive), as a queue depth.
    fn threshold_level(&self) -> Result<u64> {
        let level = self.int_in(0, 15)? as u8;
        Ok(threshold_bytes(level).expect("a level in range"))
    }
    /// The timer as a time (\"50us\") or as A10 encodes it: an integer count of 1.024 us.
    fn ccti_timer(&self) -> Result<Time> {
        if let Some(units) = self.value.as_integer() {
            if !(1..=65_535).contains(&units) {
                return Err(self.bad("an integer count of 1.024us units in [1, 65535] or a time such as \"50us\""));
            }
            return Ok(Time(units as u64 * 1_024_000));
        }
        let t = self.time()?;
        if t > MAX_CCTI_TIMER {
            return Err(self.bad("a time of at most 65535 x 1.024us (the spec's 16-bit field)"));
        }
        Ok(t)
    }
    /// The table: entries as the spec encodes them (16-bit integers, shift in bits 15-14)
    /// or as OpenSM writes them (\"shift:multiplier\").
    /// Or a named table (`\"mellanox_default\"`), whose name is kept for printing.
    fn cct(&self) -> Result<(Vec<CctEntry>, Option<&'static str>)> {
        if let Some(name) = self.value.as_str() {
            let want =
                || format!("a list of CCT entries or one of {}", CCT_NAMES.map(|n| format!("\"{n}\"")).join(", "));
            let name = cct_static_name(name).ok_or_else(|| self.bad(&want()))?;
            return Ok((named_cct(name).expect("a named table"), Some(name)));
        }
        let list = self.value.as_array().ok_or_else(|| self.bad("a list of CCT entries or a table's name"))?;
        if list.len() > MAX_CCT_ENTRIES {
            return Err(self.bad(&format!("at most {MAX_CCT_ENTRIES} entries")));
        }
        let cct = list.iter().enumerate().map(|(i, e)| self.cct_entry(i, e)).collect::<Result<_>>()?;
        Ok((cct, None))
    }
    fn cct_entry(&self, i: usize, e: &toml::Value) -> Result<CctEntry> {
        let parsed = match e {
            toml::Value::Integer(n) => u16::try_from(*n).ok().map(CctEntry::from_bits),
            toml::Value::String(s) => s.split_once(':').and_then(|(sh, m)| {
                let (sh, m) = (sh.trim().parse::<u8>().ok()?, m.trim().parse::<u16>().ok()?);
                (sh <= 3 && m <= 0x3FFF).then_some(CctEntry { shift: sh, multiplier: m })
            }),
            _ => None,
        };
        parsed.ok_or_else(|| {
            let want =
                "a 16-bit entry (shift << 14 | multiplier) or \"shift:multiplier\" (shift 0..3, multiplier 0..16383)";
            Error::input(self.file, 0, self.field(), format!("entry {i}: expected {want}, got {e}"))
        })
    }
    fn dasr_count(&self) -> Result<crate::cc::DasrCount> {
        let s = self.value.as_str().ok_or_else(|| self.bad("\"qp\" or \"host\""))?;
        crate::cc::DasrCount::from_name(s).map_err(|_| self.bad("\"qp\" or \"host\""))
    }
    fn rate(&self) -> Result<Rate> {
        let s = self.value.as_str().ok_or_else(|| self.bad("a rate string such as \"20Mb/s\""))?;
        field_rate(self.file, &self.field(), s)
    }
    fn time(&self) -> Result<Time> {
        let s = self.value.as_str().ok_or_else(|| self.bad("a time string such as \"4us\""))?;
        let t = field_time(self.file, &self.field(), s)?;
        if t == Time::ZERO {
            return Err(self.bad("a positive time"));
        }
        Ok(t)
    }
}
