//! Building a `Simulation`: validating the scenario and laying out the arenas.

use std::collections::HashMap;

use super::mech::dcqcn_timers::DcqcnShortcuts;
use super::mech::{Mechanisms, Parts};
use super::validate::{check_completable, validate_config, validate_flows};
use super::{Event, SimConfig, Simulation};
use crate::cc::CcGroup;
use crate::engine::{stream, EventQueue, StreamKind};
use crate::error::{Error, Result};
use crate::fabric::arbitration::{EgressArbitration, InputArbiter};
use crate::fabric::{IntSlab, MmuConfig, PortState, SwitchMmu, TxClock};
use crate::ids::{FlowId, NicId, NodeId, PortId, SwitchId};
use crate::rnic::transport::Transport;
use crate::rnic::{Nic, QpCache};
use crate::stats::ideal;
use crate::stats::Counters;
use crate::topology::routing::Routes;
use crate::topology::{NodeKind, Topology};
use crate::units::Time;
use crate::workload::attacks::HostApp;
use crate::workload::FlowSpec;

impl Simulation {
    /// Validates the scenario and builds the world. Flows must be sorted by start time.
    pub fn new(topo: Topology, flows: Vec<FlowSpec>, cfg: SimConfig) -> Result<Simulation> {
        Simulation::with_apps(topo, flows, &[], vec![crate::tenancy::DEFAULT_TENANT.into()], cfg)
    }

