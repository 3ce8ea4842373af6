//! The simai dialect (`rdmalab hpcc --dialect simai CONFIG --topology TOPO --workload W`):
//! SimAI's ns-3 backend (aliyun/SimAI's `SimAI_simulator -w W -n TOPO -c CONFIG`) from its
//! own three files. docs/hpcc-dialects.md, "The simai dialect", gives SimAI's file and line
//! for each mapping:
//!
//! - the network config as the reference's keys (SimAI's `ReadConf` copies the reference's
//!   loop), `GLOBAL_T` forced to 1 as SimAI does: every QP's window and base RTT are the
//!   largest over GPU pairs (`maxBdp`, `maxRtt`, each pair's BDP at its bottleneck);
//! - the topology from SimAI's file (`formats::simai::read_simai_topology`): NVSwitches are
//!   switches that mark no ECN (SimAI configures ECN on its `SwitchNode`s only);
//! - the workload's one iteration (`formats::simai::iteration`) on GPUs 0 .. `all_gpus`, each
//!   communication's messages whole (one flow per ring step and channel, as SimAI's
//!   `SendFlow` sends a message as one QP), every flow starting SimAI's send latency after
//!   it is issued (`AS_SEND_LAT`, µs, default 6);
//! - SimAI's channels per ring (`Layout::rings`) and its allreduce algorithm: NVLS through the
//!   group's NVSwitch with `AS_NVLS_ENABLE=1` (`formats::simai::nvls_schedule`), the NVSwitch
//!   then a host of the fabric.

use std::path::Path;

use super::{bad, reject_unsupported, sim_config};
use crate::app::collective::Algorithm;
use crate::app::collective::RecordedPart;
use crate::app::deps::TransferGraph;
use crate::app::trace_nodes::JobRecords;
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::fabric::{EcnConfig, EcnParams};
use crate::formats::hpcc_config::HpccConfig;
use crate::formats::simai::{iteration, nvls_enabled, read_simai, read_simai_topology, Layout};
use crate::topology::routing::NeighborOrder;
use crate::topology::NodeKind;
use crate::units::Time;

/// SimAI's default send latency, 6 µs (`entry.h`, `SendFlow`: `int send_lat = 6000;`, ns).
pub const DEFAULT_SEND_LATENCY: Time = Time::from_ns(6_000);

/// A message of a communication is never cut: SimAI hands each to ns-3 as one flow.
const WHOLE_MESSAGE: u64 = 1 << 50;

/// The send latency of `AS_SEND_LAT` (µs, a whole number, as SimAI's tutorial gives it), or
/// SimAI's default.
pub fn send_latency(var: Option<&str>) -> std::result::Result<Time, String> {
    match var {
        None => Ok(DEFAULT_SEND_LATENCY),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map(|us| Time::from_ns(us.saturating_mul(1_000)))
            .map_err(|_| format!("AS_SEND_LAT `{v}` is not a whole number of microseconds")),
    }
}

