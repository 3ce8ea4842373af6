//! The mechanisms' checks of a scenario (`Mechanisms::validate`): each refuses a setting that
//! cannot run, with an error that names the field.

use crate::error::{Error, Result};
use crate::fabric::NUM_PRIOS;
use crate::sim::SimConfig;
use crate::workload::FlowSpec;

/// Blitz's DASR: the utilisation target and the share's granularity.
pub(super) fn dasr(cfg: &SimConfig) -> Result<()> {
    if let Some(d) = cfg.cc.dasr() {
        if !(d.utilization > 0.0 && d.utilization <= 1.0) {
            return Err(Error::scenario("cc_params.dasr_utilization", "must be in (0, 1]"));
        }
        crate::cc::dasr::check_granularity(d.count, cfg.granularity)
            .map_err(|m| Error::scenario("cc_params.dasr_count", m))?;
    }
    Ok(())
}

/// InfiniBand CC's parameters; it marks FECN by its own rule, so RED ECN must be off.
pub(super) fn ib_cc(cfg: &SimConfig) -> Result<()> {
    if let Some(p) = cfg.cc.ib_params() {
        p.check().map_err(|(key, m)| Error::scenario(format!("cc_params.{key}"), m))?;
        if cfg.ecn.is_some() {
            let m = "InfiniBand congestion control marks FECN by its own rule (annex A10): RED ECN must be off";
            return Err(Error::scenario("ecn", m));
        }
    }
    Ok(())
}

/// IOFD's limits and its escape class, which no flow may use.
pub(super) fn iofd(i: &crate::fabric::IofdConfig, flows: &[FlowSpec]) -> Result<()> {
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
pub(super) fn balancer(cfg: &SimConfig) -> Result<()> {
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
