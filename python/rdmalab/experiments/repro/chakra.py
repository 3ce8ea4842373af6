"""ASTRA-sim's Chakra microbenchmarks at packet level (docs/chakra.md, "chakra-microbenchmarks").

`chakra-microbenchmarks` runs every trace set of ASTRA-sim's examples (written by Chakra's own
tools; `data/astra-sim`, MIT licence): AllReduce, AllGather, ReduceScatter and AllToAll of 1 MB
on 4, 8 and 16 ranks, and the 8-rank ring AllReduce written as point-to-point sends and
receives. Each runs on a star and on a non-blocking two-tier leaf-spine, at 100 and 400 Gb/s,
under no CC, DCQCN and HPCC. Each collective's time is set beside its closed form on the idle
fabric (collectives.py: the ring's hop by hop, the direct all-to-all's), and the point-to-point
ring's span beside the native ring's on the same fabric and CC.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.repro.collectives import (DEFAULT_CHUNK, direct_alltoall_closed_form_ns, ring_closed_form_ns,
                                                   wire)
from rdmalab.experiments.store import Store
from rdmalab.plots import save_figure

#: The point-to-point ring's trace set (its folder in data/astra-sim).
P2P = "custom_ring_allreduce_8npus_1MB"
CCS = ("none", "dcqcn", "hpcc")


def fabric_name(topo: dict) -> str:
    return "star" if topo["kind"] == "star" else "leaf-spine"


def rate_gbps(scenario: dict) -> float:
    return wire(scenario).rate_bps / 1e9


def closed_form_ns(scenario: dict, rec: dict) -> float | None:
    """The collective's closed form on this run's idle fabric and packet format (one piece,
    one channel, ranks 0..n-1 on the first hosts), or None for a kind without one."""
    tr = scenario["traffic"][0]
    spec = {"kind": rec["kind"], "algorithm": rec["algorithm"], "size": int(rec["size"]),
            "ranks": list(range(int(rec["ranks"]))), "channels": int(tr.get("channels", 1)),
            "chunk": tr.get("chunk", DEFAULT_CHUNK)}
    if rec["kind"] == "alltoall" and rec["algorithm"] == "direct":
        return direct_alltoall_closed_form_ns(scenario, spec)
    return ring_closed_form_ns(scenario, spec)


def span_ns(flows: pl.DataFrame) -> float:
    """First post to the last message's completion (its ACK back), over a run's flows."""
    return float((flows["start_ns"] + flows["fct_ns"]).max() - flows["start_ns"].min())


def uplink_spread(store: Store) -> dict[str, float]:
    """Per run on a leaf-spine: the busiest leaf uplink's bytes over its leaf's mean
    (balance.parquet; 1: ECMP spread the bytes evenly)."""
    b = store.table("balance", params=False)
    if "max_bytes" not in b.columns:
        return {}
    b = b.filter(pl.col("mean_bytes") > 0).with_columns((pl.col("max_bytes") / pl.col("mean_bytes")).alias("s"))
    return {r["run_id"]: r["s"] for r in b.group_by("run_id").agg(pl.col("s").max()).iter_rows(named=True)}


def rows(store: Store, runs: pl.DataFrame, flows: pl.DataFrame) -> tuple[list[dict], list[dict]]:
    """(one row per microbenchmark run, one row per point-to-point ring run with its native
    ring beside it)."""
    ok = runs.filter(pl.col("status") == "ok")
    coll = store.table("collectives", params=False)
    recs = {} if "name" not in coll.columns else {r["run_id"]: r for r in coll.iter_rows(named=True)}
    spread = uplink_spread(store)
    micro, p2p, spans = [], [], {}
    for r in ok.iter_rows(named=True):
        sc = json.loads(r["scenario"])
        key = (fabric_name(sc["topology"]), rate_gbps(sc), sc.get("fabric", {}).get("cc", "none"))
        path = sc["traffic"][0]["path"]
        f = flows.filter(pl.col("run_id") == r["run_id"])
        base = {"fabric": key[0], "gbps": key[1], "cc": key[2], "scenario": sc, "counters": r,
                "set": path.split("/")[-2], "span_ns": span_ns(f) if f.height else float("nan"),
                "uplink_spread": spread.get(r["run_id"], float("nan"))}
        if P2P in path:
            p2p.append({**base, "ranks": 8})
            continue
        c = recs.get(r["run_id"])
        if c is None:
            continue
        row = {**base, "kind": c["kind"], "algorithm": c["algorithm"], "ranks": int(c["ranks"]), "size": int(c["size"]),
               "time_ns": c["end_ns"] - c["start_ns"], "closed_ns": closed_form_ns(sc, c)}
        micro.append(row)
        if row["kind"] == "allreduce" and row["ranks"] == 8:
            spans[key] = row["span_ns"]
    for p in p2p:
        p["native_ns"] = spans.get((p["fabric"], p["gbps"], p["cc"]), float("nan"))
        # One packet's time a step: 14 steps of the 8-rank ring.
        w = wire(p["scenario"])
        p["slack_ns"] = 14 * w.tx(w.mtu + w.header)
    order = {"allreduce": 0, "allgather": 1, "reduce_scatter": 2, "alltoall": 3}
    micro.sort(key=lambda x: (order.get(x["kind"], 9), x["ranks"], x["fabric"] != "star", x["gbps"],
                              CCS.index(x["cc"]) if x["cc"] in CCS else 9))
    p2p.sort(key=lambda x: (x["fabric"] != "star", x["gbps"], CCS.index(x["cc"]) if x["cc"] in CCS else 9))
    return micro, p2p


def _label(x: dict) -> str:
    return f"{x['kind']}/{x['algorithm']} n={x['ranks']} {x['fabric']} {x['gbps']:g}G {x['cc']}"


def compare_chakra(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per microbenchmark run: its time against its closed form; per point-to-point ring run:
    its span against the native ring's."""
    micro, p2p = rows(store, runs, flows)
    out = [Comparison(_label(x), "time / closed form us", x["time_ns"] / 1e3, x["closed_ns"] / 1e3)
           for x in micro if x["closed_ns"]]
    out += [Comparison(f"p2p ring n=8 {p['fabric']} {p['gbps']:g}G {p['cc']}", "span / native ring us",
                       p["span_ns"] / 1e3, p["native_ns"] / 1e3) for p in p2p]
    return out


