//! A collective over a network of several dimensions, composed as ASTRA-sim composes it
//! (`Sys::generate_collective`): one phase per dimension, each run by the groups of ranks that
//! differ only in that dimension's coordinate, with the bytes the phase sees. Rank
//! r = i0 + d0 × (i1 + d1 × (i2 + ...)): the ranks of dimension 0 are consecutive.
//!
//! - all-reduce under `collective-optimization` `localBWAware`: reduce-scatter along the
//!   dimensions in order up to the last, all-reduce along the last, then all-gather back in
//!   reverse order; under `baseline` (or without the key): an all-reduce of the whole buffer
//!   along every dimension in order;
//! - reduce-scatter: one per dimension in order, each on what the one before left a rank;
//! - all-gather: one per dimension from the last to the first (ASTRA-sim reverses the order);
//! - a dimension of one rank has no phase.
//!
//! Each phase of a rank starts once that rank has received its part of the phase before.
//! Sizes follow NCCL-tests' convention of `Collective::size` (a reduce-scatter's input, an
//! all-gather's output); a reduce-scatter leaves a rank its buffer over the group's size, cut
//! down to a whole byte as ASTRA-sim's `final_data_size` is.

use crate::app::collective::{Algorithm, Collective, Kind};
use crate::app::deps::{Dep, Transfer, Trigger};
use crate::formats::chakra::system::{astra_algorithm, Unavailable};
use crate::ids::NodeId;
use crate::units::Time;
use std::path::PathBuf;

/// How one dimension's phases choose their algorithm.
#[derive(Clone, Debug, PartialEq)]
pub enum DimAlgorithm {
    /// As the system file names it; a phase of another kind runs it as that kind, as
    /// ASTRA-sim runs a dimension's implementation for each phase.
    Astra {
        /// The algorithm's name (`ring`, `halvingDoubling`, ...).
        name: String,
        /// The `*-implementation` list it is an entry of, named when it cannot run a phase.
        key: String,
    },
    /// As the scenario's `algorithm` names it: the same in every dimension.
    Given(Algorithm),
}

/// The network's dimensions and the algorithm of each, per kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Dims {
    /// Ranks per dimension, dimension 0 first.
    pub sizes: Vec<u32>,
    /// Per kind: one algorithm per dimension (kinds absent run their default everywhere).
    pub algorithms: Vec<(Kind, Vec<DimAlgorithm>)>,
    /// `collective-optimization` is `localBWAware`.
    pub local_bw_aware: bool,
    /// The file the `Astra` algorithms were read from, named when one cannot run a phase.
    pub system: PathBuf,
}

/// One phase: `kind` of `bytes` (NCCL-tests' size) along dimension `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The dimension.
    pub dim: usize,
    /// What its groups run.
    pub kind: Kind,
    /// Their size.
    pub bytes: u64,
}

impl Dims {
    /// Whether a collective of `kind` has more than one phase.
    pub fn composes(&self, kind: Kind) -> bool {
        kind != Kind::Broadcast && self.sizes.iter().filter(|&&d| d > 1).count() > 1
    }

    /// The phases of a `kind` collective of `bytes` over all the ranks.
    pub fn phases(&self, kind: Kind, bytes: u64) -> Vec<Phase> {
        let on: Vec<usize> = (0..self.sizes.len()).filter(|&d| self.sizes[d] > 1).collect();
        let d = |dim: usize| u64::from(self.sizes[dim]);
        let mut out = Vec::new();
        let mut size = bytes;
        match kind {
            Kind::Allreduce if self.local_bw_aware => {
                let (last, rest) = on.split_last().expect("composes");
                for &dim in rest {
                    out.push(Phase { dim, kind: Kind::ReduceScatter, bytes: size });
                    size /= d(dim);
                }
                out.push(Phase { dim: *last, kind: Kind::Allreduce, bytes: size });
                for &dim in rest.iter().rev() {
                    size *= d(dim);
                    out.push(Phase { dim, kind: Kind::Allgather, bytes: size });
                }
            }
            Kind::ReduceScatter => {
                for &dim in &on {
                    out.push(Phase { dim, kind, bytes: size });
                    size /= d(dim);
                }
            }
            Kind::Allgather => {
                // A rank's own part, gathered along the last dimension first.
                size /= on.iter().map(|&x| d(x)).product::<u64>();
                for &dim in on.iter().rev() {
                    size *= d(dim);
                    out.push(Phase { dim, kind, bytes: size });
                }
            }
            _ => out.extend(on.iter().map(|&dim| Phase { dim, kind, bytes })),
        }
        out
    }

