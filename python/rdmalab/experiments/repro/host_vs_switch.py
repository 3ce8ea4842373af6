"""`lb-host-vs-switch` (ours): the switch-side balancers against the data-partition paper's
partition and Virtuoso on one fabric, symmetric and asymmetric, lossless and with
IRN (docs/load-balancing.md). No paper has this table; `theirs` is empty on every row.

The sweep (`lb_host_vs_switch*.toml`, written by `host_vs_switch_sweep.py`) zips every run's
settings; a run's row, loss recovery, case and load are read back from its scenario here.
Switch-side rows are measured on flows, host-side ones on messages (the same draws), both as
FCT over the single-path ideal (clamped below at 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.repro.host_vs_switch_sweep import CASES, HOST_ROWS, LOADS, SWITCH_ROWS
from rdmalab.experiments.repro.load_balancing import BDP_BYTES
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.plots import plt, save_figure

#: Every row of the table, ConWeave's included (skipped where it is not built).
ROWS = SWITCH_ROWS + HOST_ROWS
RECOVERIES = ("lossless", "irn")
#: The full variant drops what starts in its first 1 ms (queues and CONGA's tables fill).
WARMUP_NS = 1_000_000.0
STATS = ("avg", "p50", "p99")


def run_labels(runs: pl.DataFrame) -> pl.DataFrame:
    """run_id -> row, recovery, case, load, read from each run's scenario."""
    out = []
    for rid, text in zip(runs["run_id"].to_list(), runs["scenario"].to_list()):
        s = json.loads(text)
        t, fabric = s["traffic"][0], s.get("fabric", {})
        row = ("virtuoso" if t.get("split") == "virtuoso" else "partition") if t["kind"] == "multipath" \
            else fabric.get("path_selection", "ecmp")
        case = "quarter" if s.get("links") else "failed" if s.get("events") else "symmetric"
        load = t.get("load", t.get("workload", {}).get("load"))
        recovery = "irn" if fabric.get("loss_recovery") == "irn" else "lossless"
        out.append({"run_id": rid, "row": row, "recovery": recovery, "case": case, "load": float(load)})
    return pl.DataFrame(out, schema={"run_id": pl.Utf8, "row": pl.Utf8, "recovery": pl.Utf8, "case": pl.Utf8,
                                     "load": pl.Float64})


def message_slowdown() -> pl.Expr:
    """A multipath message's slowdown: FCT over its single-path ideal, at least 1."""
    return (pl.col("fct_ns") / pl.col("ideal_ns")).clip(lower_bound=1.0).alias("slowdown")


def slowdowns(runs: pl.DataFrame, flows: pl.DataFrame, store: Store, warmup_ns: float) -> pl.DataFrame:
    """run_id, size, slowdown of every completed flow (switch rows) or message (host rows)
    started after the warm-up."""
    labels = run_labels(runs)
    host = labels.filter(pl.col("row").is_in(list(HOST_ROWS)))["run_id"].to_list()
    f = flows.filter((pl.col("status") == "completed") & ~pl.col("run_id").is_in(host))
    parts = [f.select("run_id", "size", "start_ns", "slowdown")]
    m = store.table("messages", params=False)
    if m.height and "fct_ns" in m.columns:
        m = m.filter(pl.col("run_id").is_in(host) & pl.col("fct_ns").is_not_nan())
        m = m.with_columns(message_slowdown())
        parts.append(m.select("run_id", pl.col("size").cast(f["size"].dtype), "start_ns", "slowdown"))
    out = pl.concat(parts).filter(pl.col("start_ns") >= warmup_ns)
    return out.join(labels, on="run_id")


def slowdown_stats(x: np.ndarray) -> dict[str, float]:
    """avg, p50 and p99 of a slowdown array (NaN when empty)."""
    if x.size == 0:
        return dict.fromkeys(STATS, float("nan"))
    return {"avg": float(x.mean()), "p50": float(np.percentile(x, 50)), "p99": float(np.percentile(x, 99))}


def imbalance(store: Store, runs: pl.DataFrame) -> dict[str, float]:
    """run_id -> mean over ToRs and windows of the uplink imbalance (max - min) / mean."""
    b = store.table("balance", params=False)
    if b.height == 0 or "imbalance" not in b.columns:
        return {}
    g = b.group_by("run_id").agg(pl.col("imbalance").mean())
    return dict(zip(g["run_id"].to_list(), g["imbalance"].to_list()))


