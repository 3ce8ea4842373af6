//! The link inside a server that stands for NVLink: every GPU (host) of a server gets a
//! second port, to one switch of its server, at the NVLink's rate and latency. Routing then
//! sends a GPU's traffic to another GPU of its server over that switch (two links), and all
//! other traffic over its rail NIC, since paths never pass through a host; the hosts send
//! on the port their routes lead by (`Topology::egress_by_destination`, one NIC per port:
//! `sim/host/egress.rs`).
//!
//! The switch is an ordinary store-and-forward switch of the fabric, with its buffer, PFC
//! and ECN. It stands for the server's NVSwitch crossbar only as a non-blocking hop: NVLink's
//! own flow control, NVSwitch's in-switch reduction (SHARP / NVLS) and its cut-through
//! timing are not modelled (docs/model/rnic.md#nvlink-inside-a-server).

use super::{Node, NodeKind, Topology};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::{Rate, Time};

/// Rate and latency of the NVLink of every GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvLink {
    /// A GPU's NVLink bandwidth, each way.
    pub rate: Rate,
    /// One link's latency (each of the two links between two GPUs of a server).
    pub latency: Time,
}

/// Adds a switch per server after every node of `t` (server s's is node `t.len() + s`),
/// each linked to that server's hosts: host `s * gpus + g` for g in `0..gpus`. The links
/// come after every link of `t`, so a host's first port stays its fabric port.
pub fn add_nvlink(t: &mut Topology, servers: usize, gpus: usize, link: NvLink) -> Result<()> {
    if link.rate.bps() == 0 {
        return Err(Error::scenario("topology.nvlink_rate", "must be above 0"));
    }
    let first = t.nodes.len();
    for _ in 0..servers {
        t.nodes.push(Node { kind: NodeKind::Switch, ports: Vec::new(), ips: Vec::new() });
    }
    for s in 0..servers {
        for g in 0..gpus {
            t.add_link(NodeId::new(s * gpus + g), NodeId::new(first + s), link.rate, link.latency, 0.0)?;
        }
    }
    t.egress_by_destination = true;
    Ok(())
}
