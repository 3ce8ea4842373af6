//! `rdmalab hpcc CONFIG`: a drop-in for the ns-3 HPCC simulator's `third CONFIG`.
//!
//! Reads the reference's config keys (paths relative to the current directory, as the
//! reference does), builds the same topology and flows, and runs with the reference's
//! conventions switched on: whole-nanosecond transmission times truncated as ns-3 does,
//! its ECMP next-hop order, no retransmission timeout, duplicates left unacknowledged,
//! and ACKs sharing the data queue at switches whatever ACK_HIGH_PRIO says (the reference
//! applies that key to hosts only; see `SimConfig::ack_prio_at_switches`).
//! `LINK_DOWN a b c` takes link b-c down at 2 s + a µs with routes recomputed at once, as
//! the reference's `TakeDownLink` does (`sim::failures`).
//! Keys whose behaviour is not implemented are errors naming the key and line, never
//! silently ignored.
//!
//! `CC_MODE 0` is our extension: no congestion control, every QP at line rate. Modes 1
//! (DCQCN), 3 (HPCC), 7 (TIMELY) and 8 (DCTCP) map every CC key to the algorithm's
//! parameters (`cc_config`); mode 10 (HPCC-PINT) is not supported yet. `CC_MODE 20` is our
//! Blitz: the DCQCN keys plus `DASR_UTILIZATION`, `DASR_COUNT` (0 QPs, 1 hosts,
//! which implies per-pair groups) and `DASR_EDGE_ECN`; with any mode, `IOFD_ENABLE 1` turns
//! on in-order flow deflection with `IOFD_MAX_DEFLECTIONS`, `IOFD_THRESHOLD` (bytes, 0 =
//! KMIN), `IOFD_NONMINIMAL` and `IOFD_RESEQ_KB`. Misplaced or out-of-range keys are errors
//! naming the key and its line.

use std::path::Path;

use crate::cc::{
    BlitzParams, CcConfig, DasrCount, DasrParams, DcqcnParams, DctcpParams, Granularity, HpccParams, TimelyParams,
};
use crate::config::{Scenario, SimConfig, WindowConfig};
use crate::error::{Error, Result};
use crate::fabric::deflection::MAX_DEFLECTIONS;
use crate::fabric::IofdConfig;
use crate::fabric::{EcnConfig, EcnParams};
use crate::formats::hpcc_config::{CcMode, Dialect, HpccConfig};
use crate::formats::{hpcc_flow, hpcc_topology};
use crate::topology::routing::NeighborOrder;
use crate::units::TimingModel;

pub mod conweave;
mod m4;
pub mod simai;

/// What an m4-dialect run writes beside the engine's records: each flow's id in the flow
/// file and the fork's standalone FCT, indexed as the scenario's flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct M4Outputs {
    /// The flow file's first column.
    pub ids: Vec<u64>,
    /// The fork's standalone FCT in ns (`formats::hpcc_m4::standalone_fct_ns`).
    pub standalone_ns: Vec<u64>,
}

/// Loads everything a reference config names and turns it into a scenario.
pub fn scenario_from_config(cfg: &HpccConfig) -> Result<Scenario> {
    Ok(load(cfg)?.0)
}

