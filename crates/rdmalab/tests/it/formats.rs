//! Integration tests of `rdmalab::formats` against the real reference files in
//! `shared/reference/` (ns-3 HPCC runs and htsim connection matrices), plus a table of bad
//! inputs whose errors must name the file, the line and the field.
//!
//! Expected values come from the reference files themselves, from the code that wrote them
//! (the ns-3 HPCC simulator's `third.cc` and `run.py`) and from htsim's runs on the matrices;
//! each check says where its number comes from.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rdmalab::formats::fct::{read_fct, read_fct_file, write_fct, FctLine};
use rdmalab::formats::hpcc_config::{parse_config, read_config, CcMode};
use rdmalab::formats::hpcc_flow::{parse_flows, read_flows};
use rdmalab::formats::hpcc_topology::{parse_topology, read_topology};
use rdmalab::formats::htsim_cm::{parse_cm, read_cm};
use rdmalab::formats::pfc::{parse_pfc, write_pfc};
use rdmalab::stats::PfcEvent;
use rdmalab::topology::{default_host_ip, Topology};
use rdmalab::{Error, NodeId, Rate, Time};

use crate::fixtures::reference;

/// A file of the reference's `hpcc` folder.
fn hpcc(name: &str) -> PathBuf {
    reference().join("hpcc").join(name)
}

fn fat() -> Topology {
    read_topology(hpcc("fat.txt")).expect("fat.txt parses")
}

fn star() -> Topology {
    read_topology(hpcc("topology.txt")).expect("topology.txt parses")
}

#[test]
fn fat_tree_reads_as_the_reference_fat_txt_lists_it() {
    // The repository's mix/fat.txt (the HPCC paper's fat tree): N=376 S=56 L=480; hosts
    // 0-319, switches 320-375; 320 host links at 100Gbps, 160 switch links at 400Gbps, every
    // link 1000ns, no loss.
    let t = fat();
    assert_eq!(t.len(), 376);
    assert_eq!(t.links.len(), 480);
    assert_eq!(t.hosts().count(), 320);
    assert_eq!(t.switches().map(|s| s.0).collect::<Vec<_>>(), (320..376).collect::<Vec<_>>());
    assert_eq!(t.links.iter().filter(|l| l.rate == Rate::gbps(100)).count(), 320);
    assert_eq!(t.links.iter().filter(|l| l.rate == Rate::gbps(400)).count(), 160);
    assert!(t.links.iter().all(|l| l.delay == Time::from_us(1) && l.error_rate == 0.0));
    // fat.txt line 3 is `0 320 100Gbps 1000ns 0.000000`: host 0's and switch 320's first port.
    assert_eq!((t.links[0].a, t.links[0].b), (NodeId(0), NodeId(320)));
    assert_eq!(t.ports[1].ifindex, 1);
    assert_eq!(t.nic_rate(NodeId(0)), Rate::gbps(100));
    // 16 hosts per ToR, then its uplinks: ToR 320 has 16 down + some up ports.
    assert!(t.nodes[320].ports.len() > 16);
}

#[test]
fn star_ignores_lines_after_the_links() {
    // The repository's mix/topology.txt: N=66 S=1 L=65; switch 0, hosts 1-65, all 100Gbps
    // 1 us (the 25Gbps lines and the explanatory words after link 65 are ignored). The file
    // has CRLF line ends.
    let t = star();
    assert_eq!((t.len(), t.links.len(), t.hosts().count()), (66, 65, 65));
    assert!(!t.is_host(NodeId(0)));
    assert!(t.links.iter().all(|l| l.rate == Rate::gbps(100) && l.delay == Time::from_us(1)));
    assert_eq!(t.links[64].b, NodeId(65));
}

/// Start and size of every flow in an FCT file, keyed by (sip, dip, sport).
fn fct_index(name: &str) -> HashMap<(u32, u32, u16), FctLine> {
    let lines = read_fct_file(hpcc(name)).expect("fct parses");
    lines.into_iter().map(|l| ((l.sip, l.dip, l.sport), l)).collect()
}

