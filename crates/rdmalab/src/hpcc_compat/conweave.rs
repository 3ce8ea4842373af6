//! The ConWeave dialect's settings on top of the reference's (`--dialect conweave`;
//! docs/hpcc-dialects.md, "The conweave dialect", gives the fork's file and line for each):
//!
//! - `LB_MODE` picks the switches' balancer: 0 ECMP, 2 DRILL, 3 CONGA, 6 LetFlow, 9 ConWeave,
//!   with the `CONWEAVE_*` times (µs); other modes are refused, as the fork aborts on them;
//! - `ENABLE_PFC 0` a lossy fabric, `ENABLE_IRN 1` IRN's loss recovery (RTOs 320 and 100 µs,
//!   the topology's largest BDP);
//! - the PFC headroom of a port is `2 × rate × delay / 8 + 2 × 1,048` bytes;
//! - ACKs in the high-priority queue at the switches (always: the fork has no key for it);
//! - `LINK_DOWN`'s time counts from `FLOWGEN_START_TIME`, and the run ends 10 s after
//!   `FLOWGEN_STOP_TIME`;
//! - `RANDOM_SEED` seeds rdmalab's random streams.
//!
//! The flow file's ports and the FCT file's node-id columns are the readers' and writers'
//! (`formats::hpcc_flow::parse_flows_conweave`, `formats::fct::write_fct_node_ids`).

use super::bad;
use crate::config::SimConfig;
use crate::error::Result;
use crate::formats::hpcc_config::{CcMode, HpccConfig};
use crate::topology::routing::PathSelection;
use crate::topology::Topology;
use crate::units::Time;

/// The balancer of an `LB_MODE` value: the fork's modes (`switch-node.cc`, `GetOutDev`'s
/// `switch (Settings::lb_mode)`, and the main program's comment on `lb_mode`).
pub fn path_selection(lb_mode: u64) -> Option<PathSelection> {
    match lb_mode {
        0 => Some(PathSelection::Ecmp),
        2 => Some(PathSelection::Drill),
        3 => Some(PathSelection::Conga),
        6 => Some(PathSelection::Letflow),
        9 => Some(PathSelection::Conweave),
        _ => None,
    }
}

/// The fork's PFC headroom of a switch port (main program, the switch loop:
/// `rate * delay / 8 / 1000000000 * 2 + 2 * sw->m_mmu->MTU`, with `MTU = 1048` in
/// `switch-mmu.h`), every step in integers as the fork computes it.
pub fn headroom_bytes(rate_bps: u64, delay_ns: u64) -> u64 {
    (rate_bps as u128 * delay_ns as u128 / 8 / 1_000_000_000) as u64 * 2 + 2 * 1048
}

