//! `[host]`, `[[app]]` and `[drum]`: the DRUM paper's host model (docs/drum-fabric.md).
//!
//! ```toml
//! [host]
//! mechanism = "drum"      # raw | share | drum
//! wqe_cost = "680ns"
//! poll_cost = "100ns"
//! cores = 24
//! share_ratio = 5
//! lock_cost = "200ns"
//! lock_transfer = "40ns"  # SHARE: per poster already queued on the lock
//! max_send_wr = 16351     # send-queue depth of each QP (ConnectX-3's max_qp_wr)
//! [[app]]
//! host = 0
//! dst = 6
//! count = 10
//! size = [32, 1048576]    # bytes: a number, or [lo, hi] drawn per batch
//! size_dist = "log_uniform" # or "uniform": how a size range is drawn
//! transport = "rc"        # rc | uc | ud | uet (ud: size at most one MTU)
//! wr_num = [20, 100]      # a number, or [lo, hi] drawn uniform per batch
//! think = "0ns"
//! [drum]                  # accepted and ignored under raw and share
//! period = "100us"
//! solve = "exact"         # exact (default) | admm: `iterations` ADMM steps per period
//! iterations = 5
//! shared_window = 65536   # bytes a shared QP may hold unacknowledged before a release
//! a = "cqe_per_wqe"       # or "batch_size": what `a` is measured as
//! select = "smallest_a"   # or "least_served": who holds the dedicated QPs
//! ```

use std::path::Path;

use serde::Deserialize;

use super::{check_host, field_time};
use crate::app::closed_loop::ClosedLoopSpec;
use crate::app::host_model::{AReading, Control, DrumConfig, HostConfig, HostModelSpec, Mechanism, Select, Solve};
use crate::error::{Error, Result};
use crate::rnic::transport::Transport;
use crate::topology::Topology;
use crate::units::Time;

/// `[host]`.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// `raw` (default), `share` or `drum`.
    pub mechanism: Option<String>,
    /// RNIC time per WQE (default `"680ns"`).
    pub wqe_cost: Option<String>,
    /// CPU time per CQ poll (default `"100ns"`).
    pub poll_cost: Option<String>,
    /// Cores the application threads share (default 24).
    pub cores: Option<u32>,
    /// SHARE: connections per shared QP (default 5).
    pub share_ratio: Option<u32>,
    /// SHARE: lock hold time per WQE (default `"200ns"`).
    pub lock_cost: Option<String>,
    /// SHARE: cache-line transfer per poster already queued on the lock (default 40 ns).
    pub lock_transfer: Option<String>,
    /// Send-queue depth of each QP (default 16351, ConnectX-3's `max_qp_wr`).
    pub max_send_wr: Option<u32>,
}

/// A number, or an inclusive range `[lo, hi]`.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum NumOrRange {
    /// Always this.
    One(u64),
    /// Drawn per batch from `[lo, hi]`.
    Range([u64; 2]),
}

/// One `[[app]]` entry.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Host it runs on.
    pub host: u32,
    /// Host its connection goes to.
    pub dst: u32,
    /// Identical instances, each its own connection (default 1).
    pub count: Option<u32>,
    /// Label in the results (default `app<i>`; instances get `name#k` when count > 1).
    pub name: Option<String>,
    /// Bytes per WQE.
    pub size: NumOrRange,
    /// `log_uniform` (default) or `uniform`: how a `size` range is drawn.
    pub size_dist: Option<String>,
    /// `rc` (default), `uc`, `ud` or `uet`: the transport of its QP (UD: `size` at most one MTU).
    pub transport: Option<String>,
    /// WQEs per batch.
    pub wr_num: NumOrRange,
    /// Pause after each batch's CQE (default `"0ns"`).
    pub think: Option<String>,
    /// First post (default `"0ns"`).
    pub start: Option<String>,
    /// Stop after this many bytes (default: never; then the scenario needs `stop_time`).
    pub total_bytes: Option<u64>,
}

/// `[drum]`.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrumSpec {
    /// Control period (default `"100us"`).
    pub period: Option<String>,
    /// ADMM steps per period (default 5).
    pub iterations: Option<u32>,
    /// Local control: `exact` (default) or `admm` (`iterations` steps per period).
    pub solve: Option<String>,
    /// α (default 0.5).
    pub alpha: Option<f64>,
    /// β (default 1).
    pub beta: Option<f64>,
    /// Dedicated QPs (default 20).
    pub k: Option<u32>,
    /// Release budget Q as a fraction of 1/wqe_cost (default 0.9).
    pub q_fraction: Option<f64>,
    /// `local` (default): each host solves alone; `out_of_band`: a coordinator shares the
    /// solve, its messages after `control_delay`; `in_band`: the same rounds as control packets
    /// on the fabric (docs/drum-fabric.md).
    pub control: Option<String>,
    /// Control message delay (default `"1us"`; must be > 0).
    pub control_delay: Option<String>,
    /// Bytes a shared QP may hold unacknowledged before the scheduler releases onto it
    /// (default 65536).
    pub shared_window: Option<u64>,
    /// `cqe_per_wqe` (default, the paper's words) or `batch_size`: what `a` is measured as.
    pub a: Option<String>,
    /// `smallest_a` (default, the top-k rule) or `least_served`: who holds the dedicated QPs.
    pub select: Option<String>,
}

