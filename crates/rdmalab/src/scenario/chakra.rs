//! `[[traffic]] kind = "chakra"`: a set of Chakra execution traces, one per rank
//! (`formats::chakra`, docs/chakra.md).
//!
//! ```toml
//! [[traffic]]
//! kind = "chakra"
//! path = "traces/all_reduce"      # the prefix: files traces/all_reduce.0.et, .1.et, ...
//! ranks = { hosts = "0..7" }      # rank i on the i-th listed host (default: the first hosts)
//! system = "Ring_4chunks.json"    # ASTRA-sim's system file (optional)
//! algorithm = { allreduce = "ring", alltoall = "direct" }
//! splits = 4                      # preferred-dataset-splits
//! active_chunks = 2               # active-chunks-per-dimension
//! endpoint_delay = "10ns"         # endpoint-delay
//! channels = 1
//! chunk = "512KiB"
//! compute_scale = 1.0             # 0: leave compute out
//! start = "0us"
//! dims = [4, 2]                   # ranks per network dimension (logical-dims)
//! network = "sample_16nodes_2D.json" # or ASTRA-sim's network file, for its dims only
//! ```
//!
//! A key given here wins over the system file's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::collective::{by_name, bytes, RanksSpec, SizeSpec, DEFAULT_CHUNK};
use super::{field_time, TrafficCtx};
use crate::app::collective::{Algorithm, Kind};
use crate::app::deps::TransferGraph;
use crate::app::trace_nodes::JobRecords;
use crate::error::{Error, Result};
use crate::formats::chakra::dims::{DimAlgorithm, Dims};
use crate::formats::chakra::job::{job, kind_of, Plan};
use crate::formats::chakra::system::{read_network_dims, read_system, System, IMPLEMENTATIONS};
use crate::formats::chakra::{count_ranks, rank_path, read_traces, NodeKind};
use crate::ids::NodeId;
use crate::units::Time;

/// One `chakra` traffic entry as written.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChakraSpec {
    /// The traces' prefix (relative to the scenario file).
    pub path: PathBuf,
    /// The hosts of ranks 0, 1, ... (default: the topology's first hosts, one per file).
    pub ranks: Option<RanksSpec>,
    /// ASTRA-sim's system file, relative to the scenario file (default: none).
    pub system: Option<PathBuf>,
    /// The algorithm per kind, `{ allreduce = "ring", ... }` (default: the system file's, else
    /// `ring`, and `direct` for alltoall).
    pub algorithm: Option<BTreeMap<String, String>>,
    /// Pieces a collective is cut into (default: the system file's, else 1).
    pub splits: Option<u32>,
    /// Pieces in flight at a rank (default: the system file's, else 1).
    pub active_chunks: Option<u32>,
    /// Delay before each step that forwards what a rank received (default: the system file's,
    /// else `"0ns"`).
    pub endpoint_delay: Option<String>,
    /// Channels of every piece (default 1).
    pub channels: Option<u16>,
    /// Pipelining unit (default `"512KiB"`).
    pub chunk: Option<SizeSpec>,
    /// Compute durations times this (default 1).
    pub compute_scale: Option<f64>,
    /// When the traces start (default `"0us"`).
    pub start: Option<String>,
    /// Ranks per network dimension, dimension 0 first (ASTRA-sim's `logical-dims`; default one
    /// dimension of every rank).
    pub dims: Option<Vec<u32>>,
    /// ASTRA-sim's network file, relative to the scenario file, read for its dimensions only
    /// (`logical-dims`, or the analytical YAML's `npus_count`); `dims` wins over it (default
    /// none: one dimension of every rank).
    pub network: Option<PathBuf>,
}