    /// Like `new`, with the host applications that carry the flows whose `app` names them
    /// and the tenants' names (index 0 first).
    pub fn with_apps(
        topo: Topology,
        flows: Vec<FlowSpec>,
        apps: &[HostApp],
        tenant_names: Vec<String>,
        cfg: SimConfig,
    ) -> Result<Simulation> {
        validate_config(&cfg)?;
        if topo.egress_by_destination && !apps.is_empty() {
            // Their timers kick a host's first NIC only (`sim/host/egress.rs`).
            let msg = "hosts with NVLink carry flows and jobs (collectives, SimAI, htsim); host applications are not supported on them";
            return Err(Error::scenario("topology.nvlink_rate", msg));
        }
        let mut routes = if cfg.partial_routes {
            Routes::compute_without_down_links(&topo, cfg.neighbor_order, &|_| true)?
        } else {
            Routes::compute(&topo, cfg.neighbor_order)?
        };
        routes.set_path_selection(cfg.path_selection);
        validate_flows(&topo, &flows, apps.len())?;
        Mechanisms::validate_flows(&cfg, &flows)?;
        let mut ports = build_ports(&topo);
        let max_packet = (cfg.mtu + cfg.header_bytes + 128).max(2048) as usize;
        let clock = TxClock::new(cfg.timing, topo.links.iter().map(|l| l.rate), max_packet);
        for p in &mut ports {
            p.rate_class = clock.class_of(p.rate);
        }
        let (switch_of, mmus, ecn_rngs) = build_switches(&topo, &cfg)?;
        let warnings = super::warnings::scenario_warnings(&topo, &flows, &cfg, &mmus);
        let (nic_of, nics) = build_nics(&topo, &cfg)?;
        let error_rngs = Mechanisms::error_streams(&topo, &cfg);
        mark_port_roles(&mut ports, &topo, &error_rngs, &switch_of, &nic_of);
        if let Some(t) = &cfg.classes {
            // DWRR quantum: the largest data packet, so that every turn sends one.
            let quantum = cfg.data_wire(cfg.mtu);
            for p in ports.iter_mut().filter(|p| !p.on_host) {
                p.classes = Some(Box::new(t.port_state(quantum)));
            }
        }
        let input_fair = cfg.egress_arbitration == EgressArbitration::InputFair;
        if input_fair {
            // DRR quantum: the largest data packet, so that every turn sends one.
            let quantum = cfg.data_wire(cfg.mtu);
            for p in ports.iter_mut().filter(|p| !p.on_host) {
                let inputs = topo.nodes[p.node.idx()].ports.len();
                p.arbiter = Some(Box::new(InputArbiter::new(inputs, quantum)));
            }
        }
        // Switch egresses with a mechanism's hook take the out-of-line path (`switch_kick`),
        // and so do those of m4's pools (only that path's admission tests for them).
        let m4_pools = matches!(cfg.mmu_rule, crate::fabric::MmuRule::M4 { .. });
        let special = super::mech::special_egress(&cfg) || m4_pools;
        for p in ports.iter_mut().filter(|p| !p.on_host) {
            p.special = special;
        }
        let ideal = ideal_fcts(&topo, &routes, &flows, &cfg);
        check_completable(&flows, &ideal)?;
        let needs_rtt = cfg.window.enabled || cfg.cc.needs_int();
        let global_rtt_bdp = match cfg.global_path {
            _ if !(needs_rtt && cfg.window.global) => (Time::ZERO, 0),
            Some(given) => given,
            None => global_rtt_bdp(&topo, &routes, &cfg),
        };
        let total_delay = Time(topo.links.iter().map(|l| l.delay.0).fold(0u64, u64::saturating_add));
        // An ACK crosses at least two links after its packet is sent.
        let min_ack = Time(topo.links.iter().map(|l| l.delay.0).min().unwrap_or(0).saturating_mul(2));
        // A round trip crosses four links where every host hangs off a switch, two otherwise.
        let host_to_host = topo.links.iter().any(|l| topo.is_host(l.a) && topo.is_host(l.b));
        let min_rtt = Time(min_ack.0.saturating_mul(if host_to_host { 1 } else { 2 }));
        let dcqcn = DcqcnShortcuts::choose(&cfg, min_ack, min_rtt, cfg.threads.is_some());
        let watch = super::watch::Watch::new(&cfg, ports.len(), total_delay, flows.first().map(|f| f.start));
        let ecn_of_class =
            cfg.ecn.as_ref().map_or(Vec::new(), |e| clock.rates().iter().map(|&r| e.for_rate_or_scaled(r)).collect());
        let irn_path_bdp = || self::global_rtt_bdp(&topo, &routes, &cfg).1;
        let parts = Parts {
            topo: &topo,
            cfg: &cfg,
            ports: &mut ports,
            mmus: &mmus,
            nic_rates: nics.iter().map(|n| n.rate).collect(),
            irn_path_bdp: &irn_path_bdp,
            tenant_names,
        };
        let mut mech = Mechanisms::build(parts, error_rngs)?;
        if let (true, crate::cc::CcConfig::Dcqcn(p)) = (dcqcn.virtual_checks(), &cfg.cc) {
            let checks = super::mech::dcqcn_checks::IdleChecks::new(topo.nodes.len(), p.decrease_interval);
            mech.idle_checks = Some(Box::new(checks));
        }
        let host_tx_skips = mech.ib.is_none() && mech.irn.is_none() && mech.rnr.is_none();
        let host_tx_skips = host_tx_skips && cfg.defense == crate::tenancy::Defense::None;
        let mut sim = Simulation {
            now: Time::ZERO,
            queue: event_queue_for(&topo, &clock, max_packet as u32),
            origin_order: false,
            real_now: Time::ZERO,
            part: None,
            cfg,
            topo,
            routes,
            ports,
            ecn_of_class,
            clock,
            switch_of,
            nic_of,
            mmus,
            ecn_rngs,
            nics,
            qps: Vec::new(),
            free_qps: Vec::new(),
            live_qps: 0,
            runtime_qps: Default::default(),
            groups: Vec::<CcGroup>::new(),
            free_groups: Vec::new(),
            group_of: HashMap::new(),
            app_posts: Vec::new(),
            int: IntSlab::default(),
            packets: Default::default(),
            flows,
            ideal,
            next_flow: 0,
            flows_done: 0,
            records: Vec::new(),
            spill: None,
            unreachable: Vec::new(),
            last_completion: Time::ZERO,
            qp_flow: Vec::new(),
            trace: None,
            qlen_monitor: None,
            pfc_events: Vec::new(),
            counters: Counters::default(),
            queue_samples: Vec::new(),
            sampler: Default::default(),
            global_rtt_bdp,
            dcqcn,
            host_tx_skips,
            watch,
            warnings,
            apps: Default::default(),
            all_done_but_idle_apps: false,
            hostm: None,
            mech,
            #[cfg(feature = "event-profile")]
            profile: Default::default(),
            flow_rx: Vec::new(),
            flow_timeouts: Vec::new(),
        };
        if sim.cfg.threads.is_some() {
            sim.use_origin_order();
            sim.defer_switch_dequeues();
            // Flow `i`'s QP is slot `i` in every partition (the receiver's state lives there;
            // its ends, by which the receiver keys its receive queue, its tenant, which the
            // receiver meters, and its transport are known from the flow list).
            sim.qps = sim
                .flows
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    // A plain flow's receiver counts under its flow (`RxState::flow`).
                    let flow = if f.app.is_none() { FlowId::new(i) } else { FlowId::NONE };
                    let sends = f.app.is_none() && f.verb == crate::workload::Verb::Send;
                    let (unreliable, uet) = (!f.transport.reliable(), f.transport == Transport::Uet);
                    let rx = crate::rnic::RxState { flow, sends, unreliable, uet, ..Default::default() };
                    let (src, dst, tenant, transport) = (f.src, f.dst, f.tenant, f.transport);
                    crate::rnic::Qp { src, dst, tenant, transport, rx, ..crate::rnic::Qp::placeholder() }
                })
                .collect();
            // Every partition names a packet's flow in its trace, the sender's or not.
            sim.qp_flow = (0..sim.flows.len()).map(FlowId::new).collect();
        }
        sim.set_up_attack_apps(apps);
        if let Some(first) = sim.flows.first() {
            sim.queue.push(first.start, Event::FlowArrival);
        }
        sim.schedule_first_sample()?;
        super::failures::schedule_link_events(&sim.cfg.link_events, &sim.topo, &mut sim.queue)?;
        sim.schedule_qlen_monitor();
        Ok(sim)
    }
}

