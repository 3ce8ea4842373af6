//! Reader of SimAI's workload files (the text AICB writes for aliyun/SimAI;
//! docs/collectives.md, "SimAI workloads").
//!
//! ```text
//! HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0
//! 2
//! attn  -1 20000 ALLREDUCE 1048576 30000 ALLREDUCE 1048576 25000 NONE    0      100
//! mlp   -1 40000 ALLREDUCE 2097152 60000 ALLREDUCE 2097152 50000 ALLREDUCE 4194304 100
//! ```
//!
//! The layout, as SimAI's astra-sim workload layer reads it (`Workload::initialize_workload`
//! in aliyun/SimAI, `astra-sim-alibabacloud/astra-sim/workload/Workload.cc`):
//!
//! - line 1: the parallelism policy, then `key: value` pairs. SimAI reads
//!   `model_parallel_NPU_group` (the tensor-parallel group size), `ep`, `pp`, `vpp`, `ga`,
//!   `all_gpus`, `checkpoints` and `checkpoint_initiates` (each a count followed by that many
//!   layer numbers) and `pp_comm` (bytes; written with or without the colon);
//! - line 2: the number of layers;
//! - one row per layer, twelve fields separated by whitespace: a name, a dependency (SimAI
//!   reads and prints it only), then for the forward pass, the input gradient and the weight
//!   gradient in turn the compute time, the communication type and its size in bytes, and
//!   last the weight-gradient update time. Times are SimAI's ticks, which are nanoseconds
//!   (`CLOCK_PERIOD` 1 in its `system/Common.hh`).
//!
//! A communication type is `NONE`, or `ALLREDUCE`, `ALLGATHER`, `REDUCESCATTER` or
//! `ALLTOALL`, alone or with the suffix `_EP` or `_DP_EP`. Alone, the forward and input
//! gradient types run in the tensor-parallel group and the weight-gradient type in the
//! data-parallel group; `_EP` runs in the expert-parallel group, `_DP_EP` in the data-parallel
//! group across expert groups (SimAI's `MockNccl::GroupType`, chosen in the same function).
//!
//! What this reader refuses, where SimAI would go on: a policy other than SimAI's two
//! transformer policies (the rows of the others mean other things), a header key it does not
//! know, layers to recompute (`checkpoints` or `checkpoint_initiates` above 0),
//! `ALLREDUCEALLTOALL` (which SimAI's prefix test reads as an allreduce of no group), a row
//! that is not on one line, and a group layout that does not divide the GPUs. Errors name the
//! file, the line and the field (the names in [`FIELDS`]).

mod iteration;
mod nvls;
#[cfg(test)]
mod tests;
mod topology;

pub use iteration::{iteration, Iteration, Layout, SimaiOp};
pub use nvls::{nvls_enabled, nvls_schedule, NVLS_CHUNKS, NVLS_MIN_RANKS};
pub use topology::{parse_simai_topology, read_simai_topology, SimaiTopology};

use std::path::Path;

use super::tokens::{parse_u64, read_text, show};
use crate::app::collective::Kind;
use crate::error::{Error, Result};
use crate::units::Time;

/// The fields of a layer row, in file order: the names errors use.
pub const FIELDS: [&str; 12] = [
    "name",
    "dependency",
    "fwd_compute",
    "fwd_comm",
    "fwd_size",
    "ig_compute",
    "ig_comm",
    "ig_size",
    "wg_compute",
    "wg_comm",
    "wg_size",
    "wg_update",
];

/// The parallelism policy of line 1 (SimAI's `ParallelismPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `HYBRID_TRANSFORMER`.
    Transformer,
    /// `HYBRID_TRANSFORMER_FWD_IN_BCKWD`: the same loop; SimAI also raises a forward
    /// communication of 1 to 4095 bytes to 4096.
    TransformerFwdInBckwd,
}

/// Which group of ranks a communication runs in (SimAI's `MockNccl::GroupType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// Tensor parallel: `model_parallel_NPU_group` consecutive ranks.
    Tp,
    /// Data parallel: the ranks at the same place of every tensor-parallel group.
    Dp,
    /// Expert parallel: `ep` consecutive tensor-parallel groups, same place.
    Ep,
    /// Data parallel across expert groups: tensor-parallel groups `ep` apart, same place.
    DpEp,
}

