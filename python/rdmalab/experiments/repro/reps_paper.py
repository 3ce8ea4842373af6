"""`reps-nscc-permutation`: the REPS paper's permutation under NSCC, with oblivious spraying
(OPS) and with REPS, on the fabric its published artifact runs (docs/reps-paper.md).

The setup is the one the paper's artifact ("REPS: Recycled Entropy Packet Spraying for
Adaptive Load Balancing and Failure Mitigation", arXiv 2407.21625; its EuroSys artifact's
script for the figure of entropy counts and congestion controls) passes to htsim: a
two-tier fat tree of 128 hosts at 400 Gb/s, 1 us per link, a permutation of 8 MiB flows
all starting at once, 4 KiB packets, 100-packet queues that trim past their size, ECN from
25 to 76 packets, per-packet ACKs, 65,535 entropy values and 8 recycled ones per
connection. The page lists every setting, where it comes from, and what differs.

The paper's own FCTs are not printed beside ours: its text (with the figure's numbers) is
not among the sources this project can read, only its abstract and artifact. What stands
beside ours is each flow's lower bound, its payload at line rate plus its path's propagation
there and back (a UET flow completes when its sender hears that its last byte arrived), a
closed form of the run's own scenario.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.plots import plt, save_figure

FLOW_COLUMNS = ("run_id", "src", "dst", "size", "start_ns", "fct_ns", "status")
#: Spraying of each run, by `fabric.path_selection`, in table order.
VARIANTS = {"ev_spray": "OPS (oblivious spraying)", "reps": "REPS"}
COUNTERS = ("trims", "nacks", "retx_packets", "timeouts", "drops")

#: The artifact's htsim settings the sweep files convert (`htsim_uec` flags and defaults):
#: bytes of a data packet on the wire (`main_uec.cpp`'s default `packet_size`), the egress
#: queue in packets (`-q 100`; its composite queue trims what would exceed it), the ECN
#: thresholds in packets (`-ecn 25 76`, marking with a probability rising linearly between
#: them), the trimmed packet's bytes (default `trimsize`), the receiver's ACK threshold in
#: bytes (`-sack_threshold 4000`: below one packet, so every packet is acknowledged), the
#: entropy values (`-paths 65535`) and REPS's buffer of recycled ones (`repsBufferSize`).
ARTIFACT = {"packet_bytes": 4150, "queue_packets": 100, "ecn_packets": (25, 76), "trim_bytes": 64,
            "sack_threshold_bytes": 4000, "paths": 65535, "reps_buffer": 8}


def _gbps(rate: str) -> float:
    return float(rate.removesuffix("Gbps"))


def _us(delay: str) -> float:
    return float(delay.removesuffix("us"))


def flow_bounds_ns(sc: dict[str, Any], f: pl.DataFrame) -> np.ndarray:
    """Per flow, the least FCT any transport can reach on an idle leaf-spine: its payload at
    the host rate plus the propagation of its path there and back (2 links each way within a
    leaf, 4 across)."""
    topo = sc["topology"]
    hpl, rate, delay = topo["hosts_per_leaf"], _gbps(topo["host_rate"]), _us(topo["delay"])
    same_leaf = (f["src"].to_numpy() // hpl) == (f["dst"].to_numpy() // hpl)
    links = np.where(same_leaf, 2, 4)
    return f["size"].to_numpy() * 8 / rate + 2 * links * delay * 1e3


def rows(runs: pl.DataFrame, flows: pl.DataFrame) -> list[dict[str, Any]]:
    """One dict per successful run: its spraying, FCT percentiles (us), the least ratio of a
    flow's FCT to its bound, and the loss counters."""
    out = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        sc = json.loads(r["scenario"])
        sel = sc["fabric"].get("path_selection", "ecmp")
        f = flows.filter(pl.col("run_id") == r["run_id"])
        done = f.filter(pl.col("status") == "completed")
        fct = done["fct_ns"].to_numpy().astype(float)
        bound = flow_bounds_ns(sc, done)
        row = {"run_id": r["run_id"], "selection": sel, "variant": VARIANTS.get(sel, sel),
               "hosts": sc["topology"]["leaves"] * sc["topology"]["hosts_per_leaf"],
               "flows": int(r.get("flows_total") or f.height), "completed": done.height,
               "size": int(f["size"].max()) if f.height else 0, "fct_us": np.sort(fct) / 1e3,
               "bound_us": float(bound.min()) / 1e3 if bound.size else float("nan"),
               "min_ratio": float((fct / bound).min()) if fct.size else float("nan")}
        for p in (50, 99, 100):
            row[f"p{p}_us"] = float(np.percentile(fct, p)) / 1e3 if fct.size else float("nan")
        row["delivered"] = int(r.get("payload_bytes_delivered") or 0)
        row["offered"] = int(f["size"].sum())
        for k in COUNTERS:
            row[k] = int(r.get(k) or 0)
        out.append(row)
    order = list(VARIANTS)
    out.sort(key=lambda x: order.index(x["selection"]) if x["selection"] in order else 99)
    return out