/// Checks every flow against the reference's FCT output, with sports assigned by the
/// per-(src, dst) counter from 10000 (`portNumder` in the reference's `third.cc`). Returns
/// how many flows matched.
fn check_against_fct(flows: &[rdmalab::workload::FlowSpec], fct: &HashMap<(u32, u32, u16), FctLine>) -> usize {
    let mut next_port: HashMap<(u32, u32), u16> = HashMap::new();
    let mut matched = 0;
    for f in flows {
        let port = next_port.entry((f.src.0, f.dst.0)).or_insert(10000);
        let key = (default_host_ip(f.src.0), default_host_ip(f.dst.0), *port);
        *port += 1;
        let line = fct.get(&key).unwrap_or_else(|| panic!("flow {f:?} missing from the FCT file"));
        assert_eq!(Time::from_ns(line.start_ns), f.start, "start of {f:?}");
        assert_eq!((line.size, line.dport), (f.size, f.dport), "size/dport of {f:?}");
        matched += 1;
    }
    matched
}

#[test]
fn s1_flows_match_the_reference_fct_start_times() {
    let flows = read_flows(hpcc("S1_flow.txt"), &fat()).expect("S1_flow.txt parses");
    // S1_flow.txt's header: 9,672 flows; its line 2 `13 10 3 100 47652 2.000000067`.
    assert_eq!(flows.len(), 9672);
    let f = flows[0];
    assert_eq!((f.src, f.dst, f.pg, f.dport, f.size), (NodeId(13), NodeId(10), 3, 100, 47652));
    assert_eq!(f.start, Time::from_ns(2_000_000_067));
    // Line 4 `2.000000273` is 2000000272 in S1_dcqcn_fct.txt (the double is below the decimal).
    assert_eq!(flows[2].start, Time::from_ns(2_000_000_272));
    assert!(flows.iter().all(|f| f.sport.is_none()));
    // Every flow completed in both S1 runs: all 9,672 starts equal the FCT files' start_ns.
    assert_eq!(check_against_fct(&flows, &fct_index("S1_dcqcn_fct.txt")), 9672);
    assert_eq!(check_against_fct(&flows, &fct_index("S1_hpcc_fct.txt")), 9672);
}

#[test]
fn s2_flows_match_the_reference_fct_start_times() {
    let flows = read_flows(hpcc("S2_flow.txt"), &star()).expect("S2_flow.txt parses");
    assert_eq!(flows.len(), 2321); // S2_flow.txt's header: 2,321 flows
    assert_eq!(check_against_fct(&flows, &fct_index("S2_dcqcn_fct.txt")), 2321);
}