impl Group {
    /// Its name in records and errors.
    pub fn name(self) -> &'static str {
        match self {
            Group::Tp => "tp",
            Group::Dp => "dp",
            Group::Ep => "ep",
            Group::DpEp => "dp_ep",
        }
    }
}

/// One phase of a layer: compute, then a communication (none for `NONE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Compute time before the communication is issued.
    pub compute: Time,
    /// The collective and its group (`None`: `NONE`).
    pub comm: Option<(Kind, Group)>,
    /// Bytes as written (NCCL-tests' size of the collective).
    pub bytes: u64,
}

/// One layer row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimaiLayer {
    /// 1-based line in the file.
    pub line: usize,
    /// Its name (first field).
    pub name: String,
    /// The dependency field (read; SimAI does not use it either).
    pub dependency: i64,
    /// Forward pass.
    pub fwd: Phase,
    /// Input gradient.
    pub ig: Phase,
    /// Weight gradient.
    pub wg: Phase,
    /// The update time SimAI adds after each of the layer's communications completes.
    pub update: Time,
}

/// A whole workload file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimaiWorkload {
    /// The policy of line 1.
    pub policy: Policy,
    /// `model_parallel_NPU_group`: ranks of a tensor-parallel group.
    pub tp: u32,
    /// `ep`: tensor-parallel groups of an expert-parallel group (default 1).
    pub ep: u32,
    /// `pp` (default 1): read, not modelled (as in SimAI's network backends).
    pub pp: u32,
    /// `vpp` (default 1): read, not modelled.
    pub vpp: u32,
    /// `ga` (default 1): read, not modelled.
    pub ga: u32,
    /// `all_gpus`: ranks in all.
    pub all_gpus: u32,
    /// `pp_comm` (default 0): read, not modelled.
    pub pp_comm: u64,
    /// The layer rows, in file order.
    pub layers: Vec<SimaiLayer>,
}

impl SimaiWorkload {
    /// Ranks of a data-parallel group: `all_gpus / tp` (SimAI's `DP_size`, pipeline size 1).
    pub fn dp(&self) -> u32 {
        self.all_gpus / self.tp
    }

    /// One training iteration's phases in SimAI's order: every layer's forward pass, then
    /// from the last layer back each layer's input gradient and weight gradient. Each item is
    /// (layer index, layer, phase name `fwd`/`ig`/`wg`, whether the phase's collective
    /// blocks, the phase):
    /// the forward and input-gradient collectives block, the weight gradient's do not.
    pub fn iteration(&self) -> impl Iterator<Item = (usize, &SimaiLayer, &'static str, bool, &Phase)> + '_ {
        let layers = self.layers.iter().enumerate();
        let forward = layers.clone().map(|(i, l)| (i, l, "fwd", true, &l.fwd));
        let backward = layers.rev().flat_map(|(i, l)| [(i, l, "ig", true, &l.ig), (i, l, "wg", false, &l.wg)]);
        forward.chain(backward)
    }

    /// Ranks of one group of `g`.
    pub fn group_size(&self, g: Group) -> u32 {
        match g {
            Group::Tp => self.tp,
            Group::Dp => self.dp(),
            Group::Ep => self.ep,
            Group::DpEp => self.dp() / self.ep,
        }
    }

    /// Every group of `g`, each as its ranks in rank order, the groups partitioning
    /// `0..all_gpus`. The same sets as SimAI's `MockNcclGroup` constructor
    /// (`astra-sim-alibabacloud/astra-sim/system/MockNcclGroup.cc`): tensor-parallel group
    /// i holds ranks i·tp .. i·tp + tp − 1; the data-parallel group of place p holds p,
    /// p + tp, p + 2·tp, ...; an expert group holds place p of `ep` consecutive
    /// tensor-parallel groups; a `dp_ep` group place p of the tensor-parallel groups c, c +
    /// ep, c + 2·ep, ...
    pub fn groups(&self, g: Group) -> Vec<Vec<u32>> {
        let (tp, ep, tps) = (self.tp, self.ep, self.all_gpus / self.tp);
        match g {
            Group::Tp => (0..tps).map(|i| (0..tp).map(|j| i * tp + j).collect()).collect(),
            Group::Dp => (0..tp).map(|p| (0..tps).map(|j| p + j * tp).collect()).collect(),
            Group::Ep => (0..tps / ep)
                .flat_map(|b| (0..tp).map(move |p| (0..ep).map(|m| (b * ep + m) * tp + p).collect()))
                .collect(),
            Group::DpEp => (0..ep)
                .flat_map(|c| (0..tp).map(move |p| (0..tps / ep).map(|m| (c + m * ep) * tp + p).collect()))
                .collect(),
        }
    }
}

/// Reads and parses the workload at `path`; see [`parse_simai`].
pub fn read_simai(path: impl AsRef<Path>) -> Result<SimaiWorkload> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_simai(&text, path)
}

