//! The native scenario: one TOML document (or the same structure built in Python) that
//! says which topology, which traffic and which fabric settings to simulate.
//!
//! Parsing is strict: unknown fields, wrong types and bad units are errors naming the
//! file, line and field. Quantities with units are strings in ns-3's spelling
//! (`"100Gbps"`, `"1us"`), parsed exactly.
//!
//! ```toml
//! seed = 1
//! [topology]
//! kind = "fat_tree"            # star | dumbbell | leaf_spine | fat_tree | full_mesh | hpcc_file
//! k = 4
//! host_rate = "100Gbps"
//! fabric_rate = "100Gbps"
//! delay = "1us"
//! [[traffic]]
//! kind = "poisson"             # poisson | incast | incast_rounds | permutation | random_pairs
//!                              # | flows | multipath | hpcc_flow_file | htsim_cm
//! cdf = "fb_hadoop"            # or web_search, or a CDF file path
//! load = 0.3
//! duration = "1ms"
//! [fabric]
//! lossless = true
//! ```

mod attack_traffic;
mod cc_params;
pub mod host_apps;
mod iofd;
mod links;
mod locate;
pub mod multipath;
mod source_map;
pub mod tenants;
mod trace_spec;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::formats::units_parse::{parse_nonzero_rate, parse_time};
use crate::ids::NodeId;
use crate::sim::{SimConfig, WindowConfig};
use crate::topology::builders::{self, LinkParams};
use crate::topology::Topology;
use crate::units::{Rate, Time, TimingModel};
use crate::workload::cdf::SizeCdf;
use crate::workload::{generators, FlowSpec};
pub use links::{EventSpec, LinkSpec};
use source_map::SourceMap;
pub use trace_spec::{parse_link, TraceSpec, DEFAULT_MAX_BYTES as DEFAULT_TRACE_MAX_BYTES};

/// The Facebook Hadoop flow-size CDF shipped with the HPCC simulator.
pub const FB_HADOOP_CDF: &str = include_str!("../../data/FbHdp_distribution.txt");
/// The web-search flow-size CDF shipped with the HPCC simulator.
pub const WEB_SEARCH_CDF: &str = include_str!("../../data/WebSearch_distribution.txt");

/// A whole scenario as written in TOML.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Seed of every random stream (traffic and ECN marking).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Stop the run at this simulated time (default: when all flows are done).
    pub stop_time: Option<String>,
    /// The network.
    pub topology: TopologySpec,
    /// Traffic sources, merged by start time.
    #[serde(default)]
    pub traffic: Vec<TrafficSpec>,
    /// Fabric and RNIC settings.
    #[serde(default)]
    pub fabric: FabricSpec,
    /// Tenants (`[[tenants]]`); tenant `default` holds every host.
    #[serde(default)]
    pub tenants: Vec<tenants::TenantSpec>,
    /// Seed 000's host model (`[host]`), used by `[[app]]`.
    pub host: Option<host_apps::HostSpec>,
    /// Closed-loop applications (`[[app]]`).
    #[serde(default)]
    pub app: Vec<host_apps::AppSpec>,
    /// DRUM's scheduler (`[drum]`; ignored unless `host.mechanism = "drum"`).
    pub drum: Option<host_apps::DrumSpec>,
    /// Per-link settings that override the fabric-wide ones.
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// Things that happen during the run (links going down and up).
    #[serde(default)]
    pub events: Vec<EventSpec>,
    /// The per-packet event trace (absent: none).
    pub trace: Option<TraceSpec>,
}

fn default_seed() -> u64 {
    1
}
fn default_delay() -> String {
    "1us".into()
}
fn default_rates() -> OneOrMany {
    OneOrMany::One(default_rate())
}

/// A value given once for all, or as a list with one per item.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// The same for every item.
    One(String),
    /// One per item.
    Many(Vec<String>),
}

fn default_rate() -> String {
    "100Gbps".into()
}

