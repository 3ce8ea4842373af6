//! `[topology] kind = "rail"`, with its `nvlink_rate` and `nvlink_latency`: the link inside a
//! server that stands for NVLink (`topology::nvlink`; docs/collectives.md, "NVLink inside a
//! server").

use std::path::Path;

use super::{field_rate, field_time, TopologySpec};
use crate::error::{Error, Result};
use crate::topology::builders::{self, RailShape};
use crate::topology::nvlink::{add_nvlink, NvLink};
use crate::topology::Topology;

/// Multipath traffic on a fabric whose hosts send by destination (NVLink beside the rail
/// NIC) is refused, as other host applications are: its timers kick a host's first NIC only.
pub(super) fn refuse_multipath(topo: &Topology, file: &Path, section: &str) -> Result<()> {
    if !topo.egress_by_destination {
        return Ok(());
    }
    let msg = "multipath is not supported on hosts with NVLink (topology.nvlink_rate): they carry flows and jobs \
               (collectives, SimAI, htsim) only";
    Err(Error::input(file, 0, format!("{section}.kind"), msg))
}

/// The rail fabric `spec` describes (a `TopologySpec::Rail`).
pub(super) fn rail(spec: &TopologySpec, file: &Path) -> Result<Topology> {
    let TopologySpec::Rail {
        servers,
        gpus_per_server,
        leaves_per_rail,
        spines,
        host_rate,
        fabric_rate,
        delay,
        nvlink_rate,
        nvlink_latency,
        ..
    } = spec
    else {
        unreachable!("called on the rail variant only")
    };
    let t = |f: &str, s: &str| field_time(file, &format!("topology.{f}"), s);
    let r = |f: &str, s: &str| field_rate(file, &format!("topology.{f}"), s);
    let shape = RailShape {
        servers: *servers,
        gpus_per_server: *gpus_per_server,
        leaves_per_rail: *leaves_per_rail,
        spines: *spines,
    };
    let topo = builders::rail(shape, r("host_rate", host_rate)?, r("fabric_rate", fabric_rate)?, t("delay", delay)?)?;
    apply(topo, file, shape, nvlink_rate.as_deref(), nvlink_latency.as_deref())
}

/// `topo` with each server's GPUs joined by NVLink when both keys are given, unchanged when
/// neither is; one alone is an error naming the other.
fn apply(
    mut topo: Topology,
    file: &Path,
    shape: RailShape,
    rate: Option<&str>,
    latency: Option<&str>,
) -> Result<Topology> {
    match (rate, latency) {
        (Some(rate), Some(latency)) => {
            let link = NvLink {
                rate: field_rate(file, "topology.nvlink_rate", rate)?,
                latency: field_time(file, "topology.nvlink_latency", latency)?,
            };
            add_nvlink(&mut topo, shape.servers, shape.gpus_per_server, link)?;
        }
        (None, None) => {}
        (Some(_), None) => {
            return Err(Error::input(file, 0, "topology.nvlink_latency", "is required with `nvlink_rate`"))
        }
        (None, Some(_)) => {
            return Err(Error::input(file, 0, "topology.nvlink_rate", "is required with `nvlink_latency`"))
        }
    }
    Ok(topo)
}
