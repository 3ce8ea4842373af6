"""One training iteration of a SimAI workload (docs/collectives.md,
"collectives-simai").

`collectives-simai` runs the Llama-7B (Megatron, TP 2) workload that AICB generated for SimAI,
cut to two transformer blocks (data/make_simai_llama7b.py says how), at 256 and 1,024 GPUs on
a rail fabric. The iteration's transfers are rows of `flows` (a job has no per-layer records
yet), so this module rebuilds the iteration's communications in the order the engine issues
them (`formats::simai::iteration`: forward layers 0..L-1, then backward L-1..0, input
gradient then weight gradient) and cuts the flows, which are numbered in transfer order, into
them. Each communication's time is then held against the ring's closed form on the idle
fabric (collectives.py), and the iteration against the chain of compute delays and those
closed forms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.repro.collectives import (DEFAULT_CHUNK, FACTORS, RING_STEPS, rail_links, ring_closed_form_ns,
                                                   size_bytes, wire)
from rdmalab.experiments.store import Store
from rdmalab.plots import save_figure

KINDS = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "alltoall"}


@dataclass
class Op:
    """One communication of the iteration over all its groups, as the engine issues it."""

    layer: int
    name: str
    phase: str           #: fwd | ig | wg
    kind: str            #: allreduce | allgather | reduce_scatter | alltoall
    group: str           #: TP | DP | EP | DP_EP
    size: int            #: bytes per rank (NCCL-tests' size)
    groups: list[list[int]]  #: SimAI ranks of each group
    blocking: bool
    delay_ns: float      #: compute (and update) since the last communication waited for
    transfers: int = 0   #: how many transfers (flows) it has
    start_ns: float = 0.0
    end_ns: float = 0.0
    time_ns: float = 0.0  #: the slowest group's, from its last rank joining (`measured`)


def read_workload(path: str | Path) -> tuple[dict[str, int], list[list[str]]]:
    """The header's `key: value` pairs and the layer rows (twelve fields each)."""
    lines = [ln.split() for ln in Path(path).read_text().splitlines() if ln.strip()]
    head, words = {}, lines[0][1:]
    for k, v in zip(words[::2], words[1::2]):
        head[k.rstrip(":")] = int(v)
    return head, lines[2:2 + int(lines[1][0])]