impl ChakraSpec {
    /// The traces' job; errors name `traffic[i].<field>`, or the trace file, rank and node.
    pub(super) fn build(&self, ctx: &TrafficCtx<'_>) -> Result<(TransferGraph, JobRecords)> {
        let (file, f) = (ctx.file, |name: &str| ctx.field(name));
        let prefix = ctx.base.join(&self.path);
        let hosts: Vec<NodeId> = match &self.ranks {
            None => {
                let n = count_ranks(&prefix)? as usize;
                let hosts: Vec<NodeId> = ctx.topo.hosts().take(n).collect();
                if hosts.len() < n {
                    let msg = format!("{n} trace files, {} hosts: give the ranks' hosts", hosts.len());
                    return Err(Error::input(file, 0, f("ranks"), msg));
                }
                hosts
            }
            Some(r) => {
                let hosts = r.hosts(file, &f, ctx.topo)?;
                // A rank left out would change every collective over all ranks: refused.
                let next = rank_path(&prefix, hosts.len() as u32);
                if next.exists() {
                    let msg = format!(
                        "{} host(s) for a trace set with more ranks ({} exists): list a host for every rank",
                        hosts.len(),
                        next.display()
                    );
                    return Err(Error::input(file, 0, f("ranks"), msg));
                }
                hosts
            }
        };
        let sys_path = self.system.as_ref().map(|p| ctx.base.join(p));
        let sys = match &sys_path {
            Some(p) => read_system(p).map_err(|e| match e {
                Error::Io { path, source } => {
                    Error::input(file, 0, f("system"), format!("cannot read {}: {source}", path.display()))
                }
                other => other,
            })?,
            None => Default::default(),
        };
        let mut algorithms = sys.algorithms.clone();
        let mut unavailable = sys.unavailable.clone();
        let mut given = Vec::new();
        for (kind, name) in self.algorithm.iter().flatten() {
            let field = f(&format!("algorithm.{kind}"));
            let k: Kind = by_name(file, &field, &Kind::NAMES, kind)?;
            let a: Algorithm = by_name(file, &field, &Algorithm::NAMES, name)?;
            if !k.algorithms().contains(&a) {
                return Err(Error::input(file, 0, field, format!("{name} does not carry out {kind}")));
            }
            algorithms.retain(|(x, _)| *x != k);
            unavailable.retain(|(x, ..)| *x != k);
            given.push((k, a));
            algorithms.push((k, a));
        }
        let dims = self.dims(ctx, &sys, sys_path.as_deref(), &given, &mut unavailable, hosts.len())?;
        let plan = Plan {
            hosts,
            algorithms,
            splits: self.splits.or(sys.splits).unwrap_or(1),
            active: self.active_chunks.or(sys.active).unwrap_or(1),
            endpoint_delay: match &self.endpoint_delay {
                Some(s) => field_time(file, &f("endpoint_delay"), s)?,
                None => sys.endpoint_delay.unwrap_or(Time::ZERO),
            },
            channels: self.channels.unwrap_or(1),
            chunk: self.chunk.as_ref().map_or(Ok(DEFAULT_CHUNK), |c| bytes(file, &f("chunk"), c))?,
            compute_scale: self.compute_scale.unwrap_or(1.0),
            start: self.start.as_ref().map_or(Ok(Time::ZERO), |s| field_time(file, &f("start"), s))?,
            roofline: sys.roofline,
            dims,
        };
        for (name, v) in [
            ("splits", u64::from(plan.splits)),
            ("active_chunks", u64::from(plan.active)),
            ("channels", u64::from(plan.channels)),
            ("chunk", plan.chunk),
        ] {
            if v == 0 {
                return Err(Error::input(file, 0, f(name), "must be at least 1"));
            }
        }
        if !(plan.compute_scale >= 0.0 && plan.compute_scale.is_finite()) {
            return Err(Error::input(file, 0, f("compute_scale"), "must be a number of at least 0"));
        }
        let traces = read_traces(&prefix, plan.hosts.len() as u32)?;
        // The system file's algorithm for a kind with no schedule here matters only when a
        // trace holds a collective of that kind.
        for (kind, key, why) in &unavailable {
            let used = traces.iter().flat_map(|t| &t.nodes).find(|n| match &n.kind {
                NodeKind::Collective { op, .. } => kind_of(*op) == Ok(*kind),
                _ => false,
            });
            if let (Some(n), Some(p)) = (used, &sys_path) {
                let msg = format!(
                    "{why}, and the traces hold one (node {} ({})): give `algorithm = {{ {} = \"...\" }}` in the scenario",
                    n.id,
                    n.name,
                    kind.name()
                );
                return Err(Error::input(p, 0, key.clone(), msg));
            }
        }
        let j = job(&traces, &plan)?;
        Ok((j.graph, JobRecords { parts: j.parts, nodes: Some(j.nodes) }))
    }

