//! Multipath by data partition (the data-partition paper): closed forms, equivalence with a plain flow,
//! reassembly, allocation, determinism, bad input, and the interactions with the QP cache
//! and congestion-control granularity.

use rdmalab::multipath::{MpConfig, MpWr, SportPolicy};
use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, SimConfig, Simulation, StopReason};
use rdmalab::topology::builders;
use rdmalab::workload::FlowSpec;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures;

fn scenario(toml: &str) -> Scenario {
    fixtures::scenario(toml, "mp.toml")
}

fn run(s: Scenario) -> Results {
    fixtures::run_finished(s)
}

fn error(toml: &str) -> String {
    fixtures::build_error(toml, "mp.toml")
}

/// 2 leaves x 4 spines, 100G hosts, 25G fabric: four equal-cost 25G paths between leaves.
const CLOS: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 4
hosts_per_leaf = 2
host_rate = "100Gbps"
fabric_rate = "25Gbps"
delay = "1us"
"#;

const MIB8: u64 = 8 << 20;

fn clos_mp(qps: u32, extra: &str) -> String {
    format!(
        "{CLOS}\n[[traffic]]\nkind = \"multipath\"\nqps = {qps}\nchunk_size = {}\n{extra}\n\
         messages = [{{ src = 0, dst = 2, size = {MIB8} }}]\n",
        MIB8 / 4
    )
}

#[test]
fn four_distinct_paths_carry_a_message_four_times_faster() {
    let one = run(scenario(&clos_mp(1, "")));
    let four = run(scenario(&clos_mp(4, "sport_policy = \"distinct_paths\"")));
    let (t1, t4) = (one.mp_messages[0].fct.unwrap(), four.mp_messages[0].fct.unwrap());
    // One 25G path: 8 MiB of 1000-byte payloads in 1048-byte packets.
    let wire = MIB8.div_ceil(1000) * 1048 * 8;
    let one_path = Time((wire as u128 * 1_000_000_000_000 / 25_000_000_000) as u64);
    assert!(t1 >= one_path && t1.0 < one_path.0 / 100 * 102, "1 QP: {t1} vs {one_path}");
    let ratio = t1.0 as f64 / t4.0 as f64;
    assert!((ratio - 4.0).abs() / 4.0 < 0.03, "qps 4 FCT {t4} = qps 1 FCT {t1} / {ratio:.3}");
    let mut paths: Vec<_> = four.mp_chunks.iter().map(|c| c.path.clone()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 4, "{paths:?}");
    // Each path: host 0, leaf 4, one of the spines 6..10, leaf 5, host 2.
    assert!(paths.iter().all(|p| p.len() == 5 && p[0] == NodeId(0) && p[4] == NodeId(2)));
}

#[test]
fn one_qp_one_chunk_no_header_is_the_plain_flow_to_the_picosecond() {
    let flow = format!("{CLOS}\n[[traffic]]\nkind = \"flows\"\nflows = [{{ src = 0, dst = 2, size = 3000001 }}]\n");
    let mp = format!(
        "{CLOS}\n[[traffic]]\nkind = \"multipath\"\nqps = 1\nchunk_size = 3000001\nchunk_header = 0\n\
         messages = [{{ src = 0, dst = 2, size = 3000001 }}]\n"
    );
    let (a, b) = (run(scenario(&flow)), run(scenario(&mp)));
    assert_eq!(a.records.len(), 1);
    assert_eq!(b.records.len(), 1);
    let (fa, fb) = (a.records[0], b.records[0]);
    assert_eq!(fa.fct, fb.fct);
    assert_eq!((fa.sport, fa.sip, fa.size, fa.ideal), (fb.sport, fb.sip, fb.size, fb.ideal));
    assert_eq!(b.mp_messages[0].fct, Some(fa.fct));
    assert_eq!(a.end_time, b.end_time);
    assert_eq!(a.counters.packet_hops, b.counters.packet_hops);
    assert_eq!(a.counters.payload_bytes_sent, b.counters.payload_bytes_sent);
}

/// Two leaves joined through two spines, one of them 20x farther: paths of unequal delay.
fn unequal_paths() -> rdmalab::topology::Topology {
    let mut t = rdmalab::topology::Topology::new(6, &[NodeId(2), NodeId(3), NodeId(4), NodeId(5)]);
    let (r, near, far) = (Rate::gbps(100), Time::from_us(1), Time::from_us(20));
    t.add_link(NodeId(0), NodeId(2), r, near, 0.0).unwrap();
    t.add_link(NodeId(1), NodeId(3), r, near, 0.0).unwrap();
    for (leaf, spine, d) in [(2, 4, near), (2, 5, far), (3, 4, near), (3, 5, far)] {
        t.add_link(NodeId(leaf), NodeId(spine), r, d, 0.0).unwrap();
    }
    t
}