/// The network's shape.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologySpec {
    /// Hosts around one switch.
    Star {
        /// Number of hosts.
        hosts: usize,
        /// Link rate.
        #[serde(default = "default_rate")]
        rate: String,
        /// Link delay.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
    /// Two switches joined by one bottleneck.
    Dumbbell {
        /// Hosts on each side.
        hosts_per_side: usize,
        /// Host link rate.
        #[serde(default = "default_rate")]
        host_rate: String,
        /// Parallel links between the two switches (default 1), each its own next hop.
        bottleneck_links: Option<usize>,
        /// Bottleneck rate: one for every link, or a list with one per link.
        #[serde(default = "default_rates")]
        bottleneck_rate: OneOrMany,
        /// Delay of every link.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
    /// Two-tier Clos; give `spines` or `oversubscription`.
    LeafSpine {
        /// Leaf switches.
        leaves: usize,
        /// Spine switches.
        spines: Option<usize>,
        /// Host bandwidth over uplink bandwidth per leaf (chooses `spines`).
        oversubscription: Option<f64>,
        /// Hosts per leaf.
        hosts_per_leaf: usize,
        /// Host link rate.
        #[serde(default = "default_rate")]
        host_rate: String,
        /// Leaf-spine link rate.
        #[serde(default = "default_rate")]
        fabric_rate: String,
        /// Delay of every link.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
    /// k-ary fat tree.
    FatTree {
        /// Arity (even).
        k: usize,
        /// Host link rate.
        #[serde(default = "default_rate")]
        host_rate: String,
        /// Switch-switch link rate.
        #[serde(default = "default_rate")]
        fabric_rate: String,
        /// Delay of every link.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
    /// Switches joined pairwise, hosts on each (seed 001's second topology).
    FullMesh {
        /// Switches.
        switches: usize,
        /// Hosts per switch.
        hosts_per_switch: usize,
        /// Rate of every link.
        #[serde(default = "default_rate")]
        rate: String,
        /// Delay of every link.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
    /// The ns-3 HPCC simulator's topology file.
    HpccFile {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
}

/// One source of flows.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrafficSpec {
    /// Per-host Poisson arrivals with sizes from a CDF, at a target load of the NIC rate.
    Poisson {
        /// `fb_hadoop`, `web_search`, or a CDF file path.
        cdf: String,
        /// Offered load per host, fraction of its NIC rate.
        load: f64,
        /// Arrival window length.
        duration: String,
        /// Arrival window start.
        #[serde(default = "zero_time")]
        start: String,
        /// Sending hosts (default: all, or the tenant's).
        hosts: Option<Vec<u32>>,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
        /// Cut long flows into pieces on their own QPs (seed 002 §IV-B).
        split: Option<attack_traffic::SplitSpec>,
    },
    /// Many senders, one receiver, all at once.
    Incast {
        /// Senders.
        senders: Vec<u32>,
        /// Receiver.
        receiver: u32,
        /// Bytes per sender.
        size: u64,
        /// Start time.
        #[serde(default = "zero_time")]
        start: String,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// Repeated incasts (seed 004's testbed): every `period`, each sender starts a `size`-byte
    /// flow to `receiver` after a U(0, `jitter`) delay; `rounds` times.
    IncastRounds {
        /// Senders.
        senders: Vec<u32>,
        /// Receiver.
        receiver: u32,
        /// Bytes per sender per round.
        size: u64,
        /// Time between rounds.
        period: String,
        /// Number of rounds.
        rounds: u32,
        /// Largest start delay of a sender within its round.
        #[serde(default = "zero_time")]
        jitter: String,
        /// First round's start.
        #[serde(default = "zero_time")]
        start: String,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// Every host sends to one other host and receives from one.
    Permutation {
        /// Bytes per flow.
        size: u64,
        /// Start time.
        #[serde(default = "zero_time")]
        start: String,
        /// Participating hosts (default: all).
        hosts: Option<Vec<u32>>,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// `count` flows of `size` bytes between uniformly random host pairs, starting
    /// uniformly in `[start, start + window]`.
    RandomPairs {
        /// Number of flows.
        count: usize,
        /// Bytes per flow.
        size: u64,
        /// Start of the arrival window.
        #[serde(default = "zero_time")]
        start: String,
        /// Length of the arrival window.
        #[serde(default = "zero_time")]
        window: String,
        /// Participating hosts (default: all, or the tenant's).
        hosts: Option<Vec<u32>>,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// Messages cut into chunks over several QPs per connection (seed 001).
    Multipath(multipath::MultipathSpec),
    /// Explicit flows.
    Flows {
        /// The flows.
        flows: Vec<FlowEntry>,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// The ns-3 HPCC simulator's flow file.
    HpccFlowFile {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// An htsim connection matrix (`.cm`); htsim node i is the i-th host.
    HtsimCm {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
    },
    /// Seed 002's parallel-QP attack: `qps` flows of `size` bytes opened together.
    ParallelQps(attack_traffic::ParallelQpsSpec),
    /// Seed 002's staggered-QP attack: one transfer cut into chunks posted in rotation
    /// over `qps` slots.
    StaggeredQps(attack_traffic::StaggeredQpsSpec),
    /// Seed 002's shuffled-overlay attack: a ring all-reduce whose ring changes each step.
    ShuffledOverlay(attack_traffic::OverlaySpec),
}

fn zero_time() -> String {
    "0ns".into()
}

/// One explicit flow.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes.
    pub size: u64,
    /// Start time.
    #[serde(default = "zero_time")]
    pub start: String,
    /// Priority class (default 3).
    pub pg: Option<u8>,
    /// Destination port (default 100).
    pub dport: Option<u16>,
    /// Source port (default: the reference's per-pair counter).
    pub sport: Option<u16>,
    /// Which of the source host's addresses the flow sends from (default 0, the host's own
    /// address; more with `[topology] ips_per_host`). ECMP hashes the source address.
    pub src_ip_index: Option<u32>,
}

/// Fabric and RNIC settings (defaults as in the reference's configs).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// `exact` (picoseconds) or `ns3` (the reference's truncated nanoseconds).
    pub timing: Option<TimingModel>,
    /// Payload bytes per packet.
    pub mtu: Option<u32>,
    /// PFC on (true, default) or drop on overflow (false).
    pub lossless: Option<bool>,
    /// Shared buffer per switch in MiB.
    pub buffer_mb: Option<f64>,
    /// ECN marking on.
    pub ecn: Option<bool>,
    /// ACKs in the strict-priority class.
    pub ack_high_prio: Option<bool>,
    /// ACK every N packets.
    pub ack_interval: Option<u32>,
    /// Retransmission timeout (`"none"` to disable).
    pub rto: Option<String>,
    /// `ecmp` (default) or `source_ip` (seed 003's rule: hop = alias index mod n).
    pub path_selection: Option<crate::topology::routing::PathSelection>,
    /// Congestion control: `none`, `dcqcn`, `hpcc`, `timely` or `dctcp`, with run.py's
    /// parameters (`hpcc` also turns on its rate-scaled window unless `window` is given).
    pub cc: Option<String>,
    /// Which QPs share a congestion-control state: `per_qp` (default), `per_destination`,
    /// `per_pair`, `per_destination_unsplit`.
    pub granularity: Option<crate::cc::Granularity>,
    /// Parameters of the congestion control, named as the reference's config keys in lower
    /// case (`ewma_gain`, `rate_ai`, `rp_timer`, `u_target`, ...).
    pub cc_params: Option<cc_params::CcParamTable>,
    /// At most one CNP per QP per this interval at the receiver (absent: every marked
    /// packet's ACK carries one, as in the reference).
    pub cnp_interval: Option<String>,
    /// Window limiting at one BDP.
    pub window: Option<bool>,
    /// QP-context cache entries per NIC (absent: not modelled).
    pub qp_cache_entries: Option<u32>,
    /// QP-context miss penalty.
    pub qp_cache_miss_penalty: Option<String>,
    /// `parallel` (default) or `serial` context fetches (seed 000 Fig 2c's knee).
    pub qp_cache_fetch: Option<crate::rnic::FetchMode>,
    /// Sample switch queue lengths at this interval.
    pub queue_sample_interval: Option<String>,
    /// Sample every active QP's rate and delivered throughput at this interval.
    pub rate_sample_interval: Option<String>,
    /// ECN Kmin in bytes on every port (overrides the per-rate value).
    pub ecn_kmin: Option<u64>,
    /// ECN Kmax in bytes on every port.
    pub ecn_kmax: Option<u64>,
    /// ECN Pmax on every port.
    pub ecn_pmax: Option<f64>,
    /// A shared congestion state outlives its last QP this long (default `"0ns"`).
    pub cc_state_linger: Option<String>,
    /// Tenant isolation: `none` (default) or `tenant`.
    pub defense: Option<String>,
    /// The tenant defense's budget of line-rate starts, as a fraction of the NIC rate
    /// (default 0.05; 0 = no line-rate starts).
    pub defense_start_fraction: Option<f64>,
    /// A cycle of switch ports paused this long is a PFC deadlock (default `"1ms"`).
    pub deadlock_timeout: Option<String>,
    /// `stop` (default) ends the run at a PFC deadlock; `continue` counts it and goes on.
    pub on_deadlock: Option<crate::sim::OnDeadlock>,
    /// Record the bytes every port sends per this interval (link utilisation, `res.links`).
    pub link_sample_interval: Option<String>,
    /// Per-packet loss probability of every link (`[[links]]` overrides one link).
    pub error_rate: Option<f64>,
    /// Time from a link going down or up to the new routes (default 0, as the reference).
    pub reroute_delay: Option<String>,
    /// In-order flow deflection at switches (Blitz's IOFD); absent = off.
    pub iofd: Option<iofd::IofdSpec>,
}

/// A scenario ready to simulate.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The network.
    pub topology: Topology,
    /// Flows sorted by start time.
    pub flows: Vec<FlowSpec>,
    /// Host applications that carry the flows whose `app` names them.
    pub apps: Vec<crate::workload::attacks::HostApp>,
    /// Tenant names by index (`default` first).
    pub tenants: Vec<String>,
    /// Settings.
    pub config: SimConfig,
    /// Multipath traffic, set up on the simulation by [`Scenario::simulation`].
    pub multipath: Vec<multipath::MpTraffic>,
    /// Closed-loop applications and their host model, set up by [`Scenario::simulation`].
    pub host_model: Option<crate::app::host_model::HostModelSpec>,
}

impl Scenario {
    /// A scenario of plain flows.
    pub fn new(topology: Topology, flows: Vec<FlowSpec>, config: SimConfig) -> Scenario {
        Scenario {
            topology,
            flows,
            apps: Vec::new(),
            tenants: vec![crate::tenancy::DEFAULT_TENANT.into()],
            config,
            multipath: Vec::new(),
            host_model: None,
        }
    }

    /// Builds the simulation: the flows, and the multipath connections with their messages.
    pub fn simulation(self) -> Result<crate::sim::Simulation> {
        let mut sim =
            crate::sim::Simulation::with_apps(self.topology, self.flows, &self.apps, self.tenants, self.config)?;
        for mp in &self.multipath {
            mp.set_up(&mut sim)?;
        }
        if let Some(h) = &self.host_model {
            sim.host_model_set_up(h)?;
        }
        Ok(sim)
    }

    /// Reads a TOML scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
        Scenario::from_toml(&text, path)
    }

    /// Parses a JSON scenario (the same structure as the TOML; what Python sends).
    pub fn from_json(text: &str, base: &Path) -> Result<Scenario> {
        let file = Path::new("<python scenario>");
        let mut de = serde_json::Deserializer::from_str(text);
        let spec: ScenarioSpec =
            serde_path_to_error::deserialize(&mut de).map_err(|e| locate::json_error(e, text, file))?;
        spec.build(base, file)
    }

    /// Parses a TOML scenario; relative paths inside resolve against `path`'s folder.
    /// Every error names `path`, the line and the field.
    pub fn from_toml(text: &str, path: &Path) -> Result<Scenario> {
        let de = toml::Deserializer::new(text);
        let spec: ScenarioSpec = serde_path_to_error::deserialize(de).map_err(|e| locate::toml_error(e, text, path))?;
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        spec.build(&base, path).map_err(|e| locate::with_line(e, path, || SourceMap::parse(text)))
    }
}

/// Parses a value with units, naming the field on failure.
pub(crate) fn field_time(file: &Path, field: &str, s: &str) -> Result<Time> {
    parse_time(s).map_err(|e| Error::input(file, 0, field, e.0))
}
/// A time that must not be zero (`"none"` is how a scenario turns a timer off).
fn positive_time(file: &Path, field: &str, s: &str) -> Result<Time> {
    match field_time(file, field, s)? {
        Time::ZERO => Err(Error::input(file, 0, field, "must be positive (or \"none\")")),
        t => Ok(t),
    }
}
pub(crate) fn field_rate(file: &Path, field: &str, s: &str) -> Result<Rate> {
    parse_nonzero_rate(s).map_err(|e| Error::input(file, 0, field, e.0))
}

impl ScenarioSpec {
    /// Builds the topology, the flows and the config.
    pub fn build(&self, base: &Path, file: &Path) -> Result<Scenario> {
        let mut topology = self.topology.build(base, file).map_err(|e| locate::in_section(e, file, "topology"))?;
        links::set_error_rates(&mut topology, self.fabric.error_rate, &self.links, file)?;
        let mut config = self.fabric.build(file, self.seed, self.stop_time.as_deref())?;
        let tenants = tenants::Tenants::build(&self.tenants, file, &topology)?;
        let mut flows = Vec::new();
        let mut apps = Vec::new();
        let mut mp = Vec::new();
        for (i, t) in self.traffic.iter().enumerate() {
            let section = format!("traffic[{i}]");
            if let TrafficSpec::Multipath(spec) = t {
                mp.push(spec.build(&section, file, &topology, &config)?);
                continue;
            }
            let ctx = TrafficCtx { i, base, file, topo: &topology, seed: self.seed, tenants: &tenants };
            flows.extend(t.build(&ctx, &mut apps).map_err(|e| locate::in_section(e, file, &section))?);
        }
        // Stable: sources keep their internal order for equal start times.
        flows.sort_by_key(|f| f.start);
        config.link_events = links::link_events(&self.events, &topology, file)?;
        if let Some(t) = &self.trace {
            config.trace = Some(t.build(&topology, flows.len(), file)?);
        }
        if let Some(i) = &config.iofd {
            iofd::check_escape_class(i, &flows, file)?;
        }
        let host_model = host_apps::build(
            self.host.as_ref(),
            &self.app,
            self.drum.as_ref(),
            file,
            &topology,
            self.stop_time.as_deref(),
        )?;
        Ok(Scenario { topology, flows, apps, tenants: tenants.names(), config, multipath: mp, host_model })
    }
}

/// What building one traffic source needs to know.
pub(crate) struct TrafficCtx<'a> {
    /// Index in `traffic`.
    pub i: usize,
    /// Folder of relative paths.
    pub base: &'a Path,
    /// The scenario file (for errors).
    pub file: &'a Path,
    /// The network.
    pub topo: &'a Topology,
    /// The scenario's seed.
    pub seed: u64,
    /// Its tenants.
    pub tenants: &'a tenants::Tenants,
}

impl TrafficCtx<'_> {
    /// `traffic[i].name`.
    pub fn field(&self, name: &str) -> String {
        format!("traffic[{}].{name}", self.i)
    }
    /// The tenant named at `traffic[i].tenant`.
    pub fn tenant(&self, name: &Option<String>) -> Result<u16> {
        self.tenants.index(self.file, &self.field("tenant"), name.as_deref())
    }
    /// This source's random seed.
    pub fn seed(&self) -> u64 {
        self.seed.wrapping_add(self.i as u64)
    }
}

impl TopologySpec {
    fn build(&self, base: &Path, file: &Path) -> Result<Topology> {
        let mut topo = self.shape(base, file)?;
        if let Some(n) = self.ips_per_host() {
            topo.set_ips_per_host(n)?;
        }
        Ok(topo)
    }

    fn ips_per_host(&self) -> Option<u32> {
        match self {
            TopologySpec::Star { ips_per_host, .. }
            | TopologySpec::Dumbbell { ips_per_host, .. }
            | TopologySpec::LeafSpine { ips_per_host, .. }
            | TopologySpec::FatTree { ips_per_host, .. }
            | TopologySpec::FullMesh { ips_per_host, .. }
            | TopologySpec::HpccFile { ips_per_host, .. } => *ips_per_host,
        }
    }

    /// The graph the variant describes.
    fn shape(&self, base: &Path, file: &Path) -> Result<Topology> {
        let t = |f: &str, s: &str| field_time(file, &format!("topology.{f}"), s);
        let r = |f: &str, s: &str| field_rate(file, &format!("topology.{f}"), s);
        match self {
            TopologySpec::Star { hosts, rate, delay, .. } => {
                builders::star(*hosts, r("rate", rate)?, t("delay", delay)?)
            }
            TopologySpec::Dumbbell { hosts_per_side, host_rate, bottleneck_links, bottleneck_rate, delay, .. } => {
                let d = t("delay", delay)?;
                let links = bottleneck_links.unwrap_or(match bottleneck_rate {
                    OneOrMany::Many(list) => list.len(),
                    OneOrMany::One(_) => 1,
                });
                let bottlenecks = bottleneck_params(file, links, bottleneck_rate, d)?;
                builders::dumbbell_parallel(
                    *hosts_per_side,
                    LinkParams { rate: r("host_rate", host_rate)?, delay: d },
                    &bottlenecks,
                )
            }
            TopologySpec::LeafSpine {
                leaves,
                spines,
                oversubscription,
                hosts_per_leaf,
                host_rate,
                fabric_rate,
                delay,
                ..
            } => {
                let (h, f, d) = (r("host_rate", host_rate)?, r("fabric_rate", fabric_rate)?, t("delay", delay)?);
                match (spines, oversubscription) {
                    (Some(s), None) => builders::leaf_spine(*leaves, *s, *hosts_per_leaf, h, f, d),
                    (None, Some(o)) => builders::leaf_spine_oversubscribed(*leaves, *hosts_per_leaf, h, f, *o, d),
                    _ => Err(Error::input(
                        file,
                        0,
                        "topology.spines",
                        "give exactly one of `spines` and `oversubscription`",
                    )),
                }
            }
            TopologySpec::FatTree { k, host_rate, fabric_rate, delay, .. } => {
                builders::fat_tree(*k, r("host_rate", host_rate)?, r("fabric_rate", fabric_rate)?, t("delay", delay)?)
            }
            TopologySpec::FullMesh { switches, hosts_per_switch, rate, delay, .. } => {
                builders::full_mesh(*switches, *hosts_per_switch, r("rate", rate)?, t("delay", delay)?)
            }
            TopologySpec::HpccFile { path, .. } => crate::formats::hpcc_topology::read_topology(&base.join(path))
                .map_err(|e| locate::unreadable(e, file, "topology.path")),
        }
    }
}

/// The dumbbell's parallel bottleneck links: `links` of them, at one rate or one rate each.
fn bottleneck_params(file: &Path, links: usize, rates: &OneOrMany, delay: Time) -> Result<Vec<LinkParams>> {
    if links == 0 {
        return Err(Error::input(file, 0, "topology.bottleneck_links", "must be at least 1"));
    }
    let field = "topology.bottleneck_rate";
    let rates: Vec<Rate> = match rates {
        OneOrMany::One(r) => vec![field_rate(file, field, r)?; links],
        OneOrMany::Many(list) if list.len() != links => {
            let msg = format!("{} rate(s) for {links} bottleneck_links: give one per link", list.len());
            return Err(Error::input(file, 0, field, msg));
        }
        OneOrMany::Many(list) => list
            .iter()
            .enumerate()
            .map(|(i, r)| field_rate(file, &format!("{field}[{i}]"), r))
            .collect::<Result<_>>()?,
    };
    Ok(rates.into_iter().map(|rate| LinkParams { rate, delay }).collect())
}

/// The hosts listed at `field`, each checked to be a host of tenant `t`; absent: the
/// tenant's hosts (every host for `default`).
fn host_list(ctx: &TrafficCtx<'_>, field: &str, t: u16, ids: &Option<Vec<u32>>) -> Result<Vec<NodeId>> {
    match ids {
        None => Ok(ctx.tenants.hosts(t).map_or_else(|| ctx.topo.hosts().collect(), |h| h.to_vec())),
        Some(v) => v
            .iter()
            .map(|&h| {
                let n = check_host(ctx.file, field, ctx.topo, h)?;
                ctx.tenants.check_member(ctx.file, field, t, n)?;
                Ok(n)
            })
            .collect(),
    }
}

pub(crate) fn check_host(file: &Path, field: &str, topo: &Topology, h: u32) -> Result<NodeId> {
    let n = NodeId(h);
    if topo.is_host(n) {
        Ok(n)
    } else if n.idx() < topo.len() {
        Err(Error::input(file, 0, field, format!("node {h} is a switch, not a host")))
    } else {
        Err(Error::input(file, 0, field, format!("unknown host {h} (the topology has {} nodes)", topo.len())))
    }
}

fn load_cdf(base: &Path, name: &str) -> Result<SizeCdf> {
    match name {
        "fb_hadoop" => SizeCdf::parse(FB_HADOOP_CDF, Path::new("<builtin fb_hadoop>")),
        "web_search" => SizeCdf::parse(WEB_SEARCH_CDF, Path::new("<builtin web_search>")),
        path => {
            let p = base.join(path);
            let text = std::fs::read_to_string(&p).map_err(|e| Error::Io { path: p.clone(), source: e })?;
            SizeCdf::parse(&text, &p)
        }
    }
}

impl TrafficSpec {
    fn build(&self, ctx: &TrafficCtx<'_>, apps: &mut Vec<crate::workload::attacks::HostApp>) -> Result<Vec<FlowSpec>> {
        let (file, topo) = (ctx.file, ctx.topo);
        let f = |name: &str| ctx.field(name);
        let with_tenant = |flows: Vec<FlowSpec>, t: u16| -> Vec<FlowSpec> {
            flows.into_iter().map(|fl| FlowSpec { tenant: t, ..fl }).collect()
        };
        match self {
            TrafficSpec::Poisson { cdf, load, duration, start, hosts, tenant, split } => {
                let t = ctx.tenant(tenant)?;
                let cdf = load_cdf(ctx.base, cdf).map_err(|e| locate::unreadable(e, file, &f("cdf")))?;
                let hosts = host_list(ctx, &f("hosts"), t, hosts)?;
                let rate = hosts.first().map(|&h| topo.nic_rate(h)).unwrap_or_default();
                let start = field_time(file, &f("start"), start)?;
                let dur = field_time(file, &f("duration"), duration)?;
                let flows = generators::poisson(&hosts, &cdf, *load, rate, start, dur, ctx.seed())?;
                let flows = with_tenant(flows, t);
                match split {
                    None => Ok(flows),
                    Some(sp) => attack_traffic::split(ctx, sp, flows, t),
                }
            }
            TrafficSpec::Incast { senders, receiver, size, start, tenant } => {
                let t = ctx.tenant(tenant)?;
                let s: Vec<NodeId> = host_list(ctx, &f("senders"), t, &Some(senders.clone()))?;
                let r = check_host(file, &f("receiver"), topo, *receiver)?;
                ctx.tenants.check_member(file, &f("receiver"), t, r)?;
                Ok(with_tenant(generators::incast(&s, r, *size, field_time(file, &f("start"), start)?)?, t))
            }
            TrafficSpec::IncastRounds { senders, receiver, size, period, rounds, jitter, start, tenant } => {
                let t = ctx.tenant(tenant)?;
                let s: Vec<NodeId> = host_list(ctx, &f("senders"), t, &Some(senders.clone()))?;
                let r = check_host(file, &f("receiver"), topo, *receiver)?;
                ctx.tenants.check_member(file, &f("receiver"), t, r)?;
                let shape = generators::Rounds {
                    start: field_time(file, &f("start"), start)?,
                    period: field_time(file, &f("period"), period)?,
                    rounds: *rounds,
                    jitter: field_time(file, &f("jitter"), jitter)?,
                };
                Ok(with_tenant(generators::incast_rounds(&s, r, *size, shape, ctx.seed())?, t))
            }
            TrafficSpec::Permutation { size, start, hosts, tenant } => {
                let t = ctx.tenant(tenant)?;
                let hosts = host_list(ctx, &f("hosts"), t, hosts)?;
                let start = field_time(file, &f("start"), start)?;
                Ok(with_tenant(generators::permutation(&hosts, *size, start, ctx.seed())?, t))
            }
            TrafficSpec::RandomPairs { count, size, start, window, hosts, tenant } => {
                let t = ctx.tenant(tenant)?;
                let hosts = host_list(ctx, &f("hosts"), t, hosts)?;
                let (start, window) = (field_time(file, &f("start"), start)?, field_time(file, &f("window"), window)?);
                Ok(with_tenant(generators::random_pairs(&hosts, *count, *size, start, window, ctx.seed())?, t))
            }
            TrafficSpec::Multipath(_) => Ok(Vec::new()), // set up on the simulation, not as flows
            TrafficSpec::Flows { flows, tenant } => {
                let t = ctx.tenant(tenant)?;
                let mut out = Vec::with_capacity(flows.len());
                for (j, e) in flows.iter().enumerate() {
                    let at = f(&format!("flows[{j}]"));
                    let fl = FlowSpec { tenant: t, ..explicit_flow(file, &at, e, topo)? };
                    ctx.tenants.check_member(file, &format!("{at}.src"), t, fl.src)?;
                    ctx.tenants.check_member(file, &format!("{at}.dst"), t, fl.dst)?;
                    out.push(fl);
                }
                Ok(out)
            }
            TrafficSpec::HpccFlowFile { path, tenant } => {
                let t = ctx.tenant(tenant)?;
                let flows = crate::formats::hpcc_flow::read_flows(&ctx.base.join(path), topo)
                    .map_err(|e| locate::unreadable(e, file, &f("path")))?;
                let flows = with_tenant(flows, t);
                ctx.tenants.check_flows(file, &f("tenant"), &flows)?;
                Ok(flows)
            }
            TrafficSpec::HtsimCm { path, tenant } => {
                let t = ctx.tenant(tenant)?;
                let hosts: Vec<NodeId> = topo.hosts().collect();
                let flows = crate::formats::htsim_cm::read_cm(&ctx.base.join(path), &hosts)
                    .map_err(|e| locate::unreadable(e, file, &f("path")))?;
                let flows = with_tenant(flows, t);
                ctx.tenants.check_flows(file, &f("tenant"), &flows)?;
                Ok(flows)
            }
            TrafficSpec::ParallelQps(spec) => attack_traffic::parallel(ctx, spec),
            TrafficSpec::StaggeredQps(spec) => attack_traffic::staggered(ctx, spec, apps),
            TrafficSpec::ShuffledOverlay(spec) => attack_traffic::overlay(ctx, spec, apps),
        }
    }
}

/// One `flows` entry. Checked here rather than left to the simulator, whose check only
/// knows the merged, sorted flow list, so that errors name the entry the user wrote.
fn explicit_flow(file: &Path, at: &str, e: &FlowEntry, topo: &Topology) -> Result<FlowSpec> {
    let g = |name: &str| format!("{at}.{name}");
    let bad = |name: &str, msg: String| Err(Error::input(file, 0, g(name), msg));
    let src = check_host(file, &g("src"), topo, e.src)?;
    let dst = check_host(file, &g("dst"), topo, e.dst)?;
    if src == dst {
        return bad("dst", format!("flow from host {src} to itself"));
    }
    if e.size == 0 {
        return bad("size", "must be at least 1 byte".into());
    }
    if e.size > crate::workload::MAX_FLOW_BYTES {
        return bad("size", crate::workload::too_large(e.size));
    }
    let pg = e.pg.unwrap_or(3);
    if pg == 0 || pg as usize >= crate::fabric::NUM_PRIOS {
        return bad("pg", format!("{pg} is not a data class (1..{})", crate::fabric::NUM_PRIOS - 1));
    }
    let src_ip = match e.src_ip_index {
        Some(k) => Some(source_ip(topo, src, k).map_err(|m| Error::input(file, 0, g("src_ip_index"), m))?),
        None => None,
    };
    let start = field_time(file, &g("start"), &e.start)?;
    Ok(FlowSpec { pg, dport: e.dport.unwrap_or(100), sport: e.sport, src_ip, ..FlowSpec::new(src, dst, e.size, start) })
}

/// Address number `k` of `host`.
fn source_ip(topo: &Topology, host: NodeId, k: u32) -> std::result::Result<u32, String> {
    let ips = &topo.nodes[host.idx()].ips;
    ips.get(k as usize).copied().ok_or_else(|| {
        format!(
            "host {host} owns {} address(es), numbered from 0; `[topology] ips_per_host` gives hosts more",
            ips.len()
        )
    })
}

impl FabricSpec {
    fn build(&self, file: &Path, seed: u64, stop: Option<&str>) -> Result<SimConfig> {
        let mut c = SimConfig { seed, ..SimConfig::default() };
        let f = |name: &str| format!("fabric.{name}");
        if let Some(s) = stop {
            c.stop_time = field_time(file, "stop_time", s)?;
        }
        if let Some(t) = self.timing {
            c.timing = t;
        }
        if let Some(m) = self.mtu {
            if m == 0 {
                return Err(Error::input(file, 0, f("mtu"), "must be at least 1 byte"));
            }
            c.mtu = m;
        }
        if let Some(l) = self.lossless {
            c.lossless = l;
        }
        if let Some(mb) = self.buffer_mb {
            if !(mb.is_finite() && mb > 0.0) {
                return Err(Error::input(file, 0, f("buffer_mb"), "must be a positive number of MiB"));
            }
            c.buffer_bytes = (mb * 1024.0 * 1024.0) as u64;
        }
        if self.ecn == Some(false) {
            c.ecn = None;
        }
        if let Some(a) = self.ack_high_prio {
            c.ack_high_prio = a;
        }
        if let Some(n) = self.ack_interval {
            if n == 0 {
                return Err(Error::input(file, 0, f("ack_interval"), "must be at least 1"));
            }
            c.ack_interval = n;
        }
        if let Some(r) = &self.rto {
            c.rto = if r == "none" { None } else { Some(positive_time(file, &f("rto"), r)?) };
        }
        if let Some(p) = self.path_selection {
            c.path_selection = p;
        }
        if let Some(cc) = &self.cc {
            c.cc = crate::cc::CcConfig::from_name(cc).map_err(|m| Error::input(file, 0, f("cc"), m))?;
        }
        if let Some(table) = &self.cc_params {
            cc_params::apply(&mut c.cc, table, file)?;
        }
        if let Some(g) = self.granularity {
            c.granularity = g;
        }
        if let Some(d) = c.cc.dasr() {
            // Blame the field the user wrote: the count when given, else the granularity.
            let count_given = self.cc_params.as_ref().is_some_and(|t| t.contains_key("dasr_count"));
            let field = if count_given || self.granularity.is_none() { "cc_params.dasr_count" } else { "granularity" };
            crate::cc::dasr::check_granularity(d.count, c.granularity)
                .map_err(|m| Error::input(file, 0, f(field), m))?;
        }
        if let Some(s) = &self.cnp_interval {
            c.cnp_interval = Some(field_time(file, &f("cnp_interval"), s)?);
        }
        let hpcc = matches!(c.cc, crate::cc::CcConfig::Hpcc(_));
        match self.window {
            Some(true) => c.window = WindowConfig { enabled: true, variable: hpcc, global: true },
            None if hpcc => c.window = WindowConfig { enabled: true, variable: true, global: true },
            _ => {}
        }
        if let Some(n) = self.qp_cache_entries {
            let pen = self.qp_cache_miss_penalty.as_deref().unwrap_or("500ns");
            let pen = field_time(file, &f("qp_cache_miss_penalty"), pen)?;
            let fetch = self.qp_cache_fetch.unwrap_or_default();
            c.qp_cache = Some(crate::rnic::QpCacheConfig { entries: n, miss_penalty_ns: pen.ns(), fetch });
        } else if self.qp_cache_fetch.is_some() {
            return Err(Error::input(file, 0, f("qp_cache_fetch"), "needs `qp_cache_entries` (no cache is modelled)"));
        }
        if let Some(s) = &self.queue_sample_interval {
            c.queue_sample_interval = Some(field_time(file, &f("queue_sample_interval"), s)?);
        }
        if let Some(s) = &self.rate_sample_interval {
            c.rate_sample_interval = Some(field_time(file, &f("rate_sample_interval"), s)?);
        }
        if let Some(s) = &self.cc_state_linger {
            c.cc_state_linger = field_time(file, &f("cc_state_linger"), s)?;
        }
        if let Some(d) = &self.defense {
            c.defense = match d.as_str() {
                "none" => crate::tenancy::Defense::None,
                "tenant" => crate::tenancy::Defense::Tenant,
                other => {
                    return Err(Error::input(
                        file,
                        0,
                        f("defense"),
                        format!("unknown defense `{other}` (known: none, tenant)"),
                    ))
                }
            };
        }
        if matches!(c.cc, crate::cc::CcConfig::Blitz(_)) && c.defense != crate::tenancy::Defense::None {
            // DASR already apportions each receiver's rate; stacking the tenant defense on it
            // would need a joint rule neither paper gives.
            let msg = "does not compose with `fabric.cc = \"blitz\"` (Blitz apportions rates at the receiver; \
                       use cc = \"dcqcn\" with the defense, or blitz with defense = \"none\")";
            return Err(Error::input(file, 0, f("defense"), msg));
        }
        if let Some(x) = self.defense_start_fraction {
            if !(0.0..=1.0).contains(&x) {
                return Err(Error::input(file, 0, f("defense_start_fraction"), format!("must be in [0, 1], got {x}")));
            }
            c.defense_params.start_fraction = x;
        }
        self.apply_ecn_overrides(file, &mut c)?;
        if let Some(s) = &self.deadlock_timeout {
            c.deadlock_timeout = positive_time(file, &f("deadlock_timeout"), s)?;
        }
        if let Some(o) = self.on_deadlock {
            c.on_deadlock = o;
        }
        if let Some(s) = &self.link_sample_interval {
            c.link_sample_interval = Some(field_time(file, &f("link_sample_interval"), s)?);
        }
        if let Some(s) = &self.reroute_delay {
            c.reroute_delay = field_time(file, &f("reroute_delay"), s)?;
        }
        if let Some(i) = &self.iofd {
            c.iofd = Some(i.build(file)?);
        }
        Ok(c)
    }

    /// `ecn_kmin`, `ecn_kmax`, `ecn_pmax`: forced on every port, checked against each other
    /// and against the per-rate values they leave in place.
    fn apply_ecn_overrides(&self, file: &Path, c: &mut SimConfig) -> Result<()> {
        let o = crate::fabric::ecn::EcnOverrides { kmin: self.ecn_kmin, kmax: self.ecn_kmax, pmax: self.ecn_pmax };
        if o == Default::default() {
            return Ok(());
        }
        let first = ["ecn_kmin", "ecn_kmax", "ecn_pmax"]
            .into_iter()
            .zip([o.kmin.is_some(), o.kmax.is_some(), o.pmax.is_some()])
            .find(|(_, set)| *set)
            .map_or("ecn_kmin", |(n, _)| n);
        let Some(ecn) = c.ecn.take() else {
            return Err(Error::input(file, 0, format!("fabric.{first}"), "ECN marking is off (`ecn = false`)"));
        };
        if let Some(p) = o.pmax {
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::input(file, 0, "fabric.ecn_pmax", format!("must be in [0, 1], got {p}")));
            }
        }
        let ecn = ecn.with_overrides(o);
        if let Some((rate, p)) = ecn.by_rate.iter().find(|(_, p)| p.kmin > p.kmax) {
            let field = if o.kmin.is_some() { "fabric.ecn_kmin" } else { "fabric.ecn_kmax" };
            let msg = format!("Kmin {} > Kmax {} (at {rate})", p.kmin, p.kmax);
            return Err(Error::input(file, 0, field, msg));
        }
        c.ecn = Some(ecn);
        Ok(())
    }
}