#[test]
fn all_four_configs_parse_with_their_values() {
    for name in ["S1_dcqcn_config.txt", "S1_hpcc_config.txt", "S2_dcqcn_config.txt", "S2_hpcc_config.txt"] {
        let c = read_config(hpcc(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The KMAX_MAP/KMIN_MAP/PMAX_MAP run.py writes for --bw 100, in all four files.
        assert_eq!(c.ecn_for_rate(Rate::gbps(100)), Some((400_000, 1_600_000, 0.2)), "{name}");
        assert_eq!(c.ecn_for_rate(Rate::gbps(400)), Some((1_600_000, 6_400_000, 0.2)), "{name}");
        assert_eq!(c.buffer_size_mb, 32);
        assert_eq!(c.packet_payload_size, 1000);
        assert_eq!(c.simulator_stop_time, Time::from_ms(4000));
        assert_eq!((c.qlen_mon_start, c.qlen_mon_end), (Time::from_ms(2000), Time::from_ms(2000)));
        assert_eq!(c.link_down, None);
        assert!(c.enable_qcn && c.use_dynamic_pfc_threshold && !c.enable_trace && c.global_t);
        assert_eq!(c.l2_ack_interval, 1);
        assert_eq!(c.trace_file.as_deref(), Some(Path::new("trace.txt")));
        let hpcc_cc = name.contains("hpcc");
        assert_eq!(c.cc_mode, if hpcc_cc { CcMode::Hpcc } else { CcMode::Dcqcn });
        assert_eq!((c.has_win, c.var_win, c.fast_react, c.ack_high_prio), (hpcc_cc, hpcc_cc, hpcc_cc, !hpcc_cc));
        assert_eq!(c.rate_ai, Some(if hpcc_cc { Rate::mbps(50) } else { Rate::mbps(20) }));
        assert_eq!(c.int_multi, if hpcc_cc { 4 } else { 1 });
    }
    let c = read_config(hpcc("S1_dcqcn_config.txt")).unwrap();
    assert_eq!(c.topology_file.as_deref(), Some(Path::new("fat.txt")));
    assert_eq!(c.flow_file.as_deref(), Some(Path::new("S1_flow.txt")));
    assert_eq!(c.fct_output_file, Path::new("S1_dcqcn_fct.txt"));
    assert_eq!((c.rate_hai, c.min_rate, c.dctcp_rate_ai), (Some(Rate::mbps(200)), Rate::mbps(1000), Rate::mbps(1000)));
    assert_eq!(
        (c.alpha_resume_interval, c.rate_decrease_interval, c.rp_timer),
        (Time::from_us(1), Time::from_us(4), Time::from_us(300))
    );
    assert_eq!(c.ewma_gain, 1.0 / 256.0);
    assert_eq!((c.u_target, c.pint_log_base, c.pint_prob), (0.95, 1.01, 1.0));
    assert_eq!(
        (c.line_of("TOPOLOGY_FILE"), c.line_of("CC_MODE"), c.line_of("KMIN_MAP")),
        (Some(6), Some(15), Some(53))
    );
    assert_eq!(c.line_of("PAUSE_TIME"), None);
    assert_eq!(c.pause_time, 5.0); // third.cc default
    c.check_ecn_maps(&fat()).expect("fat.txt's 100G and 400G rates are in the maps");
    let s2 = read_config(hpcc("S2_hpcc_config.txt")).unwrap();
    assert_eq!(s2.topology_file.as_deref(), Some(Path::new("topology.txt")));
    s2.check_ecn_maps(&star()).expect("topology.txt's 100G rate is in the maps");
}

#[test]
fn fct_files_round_trip_byte_for_byte() {
    for name in ["S1_dcqcn_fct.txt", "S1_hpcc_fct.txt", "S2_dcqcn_fct.txt", "S2_hpcc_fct.txt"] {
        let path = hpcc(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = read_fct(&text, &path).unwrap();
        assert_eq!(lines.len(), text.lines().count());
        let records: Vec<_> = lines.iter().enumerate().map(|(i, l)| l.to_record(i as u32).unwrap()).collect();
        let mut out = Vec::new();
        write_fct(&mut out, &records).unwrap();
        assert!(out == text.as_bytes(), "{name} differs after a round trip");
    }
    // S1_dcqcn_fct.txt line 2: 0b000d01 0b000a01 10000 100 47652 2000000067 8047 8156.
    let l = read_fct_file(hpcc("S1_dcqcn_fct.txt")).unwrap()[1];
    assert_eq!((l.sip, l.dip, l.sport, l.dport, l.size), (0x0b000d01, 0x0b000a01, 10000, 100, 47652));
    assert_eq!((l.start_ns, l.fct_ns, l.ideal_ns), (2000000067, 8047, 8156));
}

#[test]
fn pfc_lines_have_the_reference_layout() {
    let ev = [
        PfcEvent {
            time: Time::from_ps(2_000_000_123_999),
            node: NodeId(330),
            node_is_switch: true,
            ifindex: 17,
            pause: true,
        },
        PfcEvent {
            time: Time::from_ns(2_000_000_500),
            node: NodeId(4),
            node_is_switch: false,
            ifindex: 1,
            pause: false,
        },
    ];
    let mut out = Vec::new();
    write_pfc(&mut out, &ev).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text, "2000000123 330 1 17 1\n2000000500 4 0 1 0\n");
    assert_eq!(parse_pfc(&text, Path::new("p")).unwrap()[1], ev[1]);
}

#[test]
fn htsim_matrices_parse_and_sort() {
    let dir = reference().join("htsim");
    // Flows and total bytes of each input, as an instrumented htsim counted them running it.
    let cases = [
        ("tm16_ws50_20ms.cm", 16, 1150, 1_815_927_415u64),
        ("tm128_ws30_20ms.cm", 128, 5667, 9_811_051_460),
        ("tm128_perm_t0.cm", 128, 4683, 7_823_578_145),
    ];
    for (name, n, count, bytes) in cases {
        let hosts: Vec<NodeId> = (0..n).map(|i| NodeId(1000 + i)).collect();
        let flows = read_cm(dir.join(name), &hosts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(flows.len(), count, "{name}");
        assert_eq!(flows.iter().map(|f| f.size).sum::<u64>(), bytes, "{name}");
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start), "{name} sorted");
        assert!(flows.iter().all(|f| f.src.0 >= 1000 && f.dst.0 < 1000 + n && f.src != f.dst));
    }
    // tm16 line 3 `6->0 id 1 start 29195685 size 1792182`; perm line 3 `31->94 ... size 185431`
    // (all perm starts are 0, so the stable sort keeps file order).
    let hosts: Vec<NodeId> = (0..128).map(NodeId).collect();
    let f = read_cm(dir.join("tm16_ws50_20ms.cm"), &hosts).unwrap()[0];
    assert_eq!((f.src, f.dst, f.start, f.size), (NodeId(6), NodeId(0), Time(29_195_685), 1_792_182));
    let f = read_cm(dir.join("tm128_perm_t0.cm"), &hosts).unwrap()[0];
    assert_eq!((f.src, f.dst, f.start, f.size), (NodeId(31), NodeId(94), Time::ZERO, 185_431));
}

/// Which reader a bad input goes to.
#[derive(Clone, Copy, Debug)]
enum Reader {
    Topology,
    /// A flow file against `3 1 2 / 0 / 0 1 ... / 0 2 ...` (switch 0, hosts 1 and 2).
    Flow,
    Config,
    /// A config whose ECN maps are checked against a star with 100G and 25G links.
    EcnCheck,
    Htsim,
    Fct,
    /// A native TOML scenario (`Scenario::from_toml`).
    Scenario,
}

fn run(reader: Reader, text: &str, path: &Path) -> Result<(), Error> {
    let small = "3 1 2\n0\n0 1 100Gbps 1us 0\n0 2 25Gbps 1us 0\n";
    let topo = || parse_topology(small, Path::new("small.txt")).expect("small topology");
    match reader {
        Reader::Topology => parse_topology(text, path).map(drop),
        Reader::Flow => parse_flows(text, path, &topo()).map(drop),
        Reader::Config => parse_config(text, path).map(drop),
        Reader::EcnCheck => parse_config(text, path)?.check_ecn_maps(&topo()),
        Reader::Htsim => parse_cm(text, path, &[NodeId(1), NodeId(2), NodeId(5)]).map(drop),
        Reader::Fct => read_fct(text, path).map(drop),
        Reader::Scenario => rdmalab::scenario::Scenario::from_toml(text, path).map(drop),
    }
}

const ECN_100G_ONLY: &str =
    "KMIN_MAP 1 100000000000 400\nKMAX_MAP 1 100000000000 1600\nPMAX_MAP 2 100000000000 0.2 25000000000 0.2\n";

const LEAF_SPINE_BOTH: &str =
    "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 2\noversubscription = 1.0\n";
const STAR4_FLOWS_SIZE_NEGATIVE: &str = "[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = 5 },\n  { src = 2, dst = 1, size = -5 },\n]\n";
const STAR4_FLOWS_TO_SWITCH: &str =
    "[topology]\nkind = \"star\"\nhosts = 4\n\n[[traffic]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 4, size = 10 }]\n";
const STAR4_FLOWS_TO_ITSELF: &str = "[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = 10 },\n\n  { src = 1, dst = 1, size = 10 },\n]\n";
const STAR4_FLOWS_PG_ZERO: &str =
    "[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = 10, pg = 0 },\n]\n";
const STAR4_FLOWS_BAD_IP: &str = "[topology]\nkind = \"star\"\nhosts = 4\nips_per_host = 2\n[[traffic]]\nkind = \"flows\"\nflows = [\n  { src = 1, dst = 2, size = 10, src_ip_index = 2 },\n]\n";
const STAR4_INCAST_UNKNOWN_HOST: &str = "[topology]\nkind = \"star\"\nhosts = 4\n[[traffic]]\nkind = \"permutation\"\nsize = 10\n[[traffic]]\nkind = \"incast\"\nreceiver = 99\nsenders = [1, 2]\nsize = 10\n";
const STAR4_POISSON_LOAD: &str = "[topology]\nkind = \"star\"\nhosts = 4\n\n[[traffic]]\nkind = \"poisson\"\ncdf = \"fb_hadoop\"\nload = 1.5\nduration = \"1ms\"\n";
const STAR4_MISSING_CDF: &str = "[topology]\nkind = \"star\"\nhosts = 4\n\n[[traffic]]\nkind = \"poisson\"\ncdf = \"no/such/cdf.txt\"\nload = 0.5\nduration = \"1ms\"\n";
const STAR4_PERMUTATION_EMPTY: &str =
    "[topology]\nkind = \"star\"\nhosts = 4\n\n[[traffic]]\nkind = \"permutation\"\nsize = 0\n";

/// (reader, input, line, field, substring of the message).
const BAD_INPUTS: &[(Reader, &str, usize, &str, &str)] = &[
    (Reader::Topology, "", 1, "N", "truncated"),
    (Reader::Topology, "3 1\n", 1, "L", "`L` is missing"),
    (Reader::Topology, "3 1 1\n0\n0 1 100Gbps\n", 3, "DELAY", "`DELAY` is missing"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us\n0 2 100Gbps 1us 0\n", 3, "ERR", "has 4 field(s)"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us 0 0\n0 2 100Gbps 1us 0\n", 3, "ERR", "are extra"),
    (Reader::Flow, "2\n1 2 3 100 10\n2 1 3 100 10 2.0\n", 2, "start", "`start` is missing"),
    (Reader::Flow, "2\n1 2 3 100 10 2.0 9\n2 1 3 100 10 2.0\n", 2, "start", "are extra"),
    (Reader::Flow, "1\n1 2 3 100 18446744073709551615 2.0\n", 2, "size", "larger than the largest flow"),
    (Reader::Config, "BUFFER_SIZE 0\n", 1, "BUFFER_SIZE", "at least 1"),
    (Reader::Topology, "3 1 1\nzero\n", 2, "switch id", "not a non-negative integer"),
    (Reader::Topology, "3 -1 1\n", 1, "S", "negative"),
    (Reader::Topology, "3 1 1\n7\n", 2, "switch id", "out of range"),
    (Reader::Topology, "3 2 1\n0\n0\n", 3, "switch id", "twice"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us 0\n\n0 3 100Gbps 1us 0\n", 5, "b", "out of range"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us 0\n2 2 100Gbps 1us 0\n", 4, "b", "itself"),
    (Reader::Topology, "3 1 2\n0\n0 1 0Gbps 1us 0\n0 2 1Gbps 1us 0\n", 3, "RATE", "zero rate"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbs 1us 0\n0 2 1Gbps 1us 0\n", 3, "RATE", "unknown data-rate unit"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps -1us 0\n0 2 1Gbps 1us 0\n", 3, "DELAY", "negative"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us 1.5\n0 2 1Gbps 1us 0\n", 3, "ERR", "outside [0, 1]"),
    (Reader::Topology, "3 1 2\n0\n0 1 100Gbps 1us 0\n0 2 1Gbps 1us nan\n", 4, "ERR", "not a finite"),
    (Reader::Flow, "1\n1 7 3 100 10 2.0\n", 2, "dst", "not in the topology"),
    (Reader::Flow, "1\n1 1 3 100 10 2.0\n", 2, "dst", "itself"),
    (Reader::Flow, "1\n0 1 3 100 10 2.0\n", 2, "src", "switch"),
    (Reader::Flow, "1\n1 0 3 100 10 2.0\n", 2, "dst", "switch"),
    (Reader::Flow, "2\n1 2 3 100 10 2.5\n2 1 3 100 10 2.4\n", 3, "start", "non-decreasing"),
    (Reader::Flow, "1\n1 2 3 100 -10 2.0\n", 2, "size", "negative"),
    (Reader::Flow, "1\n1 2 3 100 1.5e3 2.0\n", 2, "size", "not a non-negative integer"),
    (Reader::Flow, "1\n1 2 3 100 10 2.0.0\n", 2, "start", "not a finite"),
    (Reader::Flow, "1\n1 2 3 100 10 2,5\n", 2, "start", "not a finite"),
    (Reader::Flow, "3\n1 2 3 100 10 2.0\n", 2, "src", "truncated"),
    (Reader::Flow, "x\n", 1, "F", "not a non-negative integer"),
    (Reader::Config, "CC_MODE 1\n\nMY_KEY 3\n", 3, "MY_KEY", "unknown config key"),
    (Reader::Config, "RATE_AI 20Mbit\n", 1, "RATE_AI", "unknown data-rate unit"),
    (Reader::Config, "BUFFER_SIZE -32\n", 1, "BUFFER_SIZE", "negative"),
    (Reader::Config, "KMAX_MAP 2 100000000000 1600 400000000000\n", 1, "KMAX_MAP", "truncated"),
    (Reader::EcnCheck, ECN_100G_ONLY, 1, "KMIN_MAP", "25000000000 bps"),
    (Reader::EcnCheck, "", 0, "KMIN_MAP", "100000000000 bps"),
    (Reader::Htsim, "Nodes 3\nConnections 1\n0->1 id 1 start 5 size\n", 3, "size", "no value"),
    (Reader::Htsim, "Nodes 3\nConnections 1\n0-1 id 1 start 5 size 5\n", 3, "0-1", "unknown line"),
    (Reader::Htsim, "Nodes 3\nConnections 1\nx->1 start 5 size 5\n", 3, "src", "not a non-negative integer"),
    (Reader::Htsim, "Nodes 3\nConnections 1\n0->1 start 5ps size 5\n", 3, "start", "not a decimal"),
    (Reader::Htsim, "Nodes 3\nConnections 2\n0->1 id 4 start 5 size 5\n1->2 id 4 start 6 size 5\n", 4, "id", "twice"),
    (Reader::Fct, "0b000d01 0b000a01 10000 100 47652 2000000067 8047\n", 1, "ideal_ns", "expected 8 fields"),
    (Reader::Fct, "0b000d01 0b000a01 10000 100 47652 2000000067 8047 81x6\n", 1, "ideal_ns", "not a non-negative"),
    (Reader::Config, "CC_MODE 2\n", 1, "CC_MODE", "supported modes: 0 (no congestion control"),
    // Scenarios: parse errors, and values found wrong while building, all at their key.
    (Reader::Scenario, "[topology\nkind = \"star\"\n", 1, "topology", "invalid table header"),
    (
        Reader::Scenario,
        "seed = 1\n[topology]\nkind = \"star\"\nhosts = 4\ncolour = \"red\"\n",
        5,
        "topology.colour",
        "unknown field",
    ),
    (Reader::Scenario, "[topology]\nkind = \"star\"\nhosts = \"four\"\n", 3, "topology.hosts", "invalid type"),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\ncolour = 1\n",
        5,
        "fabric.colour",
        "unknown field",
    ),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\nmtu = \"big\"\n",
        5,
        "fabric.mtu",
        "invalid type",
    ),
    (Reader::Scenario, "seed = 1\nseeds = 2\n[topology]\nkind = \"star\"\nhosts = 4\n", 2, "seeds", "unknown field"),
    (Reader::Scenario, "[topology]\nkind = \"fat_tre\"\nk = 4\n", 2, "topology.kind", "unknown variant"),
    (Reader::Scenario, "\n[topology]\nkind = \"star\"\n", 2, "topology.hosts", "missing field"),
    (Reader::Scenario, "[topology]\nkind = \"fat_tree\"\nk = 3\n", 3, "topology.k", "must be even"),
    (Reader::Scenario, "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100Gbitz\"\n", 4, "topology.rate", "unit"),
    (Reader::Scenario, "[topology]\nkind = \"star\"\nhosts = 4\nrate = \"0Gbps\"\n", 4, "topology.rate", "zero"),
    (Reader::Scenario, "[topology]\nkind = \"star\"\nhosts = 0\n", 3, "topology.hosts", "at least 1"),
    (Reader::Scenario, LEAF_SPINE_BOTH, 5, "topology.spines", "exactly one"),
    (
        Reader::Scenario,
        "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nhosts_per_leaf = 16\noversubscription = 3.0\n",
        5,
        "topology.oversubscription",
        "whole number",
    ),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\nips_per_host = 0\n",
        4,
        "topology.ips_per_host",
        "1..=254",
    ),
    (Reader::Scenario, "stop_time = \"10 ms\"\n[topology]\nkind = \"star\"\nhosts = 4\n", 1, "stop_time", ""),
    (Reader::Scenario, STAR4_FLOWS_SIZE_NEGATIVE, 8, "traffic[0].flows[1].size", "invalid value: integer `-5`"),
    (Reader::Scenario, STAR4_FLOWS_TO_SWITCH, 7, "traffic[0].flows[0].dst", "switch"),
    (Reader::Scenario, STAR4_FLOWS_TO_ITSELF, 9, "traffic[0].flows[1].dst", "itself"),
    (Reader::Scenario, STAR4_FLOWS_PG_ZERO, 7, "traffic[0].flows[0].pg", "not a data class"),
    (Reader::Scenario, STAR4_FLOWS_BAD_IP, 8, "traffic[0].flows[0].src_ip_index", "owns 2 address(es)"),
    (Reader::Scenario, STAR4_INCAST_UNKNOWN_HOST, 9, "traffic[1].receiver", "unknown host 99"),
    (Reader::Scenario, STAR4_POISSON_LOAD, 8, "traffic[0].load", "must be in (0, 1]"),
    (Reader::Scenario, STAR4_MISSING_CDF, 7, "traffic[0].cdf", "cannot read no/such/cdf.txt"),
    (
        Reader::Scenario,
        "[topology]\nkind = \"hpcc_file\"\npath = \"no/such/topology.txt\"\n",
        3,
        "topology.path",
        "cannot read",
    ),
    (Reader::Scenario, STAR4_PERMUTATION_EMPTY, 7, "traffic[0].size", "at least 1 byte"),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\nmtu = 0\n",
        5,
        "fabric.mtu",
        "at least 1 byte",
    ),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\nrto = \"0ns\"\n",
        5,
        "fabric.rto",
        "positive",
    ),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\nbuffer_mb = -1.0\n",
        5,
        "fabric.buffer_mb",
        "positive",
    ),
    (Reader::Scenario, "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\ncc = \"cubic\"\n", 5, "fabric.cc", "cubic"),
    (
        Reader::Scenario,
        "[topology]\nkind = \"star\"\nhosts = 4\n[fabric]\ncc = \"dcqcn\"\n[fabric.cc_params]\nrate_ai = 20\n",
        7,
        "fabric.cc_params.rate_ai",
        "rate string",
    ),
];