#[test]
fn chunks_on_unequal_paths_arrive_out_of_order_and_reassemble_exactly() {
    let mut sim = Simulation::new(unequal_paths(), vec![], SimConfig::default()).unwrap();
    let cfg = MpConfig { qps: 2, chunk_size: 10_000, sport_policy: SportPolicy::DistinctPaths, ..MpConfig::default() };
    let conn = sim.mp_connect(NodeId(0), NodeId(1), &cfg).unwrap();
    let size = 1_000_003;
    let msg = sim.mp_post_send(conn, MpWr::write(size), Time::from_us(3)).unwrap();
    sim.mp_disconnect(conn).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    let m = &r.mp_messages[0];
    assert_eq!((m.message, m.size, m.bytes_placed, m.chunks), (msg, size, size, 101));
    // One completion per message: one row of the flow records.
    assert_eq!(r.records.len(), 1);
    assert_eq!(r.records[0].fct, m.fct.unwrap());
    // Offsets cover [0, size) exactly once.
    let mut spans: Vec<(u64, u64)> = r.mp_chunks.iter().map(|c| (c.offset, c.size)).collect();
    spans.sort();
    let mut next = 0;
    for (off, len) in spans {
        assert_eq!(off, next);
        next += len;
    }
    assert_eq!(next, size);
    // Done out of offset order: some chunk completes before one of a lower offset.
    let recv: Vec<Time> = r.mp_chunks.iter().map(|c| c.recv.unwrap()).collect();
    assert!(recv.windows(2).any(|w| w[1] < w[0]), "chunks arrived in offset order");
    let done: Vec<Time> = r.mp_chunks.iter().map(|c| c.done.unwrap()).collect();
    assert!(done.windows(2).any(|w| w[1] < w[0]));
    // The message is placed when its last chunk is, and before the sender hears of it.
    let recv_done = m.start + m.recv_done.unwrap();
    assert_eq!(recv_done, *recv.iter().max().unwrap());
    assert!(m.recv_done.unwrap() < m.fct.unwrap());
    // The far path carries fewer chunks (dynamic allocation sees its longer round trip).
    let far = r.mp_chunks.iter().filter(|c| c.path[2] == NodeId(5)).count();
    assert!(far > 0 && far < 101 / 2, "far path carried {far} of 101 chunks");
}

/// Hosts 0, 1 on leaf 4, hosts 2, 3 on leaf 5; spines 6..10; fabric 25G.
fn loaded_path_run(allocation: &str) -> (Results, NodeId) {
    let s = scenario(
        &format!(
            "{CLOS}\n[[traffic]]\nkind = \"multipath\"\nqps = 2\nchunk_size = 16384\nallocation = \"{allocation}\"\n\
         sport_policy = \"distinct_paths\"\nmessages = [{{ src = 0, dst = 2, size = 4194304 }}]\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{{ src = 1, dst = 3, size = 20000000, sport = SPORT }}]\n\
         [fabric]\ncc = \"dcqcn\"\n"
        )
        .replace("SPORT", &loading_sport().to_string()),
    );
    let r = run(s);
    let loaded = r.mp_chunks.iter().find(|c| c.qp == 0).unwrap().path[2];
    (r, loaded)
}

/// A source port for the background flow 1 -> 3 that crosses the spine of the connection's QP 0.
fn loading_sport() -> u16 {
    use rdmalab::topology::routing::{NeighborOrder, Routes};
    let s = scenario(&clos_mp(2, "sport_policy = \"distinct_paths\""));
    let routes = Routes::compute(&s.topology, NeighborOrder::Ascending).unwrap();
    let ip = |h: u32| s.topology.nodes[h as usize].ips[0];
    let qp0 = rdmalab::multipath::distinct_path_ports(&s.topology, &routes, NodeId(0), NodeId(2), ip(0), ip(2), 100, 2)
        .unwrap()[0];
    let spine_of = |src: u32, dst: u32, sport: u16| {
        rdmalab::multipath::path_nodes(&s.topology, &routes, (ip(src), ip(dst), sport, 100), NodeId(src), NodeId(dst))
            [2]
    };
    let target = spine_of(0, 2, qp0);
    (10000..).find(|&p| spine_of(1, 3, p) == target).unwrap()
}