def report_chakra(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """Markdown: each collective beside its closed form; the worst ratio per fabric and CC;
    the point-to-point ring beside the native ring."""
    micro, p2p = rows(store, runs, flows)
    if not micro:
        return "(no collective records)"
    lines = ["| collective | ranks | fabric | Gb/s | CC | time us | closed form us | ratio | busbw Gb/s | "
             "busiest uplink / mean | ECN marks | PFC pauses |", "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for x in micro:
        c, cf = x["counters"], x["closed_ns"] or float("nan")
        busbw = _busbw(x)
        lines.append(f"| {x['kind']}/{x['algorithm']} | {x['ranks']} | {x['fabric']} | {x['gbps']:g} | {x['cc']} | "
                     f"{x['time_ns'] / 1e3:.2f} | {cf / 1e3:.2f} | {x['time_ns'] / cf:.3f} | {busbw:.1f} | {_spread(x)} | "
                     f"{int(c.get('ecn_marks') or 0)} | {int(c.get('pauses') or 0)} |")
    lines += ["", "Time over closed form per fabric and CC (largest, and the collective it belongs to):", "",
              "| fabric | Gb/s | CC | largest ratio | collective | mean ratio |", "|---|---:|---|---:|---|---:|"]
    for key in dict.fromkeys((x["fabric"], x["gbps"], x["cc"]) for x in micro):
        mine = [x for x in micro if (x["fabric"], x["gbps"], x["cc"]) == key and x["closed_ns"]]
        worst = max(mine, key=lambda x: x["time_ns"] / x["closed_ns"])
        mean = sum(x["time_ns"] / x["closed_ns"] for x in mine) / len(mine)
        lines.append(f"| {key[0]} | {key[1]:g} | {key[2]} | {worst['time_ns'] / worst['closed_ns']:.3f} | "
                     f"{worst['kind']} n={worst['ranks']} | {mean:.3f} |")
    if p2p:
        lines += ["", "The ring AllReduce written as point-to-point sends (8 ranks, compute left out) against the "
                  "native ring, first post to last ACK:", "",
                  "| fabric | Gb/s | CC | point-to-point us | native us | difference ns | one packet a step ns |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for p in p2p:
            lines.append(f"| {p['fabric']} | {p['gbps']:g} | {p['cc']} | {p['span_ns'] / 1e3:.2f} | "
                         f"{p['native_ns'] / 1e3:.2f} | {p['span_ns'] - p['native_ns']:.0f} | {p['slack_ns']:.0f} |")
    return "\n".join(lines)


def _spread(x: dict) -> str:
    s = x["uplink_spread"]
    return "" if s != s else f"{s:.2f}"


def _busbw(x: dict) -> float:
    n = x["ranks"]
    factor = 2 * (n - 1) / n if x["kind"] == "allreduce" else (n - 1) / n
    return x["size"] * 8 / x["time_ns"] * factor


def chakra_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Time over closed form per collective, one panel per fabric and rate, a bar per CC."""
    store = Store(sweep_dir)
    runs, flows = store.runs(), store.table("flows", params=False)
    micro, _ = rows(store, runs, flows)
    panels = list(dict.fromkeys((x["fabric"], x["gbps"]) for x in micro))
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(4.6 * max(len(panels), 1), 4.0), squeeze=False,
                             sharey=True)
    for ax, (fab, g) in zip(axes[0], panels):
        mine = [x for x in micro if (x["fabric"], x["gbps"]) == (fab, g) and x["closed_ns"]]
        labels = list(dict.fromkeys(f"{x['kind']} {x['ranks']}" for x in mine))
        width = 0.8 / len(CCS)
        for k, cc in enumerate(CCS):
            ys = [next((x["time_ns"] / x["closed_ns"] for x in mine if x["cc"] == cc
                        and f"{x['kind']} {x['ranks']}" == lab), 0.0) for lab in labels]
            ax.bar([i + (k - 1) * width for i in range(len(labels))], ys, width, label=cc)
        ax.axhline(1.0, color="k", ls="--", lw=0.8)
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(f"{fab}, {g:g} Gb/s", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("time / closed form")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{store.manifest().get('name', '')}: ASTRA-sim's Chakra microbenchmarks against their closed forms",
                 fontsize=9)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "chakra_vs_closed_form")


EXPERIMENTS = [
    Experiment(
        name="chakra-microbenchmarks",
        title="Chakra: ASTRA-sim's microbenchmark traces on a star and a leaf-spine, 100/400 Gb/s, none/DCQCN/HPCC",
        citation=("ASTRA-sim's example Chakra traces (astra-sim/astra-sim, examples/workload/microbenchmarks and "
                  "the custom ring AllReduce; MIT licence); no published time is compared"),
        sweep="chakra_microbenchmarks.toml", quick="chakra_microbenchmarks_quick.toml",
        figures=[], by="topology", compare=compare_chakra, report=report_chakra,
        theirs="each collective's closed form on the idle fabric (collectives.py: the ring's hop by hop, the "
               "direct all-to-all's); for the point-to-point ring, the native ring on the same fabric and CC",
        needs_cc=list(CCS), extra_figures=chakra_figure, theirs_from_runs=True,
    ),
]