/// Loads everything a config names in its dialect (`cfg.dialect`): the scenario, and in the
/// m4 dialect what its FCT file needs besides the records.
pub fn load(cfg: &HpccConfig) -> Result<(Scenario, Option<M4Outputs>)> {
    reject_unsupported(cfg)?;
    let topo_path = required(cfg, cfg.topology_file.as_deref(), "TOPOLOGY_FILE")?;
    let flow_path = required(cfg, cfg.flow_file.as_deref(), "FLOW_FILE")?;
    let mut topology = hpcc_topology::read_topology(topo_path)?;
    if cfg.error_rate_per_link > 0.0 {
        for l in &mut topology.links {
            if l.error_rate == 0.0 {
                l.error_rate = cfg.error_rate_per_link;
            }
        }
    }
    if cfg.enable_qcn {
        cfg.check_ecn_maps(&topology)?;
    }
    let read =
        || std::fs::read_to_string(flow_path).map_err(|e| Error::Io { path: flow_path.to_path_buf(), source: e });
    let (flows, ids) = match cfg.dialect {
        Dialect::M4 => {
            let (flows, ids) = hpcc_flow::parse_flows_with_ids(&read()?, flow_path, &topology)?;
            (flows, Some(ids))
        }
        Dialect::Conweave => (hpcc_flow::parse_flows_conweave(&read()?, flow_path, &topology)?, None),
        Dialect::Reference => (hpcc_flow::read_flows(flow_path, &topology)?, None),
        Dialect::Simai => {
            let msg = "the simai dialect takes SimAI's topology and workload files (`hpcc_compat::simai::load`)";
            return Err(bad(cfg, "FLOW_FILE", msg));
        }
    };
    if let Some(i) = iofd_config(cfg)? {
        if let Some(f) = flows.iter().find(|f| f.pg == i.escape_pg) {
            let key = if cfg.iofd_nonminimal { "IOFD_NONMINIMAL" } else { "IOFD_ENABLE" };
            let msg = format!("IOFD's escape class {} carries data (a flow has pg {})", i.escape_pg, f.pg);
            return Err(bad(cfg, key, &msg));
        }
    }
    let mut config = sim_config(cfg)?;
    let m4 = match ids {
        Some(ids) => Some(m4::apply(cfg, &topology, &flows, ids, &mut config)?),
        None => None,
    };
    if cfg.enable_trace {
        // A count of 0 traces no node, as in the reference (`EnableTracing` on an empty
        // container); rdmalab's empty node list would mean every node instead.
        let (trace, skipped) = trace_config(cfg, &topology)?;
        if skipped > 0 {
            let path = cfg.trace_file.as_deref().unwrap_or(Path::new("")).display();
            let n = topology.len();
            config.input_warnings.push(format!(
                "{path}: {skipped} node ids of {n} or more not traced: the topology has {n} nodes (the reference skips them too)"
            ));
        }
        config.trace = Some(trace).filter(|t| !t.nodes.is_empty());
    }
    // The ConWeave artifact reads the QLEN_MON keys but writes no queue monitor.
    if cfg.qlen_mon_start < cfg.qlen_mon_end && cfg.qlen_mon_file.is_some() && cfg.dialect != Dialect::Conweave {
        let (start, end) = (cfg.qlen_mon_start, cfg.qlen_mon_end);
        config.qlen_monitor = Some(crate::config::QlenMonitorConfig { start, end });
    }
    if let Some(ld) = cfg.link_down {
        if crate::topology::links_between(&topology, ld.a, ld.b).is_empty() {
            let msg = format!("no link joins nodes {} and {} in the topology", ld.a, ld.b);
            return Err(bad(cfg, "LINK_DOWN", &msg));
        }
        // The reference recomputes every route in the same event (`TakeDownLink`): delay 0.
        config.link_events.push(crate::config::LinkEvent { at: ld.at, a: ld.a, b: ld.b, up: false });
    }
    if cfg.dialect == Dialect::Conweave {
        conweave::apply(cfg, &topology, &mut config)?;
    }
    Ok((Scenario::new(topology, flows, config), m4))
}

/// `ENABLE_TRACE 1`: the nodes listed in `TRACE_FILE` (a count, then node ids), every
/// event, no cap beyond the default (written as Parquet to `TRACE_OUTPUT_FILE`), and how
/// many ids were past the topology's nodes. The reference skips those (`third.cc`:
/// `if (nid >= n.GetN()) continue;`), so its own `mix/trace.txt`, written for its 376-node
/// fat tree, serves its 66-node `mix/topology.txt` in `mix/config.txt`.
fn trace_config(cfg: &HpccConfig, topo: &crate::topology::Topology) -> Result<(crate::config::TraceConfig, u64)> {
    let path = required(cfg, cfg.trace_file.as_deref(), "TRACE_FILE")?;
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    let mut r = crate::formats::tokens::Reader::new(&text, path);
    let (n, _) = r.u64("count", "the number of nodes to trace")?;
    let mut nodes = Vec::with_capacity(n.min(topo.len() as u64) as usize);
    let mut skipped = 0;
    for _ in 0..n {
        let (id, _) = r.u64("node", "a node id")?;
        match u32::try_from(id) {
            Ok(id) if (id as usize) < topo.len() => nodes.push(crate::ids::NodeId(id)),
            _ => skipped += 1,
        }
    }
    let trace = crate::config::TraceConfig {
        nodes,
        end: crate::units::Time::MAX,
        max_bytes: crate::config::DEFAULT_TRACE_MAX_BYTES,
        ..Default::default()
    };
    Ok((trace, skipped))
}

fn required<'a>(cfg: &HpccConfig, p: Option<&'a Path>, key: &str) -> Result<&'a Path> {
    p.ok_or_else(|| Error::input(&cfg.path, 0, key, "missing: the reference needs this file"))
}

fn unsupported(cfg: &HpccConfig, key: &str, what: &str) -> Error {
    Error::input(&cfg.path, cfg.line_of(key).unwrap_or(0), key, format!("not supported yet: {what}"))
}