    /// The algorithm of `phase` within a `kind` collective, or why it has none.
    pub fn algorithm(&self, kind: Kind, phase: &Phase) -> std::result::Result<Algorithm, String> {
        let Some((_, list)) = self.algorithms.iter().find(|(k, _)| *k == kind) else {
            return Ok(phase.kind.algorithms()[0]);
        };
        let a = match &list[phase.dim] {
            DimAlgorithm::Astra { name, key } => match astra_algorithm(phase.kind, name) {
                Ok(a) => return Ok(a),
                Err(Unavailable::Here(why) | Unavailable::Unknown(why)) => {
                    let file = self.system.display();
                    return Err(format!("{why}; it is entry {} of `{key}` in {file}", phase.dim));
                }
            },
            DimAlgorithm::Given(a) => *a,
        };
        if phase.kind.algorithms().contains(&a) {
            Ok(a)
        } else {
            Err(format!("{} carries out no {} here", a.name(), phase.kind.name()))
        }
    }

    /// The ranks (positions in rank order) of each group of dimension `dim`.
    pub fn groups(&self, dim: usize) -> Vec<Vec<usize>> {
        let n: usize = self.sizes.iter().map(|&d| d as usize).product();
        let stride: usize = self.sizes[..dim].iter().map(|&d| d as usize).product();
        let size = self.sizes[dim] as usize;
        (0..n)
            .filter(|r| (r / stride).is_multiple_of(size))
            .map(|r| (0..size).map(|i| r + i * stride).collect())
            .collect()
    }
}

/// The transfers of one piece of a `kind` collective of `bytes` over `hosts` (all the ranks,
/// in rank order), phase after phase; dependencies index the returned list.
pub fn piece(
    dims: &Dims,
    kind: Kind,
    bytes: u64,
    hosts: &[NodeId],
    name: &str,
    channels: u16,
    chunk: u64,
) -> std::result::Result<Vec<Transfer>, String> {
    let n: u64 = dims.sizes.iter().map(|&d| u64::from(d)).product();
    if hosts.len() as u64 != n {
        return Err(format!(
            "a collective over {} of the {n} ranks of dims = {:?} is not modelled: a collective over several \
             dimensions runs over every rank",
            hosts.len(),
            dims.sizes
        ));
    }
    if kind == Kind::Alltoall {
        return Err("an all-to-all over several network dimensions is not modelled: give `dims` only for \
                    trace sets without one"
            .into());
    }
    let mut out: Vec<Transfer> = Vec::new();
    let mut prev = 0..0;
    for phase in dims.phases(kind, bytes) {
        let algorithm = dims.algorithm(kind, &phase).map_err(|why| {
            format!("{} phase along dimension {} of the {}: {why}", phase.kind.name(), phase.dim, kind.name())
        })?;
        let from = out.len();
        for group in dims.groups(phase.dim) {
            let c = Collective {
                name: name.to_string(),
                kind: phase.kind,
                algorithm,
                ranks: group.iter().map(|&r| hosts[r]).collect(),
                size: phase.bytes,
                channels,
                chunk,
                start: Time::ZERO,
                repeat: 1,
                transport: Default::default(), // the schedule alone is used
            };
            let s = c.schedule().map_err(|e| {
                format!("{} of {} B along dimension {}: {e}", phase.kind.name(), phase.bytes, phase.dim)
            })?;
            let base = out.len() as u32;
            for t in s.graph.transfers() {
                let mut t = t.clone();
                if t.deps.is_empty() {
                    // A rank's phase starts once it has received its part of the one before.
                    let got = prev.clone().filter(|&k| out[k].dst == t.src);
                    t.deps = got.map(|k| Dep { on: k as u32, when: Trigger::Received }).collect();
                } else {
                    t.deps.iter_mut().for_each(|d| d.on += base);
                }
                out.push(t);
            }
        }
        prev = from..out.len();
    }
    Ok(out)
}
