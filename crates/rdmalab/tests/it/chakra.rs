//! Chakra execution traces (docs/chakra.md) against the traces Chakra's own tools wrote for
//! ASTRA-sim's examples (astra-sim/astra-sim's `examples/`, looked for in
//! `../shared/traces/astra-sim`, skipped with a note where absent):
//! every set runs; on a star each collective takes its closed form (docs/collectives.md, the
//! same forms `collectives.rs` checks exactly); the ring AllReduce written as point-to-point
//! sends takes the native ring's time; bad traces are refused naming file, rank and node;
//! 1, 2 and 4 threads agree.

use std::path::{Path, PathBuf};

use prost::Message;
use rdmalab::formats::chakra::schema::{Attribute, GlobalMetadata, Node, NodeType, Value};
use rdmalab::scenario::Scenario;
use rdmalab::sim::{Results, SimConfig, StopReason};
use rdmalab::{Rate, Time};

use crate::fixtures::{run_finished, scenario, wires};

const B: Rate = Rate::gbps(100);
const D: Time = Time::from_ns(1000);

/// ASTRA-sim's examples, or `None` (the test is skipped) where the shared folder is absent.
fn examples() -> Option<PathBuf> {
    let dir = std::env::var_os("RDMALAB_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
        .join("traces/astra-sim/examples");
    if dir.exists() {
        Some(dir)
    } else {
        eprintln!("skipped: no ASTRA-sim traces at {} (the shared folder beside the checkout)", dir.display());
        None
    }
}

/// The twelve microbenchmark sets: (collective, ranks, prefix).
fn microbenchmarks(ex: &Path) -> Vec<(&'static str, u64, PathBuf)> {
    let mut v = Vec::new();
    for c in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"] {
        for n in [4u64, 8, 16] {
            v.push((c, n, ex.join(format!("workload/microbenchmarks/{c}/{n}npus_1MB/{c}"))));
        }
    }
    v
}

pub(crate) fn star(hosts: u64, traffic: &str) -> String {
    format!(
        "[topology]\nkind = \"star\"\nhosts = {hosts}\n[fabric]\nack_interval = 1000000\n[[traffic]]\nkind = \"chakra\"\n{traffic}"
    )
}

fn arrival(b: u64) -> Time {
    crate::fixtures::arrival(b, B, D)
}

fn tx_ack() -> Time {
    crate::fixtures::tx_ack(B)
}

/// The closed form of `kind` over `n` ranks of `s` bytes in one piece on the star.
fn closed_form(kind: &str, n: u64, s: u64) -> Time {
    let steps = |k: u64| Time(k * arrival(s / n).0 + (k - 1) * tx_ack().0);
    match kind {
        "all_reduce" => steps(2 * (n - 1)),
        "all_gather" | "reduce_scatter" => steps(n - 1),
        // Direct: the n-1 pieces leave the uplink back to back, the last one's last packet
        // then crosses the switch.
        _ => {
            let all: u64 = (1..n).flat_map(|_| wires(s / n)).map(|w| B.tx_time(w).0).sum();
            Time(all + B.tx_time(*wires(s / n).iter().max().unwrap()).0 + 2 * D.0)
        }
    }
}

pub(crate) fn took(r: &Results) -> Time {
    assert_eq!(r.collectives.len(), 1);
    let c = &r.collectives[0];
    c.end.expect("finished") - c.start
}

#[test]
fn every_microbenchmark_runs_in_its_closed_form() {
    let Some(ex) = examples() else { return };
    for (kind, n, prefix) in microbenchmarks(&ex) {
        let r = run_finished(scenario(&star(n, &format!("path = {:?}\n", prefix.display().to_string())), "c.toml"));
        let (t, expect) = (took(&r), closed_form(kind, n, 1 << 20));
        let err = (t.ps() as f64 / expect.ps() as f64 - 1.0).abs();
        assert!(err < 0.03, "{kind} over {n}: {t} against {expect} ({:.2} %)", err * 100.0);
        let c = &r.collectives[0];
        assert_eq!((c.name.as_str(), c.ranks as u64, c.size), (format!("{kind}_{n}npus_1MB#0").as_str(), n, 1 << 20));
    }
}

