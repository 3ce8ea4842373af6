//! `[fabric.lb]`: the switch-side balancers' parameters (`fabric::lb`); with plain ECMP the
//! table alone turns on the uplink-balance output. Every key is optional:
//!
//! ```toml
//! [fabric]
//! path_selection = "conga"     # ecmp | source_ip | spray | drill | letflow | conga | conweave
//! [fabric.lb]
//! drill_samples = 2
//! drill_memory = 1
//! flowlet_timeout = "100us"
//! flowlet_table = 65536        # entries per switch, a power of two
//! conga_dre_period = "50us"
//! conga_alpha = 0.2
//! conga_bits = 3
//! conga_aging = "500us"
//! lb_window = "100us"          # balance.parquet's window
//! conweave_tx_expiry = "300us"
//! conweave_reply_extra = "4us"
//! conweave_path_pause = "16us"
//! conweave_flush_extra = "16us"
//! conweave_default_wait = "200us"
//! conweave_table = 65536       # flow entries per ToR and side, a power of two
//! conweave_table_kind = "exact" # exact (one entry per flow) | direct (one slot per hash)
//! conweave_queues = 24         # reorder queues per host port of a ToR
//! conweave_admit_on_release = false # true: held packets outside the buffer until released
//! ```

use std::path::Path;

use serde::Deserialize;

use super::super::field_time;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::fabric::lb::{conga, conweave, drill, is_switch_scheme, LbConfig};
use crate::topology::routing::PathSelection;
use crate::topology::Topology;
use crate::units::Time;

/// The table as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LbSpec {
    /// DRILL's random samples per packet (default 2).
    pub drill_samples: Option<u32>,
    /// DRILL's remembered best hops (default 1).
    pub drill_memory: Option<u32>,
    /// Gap that starts a new flowlet (default `"100us"`).
    pub flowlet_timeout: Option<String>,
    /// Flowlet-table entries per switch, a power of two up to 2^24 (default 65536).
    pub flowlet_table: Option<u32>,
    /// CONGA's DRE period (default `"50us"`).
    pub conga_dre_period: Option<String>,
    /// CONGA's DRE decay per period, in (0, 1) (default 0.2).
    pub conga_alpha: Option<f64>,
    /// CONGA's metric bits, 1 to 4 (default 3).
    pub conga_bits: Option<u8>,
    /// Age past which a remote CONGA metric counts as 0 (default `"500us"`).
    pub conga_aging: Option<String>,
    /// Window of `balance.parquet` (default `"100us"`).
    pub lb_window: Option<String>,
    /// ConWeave: idle time that ends a flow's epoch (default `"300us"`).
    pub conweave_tx_expiry: Option<String>,
    /// ConWeave: margin over the base RTT for the RTT_REPLY (default `"4us"`).
    pub conweave_reply_extra: Option<String>,
    /// ConWeave: how long a NOTIFY keeps a path avoided (default `"16us"`).
    pub conweave_path_pause: Option<String>,
    /// ConWeave: margin over a reorder queue's predicted flush time (default `"16us"`).
    pub conweave_flush_extra: Option<String>,
    /// ConWeave: predicted wait without phase-0 timing (default `"200us"`).
    pub conweave_default_wait: Option<String>,
    /// ConWeave: flow entries per ToR, a power of two (default 65536).
    pub conweave_table: Option<u32>,
    /// ConWeave: how a ToR keeps its flows, `exact` (default), one entry per flow, or `direct`
    /// (one slot per hash).
    pub conweave_table_kind: Option<String>,
    /// ConWeave: reorder queues per host port (default 24).
    pub conweave_queues: Option<u32>,
    /// ConWeave: held packets wait outside the buffer and are admitted when released
    /// (default false).
    pub conweave_admit_on_release: Option<bool>,
}

/// A positive time, naming `fabric.lb.FIELD` otherwise.
fn positive(file: &Path, name: &str, s: &str) -> Result<Time> {
    let field = format!("fabric.lb.{name}");
    match field_time(file, &field, s)? {
        Time::ZERO => Err(Error::input(file, 0, field, "must be positive")),
        t => Ok(t),
    }
}