/// Parses a SimAI workload (the layout in this module's documentation). Errors name `path`,
/// the line and the field.
pub fn parse_simai(text: &str, path: &Path) -> Result<SimaiWorkload> {
    let err = |line: usize, field: &str, msg: String| Error::input(path, line, field, msg);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, head) = lines.next().ok_or_else(|| err(1, "parallelism", "the file is empty".into()))?;
    let mut w = header(head, path)?;
    let (n_line, count) =
        lines.next().ok_or_else(|| err(2, "layers", "missing: line 2 gives the layer count".into()))?;
    let count = parse_u64(count.trim()).map_err(|m| err(n_line, "layers", m))?;
    if count == 0 {
        return Err(err(n_line, "layers", "a workload needs at least one layer".into()));
    }
    for (line, text) in lines {
        let toks: Vec<&str> = text.split_ascii_whitespace().collect();
        if toks.is_empty() {
            continue;
        }
        if w.layers.len() as u64 == count {
            let msg = format!("line 2 gives {count} layer(s) and this is one more (`{}`)", show(toks[0]));
            return Err(err(line, "layers", msg));
        }
        w.layers.push(row(&toks, line, w.policy, path)?);
    }
    if (w.layers.len() as u64) < count {
        let msg = format!("line 2 gives {count} layer(s), the file has {}", w.layers.len());
        return Err(err(n_line, "layers", msg));
    }
    Ok(w)
}

/// Line 1: the policy and its `key: value` pairs.
fn header(head: &str, path: &Path) -> Result<SimaiWorkload> {
    let err = |field: &str, msg: String| Error::input(path, 1, field, msg);
    let toks: Vec<&str> = head.split_ascii_whitespace().collect();
    let policy = match toks.first().copied() {
        Some("HYBRID_TRANSFORMER") => Policy::Transformer,
        Some("HYBRID_TRANSFORMER_FWD_IN_BCKWD") => Policy::TransformerFwdInBckwd,
        Some(p) => {
            return Err(err(
                "parallelism",
                format!(
                    "`{}` is not supported: rdmalab runs SimAI's HYBRID_TRANSFORMER and \
                     HYBRID_TRANSFORMER_FWD_IN_BCKWD workloads",
                    show(p)
                ),
            ))
        }
        None => return Err(err("parallelism", "line 1 is empty: it starts with the parallelism policy".into())),
    };
    let mut w =
        SimaiWorkload { policy, tp: 0, ep: 1, pp: 1, vpp: 1, ga: 1, all_gpus: 0, pp_comm: 0, layers: Vec::new() };
    let mut i = 1;
    while i < toks.len() {
        let key = toks[i].trim_end_matches(':');
        let value = |k: usize| -> Result<u64> {
            let t = toks.get(i + k).ok_or_else(|| err(key, "has no value".into()))?;
            parse_u64(t).map_err(|m| err(key, m))
        };
        let count = |v: u64| -> Result<u32> { u32::try_from(v).map_err(|_| err(key, format!("{v} is too large"))) };
        match key {
            "model_parallel_NPU_group" => w.tp = count(value(1)?)?,
            "ep" => w.ep = count(value(1)?)?,
            "pp" => w.pp = count(value(1)?)?,
            "vpp" => w.vpp = count(value(1)?)?,
            "ga" => w.ga = count(value(1)?)?,
            "all_gpus" => w.all_gpus = count(value(1)?)?,
            "pp_comm" => w.pp_comm = value(1)?,
            "checkpoints" | "checkpoint_initiates" => {
                let n = value(1)?;
                if n > 0 {
                    let msg = format!(
                        "{n} layer(s) to recompute: activation recomputation (SimAI's forward-in-backward pass) is \
                         not modelled"
                    );
                    return Err(err(key, msg));
                }
            }
            other => {
                let msg = format!(
                    "unknown key `{}` (known: model_parallel_NPU_group, ep, pp, vpp, ga, all_gpus, checkpoints, \
                     checkpoint_initiates, pp_comm)",
                    show(other)
                );
                return Err(err("header", msg));
            }
        }
        i += 2;
    }
    for (key, v) in [("model_parallel_NPU_group", w.tp), ("all_gpus", w.all_gpus), ("ep", w.ep)] {
        if v == 0 {
            return Err(err(key, "must be given, at least 1".into()));
        }
    }
    if !w.all_gpus.is_multiple_of(w.tp) {
        let msg = format!("{} GPUs do not split into tensor-parallel groups of {}", w.all_gpus, w.tp);
        return Err(err("model_parallel_NPU_group", msg));
    }
    if !w.dp().is_multiple_of(w.ep) {
        let msg =
            format!("the data-parallel size {} (all_gpus / model_parallel_NPU_group) is not a multiple of it", w.dp());
        return Err(err("ep", msg));
    }
    Ok(w)
}