#[test]
fn the_system_file_cuts_a_collective_into_pieces_in_flight_together() {
    let Some(ex) = examples() else { return };
    let prefix = ex.join("workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce");
    let (n, piece) = (8u64, (1u64 << 20) / 4 / 8);
    let steps = 2 * (n - 1);
    // Ring_4chunks.json: 4 pieces, one in flight, 10 ns at each endpoint: four rings of S/4
    // one after the other, each step but a ring's first forwarding what it received.
    let sys = ex.join("system/native_collectives/Ring_4chunks.json");
    let toml =
        star(8, &format!("path = {:?}\nsystem = {:?}\n", prefix.display().to_string(), sys.display().to_string()));
    let one = Time(steps * arrival(piece).0 + (steps - 1) * (tx_ack().0 + 10_000));
    let expect = Time(4 * one.0);
    let t = took(&run_finished(scenario(&toml, "c.toml")));
    let err = (t.ps() as f64 / expect.ps() as f64 - 1.0).abs();
    assert!(err < 0.03, "one in flight: {t} against {expect} ({:.2} %)", err * 100.0);
    // Two in flight (the key overrides the file's): two rings share each link, so each step
    // carries two messages of S/(4n) back to back; two waves of them.
    let toml = star(
        8,
        &format!(
            "path = {:?}\nsystem = {:?}\nactive_chunks = 2\n",
            prefix.display().to_string(),
            sys.display().to_string()
        ),
    );
    let two: u64 = wires(piece).iter().chain(&wires(piece)).map(|&w| B.tx_time(w).0).sum();
    let step = two + B.tx_time(*wires(piece).iter().max().unwrap()).0 + 2 * D.0 + 2 * tx_ack().0 + 10_000;
    let expect = Time(2 * steps * step);
    let t = took(&run_finished(scenario(&toml, "c.toml")));
    let err = (t.ps() as f64 / expect.ps() as f64 - 1.0).abs();
    assert!(err < 0.03, "two in flight: {t} against {expect} ({:.2} %)", err * 100.0);
}

#[test]
fn the_point_to_point_ring_takes_the_native_ring_s_time() {
    let Some(ex) = examples() else { return };
    let custom = ex.join("system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce");
    let native = ex.join("workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce");
    // The custom trace's reductions are compute nodes of 7 us each; left out, as the native
    // ring has none.
    // Both measured alike: from the first post to the last message's completion (its ACK).
    let span = |r: &Results| {
        let first = r.records.iter().map(|f| f.start).min().unwrap();
        r.records.iter().map(|f| f.start + f.fct).max().unwrap() - first
    };
    let r = run_finished(scenario(
        &star(8, &format!("path = {:?}\ncompute_scale = 0\n", custom.display().to_string())),
        "c.toml",
    ));
    assert!(r.collectives.is_empty());
    let p2p = span(&r);
    let t = span(&run_finished(scenario(&star(8, &format!("path = {:?}\n", native.display().to_string())), "c.toml")));
    // 14 steps; within one packet's time a step.
    let slack = 14 * B.tx_time(SimConfig::default().mtu as u64 + SimConfig::default().header_bytes as u64).0;
    assert!(p2p.0.abs_diff(t.0) <= slack, "point-to-point {p2p}, native {t}");
    assert_eq!(r.records.len(), 8 * 14);
    // With the recorded compute, a rank's 7 reductions of 7 us each lie on the critical path
    // (every rank reduces in the same step): 49 us more, within a packet's time a step.
    let r = run_finished(scenario(&star(8, &format!("path = {:?}\n", custom.display().to_string())), "c.toml"));
    let with = span(&r);
    assert!((with - p2p).0.abs_diff(Time::from_us(49).0) <= slack, "{with} vs {p2p}");
}

/// A node of a trace written here.
pub(crate) fn node(id: u64, ty: NodeType, deps: &[u64], attrs: &[(&str, Value)]) -> Node {
    Node {
        id,
        name: format!("n{id}"),
        r#type: ty as i32,
        data_deps: deps.to_vec(),
        attr: attrs.iter().map(|(k, v)| Attribute { name: k.to_string(), value: Some(v.clone()) }).collect(),
        ..Default::default()
    }
}

