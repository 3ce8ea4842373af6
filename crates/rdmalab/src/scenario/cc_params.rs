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

use super::{field_rate, field_time};
use crate::cc::CcConfig;
use crate::error::{Error, Result};
use crate::units::{Rate, Time};

/// The raw table: key → TOML value.
pub(super) type CcParamTable = BTreeMap<String, toml::Value>;

/// Applies `table` to the parameters of `cc`; unknown keys and wrong types are errors naming
/// `fabric.cc_params.KEY`.
pub(super) fn apply(cc: &mut CcConfig, table: &CcParamTable, file: &Path) -> Result<()> {
    for (key, value) in table {
        let v = Value { file, key, value };
        let known = match cc {
            CcConfig::None => false,
            CcConfig::Dcqcn(p) => dcqcn_key(p, &v)?,
            CcConfig::Blitz(p) => match key.as_str() {
                "dasr_utilization" => set(&mut p.dasr.utilization, v.fraction()?),
                "dasr_count" => set(&mut p.dasr.count, v.dasr_count()?),
                "dasr_edge_ecn" => set(&mut p.dasr.edge_ecn, v.flag()?),
                _ => dcqcn_key(&mut p.dcqcn, &v)?,
            },
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
    Ok(())
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