    /// The network's dimensions (`dims`) with each kind's algorithm per dimension: the
    /// scenario's `algorithm` in every dimension, else the system file's list, which must have
    /// one name per dimension. `None` for one dimension.
    fn dims(
        &self,
        ctx: &TrafficCtx<'_>,
        sys: &System,
        sys_path: Option<&Path>,
        given: &[(Kind, Algorithm)],
        unavailable: &mut Vec<(Kind, String, String)>,
        ranks: usize,
    ) -> Result<Option<Dims>> {
        let (file, f) = (ctx.file, |name: &str| ctx.field(name));
        let (given_dims, field) = match (&self.dims, &self.network) {
            (Some(d), _) => (Some(d.clone()), f("dims")),
            (None, Some(p)) => {
                let p = ctx.base.join(p);
                let d = read_network_dims(&p).map_err(|e| match e {
                    Error::Io { path, source } => {
                        Error::input(file, 0, f("network"), format!("cannot read {}: {source}", path.display()))
                    }
                    other => other,
                })?;
                (Some(d), format!("{} (its dimensions)", f("network")))
            }
            (None, None) => (None, String::new()),
        };
        let sizes = given_dims.clone().unwrap_or_default();
        if let Some(d) = &given_dims {
            let n: u64 = d.iter().map(|&x| u64::from(x)).product();
            if d.is_empty() || d.contains(&0) || n != ranks as u64 {
                let msg =
                    format!("{d:?}: the ranks per dimension multiply to {n}, and the trace set has {ranks} ranks");
                return Err(Error::input(file, 0, field, msg));
            }
        }
        let path = || sys_path.map_or_else(|| file.to_path_buf(), Path::to_path_buf);
        let mut algorithms = Vec::new();
        for (kind, key, names) in &sys.per_dim {
            if given.iter().any(|(k, _)| k == kind) {
                continue;
            }
            if names.len() != sizes.len() {
                let msg = format!(
                    "{} algorithms, one per network dimension, for {} dimension(s): give `dims` in the scenario                      with one entry per algorithm (ASTRA-sim's `logical-dims`)",
                    names.len(),
                    sizes.len().max(1)
                );
                return Err(Error::input(path(), 0, key.clone(), msg));
            }
            algorithms.push((
                *kind,
                names.iter().map(|n| DimAlgorithm::Astra { name: n.clone(), key: key.clone() }).collect(),
            ));
        }
        if sizes.len() < 2 {
            return Ok(None);
        }
        // A list of one algorithm is for a network of one dimension.
        for (kind, key) in IMPLEMENTATIONS.iter().map(|(key, k)| (k, key)) {
            let listed = sys.algorithms.iter().any(|(k, _)| k == kind) || unavailable.iter().any(|(k, ..)| k == kind);
            if listed && !given.iter().any(|(k, _)| k == kind) {
                let msg = format!(
                    "a list of one algorithm for {} network dimensions (dims = {sizes:?}): give one per dimension",
                    sizes.len()
                );
                return Err(Error::input(path(), 0, key.to_string(), msg));
            }
        }
        unavailable.clear();
        algorithms.extend(given.iter().map(|&(k, a)| (k, vec![DimAlgorithm::Given(a); sizes.len()])));
        Ok(Some(Dims { sizes, algorithms, local_bw_aware: sys.local_bw_aware.unwrap_or(false), system: path() }))
    }
}
