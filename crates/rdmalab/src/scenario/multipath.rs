//! The `kind = "multipath"` traffic source: its fields, their checks (each error names
//! the field), and its desugaring into `Simulation::mp_connect` / `mp_post_send` /
//! `mp_disconnect` calls.

use std::path::Path;

use serde::Deserialize;

use super::{check_host, field_time, zero_time};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::multipath::{self, Allocation, MpConfig, MpWr, RefillOn, Split, SportPolicy};
use crate::sim::Simulation;
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;

/// How messages are cut (`split`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitName {
    /// Seed 001's fixed-size chunks.
    Partition,
}

/// `allocation`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocationName {
    /// Refill the QP that completes.
    Dynamic,
    /// Even split up front.
    Static,
}

/// `refill_on`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefillName {
    /// RC completion.
    Ack,
    /// Last packet sent.
    Sent,
}

/// `sport_policy`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SportName {
    /// The NIC's counter.
    Sequential,
    /// Pairwise different ECMP paths.
    DistinctPaths,
    /// `sports`.
    Explicit,
}

/// The fields of a `kind = "multipath"` traffic entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultipathSpec {
    /// How messages are cut (only `partition`).
    #[serde(default = "default_split")]
    pub split: SplitName,
    /// QPs per connection.
    #[serde(default = "default_qps")]
    pub qps: u32,
    /// Data bytes per chunk.
    #[serde(default = "default_chunk")]
    pub chunk_size: u64,
    /// In-payload header bytes per chunk.
    #[serde(default = "default_header")]
    pub chunk_header: u64,
    /// Chunks in flight per QP.
    #[serde(default = "default_outstanding")]
    pub outstanding: u32,
    /// `dynamic` or `static`.
    #[serde(default = "default_allocation")]
    pub allocation: AllocationName,
    /// `ack` or `sent`.
    #[serde(default = "default_refill")]
    pub refill_on: RefillName,
    /// Completion to next post.
    #[serde(default = "zero_time")]
    pub post_delay: String,
    /// `sequential`, `distinct_paths` or `explicit`.
    #[serde(default = "default_sport")]
    pub sport_policy: SportName,
    /// With `explicit`: one port per QP.
    #[serde(default)]
    pub sports: Vec<u16>,
    /// Priority class (default 3).
    pub pg: Option<u8>,
    /// Destination port (default 100).
    pub dport: Option<u16>,
    /// The messages; one connection per distinct (src, dst), messages posted in order.
    pub messages: Vec<MessageEntry>,
}

fn default_split() -> SplitName {
    SplitName::Partition
}
fn default_qps() -> u32 {
    MpConfig::default().qps
}
fn default_chunk() -> u64 {
    MpConfig::default().chunk_size
}
fn default_header() -> u64 {
    MpConfig::default().chunk_header
}
fn default_outstanding() -> u32 {
    1
}
fn default_allocation() -> AllocationName {
    AllocationName::Dynamic
}
fn default_refill() -> RefillName {
    RefillName::Ack
}
fn default_sport() -> SportName {
    SportName::Sequential
}

/// One message of a multipath entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageEntry {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Data bytes.
    pub size: u64,
    /// When it is posted.
    #[serde(default = "zero_time")]
    pub start: String,
}

/// A checked multipath entry, ready to set up in a simulation.
#[derive(Clone, Debug)]
pub struct MpTraffic {
    /// The connections' parameters.
    pub config: MpConfig,
    /// (src, dst, size, start) of each message, as written.
    pub messages: Vec<(NodeId, NodeId, u64, Time)>,
}