/// Loads a SimAI config, topology and workload as one scenario: the workload's iteration as
/// a job on the GPUs.
pub fn load(cfg: &HpccConfig, topo_path: &Path, workload_path: &Path) -> Result<Scenario> {
    reject_unsupported(cfg)?;
    let st = read_simai_topology(topo_path)?;
    let mut topology = st.topology;
    if cfg.error_rate_per_link > 0.0 {
        for l in &mut topology.links {
            if l.error_rate == 0.0 {
                l.error_rate = cfg.error_rate_per_link;
            }
        }
    }
    let mut config = sim_config(cfg)?;
    // `GLOBAL_T`: `conf >> global_t; global_t = 1;` (common.h:565-567): every QP's window
    // is the largest BDP over GPU pairs and its base RTT the largest RTT (common.h:953-973,
    // entry.h:184-188), each pair's BDP at its own bottleneck rate.
    config.window.global = true;
    let routes = crate::topology::routing::Routes::compute(&topology, NeighborOrder::Ns3)?;
    let (max_rtt, max_bdp) = crate::stats::ideal::max_rtt_bdp(&topology, &routes, u64::from(cfg.packet_payload_size));
    config.global_path = Some((max_rtt, if cfg.has_win { max_bdp } else { 0 }));
    if cfg.enable_qcn {
        config.ecn = Some(ecn(cfg, &topology, &st.nvswitches)?);
    }
    if cfg.enable_trace {
        let msg = format!(
            "{}:{}: ENABLE_TRACE 1: rdmalab's simai dialect does not write SimAI's packet trace (TRACE_OUTPUT_FILE)",
            cfg.path.display(),
            cfg.line_of("ENABLE_TRACE").unwrap_or(0)
        );
        s_warn(&mut config, &msg);
    }
    if let Some(ld) = cfg.link_down {
        if crate::topology::links_between(&topology, ld.a, ld.b).is_empty() {
            let msg = format!("no link joins nodes {} and {} in the topology", ld.a, ld.b);
            return Err(bad(cfg, "LINK_DOWN", &msg));
        }
        config.link_events.push(crate::config::LinkEvent { at: ld.at, a: ld.a, b: ld.b, up: false });
    }
    let w = read_simai(workload_path)?;
    if w.all_gpus as usize > st.gpus {
        let msg = format!("all_gpus {} but the topology {} has {} GPUs", w.all_gpus, topo_path.display(), st.gpus);
        return Err(Error::input(workload_path, 1, "all_gpus", msg));
    }
    let nvls_var = std::env::var("AS_NVLS_ENABLE").ok();
    let mut nvls = Vec::new();
    if nvls_enabled(nvls_var.as_deref(), &st.gpu_type) {
        // GPU i's NVSwitch is the (i / GPUS_PER_SERVER)-th listed (AstraSimNetwork.cc).
        for i in 0..u64::from(w.all_gpus) {
            let Some(&sw) = st.nvswitches.get((i / st.gpus_per_server) as usize) else {
                let msg = format!("AS_NVLS_ENABLE=1 but GPU {i} has no NVSwitch in {}", topo_path.display());
                return Err(Error::input(workload_path, 0, "AS_NVLS_ENABLE", msg));
            };
            nvls.push(sw);
        }
    }
    let layout = Layout {
        hosts: topology.hosts().take(w.all_gpus as usize).collect(),
        algorithm: Algorithm::Ring,
        channels: 1,
        chunk: WHOLE_MESSAGE,
        start: Time::ZERO,
        nvls,
        rings: Some(u32::try_from(st.gpus_per_server).unwrap_or(u32::MAX)),
    };
    let var = std::env::var("AS_SEND_LAT").ok();
    let send_lat = send_latency(var.as_deref()).map_err(|m| Error::input(workload_path, 0, "AS_SEND_LAT", m))?;
    if var.is_none() {
        s_warn(
            &mut config,
            "AS_SEND_LAT is not set: every flow starts 6 us after it is issued, the default SimAI's \
                             tutorial gives (SimAI's own choice by algorithm and protocol is not modelled)",
        );
    }
    let it = iteration(&w, workload_path, &layout)?;
    let parts = it.parts(&w, &layout);
    config.partial_routes = nvswitch_endpoints(&mut topology, &it.graph, &parts, &layout, workload_path)?;
    if std::env::var("AS_PXN_ENABLE").ok().as_deref() == Some("1") {
        refuse_pxn(&parts, st.gpus_per_server, workload_path)?;
    }
    let graph = with_send_latency(&it.graph, send_lat)?;
    let mut s = Scenario::new(topology, Vec::new(), config);
    s.jobs.push(graph);
    s.job_parts.push(JobRecords { parts, nodes: None });
    Ok(s)
}

/// With an NVLS allreduce, its NVSwitches become endpoints of its flows, as SimAI's ns-3
/// lets an NVSwitch hold QPs when NVLS is on: here they become hosts, which forward nothing.
/// Any other transfer between two GPUs of one such server (which SimAI sends over the
/// NVSwitch) is refused, naming `AS_NVLS_ENABLE`. Whether any NVSwitch became a host (it
/// reaches only its own GPUs, so routes are built without the all-pairs check).
fn nvswitch_endpoints(
    topology: &mut crate::topology::Topology,
    graph: &TransferGraph,
    parts: &[RecordedPart],
    layout: &Layout,
    workload_path: &Path,
) -> Result<bool> {
    let nvls: Vec<&RecordedPart> = parts.iter().filter(|p| p.algorithm == Algorithm::Nvls).collect();
    if nvls.is_empty() {
        return Ok(false);
    }
    let server = |h: crate::ids::NodeId| layout.hosts.iter().position(|&x| x == h).map(|r| layout.nvls[r]);
    for (i, t) in graph.transfers().iter().enumerate() {
        if nvls.iter().any(|p| p.transfers.contains(&i)) {
            continue;
        }
        if let (Some(a), Some(b)) = (server(t.src), server(t.dst)) {
            if a == b {
                let p = parts.iter().find(|p| p.transfers.contains(&i)).map_or("", |p| p.name.as_str());
                let msg = format!(
                    "AS_NVLS_ENABLE=1: {p} sends between GPUs {} and {} of one server, over its NVSwitch, which the \
                     simai dialect models as an NVLS endpoint only (NVLS beside other NVLink traffic is not modelled)",
                    t.src.0, t.dst.0
                );
                return Err(Error::input(workload_path, 0, "AS_NVLS_ENABLE", msg));
            }
        }
    }
    for &sw in &layout.nvls {
        // SimAI gives GPUs and NVSwitches the address of their id (common.h:746-753).
        let node = &mut topology.nodes[sw.idx()];
        node.kind = NodeKind::Host;
        node.ips = vec![crate::topology::default_host_ip(sw.0)];
    }
    Ok(true)
}

