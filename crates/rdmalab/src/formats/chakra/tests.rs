//! The reader against the traces Chakra's own tools wrote (ASTRA-sim's examples, in
//! `../shared/traces/astra-sim`, copied from astra-sim/astra-sim's `examples/`; skipped with a
//! note where absent).

use super::*;

fn examples() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/astra-sim/examples");
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: no ASTRA-sim traces at {}", p.display());
        None
    }
}

#[test]
fn every_trace_set_parses_as_written() {
    let Some(ex) = examples() else { return };
    for c in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"] {
        for n in [4u32, 8, 16] {
            let prefix = ex.join(format!("workload/microbenchmarks/{c}/{n}npus_1MB/{c}"));
            assert_eq!(count_ranks(&prefix).unwrap(), n);
            for t in read_traces(&prefix, n).unwrap() {
                // One collective node of 1 MB per rank, named after the set.
                assert_eq!(t.nodes.len(), 1, "{}", t.path.display());
                let node = &t.nodes[0];
                assert!(matches!(node.kind, NodeKind::Collective { pg: None, .. }));
                assert_eq!((node.bytes, node.name.as_str()), (1 << 20, format!("{c}_{n}npus_1MB").as_str()));
                assert_eq!((t.version.as_str(), node.is_cpu_op), ("0.0.4", Some(false)));
            }
        }
    }
    // The ring AllReduce as MSCCL writes it: per rank 14 sends and 14 receives of S/8 to the
    // next rank and from the previous one, and 7 reductions of 7 us between them.
    let prefix = ex.join("system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce");
    for t in read_traces(&prefix, count_ranks(&prefix).unwrap()).unwrap() {
        let r = t.rank;
        let count = |k: &NodeKind| t.nodes.iter().filter(|n| &n.kind == k).count();
        assert_eq!(count(&NodeKind::Send { dst: (r + 1) % 8, tag: 0 }), 14);
        assert_eq!(count(&NodeKind::Recv { src: (r + 7) % 8, tag: 0 }), 14);
        let comp: Vec<Time> = t.nodes.iter().filter(|n| n.kind == NodeKind::Compute).map(|n| n.duration).collect();
        assert_eq!(comp, vec![Time::from_us(7); 7]);
        assert!(t.nodes.iter().filter(|n| n.kind != NodeKind::Compute).all(|n| n.bytes == 131_072));
        assert!(t.metadata.iter().any(|(k, v)| k == "schema" && v.contains("chakra")));
    }
}