def table(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> pl.DataFrame:
    """One line per (case, load, recovery, row): avg/p50/p99 slowdown below and at or above
    one BDP, and the uplink imbalance."""
    full = store.manifest().get("name") == "lb-host-vs-switch"
    s = slowdowns(runs, flows, store, WARMUP_NS if full else 0.0)
    imb = imbalance(store, runs)
    lines = []
    for lab in run_labels(runs).iter_rows(named=True):
        mine = s.filter(pl.col("run_id") == lab["run_id"])
        small = slowdown_stats(mine.filter(pl.col("size") < BDP_BYTES)["slowdown"].to_numpy())
        large = slowdown_stats(mine.filter(pl.col("size") >= BDP_BYTES)["slowdown"].to_numpy())
        line = {k: lab[k] for k in ("case", "load", "recovery", "row")}
        line.update({f"{k} <BDP": v for k, v in small.items()})
        line.update({f"{k} >=BDP": v for k, v in large.items()})
        line["imbalance"] = imb.get(lab["run_id"], float("nan"))
        line["n"] = mine.height
        lines.append(line)
    order = {"case": list(CASES), "recovery": list(RECOVERIES), "row": list(ROWS)}
    df = pl.DataFrame(lines)
    for col, values in order.items():
        df = df.with_columns(pl.col(col).replace_strict(values, list(range(len(values))), default=99).alias(f"_{col}"))
    return df.sort("_case", "load", "_recovery", "_row").drop("_case", "_recovery", "_row")


def compare_host_vs_switch(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per case, load and recovery, each row's average and p99 slowdown of all flows (no
    published counterpart: theirs is NaN)."""
    full = store.manifest().get("name") == "lb-host-vs-switch"
    s = slowdowns(runs, flows, store, WARMUP_NS if full else 0.0)
    nan, rows = float("nan"), []
    for lab in run_labels(runs).sort("case", "load", "recovery", "row").iter_rows(named=True):
        st = slowdown_stats(s.filter(pl.col("run_id") == lab["run_id"])["slowdown"].to_numpy())
        group = f"{lab['case']} {lab['load']:g} {lab['recovery']}"
        rows += [Comparison(group, f"{lab['row']} {k} slowdown", st[k], nan) for k in ("avg", "p99")]
    return rows


def report(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """The table as markdown, and the rows that did not run."""
    df = table(runs, flows, store)
    cols = ["case", "load", "recovery", "row"] + [f"{k} {c}" for c in ("<BDP", ">=BDP") for k in STATS] + [
        "imbalance", "n"]
    fmt = (lambda v: f"{v:.2f}" if isinstance(v, float) else str(v))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in df.iter_rows(named=True)]
    return "\n".join(lines)


def figure(sweep_dir: Path, fig_dir: Path) -> list[Path]:
    """p99 slowdown of all flows per row, one panel per case and load, lossless and IRN side
    by side; and the uplink imbalance the same way."""
    store = Store(sweep_dir)
    runs, flows = load_sweep(sweep_dir)
    runs = runs.filter(pl.col("status") == "ok")
    if runs.height == 0:
        return []
    df = table(runs, flows, store)
    full = store.manifest().get("name") == "lb-host-vs-switch"
    s = slowdowns(runs, flows, store, WARMUP_NS if full else 0.0)
    p99 = {rid: slowdown_stats(g["slowdown"].to_numpy())["p99"] for (rid,), g in s.group_by("run_id")}
    labels = run_labels(runs).with_columns(pl.col("run_id").replace_strict(p99, default=float("nan")).alias("p99"))
    fig_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for metric, source, name in (("p99 slowdown (all flows)", labels, "host_vs_switch_p99"),
                                 ("uplink imbalance", df, "host_vs_switch_imbalance")):
        col = "p99" if source is labels else "imbalance"
        fig, axes = plt.subplots(len(LOADS), len(CASES), figsize=(4 * len(CASES), 3 * len(LOADS)), squeeze=False)
        rows = [r for r in ROWS if r in set(source["row"].to_list())]
        x = np.arange(len(rows))
        for i, load in enumerate(LOADS):
            for j, case in enumerate(CASES):
                ax = axes[i][j]
                for k, rec in enumerate(RECOVERIES):
                    sel = source.filter((pl.col("case") == case) & (pl.col("load") == load)
                                        & (pl.col("recovery") == rec))
                    vals = dict(zip(sel["row"].to_list(), sel[col].to_list()))
                    ax.bar(x + (k - 0.5) * 0.4, [vals.get(r, np.nan) for r in rows], 0.4, label=rec)
                ax.set_xticks(x, rows, rotation=45, ha="right", fontsize=8)
                ax.set_title(f"{case}, host load {load:g}", fontsize=9)
                if col == "p99":
                    ax.set_yscale("log")  # go-back-N under spraying is two orders above the rest
                if j == 0:
                    ax.set_ylabel(metric, fontsize=8)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        out += save_figure(fig, fig_dir / name, dpi=120)
    return out


EXPERIMENTS = [
    Experiment(
        name="lb-host-vs-switch",
        title="Host-side (data partition, Virtuoso) vs switch-side load balancing, symmetric and asymmetric "
              "2:1 leaf-spine, lossless and IRN",
        citation="ours; schemes: DRILL (SIGCOMM'17), LetFlow (NSDI'17), CONGA (SIGCOMM'14), "
                 "data partition (Wang et al.), Virtuoso (Tian et al.), IRN (SIGCOMM'18)",
        sweep="lb_host_vs_switch.toml", quick="lb_host_vs_switch_quick.toml",
        figures=[], by="fabric.path_selection", compare=compare_host_vs_switch,
        theirs="none: no published study puts these schemes on one fabric",
        needs_cc=["dcqcn"], report=report, extra_figures=figure,
    ),
]
