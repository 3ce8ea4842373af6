//! `[topology] nvlink_rate` and `nvlink_latency` of `kind = "rail"`: the link inside a server
//! that stands for NVLink (`topology::nvlink`; docs/collectives.md, "NVLink inside a server").

use std::path::Path;

use super::{field_rate, field_time};
use crate::error::{Error, Result};
use crate::topology::builders::RailShape;
use crate::topology::nvlink::{add_nvlink, NvLink};
use crate::topology::Topology;

/// `topo` with each server's GPUs joined by NVLink when both keys are given, unchanged when
/// neither is; one alone is an error naming the other.
pub(super) fn apply(
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
