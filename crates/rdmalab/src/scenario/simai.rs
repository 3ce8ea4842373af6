//! `[[traffic]] kind = "simai"`: one training iteration of a SimAI workload file
//! (`formats::simai`, docs/collectives.md, "SimAI workloads").
//!
//! ```toml
//! [[traffic]]
//! kind = "simai"
//! path = "simai_tiny.txt"      # SimAI / AICB workload text, relative to this file
//! ranks = { hosts = "0..7" }   # SimAI rank i on the i-th listed host (default: hosts 0 .. all_gpus-1)
//! algorithm = "ring"           # allreduce: ring | double_binary_tree | halving_doubling
//! channels = 1                 # of every collective
//! chunk = "512KiB"             # pipelining unit of every collective
//! start = "0us"                # when the first compute starts
//! ```

use std::path::PathBuf;

use serde::Deserialize;

use super::collective::{by_name, bytes, RanksSpec, SizeSpec, DEFAULT_CHUNK};
use super::{field_time, locate, TrafficCtx};
use crate::app::collective::Algorithm;
use crate::app::deps::TransferGraph;
use crate::app::trace_nodes::JobRecords;
use crate::error::{Error, Result};
use crate::formats::simai::{iteration, read_simai, Layout, SimaiWorkload};
use crate::ids::NodeId;
use crate::units::Time;

/// One `simai` traffic entry as written.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimaiSpec {
    /// The workload file (relative to the scenario file).
    pub path: PathBuf,
    /// The hosts of SimAI's ranks 0, 1, ... (default: the topology's first `all_gpus` hosts).
    pub ranks: Option<RanksSpec>,
    /// The allreduce algorithm (default `ring`).
    pub algorithm: Option<String>,
    /// Channels of every collective (default 1).
    pub channels: Option<u16>,
    /// Pipelining unit (default `"512KiB"`).
    pub chunk: Option<SizeSpec>,
    /// When the first compute starts (default `"0us"`).
    pub start: Option<String>,
}

/// The allreduce algorithms a workload may choose.
const ALLREDUCE: [(&str, Algorithm); 3] = [
    ("ring", Algorithm::Ring),
    ("double_binary_tree", Algorithm::DoubleBinaryTree),
    ("halving_doubling", Algorithm::HalvingDoubling),
];

impl SimaiSpec {
    /// The iteration's job; errors name `traffic[i].<field>`, or the workload's file, line
    /// and field.
    pub(super) fn build(&self, ctx: &TrafficCtx<'_>) -> Result<(TransferGraph, JobRecords)> {
        let (w, layout) = self.layout(ctx)?;
        let file = ctx.file;
        let it = iteration(&w, &ctx.base.join(&self.path), &layout)
            .map_err(|e| locate::in_section(e, file, &format!("traffic[{}]", ctx.i)))?;
        let parts = it.parts(&w, &layout);
        Ok((it.graph, JobRecords { parts, nodes: None }))
    }

    /// The workload and where and how it runs; errors name `traffic[i].<field>` or the
    /// workload's file.
    pub(super) fn layout(&self, ctx: &TrafficCtx<'_>) -> Result<(SimaiWorkload, Layout)> {
        let (file, f) = (ctx.file, |name: &str| ctx.field(name));
        let w = read_simai(ctx.base.join(&self.path)).map_err(|e| locate::unreadable(e, file, &f("path")))?;
        let hosts: Vec<NodeId> = match &self.ranks {
            None => ctx.topo.hosts().take(w.all_gpus as usize).collect(),
            Some(r) => r.hosts(file, &f, ctx.topo)?,
        };
        let layout = Layout {
            hosts,
            algorithm: match &self.algorithm {
                Some(a) => by_name(file, &f("algorithm"), &ALLREDUCE, a)?,
                None => Algorithm::Ring,
            },
            channels: self.channels.unwrap_or(1),
            chunk: self.chunk.as_ref().map_or(Ok(DEFAULT_CHUNK), |c| bytes(file, &f("chunk"), c))?,
            start: self.start.as_ref().map_or(Ok(Time::ZERO), |s| field_time(file, &f("start"), s))?,
            nvls: Vec::new(),
            rings: None,
        };
        for (name, v) in [("channels", u64::from(layout.channels)), ("chunk", layout.chunk)] {
            if v == 0 {
                return Err(Error::input(file, 0, f(name), "must be at least 1"));
            }
        }
        Ok((w, layout))
    }
}
