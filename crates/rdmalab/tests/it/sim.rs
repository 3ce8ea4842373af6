//! End-to-end physics checks of the simulator against closed forms.
//!
//! The closed form of a lone flow (docs/model/links-and-switches.md derives it): on a path of `h` links of
//! equal rate, packets of wire sizes w_0..w_{N-1} leave the NIC back to back; each further
//! hop adds one store-and-forward of the largest packet, so the last byte reaches the
//! receiver at Σ tx(w_j) + (h-1)·tx(max w) + h·d, and its ACK needs h·(tx(ack) + d) more.
//! One correction: the ACK of the next-to-last packet leaves tx(w_last) before the last
//! packet has fully arrived, so a last packet shorter than an ACK waits for the receiver's
//! port: add max(0, tx(ack) - tx(w_last)) when there are at least two packets.

use rdmalab::sim::{SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::topology::Topology;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const D: Time = Time::from_ns(1000);

fn lone_flow_closed_form(size: u64, hops: u64, rate: Rate, cfg: &SimConfig) -> Time {
    let mtu = cfg.mtu as u64;
    let full = size / mtu;
    let rest = size % mtu;
    let mut wires: Vec<u64> = vec![mtu + cfg.header_bytes as u64; full as usize];
    if rest > 0 {
        wires.push(rest + cfg.header_bytes as u64);
    }
    let sum: u64 = wires.iter().map(|&w| rate.tx_time(w).0).sum();
    let max = wires.iter().copied().max().unwrap();
    let data = sum + (hops - 1) * rate.tx_time(max).0 + hops * D.0;
    let tx_ack = rate.tx_time(cfg.ack_bytes as u64).0;
    let ack = hops * (tx_ack + D.0);
    let last = rate.tx_time(*wires.last().unwrap()).0;
    let ack_wait = if wires.len() >= 2 { tx_ack.saturating_sub(last) } else { 0 };
    Time(data + ack_wait + ack)
}

fn run_one(topo: Topology, flows: Vec<FlowSpec>, cfg: SimConfig) -> rdmalab::sim::Results {
    let mut sim = Simulation::new(topo, flows, cfg).expect("valid scenario");
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    sim.results().expect("conservation holds")
}

#[test]
fn lone_flow_matches_closed_form_on_a_star() {
    for size in [1u64, 11, 999, 1000, 1001, 1012, 1013, 20_000, 1_000_000] {
        let topo = builders::star(2, Rate::gbps(100), D).unwrap();
        let cfg = SimConfig::default();
        let expect = lone_flow_closed_form(size, 2, Rate::gbps(100), &cfg);
        let flow = FlowSpec::new(NodeId(0), NodeId(1), size, Time::from_us(5));
        let r = run_one(topo, vec![flow], cfg);
        assert_eq!(r.records.len(), 1);
        assert_eq!(r.records[0].fct, expect, "size {size}");
    }
}

#[test]
fn lone_flow_matches_closed_form_across_a_fat_tree() {
    // k = 4, all links 100G: hosts 0 and 15 sit in different pods, 6 links apart.
    let topo = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), D).unwrap();
    let cfg = SimConfig::default();
    let size = 300_000;
    let expect = lone_flow_closed_form(size, 6, Rate::gbps(100), &cfg);
    let r = run_one(topo, vec![FlowSpec::new(NodeId(0), NodeId(15), size, Time::ZERO)], cfg);
    assert_eq!(r.records[0].fct, expect);
}

#[test]
fn large_lone_flow_is_within_one_percent_of_the_reference_ideal() {
    let topo = builders::star(2, Rate::gbps(100), D).unwrap();
    let r = run_one(topo, vec![FlowSpec::new(NodeId(0), NodeId(1), 1_000_000, Time::ZERO)], SimConfig::default());
    let rec = r.records[0];
    let rel = (rec.fct.0 as f64 / rec.ideal.0 as f64 - 1.0).abs();
    assert!(rel < 0.01, "fct {} vs ideal {}", rec.fct, rec.ideal);
}