impl MultipathSpec {
    /// Checks every field; `at` is the entry's path (`traffic[2]`).
    pub(super) fn build(&self, at: &str, file: &Path, topo: &Topology) -> Result<MpTraffic> {
        let g = |name: &str| format!("{at}.{name}");
        let config = self.config(file, &g)?;
        config.validate().map_err(|e| super::locate::in_section(e, file, at))?;
        let mut messages = Vec::with_capacity(self.messages.len());
        for (j, m) in self.messages.iter().enumerate() {
            let h = |name: &str| g(&format!("messages[{j}].{name}"));
            let src = check_host(file, &h("src"), topo, m.src)?;
            let dst = check_host(file, &h("dst"), topo, m.dst)?;
            if src == dst {
                return Err(Error::input(file, 0, h("dst"), format!("message from host {src} to itself")));
            }
            if m.size == 0 {
                return Err(Error::input(file, 0, h("size"), "must be at least 1 byte"));
            }
            if config.chunk_size > m.size {
                let msg = format!("{} bytes is larger than messages[{j}].size ({} bytes)", config.chunk_size, m.size);
                return Err(Error::input(file, 0, g("chunk_size"), msg));
            }
            messages.push((src, dst, m.size, field_time(file, &h("start"), &m.start)?));
        }
        if config.sport_policy == SportPolicy::DistinctPaths {
            check_distinct_paths(file, &g("qps"), topo, &config, &messages)?;
        }
        Ok(MpTraffic { config, messages })
    }

    fn config(&self, file: &Path, g: &dyn Fn(&str) -> String) -> Result<MpConfig> {
        let SplitName::Partition = self.split;
        let sport_policy = match self.sport_policy {
            SportName::Sequential | SportName::DistinctPaths if !self.sports.is_empty() => {
                return Err(Error::input(file, 0, g("sports"), "only with sport_policy = \"explicit\""));
            }
            SportName::Sequential => SportPolicy::Sequential,
            SportName::DistinctPaths => SportPolicy::DistinctPaths,
            SportName::Explicit => SportPolicy::Explicit(self.sports.clone()),
        };
        Ok(MpConfig {
            split: Split::Partition,
            qps: self.qps,
            chunk_size: self.chunk_size,
            chunk_header: self.chunk_header,
            outstanding: self.outstanding,
            allocation: match self.allocation {
                AllocationName::Dynamic => Allocation::Dynamic,
                AllocationName::Static => Allocation::Static,
            },
            refill_on: match self.refill_on {
                RefillName::Ack => RefillOn::Ack,
                RefillName::Sent => RefillOn::Sent,
            },
            post_delay: field_time(file, &g("post_delay"), &self.post_delay)?,
            sport_policy,
            pg: self.pg.unwrap_or(3),
            dport: self.dport.unwrap_or(100),
        })
    }
}

/// `distinct_paths` needs as many equal-cost paths as QPs between every pair it connects.
fn check_distinct_paths(
    file: &Path,
    field: &str,
    topo: &Topology,
    cfg: &MpConfig,
    messages: &[(NodeId, NodeId, u64, Time)],
) -> Result<()> {
    let routes = Routes::compute(topo, Default::default())?;
    let mut seen = std::collections::HashSet::new();
    for &(src, dst, _, _) in messages {
        if seen.insert((src, dst)) {
            let (sip, dip) = (topo.nodes[src.idx()].ips[0], topo.nodes[dst.idx()].ips[0]);
            multipath::distinct_path_ports(topo, &routes, src, dst, sip, dip, cfg.dport, cfg.qps)
                .map_err(|m| Error::input(file, 0, field, m))?;
        }
    }
    Ok(())
}

impl MpTraffic {
    /// Opens one connection per distinct (src, dst) in order of first appearance, posts
    /// every message on its pair's connection, and disconnects them once all are posted.
    pub fn set_up(&self, sim: &mut Simulation) -> Result<()> {
        let mut conns: Vec<((NodeId, NodeId), multipath::MpConnId)> = Vec::new();
        for &(src, dst, size, start) in &self.messages {
            let conn = match conns.iter().find(|(k, _)| *k == (src, dst)) {
                Some(&(_, c)) => c,
                None => {
                    let c = sim.mp_connect(src, dst, &self.config)?;
                    conns.push(((src, dst), c));
                    c
                }
            };
            sim.mp_post_send(conn, MpWr::write(size), start)?;
        }
        for (_, c) in conns {
            sim.mp_disconnect(c)?;
        }
        Ok(())
    }
}