def compare_reps(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per spraying: the fastest flow's FCT against its own idle-path bound, and the p99 FCT
    (no published number beside it)."""
    out = []
    for x in rows(runs, flows):
        out.append(Comparison(x["variant"], "min FCT / bound", x["min_ratio"], 1.0))
        out.append(Comparison(x["variant"], "p99 FCT us (no paper)", x["p99_us"], float("nan")))
    return out


def _fmt(x: float, digits: int = 1) -> str:
    return "" if x != x else f"{x:,.{digits}f}"


def report_reps(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """Markdown: per spraying, flows done, p50/p99/max FCT, the idle-path bound of a flow that
    crosses the spines, payload delivered over offered, and the loss counters."""
    xs = rows(runs, flows)
    if not xs:
        return "(no runs of reps-nscc-permutation)"
    lines = ["| spraying | hosts | flows done | p50 FCT us | p99 FCT us | max FCT us | idle-path bound us | "
             "delivered / offered | trims | NACKs | retx | timeouts | drops |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in xs:
        ratio = x["delivered"] / x["offered"] if x["offered"] else float("nan")
        lines.append(f"| {x['variant']} | {x['hosts']} | {x['completed']}/{x['flows']} | {_fmt(x['p50_us'])} | "
                     f"{_fmt(x['p99_us'])} | {_fmt(x['p100_us'])} | {_fmt(x['bound_us'])} | {_fmt(ratio, 4)} | "
                     + " | ".join(f"{x[k]:,}" for k in COUNTERS) + " |")
    lines += ["", "Bound: the payload at the host rate plus the propagation there and back of the shortest "
              "path among the flows (two links each way when a flow stays in its leaf); no flow can end sooner."]
    return "\n".join(lines)


def fct_cdf_figure(sweep_dir: Path, fig_dir: Path) -> list[Path]:
    """The FCT CDF per spraying, the form of the paper's figure."""
    runs, flows = load_sweep(sweep_dir, FLOW_COLUMNS)
    xs = rows(runs, flows)
    fig, ax = plt.subplots(figsize=(4.2, 3.2))
    for i, x in enumerate(xs):
        n = x["fct_us"].size
        if n:
            ax.step(x["fct_us"], np.arange(1, n + 1) / n, where="post", color=f"C{i}", label=f"NSCC, {x['variant']}")
    if xs:
        ax.axvline(xs[0]["bound_us"], color="grey", ls=":", lw=1, label="idle-path bound")
    ax.set_xlabel("flow completion time us")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    name = Store(sweep_dir).manifest().get("name", "reps-nscc-permutation")
    ax.set_title(f"{name}: FCT of the permutation", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, fig_dir / "reps_fct_cdf")


EXPERIMENTS = [
    Experiment(
        name="reps-nscc-permutation",
        title="REPS against oblivious spraying under NSCC: an 8 MiB permutation of 128 hosts on a 400 Gb/s "
              "two-tier fat tree, the REPS artifact's setup",
        citation=("REPS: Recycled Entropy Packet Spraying for Adaptive Load Balancing and Failure Mitigation "
                  "(arXiv 2407.21625), its artifact's setup for the figure of entropy counts and congestion "
                  "controls; the paper's text with the figure's numbers is not available here"),
        sweep="reps_nscc_perm.toml", quick="reps_nscc_perm_quick.toml",
        figures=[], by="fabric.path_selection", compare=compare_reps, report=report_reps,
        theirs="min FCT: each flow's idle-path bound (payload at line rate + round-trip propagation); p99: none published here",
        needs_cc=["nscc"], extra_figures=fct_cdf_figure, flow_columns=FLOW_COLUMNS, theirs_from_runs=True,
    ),
]