#[test]
fn dynamic_allocation_avoids_the_loaded_path_and_static_pays_for_it() {
    let (dynamic, loaded) = loaded_path_run("dynamic");
    let (fixed, loaded_too) = loaded_path_run("static");
    assert_eq!(loaded, loaded_too);
    let on = |r: &Results, q: u32| r.mp_chunks.iter().filter(|c| c.qp == q).count();
    assert!(on(&dynamic, 0) * 3 < on(&dynamic, 1) * 2, "dynamic: {} vs {} chunks", on(&dynamic, 0), on(&dynamic, 1));
    assert_eq!(on(&fixed, 0), on(&fixed, 1));
    let (td, ts) = (dynamic.mp_messages[0].fct.unwrap(), fixed.mp_messages[0].fct.unwrap());
    assert!(ts.0 as f64 > 1.15 * td.0 as f64, "static {ts} vs dynamic {td}");
}

const BACKGROUND: &str = r#"
[[traffic]]
kind = "random_pairs"
count = 12
size = 300000
window = "50us"
"#;

#[test]
fn same_seed_same_tables_and_headers_are_conserved() {
    let text = clos_mp(3, "chunk_header = 24\n") + BACKGROUND;
    let (a, b) = (run(scenario(&text)), run(scenario(&text)));
    assert_eq!(a.mp_messages, b.mp_messages);
    assert_eq!(a.mp_chunks, b.mp_chunks);
    assert_eq!(a.records, b.records);
    assert_eq!(a.records.len(), 13);
    let other = run(scenario(&format!("seed = 2\n{text}")));
    assert_ne!(a.records, other.records, "the background depends on the seed");
    // Only the MP connection: every byte on the wire is data or one 24-byte header per chunk.
    let r = run(scenario(&clos_mp(3, "chunk_header = 24\n")));
    let chunks = r.mp_chunks.len() as u64;
    assert_eq!(r.counters.payload_bytes_delivered, MIB8 + 24 * chunks);
    assert_eq!(
        r.counters.payload_bytes_sent,
        r.counters.payload_bytes_delivered + r.counters.payload_bytes_dropped + r.counters.payload_bytes_discarded
    );
    assert_eq!(r.mp_messages[0].bytes_placed, MIB8);
}

#[test]
fn bad_inputs_name_file_line_and_field() {
    let base =
        |fields: &str, msg: &str| format!("{CLOS}\n[[traffic]]\nkind = \"multipath\"\n{fields}\nmessages = [{msg}]\n");
    let ok_msg = "{ src = 0, dst = 2, size = 100000 }";
    let cases = [
        (base("qps = 0", ok_msg), "traffic[0].qps", 13),
        (base("chunk_size = 0", ok_msg), "traffic[0].chunk_size", 13),
        (base("chunk_size = 100001", ok_msg), "traffic[0].chunk_size", 13),
        (base("outstanding = 0", ok_msg), "traffic[0].outstanding", 13),
        (base("qps = 2\nsport_policy = \"explicit\"\nsports = [1]", ok_msg), "traffic[0].sports", 15),
        (base("qps = 2\nsport_policy = \"explicit\"\nsports = [7, 7]", ok_msg), "traffic[0].sports", 15),
        (base("qps = 5\nsport_policy = \"distinct_paths\"", ok_msg), "traffic[0].qps", 13),
        (base("", "{ src = 0, dst = 0, size = 100000 }"), "traffic[0].messages[0].dst", 14),
        (base("", "{ src = 0, dst = 99, size = 100000 }"), "traffic[0].messages[0].dst", 14),
        (base("allocation = \"even\"", ok_msg), "traffic[0].allocation", 13),
    ];
    for (text, field, line) in cases {
        let e = error(&text);
        assert!(e.contains(&format!("mp.toml:{line}: field `{field}`")), "{field}: {e}");
    }
    assert!(error(&cases_distinct()).contains("has 4 equal-cost path(s)"));
}

fn cases_distinct() -> String {
    format!(
        "{CLOS}\n[[traffic]]\nkind = \"multipath\"\nqps = 5\nsport_policy = \"distinct_paths\"\n\
         messages = [{{ src = 0, dst = 2, size = 100000 }}]\n"
    )
}

