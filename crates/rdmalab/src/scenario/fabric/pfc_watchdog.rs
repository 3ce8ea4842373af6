//! `[fabric.pfc_watchdog]`: the switches' PFC watchdog (`sim::mech::pfc_watchdog`); absent =
//! off. The keys are SONiC's `config pfcwd start` arguments and `PFC_WD` fields.
//!
//! ```toml
//! [fabric.pfc_watchdog]
//! detection_time = "200ms"     # required: a queue paused this long is in a storm
//! restoration_time = "400ms"   # default: twice detection_time (SONiC's CLI)
//! poll_interval = "100ms"      # default: none (exact detection)
//! action = "drop"              # drop (default) | alert
//! ```

use std::path::Path;

use serde::Deserialize;

use super::super::field_time;
use crate::config::sim_config::{PfcWatchdogAction, PfcWatchdogConfig};
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::units::Time;

/// The table as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfcWatchdogSpec {
    /// A queue paused without a break this long is in a storm (required).
    pub detection_time: Option<String>,
    /// A storm ends after this long without a PFC frame (default: 2 × detection_time).
    pub restoration_time: Option<String>,
    /// Checks at multiples of this (default: none, exact).
    pub poll_interval: Option<String>,
    /// `drop` (default) or `alert`.
    pub action: Option<String>,
}

impl PfcWatchdogSpec {
    /// The settings, checked; errors name `fabric.pfc_watchdog.FIELD`.
    pub fn build(&self, file: &Path) -> Result<PfcWatchdogConfig> {
        let f = |name: &str| format!("fabric.pfc_watchdog.{name}");
        let positive = |name: &str, s: &str| -> Result<Time> {
            let t = field_time(file, &f(name), s)?;
            if t == Time::ZERO {
                return Err(Error::input(file, 0, f(name), "must be positive"));
            }
            Ok(t)
        };
        let Some(d) = &self.detection_time else {
            return Err(Error::input(file, 0, f("detection_time"), "is required (SONiC's DETECTION_TIME)"));
        };
        let detection_time = positive("detection_time", d)?;
        let restoration_time = match &self.restoration_time {
            Some(r) => positive("restoration_time", r)?,
            None => Time(detection_time.0.saturating_mul(2)),
        };
        let poll_interval = self.poll_interval.as_deref().map(|p| positive("poll_interval", p)).transpose()?;
        let action = match self.action.as_deref() {
            None | Some("drop") => PfcWatchdogAction::Drop,
            Some("alert") => PfcWatchdogAction::Alert,
            Some("forward") => {
                let m = "`forward` (the queue turned lossy) is not modelled: use drop or alert";
                return Err(Error::input(file, 0, f("action"), m));
            }
            Some(other) => {
                return Err(Error::input(
                    file,
                    0,
                    f("action"),
                    format!("unknown action `{other}` (known: drop, alert)"),
                ))
            }
        };
        Ok(PfcWatchdogConfig { detection_time, restoration_time, poll_interval, action })
    }
}

/// A watchdog on a fabric without PFC (`pfc_off`) has nothing to watch: refused, naming the
/// table (after every fabric key; InfiniBand refuses it earlier).
pub(super) fn check_pfc_on(c: &SimConfig, file: &Path) -> Result<()> {
    match pfc_off(c) {
        Some(why) if c.pfc_watchdog.is_some() => {
            Err(Error::input(file, 0, "fabric.pfc_watchdog", format!("{why}: nothing to watch")))
        }
        _ => Ok(()),
    }
}

/// Why no data class of the fabric is lossless, or `None` when one is: without a class
/// table `fabric.lossless` decides; with one, each class's `pfc` (a class the table does not
/// list follows `fabric.lossless`).
pub(super) fn pfc_off(c: &SimConfig) -> Option<&'static str> {
    match &c.classes {
        _ if c.any_pfc() => None,
        None => Some("PFC is off (`fabric.lossless = false`)"),
        Some(_) => Some(
            "PFC is off on every class (`fabric.classes` gives no class `pfc = true`, and a class \
             it does not list follows `fabric.lossless`)",
        ),
    }
}