fn incast(senders: usize, size: u64, lossless: bool) -> rdmalab::sim::Results {
    let topo = builders::star(senders + 1, Rate::gbps(100), D).unwrap();
    let flows = (1..=senders).map(|s| FlowSpec::new(NodeId(s as u32), NodeId(0), size, Time::ZERO)).collect();
    let cfg = SimConfig { buffer_bytes: 2 * 1024 * 1024, lossless, ecn: None, ..SimConfig::default() };
    run_one(topo, flows, cfg)
}

#[test]
fn incast_with_pfc_pauses_and_loses_nothing() {
    for senders in [2, 8] {
        let size = 2_000_000;
        let r = incast(senders, size, true);
        assert_eq!(r.records.len(), senders);
        assert_eq!(r.counters.drops, 0);
        assert!(r.counters.pauses > 0, "{senders} senders must trigger PFC");
        assert_eq!(r.counters.payload_bytes_delivered, senders as u64 * size);
        let paused: u64 = r.ports.iter().map(|p| p.paused_ps).sum();
        assert!(paused > 0);
        assert!(!r.pfc_events.is_empty());
    }
}

#[test]
fn links_without_delay_still_lose_nothing_under_pfc() {
    // Three times the bytes in flight during one delay (the reference's headroom) is no
    // headroom at all on a zero-delay link; the packets being serialised at both ends when
    // the PAUSE is decided still arrive. Before the floor of three data packets this fat tree
    // incast through a 1 MB buffer dropped tens of thousands of packets in lossless mode.
    let topo = builders::fat_tree(4, Rate::gbps(100), Rate::gbps(100), Time::ZERO).unwrap();
    let flows = (4..16).map(|s| FlowSpec::new(NodeId(s), NodeId(0), 300_000, Time::ZERO)).collect();
    let cfg = SimConfig { buffer_bytes: 1 << 20, ..SimConfig::default() };
    let r = run_one(topo, flows, cfg);
    assert_eq!(r.counters.drops, 0);
    assert!(r.counters.pauses > 0, "the incast must pause links");
}

#[test]
fn incast_without_pfc_drops_and_go_back_n_recovers() {
    for senders in [2, 8] {
        let size = 2_000_000;
        let r = incast(senders, size, false);
        assert_eq!(r.records.len(), senders, "every flow completes");
        assert!(r.counters.drops > 0);
        assert_eq!(r.counters.pauses, 0);
        assert_eq!(r.counters.payload_bytes_delivered, senders as u64 * size);
        assert!(r.counters.payload_bytes_sent > senders as u64 * size, "retransmissions happened");
    }
}

#[test]
fn qps_with_distinct_source_ports_spread_over_spines() {
    // 2 leaves, 4 spines, 1 host per leaf: host 0 -> host 1 crosses one of 4 spines.
    let topo = builders::leaf_spine(2, 4, 1, Rate::gbps(100), Rate::gbps(100), D).unwrap();
    let leaf0 = NodeId(2);
    let uplinks: Vec<usize> = topo.nodes[leaf0.idx()]
        .ports
        .iter()
        .filter(|p| !topo.is_host(topo.ports[p.idx()].peer_node))
        .map(|p| p.idx())
        .collect();
    assert_eq!(uplinks.len(), 4);
    let flows: Vec<FlowSpec> = (0..64)
        .map(|i| FlowSpec { sport: Some(20000 + i), ..FlowSpec::new(NodeId(0), NodeId(1), 10_000, Time::ZERO) })
        .collect();
    let r = run_one(topo.clone(), flows, SimConfig::default());
    for &u in &uplinks {
        assert!(r.ports[u].tx_packets > 0, "spine uplink {u} unused by 64 QPs");
    }
    // One QP: exactly one uplink carries its packets.
    let r = run_one(topo, vec![FlowSpec::new(NodeId(0), NodeId(1), 100_000, Time::ZERO)], SimConfig::default());
    let used = uplinks.iter().filter(|&&u| r.ports[u].tx_packets > 0).count();
    assert_eq!(used, 1);
}

