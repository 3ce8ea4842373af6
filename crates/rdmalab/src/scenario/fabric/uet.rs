//! `[fabric.uet]`: the Ultra Ethernet transport's settings (`rnic::uet`), read by QPs whose
//! transport is `uet`, and the entropy spraying `fabric.path_selection` turns on
//! (`ev_spray`, `ev_cycle`, `ev_bitmap`, `reps`).
//!
//! ```toml
//! [fabric]
//! path_selection = "reps"   # or "ev_spray", "ev_cycle", "ev_bitmap"; switches keep their ECMP hash
//! [fabric.uet]
//! ack_every = 4             # ACK coalescing, packets
//! rto = "100us"            # or "auto": htsim's driver's rule (needs [fabric.trimming])
//! window_packets = 1024     # PSNs tracked past the cumulative one (a multiple of 64)
//! entropies = 256           # distinct entropy values a sender draws from
//! reps_buffer = 8           # REPS: recycled entropy values kept per connection
//! reps_freeze = "10ms"      # REPS: a timeout freezes the buffer this long (default: never)
//! ```

use std::path::Path;

use serde::Deserialize;

use super::super::{positive_time, positive_time_or};
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::rnic::uet::{Spray, UetConfig};
use crate::topology::routing::PathSelection;

/// The most PSNs a receiver tracks: the SACK base's offset travels in 16 bits.
const MAX_WINDOW: u32 = 32768;

/// `[fabric.uet]` as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UetSpec {
    /// ACK coalescing: one ACK every this many packets (default 4).
    pub ack_every: Option<u32>,
    /// The retransmission timeout (default 100 µs), or `"auto"`: htsim's UEC driver's rule
    /// (`main_uec.cpp` line 695), 15 µs plus six times a full queue's drain time at the
    /// hosts' link rate, a full queue being the trimming threshold (`fabric.trimming.
    /// threshold_kb`, which it needs), where htsim's queue of that size trims.
    pub rto: Option<String>,
    /// PSNs the receiver and the sender track past the cumulative one, a multiple of 64
    /// (default 1024): the most packets a sender has outstanding.
    pub window_packets: Option<u32>,
    /// Distinct entropy values a sender draws from (default 256).
    pub entropies: Option<u32>,
    /// REPS: recycled entropy values kept per connection (default 8; at most
    /// `window_packets`).
    pub reps_buffer: Option<u32>,
    /// REPS: how long a retransmission timeout freezes the recycled entropy values (the
    /// sender goes round the last `reps_buffer` good ones); default: never. Needs
    /// `path_selection = "reps"` and `[fabric.trimming]` (a timeout is then a failure, not
    /// congestion). htsim's REPS freezes for 10 ms.
    pub reps_freeze: Option<String>,
}

/// Sets `c.uet` from `[fabric.uet]` and the spraying from `c.path_selection` (already set).
pub(super) fn apply(spec: Option<&UetSpec>, file: &Path, c: &mut SimConfig) -> Result<()> {
    let f = |name: &str| format!("fabric.uet.{name}");
    let s = spec.cloned().unwrap_or_default();
    let mut u = UetConfig::default();
    let at_least_one = |v: Option<u32>, name: &str, into: &mut u32| -> Result<()> {
        match v {
            Some(0) => Err(Error::input(file, 0, f(name), "must be at least 1")),
            Some(n) => {
                *into = n;
                Ok(())
            }
            None => Ok(()),
        }
    };
    at_least_one(s.ack_every, "ack_every", &mut u.ack_every)?;
    at_least_one(s.entropies, "entropies", &mut u.entropies)?;
    at_least_one(s.reps_buffer, "reps_buffer", &mut u.reps_buffer)?;
    if let Some(t) = s.rto.as_deref().filter(|&t| t != AUTO) {
        u.rto = positive_time_or(file, &f("rto"), t, Some(AUTO))?;
    }
    if let Some(t) = &s.reps_freeze {
        u.reps_freeze = Some(positive_time(file, &f("reps_freeze"), t)?);
    }
    if let Some(w) = s.window_packets {
        if w == 0 || w % 64 != 0 || w > MAX_WINDOW {
            let m = format!("{w} is not a multiple of 64 in [64, {MAX_WINDOW}]");
            return Err(Error::input(file, 0, f("window_packets"), m));
        }
        u.window_packets = w;
    }
    // A recycled EV comes back with an ACK of a packet in flight, so a NIC's REPS buffer
    // need hold no more than the tracked window: the bound keeps it a device's table.
    if u.reps_buffer > u.window_packets {
        let m = format!("{} is more than the {} packets of the tracked window", u.reps_buffer, u.window_packets);
        return Err(Error::input(file, 0, f("reps_buffer"), m));
    }
    if u.entropies > 1 << 16 {
        let m = format!("{} is more than the 65536 values of a 16-bit entropy", u.entropies);
        return Err(Error::input(file, 0, f("entropies"), m));
    }
    if u.reps_freeze.is_some() && c.path_selection != PathSelection::Reps {
        let m = "only REPS freezes: it needs `fabric.path_selection = \"reps\"`";
        return Err(Error::input(file, 0, f("reps_freeze"), m));
    }
    u.spray = match c.path_selection {
        PathSelection::EvSpray => Spray::EvSpray,
        PathSelection::EvCycle => Spray::EvCycle,
        PathSelection::EvBitmap => Spray::Bitmap,
        PathSelection::Reps => Spray::Reps,
        _ => Spray::Off,
    };
    c.uet = u;
    Ok(())
}

