//! Scenario settings that are valid but probably not what the user meant. Each warning says
//! what the run will do; `Simulation::warnings` hands them to the caller, and the command
//! line prints them before the run.

use std::collections::BTreeMap;

use super::watch::us;
use crate::fabric::SwitchMmu;
use crate::sim::SimConfig;
use crate::topology::Topology;
use crate::workload::FlowSpec;

/// Every warning of a scenario, in a fixed order.
pub(in crate::sim) fn scenario_warnings(
    topo: &Topology,
    flows: &[FlowSpec],
    cfg: &SimConfig,
    mmus: &[SwitchMmu],
) -> Vec<String> {
    let mut out = cfg.input_warnings.clone();
    out.extend(parallel_links(topo));
    out.extend(zero_pause_threshold(topo, cfg, mmus));
    out.extend(short_headroom(topo, cfg));
    out.extend(stop_before_every_flow(flows, cfg));
    out.extend(unused_partition_map(cfg));
    out
}

/// A partition map on a sequential run (`threads` absent or 1), which has no partitions.
fn unused_partition_map(cfg: &SimConfig) -> Option<String> {
    cfg.partition_map.as_ref()?;
    Some(
        "the scenario gives a partition_map but the run is sequential (threads absent or 1): the map \
         is not used; run with threads = 2 or more (or --threads) for the parallel engine"
            .into(),
    )
}

/// Two or more links between the same two nodes. The bottleneck builders (`topology::builders`) make them
/// on purpose; routing treats them as equal-cost next hops.
fn parallel_links(topo: &Topology) -> Vec<String> {
    // First whether any pair repeats, on one sorted array of pair keys: the map below holds a
    // list per pair, three million of them at a million hosts, where nearly always none repeats.
    let key = |l: &crate::topology::Link| u64::from(l.a.0.min(l.b.0)) << 32 | u64::from(l.a.0.max(l.b.0));
    let mut keys: Vec<u64> = topo.links.iter().map(key).collect();
    keys.sort_unstable();
    if keys.windows(2).all(|w| w[0] != w[1]) {
        return Vec::new();
    }
    drop(keys);
    let mut by_pair: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for (i, l) in topo.links.iter().enumerate() {
        by_pair.entry((l.a.0.min(l.b.0), l.a.0.max(l.b.0))).or_default().push(i);
    }
    by_pair
        .into_iter()
        .filter(|(_, links)| links.len() > 1)
        .map(|((a, b), links)| {
            let list: Vec<String> = links.iter().map(|i| format!("#{}", i + 1)).collect();
            format!(
                "nodes {a} and {b} are joined by {} links (links {} in file order): they are used as \
                 parallel equal-cost links, ECMP spreading flows over them",
                links.len(),
                list.join(", ")
            )
        })
        .collect()
}

/// A lossless switch whose buffer is all headroom and reserves: its PFC threshold is 0.
fn zero_pause_threshold(topo: &Topology, cfg: &SimConfig, mmus: &[SwitchMmu]) -> Option<String> {
    if !(1..crate::fabric::NUM_PRIOS).any(|q| cfg.pfc_on(q)) {
        return None; // no class pauses
    }
    let starved: Vec<_> = topo.switches().zip(mmus).filter(|(_, m)| m.threshold(0) == 0).map(|(s, _)| s).collect();
    let first = starved.first()?;
    Some(format!(
        "the switch buffer ({} bytes) is no larger than the PFC headroom and reserves of {} switch(es) \
         (first: node {first}): their pause threshold is 0, so every class pauses its upstream as soon \
         as its {}-byte reserve fills",
        cfg.buffer_bytes,
        starved.len(),
        cfg.reserve_bytes
    ))
}

/// A PFC headroom set by hand (`fabric.pfc_headroom_kb`) below what can still arrive after a
/// PAUSE on some switch port (`fabric::mmu::headroom_needed`): a lossless class may drop.
fn short_headroom(topo: &Topology, cfg: &SimConfig) -> Option<String> {
    let set = cfg.pfc_headroom_bytes?;
    let serialisation = 3 * cfg.data_wire(cfg.mtu) as u64 + cfg.pfc_bytes as u64;
    let need = |p: &crate::ids::PortId| {
        crate::fabric::mmu::headroom_needed(topo.port_rate(*p), topo.port_delay(*p).ns(), serialisation)
    };
    let switch_ports = topo.switches().flat_map(|s| topo.nodes[s.idx()].ports.iter());
    let most = switch_ports.map(need).max()?;
    (set < most).then(|| {
        format!(
            "fabric.pfc_headroom_kb gives every switch port {set} bytes of PFC headroom, less than the \
             {most} bytes that can still arrive after a PAUSE on the most exposed port (docs/model/pfc.md, \
             \"PFC headroom\"): a lossless class may drop packets, and the run then fails its lossless check"
        )
    })
}

