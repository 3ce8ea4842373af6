//! `[trace]`: which packet events a run writes to its trace (`sim::trace`).

use std::path::Path;

use serde::Deserialize;

use super::field_time;
use crate::config::{TraceConfig, DEFAULT_TRACE_MAX_BYTES};
use crate::error::{Error, Result};
use crate::ids::{NodeId, PortId};
use crate::topology::Topology;
use crate::units::Time;

/// `[trace]` as written.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Flow indices (positions in the merged flow list, the `flow` column of `flows`).
    #[serde(default)]
    pub flows: Vec<u32>,
    /// Node ids.
    #[serde(default)]
    pub nodes: Vec<u32>,
    /// Links by name (`h0:0-sw8:0`, the `link` column of port tables): both their ports.
    #[serde(default)]
    pub ports: Vec<String>,
    /// Start of the window (default 0).
    pub start: Option<String>,
    /// End of the window (default: the end of the run).
    pub end: Option<String>,
    /// Refuse a trace estimated above this many bytes, and stop writing at it (default
    /// 1000000000).
    pub max_bytes: Option<u64>,
}

impl TraceSpec {
    /// The simulator's trace settings, every id checked against the topology.
    pub fn build(&self, topo: &Topology, n_flows: usize, file: &Path) -> Result<TraceConfig> {
        let bad = |field: String, msg: String| Error::input(file, 0, field, msg);
        if let Some((i, f)) = self.flows.iter().enumerate().find(|(_, &f)| f as usize >= n_flows) {
            return Err(bad(format!("trace.flows[{i}]"), format!("no flow {f} (the scenario has {n_flows})")));
        }
        if let Some((i, n)) = self.nodes.iter().enumerate().find(|(_, &n)| n as usize >= topo.len()) {
            return Err(bad(format!("trace.nodes[{i}]"), format!("unknown node {n} ({} nodes)", topo.len())));
        }
        let mut ports = Vec::new();
        for (i, name) in self.ports.iter().enumerate() {
            let (a, b) = parse_link(topo, name).map_err(|m| bad(format!("trace.ports[{i}]"), m))?;
            ports.extend([a, b]);
        }
        let start = match &self.start {
            Some(s) => field_time(file, "trace.start", s)?,
            None => Time::ZERO,
        };
        let end = match &self.end {
            Some(s) => field_time(file, "trace.end", s)?,
            None => Time::MAX,
        };
        if end <= start {
            return Err(bad("trace.end".into(), "must be after `start`".into()));
        }
        let max_bytes = self.max_bytes.unwrap_or(DEFAULT_TRACE_MAX_BYTES);
        if max_bytes == 0 {
            return Err(bad("trace.max_bytes".into(), "must be positive".into()));
        }
        Ok(TraceConfig {
            flows: self.flows.clone(),
            nodes: self.nodes.iter().map(|&n| NodeId(n)).collect(),
            ports,
            start,
            end,
            max_bytes,
        })
    }
}

/// `h0:0-sw8:0`: the two ports of the link joining host 0's port 0 and switch 8's port 0.
pub fn parse_link(topo: &Topology, name: &str) -> std::result::Result<(PortId, PortId), String> {
    let usage = || format!("`{name}` is not a link name like `h0:0-sw8:0` (the `link` column of port tables)");
    let (a, b) = name.split_once('-').ok_or_else(usage)?;
    let (pa, pb) = (parse_end(topo, a).ok_or_else(usage)??, parse_end(topo, b).ok_or_else(usage)??);
    if topo.ports[pa.idx()].peer != pb {
        return Err(format!("`{a}` and `{b}` are not the two ends of one link"));
    }
    Ok((pa, pb))
}

/// `sw8:2` or `h0:0`: a port by node and index; `None` when malformed.
fn parse_end(topo: &Topology, end: &str) -> Option<std::result::Result<PortId, String>> {
    let (node, port) = end.split_once(':')?;
    let (switch, id) = match node.strip_prefix("sw") {
        Some(id) => (true, id),
        None => (false, node.strip_prefix('h')?),
    };
    let (id, port): (u32, usize) = (id.parse().ok()?, port.parse().ok()?);
    let n = NodeId(id);
    if n.idx() >= topo.len() || topo.is_host(n) == switch {
        return Some(Err(format!("`{end}`: no such {}", if switch { "switch" } else { "host" })));
    }
    Some(topo.nodes[n.idx()].ports.get(port).copied().ok_or_else(|| format!("`{end}`: node {id} has no port {port}")))
}