/// `fabric.uet.rto`'s value that asks for htsim's driver's rule ([`auto_rto`]).
const AUTO: &str = "auto";

/// `rto = "auto"`: htsim's UEC driver sets the minimum RTO to 15 µs plus six drains of a
/// full queue at the link rate (`main_uec.cpp` line 695: `15 + queuesize * 6.0 * 8 *
/// 1000000 / linkspeed` µs). Its queue trims when full, so here the queue is the trimming
/// threshold, and the rate the first host's link's. Refused without a threshold.
pub(super) fn auto_rto(
    spec: Option<&UetSpec>,
    topology: &crate::topology::Topology,
    file: &Path,
    c: &mut SimConfig,
) -> Result<()> {
    if spec.and_then(|s| s.rto.as_deref()) != Some(AUTO) {
        return Ok(());
    }
    let Some(queue) = c.trimming.as_ref().and_then(|t| t.threshold) else {
        let m = "\"auto\" is htsim's rule over a full queue's drain time: it needs `[fabric.trimming]` with `threshold_kb` (the queue's size)";
        return Err(Error::input(file, 0, "fabric.uet.rto", m));
    };
    let Some(host) = topology.hosts().next() else { return Ok(()) };
    c.uet.rto = crate::units::Time::from_us(15) + crate::units::Time(topology.nic_rate(host).tx_time(queue).0 * 6);
    Ok(())
}

/// True when some traffic of `s` runs on the Ultra Ethernet transport: a flow, a collective
/// or an `[[app]]` with `transport = "uet"`.
fn has_uet(s: &crate::config::Scenario) -> bool {
    use crate::rnic::transport::Transport;
    s.flows.iter().any(|f| f.transport == Transport::Uet)
        || s.collectives.iter().any(|c| c.transport == Transport::Uet)
        || s.host_model.as_ref().is_some_and(|h| h.apps.iter().any(|a| a.transport == Transport::Uet))
}

/// The entropy modes of `fabric.path_selection` set the entropy value a UET packet carries;
/// with no UET traffic every packet is hashed as under `ecmp`, which the warning says.
pub(super) fn unused_path_selection(s: &crate::config::Scenario) -> Option<String> {
    let name = match s.config.path_selection {
        PathSelection::EvSpray => "ev_spray",
        PathSelection::EvCycle => "ev_cycle",
        PathSelection::EvBitmap => "ev_bitmap",
        PathSelection::Reps => "reps",
        _ => return None,
    };
    (!has_uet(s)).then(|| {
        format!(
            "fabric.path_selection = \"{name}\" sets the entropy of Ultra Ethernet packets only, and no flow, \
             collective or app has `transport = \"uet\"`: every packet is routed as under \"ecmp\""
        )
    })
}

/// UET's packets carry fields that some mechanisms also write: the SACK in the ACK's
/// payload (Blitz's DASR share), the trimmable flag in the deflection byte (IOFD, ConWeave)
/// and the SACK base in `int_hops` (CONGA's feedback). A run with UET flows or collectives refuses them,
/// naming the key that turned each on.
pub(super) fn check(s: &crate::config::Scenario, file: &Path) -> Result<()> {
    use crate::rnic::transport::Transport;
    if s.config.uet.reps_freeze.is_some() && s.config.trimming.is_none() {
        let m = "REPS freezes at a timeout only on a trimming fabric (`[fabric.trimming]`), where a timeout means a failed path, not congestion";
        return Err(Error::input(file, 0, "fabric.uet.reps_freeze", m));
    }
    if !s.flows.iter().any(|f| f.transport == Transport::Uet)
        && !s.collectives.iter().any(|c| c.transport == Transport::Uet)
    {
        return Ok(());
    }
    let clash = |field: &str, what: &str| {
        let m = format!("{what} does not run with `transport = \"uet\"` (they share packet fields)");
        Err(Error::input(file, 0, field, m))
    };
    let c = &s.config;
    if c.iofd.is_some() {
        return clash("fabric.iofd", "in-order flow deflection");
    }
    if matches!(c.path_selection, PathSelection::Conga | PathSelection::Conweave) {
        return clash("fabric.path_selection", "CONGA and ConWeave");
    }
    if c.cc.dasr().is_some() {
        return clash("fabric.cc", "Blitz's DASR");
    }
    Ok(())
}