/// One layer row of twelve fields.
fn row(toks: &[&str], line: usize, policy: Policy, path: &Path) -> Result<SimaiLayer> {
    let err = |field: usize, msg: String| Error::input(path, line, FIELDS[field], msg);
    if toks.len() != FIELDS.len() {
        let (field, msg) = if toks.len() < FIELDS.len() {
            (FIELDS[toks.len()], format!("missing: a layer row has {} fields, this one {}", FIELDS.len(), toks.len()))
        } else {
            ("wg_update", format!("{} fields: a layer row has {}, one row per line", toks.len(), FIELDS.len()))
        };
        return Err(Error::input(path, line, field, msg));
    }
    let num = |f: usize| parse_u64(toks[f]).map_err(|m| err(f, m));
    let time = |f: usize| -> Result<Time> {
        let ns = num(f)?;
        ns.checked_mul(Time::PS_PER_NS).map(Time).ok_or_else(|| err(f, format!("{ns} ns is too long")))
    };
    let dependency = toks[1].parse::<i64>().map_err(|_| err(1, format!("`{}` is not an integer", show(toks[1]))))?;
    let phase = |at: usize, plain: Group| -> Result<Phase> {
        let comm = comm_type(toks[at + 1], plain).map_err(|m| err(at + 1, m))?;
        let mut bytes = num(at + 2)?;
        // SimAI's fwd-in-bckwd loop sends a forward message of 1..4095 bytes as 4096.
        if at == 2 && policy == Policy::TransformerFwdInBckwd && (1..4096).contains(&bytes) {
            bytes = 4096;
        }
        Ok(Phase { compute: time(at)?, comm, bytes })
    };
    Ok(SimaiLayer {
        line,
        name: toks[0].to_string(),
        dependency,
        fwd: phase(2, Group::Tp)?,
        ig: phase(5, Group::Tp)?,
        wg: phase(8, Group::Dp)?,
        update: time(11)?,
    })
}

/// A communication type: `NONE`, or a collective with an optional group suffix; alone it
/// runs in `plain`.
fn comm_type(tok: &str, plain: Group) -> std::result::Result<Option<(Kind, Group)>, String> {
    if tok == "NONE" {
        return Ok(None);
    }
    let (base, group) = if let Some(b) = tok.strip_suffix("_DP_EP") {
        (b, Group::DpEp)
    } else if let Some(b) = tok.strip_suffix("_EP") {
        (b, Group::Ep)
    } else {
        (tok, plain)
    };
    let kind = match base {
        "ALLREDUCE" => Kind::Allreduce,
        "ALLGATHER" => Kind::Allgather,
        "REDUCESCATTER" => Kind::ReduceScatter,
        "ALLTOALL" => Kind::Alltoall,
        "ALLREDUCEALLTOALL" => {
            return Err(format!("`{}` is not supported (SimAI itself runs it as an allreduce of no group)", show(tok)))
        }
        _ => {
            return Err(format!(
                "unknown type `{}` (known: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, each alone or with \
                 _EP or _DP_EP)",
                show(tok)
            ))
        }
    };
    Ok(Some((kind, group)))
}