/// A stop time at or before the first flow's start: the run simulates no flow.
fn stop_before_every_flow(flows: &[FlowSpec], cfg: &SimConfig) -> Option<String> {
    let first = flows.first()?.start;
    (cfg.stop_time <= first).then(|| {
        format!(
            "the stop time ({}) is at or before every flow's start (the first starts at {}): the run will \
             simulate no flow",
            us(cfg.stop_time),
            us(first)
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::error::Error;
    use crate::ids::NodeId;
    use crate::sim::{SimConfig, Simulation};
    use crate::topology::{builders, Topology};
    use crate::units::{Rate, Time};
    use crate::workload::FlowSpec;

    fn warnings(topo: Topology, flows: Vec<FlowSpec>, cfg: SimConfig) -> Vec<String> {
        Simulation::new(topo, flows, cfg).unwrap().warnings().to_vec()
    }

    fn one_flow(start: Time) -> Vec<FlowSpec> {
        vec![FlowSpec::new(NodeId(1), NodeId(2), 1000, start)]
    }

    #[test]
    fn an_ordinary_scenario_has_none() {
        let star = builders::star(3, Rate::gbps(100), Time::from_us(1)).unwrap();
        assert!(warnings(star, one_flow(Time::ZERO), SimConfig::default()).is_empty());
    }

    #[test]
    fn a_duplicate_link_is_a_parallel_link() {
        let mut t = Topology::new(4, &[NodeId(0), NodeId(3)]);
        for (a, b) in [(0, 1), (3, 2), (0, 3), (3, 0)] {
            t.add_link(NodeId(a), NodeId(b), Rate::gbps(100), Time::from_us(1), 0.0).unwrap();
        }
        let w = warnings(t, one_flow(Time::ZERO), SimConfig::default());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("nodes 0 and 3 are joined by 2 links (links #3, #4") && w[0].contains("parallel"));
    }

    #[test]
    fn a_stop_time_before_every_flow_runs_nothing() {
        let star = builders::star(3, Rate::gbps(100), Time::from_us(1)).unwrap();
        let cfg = SimConfig { stop_time: Time::from_us(5), ..SimConfig::default() };
        let w = warnings(star.clone(), one_flow(Time::from_us(5)), cfg.clone());
        assert!(w.len() == 1 && w[0].contains("no flow"), "{w:?}");
        assert!(warnings(star, one_flow(Time::from_us(4)), cfg).is_empty());
    }

    #[test]
    fn a_buffer_of_only_headroom_pauses_at_once() {
        // A 3-port switch at 100G, 1 us: 3 x 37,500 B of headroom and 3 x 4 KiB of reserve.
        let star = builders::star(3, Rate::gbps(100), Time::from_us(1)).unwrap();
        let w =
            warnings(star.clone(), one_flow(Time::ZERO), SimConfig { buffer_bytes: 124_788, ..SimConfig::default() });
        assert!(w.len() == 1 && w[0].contains("pause threshold is 0"), "{w:?}");
        let lossy = SimConfig { buffer_bytes: 124_788, lossless: false, ..SimConfig::default() };
        assert!(warnings(star.clone(), one_flow(Time::ZERO), lossy).is_empty());
        assert!(warnings(star, one_flow(Time::ZERO), SimConfig { buffer_bytes: 200_000, ..SimConfig::default() })
            .is_empty());
    }

    #[test]
    fn a_flow_that_cannot_finish_in_213_days_is_refused() {
        let slow = builders::star(3, Rate::mbps(1), Time::from_us(1)).unwrap();
        let big = vec![FlowSpec::new(NodeId(1), NodeId(2), 1 << 50, Time::ZERO)];
        let e = Simulation::new(slow.clone(), big, SimConfig::default()).unwrap_err();
        assert!(matches!(&e, Error::Scenario { field, .. } if field == "flows[0].size"), "{e}");
        let huge = vec![FlowSpec::new(NodeId(1), NodeId(2), u64::MAX, Time::ZERO)];
        let e = Simulation::new(slow, huge, SimConfig::default()).unwrap_err();
        assert!(e.to_string().contains("2^53"), "{e}");
    }
}