/// Writes `ranks` as `<dir>/t.<r>.et`; returns the prefix.
pub(crate) fn write(dir: &Path, ranks: &[Vec<Node>]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (r, nodes) in ranks.iter().enumerate() {
        let mut buf = Vec::new();
        GlobalMetadata { version: "0.0.4".into(), attr: vec![] }.encode_length_delimited(&mut buf).unwrap();
        nodes.iter().for_each(|n| n.encode_length_delimited(&mut buf).unwrap());
        std::fs::write(dir.join(format!("t.{r}.et")), buf).unwrap();
    }
    dir.join("t")
}

fn send(id: u64, dst: i64, deps: &[u64]) -> Node {
    node(id, NodeType::CommSendNode, deps, &[("comm_dst", Value::Int64(dst)), ("comm_size", Value::Int64(8192))])
}

fn recv(id: u64, src: i64, deps: &[u64]) -> Node {
    node(id, NodeType::CommRecvNode, deps, &[("comm_src", Value::Int64(src)), ("comm_size", Value::Int64(8192))])
}

pub(crate) fn error(prefix: &Path, hosts: u64) -> String {
    match Scenario::from_toml(
        &star(hosts.max(2), &format!("path = {:?}\n", prefix.display().to_string())),
        Path::new("c.toml"),
    ) {
        Ok(_) => panic!("accepted {}", prefix.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_traces_are_refused_naming_file_rank_and_node() {
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-{}", std::process::id()));
    // A cycle inside one file.
    let p = write(
        &tmp.join("cycle"),
        &[
            vec![send(0, 1, &[2]), recv(1, 1, &[0]), node(2, NodeType::CompNode, &[1], &[])],
            vec![recv(0, 0, &[]), send(1, 0, &[0])],
        ],
    );
    let e = error(&p, 2);
    assert!(
        e.contains("t.0.et") && e.contains("rank 0, node") && e.contains("cycle") && e.contains("0 -> 2 -> 1 -> 0"),
        "{e}"
    );
    // Two ranks that each wait to receive before they send.
    let p =
        write(&tmp.join("wait"), &[vec![recv(0, 1, &[]), send(1, 1, &[0])], vec![recv(0, 0, &[]), send(1, 0, &[0])]]);
    let e = error(&p, 2);
    assert!(
        e.contains("wait on each other") && e.contains("rank 1, node 1 (n1)") && e.contains("rank 0, node 1 (n1)"),
        "{e}"
    );
    // A send without its receive.
    let p = write(&tmp.join("lonely"), &[vec![send(0, 1, &[]), send(1, 1, &[0])], vec![recv(0, 0, &[])]]);
    let e = error(&p, 2);
    assert!(
        e.contains("t.0.et") && e.contains("rank 0, node 1 (n1)") && e.contains("a send without its receive"),
        "{e}"
    );
    // A send to a rank that has no file.
    let p = write(&tmp.join("missing"), &[vec![send(0, 2, &[])], vec![recv(0, 0, &[])]]);
    let e = error(&p, 2);
    assert!(e.contains("rank 0, node 0 (n0)") && e.contains("rank 2 has no trace file"), "{e}");
    // A rank file missing from a list of hosts.
    let toml = star(3, &format!("path = {:?}\nranks = [0, 1, 2]\n", p.display().to_string()));
    let e = Scenario::from_toml(&toml, Path::new("c.toml")).unwrap_err().to_string();
    assert!(e.contains("t.2.et") && e.contains("rank 2") && e.contains("cannot read"), "{e}");
    // A truncated file: the node after the last whole one is named.
    let p =
        write(&tmp.join("cut"), &[vec![send(0, 1, &[]), send(1, 1, &[0])], vec![recv(0, 0, &[]), recv(1, 0, &[0])]]);
    let f = tmp.join("cut/t.0.et");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 3]).unwrap();
    let e = error(&p, 2);
    assert!(e.contains("t.0.et") && e.contains("rank 0, node after node 0") && e.contains("truncated"), "{e}");
    // A node kind no run models.
    let p = write(&tmp.join("kind"), &[vec![node(0, NodeType::CheckpointNode, &[], &[])], vec![]]);
    let e = error(&p, 2);
    assert!(e.contains("rank 0, node 0 (n0).type") && e.contains("CHECKPOINT_NODE"), "{e}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_dependency_on_a_node_the_file_lacks_is_refused_as_astra_sim_refuses_it() {
    // Chakra's PyTorch converter of 2023 (schema 1.0.1, Chakra's tests/data/feeder_tests_trace)
    // left out nodes that others name as control dependencies. ASTRA-sim's trace reader refuses
    // such a file as it loads it; so does the reader here, naming the first such dependency and
    // counting them all.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-a-{}", std::process::id()));
    let ctrl = |id: u64, deps: &[u64]| Node { ctrl_deps: deps.to_vec(), ..node(id, NodeType::CompNode, &[], &[]) };
    let rank0 =
        vec![coll(0, 0, 1 << 20, &[]), ctrl(5, &[0, 3, 4]), ctrl(6, &[3]), node(7, NodeType::CompNode, &[6], &[])];
    let p = write(&tmp.join("absent"), &[rank0, vec![coll(0, 0, 1 << 20, &[])]]);
    let e = error(&p, 2);
    assert!(e.contains("t.0.et") && e.contains("`rank 0, node 5 (n5).ctrl_deps`: no node 3 in this file"), "{e}");
    assert!(e.contains("(3 dependencies of 2 nodes name 2 nodes the file does not hold)"), "{e}");
    assert!(e.contains("ASTRA-sim refuses such a file too"), "{e}");
    // One data dependency on an absent node: named by its list, with no count.
    let p = write(&tmp.join("one"), &[vec![node(1, NodeType::CompNode, &[9], &[])], vec![]]);
    let e = error(&p, 2);
    assert!(e.contains("`rank 0, node 1 (n1).data_deps`: no node 9 in this file; ASTRA-sim"), "{e}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn traces_run_the_same_at_1_2_and_4_threads() {
    let Some(ex) = examples() else { return };
    let prefix = ex.join("workload/microbenchmarks/all_reduce/16npus_1MB/all_reduce");
    let toml = format!(
        "seed = 3\n[topology]\nkind = \"fat_tree\"\nk = 4\n[fabric]\ncc = \"dcqcn\"\n[[traffic]]\nkind = \"chakra\"\npath = {:?}\nsplits = 4\nactive_chunks = 2\n",
        prefix.display().to_string()
    );
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("chakra", &toml);
    assert_eq!(stop, StopReason::Finished);
    assert!(r.collectives.len() == 1 && r.collectives[0].end.is_some());
}

#[test]
fn written_collectives_read_back_to_the_same_run() {
    use rdmalab::formats::chakra::write::write_collectives;
    use rdmalab::formats::chakra::{read_traces, NodeKind};
    // A repeated ring AllReduce that starts late and an all-to-all beside it, on other hosts.
    let toml = "[topology]\nkind = \"star\"\nhosts = 8\n[fabric]\nack_interval = 1000000\n\
        [[collective]]\nname = \"g\"\nkind = \"allreduce\"\nranks = [0, 1, 2, 3]\nsize = 400000\nchunk = \"64KB\"\nrepeat = 2\nstart = \"3us\"\n\
        [[collective]]\nname = \"a\"\nkind = \"alltoall\"\nranks = [4, 5, 6, 7]\nsize = 300000\nchunk = \"64KB\"\n";
    let s = scenario(toml, "c.toml");
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-w-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let hosts: Vec<rdmalab::NodeId> = (0..8).map(rdmalab::NodeId).collect();
    let files = write_collectives(&tmp.join("w"), &hosts, &s.collectives).unwrap();
    assert_eq!(files.len(), 8);
    // Rank 0: the start as compute, then two iterations, each after the one before.
    let t = read_traces(&tmp.join("w"), 8).unwrap();
    let kinds: Vec<&str> = t[0].nodes.iter().map(|n| n.kind.name()).collect();
    assert_eq!(kinds, ["compute", "collective", "collective"]);
    assert_eq!((t[0].nodes[0].duration, t[0].nodes[2].ctrl_deps.clone()), (Time::from_us(3), vec![1]));
    assert!(matches!(&t[5].nodes[0].kind, NodeKind::Collective { pg: Some(p), .. } if p == "a"));
    let direct = run_finished(s);
    let traced = run_finished(scenario(
        &star(8, &format!("path = {:?}\nchunk = \"64KB\"\n", tmp.join("w").display().to_string())),
        "c.toml",
    ));
    let times = |r: &Results| {
        let mut v: Vec<(String, Time, Option<Time>)> =
            r.collectives.iter().map(|c| (c.name.trim_end_matches("#0").to_string(), c.start, c.end)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let names = |r: &Results| times(r).into_iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(names(&traced), ["a", "g", "g#1"]);
    assert_eq!(
        times(&traced),
        times(&direct).into_iter().map(|(n, s, e)| (n.trim_end_matches("#0").to_string(), s, e)).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn each_node_is_a_row_with_its_times_and_what_it_waited_on() {
    let Some(ex) = examples() else { return };
    let custom = ex.join("system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce");
    let r = run_finished(scenario(&star(8, &format!("path = {:?}\n", custom.display().to_string())), "c.toml"));
    let t = r.table("chakra").expect("a chakra table");
    let u = |c: &str| t.column(c).and_then(|c| c.as_u64()).unwrap().to_vec();
    let f = |c: &str| t.column(c).and_then(|c| c.as_f64()).unwrap().to_vec();
    // 14 sends, 14 receives and 7 reductions a rank, every one done.
    assert_eq!(t.rows(), 8 * 35);
    let (rank, id, start, end, waited) = (u("rank"), u("node_id"), f("start_ps"), f("end_ps"), f("waited_on"));
    assert!(end.iter().all(|e| e.is_finite()));
    let at = |r: u64, n: u64| (0..t.rows()).find(|&i| rank[i] == r && id[i] == n).unwrap();
    // Rank 3's first reduction (node 2) starts as its first receive (node 1) ends, and
    // takes its recorded 7 us.
    let (c, v) = (at(3, 2), at(3, 1));
    assert_eq!((start[c], waited[c]), (end[v], 1.0));
    assert_eq!(end[c] - start[c], 7e6);
    // A send (node 3 after the reduction) is posted as the reduction ends.
    assert_eq!(start[at(3, 3)], end[c]);
    // The last node of all ends as the last message is acknowledged or placed.
    let last = r.records.iter().map(|x| x.start + x.fct).max().unwrap();
    assert!(end.iter().cloned().fold(0.0, f64::max) <= last.0 as f64);
}

#[test]
fn a_simai_workload_exported_as_traces_runs_as_the_workload_on_a_multipath_fabric() {
    use rdmalab::scenario::chakra_export::export_toml;
    // examples/simai.toml's workload with updates of 1 us (Chakra holds whole microseconds),
    // on its rail fabric with two spines: TP, DP, EP and DP_EP groups, the groups' QPs hashed
    // by ECMP. The traces' process groups take SimAI's communicators and open their QPs in
    // SimAI's order, so every collective starts and ends at the same picosecond.
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-x-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let work = std::fs::read_to_string(ex.join("simai_tiny.txt")).unwrap().replace("  100\n", "  1000\n");
    std::fs::write(tmp.join("w.txt"), work).unwrap();
    let toml = std::fs::read_to_string(ex.join("simai.toml")).unwrap().replace("simai_tiny.txt", "w.txt");
    let file = tmp.join("s.toml");
    let e = export_toml(&toml, &file, &tmp.join("tr")).unwrap();
    assert!(e.files.len() == 8 && e.notes.is_empty() && e.hosts == (0..8).collect::<Vec<u32>>());
    let at = toml.find("[[traffic]]").unwrap();
    let traced = format!("{}{}", &toml[..at], e.traffic);
    let times = |r: &Results| {
        let mut v: Vec<(String, Time, Option<Time>)> = Vec::new();
        for c in &r.collectives {
            let name = c.name.trim_end_matches("#0").to_string();
            match v.iter_mut().find(|x| x.0 == name) {
                Some(x) => (x.1, x.2) = (x.1.min(c.start), x.2.max(c.end)),
                None => v.push((name, c.start, c.end)),
            }
        }
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let a = times(&run_finished(Scenario::from_toml(&toml, &file).unwrap()));
    let b = times(&run_finished(Scenario::from_toml(&traced, &file).unwrap()));
    assert_eq!(a.len(), 13);
    assert_eq!(a, b);
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn metadata_and_invalid_nodes_are_skipped_as_astra_sim_skips_them() {
    // Chakra's PyTorch converter writes the process groups' set-up as a METADATA_NODE that
    // the rest of the trace depends on; ASTRA-sim skips it, and an INVALID_NODE too.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-m-{}", std::process::id()));
    let coll = || {
        let attrs = [("comm_type", Value::Int64(0)), ("comm_size", Value::Int64(1 << 20))];
        Node { ctrl_deps: vec![0], ..node(2, NodeType::CommCollNode, &[1], &attrs) }
    };
    let skipped = || vec![node(0, NodeType::MetadataNode, &[], &[]), node(1, NodeType::InvalidNode, &[0], &[]), coll()];
    let p = write(&tmp.join("meta"), &[skipped(), skipped()]);
    let r = run_finished(scenario(&star(2, &format!("path = {:?}\n", p.display().to_string())), "c.toml"));
    // The same collective after two compute nodes of no duration.
    let comp = || vec![node(0, NodeType::CompNode, &[], &[]), node(1, NodeType::CompNode, &[0], &[]), coll()];
    let q = write(&tmp.join("comp"), &[comp(), comp()]);
    let base = run_finished(scenario(&star(2, &format!("path = {:?}\n", q.display().to_string())), "c.toml"));
    assert_eq!((took(&r), r.collectives[0].start), (took(&base), base.collectives[0].start));
    let t = r.table("chakra").expect("a chakra table");
    let Some(rdmalab::stats::table::Column::Text(kinds)) = t.column("kind") else { panic!("a kind column") };
    assert_eq!(kinds, &["skipped", "skipped", "collective", "skipped", "skipped", "collective"]);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A collective node of `kind` (`comm_type`) and `size` bytes.
pub(crate) fn coll(id: u64, kind: i64, size: i64, deps: &[u64]) -> Node {
    node(id, NodeType::CommCollNode, deps, &[("comm_type", Value::Int64(kind)), ("comm_size", Value::Int64(size))])
}

#[test]
fn a_rank_left_out_an_empty_file_and_an_old_schema_are_refused_by_name() {
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-e-{}", std::process::id()));
    // Three rank files, two hosts listed: the third rank would be dropped without a word.
    let p = write(&tmp.join("three"), &vec![vec![coll(0, 0, 1 << 16, &[])]; 3]);
    let toml = star(3, &format!("path = {:?}\nranks = [0, 1]\n", p.display().to_string()));
    let e = Scenario::from_toml(&toml, Path::new("c.toml")).unwrap_err().to_string();
    assert!(e.contains("traffic[0].ranks") && e.contains("t.2.et exists"), "{e}");
    // A rank file of no bytes.
    std::fs::write(tmp.join("three/t.1.et"), b"").unwrap();
    let e = error(&p, 3);
    assert!(e.contains("t.1.et") && e.contains("rank 1, global metadata") && e.contains("empty"), "{e}");
    // A file without global metadata, as Chakra wrote before its schema 0.0.4.
    let mut buf = Vec::new();
    node(0, NodeType::CompNode, &[], &[]).encode_length_delimited(&mut buf).unwrap();
    std::fs::write(tmp.join("three/t.1.et"), buf).unwrap();
    let e = error(&p, 3);
    assert!(
        e.contains("rank 1, global metadata") && e.contains("the first message is a node (n0)") && e.contains("0.0.4"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_rank_that_only_receives_a_broadcast_starts_as_its_dependencies_end() {
    // A broadcast's last rank posts nothing: its row starts once its dependency (a compute
    // node of 3 us) is done, not never.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-b-{}", std::process::id()));
    let rank = || vec![Node { duration_micros: 3, ..node(0, NodeType::CompNode, &[], &[]) }, coll(1, 5, 1 << 16, &[0])];
    let p = write(&tmp.join("b"), &[rank(), rank(), rank()]);
    let r = run_finished(scenario(&star(3, &format!("path = {:?}\n", p.display().to_string())), "c.toml"));
    let t = r.table("chakra").expect("a chakra table");
    let f = |c: &str| t.column(c).and_then(|c| c.as_f64()).unwrap().to_vec();
    let (start, end) = (f("start_ps"), f("end_ps"));
    // Rows: each rank's compute, then its part of the broadcast.
    // The root's part starts with its first post, the last rank's as its compute ends (the
    // middle rank's with its first forward, later).
    assert_eq!([start[1], start[5]], [3e6, 3e6], "{start:?}");
    assert!(start[3] > 3e6);
    assert!(end[5] > start[5] && end[5].is_finite());
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn a_collective_of_one_rank_or_no_bytes_moves_nothing() {
    // A trace converted from PyTorch holds the collectives of every process group, some of
    // one rank (the data-parallel group of a run without data parallelism); and a collective
    // may carry no bytes. Each is done as its dependencies are; the allreduce after them
    // takes the time it takes alone.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-o-{}", std::process::id()));
    let solo = |r: usize| {
        let attrs = [
            ("comm_type", Value::Int64(0)),
            ("comm_size", Value::Int64(1 << 20)),
            ("pg_name", Value::String(format!("solo{r}"))),
        ];
        node(0, NodeType::CommCollNode, &[], &attrs)
    };
    let rank = |r: usize| vec![solo(r), coll(1, 2, 0, &[0]), coll(2, 0, 1 << 20, &[1])];
    let p = write(&tmp.join("o"), &[rank(0), rank(1)]);
    let r = run_finished(scenario(&star(2, &format!("path = {:?}\n", p.display().to_string())), "c.toml"));
    let alone = write(&tmp.join("a"), &[vec![coll(2, 0, 1 << 20, &[])], vec![coll(2, 0, 1 << 20, &[])]]);
    let base = run_finished(scenario(&star(2, &format!("path = {:?}\n", alone.display().to_string())), "c.toml"));
    assert_eq!((took(&r), r.collectives[0].start), (took(&base), base.collectives[0].start));
    let t = r.table("chakra").expect("a chakra table");
    let f = |c: &str| t.column(c).and_then(|c| c.as_f64()).unwrap().to_vec();
    assert_eq!((f("start_ps")[..2].to_vec(), f("end_ps")[..2].to_vec()), (vec![0.0, 0.0], vec![0.0, 0.0]));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn the_cpu_side_of_a_collective_without_comm_type_is_skipped() {
    // Chakra's PyTorch converter (schema 1.0.1, Chakra's tests/data/feeder_tests_trace)
    // writes `c10d::broadcast_` on the CPU as a collective node without `comm_type`, and the
    // NCCL kernel that carries it as a collective node after it.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-c-{}", std::process::id()));
    let cpu = node(0, NodeType::CommCollNode, &[], &[("is_cpu_op", Value::Bool(true))]);
    let p =
        write(&tmp.join("c"), &[vec![cpu.clone(), coll(1, 0, 1 << 20, &[0])], vec![cpu, coll(1, 0, 1 << 20, &[0])]]);
    let r = run_finished(scenario(&star(2, &format!("path = {:?}\n", p.display().to_string())), "c.toml"));
    let t = r.table("chakra").expect("a chakra table");
    let Some(rdmalab::stats::table::Column::Text(kinds)) = t.column("kind") else { panic!("a kind column") };
    assert_eq!((r.collectives.len(), &kinds[..2]), (1, &["skipped".to_string(), "collective".to_string()][..]));
    // On a GPU, or with its kind given, such a node is the collective it says, or refused.
    let gpu = node(0, NodeType::CommCollNode, &[], &[("is_cpu_op", Value::Bool(false))]);
    let q = write(&tmp.join("g"), &[vec![gpu.clone()], vec![gpu]]);
    assert!(error(&q, 2).contains("needs `comm_type`"));
    let _ = std::fs::remove_dir_all(&tmp);
}
