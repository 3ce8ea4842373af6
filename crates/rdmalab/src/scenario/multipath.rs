//! The `kind = "multipath"` traffic source: its fields and their checks (each error names
//! the field). It becomes a `multipath::MpTraffic`, which `sim` desugars into
//! `Simulation::mp_connect` / `mp_post_send` / `mp_disconnect` calls (`MpTraffic::set_up`).

use std::path::Path;

use serde::Deserialize;

use super::{check_host, field_time, zero_time};
use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::multipath::MpTraffic;
use crate::multipath::{
    self,
    virtuoso::{ChunkProbeConfig, ChunkSignal},
    Allocation, MpConfig, MpVerb, PathBy, QpPolicy, RefillOn, Split, SportPolicy, VirtuosoConfig, Weights,
};
use crate::topology::routing::Routes;
use crate::topology::Topology;
use crate::units::Time;
use crate::workload::FlowSpec;

/// How messages are cut (`split`).
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SplitName {
    /// Fixed-size chunks (the data-partition paper).
    Partition,
    /// Virtuoso's capacity-weighted sub-WRs with MP verbs.
    Virtuoso,
}

/// `path_by`.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathByName {
    /// One source port per QP.
    Sport,
    /// One source address per QP.
    SrcIp,
}

/// `chunk_probe_signal`.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChunkSignalName {
    /// The WR failed with the retry limit exceeded.
    RetryExceeded,
    /// The WR was retransmitted (in part).
    Retransmission,
}

/// `weights`: `"probe"`, `"equal"` or a list.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum WeightsSpec {
    /// `probe` or `equal`.
    Name(String),
    /// One per path.
    List(Vec<f64>),
}

/// A message's `verb`.
#[derive(Clone, Copy, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerbName {
    /// RDMA WRITE.
    #[default]
    Write,
    /// SEND.
    Send,
    /// RDMA READ.
    Read,
}

/// `allocation`.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AllocationName {
    /// Refill the QP that completes.
    Dynamic,
    /// Even split up front.
    Static,
}

/// `refill_on`.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefillName {
    /// RC completion.
    Ack,
    /// Last packet sent.
    Sent,
}

/// `sport_policy`.
#[derive(Clone, Copy, Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultipathSpec {
    /// How messages are cut: `partition` or `virtuoso`.
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
    /// `reuse` (default) or `recreate`.
    #[serde(default)]
    pub qp_policy: QpPolicy,
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
    /// Virtuoso: `sport` (default) or `src_ip`.
    pub path_by: Option<PathByName>,
    /// Virtuoso: `probe` (default), `equal` or one weight per path.
    pub weights: Option<WeightsSpec>,
    /// Virtuoso: probe bytes per path (default 524288).
    pub probe_size: Option<u64>,
    /// Virtuoso: below this size a message is one WR on `small_path` (default 524288).
    pub small_message: Option<u64>,
    /// Virtuoso: the path of small messages (default 0).
    pub small_path: Option<u32>,
    /// Virtuoso: sub-flows start on multiples of this many bytes (default 4096).
    pub block: Option<u64>,
    /// Virtuoso: EWMA gain of the capacity monitor (our extension; default 0 = off).
    pub monitor_gain: Option<f64>,
    /// Virtuoso, lossy fabrics: search each path's largest WR first (§3.5, Fig. 3b; default false).
    pub chunk_probe: Option<bool>,
    /// Virtuoso: the search's first WR size (default 65536; our assumption).
    pub chunk_probe_start: Option<u64>,
    /// Virtuoso: the search's linear step (default 16384; our assumption).
    pub chunk_probe_step: Option<u64>,
    /// Virtuoso: `retry_exceeded` (default) or `retransmission`.
    pub chunk_probe_signal: Option<ChunkSignalName>,
    /// The messages; one connection per distinct (src, dst), messages posted in order.
    #[serde(default)]
    pub messages: Vec<MessageEntry>,
    /// More messages, drawn by a flow source (`kind = "poisson"`, ...): each of its flows
    /// becomes a WRITE of the same source, destination, size and start, so host-side
    /// multipath carries exactly the workload plain flows would (`lb-host-vs-switch`; absent:
    /// only `messages`).
    pub workload: Option<Box<super::TrafficSpec>>,
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
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
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
    /// `write` (default), `send` or `read` (`read` and `send` need `split = "virtuoso"`).
    #[serde(default)]
    pub verb: VerbName,
}

