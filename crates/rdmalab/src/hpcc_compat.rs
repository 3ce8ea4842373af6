//! `rdmalab hpcc CONFIG`: a drop-in for the ns-3 HPCC simulator's `third CONFIG`.
//!
//! Reads the reference's config keys (paths relative to the current directory, as the
//! reference does), builds the same topology and flows, and runs with the reference's
//! conventions switched on: whole-nanosecond transmission times truncated as ns-3 does,
//! its ECMP next-hop order, no retransmission timeout, duplicates left unacknowledged.
//! Keys whose behaviour is not implemented are errors naming the key and line, never
//! silently ignored.
//!
//! `CC_MODE 0` is our extension: no congestion control, every QP at line rate.

use std::path::Path;

use crate::cc::CcConfig;
use crate::error::{Error, Result};
use crate::fabric::{EcnConfig, EcnParams};
use crate::formats::hpcc_config::{CcMode, HpccConfig};
use crate::formats::{hpcc_flow, hpcc_topology};
use crate::scenario::Scenario;
use crate::sim::{SimConfig, WindowConfig};
use crate::topology::routing::NeighborOrder;
use crate::units::TimingModel;

/// Loads everything a reference config names and turns it into a scenario.
pub fn scenario_from_config(cfg: &HpccConfig) -> Result<Scenario> {
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
    let flows = hpcc_flow::read_flows(flow_path, &topology)?;
    let config = sim_config(cfg)?;
    Ok(Scenario { topology, flows, config })
}

fn required<'a>(cfg: &HpccConfig, p: Option<&'a Path>, key: &str) -> Result<&'a Path> {
    p.ok_or_else(|| Error::input(&cfg.path, 0, key, "missing: the reference needs this file"))
}

fn unsupported(cfg: &HpccConfig, key: &str, what: &str) -> Error {
    Error::input(&cfg.path, cfg.line_of(key).unwrap_or(0), key, format!("not supported yet: {what}"))
}

fn reject_unsupported(cfg: &HpccConfig) -> Result<()> {
    if !matches!(cfg.cc_mode, CcMode::None) {
        let name = format!("CC_MODE {} (congestion control arrives in a later release; CC_MODE 0 runs without)", cfg.cc_mode.code());
        return Err(unsupported(cfg, "CC_MODE", &name));
    }
    if cfg.link_down.is_some() {
        return Err(unsupported(cfg, "LINK_DOWN", "link failures"));
    }
    if cfg.enable_trace {
        return Err(unsupported(cfg, "ENABLE_TRACE", "the binary packet trace"));
    }
    if cfg.l2_back_to_zero {
        return Err(unsupported(cfg, "L2_BACK_TO_ZERO", "chunk-granular go-back"));
    }
    if cfg.qlen_mon_start < cfg.qlen_mon_end {
        return Err(unsupported(cfg, "QLEN_MON_START", "the queue-length monitor file (set START = END)"));
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
    Some(EcnConfig { by_rate })
}

fn sim_config(cfg: &HpccConfig) -> Result<SimConfig> {
    let cc = match cfg.cc_mode {
        CcMode::None => CcConfig::None,
        _ => unreachable!("rejected above"),
    };
    Ok(SimConfig {
        timing: TimingModel::Ns3,
        mtu: cfg.packet_payload_size,
        header_bytes: 48,
        ack_bytes: 60,
        pfc_bytes: 64,
        ack_interval: cfg.l2_ack_interval.max(1),
        ack_high_prio: cfg.ack_high_prio,
        ack_duplicates: false,
        lossless: true,
        buffer_bytes: cfg.buffer_bytes(),
        ecn: ecn_config(cfg),
        cc,
        window: WindowConfig { enabled: cfg.has_win, variable: cfg.var_win, global: cfg.global_t },
        rate_bound: cfg.rate_bound,
        rto: None,
        int_multi: cfg.int_multi.max(1),
        neighbor_order: NeighborOrder::Ns3,
        stop_time: cfg.simulator_stop_time,
        ..SimConfig::default()
    })
}
