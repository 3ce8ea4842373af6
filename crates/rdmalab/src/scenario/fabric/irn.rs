//! `fabric.loss_recovery` and `[fabric.irn]`: go-back-N (the default, the reference's) or
//! IRN's selective retransmission (`rnic::irn`), and `fabric.cnp_on_ooo`.
//!
//! ```toml
//! [fabric]
//! loss_recovery = "irn"     # or "go_back_n"
//! lossless = false          # IRN's usual setting; PFC on works too
//! [fabric.irn]
//! rto_low = "100us"         # with at most low_packets packets outstanding
//! rto_high = "320us"
//! low_packets = 3
//! bdp = 104000              # bytes; absent: the topology's largest BDP
//! ```

use std::path::Path;

use serde::Deserialize;

use super::super::positive_time;
use crate::config::{Scenario, SimConfig};
use crate::error::{Error, Result};
use crate::rnic::IrnConfig;

/// The largest BDP-FC cap accepted: a NACK carries the triggering packet's offset past the
/// cumulative ACK in 32 bits, and no datacenter path holds 1 GiB.
const MAX_BDP: u64 = 1 << 30;

/// `[fabric.irn]` as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IrnSpec {
    /// RTO_low (default 100 µs).
    pub rto_low: Option<String>,
    /// RTO_high (default 320 µs).
    pub rto_high: Option<String>,
    /// N: RTO_low with at most this many packets outstanding (default 3).
    pub low_packets: Option<u32>,
    /// BDP-FC's cap in bytes (default: the topology's largest BDP).
    pub bdp: Option<u64>,
}

/// Sets `c.irn` and `c.cnp_on_ooo` from `[fabric]`'s `loss_recovery`, `irn`, `cnp_on_ooo`
/// (`rto_given`: the scenario set `fabric.rto`, which IRN's two timeouts replace).
pub(super) fn apply(
    loss_recovery: Option<&str>,
    spec: Option<&IrnSpec>,
    cnp_on_ooo: Option<bool>,
    rto_given: bool,
    file: &Path,
    c: &mut SimConfig,
) -> Result<()> {
    c.cnp_on_ooo = cnp_on_ooo.unwrap_or(false);
    match loss_recovery {
        None | Some("go_back_n") => {
            if spec.is_some() {
                let m = "is set but `fabric.loss_recovery` is not \"irn\" (go-back-N has no IRN parameters)";
                return Err(Error::input(file, 0, "fabric.irn", m));
            }
            Ok(())
        }
        Some("irn") => {
            if rto_given {
                let m = "IRN picks its own timeout: set `fabric.irn.rto_low` and `fabric.irn.rto_high` instead";
                return Err(Error::input(file, 0, "fabric.rto", m));
            }
            let irn = build(spec.cloned().unwrap_or_default(), c.mtu, file)?;
            // The timer armed when nothing was outstanding covers one packet: RTO_low.
            c.rto = Some(irn.rto_low);
            c.irn = Some(irn);
            Ok(())
        }
        Some(other) => {
            let m = format!("unknown `{other}` (known: go_back_n, irn)");
            Err(Error::input(file, 0, "fabric.loss_recovery", m))
        }
    }
}

fn build(s: IrnSpec, mtu: u32, file: &Path) -> Result<IrnConfig> {
    let f = |name: &str| format!("fabric.irn.{name}");
    let mut c = IrnConfig::default();
    if let Some(t) = &s.rto_low {
        c.rto_low = positive_time(file, &f("rto_low"), t)?;
    }
    if let Some(t) = &s.rto_high {
        c.rto_high = positive_time(file, &f("rto_high"), t)?;
    }
    if c.rto_high < c.rto_low {
        let m = format!("{} is shorter than rto_low {}", c.rto_high, c.rto_low);
        return Err(Error::input(file, 0, f("rto_high"), m));
    }
    if let Some(n) = s.low_packets {
        if n == 0 {
            return Err(Error::input(file, 0, f("low_packets"), "must be at least 1 packet"));
        }
        c.low_packets = n;
    }
    if let Some(b) = s.bdp {
        if b < mtu as u64 || b > MAX_BDP {
            let m = format!("{b} bytes is outside [{mtu} (one MTU), {MAX_BDP}]");
            return Err(Error::input(file, 0, f("bdp"), m));
        }
        c.bdp = Some(b);
    }
    Ok(c)
}

/// IRN holds packets out of order at the receiver; a message whose last packet was held
/// completes at its receiver when the bytes before it arrive (`sim::mech::irn`), so
/// applications, multipath and attack traffic run under IRN. The host model (`[host]`,
/// `[app]`, `[drum]`) is not checked against held packets and stays refused.
pub(super) fn check_plain_flows(s: &Scenario, file: &Path) -> Result<()> {
    if s.config.irn.is_none() || s.host_model.is_none() {
        return Ok(());
    }
    let m = "\"irn\" does not run with the host model (`[host]`, `[app]`, `[drum]`): its receive \
             pipeline is not modelled with held packets; use go-back-N";
    Err(Error::input(file, 0, "fabric.loss_recovery", m))
}
