//! The reader against a small workload written in SimAI's format, and its errors.

use std::path::Path;

use super::*;
use crate::app::collective::Algorithm;
use crate::ids::NodeId;

const TINY: &str = include_str!("../../../../../examples/simai_tiny.txt");

fn p() -> &'static Path {
    Path::new("w.txt")
}

fn err(text: &str) -> String {
    parse_simai(text, p()).unwrap_err().to_string()
}

#[test]
fn the_example_parses_exactly() {
    let w = parse_simai(TINY, p()).unwrap();
    assert_eq!((w.policy, w.tp, w.ep, w.pp, w.all_gpus, w.dp()), (Policy::TransformerFwdInBckwd, 2, 2, 1, 8, 4));
    let names: Vec<&str> = w.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["embedding", "attention", "mlp", "moe_experts", "lm_head"]);
    assert_eq!(w.layers.iter().map(|l| l.line).collect::<Vec<_>>(), [3, 4, 5, 6, 7]);
    let e = &w.layers[0];
    assert_eq!(
        e.fwd,
        Phase { compute: Time::from_ns(12_000), comm: Some((Kind::Allreduce, Group::Tp)), bytes: 524_288 }
    );
    assert_eq!(e.ig, Phase { compute: Time::from_ns(1000), comm: None, bytes: 0 });
    assert_eq!((e.dependency, e.update), (-1, Time::from_ns(100)));
    let m = &w.layers[2];
    assert_eq!(m.fwd.comm, Some((Kind::ReduceScatter, Group::Tp)));
    assert_eq!(m.ig.comm, Some((Kind::Allgather, Group::Tp)));
    assert_eq!(
        (m.wg.comm, m.wg.bytes, m.wg.compute),
        (Some((Kind::Allreduce, Group::Dp)), 3_145_728, Time::from_ns(70_000))
    );
    let moe = &w.layers[3];
    assert_eq!((moe.fwd.comm, moe.ig.comm), (Some((Kind::Alltoall, Group::Ep)), Some((Kind::Alltoall, Group::Ep))));
    assert_eq!(moe.wg.comm, Some((Kind::Allreduce, Group::DpEp)));
}

#[test]
fn groups_are_simai_s() {
    let w = parse_simai(TINY, p()).unwrap();
    let g = |x| w.groups(x);
    assert_eq!(g(Group::Tp), [[0, 1], [2, 3], [4, 5], [6, 7]]);
    assert_eq!(g(Group::Dp), [[0, 2, 4, 6], [1, 3, 5, 7]]);
    // ep = 2: tensor-parallel groups {0,1} and {2,3} form one expert block.
    assert_eq!(g(Group::Ep), [[0, 2], [1, 3], [4, 6], [5, 7]]);
    assert_eq!(g(Group::DpEp), [[0, 4], [1, 5], [2, 6], [3, 7]]);
    for x in [Group::Tp, Group::Dp, Group::Ep, Group::DpEp] {
        let mut all: Vec<u32> = g(x).concat();
        all.sort_unstable();
        assert_eq!(all, (0..8).collect::<Vec<_>>(), "{x:?} partitions the ranks");
    }
}

#[test]
fn the_forward_size_is_raised_to_4096_in_fwd_in_bckwd_only() {
    let row = "l -1 1 ALLREDUCE 100 1 ALLREDUCE 100 1 NONE 0 1\n";
    let w =
        parse_simai(&format!("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 all_gpus: 2\n1\n{row}"), p())
            .unwrap();
    assert_eq!((w.layers[0].fwd.bytes, w.layers[0].ig.bytes), (4096, 100));
    let w = parse_simai(&format!("HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 2\n1\n{row}"), p()).unwrap();
    assert_eq!(w.layers[0].fwd.bytes, 100);
}

#[test]
fn header_keys_as_aicb_writes_them() {
    // AICB's newer headers add `pp_comm` without a colon; pipeline keys are read, not modelled;
    // rows may be separated by tabs and end with spaces.
    let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 2 pp: 3 vpp: 2 ga: 5 all_gpus: 16 \
                checkpoints: 0 checkpoint_initiates: 0 pp_comm 65536\n1\nx\t-1\t7\tALLGATHER_DP_EP\t8192\t1\tNONE\t0\t1\tREDUCESCATTER_EP\t4096\t1 \n";
    let w = parse_simai(text, p()).unwrap();
    assert_eq!((w.tp, w.ep, w.pp, w.vpp, w.ga, w.all_gpus, w.pp_comm, w.dp()), (4, 2, 3, 2, 5, 16, 65_536, 4));
    assert_eq!(w.layers[0].fwd.comm, Some((Kind::Allgather, Group::DpEp)));
    assert_eq!(w.layers[0].wg.comm, Some((Kind::ReduceScatter, Group::Ep)));
    assert_eq!((w.group_size(Group::Ep), w.group_size(Group::DpEp)), (2, 2));
}

