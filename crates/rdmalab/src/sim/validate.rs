//! Checks of a scenario that the simulator itself needs before it lays out the arenas
//! (the TOML parser checks fields; these check what only the whole world can tell: flows
//! against the topology, a config's parts against each other, IOFD against the flows).

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
                     sim::parallel::Runner (docs/physics.md, \"Parallel engine\")"
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
    if let Some(d) = cfg.cc.dasr() {
        if !(d.utilization > 0.0 && d.utilization <= 1.0) {
            return Err(Error::scenario("cc_params.dasr_utilization", "must be in (0, 1]"));
        }
        crate::cc::dasr::check_granularity(d.count, cfg.granularity)
            .map_err(|m| Error::scenario("cc_params.dasr_count", m))?;
    }
    if let Some(p) = cfg.cc.ib_params() {
        p.check().map_err(|(key, m)| Error::scenario(format!("cc_params.{key}"), m))?;
        if cfg.ecn.is_some() {
            let m = "InfiniBand congestion control marks FECN by its own rule (annex A10): RED ECN must be off";
            return Err(Error::scenario("ecn", m));
        }
    }
    check_balancer(cfg)?;
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

pub(super) fn validate_iofd(i: &crate::fabric::IofdConfig, flows: &[FlowSpec]) -> Result<()> {
    use crate::fabric::deflection::MAX_DEFLECTIONS;
    if i.max_deflections > MAX_DEFLECTIONS {
        return Err(Error::scenario("iofd.max_deflections", format!("at most {MAX_DEFLECTIONS}")));
    }
    if i.escape_pg == 0 || i.escape_pg as usize >= NUM_PRIOS {
        return Err(Error::scenario("iofd.escape_pg", format!("{} is not a class (1..7)", i.escape_pg)));
    }
    if let Some(k) = flows.iter().position(|f| f.pg == i.escape_pg) {
        return Err(Error::scenario(
            "iofd.escape_pg",
            format!("class {} carries data (flows[{k}].pg): the escape class must be free", i.escape_pg),
        ));
    }
    Ok(())
}

/// The switch-side balancers against the rest of the config: CONGA's header lives where INT
/// would, and IOFD deflects by its own rule at the same switches.
fn check_balancer(cfg: &SimConfig) -> Result<()> {
    use crate::topology::routing::PathSelection;
    if !crate::fabric::lb::is_switch_scheme(cfg.path_selection) {
        return Ok(());
    }
    if cfg.iofd.is_some() {
        let m = "a switch-side balancer does not compose with `[fabric.iofd]` (both pick the egress)";
        return Err(Error::scenario("path_selection", m));
    }
    if matches!(cfg.path_selection, PathSelection::Conga | PathSelection::Conweave) && cfg.cc.needs_int() {
        let m = "`conga` and `conweave` carry their header where INT would; use a congestion control without INT (dcqcn, timely, dctcp)";
        return Err(Error::scenario("path_selection", m));
    }
    let d = cfg.lb.drill_samples as usize + cfg.lb.drill_memory as usize;
    if d > crate::fabric::lb::drill::MAX_CANDIDATES || cfg.lb.drill_samples == 0 {
        let m = format!(
            "drill_samples (>= 1) plus drill_memory must be at most {}",
            crate::fabric::lb::drill::MAX_CANDIDATES
        );
        return Err(Error::scenario("lb.drill_samples", m));
    }
    Ok(())
}
