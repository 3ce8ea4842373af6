//! The native scenario: one TOML document (or the same structure built in Python) that
//! says which topology, which traffic and which fabric settings to simulate.
//!
//! This module is the parser: it turns the document into the validated
//! `config::Scenario` that a run consumes (`Scenario::from_toml`, `from_json`, `from_file`
//! are written here; the struct lives in `config`, `Scenario::simulation` in `sim`).
//!
//! Parsing is strict: unknown fields, wrong types and bad units are errors naming the
//! file, line and field. Quantities with units are strings in ns-3's spelling
//! (`"100Gbps"`, `"1us"`), parsed exactly.
//!
//! ```toml
//! seed = 1
//! [topology]
//! kind = "fat_tree"            # star | dumbbell | leaf_spine | fat_tree | full_mesh | rail | hpcc_file
//! k = 4
//! host_rate = "100Gbps"
//! fabric_rate = "100Gbps"
//! delay = "1us"
//! [[traffic]]
//! kind = "poisson"             # poisson | incast | incast_rounds | permutation | random_pairs
//!                              # | flows | multipath | hpcc_flow_file | htsim_cm | simai | chakra
//! cdf = "fb_hadoop"            # or web_search, or a CDF file path
//! load = 0.3
//! duration = "1ms"
//! [fabric]
//! lossless = true
//! ```

mod attack_traffic;
pub mod chakra;
pub mod chakra_export;
pub mod classes;
pub mod collective;
mod fabric;
pub mod host_apps;
mod limits;
mod links;
mod locate;
pub mod multipath;
mod nvlink;
mod rnic;
mod schema;
pub mod simai;
mod source_map;
mod staggered_incast;
pub mod tenants;
mod trace_spec;
mod traffic;
mod values;

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The validated scenario and the trace cap live in `config`; re-exported so that
/// `scenario::Scenario` keeps working.
pub use crate::config::{Scenario, DEFAULT_TRACE_MAX_BYTES};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::topology::builders::{self, LinkParams};
use crate::topology::Topology;
use crate::units::{Rate, Time};
pub use fabric::FabricSpec;
pub use links::{EventSpec, LinkSpec};
pub use locate::{in_python_scenario, in_scenario_file};
pub use schema::scenario_schema_json;
use source_map::SourceMap;
pub use trace_spec::{parse_link, TraceSpec};
pub(crate) use traffic::{zero_time, TrafficCtx};
pub use traffic::{FlowEntry, TrafficSpec};
pub(crate) use values::{field_rate, field_time};
use values::{positive_time, positive_time_or, sample_interval};

/// The Facebook Hadoop flow-size CDF shipped with the HPCC simulator.
pub const FB_HADOOP_CDF: &str = include_str!("../../data/FbHdp_distribution.txt");
/// The web-search flow-size CDF shipped with the HPCC simulator.
pub const WEB_SEARCH_CDF: &str = include_str!("../../data/WebSearch_distribution.txt");

/// A whole scenario as written in TOML.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
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
    /// Per-link settings that override the fabric-wide ones.
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// Things that happen during the run (links going down and up).
    #[serde(default)]
    pub events: Vec<EventSpec>,
    /// The per-packet event trace (absent: none).
    pub trace: Option<TraceSpec>,
    /// Receive queues and RNR NAKs (`[rnic]`; absent: unlimited receive queues, no RNR).
    pub rnic: Option<rnic::RnicSpec>,
    /// The host model (`[host]`) of `[[app]]` applications (absent: its defaults).
    pub host: Option<host_apps::HostSpec>,
    /// Closed-loop applications (`[[app]]`).
    #[serde(default)]
    pub app: Vec<host_apps::AppSpec>,
    /// DRUM's scheduler (`[drum]`; absent: its defaults; ignored unless `host.mechanism = "drum"`).
    pub drum: Option<host_apps::DrumSpec>,
    /// Threads of the parallel engine (`SimConfig::threads`; absent: the sequential engine
    /// and the reference's event order; `"auto"`: what `rdmalab run` does without `--threads`).
    pub threads: Option<ThreadsSpec>,
    /// A file giving the parallel engine's partition of every node (`formats::partition_map`;
    /// absent: the automatic map). Used when the run has 2 or more threads (here or from
    /// `--threads`); a sequential run warns that it is not used.
    pub partition_map: Option<String>,
    /// Collectives (`[[collective]]`, `collective::CollectiveSpec`).
    #[serde(default)]
    pub collective: Vec<collective::CollectiveSpec>,
}