/// Applies the ConWeave keys to `config`.
pub(super) fn apply(cfg: &HpccConfig, topo: &Topology, config: &mut SimConfig) -> Result<()> {
    let m = &cfg.conweave;
    let Some(lb) = path_selection(m.lb_mode) else {
        let msg = format!(
            "{}: the ConWeave artifact runs 0 (ECMP), 2 (DRILL), 3 (CONGA), 6 (LetFlow) and 9 (ConWeave), and \
             aborts on any other mode",
            m.lb_mode
        );
        return Err(bad(cfg, "LB_MODE", &msg));
    };
    if matches!(cfg.cc_mode, CcMode::None | CcMode::Blitz) {
        return Err(bad(
            cfg,
            "CC_MODE",
            "an rdmalab extension of the reference dialect, not a mode of the ConWeave artifact",
        ));
    }
    if lb == PathSelection::Conweave && cfg.cc_mode != CcMode::Dcqcn {
        let msg = "LB_MODE 9 (ConWeave) runs with CC_MODE 1 (DCQCN) only: the ConWeave artifact exits otherwise";
        return Err(bad(cfg, "CC_MODE", msg));
    }
    if cfg.line_of("BUFFER_SIZE").is_none() || cfg.buffer_size_mb == 0 {
        let msg =
            "missing or 0: the ConWeave artifact's switches then have no buffer (its run.py always writes it, in MB)";
        return Err(bad(cfg, "BUFFER_SIZE", msg));
    }
    if lb == PathSelection::Conga {
        if let Err(why) = crate::fabric::lb::conga::Conga::new(topo, &config.lb) {
            let file = cfg.topology_file.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
            let msg = format!(
                "3 (CONGA) on {file}: {why}. The ConWeave artifact also runs CONGA on three-tier fat trees \
                 (scratch/network-load-balance.cc, lines 1500-1650: paths of up to four hops), which the \
                 conweave dialect does not model; LB_MODE 0, 2, 6 and 9 run there"
            );
            return Err(bad(cfg, "LB_MODE", &msg));
        }
    }
    config.path_selection = lb;
    let l = &mut config.lb;
    l.conweave_tx_expiry = m.tx_expiry;
    l.conweave_reply_extra = m.reply_extra;
    l.conweave_path_pause = m.path_pause;
    l.conweave_flush_extra = m.extra_voq_flush;
    l.conweave_default_wait = m.default_voq_wait;
    // The artifact holds a rerouted packet before the switch admits it (`conweave-routing.cc`).
    l.conweave_admit_on_release = true;
    config.lossless = m.enable_pfc;
    config.irn = m.enable_irn.then(crate::rnic::IrnConfig::default);
    config.ack_prio_at_switches = true;
    config.seed = m.random_seed;
    config.stop_time = m.flowgen_stop + Time::from_ms(10_000);
    let headroom = topo
        .links
        .iter()
        .filter(|k| !topo.is_host(k.a) || !topo.is_host(k.b))
        .map(|k| headroom_bytes(k.rate.0, k.delay.0 / Time::PS_PER_NS))
        .max();
    config.pfc_headroom_bytes = headroom;
    if let Some(ev) = config.link_events.first_mut() {
        // The reference's LINK_DOWN counts from 2 s; the fork's from FLOWGEN_START_TIME.
        ev.at = Time(ev.at.0 - Time::from_ms(2_000).0 + m.flowgen_start.0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn star() -> Topology {
        use crate::ids::NodeId;
        let mut t = Topology::new(3, &[NodeId(0)]);
        for h in [1, 2] {
            t.add_link(NodeId(0), NodeId(h), crate::units::Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        }
        t
    }

    fn applied(text: &str) -> Result<SimConfig> {
        let cfg = crate::formats::hpcc_config::parse_config_as(
            text,
            std::path::Path::new("c.txt"),
            crate::formats::hpcc_config::Dialect::Conweave,
        )?;
        let mut config = SimConfig {
            link_events: vec![crate::config::LinkEvent {
                at: Time::from_ms(2_000) + Time::from_us(7),
                a: crate::ids::NodeId(0),
                b: crate::ids::NodeId(1),
                up: false,
            }],
            ..SimConfig::default()
        };
        apply(&cfg, &star(), &mut config)?;
        Ok(config)
    }

    #[test]
    fn the_keys_reach_the_run_in_their_units() {
        let text = "BUFFER_SIZE 9\nLB_MODE 9\nENABLE_PFC 0\nENABLE_IRN 1\nCONWEAVE_TX_EXPIRY_TIME 300\n\
                    CONWEAVE_REPLY_TIMEOUT_EXTRA 4\nCONWEAVE_PATH_PAUSE_TIME 16\nCONWEAVE_EXTRA_VOQ_FLUSH_TIME 64\n\
                    CONWEAVE_DEFAULT_VOQ_WAITING_TIME 600\nFLOWGEN_START_TIME 3.0\nFLOWGEN_STOP_TIME 3.1\nRANDOM_SEED 5\n";
        let c = applied(text).unwrap();
        assert_eq!(c.path_selection, PathSelection::Conweave);
        let l = &c.lb;
        assert_eq!(
            (l.conweave_tx_expiry, l.conweave_reply_extra, l.conweave_path_pause),
            (Time::from_us(300), Time::from_us(4), Time::from_us(16))
        );
        assert_eq!((l.conweave_flush_extra, l.conweave_default_wait), (Time::from_us(64), Time::from_us(600)));
        assert!(l.conweave_admit_on_release && c.ack_prio_at_switches && !c.lossless && c.irn.is_some());
        assert_eq!((c.seed, c.pfc_headroom_bytes), (5, Some(27_096)));
        assert_eq!(c.stop_time, Time::from_ms(13_100), "FLOWGEN_STOP_TIME + 10 s");
        assert_eq!(c.link_events[0].at, Time::from_ms(3_000) + Time::from_us(7), "LINK_DOWN from FLOWGEN_START_TIME");
        let e = applied("BUFFER_SIZE 9\nLB_MODE 5\n").unwrap_err().to_string();
        assert!(e.contains("c.txt:2: field `LB_MODE`"), "{e}");
        let e = applied("LB_MODE 9\n").unwrap_err().to_string();
        assert!(e.contains("field `BUFFER_SIZE`") && e.contains("no buffer"), "{e}");
    }

    #[test]
    fn conga_off_a_leaf_spine_is_refused_naming_lb_mode() {
        use crate::ids::NodeId;
        // Hosts 0 and 1 under leaves 2 and 3, which meet through switches 4 and 5: three tiers.
        let mut t = Topology::new(6, &[NodeId(2), NodeId(3), NodeId(4), NodeId(5)]);
        for (a, b) in [(0, 2), (1, 3), (2, 4), (4, 5), (5, 3)] {
            t.add_link(NodeId(a), NodeId(b), crate::units::Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        }
        let text = "TOPOLOGY_FILE config/fat_k8_100G_OS2.txt\nBUFFER_SIZE 9\nLB_MODE 3\n";
        let cfg = crate::formats::hpcc_config::parse_config_as(
            text,
            std::path::Path::new("c.txt"),
            crate::formats::hpcc_config::Dialect::Conweave,
        )
        .unwrap();
        let e = apply(&cfg, &t, &mut SimConfig::default()).unwrap_err().to_string();
        assert!(e.contains("c.txt:3: field `LB_MODE`: 3 (CONGA) on config/fat_k8_100G_OS2.txt"), "{e}");
        assert!(e.contains("three-tier fat trees"), "{e}");
        assert_eq!(applied("BUFFER_SIZE 9\nLB_MODE 3\n").unwrap().path_selection, PathSelection::Conga);
    }

    #[test]
    fn the_forks_headroom_and_modes() {
        // 100 Gb/s and 1 µs, the artifact's links: 2 × 12,500 + 2 × 1,048.
        assert_eq!(headroom_bytes(100_000_000_000, 1_000), 27_096);
        assert_eq!(path_selection(9), Some(PathSelection::Conweave));
        assert_eq!(path_selection(1), None);
    }
}
