//! `[[collective]]`: a collective over a list of hosts (`app::collective`,
//! `docs/collectives.md`).
//!
//! ```toml
//! [[collective]]
//! name = "grad"          # records "grad#0", "grad#1", ... by iteration
//! kind = "allreduce"     # allreduce | allgather | reduce_scatter | alltoall | broadcast
//! algorithm = "ring"     # ring | double_binary_tree | halving_doubling | direct
//! ranks = [0, 1, 2, 3]   # hosts in rank order, or { hosts = "0..1023" } (both ends included)
//! size = "64MiB"         # bytes per rank, as NCCL-tests counts them
//! channels = 2           # parallel rings / tree pairs, each on its own QPs
//! chunk = "512KiB"       # pipelining unit
//! start = "0us"
//! repeat = 1             # back-to-back iterations
//! transport = "rc"       # rc | uet: the transport of its QPs
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::app::collective::{Algorithm, Collective, Kind};
use crate::error::{Error, Result};
use crate::formats::units_parse::{parse_bytes, parse_time};
use crate::ids::NodeId;
use crate::rnic::transport::Transport;
use crate::topology::Topology;

/// One `[[collective]]` as written.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectiveSpec {
    /// Its name.
    pub name: String,
    /// `allreduce`, `allgather`, `reduce_scatter`, `alltoall` or `broadcast`.
    pub kind: String,
    /// `ring`, `double_binary_tree`, `halving_doubling` or `direct` (default: `direct` for
    /// alltoall, `ring` otherwise).
    pub algorithm: Option<String>,
    /// The ranks' hosts.
    pub ranks: RanksSpec,
    /// Bytes per rank (`"64MiB"`, `"1GB"`, or a number of bytes).
    pub size: SizeSpec,
    /// Parallel channels (default 1).
    #[serde(default = "one_u16")]
    pub channels: u16,
    /// Pipelining unit (default `"512KiB"`).
    pub chunk: Option<SizeSpec>,
    /// When it starts (default `"0us"`).
    pub start: Option<String>,
    /// Iterations (default 1).
    #[serde(default = "one_u32")]
    pub repeat: u32,
    /// Transport of its QPs: `rc` (default) or `uet` (`rnic::uet`; docs/uet.md).
    pub transport: Option<String>,
}

/// `ranks`: a list of hosts, or a range of them.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RanksSpec {
    /// Hosts in rank order.
    List(Vec<u32>),
    /// `{ hosts = "a..b" }`: hosts a to b, both included.
    Range {
        /// `"a..b"`.
        hosts: String,
    },
}

/// A byte count: a string with a unit, or a plain number of bytes.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SizeSpec {
    /// Bytes.
    Bytes(u64),
    /// `"64MiB"`.
    Text(String),
}

fn one_u16() -> u16 {
    1
}

fn one_u32() -> u32 {
    1
}

/// The default pipelining unit: 512 KiB, NCCL's default 4 MiB buffer (`NCCL_BUFFSIZE`) over
/// its 8 slots (`NCCL_STEPS`).
pub const DEFAULT_CHUNK: u64 = 512 * 1024;

pub(super) fn bytes(file: &Path, field: &str, s: &SizeSpec) -> Result<u64> {
    match s {
        SizeSpec::Bytes(b) => Ok(*b),
        SizeSpec::Text(t) => parse_bytes(t).map_err(|e| Error::input(file, 0, field, e.0)),
    }
}

pub(super) fn by_name<T: Copy>(file: &Path, field: &str, names: &[(&str, T)], s: &str) -> Result<T> {
    names.iter().find(|(n, _)| *n == s).map(|&(_, v)| v).ok_or_else(|| {
        let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
        Error::input(file, 0, field, format!("unknown value `{s}` (known: {})", known.join(", ")))
    })
}