/// `AS_PXN_ENABLE=1` changes SimAI's rings over several servers (`MockNcclGroup.cc`, the
/// ring flow models' `pgroupinfo.nNodes > 1 && PXN_ENABLE` branches, at 9243c560), which the
/// dialect does not model: such a ring is refused, naming the variable. Rings inside one
/// server are as without it.
fn refuse_pxn(parts: &[RecordedPart], gpus_per_server: u64, workload_path: &Path) -> Result<()> {
    let server = |h: &crate::ids::NodeId| u64::from(h.0) / gpus_per_server.max(1);
    for p in parts.iter().filter(|p| p.algorithm == Algorithm::Ring) {
        if let Some(g) = p.ranks.chunks(p.group.max(1)).find(|g| g.iter().any(|h| server(h) != server(&g[0]))) {
            let msg = format!(
                "AS_PXN_ENABLE=1: {} runs a ring over the servers of GPUs {} and {}; PXN, which SimAI applies to \
                 such rings, is not modelled (unset it, or keep the rings inside servers)",
                p.name,
                g[0].0,
                g.iter().find(|h| server(h) != server(&g[0])).map_or(0, |h| h.0)
            );
            return Err(Error::input(workload_path, 0, "AS_PXN_ENABLE", msg));
        }
    }
    Ok(())
}

fn s_warn(config: &mut crate::config::SimConfig, msg: &str) {
    config.input_warnings.push(msg.to_string());
}

/// Every transfer posted `lat` after it is issued: SimAI starts each flow's application
/// `send_lat` after `SendFlow` (`entry.h`: `appCon.Start(Time(send_lat));`).
fn with_send_latency(g: &TransferGraph, lat: Time) -> Result<TransferGraph> {
    let ts = g.transfers().iter().cloned().map(|mut t| {
        t.delay += lat;
        t
    });
    TransferGraph::new(ts.collect())
}

/// ECN by rate on the switches' ports, as SimAI configures its `SwitchNode`s (every rate of
/// a switch port must have its three entries, common.h:850-857); an NVSwitch port's rate
/// that no switch port has marks nothing (SimAI's `NVSwitchNode`s get no ECN, lines 872-891).
fn ecn(cfg: &HpccConfig, topo: &crate::topology::Topology, nvswitches: &[crate::ids::NodeId]) -> Result<EcnConfig> {
    let mut by_rate = Vec::new();
    for (id, node) in topo.nodes.iter().enumerate() {
        if node.kind != NodeKind::Switch {
            continue;
        }
        let nv = nvswitches.iter().any(|s| s.idx() == id);
        for (k, &p) in node.ports.iter().enumerate() {
            let rate = topo.links[topo.ports[p.idx()].link.idx()].rate;
            if by_rate.iter().any(|(r, _)| *r == rate) {
                continue;
            }
            match cfg.ecn_for_rate(rate) {
                Some((kmin, kmax, pmax)) if !nv => by_rate.push((rate, EcnParams { kmin, kmax, pmax })),
                _ if nv => {}
                _ => {
                    let msg = format!("no KMIN/KMAX/PMAX entry for rate {} bps, port {} of switch {id}", rate.0, k + 1);
                    return Err(bad(cfg, "KMAX_MAP", &msg));
                }
            }
        }
    }
    // NVSwitch-only rates: thresholds no queue reaches.
    for (id, node) in topo.nodes.iter().enumerate() {
        if !nvswitches.iter().any(|s| s.idx() == id) {
            continue;
        }
        for &p in &node.ports {
            let rate = topo.links[topo.ports[p.idx()].link.idx()].rate;
            if !by_rate.iter().any(|(r, _)| *r == rate) {
                by_rate.push((rate, EcnParams { kmin: u64::MAX, kmax: u64::MAX, pmax: 0.0 }));
            }
        }
    }
    Ok(EcnConfig { by_rate, overrides: Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_latency_is_whole_microseconds() {
        assert_eq!(send_latency(None), Ok(Time::from_ns(6_000)));
        assert_eq!(send_latency(Some("2")), Ok(Time::from_ns(2_000)));
        assert!(send_latency(Some("2.5")).unwrap_err().contains("AS_SEND_LAT"));
    }
}