impl LbSpec {
    /// The settings, checked; errors name `fabric.lb.FIELD`.
    pub fn build(&self, file: &Path) -> Result<LbConfig> {
        let bad = |name: &str, msg: String| Err(Error::input(file, 0, format!("fabric.lb.{name}"), msg));
        let mut c = LbConfig { enabled: true, ..LbConfig::default() };
        if let Some(d) = self.drill_samples {
            c.drill_samples = d;
        }
        if let Some(m) = self.drill_memory {
            c.drill_memory = m;
        }
        let most = drill::MAX_CANDIDATES as u32;
        if c.drill_samples == 0 || c.drill_samples.saturating_add(c.drill_memory) > most {
            let field = if self.drill_samples.is_some() { "drill_samples" } else { "drill_memory" };
            return bad(field, format!("drill_samples (at least 1) plus drill_memory must be at most {most}"));
        }
        if let Some(s) = &self.flowlet_timeout {
            c.flowlet_timeout = positive(file, "flowlet_timeout", s)?;
        }
        if let Some(n) = self.flowlet_table {
            if !n.is_power_of_two() || n > 1 << 24 {
                return bad("flowlet_table", format!("{n}: must be a power of two, at most 2^24"));
            }
            c.flowlet_table = n;
        }
        if let Some(s) = &self.conga_dre_period {
            c.conga_dre_period = positive(file, "conga_dre_period", s)?;
        }
        if let Some(a) = self.conga_alpha {
            if !(a > 0.0 && a < 1.0) {
                return bad("conga_alpha", format!("{a}: must be in (0, 1)"));
            }
            c.conga_alpha = a;
        }
        if let Some(b) = self.conga_bits {
            if !(1..=4).contains(&b) {
                return bad("conga_bits", format!("{b}: must be 1..=4 (the header field has 4 bits)"));
            }
            c.conga_bits = b;
        }
        if let Some(s) = &self.conga_aging {
            c.conga_aging = positive(file, "conga_aging", s)?;
        }
        if let Some(s) = &self.lb_window {
            c.window = positive(file, "lb_window", s)?;
        }
        self.build_conweave(file, &mut c)?;
        Ok(c)
    }

    /// The `conweave_*` keys into `c`.
    fn build_conweave(&self, file: &Path, c: &mut LbConfig) -> Result<()> {
        let bad = |name: &str, msg: String| Err(Error::input(file, 0, format!("fabric.lb.{name}"), msg));
        let times = [
            ("conweave_tx_expiry", &self.conweave_tx_expiry, &mut c.conweave_tx_expiry),
            ("conweave_reply_extra", &self.conweave_reply_extra, &mut c.conweave_reply_extra),
            ("conweave_path_pause", &self.conweave_path_pause, &mut c.conweave_path_pause),
            ("conweave_flush_extra", &self.conweave_flush_extra, &mut c.conweave_flush_extra),
            ("conweave_default_wait", &self.conweave_default_wait, &mut c.conweave_default_wait),
        ];
        for (name, given, slot) in times {
            if let Some(s) = given {
                *slot = positive(file, name, s)?;
            }
        }
        if let Some(n) = self.conweave_table {
            if !n.is_power_of_two() || n > 1 << 20 {
                return bad("conweave_table", format!("{n}: must be a power of two, at most 2^20"));
            }
            c.conweave_table = n;
        }
        if let Some(k) = &self.conweave_table_kind {
            match conweave::TableKind::parse(k) {
                Some(kind) => c.conweave_table_kind = kind,
                None => return bad("conweave_table_kind", format!("{k:?}: must be \"exact\" or \"direct\"")),
            }
        }
        if let Some(n) = self.conweave_queues {
            if n == 0 || n > 1024 {
                return bad("conweave_queues", format!("{n}: must be 1..=1024"));
            }
            c.conweave_queues = n;
        }
        if let Some(b) = self.conweave_admit_on_release {
            c.conweave_admit_on_release = b;
        }
        Ok(())
    }
}

/// The balancer against the topology and the rest of the config, errors naming
/// `fabric.path_selection`.
pub(super) fn check(c: &SimConfig, topo: &Topology, file: &Path) -> Result<()> {
    let field = "fabric.path_selection";
    if !is_switch_scheme(c.path_selection) {
        return Ok(());
    }
    if c.iofd.is_some() {
        return Err(Error::input(file, 0, field, "a switch-side balancer does not compose with `[fabric.iofd]`"));
    }
    if c.path_selection == PathSelection::Conga {
        if c.cc.needs_int() {
            let m = "`conga` carries its header where INT would: use a congestion control without INT";
            return Err(Error::input(file, 0, field, m));
        }
        conga::Conga::new(topo, &c.lb).map_err(|m| Error::input(file, 0, field, m))?;
    }
    if c.path_selection == PathSelection::Conweave {
        if c.cc.needs_int() {
            let m = "`conweave` carries its header where INT would: use a congestion control without INT";
            return Err(Error::input(file, 0, field, m));
        }
        conweave::ConWeave::new(topo, &c.lb).map_err(|m| Error::input(file, 0, field, m))?;
    }
    Ok(())
}