impl MultipathSpec {
    /// Checks every field; `at` is the entry's path (`traffic[2]`).
    /// `drawn`: the flows of `workload` (see [`MultipathSpec::drawn`]), as messages after
    /// those listed.
    pub(super) fn build(
        &self,
        at: &str,
        file: &Path,
        topo: &Topology,
        fabric: &SimConfig,
        drawn: Vec<FlowSpec>,
    ) -> Result<MpTraffic> {
        let g = |name: &str| format!("{at}.{name}");
        let mut config = self.config(file, &g)?;
        // A drawn message smaller than a chunk is one chunk (a listed one is refused below:
        // the data-partition paper's split assumes whole chunks; a workload's mice are not cut).
        config.small_as_one_chunk = self.workload.is_some();
        config.validate().map_err(|e| super::locate::in_section(e, file, at))?;
        if self.messages.is_empty() && self.workload.is_none() {
            return Err(Error::input(file, 0, g("messages"), "no messages: list some or give a `workload`"));
        }
        let mut messages = Vec::with_capacity(self.messages.len() + drawn.len());
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
            check_wire_bytes(file, &g, j, m.size, &config)?;
            let virtuoso = matches!(config.split, Split::Virtuoso(_));
            if !virtuoso && !matches!(m.verb, VerbName::Write) {
                let msg = "only `write` with split = \"partition\"; `send` and `read` need split = \"virtuoso\"";
                return Err(Error::input(file, 0, h("verb"), msg));
            }
            if !virtuoso && config.chunk_size > m.size {
                let msg = format!("{} bytes is larger than messages[{j}].size ({} bytes)", config.chunk_size, m.size);
                return Err(Error::input(file, 0, g("chunk_size"), msg));
            }
            messages.push((src, dst, m.size, field_time(file, &h("start"), &m.start)?));
        }
        messages.extend(drawn.iter().map(|f| (f.src, f.dst, f.size, f.start)));
        let mut verbs: Vec<MpVerb> = self.messages.iter().map(|m| verb(m.verb)).collect();
        verbs.resize(messages.len(), MpVerb::Write);
        if config.sport_policy == SportPolicy::DistinctPaths {
            check_distinct_paths(file, &g("qps"), topo, &config, &messages)?;
        }
        if let Split::Virtuoso(v) = &config.split {
            check_virtuoso(file, at, &g, topo, fabric, &config, v, &messages)?;
        }
        Ok(MpTraffic { config, messages, verbs })
    }

    fn config(&self, file: &Path, g: &dyn Fn(&str) -> String) -> Result<MpConfig> {
        let split = match self.split {
            SplitName::Partition => {
                self.no_virtuoso_fields(file, g)?;
                Split::Partition
            }
            SplitName::Virtuoso => Split::Virtuoso(self.virtuoso(file, g)?),
        };
        let sport_policy = match self.sport_policy {
            SportName::Sequential | SportName::DistinctPaths if !self.sports.is_empty() => {
                return Err(Error::input(file, 0, g("sports"), "only with sport_policy = \"explicit\""));
            }
            SportName::Sequential => SportPolicy::Sequential,
            SportName::DistinctPaths => SportPolicy::DistinctPaths,
            SportName::Explicit => SportPolicy::Explicit(self.sports.clone()),
        };
        Ok(MpConfig {
            split,
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
            qp_policy: self.qp_policy,
            sport_policy,
            pg: self.pg.unwrap_or(3),
            dport: self.dport.unwrap_or(100),
            small_as_one_chunk: false,
        })
    }
}

impl MultipathSpec {
    /// The flows `workload` draws (none without one), built as that source would be at
    /// this entry's place in `traffic` (same seed); `workload` may not be multipath itself
    /// nor start applications.
    pub(super) fn drawn(&self, ctx: &super::TrafficCtx<'_>) -> Result<Vec<FlowSpec>> {
        let Some(w) = &self.workload else { return Ok(Vec::new()) };
        let field = ctx.field("workload");
        let mut apps = Vec::new();
        let flows = match w.as_ref() {
            super::TrafficSpec::Multipath(_) => Err(Error::input(ctx.file, 0, &field, "a flow source, not multipath")),
            t => t.build(ctx, &mut apps).map_err(|e| super::locate::in_section(e, ctx.file, &field)),
        }?;
        if !apps.is_empty() {
            return Err(Error::input(ctx.file, 0, field, "a flow source, not an application"));
        }
        Ok(flows)
    }

    /// Virtuoso's fields, with the defaults of `VirtuosoConfig`.
    fn virtuoso(&self, file: &Path, g: &dyn Fn(&str) -> String) -> Result<VirtuosoConfig> {
        let d = VirtuosoConfig::default();
        let weights = match &self.weights {
            None => Weights::Probe,
            Some(WeightsSpec::Name(n)) if n == "probe" => Weights::Probe,
            Some(WeightsSpec::Name(n)) if n == "equal" => Weights::Equal,
            Some(WeightsSpec::Name(n)) => {
                let msg = format!("unknown `{n}`: probe, equal, or a list with one weight per QP");
                return Err(Error::input(file, 0, g("weights"), msg));
            }
            Some(WeightsSpec::List(w)) => Weights::List(w.clone()),
        };
        Ok(VirtuosoConfig {
            path_by: match self.path_by {
                Some(PathByName::SrcIp) => PathBy::SrcIp,
                _ => PathBy::Sport,
            },
            weights,
            probe_size: self.probe_size.unwrap_or(d.probe_size),
            small_message: self.small_message.unwrap_or(d.small_message),
            small_path: self.small_path.unwrap_or(d.small_path),
            block: self.block.unwrap_or(d.block),
            monitor_gain: self.monitor_gain.unwrap_or(d.monitor_gain),
            chunk_probe: self.chunk_probe(file, g)?,
        })
    }

