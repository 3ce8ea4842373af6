//! ASTRA-sim's system files (docs/chakra.md, "The system file") against trace sets written
//! here: the keys read, the keys accepted because nothing a run does reads them, the ones
//! refused by name, an algorithm with no schedule here refused only when a trace needs it,
//! and the roofline model of GPU compute nodes.

use std::path::Path;

use rdmalab::formats::chakra::schema::{Node, NodeType, Value};
use rdmalab::scenario::Scenario;
use rdmalab::Time;

use crate::chakra::{coll, node, star, write};
use crate::fixtures::run_finished;

#[test]
fn system_keys_not_modelled_are_refused_by_name() {
    use rdmalab::formats::chakra::system::parse_system;
    let p = Path::new("s.json");
    // A list of several algorithms is read for the scenario's `dims` (chakra_dims.rs); an
    // unknown name in it, or a list of no names, is refused.
    let s = parse_system(r#"{"all-reduce-implementation": ["ring", "halvingDoubling"]}"#, p).unwrap();
    assert_eq!(s.per_dim[0].2, ["ring", "halvingDoubling"]);
    let e = parse_system(r#"{"all-reduce-implementation": ["ring", "ringo"]}"#, p).unwrap_err().to_string();
    assert!(e.contains("all-reduce-implementation") && e.contains("\"ringo\""), "{e}");
    let e = parse_system(r#"{"all-reduce-implementation": []}"#, p).unwrap_err().to_string();
    assert!(e.contains("all-reduce-implementation") && e.contains("one per network dimension"), "{e}");
    let e = parse_system(r#"{"intra-dimension-scheduling": "FIFO"}"#, p).unwrap_err().to_string();
    assert!(e.contains("`intra-dimension-scheduling`") && e.contains("not modelled"), "{e}");
    let e = parse_system(r#"{"roofline-enabled": 1}"#, p).unwrap_err().to_string();
    assert!(e.contains("roofline-enabled") && e.contains("peak-perf"), "{e}");
    let s = parse_system(
        r#"{"all-reduce-implementation": ["halvingDoubling"], "endpoint-delay": 10, "preferred-dataset-splits": 4}"#,
        p,
    )
    .unwrap();
    assert_eq!((s.splits, s.endpoint_delay), (Some(4), Some(Time::from_ns(10))));
}

/// The scenario's error, or its run's collectives as (kind, algorithm).
fn with_system(
    prefix: &Path,
    hosts: u64,
    system: &Path,
    more: &str,
) -> std::result::Result<Vec<(String, String)>, String> {
    let toml = star(
        hosts,
        &format!("path = {:?}\nsystem = {:?}\n{more}", prefix.display().to_string(), system.display().to_string()),
    );
    let s = Scenario::from_toml(&toml, Path::new("c.toml")).map_err(|e| e.to_string())?;
    let r = run_finished(s);
    Ok(r.collectives.iter().map(|c| (c.kind.to_string(), c.algorithm.to_string())).collect())
}

#[test]
fn a_system_file_s_algorithm_without_a_schedule_here_matters_only_when_a_trace_needs_it() {
    // ASTRA-sim 2.0's inputs/system/Switch.json and FullyConnected.json (astra-sim/astra-sim
    // at f2dbd01, MIT): each names an algorithm for every kind, some of which have no
    // schedule here (a halving-doubling or direct allgather).
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-s-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let switch = tmp.join("Switch.json");
    std::fs::write(
        &switch,
        r#"{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
  "preferred-dataset-splits": 4, "all-reduce-implementation": ["halvingDoubling"],
  "all-gather-implementation": ["halvingDoubling"], "reduce-scatter-implementation": ["halvingDoubling"],
  "all-to-all-implementation": ["direct"], "collective-optimization": "localBWAware",
  "local-mem-bw": 50, "boost-mode": 0}"#,
    )
    .unwrap();
    let full = tmp.join("FullyConnected.json");
    std::fs::write(
        &full,
        r#"{"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
  "preferred-dataset-splits": 4, "all-reduce-implementation": ["direct"], "all-gather-implementation": ["direct"],
  "reduce-scatter-implementation": ["direct"], "all-to-all-implementation": ["direct"],
  "collective-optimization": "localBWAware", "local-mem-bw": 50, "boost-mode": 0}"#,
    )
    .unwrap();
    let allreduce = write(&tmp.join("ar"), &vec![vec![coll(0, 0, 1 << 20, &[])]; 4]);
    let allgather = write(&tmp.join("ag"), &vec![vec![coll(0, 2, 1 << 20, &[])]; 4]);
    let alltoall = write(&tmp.join("a2a"), &vec![vec![coll(0, 6, 1 << 20, &[])]; 4]);
    let pieces = |kind: &str, algorithm: &str| vec![(kind.to_string(), algorithm.to_string()); 1];
    assert_eq!(with_system(&allreduce, 4, &switch, ""), Ok(pieces("allreduce", "halving_doubling")));
    assert_eq!(with_system(&alltoall, 4, &full, ""), Ok(pieces("alltoall", "direct")));
    let e = with_system(&allgather, 4, &switch, "").unwrap_err();
    assert!(e.contains("Switch.json") && e.contains("`all-gather-implementation`") && e.contains("node 0 (n0)"), "{e}");
    let e = with_system(&allreduce, 4, &full, "").unwrap_err();
    assert!(
        e.contains("`all-reduce-implementation`")
            && e.contains("direct carries out no allreduce here (ring, double_binary_tree, halving_doubling do)"),
        "{e}"
    );
    // The scenario's algorithm wins over the file's.
    let ring = "algorithm = { allreduce = \"ring\" }\n";
    assert_eq!(with_system(&allreduce, 4, &full, ring), Ok(pieces("allreduce", "ring")));
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn system_keys_that_change_nothing_here_are_read() {
    use rdmalab::formats::chakra::system::parse_system;
    let p = Path::new("s.json");
    // ASTRA-sim's inputs/system/analytical/hgx_h100_32gpu.json's keys (its logs, the memory
    // bus off) and the bus's parameters.
    parse_system(
        r#"{"trace-enabled": 1, "track-local-mem": 0, "local-mem-trace-filename": "mem_trace/local_memory_trace",
            "model-shared-bus": 0, "L": 0, "o": 0, "g": 0, "G": 0.0038, "local-reduction-delay": 1, "replay-only": 0,
            "roofline-enabled": 0, "peak-perf": 700, "local-mem-bw": 3350}"#,
        p,
    )
    .unwrap();
    for (json, key, what) in [
        (r#"{"model-shared-bus": 1}"#, "model-shared-bus", "shared memory bus"),
        (r#"{"replay-only": 1}"#, "replay-only", "recorded duration"),
        (r#"{"all-reduce-implementation-chakra": ["x"]}"#, "all-reduce-implementation-chakra", "custom collectives"),
        (r#"{"all-to-all-implementation": ["direct4"]}"#, "all-to-all-implementation", "window of 4"),
        (r#"{"roofline-enabled": 1, "peak-perf": 900}"#, "roofline-enabled", "local-mem-bw"),
    ] {
        let e = parse_system(json, p).unwrap_err().to_string();
        assert!(e.contains(&format!("`{key}`")) && e.contains(what), "{e}");
    }
}

#[test]
fn the_roofline_model_times_gpu_compute_from_its_operations_and_bytes() {
    // FullyConnected_Roofline.json's model (astra-sim/astra-sim's inputs/system): 2,048 TFLOPS
    // and 4,096 GB/s. A node of 4.096e9 operations on 1 MB is compute bound: 2 us; one of
    // 4,096 operations on 4.096 MB is memory bound: its bytes at 4,096 GB/s, 1 us. A CPU
    // operator keeps its recorded 5 us, as ASTRA-sim replays it.
    let tmp = std::env::temp_dir().join(format!("rdmalab-chakra-r-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let sys = tmp.join("roofline.json");
    std::fs::write(&sys, r#"{"roofline-enabled": 1, "peak-perf": 2048, "local-mem-bw": 4096}"#).unwrap();
    let gpu = |id: u64, deps: &[u64], ops: u64, bytes: u64| {
        let attrs = [("num_ops", Value::Uint64(ops)), ("tensor_size", Value::Uint64(bytes))];
        Node { duration_micros: 1000, ..node(id, NodeType::CompNode, deps, &attrs) }
    };
    let cpu = Node { duration_micros: 5, ..node(2, NodeType::CompNode, &[1], &[("is_cpu_op", Value::Bool(true))]) };
    let rank = || {
        vec![
            gpu(0, &[], 4_096_000_000, 1_000_000),
            gpu(1, &[0], 4096, 4_096_000),
            cpu.clone(),
            coll(3, 0, 1 << 16, &[2]),
        ]
    };
    let p = write(&tmp.join("r"), &[rank(), rank()]);
    let toml = star(2, &format!("path = {:?}\nsystem = {:?}\n", p.display().to_string(), sys.display().to_string()));
    let r = run_finished(Scenario::from_toml(&toml, Path::new("c.toml")).unwrap());
    let t = r.table("chakra").expect("a chakra table");
    let f = |c: &str| t.column(c).and_then(|c| c.as_f64()).unwrap().to_vec();
    let (start, end) = (f("start_ps"), f("end_ps"));
    let took: Vec<f64> = (0..3).map(|i| ((end[i] - start[i]) / 1000.0).round()).collect();
    // ASTRA-sim cuts each time down to whole nanoseconds.
    assert!((took[0] - 2000.0).abs() <= 1.0 && (took[1] - 1000.0).abs() <= 1.0 && took[2] == 5000.0, "{took:?}");
    // Under the roofline model a GPU compute node needs both.
    let q = write(
        &tmp.join("q"),
        &vec![vec![Node { duration_micros: 3, ..node(0, NodeType::CompNode, &[], &[]) }, coll(1, 0, 1 << 16, &[0])]; 2],
    );
    let toml = star(2, &format!("path = {:?}\nsystem = {:?}\n", q.display().to_string(), sys.display().to_string()));
    let e = Scenario::from_toml(&toml, Path::new("c.toml")).unwrap_err().to_string();
    assert!(e.contains("rank 0, node 0 (n0)") && e.contains("num_ops"), "{e}");
    let _ = std::fs::remove_dir_all(&tmp);
}