#[test]
fn rust_api_errors_name_the_field() {
    let topo = builders::star(3, Rate::gbps(40), Time::from_us(1)).unwrap();
    let mut sim =
        Simulation::new(topo, vec![FlowSpec::new(NodeId(1), NodeId(2), 1000, Time::ZERO)], SimConfig::default())
            .unwrap();
    let e = sim.mp_connect(NodeId(0), NodeId(3), &MpConfig::default()).unwrap_err().to_string();
    assert!(e.contains("dst") && e.contains("switch"), "{e}");
    let bad = MpConfig { qps: 2, sport_policy: SportPolicy::DistinctPaths, ..MpConfig::default() };
    let e = sim.mp_connect(NodeId(0), NodeId(1), &bad).unwrap_err().to_string();
    assert!(e.contains("qps") && e.contains("1 equal-cost path"), "{e}");
    let conn = sim.mp_connect(NodeId(0), NodeId(1), &MpConfig::default()).unwrap();
    let e = sim.mp_post_send(conn, MpWr::write(1000), Time::ZERO).unwrap_err().to_string();
    assert!(e.contains("chunk_size"), "{e}");
}

/// A star at 40G with a 4-entry QP cache and a 5 us miss penalty (more than 8 packet times).
fn cached(qps: u32) -> Results {
    run(scenario(&format!(
        "[topology]\nkind = \"star\"\nhosts = 2\nrate = \"40Gbps\"\n\
         [[traffic]]\nkind = \"multipath\"\nqps = {qps}\nchunk_size = 65536\noutstanding = 2\n\
         messages = [{{ src = 0, dst = 1, size = 2097152 }}]\n\
         [fabric]\nqp_cache_entries = 4\nqp_cache_miss_penalty = \"5us\"\n"
    )))
}

#[test]
fn more_qps_than_cached_contexts_miss_on_every_packet() {
    let (four, eight) = (cached(4), cached(8));
    assert_eq!(four.counters.qp_cache_misses, 4, "cold misses only");
    let packets = eight.counters.data_packets_sent;
    assert!(
        eight.counters.qp_cache_misses * 10 >= packets * 9,
        "{} misses, {packets} packets",
        eight.counters.qp_cache_misses
    );
    assert!(eight.mp_messages[0].fct.unwrap().0 > 2 * four.mp_messages[0].fct.unwrap().0);
}

/// Dumbbell at 40G, DCQCN: a connection 0 -> 2 of `qps` QPs (`chunk` bytes, refill on `sent`,
/// the multipath fields `extra`) and a plain flow 1 -> 3, 8 MiB each, share the bottleneck;
/// `fabric` adds fabric fields. Returns (message FCT, flow FCT).
fn beside_a_flow(qps: u32, chunk: u64, extra: &str, fabric: &str) -> (Time, Time) {
    let r = run(scenario(&format!(
        "[topology]\nkind = \"dumbbell\"\nhosts_per_side = 2\nhost_rate = \"40Gbps\"\nbottleneck_rate = \"40Gbps\"\n\
         [[traffic]]\nkind = \"multipath\"\nqps = {qps}\nchunk_size = {chunk}\nrefill_on = \"sent\"\n{extra}\n\
         messages = [{{ src = 0, dst = 2, size = 8388608 }}]\n\
         [[traffic]]\nkind = \"flows\"\nflows = [{{ src = 1, dst = 3, size = 8388608 }}]\n\
         [fabric]\ncc = \"dcqcn\"\n{fabric}\n"
    )));
    let flow = r.records.iter().find(|f| f.src == NodeId(1)).unwrap().fct;
    (r.mp_messages[0].fct.unwrap(), flow)
}

/// A 4-QP connection of 256 KiB chunks beside the flow, CC enforced at `granularity`.
fn shared_bottleneck(granularity: &str) -> (Time, Time) {
    beside_a_flow(4, 262_144, "", &format!("granularity = \"{granularity}\""))
}

#[test]
fn per_qp_cc_gives_a_connection_one_share_per_qp_and_per_pair_one_share() {
    let (mp, flow) = shared_bottleneck("per_qp");
    let (mp_pair, flow_pair) = shared_bottleneck("per_pair");
    eprintln!("per_qp: mp {mp} flow {flow}; per_pair: mp {mp_pair} flow {flow_pair}");
    assert!(flow.0 as f64 > 1.5 * mp.0 as f64, "per_qp: mp {mp} flow {flow}");
    let ratio = flow_pair.0 as f64 / mp_pair.0 as f64;
    assert!((0.75..1.33).contains(&ratio), "per_pair: mp {mp_pair} flow {flow_pair}");
}