#[test]
fn bad_input_names_line_and_field() {
    let head = "HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 4\n";
    let ok = "a -1 10 ALLREDUCE 4096 10 NONE 0 10 ALLREDUCE 4096 1\n";
    let cases = [
        ("DATA\n1\n".to_string() + ok, "w.txt:1", "parallelism", "not supported"),
        (
            format!("HYBRID_TRANSFORMER model_parallel_NPU_group: 3 all_gpus: 4\n1\n{ok}"),
            "w.txt:1",
            "model_parallel_NPU_group",
            "do not split",
        ),
        (
            format!("HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 4 color: 3\n1\n{ok}"),
            "w.txt:1",
            "header",
            "unknown key `color`",
        ),
        (
            format!("HYBRID_TRANSFORMER model_parallel_NPU_group: 2 all_gpus: 4 checkpoints: 1 0\n1\n{ok}"),
            "w.txt:1",
            "checkpoints",
            "recompute",
        ),
        (format!("{head}two\n{ok}"), "w.txt:2", "layers", "not a non-negative integer"),
        (format!("{head}2\n{ok}"), "w.txt:2", "layers", "the file has 1"),
        (format!("{head}1\n{ok}{ok}"), "w.txt:4", "layers", "one more"),
        (format!("{head}1\na -1 10 ALLREDUCE 4096 10 NONE 0 10 ALLREDUCE\n"), "w.txt:3", "wg_size", "missing"),
        (
            format!("{head}1\na -1 10 ALLSUM 4096 10 NONE 0 10 ALLREDUCE 4096 1\n"),
            "w.txt:3",
            "fwd_comm",
            "unknown type `ALLSUM`",
        ),
        (
            format!("{head}1\na -1 10 ALLREDUCE 4096 -5 NONE 0 10 ALLREDUCE 4096 1\n"),
            "w.txt:3",
            "ig_compute",
            "negative",
        ),
        (
            format!("{head}1\na -1 10 ALLREDUCE 4096 10 NONE 0 10 ALLREDUCEALLTOALL 4096 1\n"),
            "w.txt:3",
            "wg_comm",
            "not supported",
        ),
        (
            format!("{head}1\na x 10 ALLREDUCE 4096 10 NONE 0 10 ALLREDUCE 4096 1\n"),
            "w.txt:3",
            "dependency",
            "not an integer",
        ),
    ];
    for (text, at, field, msg) in cases {
        let e = err(&text);
        assert!(e.contains(at) && e.contains(&format!("`{field}`")) && e.contains(msg), "{field}: {e}");
    }
}

fn layout(n: u32) -> Layout {
    Layout {
        hosts: (0..n).map(NodeId).collect(),
        algorithm: Algorithm::Ring,
        channels: 1,
        chunk: 1 << 30,
        start: Time::ZERO,
        nvls: Vec::new(),
        rings: None,
    }
}

