//! Receiver-credit congestion control (`cc::rccc`): turned on by `fabric.cc = "rccc"` (alone)
//! or `"nscc+rccc"` (NSCC's window and the receiver's credit, a packet going out only when
//! both allow it), tuned by `[fabric.rccc]`. It runs on UET QPs only.
//!
//! ```toml
//! [fabric]
//! cc = "nscc+rccc"
//! [fabric.rccc]
//! initial_packets = 64   # credit a connection starts with (absent: its path's BDP)
//! grant_packets = 4      # packets per grant of a receiver's pacer
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::cc::rccc::RcccConfig;
use crate::config::SimConfig;
use crate::error::{Error, Result};

/// The `fabric.cc` names that turn RCCC on, each with the sender algorithm it runs beside.
pub(super) const NAMES: &[(&str, &str)] = &[("rccc", "none"), ("nscc+rccc", "nscc")];

/// `[fabric.rccc]` as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RcccSpec {
    /// Packets of credit a connection may send before its receiver grants any (absent: one
    /// bandwidth-delay product of its path, in packets; at least 1).
    pub initial_packets: Option<u32>,
    /// Packets a receiver grants at a time, pacing its grants at its link's rate for that
    /// many full packets (default 4).
    pub grant_packets: Option<u32>,
}

/// `fabric.cc` as written: the sender algorithm's name, and whether RCCC runs beside it.
/// A name joined with `+rccc` other than NSCC's is refused by name.
pub(super) fn split_cc<'a>(cc: &'a str, file: &Path) -> Result<(&'a str, bool)> {
    if let Some(&(_, base)) = NAMES.iter().find(|(n, _)| *n == cc) {
        return Ok((base, true));
    }
    if let Some(base) = cc.strip_suffix("+rccc") {
        let m = format!("RCCC runs alone (`rccc`) or beside NSCC (`nscc+rccc`), not beside `{base}`");
        return Err(Error::input(file, 0, "fabric.cc", m));
    }
    Ok((cc, false))
}

/// Sets `c.rccc` when `on` (from `fabric.cc`), from `[fabric.rccc]`; the section without
/// RCCC, and the tenant defense with it, are refused.
pub(super) fn apply(on: bool, spec: Option<&RcccSpec>, file: &Path, c: &mut SimConfig) -> Result<()> {
    let f = |name: &str| format!("fabric.rccc.{name}");
    if !on {
        if spec.is_some() {
            let m = "needs `fabric.cc = \"rccc\"` or `\"nscc+rccc\"`";
            return Err(Error::input(file, 0, "fabric.rccc", m));
        }
        return Ok(());
    }
    let s = spec.cloned().unwrap_or_default();
    let mut r = RcccConfig::default();
    if let Some(n) = s.initial_packets {
        if n == 0 {
            let m = "must be at least 1 (a sender needs one packet to ask for credit)";
            return Err(Error::input(file, 0, f("initial_packets"), m));
        }
        r.initial_packets = Some(n);
    }
    if let Some(n) = s.grant_packets {
        if n == 0 || n as u64 > crate::cc::rccc::MAX_REQUEST {
            let m = format!("{n} is not in [1, {}]", crate::cc::rccc::MAX_REQUEST);
            return Err(Error::input(file, 0, f("grant_packets"), m));
        }
        r.grant_packets = n;
    }
    if c.defense != crate::tenancy::Defense::None {
        // The defense re-times its QPs' pacing, which is where a sender waits for credit.
        let m = "does not run with RCCC (`fabric.cc` names it): the defense paces the QPs RCCC holds";
        return Err(Error::input(file, 0, "fabric.defense", m));
    }
    c.rccc = Some(r);
    Ok(())
}

/// RCCC is the Ultra Ethernet transport's: every flow, collective and `[[app]]` of a run with
/// it must be UET. The first that is not is named, with its transport. Traffic whose QPs
/// post outside the send queue (the attack and staggered applications), multipath traffic
/// and dependency-driven jobs are refused by name.
pub(super) fn check(s: &crate::config::Scenario, file: &Path) -> Result<()> {
    use crate::fabric::transport::Transport;
    if s.config.rccc.is_none() {
        return Ok(());
    }
    let name = |t: Transport| match t {
        Transport::Rc => "rc",
        Transport::Uc => "uc",
        Transport::Ud => "ud",
        Transport::Uet => "uet",
    };
    let refuse = |what: String, t: Transport, field: String| {
        let m = format!(
            "RCCC runs on the Ultra Ethernet transport only: {what} has `transport = \"{}\"` \
             (set `transport = \"uet\"` on it, or choose another `cc`)",
            name(t)
        );
        Err(Error::input(file, 0, &field, m))
    };
    if let Some((i, f)) = s.flows.iter().enumerate().find(|(_, f)| f.transport != Transport::Uet) {
        return refuse(format!("flow {i}"), f.transport, "fabric.cc".into());
    }
    if let Some((i, c)) = s.collectives.iter().enumerate().find(|(_, c)| c.transport != Transport::Uet) {
        return refuse(format!("collective {i}"), c.transport, format!("collective[{i}].transport"));
    }
    let apps = s.host_model.as_ref().map_or(&[][..], |h| &h.apps[..]);
    if let Some((i, a)) = apps.iter().enumerate().find(|(_, a)| a.transport != Transport::Uet) {
        return refuse(format!("app {i}"), a.transport, format!("app[{i}].transport"));
    }
    let others = [
        (!s.apps.is_empty(), "traffic carried by applications (attack or staggered traffic)"),
        (!s.multipath.is_empty(), "multipath traffic"),
        (!s.jobs.is_empty(), "dependency-driven jobs (traces and connection matrices)"),
    ];
    if let Some((_, what)) = others.iter().find(|(on, _)| *on) {
        let m = format!(
            "RCCC runs on `[[traffic]]` flows, `[[collective]]` and `[[app]]` with `transport = \"uet\"`; {what} cannot run with it"
        );
        return Err(Error::input(file, 0, "fabric.cc", m));
    }
    Ok(())
}
