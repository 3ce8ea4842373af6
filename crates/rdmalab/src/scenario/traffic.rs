//! `[[traffic]]`: the sources of flows, each checked and turned into `FlowSpec`s.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::staggered_incast::Stagger;
use super::{attack_traffic, check_host, field_time, locate, multipath, tenants, FB_HADOOP_CDF, WEB_SEARCH_CDF};
use crate::app::deps::TransferGraph;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::rnic::transport::Transport;
use crate::topology::Topology;
use crate::workload::cdf::SizeCdf;
use crate::workload::{generators, FlowSpec, Verb};

/// `incast_rounds`' default piece under `stagger = "paced"`: 4096 bytes, the largest
/// InfiniBand MTU (IBTA vol. 1 §7.7.2), so a piece is one packet on the poster's fabric.
const DEFAULT_PIECE: u64 = 4096;

/// One source of flows.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
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
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Cut long flows into pieces on their own QPs (absent: flows stay whole).
        split: Option<attack_traffic::SplitSpec>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
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
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
    },
    /// Repeated incasts (Blitz's testbed): every `period`, each sender starts a `size`-byte
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
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Blitz's application-layer DASR (default `none`: every sender posts at once).
        #[serde(default)]
        stagger: Stagger,
        /// `stagger = "paced"`: bytes per posted piece (default 4096).
        piece: Option<u64>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
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
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
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
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
    },
    /// Messages cut into chunks over several QPs per connection (the data-partition paper, Wang et al.).
    Multipath(multipath::MultipathSpec),
    /// Explicit flows.
    Flows {
        /// The flows.
        flows: Vec<FlowEntry>,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
        /// Class of the entries that give none (1..7, default 3).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
    },
    /// The ns-3 HPCC simulator's flow file.
    HpccFlowFile {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
        /// Class of every flow (1..7; default: each line's own).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
    },
    /// An htsim connection matrix (`.cm`); htsim node i is the i-th host.
    HtsimCm {
        /// Path (relative to the scenario file).
        path: PathBuf,
        /// Tenant of its flows (default `default`).
        tenant: Option<String>,
        /// Priority class of its flows (1..7, default 3).
        pg: Option<u8>,
        /// Transport of its flows' QPs: `rc` (default), `uc`, `ud` or `uet` (`rnic::transport`, `rnic::uet`).
        transport: Option<String>,
        /// Its flows' verb: `write` (default) or `send` (`workload::Verb`, `sim::mech::rnr`).
        verb: Option<String>,
    },
    /// One training iteration of a SimAI workload file (`scenario::simai`): a job, no flows.
    Simai(super::simai::SimaiSpec),
    /// A set of Chakra execution traces, one per rank (`scenario::chakra`): a job, no flows.
    Chakra(super::chakra::ChakraSpec),
    /// The parallel-QP attack (the CC-attack paper): `qps` flows of `size` bytes opened together.
    ParallelQps(attack_traffic::ParallelQpsSpec),
    /// The staggered-QP attack (the CC-attack paper): one transfer cut into chunks posted in rotation
    /// over `qps` slots.
    StaggeredQps(attack_traffic::StaggeredQpsSpec),
    /// The shuffled-overlay attack (the CC-attack paper): a ring all-reduce whose ring changes each step.
    ShuffledOverlay(attack_traffic::OverlaySpec),
}

pub(crate) fn zero_time() -> String {
    "0ns".into()
}