    /// The size search's fields: only with `chunk_probe = true`.
    fn chunk_probe(&self, file: &Path, g: &dyn Fn(&str) -> String) -> Result<Option<ChunkProbeConfig>> {
        if self.chunk_probe != Some(true) {
            let given = [
                ("chunk_probe_start", self.chunk_probe_start.is_some()),
                ("chunk_probe_step", self.chunk_probe_step.is_some()),
                ("chunk_probe_signal", self.chunk_probe_signal.is_some()),
            ];
            return match given.iter().find(|(_, set)| *set) {
                Some((name, _)) => Err(Error::input(file, 0, g(name), "only with chunk_probe = true")),
                None => Ok(None),
            };
        }
        let d = ChunkProbeConfig::default();
        Ok(Some(ChunkProbeConfig {
            start: self.chunk_probe_start.unwrap_or(d.start),
            step: self.chunk_probe_step.unwrap_or(d.step),
            signal: match self.chunk_probe_signal {
                Some(ChunkSignalName::Retransmission) => ChunkSignal::Retransmission,
                _ => ChunkSignal::RetryExceeded,
            },
        }))
    }

    /// Virtuoso's fields mean nothing to `split = "partition"`: say so rather than ignore.
    fn no_virtuoso_fields(&self, file: &Path, g: &dyn Fn(&str) -> String) -> Result<()> {
        let given = [
            ("path_by", self.path_by.is_some()),
            ("weights", self.weights.is_some()),
            ("probe_size", self.probe_size.is_some()),
            ("small_message", self.small_message.is_some()),
            ("small_path", self.small_path.is_some()),
            ("block", self.block.is_some()),
            ("monitor_gain", self.monitor_gain.is_some()),
            ("chunk_probe", self.chunk_probe.is_some()),
            ("chunk_probe_start", self.chunk_probe_start.is_some()),
            ("chunk_probe_step", self.chunk_probe_step.is_some()),
            ("chunk_probe_signal", self.chunk_probe_signal.is_some()),
        ];
        match given.iter().find(|(_, set)| *set) {
            Some((name, _)) => Err(Error::input(file, 0, g(name), "only with split = \"virtuoso\"")),
            None => Ok(()),
        }
    }
}

/// A message, headers included, is capped as a flow is (2^53 bytes): a larger one is a typo
/// and would run for days.
fn check_wire_bytes(file: &Path, g: &dyn Fn(&str) -> String, j: usize, size: u64, c: &MpConfig) -> Result<()> {
    let max = crate::workload::MAX_FLOW_BYTES;
    if size > max {
        return Err(Error::input(file, 0, g(&format!("messages[{j}].size")), crate::workload::too_large(size)));
    }
    let chunks = size.div_ceil(c.chunk_size.max(1)) as u128;
    let wire = size as u128 + chunks * c.chunk_header as u128;
    if wire > max as u128 {
        let msg = format!(
            "{chunks} chunk(s) of messages[{j}] with {} header bytes each put {wire} bytes on the wire, more than \
             the largest flow, 2^53 = {max} bytes",
            c.chunk_header
        );
        return Err(Error::input(file, 0, g("chunk_header"), msg));
    }
    Ok(())
}

fn verb(v: VerbName) -> MpVerb {
    match v {
        VerbName::Write => MpVerb::Write,
        VerbName::Send => MpVerb::Send,
        VerbName::Read => MpVerb::Read,
    }
}

/// Virtuoso's checks that need the fabric: its own fields (named), and `path_by = src_ip`
/// against the addresses each source host has.
#[allow(clippy::too_many_arguments)]
fn check_virtuoso(
    file: &Path,
    at: &str,
    g: &dyn Fn(&str) -> String,
    topo: &Topology,
    fabric: &SimConfig,
    cfg: &MpConfig,
    v: &VirtuosoConfig,
    messages: &[(NodeId, NodeId, u64, Time)],
) -> Result<()> {
    v.validate(cfg.qps, fabric.mtu).map_err(|e| super::locate::in_section(e, file, at))?;
    if let Some(c) = &v.chunk_probe {
        if let Some(m) = multipath::virtuoso::chunk_probe_fabric_error(c, fabric.lossless, fabric.retry_limit) {
            return Err(Error::input(file, 0, g("chunk_probe"), m));
        }
    }
    if v.path_by == PathBy::SrcIp {
        for &(src, ..) in messages {
            let have = topo.nodes[src.idx()].ips.len();
            if have < cfg.qps as usize {
                let msg = format!(
                    "path_by = \"src_ip\" gives each of {} QPs its own address, but host {src} has {have}: \
                     raise topology.ips_per_host to at least {}",
                    cfg.qps, cfg.qps
                );
                return Err(Error::input(file, 0, g("qps"), msg));
            }
        }
    }
    Ok(())
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