/// Host 0 -> host 1 across 2 leaves and 4 spines, hosts owning 8 addresses; the flows
/// share source and destination ports and send from the given address indices.
fn leaf_spine_from_addresses(indices: &[u32]) -> String {
    let flows: Vec<String> = indices
        .iter()
        .map(|k| format!("{{ src = 0, dst = 1, size = 100000, sport = 20000, src_ip_index = {k} }}"))
        .collect();
    format!(
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 4\nhosts_per_leaf = 1\nips_per_host = 8\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{}]\n",
        flows.join(", ")
    )
}

#[test]
fn qps_with_one_source_port_but_different_source_addresses_take_different_spines() {
    let parse = |text: &str| rdmalab::scenario::Scenario::from_toml(text, std::path::Path::new("ips.toml"));
    let s = parse(&leaf_spine_from_addresses(&[0])).unwrap();
    let (ips, dip) = (s.topology.nodes[0].ips.clone(), s.topology.nodes[1].ips[0]);
    assert_eq!(ips.len(), 8);
    assert!(ips.iter().all(|&ip| rdmalab::formats::fct::ip_to_node(ip) == NodeId(0)), "FCT files still name host 0");
    // Leaf 0 (node 2) hashes (sip, dip, sport, dport) over its 4 uplinks: pick two addresses
    // of host 0 that it sends to different spines.
    let spine = |sip: u32| rdmalab::topology::ecmp::ecmp_hash(sip, dip, 20000, 100, 2) % 4;
    let b = (1..8).find(|&k| spine(ips[k]) != spine(ips[0])).expect("some address hashes elsewhere") as u32;
    let leaf0 = NodeId(2);
    let uplinks_used = |indices: &[u32]| {
        let s = parse(&leaf_spine_from_addresses(indices)).unwrap();
        let uplinks: Vec<usize> = s.topology.nodes[leaf0.idx()]
            .ports
            .iter()
            .filter(|p| !s.topology.is_host(s.topology.ports[p.idx()].peer_node))
            .map(|p| p.idx())
            .collect();
        assert_eq!(uplinks.len(), 4);
        let r = run_one(s.topology, s.flows, s.config);
        let sips: Vec<u32> = r.records.iter().map(|x| x.sip).collect();
        (uplinks.iter().filter(|&&u| r.ports[u].tx_packets > 0).count(), sips)
    };
    let (used, mut sips) = uplinks_used(&[0, b]);
    sips.sort();
    assert_eq!((used, sips), (2, vec![ips[0], ips[b as usize]]));
    // The same two QPs from one address: one 5-tuple, one spine.
    assert_eq!(uplinks_used(&[b, b]).0, 1);
    // An address the host does not own is refused, naming the entry and its line.
    let err = parse(&leaf_spine_from_addresses(&[0, 8])).unwrap_err().to_string();
    assert!(err.starts_with("ips.toml:9: field `traffic[0].flows[1].src_ip_index`"), "{err}");
}

#[test]
fn flows_built_in_code_may_only_send_from_their_hosts_addresses() {
    let topo = builders::star(3, Rate::gbps(100), D).unwrap();
    let other_hosts_ip = topo.nodes[2].ips[0];
    let mut f = FlowSpec::new(NodeId(0), NodeId(1), 1000, Time::ZERO);
    f.src_ip = Some(other_hosts_ip);
    let err = Simulation::new(topo, vec![f], SimConfig::default()).unwrap_err().to_string();
    assert!(err.contains("flows[0].src_ip") && err.contains("does not own"), "{err}");
}

#[test]
fn ack_interval_sends_one_ack_per_n_packets_and_on_the_last() {
    // 103 packets with an ACK every 4: 25 ACKs for packets 4..100 plus one for the last.
    let topo = builders::star(2, Rate::gbps(100), D).unwrap();
    let receiver_port = topo.nodes[1].ports[0].idx();
    let cfg = SimConfig { ack_interval: 4, ..SimConfig::default() };
    let r = run_one(topo, vec![FlowSpec::new(NodeId(0), NodeId(1), 102_500, Time::ZERO)], cfg);
    assert_eq!(r.ports[receiver_port].tx_packets, 26);
}

