//! `[fabric.pfc_pause]`: PAUSE frames that carry a pause time (`sim::mech::pfc_pause`);
//! absent = a PAUSE holds until its RESUME, as in the reference simulator.
//!
//! ```toml
//! [fabric.pfc_pause]
//! quanta = 65535          # default 65,535 (the field's largest): the pause time, in 512-bit times
//! refresh_quanta = 32767  # default quanta / 2: a sender still over XOFF sends its PAUSE again
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::config::sim_config::PfcPauseConfig;
use crate::config::SimConfig;
use crate::error::{Error, Result};

/// The table as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfcPauseSpec {
    /// The pause time a PAUSE carries, in quanta of 512 bit times, 2 to 65535 (default 65535).
    pub quanta: Option<i64>,
    /// The gap between two PAUSE frames of a sender still over XOFF, in quanta (default
    /// `quanta` / 2).
    pub refresh_quanta: Option<i64>,
}

impl PfcPauseSpec {
    /// The settings, checked; errors name `fabric.pfc_pause.FIELD`.
    pub fn build(&self, file: &Path) -> Result<PfcPauseConfig> {
        let f = |name: &str| format!("fabric.pfc_pause.{name}");
        let quanta = match self.quanta {
            None => u16::MAX,
            Some(q) if (2..=65_535).contains(&q) => q as u16,
            Some(q) => {
                let m = format!(
                    "must be 2 to 65535 quanta of 512 bit times (0 would be a RESUME, and a refresh needs room \
                     below it), got {q}"
                );
                return Err(Error::input(file, 0, f("quanta"), m));
            }
        };
        let refresh_quanta = match self.refresh_quanta {
            None => quanta / 2,
            Some(r) if r >= 1 && r < i64::from(quanta) => r as u16,
            Some(r) => {
                let m = format!(
                    "must be at least 1 and below quanta ({quanta}), so that a refresh arrives before the pause \
                     runs out, got {r}"
                );
                return Err(Error::input(file, 0, f("refresh_quanta"), m));
            }
        };
        Ok(PfcPauseConfig { quanta, refresh_quanta })
    }
}

/// A pause time on a fabric without PFC (`pfc_watchdog::pfc_off`) has no PAUSE to ride on:
/// refused, naming the table (after every fabric key; InfiniBand refuses it earlier).
pub(super) fn check_pfc_on(c: &SimConfig, file: &Path) -> Result<()> {
    match super::pfc_watchdog::pfc_off(c) {
        Some(why) if c.pfc_pause.is_some() => {
            let m = format!("{why}: no PAUSE is sent, so none carries a pause time");
            Err(Error::input(file, 0, "fabric.pfc_pause", m))
        }
        _ => Ok(()),
    }
}