def _groups(head: dict[str, int], group: str) -> list[list[int]]:
    """SimAI's groups (docs/collectives.md, "The layout of the ranks"), pipeline size 1."""
    n, tp, ep = head["all_gpus"], head["model_parallel_NPU_group"], head.get("ep", 1)
    if group == "TP":
        return [list(range(i * tp, i * tp + tp)) for i in range(n // tp)]
    if group == "DP":
        return [list(range(p, n, tp)) for p in range(tp)]
    raise ValueError(f"group {group} is not rebuilt here (the Llama workloads have TP and DP only)")


def issue_order(path: str | Path, chunk: int = DEFAULT_CHUNK, update_ns: float | None = None) -> list[Op]:
    """The communications that move bytes, in the engine's issue order, with the compute delay
    before each and its ring transfer count (`app/collective/ring.rs`: loops of n segments of
    at most `chunk`, 2(n-1) or n-1 steps of n transfers each; one channel)."""
    head, rows = read_workload(path)
    order = [(i, "fwd", True) for i in range(len(rows))]
    order += [x for i in reversed(range(len(rows))) for x in ((i, "ig", True), (i, "wg", False))]
    col = {"fwd": 2, "ig": 5, "wg": 8}
    ops, pending = [], 0.0
    for i, phase, blocking in order:
        r = rows[i]
        compute, typ, size = float(r[col[phase]]), r[col[phase] + 1], int(r[col[phase] + 2])
        pending += compute
        if phase == "fwd" and 0 < size < 4096:
            size = 4096  # SimAI sends a forward message of 1..4095 bytes as 4096 (formats::simai)
        if typ == "NONE" or size == 0:
            continue
        base = typ.removesuffix("_DP_EP").removesuffix("_EP")
        group = "DP_EP" if typ.endswith("_DP_EP") else "EP" if typ.endswith("_EP") else (
            "DP" if phase == "wg" else "TP")
        groups = _groups(head, group)
        n = len(groups[0])
        if n < 2:
            continue
        kind = KINDS[base]
        if kind not in RING_STEPS:
            raise ValueError(f"{kind}: only ring collectives are rebuilt here")
        loops = max(1, -(-size // (n * chunk)))
        op = Op(i, r[0], phase, kind, group, size, groups, blocking, pending,
                transfers=len(groups) * loops * RING_STEPS[kind](n) * n)
        ops.append(op)
        if blocking:
            pending = float(r[11]) if update_ns is None else update_ns
    return ops


def measured(ops: list[Op], flows: pl.DataFrame) -> list[Op]:
    """Each op's span (first post to last completion, over all groups) and its time: the
    slowest group's, from the moment its last rank joined (posted its first send) to its last
    transfer's completion (the ACK back at the sender), so that the skew between ranks, each of
    which waits only for its own part of the last communication, does not count. Flows are
    numbered in transfer order, an op's groups one after the other."""
    f = flows.sort("flow")
    if f.height != sum(o.transfers for o in ops):
        raise ValueError(f"{f.height} flows for {sum(o.transfers for o in ops)} rebuilt transfers")
    start, end = f["start_ns"].to_list(), (f["start_ns"] + f["fct_ns"]).to_list()
    at = 0
    for o in ops:
        each, n = o.transfers // len(o.groups), len(o.groups[0])
        # A group's first n transfers are its ranks' first sends (loop 0, step 0): it has
        # joined when the last of them is posted.
        spans = [(min(start[a:a + each]), max(start[a:a + n]), max(end[a:a + each]))
                 for a in range(at, at + o.transfers, each)]
        o.start_ns, o.end_ns = min(s for s, _, _ in spans), max(e for _, _, e in spans)
        o.time_ns = max(e - j for _, j, e in spans)
        at += o.transfers
    return ops


def closed_form_ns(scenario: dict, op: Op) -> float:
    """The op's ring on the idle fabric, slowest group: collectives.py's form hop by hop (exact
    for one loop; for more, the bandwidth bound K * ser(size/n), a lower bound), plus the last
    transfer's ACK back over the group's longest hop, which its completion waits for."""
    hosts = scenario["traffic"][0].get("ranks")
    chunk = scenario["traffic"][0].get("chunk", DEFAULT_CHUNK)
    w, links, out = wire(scenario), rail_links(scenario["topology"]), 0.0
    for g in op.groups:
        ranks = [hosts[r] for r in g] if isinstance(hosts, list) else g
        spec = {"kind": op.kind, "algorithm": "ring", "size": op.size, "chunk": chunk, "channels": 1, "ranks": ranks}
        h = max(links(ranks[i], ranks[(i + 1) % len(ranks)]) for i in range(len(ranks)))
        back = h * (w.tx(w.ack) + w.delay_ns)
        out = max(out, ring_closed_form_ns({**scenario, "collective": [spec]}, spec) + back)
    return out


def chain_ns(ops: list[Op], times: list[float]) -> float:
    """End of the iteration when op k takes times[k]: a blocking op starts its delay after the
    last blocking op ends, a non-blocking one too but is not waited for (times 0: compute only)."""
    t, end = 0.0, 0.0
    for o, d in zip(ops, times):
        e = t + o.delay_ns + d
        end = max(end, e)
        if o.blocking:
            t = e
    return end


def analyse(scenario: dict, flows: pl.DataFrame, base_dir: str | Path) -> dict:
    """The iteration's ops with their measured and idle times, and the iteration's totals."""
    tr = scenario["traffic"][0]
    ops = measured(issue_order(Path(base_dir) / tr["path"], size_bytes(tr.get("chunk", DEFAULT_CHUNK))), flows)
    cf = [closed_form_ns(scenario, o) for o in ops]
    return {"ops": ops, "closed": cf, "iteration_ns": max(o.end_ns for o in ops),
            "compute_ns": chain_ns(ops, [0.0] * len(ops)), "idle_ns": chain_ns(ops, cf),
            "gpus": len(tr["ranks"]), "placement": placement(scenario, ops)}


def placement(scenario: dict, ops: list[Op]) -> str:
    """`server` when every TP group is on one server (SimAI's placement), `leaf` when each
    is under one rail leaf, `mixed` otherwise."""
    hosts, topo = scenario["traffic"][0]["ranks"], scenario["topology"]
    g = int(topo.get("gpus_per_server", 8))
    per_leaf = int(topo["servers"]) // int(topo.get("leaves_per_rail", 1))
    tp = next((o.groups for o in ops if o.group == "TP"), [])
    if all(len({hosts[r] // g for r in grp}) == 1 for grp in tp):
        return "server"
    same = all(len({(hosts[r] % g, hosts[r] // g // per_leaf) for r in grp}) == 1 for grp in tp)
    return "leaf" if same else "mixed"


def runs_of(store: Store, runs: pl.DataFrame) -> list[tuple[dict, dict]]:
    """Per successful run: (its analysis, its runs row). A workload's relative path is the
    package's (the sweep files' folder)."""
    out = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        sc = json.loads(r["scenario"])
        f = store.path("flows", r["run_id"])
        out.append((analyse(sc, pl.read_parquet(f), Path(__file__).parent), r))
    return sorted(out, key=lambda x: (x[0]["gpus"], x[0]["placement"] != "server"))


def _busbw(o: Op, ns: float) -> float:
    return o.size * 8 / ns * FACTORS[o.kind](len(o.groups[0]))


def compare_simai(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per run: the iteration against the idle chain; the largest op's busbw against its closed form."""
    out = []
    for a, _ in runs_of(store, runs):
        g = f"{a['gpus']} {a['placement']}"
        out.append(Comparison(f"{g}", "iteration / idle chain (ns)", a["iteration_ns"], a["idle_ns"]))
        k = max(range(len(a["ops"])), key=lambda i: a["ops"][i].size * len(a["ops"][i].groups[0]))
        o = a["ops"][k]
        out.append(Comparison(f"{g} {o.name}.{o.phase} {o.kind} {o.group}", "busbw / closed form",
                              _busbw(o, o.time_ns), _busbw(o, a["closed"][k])))
    return out


def report_simai(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """Markdown: the iteration per run, communication per comm type, the largest collectives."""
    res = runs_of(store, runs)
    if not res:
        return "(no runs)"
    lines = ["| GPUs | placement | iteration ms | compute-only chain ms | idle-fabric chain ms | iteration / idle | "
             "flows | run wall s |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for a, r in res:
        lines.append(f"| {a['gpus']} | {a['placement']} | {a['iteration_ns'] / 1e6:.3f} | "
                     f"{a['compute_ns'] / 1e6:.3f} | {a['idle_ns'] / 1e6:.3f} | "
                     f"{a['iteration_ns'] / a['idle_ns']:.3f} | {sum(o.transfers for o in a['ops'])} | "
                     f"{r.get('wall_s', 0.0):.1f} |")
    lines += ["", "Communication per comm type (the sum of each op's time, its slowest group's from its last rank "
              "joining to its last completion; idle = the closed forms):", "",
              "| GPUs | placement | phase | group | ops | MiB per rank | time ms | idle ms | ratio |",
              "|---:|---|---|---|---:|---:|---:|---:|---:|"]
    for a, _ in res:
        keys = sorted({(o.phase, o.group) for o in a["ops"]}, key=lambda k: (["fwd", "ig", "wg"].index(k[0]), k[1]))
        for ph, gr in keys:
            sel = [(o, c) for o, c in zip(a["ops"], a["closed"]) if (o.phase, o.group) == (ph, gr)]
            t, c = sum(o.time_ns for o, _ in sel), sum(c for _, c in sel)
            mib = sum(o.size for o, _ in sel) / 2 ** 20
            lines.append(f"| {a['gpus']} | {a['placement']} | {ph} | {gr} | {len(sel)} | {mib:.1f} | "
                         f"{t / 1e6:.3f} | {c / 1e6:.3f} | {t / c:.3f} |")
    lines += ["", "The largest collectives (busbw in Gbit/s, NCCL-tests' factors):", "",
              "| GPUs | placement | layer.phase | kind | group (ranks x groups) | size MiB | span us | time us | "
              "idle us | busbw | idle busbw | ratio |", "|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for a, _ in res:
        big = sorted(zip(a["ops"], a["closed"]), key=lambda x: -x[0].size)[:4]
        for o, c in big:
            t = o.time_ns
            lines.append(f"| {a['gpus']} | {a['placement']} | {o.name}.{o.phase} | {o.kind} | {o.group} "
                         f"({len(o.groups[0])} x {len(o.groups)}) | {o.size / 2 ** 20:.1f} | "
                         f"{(o.end_ns - o.start_ns) / 1e3:.1f} | {t / 1e3:.1f} | {c / 1e3:.1f} | "
                         f"{_busbw(o, t):.1f} | {_busbw(o, c):.1f} | {t / c:.3f} |")
    return "\n".join(lines)


def simai_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Each communication's span in the iteration (issue order downwards), per run."""
    store = Store(sweep_dir)
    res = runs_of(store, store.runs())
    fig, axes = plt.subplots(1, max(len(res), 1), figsize=(5.5 * max(len(res), 1), 4.2), squeeze=False)
    colours = {"fwd": "tab:blue", "ig": "tab:orange", "wg": "tab:green"}
    for ax, (a, _) in zip(axes[0], res):
        for i, o in enumerate(a["ops"]):
            ax.barh(i, (o.end_ns - o.start_ns) / 1e3, left=o.start_ns / 1e3, color=colours[o.phase],
                    hatch="//" if o.group == "DP" else None, edgecolor="k", lw=0.3)
        ax.axvline(a["compute_ns"] / 1e3, color="k", ls=":", lw=0.8, label="compute-only chain")
        ax.axvline(a["idle_ns"] / 1e3, color="k", ls="--", lw=0.8, label="idle-fabric chain")
        ax.set_yticks(range(len(a["ops"])), [f"{o.name}.{o.phase}" for o in a["ops"]], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("time (us)")
        ax.set_title(f"{a['gpus']} GPUs, TP pairs by {a['placement']}: iteration {a['iteration_ns'] / 1e6:.2f} ms",
                     fontsize=9)
        handles = [Patch(color=c, label=ph) for ph, c in colours.items()]
        ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=7, loc="upper right")
    fig.suptitle(f"{store.manifest().get('name', '')}: communications of one iteration (DP hatched)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "simai_iteration")


EXPERIMENTS = [
    Experiment(
        name="collectives-simai",
        title="Collectives: one iteration of a SimAI Llama-7B TP2 workload, 256 GPUs, two placements, rail fabric",
        citation=("aliyun/aicb's SimAI workload L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt (cut to "
                  "2 of 32 blocks); SimAI's transformer loop (aliyun/SimAI, Workload.cc); no published "
                  "iteration time is compared"),
        sweep="collectives_simai.toml", quick="collectives_simai_quick.toml",
        figures=[], by="traffic[0].ranks", compare=compare_simai, report=report_simai,
        theirs="the iteration's chain of compute delays with each communication at its ring's closed "
               "form on the idle fabric (rdmalab's derivation, docs/collectives.md)",
        needs_cc=["dcqcn"], extra_figures=simai_figure, theirs_from_runs=True,
    ),
]


if __name__ == "__main__":  # one run's analysis: python -m ...collectives_simai SCENARIO.toml FLOWS.parquet
    import sys
    import tomllib

    scenario_file, flows_file = Path(sys.argv[1]), Path(sys.argv[2])
    a = analyse(tomllib.loads(scenario_file.read_text()), pl.read_parquet(flows_file), scenario_file.parent)
    print(f"{a['gpus']} GPUs, TP pairs by {a['placement']}: iteration {a['iteration_ns'] / 1e6:.3f} ms, compute-only "
          f"chain {a['compute_ns'] / 1e6:.3f} ms, idle-fabric chain {a['idle_ns'] / 1e6:.3f} ms")
    for o, c in zip(a["ops"], a["closed"]):
        print(f"{o.name}.{o.phase} {o.kind} {o.group} {o.size} B: span {(o.end_ns - o.start_ns) / 1e3:.1f} us, "
              f"time {o.time_ns / 1e3:.1f} us, idle {c / 1e3:.1f} us")