/// One explicit flow.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
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
    pub(crate) fn field(&self, name: &str) -> String {
        format!("traffic[{}].{name}", self.i)
    }
    /// The tenant named at `traffic[i].tenant`.
    pub(crate) fn tenant(&self, name: &Option<String>) -> Result<u16> {
        self.tenants.index(self.file, &self.field("tenant"), name.as_deref())
    }
    /// This source's random seed.
    pub(crate) fn seed(&self) -> u64 {
        self.seed.wrapping_add(self.i as u64)
    }
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
    /// The transport the entry gives all its flows' QPs, if any (the attack generators and
    /// `multipath` keep RC).
    fn transport(&self) -> Option<&str> {
        match self {
            TrafficSpec::Poisson { transport, .. }
            | TrafficSpec::Incast { transport, .. }
            | TrafficSpec::IncastRounds { transport, .. }
            | TrafficSpec::Permutation { transport, .. }
            | TrafficSpec::RandomPairs { transport, .. }
            | TrafficSpec::Flows { transport, .. }
            | TrafficSpec::HpccFlowFile { transport, .. }
            | TrafficSpec::HtsimCm { transport, .. } => transport.as_deref(),
            _ => None,
        }
    }

    /// The verb the entry gives all its flows' messages, if any (the same entries as
    /// `transport`).
    fn verb(&self) -> Option<&str> {
        match self {
            TrafficSpec::Poisson { verb, .. }
            | TrafficSpec::Incast { verb, .. }
            | TrafficSpec::IncastRounds { verb, .. }
            | TrafficSpec::Permutation { verb, .. }
            | TrafficSpec::RandomPairs { verb, .. }
            | TrafficSpec::Flows { verb, .. }
            | TrafficSpec::HpccFlowFile { verb, .. }
            | TrafficSpec::HtsimCm { verb, .. } => verb.as_deref(),
            _ => None,
        }
    }

    /// True for the entries whose applications post their flows' messages as the entry's
    /// verb: a staggered incast's senders (each serial message, each paced piece, a SEND).
    /// The serial aggregator's grants are its own messages, not the entry's flows: WRITEs.
    fn app_may_send(&self) -> bool {
        matches!(self, TrafficSpec::IncastRounds { stagger: Stagger::Serial | Stagger::Paced, .. })
    }

    /// The class the entry gives all its flows, if any (`flows` entries and `multipath`
    /// connections apply theirs themselves).
    fn pg(&self) -> Option<u8> {
        match self {
            TrafficSpec::Poisson { pg, .. }
            | TrafficSpec::Incast { pg, .. }
            | TrafficSpec::IncastRounds { pg, .. }
            | TrafficSpec::Permutation { pg, .. }
            | TrafficSpec::RandomPairs { pg, .. }
            | TrafficSpec::HpccFlowFile { pg, .. }
            | TrafficSpec::HtsimCm { pg, .. } => *pg,
            TrafficSpec::ParallelQps(s) => s.pg,
            TrafficSpec::StaggeredQps(s) => s.pg,
            TrafficSpec::ShuffledOverlay(s) => s.pg,
            TrafficSpec::Flows { .. } | TrafficSpec::Multipath(_) | TrafficSpec::Simai(_) | TrafficSpec::Chakra(_) => {
                None
            }
        }
    }

    /// Flows of class `self.pg()`, checked to be a data class (`traffic[i].pg`).
    pub(super) fn with_class(&self, ctx: &TrafficCtx<'_>, mut flows: Vec<FlowSpec>) -> Result<Vec<FlowSpec>> {
        if let Some(t) = self.transport() {
            let t = Transport::parse(t).map_err(|m| Error::input(ctx.file, 0, ctx.field("transport"), m))?;
            flows.iter_mut().for_each(|f| f.transport = t);
        }
        if let Some(v) = self.verb() {
            let v = Verb::parse(v).map_err(|m| Error::input(ctx.file, 0, ctx.field("verb"), m))?;
            if v == Verb::Send && !self.app_may_send() && flows.iter().any(|f| !f.app.is_none()) {
                let m =
                    "`send` is for plain flows and staggered incasts; this entry's flows are posted by an application";
                return Err(Error::input(ctx.file, 0, ctx.field("verb"), m));
            }
            flows.iter_mut().for_each(|f| f.verb = v);
        }
        if let Some(pg) = self.pg() {
            if pg == 0 || pg as usize >= crate::fabric::NUM_PRIOS {
                let msg = format!("{pg} is not a data class (1..{})", crate::fabric::NUM_PRIOS - 1);
                return Err(Error::input(ctx.file, 0, ctx.field("pg"), msg));
            }
            flows.iter_mut().for_each(|f| f.pg = pg);
        }
        Ok(flows)
    }

    /// An htsim connection matrix: its plain flows, and the job of its triggered
    /// connections if it has triggers (`formats::htsim_cm::CmTraffic`). The job's QPs are
    /// class 3, RC WRITEs of the default tenant, so `tenant`, `pg`, `transport` and `verb` are refused
    /// for a matrix with triggers.
    pub(super) fn htsim_cm(&self, ctx: &TrafficCtx<'_>) -> Result<(Vec<FlowSpec>, Option<TransferGraph>)> {
        let TrafficSpec::HtsimCm { path, tenant, pg, transport, verb } = self else { return Ok((Vec::new(), None)) };
        let (file, f) = (ctx.file, |name: &str| ctx.field(name));
        let t = ctx.tenant(tenant)?;
        let hosts: Vec<NodeId> = ctx.topo.hosts().collect();
        let m = crate::formats::htsim_cm::read_cm_traffic(ctx.base.join(path), &hosts)
            .map_err(|e| locate::unreadable(e, file, &f("path")))?;
        if m.job.is_some() {
            let set = [
                ("tenant", tenant.is_some()),
                ("pg", pg.is_some()),
                ("transport", transport.is_some()),
                ("verb", verb.is_some()),
            ];
            if let Some((name, _)) = set.into_iter().find(|s| s.1) {
                let msg =
                    "is not supported for a matrix with triggers: its triggered connections run on the job's QPs \
                           (class 3, RC, the default tenant)";
                return Err(Error::input(file, 0, f(name), msg));
            }
        }
        let flows: Vec<FlowSpec> = m.flows.into_iter().map(|fl| FlowSpec { tenant: t, ..fl }).collect();
        ctx.tenants.check_flows(file, &f("tenant"), &flows)?;
        Ok((flows, m.job))
    }

    pub(super) fn build(
        &self,
        ctx: &TrafficCtx<'_>,
        apps: &mut Vec<crate::workload::attacks::HostApp>,
    ) -> Result<Vec<FlowSpec>> {
        let (file, topo) = (ctx.file, ctx.topo);
        let f = |name: &str| ctx.field(name);
        let with_tenant = |flows: Vec<FlowSpec>, t: u16| -> Vec<FlowSpec> {
            flows.into_iter().map(|fl| FlowSpec { tenant: t, ..fl }).collect()
        };
        match self {
            TrafficSpec::Poisson { cdf, load, duration, start, hosts, tenant, split, .. } => {
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
            TrafficSpec::Incast { senders, receiver, size, start, tenant, .. } => {
                let t = ctx.tenant(tenant)?;
                let s: Vec<NodeId> = host_list(ctx, &f("senders"), t, &Some(senders.clone()))?;
                let r = check_host(file, &f("receiver"), topo, *receiver)?;
                ctx.tenants.check_member(file, &f("receiver"), t, r)?;
                Ok(with_tenant(generators::incast(&s, r, *size, field_time(file, &f("start"), start)?)?, t))
            }
            TrafficSpec::IncastRounds {
                senders,
                receiver,
                size,
                period,
                rounds,
                jitter,
                start,
                tenant,
                pg,
                stagger,
                piece,
                ..
            } => {
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
                let flows = with_tenant(generators::incast_rounds(&s, r, *size, shape, ctx.seed())?, t);
                let piece = match (stagger, piece) {
                    (Stagger::Paced, p) => p.unwrap_or(DEFAULT_PIECE),
                    (_, None) => 0,
                    (_, Some(_)) => {
                        return Err(Error::input(file, 0, f("piece"), "is read only with stagger = \"paced\""));
                    }
                };
                if *stagger == Stagger::Paced && piece == 0 {
                    return Err(Error::input(file, 0, f("piece"), "must be at least 1 byte"));
                }
                let pg = pg.unwrap_or(3);
                Ok(super::staggered_incast::apply(*stagger, piece, &s, shape, pg, flows, apps))
            }
            TrafficSpec::Permutation { size, start, hosts, tenant, .. } => {
                let t = ctx.tenant(tenant)?;
                let hosts = host_list(ctx, &f("hosts"), t, hosts)?;
                let start = field_time(file, &f("start"), start)?;
                Ok(with_tenant(generators::permutation(&hosts, *size, start, ctx.seed())?, t))
            }
            TrafficSpec::RandomPairs { count, size, start, window, hosts, tenant, .. } => {
                let t = ctx.tenant(tenant)?;
                let hosts = host_list(ctx, &f("hosts"), t, hosts)?;
                let (start, window) = (field_time(file, &f("start"), start)?, field_time(file, &f("window"), window)?);
                Ok(with_tenant(generators::random_pairs(&hosts, *count, *size, start, window, ctx.seed())?, t))
            }
            TrafficSpec::Multipath(_) => Ok(Vec::new()), // set up on the simulation, not as flows
            TrafficSpec::Flows { flows, tenant, pg, .. } => {
                let t = ctx.tenant(tenant)?;
                let mut out = Vec::with_capacity(flows.len());
                for (j, e) in flows.iter().enumerate() {
                    let at = f(&format!("flows[{j}]"));
                    let fl = FlowSpec { tenant: t, ..explicit_flow(file, &at, e, *pg, topo)? };
                    ctx.tenants.check_member(file, &format!("{at}.src"), t, fl.src)?;
                    ctx.tenants.check_member(file, &format!("{at}.dst"), t, fl.dst)?;
                    out.push(fl);
                }
                Ok(out)
            }
            TrafficSpec::HpccFlowFile { path, tenant, .. } => {
                let t = ctx.tenant(tenant)?;
                let flows = crate::formats::hpcc_flow::read_flows(ctx.base.join(path), topo)
                    .map_err(|e| locate::unreadable(e, file, &f("path")))?;
                let flows = with_tenant(flows, t);
                ctx.tenants.check_flows(file, &f("tenant"), &flows)?;
                Ok(flows)
            }
            TrafficSpec::HtsimCm { .. } => match self.htsim_cm(ctx)? {
                (flows, None) => Ok(flows),
                // (`ScenarioSpec::build` takes matrices through `htsim_cm` itself.)
                (_, Some(_)) => Err(Error::input(file, 0, f("path"), "a matrix with triggers gives a job, not flows")),
            },
            // (`ScenarioSpec::build` takes workloads through `SimaiSpec::build` itself.)
            TrafficSpec::Simai(_) => Err(Error::input(file, 0, f("path"), "a SimAI workload gives a job, not flows")),
            TrafficSpec::Chakra(_) => Err(Error::input(file, 0, f("path"), "Chakra traces give a job, not flows")),
            TrafficSpec::ParallelQps(spec) => attack_traffic::parallel(ctx, spec),
            TrafficSpec::StaggeredQps(spec) => attack_traffic::staggered(ctx, spec, apps),
            TrafficSpec::ShuffledOverlay(spec) => attack_traffic::overlay(ctx, spec, apps),
        }
    }
}

/// One `flows` entry. Checked here rather than left to the simulator, whose check only
/// knows the merged, sorted flow list, so that errors name the entry the user wrote.
fn explicit_flow(file: &Path, at: &str, e: &FlowEntry, pg: Option<u8>, topo: &Topology) -> Result<FlowSpec> {
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
    let pg = e.pg.or(pg).unwrap_or(3);
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