impl CollectiveSpec {
    /// The validated collective; errors name `collective[i].<field>`.
    pub fn build(&self, i: usize, file: &Path, topo: &Topology) -> Result<Collective> {
        let field = |f: &str| format!("collective[{i}].{f}");
        let kind = by_name(file, &field("kind"), &Kind::NAMES, &self.kind)?;
        let algorithm = match &self.algorithm {
            Some(a) => by_name(file, &field("algorithm"), &Algorithm::NAMES, a)?,
            None if kind == Kind::Alltoall => Algorithm::Direct,
            None => Algorithm::Ring,
        };
        let hosts = match &self.ranks {
            RanksSpec::List(l) => l.clone(),
            RanksSpec::Range { hosts } => range(hosts).map_err(|m| Error::input(file, 0, field("ranks.hosts"), m))?,
        };
        let ranks = hosts
            .iter()
            .map(|&h| super::check_host(file, &field("ranks"), topo, h))
            .collect::<Result<Vec<NodeId>>>()?;
        if self.name.is_empty() {
            return Err(Error::input(file, 0, field("name"), "must not be empty"));
        }
        let start = match &self.start {
            Some(s) => parse_time(s).map_err(|e| Error::input(file, 0, field("start"), e.0))?,
            None => crate::units::Time::ZERO,
        };
        let c = Collective {
            name: self.name.clone(),
            kind,
            algorithm,
            ranks,
            size: bytes(file, &field("size"), &self.size)?,
            channels: self.channels,
            chunk: self.chunk.as_ref().map_or(Ok(DEFAULT_CHUNK), |c| bytes(file, &field("chunk"), c))?,
            start,
            repeat: self.repeat,
            transport: self.transport(file, &field("transport"))?,
        };
        c.validate().map_err(|e| super::locate::in_section(e, file, &format!("collective[{i}]")))?;
        Ok(c)
    }
}

impl CollectiveSpec {
    /// `transport`: RC or UET. A collective's transfers are messages that complete in
    /// order on reliable connections, so UC and UD are refused.
    fn transport(&self, file: &Path, field: &str) -> Result<Transport> {
        let Some(t) = &self.transport else { return Ok(Transport::Rc) };
        match Transport::parse(t).map_err(|m| Error::input(file, 0, field, m))? {
            t @ (Transport::Rc | Transport::Uet) => Ok(t),
            _ => Err(Error::input(file, 0, field, format!("`{t}`: a collective runs over `rc` or `uet`"))),
        }
    }
}

/// Every `[[collective]]`, validated; two with one name are refused (their records are
/// named by it).
pub(super) fn build_all(specs: &[CollectiveSpec], file: &Path, topo: &Topology) -> Result<Vec<Collective>> {
    for (i, c) in specs.iter().enumerate() {
        if let Some(j) = specs[..i].iter().position(|o| o.name == c.name) {
            let msg = format!(
                "`{}` is already the name of collective[{j}]: each collective's records are named by it",
                c.name
            );
            return Err(Error::input(file, 0, format!("collective[{i}].name"), msg));
        }
    }
    specs.iter().enumerate().map(|(i, c)| c.build(i, file, topo)).collect()
}

/// `"a..b"`: a to b, both included.
impl RanksSpec {
    /// The hosts in rank order, each checked to be a host of `topo` and none listed twice (a
    /// workload's ranks each own one NIC); errors name `ranks` or `ranks.hosts` through `field`.
    pub(super) fn hosts(&self, file: &Path, field: &dyn Fn(&str) -> String, topo: &Topology) -> Result<Vec<NodeId>> {
        let (numbers, at) = match self {
            RanksSpec::List(l) => (l.clone(), field("ranks")),
            RanksSpec::Range { hosts } => {
                (range(hosts).map_err(|m| Error::input(file, 0, field("ranks.hosts"), m))?, field("ranks.hosts"))
            }
        };
        let hosts = numbers.iter().map(|&h| super::check_host(file, &at, topo, h)).collect::<Result<Vec<_>>>()?;
        let mut seen = hosts.clone();
        seen.sort_unstable();
        if let Some(d) = seen.windows(2).find(|p| p[0] == p[1]) {
            return Err(Error::input(file, 0, field("ranks"), format!("host {} is listed twice", d[0])));
        }
        Ok(hosts)
    }
}

pub(super) fn range(s: &str) -> std::result::Result<Vec<u32>, String> {
    let bad = || format!("`{s}` is not a range of hosts `a..b` (both ends included)");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u32, u32) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if b < a {
        return Err(format!("`{s}` ends before it starts"));
    }
    Ok((a..=b).collect())
}
