//! The attack traffic kinds of a scenario (`parallel_qps`, `staggered_qps`,
//! `shuffled_overlay`) and Poisson's `split`: their fields, checks and flows. The schedules
//! themselves are `workload::attacks`.

use serde::Deserialize;

use super::{check_host, field_time, zero_time, TrafficCtx};
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::Time;
use crate::workload::attacks::{self, HostApp, StaggerPolicy, Staggered};
use crate::workload::FlowSpec;

/// `kind = "parallel_qps"`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParallelQpsSpec {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// QPs opened together.
    pub qps: i64,
    /// Bytes on each QP.
    pub size: u64,
    /// Start time.
    #[serde(default = "zero_time")]
    pub start: String,
    /// Tenant of its QPs (default `default`).
    pub tenant: Option<String>,
    /// Priority class of its QPs (1..7, default 3).
    pub pg: Option<u8>,
}

/// `kind = "staggered_qps"`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaggeredQpsSpec {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Slots.
    pub qps: i64,
    /// Total bytes.
    pub size: u64,
    /// Bytes per chunk (default: the path's BDP).
    pub chunk: Option<u64>,
    /// Time between chunks (default: the path's base RTT).
    pub interval: Option<String>,
    /// `reuse` (default) or `recreate`.
    pub policy: Option<StaggerPolicy>,
    /// Start time.
    #[serde(default = "zero_time")]
    pub start: String,
    /// Tenant of its QPs (default `default`).
    pub tenant: Option<String>,
    /// Priority class of its QPs (1..7, default 3).
    pub pg: Option<u8>,
}

/// `kind = "shuffled_overlay"`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverlaySpec {
    /// Ring members, in ring order.
    pub hosts: Vec<u32>,
    /// Bytes each member sends per step and ring.
    pub chunk: u64,
    /// Time between steps.
    pub interval: String,
    /// No step starts at or after this time.
    pub until: String,
    /// Rings at once (distinct shifts per step, default 1).
    pub parallel: Option<i64>,
    /// Time of step 0.
    #[serde(default = "zero_time")]
    pub start: String,
    /// Tenant of its QPs (default `default`).
    pub tenant: Option<String>,
    /// Priority class of its QPs (1..7, default 3).
    pub pg: Option<u8>,
}

/// Poisson's `split = {...}`.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitSpec {
    /// Flows of at least this many bytes are split (default 1 MB, the CC-attack paper's "> 1MB").
    pub min_size: Option<u64>,
    /// Bytes per piece (default 150 KB, about the BDP of the CC-attack paper's fat tree).
    pub piece: Option<u64>,
    /// Time between pieces (default `"0ns"`: all at once, the parallel attack).
    pub gap: Option<String>,
    /// Tenant of the pieces (default: the source's).
    pub tenant: Option<String>,
}

fn positive_count(ctx: &TrafficCtx<'_>, name: &str, v: i64) -> Result<u32> {
    if v <= 0 || v > u32::MAX as i64 {
        return Err(Error::input(ctx.file, 0, ctx.field(name), format!("must be a positive count, got {v}")));
    }
    Ok(v as u32)
}

fn positive_time(ctx: &TrafficCtx<'_>, name: &str, s: &str) -> Result<Time> {
    match field_time(ctx.file, &ctx.field(name), s)? {
        Time::ZERO => Err(Error::input(ctx.file, 0, ctx.field(name), "must be positive")),
        t => Ok(t),
    }
}

/// A (src, dst) pair of tenant `t`'s hosts.
fn pair(ctx: &TrafficCtx<'_>, t: u16, src: u32, dst: u32) -> Result<(NodeId, NodeId)> {
    let mut out = [NodeId(0); 2];
    for (k, (name, h)) in [("src", src), ("dst", dst)].into_iter().enumerate() {
        let n = check_host(ctx.file, &ctx.field(name), ctx.topo, h)?;
        ctx.tenants.check_member(ctx.file, &ctx.field(name), t, n)?;
        out[k] = n;
    }
    if out[0] == out[1] {
        return Err(Error::input(ctx.file, 0, ctx.field("dst"), format!("traffic from host {src} to itself")));
    }
    Ok((out[0], out[1]))
}

fn nonzero_size(ctx: &TrafficCtx<'_>, name: &str, v: u64) -> Result<u64> {
    if v == 0 {
        return Err(Error::input(ctx.file, 0, ctx.field(name), "must be at least 1 byte"));
    }
    Ok(v)
}

pub(super) fn parallel(ctx: &TrafficCtx<'_>, s: &ParallelQpsSpec) -> Result<Vec<FlowSpec>> {
    let t = ctx.tenant(&s.tenant)?;
    let (src, dst) = pair(ctx, t, s.src, s.dst)?;
    let qps = positive_count(ctx, "qps", s.qps)?;
    let size = nonzero_size(ctx, "size", s.size)?;
    let start = field_time(ctx.file, &ctx.field("start"), &s.start)?;
    Ok(attacks::parallel_qps(src, dst, qps, size, start, t))
}