/// Copies what the per-packet handlers ask of a port's node and link into the port itself,
/// which they touch anyway: a side-table lookup per packet costs a cache miss.
fn mark_port_roles(
    ports: &mut [PortState],
    topo: &Topology,
    error_rngs: &[Option<crate::engine::Rng>],
    switch_of: &[SwitchId],
    nic_of: &[NicId],
) {
    for i in 0..ports.len() {
        let (node, peer) = (ports[i].node.idx(), ports[i].peer.idx());
        ports[i].on_host = topo.is_host(ports[i].node);
        ports[i].unit = if ports[i].on_host { nic_of[node].0 + nic_offset(topo, node, i) } else { switch_of[node].0 };
        ports[i].peer_on_host = topo.is_host(ports[peer].node);
        ports[i].peer_lossy = error_rngs[peer].is_some();
    }
}

/// An event queue whose buckets fit this fabric: about 1/64 of the shortest
/// full-packet transmission wide, and a ring spanning a few times the longest hop (link
/// delay plus transmission), where nearly every packet event is scheduled. Speed only:
/// the order of events never depends on these choices (`engine::queue`).
fn event_queue_for(topo: &Topology, clock: &TxClock, packet_bytes: u32) -> EventQueue<Event> {
    let tx = |rate| clock.tx(clock.class_of(rate), rate, packet_bytes).0;
    let shortest_tx = topo.links.iter().map(|l| tx(l.rate)).min().unwrap_or(1 << 16);
    let longest_hop = topo.links.iter().map(|l| l.delay.0 + tx(l.rate)).max().unwrap_or(1 << 20);
    let shift = (shortest_tx / 64).max(1).ilog2().clamp(6, 24);
    let slots = ((4 * longest_hop) >> shift).clamp(1024, 1 << 16) as usize;
    EventQueue::with_resolution(shift, slots)
}

fn build_ports(topo: &Topology) -> Vec<PortState> {
    topo.ports
        .iter()
        .map(|p| {
            let link = &topo.links[p.link.idx()];
            PortState::new(p.node, p.peer, p.ifindex - 1, link.rate, link.delay)
        })
        .collect()
}

type SwitchParts = (Vec<SwitchId>, Vec<SwitchMmu>, Vec<crate::engine::Rng>);