#[test]
fn the_iteration_issues_forward_then_backward_with_weight_gradients_not_waited_for() {
    let w = parse_simai(TINY, p()).unwrap();
    let it = iteration(&w, p(), &layout(8)).unwrap();
    let order: Vec<(usize, &str)> = it.ops.iter().map(|o| (o.layer, o.phase)).collect();
    // embedding's ig and wg are NONE.
    let expect = [
        (0, "fwd"),
        (1, "fwd"),
        (2, "fwd"),
        (3, "fwd"),
        (4, "fwd"),
        (4, "ig"),
        (4, "wg"),
        (3, "ig"),
        (3, "wg"),
        (2, "ig"),
        (2, "wg"),
        (1, "ig"),
        (1, "wg"),
    ];
    assert_eq!(order, expect);
    let groups: Vec<usize> = it.ops.iter().map(|o| o.groups).collect();
    assert_eq!(groups, [4, 4, 4, 4, 4, 4, 2, 4, 4, 4, 2, 4, 2]);
    // Delays: compute since the last waited-for communication, plus its update time.
    let ns = |x: u64| Time::from_ns(x);
    assert_eq!(it.ops[0].delay, ns(12_000));
    assert_eq!(it.ops[1].delay, ns(100 + 30_000));
    assert_eq!(it.ops[5].delay, ns(100 + 50_000), "lm_head ig after its fwd");
    // lm_head's wg compute starts once its ig communication (waited for) is done.
    assert_eq!(it.ops[6].delay, ns(100 + 40_000), "lm_head wg");
    assert_eq!(it.ops[7].delay, ns(100 + 40_000 + 40_000), "moe ig keeps lm_head wg's compute");
    // The moe ig's first sends wait on lm_head's ig (waited for), never on its wg.
    let g = it.graph.transfers();
    let on = |op: &SimaiOp| -> Vec<u32> {
        g[op.transfers.clone()]
            .iter()
            .filter(|t| t.delay > Time::ZERO)
            .flat_map(|t| t.deps.iter().map(|d| d.on))
            .collect()
    };
    let (ig4, wg4) = (&it.ops[5], &it.ops[6]);
    let deps = on(&it.ops[7]);
    assert!(!deps.is_empty() && deps.iter().all(|&d| ig4.transfers.contains(&(d as usize))), "{deps:?}");
    assert!(on(wg4).iter().all(|&d| ig4.transfers.contains(&(d as usize))));
    // The first communication waits on nothing; its first sends carry the first compute.
    assert!(g[it.ops[0].transfers.clone()].iter().filter(|t| t.deps.is_empty()).all(|t| t.delay == ns(12_000)));
    assert_eq!(it.ops.last().unwrap().transfers.end, g.len());
}

#[test]
fn the_layout_must_match_the_workload() {
    let w = parse_simai(TINY, p()).unwrap();
    let e = iteration(&w, p(), &layout(6)).unwrap_err().to_string();
    assert!(e.contains("ranks") && e.contains("all_gpus = 8"), "{e}");
    let e = iteration(&w, p(), &Layout { algorithm: Algorithm::HalvingDoubling, ..layout(8) }).map(|_| ());
    assert!(e.is_ok(), "groups of 2 and 4 are powers of two");
    let small =
        "HYBRID_TRANSFORMER model_parallel_NPU_group: 4 all_gpus: 4\n1\na -1 1 ALLREDUCE 3 1 NONE 0 1 NONE 0 1\n";
    let w = parse_simai(small, p()).unwrap();
    let e = iteration(&w, p(), &layout(4)).unwrap_err().to_string();
    assert!(e.contains("w.txt:3") && e.contains("`fwd_size`"), "{e}");
}

/// Every send of a rank in a communication waits for the rank's join: it is a join (it
/// carries the communication's compute delay), or it waits on the post of a join of the
/// same rank in the same communication.
fn every_send_waits_for_its_join(it: &Iteration) {
    use crate::app::deps::Trigger;
    let g = it.graph.transfers();
    for op in &it.ops {
        for (i, t) in g[op.transfers.clone()].iter().enumerate() {
            let is_join = |on: usize| op.transfers.contains(&on) && g[on].src == t.src && g[on].delay == op.delay;
            let gated = t.deps.iter().any(|d| d.when == Trigger::Posted && is_join(d.on as usize));
            assert!(t.delay == op.delay || gated, "{}.{} transfer {i}: {t:?}", op.layer, op.phase);
        }
    }
}

#[test]
fn a_rank_forwards_nothing_before_it_joins() {
    let w = parse_simai(TINY, p()).unwrap();
    every_send_waits_for_its_join(&iteration(&w, p(), &layout(8)).unwrap());
    // Trees over 3 ranks have a rank that is an inner node of both (no send without a
    // dependency): its first send is its join, and the job stays acyclic.
    let three = "HYBRID_TRANSFORMER model_parallel_NPU_group: 3 all_gpus: 6\n1\n\
                 a -1 10 ALLREDUCE 3000000 0 NONE 0 5 ALLREDUCE 600000 1\n";
    let w = parse_simai(three, p()).unwrap();
    let tree = Layout { algorithm: Algorithm::DoubleBinaryTree, chunk: 500_000, ..layout(6) };
    let it = iteration(&w, p(), &tree).unwrap();
    every_send_waits_for_its_join(&it);
    // In the first communication (nothing waited for before it), the rootless rank's join is
    // the one send that carries the delay and waits on a receipt of the tree.
    let (g, op) = (it.graph.transfers(), &it.ops[0]);
    assert_eq!(g[op.transfers.clone()].iter().filter(|t| t.delay == op.delay && !t.deps.is_empty()).count(), 2);
}