/// Builds the host model; `None` without `[[app]]`.
pub(super) fn build(
    host: Option<&HostSpec>,
    apps: &[AppSpec],
    drum: Option<&DrumSpec>,
    file: &Path,
    topo: &Topology,
    stop: Option<&str>,
    mtu: u32,
) -> Result<Option<HostModelSpec>> {
    let hc = host_config(host.cloned().unwrap_or_default(), file)?;
    let dc = drum_config(drum.cloned().unwrap_or_default(), file)?;
    if apps.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for (i, a) in apps.iter().enumerate() {
        let f = |name: &str| format!("app[{i}].{name}");
        let bad = |name: &str, msg: String| Err(Error::input(file, 0, f(name), msg));
        let h = check_host(file, &f("host"), topo, a.host)?;
        let d = check_host(file, &f("dst"), topo, a.dst)?;
        if h == d {
            return bad("dst", format!("connection from host {h} to itself"));
        }
        let count = a.count.unwrap_or(1);
        if count == 0 {
            return bad("count", "must be at least 1".into());
        }
        let size = range(a.size, file, &f("size"))?;
        if size.1 > crate::workload::MAX_FLOW_BYTES {
            return bad("size", crate::workload::too_large(size.1));
        }
        if let Some(b) = a.total_bytes.filter(|&b| b > crate::workload::MAX_FLOW_BYTES) {
            return bad("total_bytes", crate::workload::too_large(b));
        }
        let size_uniform = match a.size_dist.as_deref().unwrap_or("log_uniform") {
            "log_uniform" => false,
            "uniform" => true,
            other => return bad("size_dist", format!("unknown size_dist `{other}` (known: log_uniform, uniform)")),
        };
        let transport = match Transport::parse(a.transport.as_deref().unwrap_or("rc")) {
            Ok(t) => t,
            Err(m) => return bad("transport", m),
        };
        if transport == Transport::Ud && size.1 > mtu as u64 {
            return bad("size", format!("a UD datagram carries at most one MTU ({mtu} B), not {} B", size.1));
        }
        let wr = range(a.wr_num, file, &f("wr_num"))?;
        if wr.1 > hc.max_send_wr as u64 {
            let msg =
                format!("a batch of {} WQEs does not fit a send queue of host.max_send_wr = {}", wr.1, hc.max_send_wr);
            return bad("wr_num", msg);
        }
        if a.total_bytes == Some(0) {
            return bad("total_bytes", "must be at least 1 byte".into());
        }
        if a.total_bytes.is_none() && stop.is_none() {
            return bad(
                "total_bytes",
                "the application never ends: give total_bytes or the scenario's stop_time".into(),
            );
        }
        let think = field_time(file, &f("think"), a.think.as_deref().unwrap_or("0ns"))?;
        let start = field_time(file, &f("start"), a.start.as_deref().unwrap_or("0ns"))?;
        let base = a.name.clone().unwrap_or_else(|| format!("app{i}"));
        for k in 0..count {
            out.push(ClosedLoopSpec {
                name: if count == 1 { base.clone() } else { format!("{base}#{k}") },
                host: h,
                dst: d,
                size,
                size_uniform,
                transport,
                wr_num: (wr.0 as u32, wr.1 as u32),
                think,
                start,
                total_bytes: a.total_bytes,
            });
        }
    }
    if hc.mechanism == Mechanism::Drum && dc.control != Control::Local {
        // The network model has one row of m applications per host.
        let mut per: std::collections::BTreeMap<u32, usize> = Default::default();
        out.iter().for_each(|a| *per.entry(a.host.0).or_default() += 1);
        let (lo, hi) = (per.values().min(), per.values().max());
        if lo != hi {
            let msg =
                format!("{:?} control needs the same number of applications on every host, got {per:?}", dc.control);
            return Err(Error::input(file, 0, "drum.control", msg));
        }
    }
    Ok(Some(HostModelSpec { host: hc, drum: dc, apps: out }))
}

/// A `[lo, hi]` of positive integers (a single number n is `[n, n]`).
fn range(v: NumOrRange, file: &Path, field: &str) -> Result<(u64, u64)> {
    let (lo, hi) = match v {
        NumOrRange::One(n) => (n, n),
        NumOrRange::Range([lo, hi]) => (lo, hi),
    };
    if lo == 0 {
        return Err(Error::input(file, 0, field, "must be at least 1"));
    }
    if lo > hi {
        return Err(Error::input(file, 0, field, format!("[{lo}, {hi}]: the low end exceeds the high end")));
    }
    Ok((lo, hi))
}

