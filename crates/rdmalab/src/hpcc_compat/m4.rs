//! The m4 dialect's settings on top of the reference's (`--dialect m4`;
//! docs/hpcc-dialects.md gives the fork's file and line for each):
//!
//! - `BUFFER_SIZE` in KiB (its integer part), `ENABLE_PFC 0` a lossy fabric;
//! - every QP's window is `FIXED_WIN` under `HAS_WIN` (none when 0), scaled by rate under
//!   `VAR_WIN`, and its base RTT twice the topology's largest host-to-host delay: the fork
//!   overwrites `BASE_RTT` with that before any QP exists;
//! - `TIMELY_T_HIGH`, `TIMELY_T_LOW` (ns) and `TIMELY_BETA` set TIMELY's thresholds and decrease;
//! - `ACK_HIGH_PRIO` reaches the switches too;
//! - a flow completes when its receiver holds the last byte (`SimConfig::fct_at_receiver`);
//! - the switches run the fork's buffer (`fabric::MmuRule::M4`).
//!
//! Refused by name, as settings this dialect does not model: `MAX_RATE` below a host's NIC
//! rate (the fork starts and caps such QPs at it), `MAX_INFLIGHT_FLOWS` from 1 to fewer than
//! the flows (the fork's closed loop per rack), and `N_CLIENTS_PER_RACK_FOR_CLOSED_LOOP 0`
//! (the fork divides by it).

use super::{bad, M4Outputs};
use crate::cc::CcConfig;
use crate::config::SimConfig;
use crate::error::Result;
use crate::formats::hpcc_config::HpccConfig;
use crate::formats::hpcc_m4::{max_rtt, paths_from, standalone_fct_ns};
use crate::topology::Topology;
use crate::workload::FlowSpec;

/// Applies the m4 keys to `config` and computes each flow's standalone FCT.
pub(super) fn apply(
    cfg: &HpccConfig,
    topo: &Topology,
    flows: &[FlowSpec],
    ids: Vec<u64>,
    config: &mut SimConfig,
) -> Result<M4Outputs> {
    let m = &cfg.m4;
    if let Some(h) = topo.hosts().find(|&h| topo.nic_rate(h) > m.max_rate) {
        let msg = format!(
            "{} is below host {}'s NIC rate {}: the m4 fork starts and caps its QPs at MAX_RATE, which \
             rdmalab's m4 dialect does not model yet",
            m.max_rate,
            h.0,
            topo.nic_rate(h)
        );
        return Err(bad(cfg, "MAX_RATE", &msg));
    }
    let open_loop = m.max_inflight_flows == 0 || m.max_inflight_flows >= flows.len() as u64;
    if !open_loop {
        let msg = format!(
            "{} flows in flight per client group: the m4 fork's closed loop, which rdmalab's m4 dialect does \
             not model (0, or at least the {} flows of the flow file, runs them all as listed)",
            m.max_inflight_flows,
            flows.len()
        );
        return Err(bad(cfg, "MAX_INFLIGHT_FLOWS", &msg));
    }
    if m.n_clients_per_rack == 0 {
        return Err(bad(cfg, "N_CLIENTS_PER_RACK_FOR_CLOSED_LOOP", "must be at least 1 (the m4 fork divides by it)"));
    }
    config.timing = crate::units::TimingModel::Ns3Floor;
    config.buffer_bytes = m.buffer_bytes();
    config.lossless = m.enable_pfc;
    config.ack_prio_at_switches = cfg.ack_high_prio;
    config.fct_at_receiver = true;
    // `RDMALAB_M4_MMU=reference` keeps the reference's buffer rules: a diagnostic for
    // `bench/m4_published.py --mmu both`, which shows what the fork's buffer changes.
    if std::env::var("RDMALAB_M4_MMU").as_deref() != Ok("reference") {
        config.mmu_rule = crate::fabric::MmuRule::M4 { payload: cfg.packet_payload_size };
    }
    let win = if cfg.has_win { m.fixed_win } else { 0 };
    config.window.enabled = win > 0;
    config.window.global = true;
    config.global_path = Some((max_rtt(topo), win));
    if let CcConfig::Timely(t) = &mut config.cc {
        t.t_high_ns = m.timely_t_high_ns;
        t.t_low_ns = m.timely_t_low_ns;
        t.beta = m.timely_beta;
    }
    let mtu = u64::from(cfg.packet_payload_size);
    // One route search per sending host: the flows taken by source.
    let mut order: Vec<usize> = (0..flows.len()).collect();
    order.sort_by_key(|&i| flows[i].src);
    let mut standalone_ns = vec![0; flows.len()];
    for group in order.chunk_by(|&a, &b| flows[a].src == flows[b].src) {
        let paths = paths_from(topo, flows[group[0]].src);
        for &i in group {
            let f = &flows[i];
            standalone_ns[i] = paths[f.dst.idx()].as_ref().map_or(0, |p| standalone_fct_ns(p, f.size, mtu));
        }
    }
    Ok(M4Outputs { ids, standalone_ns })
}