#[test]
fn a_connection_left_open_does_not_keep_the_run_alive() {
    // DCQCN re-arms its timers while a QP exists; without mp_disconnect the run must still end.
    let cfg = SimConfig { cc: rdmalab::cc::CcConfig::from_name("dcqcn").unwrap(), ..SimConfig::default() };
    let topo = builders::star(2, Rate::gbps(40), Time::from_us(1)).unwrap();
    let mut sim = Simulation::new(topo, vec![], cfg).unwrap();
    let conn =
        sim.mp_connect(NodeId(0), NodeId(1), &MpConfig { qps: 2, chunk_size: 8192, ..MpConfig::default() }).unwrap();
    sim.mp_post_send(conn, MpWr::write(100_000), Time::ZERO).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let first = sim.now();
    // The connection is still usable: a later message runs and completes too.
    sim.mp_post_send(conn, MpWr::write(50_000), first + Time::from_us(10)).unwrap();
    assert_eq!(sim.run_to_end(), StopReason::Finished);
    let r = sim.results().unwrap();
    assert_eq!(r.records.len(), 2);
    assert!(r.mp_messages.iter().all(|m| m.bytes_placed == m.size));
}

#[test]
fn a_fresh_qp_per_chunk_keeps_its_slot_path() {
    // `recreate` opens each chunk's QP with its slot's source port: four distinct 25G paths
    // still carry the message four times faster than one (a chunk on another slot's path
    // would share a 25G link and stretch the FCT).
    let one = run(scenario(&clos_mp(1, "qp_policy = \"recreate\"")));
    let four = run(scenario(&clos_mp(4, "sport_policy = \"distinct_paths\"\nqp_policy = \"recreate\"")));
    let (t1, t4) = (one.mp_messages[0].fct.unwrap(), four.mp_messages[0].fct.unwrap());
    let ratio = t1.0 as f64 / t4.0 as f64;
    assert!((ratio - 4.0).abs() / 4.0 < 0.03, "qps 4 FCT {t4} = qps 1 FCT {t1} / {ratio:.3}");
    assert!(four.mp_messages[0].bytes_placed == MIB8);
    // Without contention a fresh QP costs nothing: the engine models no connection set-up,
    // and every chunk runs at line rate on both kinds of QP, so the FCTs are equal exactly.
    let kept = run(scenario(&clos_mp(4, "sport_policy = \"distinct_paths\"")));
    assert_eq!(t4, kept.mp_messages[0].fct.unwrap());
}

/// One QP of 64 KiB chunks under `qp_policy` beside the flow, per-QP DCQCN.
fn one_qp_beside_a_flow(policy: &str) -> (Time, Time) {
    beside_a_flow(1, 65_536, &format!("qp_policy = \"{policy}\""), "")
}

#[test]
fn a_fresh_qp_per_chunk_starts_every_chunk_at_line_rate() {
    // The CC-attack paper's staggered attack inside the data-partition paper's sender: one kept QP and a flow split the
    // bottleneck about evenly; a fresh QP per chunk starts each chunk at line rate, before
    // its marks come back, so the message takes most of the link.
    let (mp, flow) = one_qp_beside_a_flow("reuse");
    let (mp_fresh, flow_fresh) = one_qp_beside_a_flow("recreate");
    eprintln!("reuse: mp {mp} flow {flow}; recreate: mp {mp_fresh} flow {flow_fresh}");
    let even = flow.0 as f64 / mp.0 as f64;
    assert!((0.75..1.33).contains(&even), "reuse: mp {mp} flow {flow}");
    assert!(flow_fresh.0 as f64 > 1.5 * mp_fresh.0 as f64, "recreate: mp {mp_fresh} flow {flow_fresh}");
}

#[test]
fn qp_policy_errors_name_the_field() {
    let e = error(&clos_mp(2, "qp_policy = \"renew\""));
    assert!(e.contains("qp_policy") && e.contains("renew"), "{e}");
    let cfg = MpConfig { qp_policy: rdmalab::multipath::QpPolicy::Recreate, ..MpConfig::default() };
    let v = MpConfig { split: rdmalab::multipath::Split::Virtuoso(Default::default()), ..cfg };
    let e = v.validate().unwrap_err().to_string();
    assert!(e.contains("qp_policy") && e.contains("partition"), "{e}");
}