fn reject_unsupported(cfg: &HpccConfig) -> Result<()> {
    if matches!(cfg.cc_mode, CcMode::HpccPint) {
        let modes = crate::formats::hpcc_config::supported_cc_modes();
        return Err(unsupported(cfg, "CC_MODE", &format!("CC_MODE 10 (HPCC-PINT); supported modes: {modes}")));
    }
    if cfg.l2_back_to_zero {
        return Err(unsupported(cfg, "L2_BACK_TO_ZERO", "chunk-granular go-back"));
    }
    // The reference's defaults (2.0 s to 2.1 s) ask for a monitor too, but a config that
    // names no monitor key at all means "no monitor", not a missing file.
    let asks_monitor = cfg.line_of("QLEN_MON_START").is_some() || cfg.line_of("QLEN_MON_END").is_some();
    if asks_monitor && cfg.qlen_mon_start < cfg.qlen_mon_end && cfg.qlen_mon_file.is_none() {
        return Err(bad(cfg, "QLEN_MON_FILE", "missing: QLEN_MON_START < QLEN_MON_END asks for the monitor file"));
    }
    if cfg.enable_trace && (cfg.trace_file.is_none() || cfg.trace_output_file.is_none()) {
        return Err(bad(cfg, "ENABLE_TRACE", "needs TRACE_FILE (the nodes to trace) and TRACE_OUTPUT_FILE"));
    }
    Ok(())
}

fn ecn_config(cfg: &HpccConfig) -> Option<EcnConfig> {
    if !cfg.enable_qcn {
        return None;
    }
    let by_rate = cfg
        .kmin_map
        .keys()
        .filter_map(|&rate| {
            let (kmin, kmax, pmax) = cfg.ecn_for_rate(rate)?;
            Some((rate, EcnParams { kmin, kmax, pmax }))
        })
        .collect();
    Some(EcnConfig { by_rate, overrides: Default::default() })
}

fn sim_config(cfg: &HpccConfig) -> Result<SimConfig> {
    reject_misplaced_keys(cfg)?;
    let cc = cc_config(cfg)?;
    // Per-host shares need the per-pair group that splits a host's rate among its QPs.
    let host_count = matches!(cc.dasr(), Some(d) if d.count == DasrCount::Host);
    let granularity = if host_count { Granularity::PerPair } else { Granularity::PerQp };
    Ok(SimConfig {
        timing: TimingModel::Ns3,
        mtu: cfg.packet_payload_size,
        header_bytes: 48,
        ack_bytes: 60,
        pfc_bytes: 64,
        ack_interval: cfg.l2_ack_interval.max(1),
        ack_high_prio: cfg.ack_high_prio,
        // The reference's switches never receive ACK_HIGH_PRIO (see the field's doc).
        ack_prio_at_switches: false,
        ack_duplicates: false,
        lossless: true,
        buffer_bytes: cfg.buffer_bytes(),
        ecn: ecn_config(cfg),
        cc,
        granularity,
        iofd: iofd_config(cfg)?,
        window: WindowConfig { enabled: cfg.has_win, variable: cfg.var_win, global: cfg.global_t },
        rate_bound: cfg.rate_bound,
        rto: None,
        int_multi: cfg.int_multi.max(1),
        neighbor_order: NeighborOrder::Ns3,
        stop_time: cfg.simulator_stop_time,
        // The reference has no tenants; its runs keep nothing they do not write.
        tenant_meter: false,
        ..SimConfig::default()
    })
}

/// The congestion control of `CC_MODE` with its keys (the reference's `RdmaHw` for their meaning).
pub fn cc_config(cfg: &HpccConfig) -> Result<CcConfig> {
    Ok(match cfg.cc_mode {
        CcMode::None => CcConfig::None,
        CcMode::Dcqcn => CcConfig::Dcqcn(dcqcn_params(cfg)?),
        CcMode::Blitz => CcConfig::Blitz(BlitzParams {
            dcqcn: dcqcn_params(cfg)?,
            dasr: dasr_params(cfg)?,
            ..BlitzParams::default()
        }),
        CcMode::Hpcc => CcConfig::Hpcc(HpccParams {
            eta: u_target(cfg)?,
            max_stage: cfg.mi_thresh,
            rate_ai: step(cfg, cfg.rate_ai, "RATE_AI")?,
            min_rate: min_rate(cfg)?,
            fast_react: cfg.fast_react,
            multi_rate: cfg.multi_rate,
            sample_feedback: cfg.sample_feedback,
        }),
        CcMode::Timely => CcConfig::Timely(TimelyParams {
            rate_ai: step(cfg, cfg.rate_ai, "RATE_AI")?,
            rate_hai: step(cfg, cfg.rate_hai, "RATE_HAI")?,
            min_rate: min_rate(cfg)?,
            ..TimelyParams::default()
        }),
        CcMode::Dctcp => {
            CcConfig::Dctcp(DctcpParams { g: cfg.ewma_gain, rate_ai: cfg.dctcp_rate_ai, min_rate: min_rate(cfg)? })
        }
        CcMode::HpccPint => return Err(unsupported(cfg, "CC_MODE", "CC_MODE 10 (HPCC-PINT)")),
    })
}

