//! `[fabric.iofd]`: Blitz's in-order flow deflection at switches (`fabric::deflection`),
//! usable with any congestion control; absent = off.
//!
//! ```toml
//! [fabric.iofd]
//! max_deflections = 2
//! threshold = 0                # bytes; 0 = each egress port's ECN Kmin
//! paths = "minimal"            # or "nonminimal"
//! escape_pg = 5                # class of non-minimally deflected packets
//! resequence_kb = 1024         # last-hop re-sequencing buffer, KiB
//! resequence_timeout = "100us" # lossy runs only
//! ```

use std::path::Path;

use serde::Deserialize;

use super::super::field_time;
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::fabric::deflection::MAX_DEFLECTIONS;
use crate::fabric::{IofdConfig, NUM_PRIOS};
use crate::units::Time;
use crate::workload::FlowSpec;

/// The table as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IofdSpec {
    /// Deflections allowed per packet, 0 to 7 (default 2).
    pub max_deflections: Option<u8>,
    /// Deflection threshold in bytes; 0 = the egress port's ECN Kmin (default 0).
    pub threshold: Option<u64>,
    /// `minimal` (default), equal-cost next hops only, or `nonminimal`.
    pub paths: Option<String>,
    /// Class of packets deflected off the minimal paths (1..7, not a data class; default 5).
    pub escape_pg: Option<u8>,
    /// Last-hop re-sequencing buffer, KiB (default 1024).
    pub resequence_kb: Option<u64>,
    /// Lossy runs: held packets go as they are after this long (default `"100us"`).
    pub resequence_timeout: Option<String>,
}

impl IofdSpec {
    /// The settings, checked; errors name `fabric.iofd.FIELD`.
    pub fn build(&self, file: &Path) -> Result<IofdConfig> {
        let f = |name: &str| format!("fabric.iofd.{name}");
        let bad = |name: &str, msg: String| Err(Error::input(file, 0, f(name), msg));
        let mut c = IofdConfig::default();
        if let Some(m) = self.max_deflections {
            if m > MAX_DEFLECTIONS {
                return bad("max_deflections", format!("{m} is more than the {MAX_DEFLECTIONS} a packet can count"));
            }
            c.max_deflections = m;
        }
        if let Some(t) = self.threshold {
            c.threshold = t;
        }
        match self.paths.as_deref() {
            None | Some("minimal") => {}
            Some("nonminimal") => c.nonminimal = true,
            Some(other) => return bad("paths", format!("unknown `{other}` (known: minimal, nonminimal)")),
        }
        if let Some(pg) = self.escape_pg {
            if pg == 0 || pg as usize >= NUM_PRIOS {
                return bad("escape_pg", format!("{pg} is not a class (1..{})", NUM_PRIOS - 1));
            }
            c.escape_pg = pg;
        }
        if let Some(kb) = self.resequence_kb {
            let Some(bytes) = kb.checked_mul(1024) else {
                return bad("resequence_kb", format!("{kb} KiB is too large"));
            };
            c.resequence_bytes = bytes;
        }
        if let Some(s) = &self.resequence_timeout {
            c.resequence_timeout = field_time(file, &f("resequence_timeout"), s)?;
            if c.resequence_timeout == Time::ZERO {
                return bad("resequence_timeout", "must be positive".into());
            }
        }
        Ok(c)
    }
}

/// The escape class must carry no data: a flow in it would share the channel that keeps
/// deflected packets deadlock-free. And it must be a PFC class when any class is: deflected
/// packets of lossless flows travel in it.
pub(super) fn check_escape_class(c: &SimConfig, flows: &[FlowSpec], file: &Path) -> Result<()> {
    let Some(i) = &c.iofd else { return Ok(()) };
    let field = "fabric.iofd.escape_pg";
    if flows.iter().any(|f| f.pg == i.escape_pg) {
        let msg = format!("class {} carries data flows; choose a class no flow uses", i.escape_pg);
        return Err(Error::input(file, 0, field, msg));
    }
    match c.lossy_escape_class(i.escape_pg) {
        Some(msg) => Err(Error::input(file, 0, field, msg)),
        None => Ok(()),
    }
}
