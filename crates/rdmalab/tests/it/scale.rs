//! Scale: topologies past the reference's 65,536 hosts and past the old
//! nodes x hosts routing table, checked against the small cases they must equal.

use rdmalab::formats::fct::{read_fct, write_fct, FctLine};
use rdmalab::sim::{SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::topology::routing::{NeighborOrder, Routes};
use rdmalab::topology::{default_host_ip, host_of_ip};
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

const D: Time = Time::from_ns(1000);

#[test]
fn addresses_continue_past_the_references_65536_hosts() {
    // The reference's own range is unchanged ...
    assert_eq!(default_host_ip(0), 0x0B00_0001);
    assert_eq!(default_host_ip(65_535), 0x0BFF_FF01);
    // ... and the count goes on into 12.0.0.1, read back to the same id.
    assert_eq!(default_host_ip(65_536), 0x0C00_0001);
    for id in [0, 255, 256, 65_535, 65_536, 101_305, rdmalab::topology::MAX_HOST_ID] {
        assert_eq!(host_of_ip(default_host_ip(id)), id, "host {id}");
    }
    assert_eq!(default_host_ip(rdmalab::topology::MAX_HOST_ID), 0xFFFF_FF01);
}

/// Lone flows on a 70,000-host leaf-spine, between hosts of one leaf, take exactly as long
/// as on a 2-host star (the same two hops), including between hosts on either side of the
/// old 65,536 boundary, and their FCT lines name the hosts by addresses that read back to
/// them. (A 70,000-host star is refused: its switch would have more ports than a port's
/// 16-bit number counts, `a_node_past_65535_ports_is_refused`.)
#[test]
fn a_fabric_past_65536_hosts_runs_lone_flows_like_a_small_star() {
    let rate = Rate::gbps(100);
    // Leaf 6 holds hosts 60,000..70,000.
    let pairs = [(60_000u32, 65_535u32), (65_535, 65_536), (69_999, 60_001)];
    let flows: Vec<FlowSpec> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(s, d))| FlowSpec::new(NodeId(s), NodeId(d), 20_000, Time::from_us(5 + 100 * i as u64)))
        .collect();
    let fabric = builders::leaf_spine(7, 1, 10_000, rate, rate, D).unwrap();
    let big = Simulation::new(fabric, flows, SimConfig::default()).unwrap();
    let small_flow = FlowSpec::new(NodeId(0), NodeId(1), 20_000, Time::from_us(5));
    let small = Simulation::new(builders::star(2, rate, D).unwrap(), vec![small_flow], SimConfig::default()).unwrap();
    let (mut big, mut small) = (big, small);
    assert_eq!(big.run_to_end(), StopReason::Finished);
    assert_eq!(small.run_to_end(), StopReason::Finished);
    let (big, small) = (big.results().unwrap(), small.results().unwrap());
    assert_eq!(big.records.len(), 3);
    for r in &big.records {
        assert_eq!(r.fct, small.records[0].fct, "flow {}", r.flow);
    }
    let mut text = Vec::new();
    write_fct(&mut text, &big.records).unwrap();
    let lines: Vec<FctLine> = read_fct(std::str::from_utf8(&text).unwrap(), "fct.txt".as_ref()).unwrap();
    assert_eq!((lines[1].sip, lines[1].dip), (0x0BFF_FF01, 0x0C00_0001));
    for (line, r) in lines.iter().zip(&big.records) {
        let back = line.to_record(r.flow).unwrap();
        assert_eq!((back.src, back.dst), (r.src, r.dst));
    }
}

/// A switch's 65,536th port would share its 16-bit number, and with it its buffer counts,
/// with another port: the topology is refused with the node and the limit, and 65,535
/// ports are still accepted.
#[test]
fn a_node_past_65535_ports_is_refused() {
    let rate = Rate::gbps(100);
    let e = builders::star(65_536, rate, D).unwrap_err().to_string();
    assert!(e.contains("node 65536 would have 65536 ports, over the 65535"), "{e}");
    assert!(builders::star(65_535, rate, D).is_ok());
}

/// A k = 40 fat tree (16,000 hosts, 18,000 nodes) was refused: 288 M spans, past the 2^28
/// limit. Its table now has one column per edge switch, and a path across pods is still
/// the fat tree's six links, up through an aggregation and a core and down.
#[test]
fn a_k40_fat_tree_routes_with_one_column_per_edge_switch() {
    let t = builders::fat_tree(40, Rate::gbps(100), Rate::gbps(100), D).unwrap();
    let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
    assert_eq!(r.n_classes(), 40 * 20);
    // 2,000 switches x 800 classes x 8 B = 12.8 MB, plus a few words per node and port.
    assert!(r.table_bytes() < 16_000_000, "{} bytes", r.table_bytes());
    let (src, dst) = (NodeId(0), NodeId(15_999));
    let path = r.ecmp_path(&t, default_host_ip(0), default_host_ip(15_999), 10_000, 100, src, dst);
    let nodes: Vec<u32> = path.iter().map(|p| t.ports[p.idx()].peer_node.0).collect();
    let (edge0, agg0, core0) = (16_000, 16_800, 17_600);
    assert_eq!(nodes.len(), 6);
    assert_eq!(nodes[0], edge0);
    assert!((agg0..agg0 + 20).contains(&nodes[1]), "{nodes:?}"); // pod 0's aggregations
    assert!((core0..core0 + 400).contains(&nodes[2]), "{nodes:?}");
    assert!((agg0 + 780..agg0 + 800).contains(&nodes[3]), "{nodes:?}"); // pod 39's
    assert_eq!(nodes[4], edge0 + 799);
    assert_eq!(nodes[5], 15_999);
}

/// Past 4 M (row, class) entries consecutive classes share a column where their lists
/// agree: a k = 52 fat tree (35,152 hosts, the smallest past the limit) groups its 1,352
/// classes by pod, 52 columns, in less than a sixth of the 36.6 MB of spans one column per
/// class would take (per-node and per-host words included); a path across pods is still up
/// through an aggregation and a core and down to the destination's edge. (Every list of the
/// grouped tables equals the per-host search's: the unit tests of `routing`.)
#[test]
fn a_k52_fat_tree_groups_its_classes_by_pod() {
    let t = builders::fat_tree(52, Rate::gbps(100), Rate::gbps(100), D).unwrap();
    let r = Routes::compute(&t, NeighborOrder::Ascending).unwrap();
    assert_eq!((r.n_classes(), r.n_groups()), (52 * 26, 52));
    assert!(r.table_bytes() < 36_600_000 / 6, "{} bytes", r.table_bytes());
    let (edge0, agg0, core0) = (35_152, 35_152 + 1_352, 35_152 + 2_704);
    for (dst, sport) in [(35_151u32, 10_000u16), (35_151, 10_001), (20_000, 10_002)] {
        let path = r.ecmp_path(&t, default_host_ip(0), default_host_ip(dst), sport, 100, NodeId(0), NodeId(dst));
        let nodes: Vec<u32> = path.iter().map(|p| t.ports[p.idx()].peer_node.0).collect();
        let pod = dst / 676;
        assert_eq!(nodes.len(), 6, "{nodes:?}");
        assert_eq!(nodes[0], edge0);
        assert!((agg0..agg0 + 26).contains(&nodes[1]), "{nodes:?}");
        assert!((core0..core0 + 676).contains(&nodes[2]), "{nodes:?}");
        assert!((agg0 + 26 * pod..agg0 + 26 * pod + 26).contains(&nodes[3]), "{nodes:?}");
        assert_eq!(nodes[4], edge0 + dst / 26);
        assert_eq!(nodes[5], dst);
    }
}