fn host_config(h: HostSpec, file: &Path) -> Result<HostConfig> {
    let d = HostConfig::default();
    let f = |name: &str| format!("host.{name}");
    let t = |name: &str, v: &Option<String>, def: Time| match v {
        Some(s) => field_time(file, &f(name), s),
        None => Ok(def),
    };
    let mechanism = match &h.mechanism {
        Some(m) => Mechanism::parse(m).map_err(|e| Error::input(file, 0, f("mechanism"), e))?,
        None => d.mechanism,
    };
    let c = HostConfig {
        mechanism,
        wqe_cost: t("wqe_cost", &h.wqe_cost, d.wqe_cost)?,
        poll_cost: t("poll_cost", &h.poll_cost, d.poll_cost)?,
        cores: h.cores.unwrap_or(d.cores),
        share_ratio: h.share_ratio.unwrap_or(d.share_ratio),
        lock_cost: t("lock_cost", &h.lock_cost, d.lock_cost)?,
        lock_transfer: t("lock_transfer", &h.lock_transfer, d.lock_transfer)?,
        max_send_wr: h.max_send_wr.unwrap_or(d.max_send_wr),
    };
    if c.max_send_wr == 0 {
        return Err(Error::input(file, 0, f("max_send_wr"), "must be at least 1 WQE"));
    }
    if c.poll_cost == Time::ZERO {
        return Err(Error::input(file, 0, f("poll_cost"), "must be positive (one poll takes CPU time)"));
    }
    if c.cores == 0 {
        return Err(Error::input(file, 0, f("cores"), "must be at least 1"));
    }
    if c.share_ratio == 0 {
        return Err(Error::input(file, 0, f("share_ratio"), "must be at least 1 connection per QP"));
    }
    if c.mechanism == Mechanism::Drum && c.wqe_cost == Time::ZERO {
        return Err(Error::input(file, 0, f("wqe_cost"), "must be positive under drum (Q = q_fraction / wqe_cost)"));
    }
    Ok(c)
}

fn drum_config(s: DrumSpec, file: &Path) -> Result<DrumConfig> {
    let d = DrumConfig::default();
    let f = |name: &str| format!("drum.{name}");
    let bad = |name: &str, msg: String| Err(Error::input(file, 0, f(name), msg));
    let period = match &s.period {
        Some(p) => field_time(file, &f("period"), p)?,
        None => d.period,
    };
    if period == Time::ZERO {
        return bad("period", "must be positive".into());
    }
    let control_delay = match &s.control_delay {
        Some(p) => field_time(file, &f("control_delay"), p)?,
        None => d.control_delay,
    };
    if control_delay == Time::ZERO {
        return bad("control_delay", "must be positive: control messages cross hosts as delayed events".into());
    }
    let control = match s.control.as_deref().unwrap_or("local") {
        "local" => Control::Local,
        "out_of_band" => Control::OutOfBand,
        "in_band" => Control::InBand,
        other => return bad("control", format!("unknown control `{other}` (known: local, out_of_band, in_band)")),
    };
    let solve = match &s.solve {
        Some(v) => match Solve::parse(v) {
            Ok(v) => v,
            Err(e) => return bad("solve", e),
        },
        None => d.solve,
    };
    let a = match &s.a {
        Some(v) => match AReading::parse(v) {
            Ok(v) => v,
            Err(e) => return bad("a", e),
        },
        None => d.a,
    };
    let select = match &s.select {
        Some(v) => match Select::parse(v) {
            Ok(v) => v,
            Err(e) => return bad("select", e),
        },
        None => d.select,
    };
    let c = DrumConfig {
        select,
        shared_window: s.shared_window.unwrap_or(d.shared_window),
        a,
        period,
        iterations: s.iterations.unwrap_or(d.iterations),
        solve,
        alpha: s.alpha.unwrap_or(d.alpha),
        beta: s.beta.unwrap_or(d.beta),
        k: s.k.unwrap_or(d.k),
        q_fraction: s.q_fraction.unwrap_or(d.q_fraction),
        control,
        control_delay,
    };
    if !(c.alpha > 0.0 && c.alpha < 1.0) {
        return bad("alpha", format!("α = {} must lie in (0, 1)", c.alpha));
    }
    if !(c.beta.is_finite() && c.beta > 0.0) {
        return bad("beta", format!("β = {} must be finite and > 0", c.beta));
    }
    if c.shared_window == 0 {
        return bad("shared_window", "must be at least 1 byte (0 would never release onto a shared QP)".into());
    }
    if c.k == 0 {
        return bad("k", "must be at least 1".into());
    }
    if !(c.q_fraction > 0.0 && c.q_fraction <= 1.0) {
        return bad("q_fraction", format!("{} must lie in (0, 1]", c.q_fraction));
    }
    let rounds = Time(2 * c.control_delay.0.saturating_mul(c.iterations as u64));
    if c.control == Control::OutOfBand && rounds >= c.period {
        let msg = format!("{} rounds of 2 x control_delay take {rounds}, not less than the period", c.iterations);
        return bad("period", msg);
    }
    Ok(c)
}