pub(super) fn staggered(ctx: &TrafficCtx<'_>, s: &StaggeredQpsSpec, apps: &mut Vec<HostApp>) -> Result<Vec<FlowSpec>> {
    let t = ctx.tenant(&s.tenant)?;
    let (src, dst) = pair(ctx, t, s.src, s.dst)?;
    let qps = positive_count(ctx, "qps", s.qps)?;
    let size = nonzero_size(ctx, "size", s.size)?;
    let chunk = s.chunk.map(|c| nonzero_size(ctx, "chunk", c)).transpose()?;
    if let Some(c) = chunk {
        if Staggered::chunks(size, c) > u32::MAX as u64 {
            return Err(Error::input(ctx.file, 0, ctx.field("chunk"), "more than 2^32 chunks"));
        }
    }
    let interval = s.interval.as_deref().map(|i| positive_time(ctx, "interval", i)).transpose()?;
    let start = field_time(ctx.file, &ctx.field("start"), &s.start)?;
    let spec = Staggered {
        src,
        dst,
        qps,
        size,
        chunk,
        interval,
        policy: s.policy.unwrap_or(StaggerPolicy::Reuse),
        start,
        tenant: t,
        paced: None,
    };
    let app = crate::ids::AppId::new(apps.len());
    apps.push(HostApp::Staggered(spec));
    Ok(vec![FlowSpec { tenant: t, app, ..FlowSpec::new(src, dst, size, start) }])
}

pub(super) fn overlay(ctx: &TrafficCtx<'_>, s: &OverlaySpec, apps: &mut Vec<HostApp>) -> Result<Vec<FlowSpec>> {
    let t = ctx.tenant(&s.tenant)?;
    let field = ctx.field("hosts");
    if s.hosts.len() < 3 {
        let msg = format!("a ring needs at least 3 members, got {}", s.hosts.len());
        return Err(Error::input(ctx.file, 0, field, msg));
    }
    let mut members = Vec::with_capacity(s.hosts.len());
    for &h in &s.hosts {
        let n = check_host(ctx.file, &field, ctx.topo, h)?;
        ctx.tenants.check_member(ctx.file, &field, t, n)?;
        if members.contains(&n) {
            return Err(Error::input(ctx.file, 0, field, format!("host {h} is listed twice")));
        }
        members.push(n);
    }
    let chunk = nonzero_size(ctx, "chunk", s.chunk)?;
    let interval = positive_time(ctx, "interval", &s.interval)?;
    let start = field_time(ctx.file, &ctx.field("start"), &s.start)?;
    let until = field_time(ctx.file, &ctx.field("until"), &s.until)?;
    if until <= start {
        return Err(Error::input(ctx.file, 0, ctx.field("until"), "must be after `start`"));
    }
    let parallel = positive_count(ctx, "parallel", s.parallel.unwrap_or(1))?;
    let steps = attacks::overlay_steps(start, interval, until);
    let shifts = attacks::overlay_shifts(members.len() as u32, steps, parallel, ctx.seed())
        .map_err(|e| super::locate::in_section(e, ctx.file, &format!("traffic[{}]", ctx.i)))?;
    let (flows, member_apps) =
        attacks::overlay_flows(&members, chunk, (start, interval, until), &shifts, t, apps.len() as u32);
    apps.extend(member_apps);
    Ok(flows)
}

pub(super) fn split(ctx: &TrafficCtx<'_>, s: &SplitSpec, flows: Vec<FlowSpec>, source: u16) -> Result<Vec<FlowSpec>> {
    let t = match &s.tenant {
        None => source,
        Some(name) => ctx.tenants.index(ctx.file, &ctx.field("split.tenant"), Some(name))?,
    };
    let min_size = s.min_size.unwrap_or(1_000_000);
    let piece = s.piece.unwrap_or(150_000);
    if piece == 0 || piece > min_size {
        let msg = format!("must be between 1 and `min_size` ({min_size}), got {piece}");
        return Err(Error::input(ctx.file, 0, ctx.field("split.piece"), msg));
    }
    let gap = field_time(ctx.file, &ctx.field("split.gap"), s.gap.as_deref().unwrap_or("0ns"))?;
    for f in flows.iter().filter(|f| f.size >= min_size) {
        ctx.tenants.check_member(ctx.file, &ctx.field("split.tenant"), t, f.src)?;
        ctx.tenants.check_member(ctx.file, &ctx.field("split.tenant"), t, f.dst)?;
    }
    Ok(attacks::split_flows(flows, min_size, piece, gap, t))
}