fn build_switches(topo: &Topology, cfg: &SimConfig) -> Result<SwitchParts> {
    let nic_rate = topo.hosts().next().map(|h| topo.nic_rate(h)).unwrap_or_default();
    let mmu_cfg = MmuConfig {
        buffer: cfg.buffer_bytes,
        reserve: cfg.reserve_bytes,
        resume_offset: cfg.resume_offset_bytes,
        lossless: cfg.lossless,
        pfc_classes: cfg.classes.as_ref().map(|t| t.pfc_mask()),
        nic_rate,
        serialisation: 3 * cfg.data_wire(cfg.mtu) as u64 + cfg.pfc_bytes as u64,
        headroom: cfg.pfc_headroom_bytes,
        rule: cfg.mmu_rule,
    };
    let mmu_cfg = super::mech::ib::mmu_config(cfg, mmu_cfg);
    let mut switch_of = vec![SwitchId::NONE; topo.len()];
    let mut mmus = Vec::new();
    let mut rngs = Vec::new();
    for s in topo.switches() {
        let node = &topo.nodes[s.idx()];
        let ports: Vec<_> = node.ports.iter().map(|&p| (topo.port_rate(p), topo.port_delay(p).ns())).collect();
        if let Some(ecn) = &cfg.ecn {
            for &p in &node.ports {
                let rate = topo.port_rate(p);
                if ecn.for_rate_or_scaled(rate).is_none() {
                    return Err(Error::scenario("ecn", format!("no ECN thresholds for {rate} (switch {s})")));
                }
            }
        }
        switch_of[s.idx()] = SwitchId::new(mmus.len());
        mmus.push(SwitchMmu::new(mmu_cfg, &ports));
        rngs.push(stream(cfg.seed, StreamKind::Ecn, s.0 as u64));
    }
    Ok((switch_of, mmus, rngs))
}

fn build_nics(topo: &Topology, cfg: &SimConfig) -> Result<(Vec<NicId>, Vec<Nic>)> {
    let mut nic_of = vec![NicId::NONE; topo.len()];
    let mut nics = Vec::new();
    for h in topo.hosts() {
        let node = &topo.nodes[h.idx()];
        debug_assert_eq!(node.kind, NodeKind::Host);
        let Some(&first) = node.ports.first() else {
            return Err(Error::Topology(format!("host {h} has no link")));
        };
        nic_of[h.idx()] = NicId::new(nics.len());
        // One NIC per port where hosts send by destination (NVLink beside the rail NIC),
        // numbered in port order: a port's NIC is its host's first plus its place.
        let own: &[PortId] = if topo.egress_by_destination { &node.ports } else { &[first] };
        for &port in own {
            let mut nic = Nic::new(h, port, topo.port_rate(port));
            nic.cache = cfg.qp_cache.map(QpCache::new);
            if cfg.nic_arbitration == crate::rnic::NicArbitration::Tenant {
                nic.by_tenant = Some(Default::default());
            }
            nics.push(nic);
        }
    }
    Ok((nic_of, nics))
}

/// The place of port `port` among `node`'s NICs: 0 unless hosts have a NIC per port.
fn nic_offset(topo: &Topology, node: usize, port: usize) -> u32 {
    if !topo.egress_by_destination {
        return 0;
    }
    topo.nodes[node].ports.iter().position(|p| p.idx() == port).unwrap_or(0) as u32
}

/// The reference's ideal FCT of every flow, along the first shortest path.
fn ideal_fcts(topo: &Topology, routes: &Routes, flows: &[FlowSpec], cfg: &SimConfig) -> Vec<Time> {
    let mut paths: HashMap<(NodeId, NodeId), Vec<PortId>> = HashMap::new();
    flows
        .iter()
        .map(|f| {
            let path = paths.entry((f.src, f.dst)).or_insert_with(|| routes.first_path(topo, f.src, f.dst));
            ideal::ideal_fct(topo, path, f.size, cfg.mtu as u64, cfg.header_bytes as u64)
        })
        .collect()
}

/// The largest base RTT over all host pairs and the matching BDP at the NIC rate.
fn global_rtt_bdp(topo: &Topology, routes: &Routes, cfg: &SimConfig) -> (Time, u64) {
    let max_rtt = crate::stats::max_rtt::max_base_rtt(topo, routes, cfg.mtu as u64);
    let rate = topo.hosts().next().map(|h| topo.nic_rate(h)).unwrap_or_default();
    (max_rtt, bdp_bytes(max_rtt, rate))
}

/// Bytes a link of `rate` carries during `rtt` (whole ns, as the reference computes it).
pub(super) fn bdp_bytes(rtt: Time, rate: crate::units::Rate) -> u64 {
    (rtt.ns() as u128 * rate.0 as u128 / 8 / 1_000_000_000) as u64
}