#[test]
fn a_qp_is_released_once_its_unanswered_packets_have_arrived() {
    // With an ACK every 4 packets most data packets get no reply: the receiver must still
    // count each out of the network (`Qp::in_flight`), or a finished QP is never released
    // and every flow of a sequence keeps one alive. One flow at a time: one alive at most.
    let topo = builders::star(2, Rate::gbps(100), D).unwrap();
    let flows = (0..20).map(|i| FlowSpec::new(NodeId(0), NodeId(1), 102_500, Time::from_us(50 * i))).collect();
    let r = run_one(topo, flows, SimConfig { ack_interval: 4, ..SimConfig::default() });
    assert_eq!((r.counters.qps_opened, r.counters.qps_peak), (20, 1));
}

#[test]
fn qp_context_cache_misses_slow_down_many_qps() {
    // 32 QPs from one host: with a 16-entry cache cycling round robin, every packet misses.
    let run = |cache: Option<rdmalab::rnic::QpCacheConfig>| {
        let topo = builders::star(2, Rate::gbps(100), D).unwrap();
        let flows = (0..32).map(|_| FlowSpec::new(NodeId(0), NodeId(1), 50_000, Time::ZERO)).collect();
        let r = run_one(topo, flows, SimConfig { qp_cache: cache, ..SimConfig::default() });
        r.records.iter().map(|x| x.fct).max().unwrap()
    };
    let ideal = run(None);
    let fits =
        run(Some(rdmalab::rnic::QpCacheConfig { entries: 32, miss_penalty_ns: 1000, fetch: Default::default() }));
    let thrash =
        run(Some(rdmalab::rnic::QpCacheConfig { entries: 16, miss_penalty_ns: 1000, fetch: Default::default() }));
    // When all contexts fit, only the 32 first touches miss: at most 1 µs later.
    assert!(fits.0 - ideal.0 <= 1_000_000, "fits {fits} vs {ideal}");
    // Thrashing: 1,600 packets each wait 1 µs behind a fetch, 16 fetches overlapping at most;
    // the NIC can no longer keep the link busy (83.84 ns per packet).
    assert!(thrash.0 as f64 > 1.3 * ideal.0 as f64, "thrash {thrash} vs {ideal}");
}

#[test]
fn acks_behind_a_congested_downlink_wait_unless_switches_prioritise_them() {
    // Hosts 1 and 2 flood host 0's downlink; host 0 then sends one small message to host 3.
    // Its ACK returns through host 0's downlink: in the data queue it waits behind the
    // standing queue; in the strict-priority class it does not. The reference's switches do
    // the former whatever ACK_HIGH_PRIO says (docs/validation.md), and `rdmalab hpcc` follows.
    let run = |prio_at_switches: bool| {
        let topo = builders::star(4, Rate::gbps(100), D).unwrap();
        let flows = vec![
            FlowSpec::new(NodeId(1), NodeId(0), 2_000_000, Time::ZERO),
            FlowSpec::new(NodeId(2), NodeId(0), 2_000_000, Time::ZERO),
            FlowSpec::new(NodeId(0), NodeId(3), 1_000, Time::from_us(100)),
        ];
        let cfg = SimConfig { ack_prio_at_switches: prio_at_switches, ecn: None, ..SimConfig::default() };
        let r = run_one(topo, flows, cfg);
        r.records.iter().find(|x| x.src == NodeId(0)).unwrap().fct
    };
    let (shared, strict) = (run(false), run(true));
    // Alone: about 4.2 µs. Behind ~100 µs of standing queue at 100G it must take far longer.
    assert!(strict < Time::from_us(5), "prioritised ACK: {strict}");
    assert!(shared > Time::from_us(20), "ACK in the data queue: {shared}");
}