/// `threads`: a count, or `"auto"` (`sim::parallel::Runner::auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadsSpec {
    /// Up to this many partitions, one thread each (0 is refused when building).
    Count(u64),
    /// The machine's cores capped by the partitions, or the sequential engine for a
    /// scenario the parallel one refuses.
    Auto,
}

impl<'de> Deserialize<'de> for ThreadsSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ThreadsSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a thread count of at least 1, or \"auto\"")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> std::result::Result<ThreadsSpec, E> {
                Ok(ThreadsSpec::Count(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> std::result::Result<ThreadsSpec, E> {
                u64::try_from(n)
                    .map(ThreadsSpec::Count)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<ThreadsSpec, E> {
                match s {
                    "auto" => Ok(ThreadsSpec::Auto),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl ScenarioSpec {
    /// `SimConfig::threads`: `Some(0)` stands for `"auto"` (`sim::parallel::Runner::new`).
    fn threads(&self, file: &Path) -> Result<Option<u32>> {
        match self.threads {
            None => Ok(None),
            Some(ThreadsSpec::Auto) => Ok(Some(0)),
            Some(ThreadsSpec::Count(n)) if n == 0 || n > u16::MAX as u64 => {
                let msg = format!("{n}: must be a count from 1 to {} (or \"auto\")", u16::MAX);
                Err(Error::input(file, 0, "threads", msg))
            }
            Some(ThreadsSpec::Count(n)) => Ok(Some(n as u32)),
        }
    }
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
#[derive(Clone, Debug, Deserialize, serde::Serialize, schemars::JsonSchema)]
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

/// A DGX H100 has 8 GPUs, each with its own 400 Gb/s ConnectX-7 NIC (NVIDIA, "DGX H100 User
/// Guide", hardware overview): the rail fabric's defaults.
fn default_gpus() -> usize {
    8
}
fn default_gpu_rate() -> String {
    "400Gbps".into()
}
fn one() -> usize {
    1
}

/// The network's shape.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
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
        /// Spine switches (required unless `oversubscription` is given).
        spines: Option<usize>,
        /// Host bandwidth over uplink bandwidth per leaf, which chooses the spines (required
        /// unless `spines` is given).
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
    /// Switches joined pairwise, hosts on each (the data-partition paper's second topology).
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
    /// Rail-optimised leaf-spine: GPU g of every server on rail g (docs/collectives.md).
    Rail {
        /// Servers.
        servers: usize,
        /// GPUs per server, each a host with its own NIC (default 8: a DGX H100's GPUs).
        #[serde(default = "default_gpus")]
        gpus_per_server: usize,
        /// Leaves per rail (default 1), each serving an equal share of the servers.
        #[serde(default = "one")]
        leaves_per_rail: usize,
        /// Spines; every leaf links to each.
        spines: usize,
        /// GPU NIC rate (default 400 Gb/s: a DGX H100's ConnectX-7).
        #[serde(default = "default_gpu_rate")]
        host_rate: String,
        /// Leaf-spine link rate (default the GPU NIC's).
        #[serde(default = "default_gpu_rate")]
        fabric_rate: String,
        /// Delay of every link.
        #[serde(default = "default_delay")]
        delay: String,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
        /// Each GPU's NVLink to its server's other GPUs (absent: they talk over the rails).
        nvlink_rate: Option<String>,
        /// One NVLink hop's latency (required with `nvlink_rate`; absent: no NVLink).
        nvlink_latency: Option<String>,
    },
    /// The ns-3 HPCC simulator's topology file.
    HpccFile {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Addresses per host (default 1): the extra ones let flows pick a source address.
        ips_per_host: Option<u32>,
    },
}

/// What errors call a JSON scenario (it has no file; Python's sweep tools match this name).
pub const JSON_SOURCE: &str = "<python scenario>";

/// The parser's half of `Scenario`: reading a file, TOML or JSON (the struct and
/// `Scenario::new` live in `config`, `Scenario::simulation` in `sim`).
impl Scenario {
    /// Reads a TOML scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
        Scenario::from_toml(&text, path)
    }

    /// Parses a JSON scenario (the same structure as the TOML; what Python sends).
    pub fn from_json(text: &str, base: &Path) -> Result<Scenario> {
        Self::json_spec(text)?.build(base, Path::new(JSON_SOURCE))
    }

    /// The errors [`from_json`](Self::from_json) gives before it builds anything (unknown
    /// fields, wrong types, unknown variants), without building: building draws the
    /// workload and lays out the fabric, which a tool checking every value of a sweep's
    /// grid would otherwise pay per value.
    pub fn check_json_fields(text: &str) -> Result<()> {
        Self::json_spec(text).map(|_| ())
    }

    fn json_spec(text: &str) -> Result<ScenarioSpec> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| locate::json_error(e, text, Path::new(JSON_SOURCE)))
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

impl ScenarioSpec {
    /// The user's partition map, read against the topology's nodes.
    fn partition_map(&self, base: &Path, file: &Path, topology: &Topology) -> Result<Option<Vec<u16>>> {
        let Some(path) = &self.partition_map else { return Ok(None) };
        crate::formats::partition_map::read_partition_map(base.join(path), topology.nodes.len())
            .map(Some)
            .map_err(|e| locate::unreadable(e, file, "partition_map"))
    }

    /// Builds the topology, the flows and the config.
    pub fn build(&self, base: &Path, file: &Path) -> Result<Scenario> {
        let mut topology = self.topology.build(base, file).map_err(|e| locate::in_section(e, file, "topology"))?;
        links::set_link_overrides(&mut topology, self.fabric.error_rate, &self.links, file)?;
        let mut config = self.fabric.build_for(&topology, file, self.seed, self.stop_time.as_deref())?;
        // After every fabric key (the link layer and the switch model among them): the NIC's.
        rnic::apply(self.rnic.as_ref(), &self.fabric, file, &mut config)?;
        config.threads = self.threads(file)?;
        config.partition_map = self.partition_map(base, file, &topology)?;
        let tenants = tenants::Tenants::build(&self.tenants, file, &topology)?;
        let mut flows = Vec::new();
        let mut apps = Vec::new();
        let mut mp = Vec::new();
        let (mut jobs, mut job_parts) = (Vec::new(), Vec::new());
        for (i, t) in self.traffic.iter().enumerate() {
            let section = format!("traffic[{i}]");
            let ctx = TrafficCtx { i, base, file, topo: &topology, seed: self.seed, tenants: &tenants };
            if let TrafficSpec::Multipath(spec) = t {
                nvlink::refuse_multipath(&topology, file, &section)?;
                mp.push(spec.build(&section, file, &topology, &config, spec.drawn(&ctx)?)?);
                continue;
            }
            let job = match t {
                TrafficSpec::Simai(spec) => Some(spec.build(&ctx)),
                TrafficSpec::Chakra(spec) => Some(spec.build(&ctx)),
                _ => None,
            };
            if let Some(job) = job {
                let (job, parts) = job.map_err(|e| locate::in_section(e, file, &section))?;
                job_parts.resize(jobs.len(), Default::default());
                jobs.push(job);
                job_parts.push(parts);
                continue;
            }
            if let TrafficSpec::HtsimCm { .. } = t {
                // A matrix with triggers also gives a dependency-driven job.
                let (built, job) = t.htsim_cm(&ctx).map_err(|e| locate::in_section(e, file, &section))?;
                flows.extend(t.with_class(&ctx, built)?);
                jobs.extend(job);
                continue;
            }
            let built = t.build(&ctx, &mut apps).map_err(|e| locate::in_section(e, file, &section))?;
            flows.extend(t.with_class(&ctx, built)?);
        }
        // Stable: sources keep their internal order for equal start times.
        flows.sort_by_key(|f| f.start);
        config.link_events = links::link_events(&self.events, &topology, file)?;
        if let Some(t) = &self.trace {
            config.trace = Some(t.build(&topology, flows.len(), file)?);
        }
        let host_model = host_apps::build(
            self.host.as_ref(),
            &self.app,
            self.drum.as_ref(),
            file,
            &topology,
            self.stop_time.as_deref(),
            config.mtu,
        )?;
        let collectives = collective::build_all(&self.collective, file, &topology)?;
        let mut s = Scenario {
            topology,
            flows,
            apps,
            tenants: tenants.names(),
            config,
            multipath: mp,
            host_model,
            collectives,
            jobs,
            job_parts,
        };
        FabricSpec::check_built(&s, file)?;
        s.config.input_warnings = limits::check(self, &s, file)?;
        Ok(s)
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
            | TopologySpec::Rail { ips_per_host, .. }
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
            TopologySpec::Rail { .. } => nvlink::rail(self, file),
            TopologySpec::HpccFile { path, .. } => crate::formats::hpcc_topology::read_topology(base.join(path))
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