#[test]
fn nvls_runs_tensor_parallel_allreduces_of_eight_through_the_nvswitch() {
    use crate::app::deps::Trigger;
    // TP 8 of 16 GPUs: the TP allreduces are NVLS, each group through its server's NVSwitch;
    // the DP allreduce (groups of 2) stays a ring.
    let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 all_gpus: 16\n1\n\
                a -1 5 ALLREDUCE 1048576 7 NONE 0 9 ALLREDUCE 65536 1\n";
    let w = parse_simai(text, p()).unwrap();
    let nvls: Vec<NodeId> = (0..16).map(|r| NodeId(16 + r / 8)).collect();
    let l = Layout { nvls: nvls.clone(), ..layout(16) };
    let it = iteration(&w, p(), &l).unwrap();
    let parts = it.parts(&w, &l);
    let algos: Vec<_> = parts.iter().map(|q| (q.name.as_str(), q.algorithm)).collect();
    assert_eq!(algos, [("a.fwd", Algorithm::Nvls), ("a.wg", Algorithm::Ring)]);
    let g = it.graph.transfers();
    let fwd = &g[it.ops[0].transfers.clone()];
    assert_eq!(fwd.len(), 2 * 64);
    for t in fwd {
        let sw = if t.src.0 >= 16 { t.src } else { t.dst };
        let r = if t.src.0 >= 16 { t.dst } else { t.src };
        assert_eq!((sw, t.bytes), (nvls[r.idx()], 1 << 18));
    }
    // The weight gradient waits on each rank's part of the NVLS allreduce, which holds the
    // NVSwitch's sends to it (received), not the NVSwitch's own completions.
    let wg_first = &g[it.ops[1].transfers.start];
    assert!(wg_first.deps.iter().any(|d| d.when == Trigger::Received && g[d.on as usize].src.0 >= 16));
    // Without NVLS in the layout, the same workload is two rings.
    let it = iteration(&w, p(), &layout(16)).unwrap();
    assert!(it.parts(&w, &layout(16)).iter().all(|q| q.algorithm == Algorithm::Ring));
    // A group over two servers is refused by name.
    let split: Vec<NodeId> = (0..16).map(|r| NodeId(16 + r / 4)).collect();
    let e = iteration(&w, p(), &Layout { nvls: split, ..layout(16) }).unwrap_err().to_string();
    assert!(e.contains("w.txt:3: field `fwd_comm`") && e.contains("NVLS_TREE"), "{e}");
}

#[test]
fn simai_rings_give_tensor_parallel_groups_a_channel_per_rank() {
    // SimAI's local rings: TP 8 of 8 GPUs per server, 8 channels; DP gps / TP = 1.
    let text = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 all_gpus: 16\n1\n\
                a -1 5 ALLREDUCE 1048576 7 NONE 0 9 ALLREDUCE 65536 1\n";
    let w = parse_simai(text, p()).unwrap();
    let l = Layout { rings: Some(8), ..layout(16) };
    let it = iteration(&w, p(), &l).unwrap();
    let g = it.graph.transfers();
    let (tp, dp) = (&g[it.ops[0].transfers.clone()], &g[it.ops[1].transfers.clone()]);
    // Two groups x 8 channels x 2(n-1) steps x n ranks, each size / 8 / 8 bytes.
    assert_eq!((tp.len(), tp[0].bytes), (2 * 8 * 14 * 8, 1_048_576 / 64));
    assert_eq!(tp.iter().map(|t| t.lane).max(), Some(7));
    // Eight groups of 2 on one channel, on the DP communicator's lanes (past the TP's 8).
    assert_eq!((dp.len(), dp[0].bytes), (8 * 2 * 2, 65_536 / 2));
    assert!(dp.iter().all(|t| t.lane == 8));
    // TP 2: two channels, DP 8 / 2 = 4.
    let text = text.replace("group: 8", "group: 2");
    let w = parse_simai(&text, p()).unwrap();
    let it = iteration(&w, p(), &l).unwrap();
    let g = it.graph.transfers();
    let lanes = |k: usize| {
        let mut v: Vec<u16> = g[it.ops[k].transfers.clone()].iter().map(|t| t.lane).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    assert_eq!((lanes(0), lanes(1)), (vec![0, 1], vec![4, 5, 6, 7]));
}
