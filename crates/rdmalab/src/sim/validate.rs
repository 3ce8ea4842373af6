//! Checks of a scenario that the simulator itself needs before it lays out the arenas
//! (the TOML parser checks fields; these check what only the whole world can tell: flows
//! against the topology, a config's parts against each other; the mechanisms' own checks are
//! `mech::Mechanisms::validate`).

use crate::error::{Error, Result};
use crate::fabric::NUM_PRIOS;
use crate::sim::SimConfig;
use crate::topology::Topology;
use crate::units::Time;
use crate::workload::FlowSpec;

pub(super) fn validate_config(cfg: &SimConfig) -> Result<()> {
    match cfg.threads {
        Some(0) => {
            let msg = "must be at least 1 (threads = \"auto\" is resolved by sim::parallel::Runner)";
            return Err(Error::scenario("threads", msg));
        }
        Some(n) if n > 1 => {
            return Err(Error::scenario(
                "threads",
                format!(
                    "{n} threads: one Simulation is one partition; a parallel run is built by \
                     sim::parallel::Runner (docs/model/determinism.md, \"Parallel engine\")"
                ),
            ))
        }
        _ => {}
    }
    if cfg.mtu == 0 {
        return Err(Error::scenario("mtu", "must be at least 1 byte"));
    }
    if cfg.ack_interval == 0 {
        return Err(Error::scenario("ack_interval", "must be at least 1"));
    }
    if cfg.int_multi == 0 {
        return Err(Error::scenario("int_multi", "must be at least 1"));
    }
    // The mechanisms' own checks, in their place in this order.
    super::mech::Mechanisms::validate(cfg)?;
    if cfg.rto == Some(Time::ZERO) {
        return Err(Error::scenario("rto", "must be positive (or absent for no timeout)"));
    }
    Ok(())
}

pub(super) fn validate_flows(topo: &Topology, flows: &[FlowSpec], apps: usize) -> Result<()> {
    let mut last = Time::ZERO;
    for (i, f) in flows.iter().enumerate() {
        let field = |name: &str| format!("flows[{i}].{name}");
        for (name, node) in [("src", f.src), ("dst", f.dst)] {
            if node.idx() >= topo.len() {
                return Err(Error::scenario(field(name), format!("unknown node {node}")));
            }
            if !topo.is_host(node) {
                return Err(Error::scenario(field(name), format!("node {node} is a switch, not a host")));
            }
        }
        if f.src == f.dst {
            return Err(Error::scenario(field("dst"), format!("flow from host {} to itself", f.src)));
        }
        if f.size == 0 {
            return Err(Error::scenario(field("size"), "must be at least 1 byte"));
        }
        if f.size > crate::workload::MAX_FLOW_BYTES {
            return Err(Error::scenario(field("size"), crate::workload::too_large(f.size)));
        }
        if f.pg as usize >= NUM_PRIOS || f.pg == 0 {
            return Err(Error::scenario(field("pg"), format!("{} is not a data class (1..7)", f.pg)));
        }
        if let Some(ip) = f.src_ip {
            if !topo.nodes[f.src.idx()].ips.contains(&ip) {
                let dotted = std::net::Ipv4Addr::from(ip);
                return Err(Error::scenario(field("src_ip"), format!("host {} does not own {dotted}", f.src)));
            }
        }
        if !f.app.is_none() && f.app.idx() >= apps {
            return Err(Error::scenario(field("app"), format!("no application {}", f.app)));
        }
        if f.start < last {
            return Err(Error::scenario(field("start"), "flows must be sorted by start time"));
        }
        last = f.start;
    }
    Ok(())
}

/// A flow that could not finish within the longest simulated time (2^64 ps, 213 days) even
/// alone on the network: slow links, not just large sizes, make one.
pub(super) fn check_completable(flows: &[FlowSpec], ideal: &[Time]) -> Result<()> {
    for (i, (f, t)) in flows.iter().zip(ideal).enumerate() {
        if f.start.0.checked_add(t.0).is_none_or(|end| end == u64::MAX) {
            let msg =
                format!("{} bytes cannot be delivered within the simulator's 213 days at this path's rate", f.size);
            return Err(Error::scenario(format!("flows[{i}].size"), msg));
        }
    }
    Ok(())
}