#[test]
fn bad_inputs_name_file_line_and_field() {
    for (i, &(reader, text, line, field, msg)) in BAD_INPUTS.iter().enumerate() {
        let path = PathBuf::from(format!("case{i}.txt"));
        let err = run(reader, text, &path).expect_err(&format!("case {i} ({reader:?}) {text:?} must fail"));
        let shown = err.to_string();
        match &err {
            Error::Input { loc, msg: m } => {
                assert_eq!(loc.file, path, "case {i}: {shown}");
                assert_eq!((loc.line, loc.field.as_str()), (line, field), "case {i}: {shown}");
                assert!(m.contains(msg), "case {i}: `{msg}` not in {shown}");
            }
            other => panic!("case {i}: expected Error::Input, got {other:?}"),
        }
        let prefix = if line > 0 {
            format!("case{i}.txt:{line}: field `{field}`")
        } else {
            format!("case{i}.txt: field `{field}`")
        };
        assert!(shown.starts_with(&prefix), "case {i}: {shown}");
    }
}

#[test]
fn unsupported_htsim_features_are_typed() {
    for text in [
        "Nodes 3\nConnections 1\nFailures 1\n0->1 start 1 size 1\n",
        // Triggers run as a job (`parse_cm_traffic`); the flows-only reader says so.
        "Nodes 3\nConnections 1\n0->1 id 1 trigger 2 size 1\n",
    ] {
        let e = parse_cm(text, Path::new("t.cm"), &[NodeId(0), NodeId(1), NodeId(2)]).unwrap_err();
        assert!(matches!(e, Error::Unsupported(ref m) if m.starts_with("t.cm:")), "{e:?}");
    }
}

#[test]
fn missing_files_are_io_errors() {
    let e = read_topology("/nonexistent/topology.txt").unwrap_err();
    assert!(matches!(e, Error::Io { ref path, .. } if path == Path::new("/nonexistent/topology.txt")), "{e:?}");
    assert!(matches!(read_config("/nonexistent/c.txt"), Err(Error::Io { .. })));
    assert!(matches!(read_cm("/nonexistent/c.cm", &[]), Err(Error::Io { .. })));
}