fn dcqcn_params(cfg: &HpccConfig) -> Result<DcqcnParams> {
    Ok(DcqcnParams {
        g: cfg.ewma_gain,
        alpha_interval: positive(cfg, cfg.alpha_resume_interval, "ALPHA_RESUME_INTERVAL")?,
        decrease_interval: positive(cfg, cfg.rate_decrease_interval, "RATE_DECREASE_INTERVAL")?,
        rp_timer: positive(cfg, cfg.rp_timer, "RP_TIMER")?,
        fast_recovery_times: cfg.fast_recovery_times,
        rate_ai: step(cfg, cfg.rate_ai, "RATE_AI")?,
        rate_hai: step(cfg, cfg.rate_hai, "RATE_HAI")?,
        min_rate: min_rate(cfg)?,
        clamp_target: cfg.clamp_target_rate,
        rate_on_first_cnp: 1.0,
        initial_alpha: 1.0,
        byte_counter: 0, // the reference has none
    })
}

/// CC_MODE 20's DASR keys (their presence under other modes is refused by
/// `reject_misplaced_keys`).
fn dasr_params(cfg: &HpccConfig) -> Result<DasrParams> {
    let u = cfg.dasr_utilization;
    if !(u > 0.0 && u <= 1.0) {
        return Err(bad(cfg, "DASR_UTILIZATION", &format!("{u} is not a fraction in (0, 1]")));
    }
    let count = match cfg.dasr_count {
        0 => DasrCount::Qp,
        1 => DasrCount::Host,
        n => return Err(bad(cfg, "DASR_COUNT", &format!("{n}: 0 counts QPs, 1 sending hosts"))),
    };
    Ok(DasrParams { utilization: u, count, edge_ecn: cfg.dasr_edge_ecn })
}

/// DASR keys belong to CC_MODE 20, and IOFD's settings to `IOFD_ENABLE 1`.
fn reject_misplaced_keys(cfg: &HpccConfig) -> Result<()> {
    if cfg.cc_mode != CcMode::Blitz {
        for key in ["DASR_UTILIZATION", "DASR_COUNT", "DASR_EDGE_ECN"] {
            if cfg.line_of(key).is_some() {
                return Err(bad(cfg, key, "a Blitz key: only with CC_MODE 20"));
            }
        }
    }
    if !cfg.iofd_enable {
        for key in ["IOFD_MAX_DEFLECTIONS", "IOFD_THRESHOLD", "IOFD_NONMINIMAL", "IOFD_RESEQ_KB"] {
            if cfg.line_of(key).is_some() {
                return Err(bad(cfg, key, "an IOFD setting: only with IOFD_ENABLE 1"));
            }
        }
    }
    Ok(())
}

/// `IOFD_*` as the switch feature's settings; `None` unless `IOFD_ENABLE 1`.
fn iofd_config(cfg: &HpccConfig) -> Result<Option<IofdConfig>> {
    if !cfg.iofd_enable {
        return Ok(None);
    }
    let max = cfg.iofd_max_deflections;
    if max > MAX_DEFLECTIONS as u32 {
        return Err(bad(cfg, "IOFD_MAX_DEFLECTIONS", &format!("{max} is more than {MAX_DEFLECTIONS}")));
    }
    Ok(Some(IofdConfig {
        max_deflections: max as u8,
        threshold: cfg.iofd_threshold,
        nonminimal: cfg.iofd_nonminimal,
        resequence_bytes: u64::from(cfg.iofd_reseq_kb) * 1024,
        ..IofdConfig::default()
    }))
}

fn bad(cfg: &HpccConfig, key: &str, msg: &str) -> Error {
    Error::input(&cfg.path, cfg.line_of(key).unwrap_or(0), key, msg.to_string())
}

fn positive(cfg: &HpccConfig, t: crate::units::Time, key: &str) -> Result<crate::units::Time> {
    if t == crate::units::Time::ZERO {
        return Err(bad(cfg, key, "must be positive for this CC_MODE (a zero period never advances time)"));
    }
    Ok(t)
}

fn step(cfg: &HpccConfig, r: Option<crate::units::Rate>, key: &str) -> Result<crate::units::Rate> {
    r.ok_or_else(|| bad(cfg, key, "missing: this CC_MODE needs it (the reference aborts without it)"))
}

fn min_rate(cfg: &HpccConfig) -> Result<crate::units::Rate> {
    if cfg.min_rate.0 == 0 {
        return Err(bad(cfg, "MIN_RATE", "must be positive"));
    }
    Ok(cfg.min_rate)
}

fn u_target(cfg: &HpccConfig) -> Result<f64> {
    if !(cfg.u_target.is_finite() && cfg.u_target > 0.0) {
        return Err(bad(cfg, "U_TARGET", "must be a positive utilisation"));
    }
    Ok(cfg.u_target)
}
