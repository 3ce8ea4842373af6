"""`uec-vs-roce`: the Ultra Ethernet transport beside RoCE, RoCE + IRN + spraying and
InfiniBand on the same fabrics and workloads (docs/uec-vs-roce.md).

The sweep (`uec_vs_roce*.toml`, written by `uec_vs_roce_sweep.py`) zips every run's
tables; a run's variant and workload are read back from its scenario. Per run the table
gives p50/p99 FCT (a collective's time for the AllReduce), the span from first start to
last completion (against the receiver link's bound for an incast), the payload delivered
against the payload offered, and what the transport lost on the way: drops, trims,
retransmissions, NACKs, timeouts and PFC pauses, from the run's counters.

No number of the two papers (SMaRTT, REPS) is printed beside ours: no workload here runs
their setup (docs/uec-vs-roce.md says where each differs), so `theirs` is empty on every row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.repro.uec_vs_roce_sweep import VARIANTS, label_of, labels, workloads
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.plots import plt, save_figure

#: The counters of the loss table, in its column order (absent counters read 0).
LOSS_COUNTERS = ("drops", "trims", "retx_packets", "nacks", "timeouts", "pauses", "link_down_losses")
FLOW_COLUMNS = ("run_id", "dst", "size", "start_ns", "fct_ns", "status")


def _rate_bps(scenario: dict[str, Any]) -> float:
    topo = scenario["topology"]
    rate = topo.get("host_rate", topo.get("rate", "100Gbps"))
    return float(rate.removesuffix("Gbps")) * 1e9


def _pct(x: np.ndarray, p: float) -> float:
    return float(np.percentile(x, p)) if x.size else float("nan")


def rows(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[dict[str, Any]]:
    """One dict per successful run: variant, workload, FCT or collective times, span, bytes
    offered and delivered, the loss counters."""
    table = labels()
    coll = store.table("collectives", params=False)
    out = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        sc = json.loads(r["scenario"])
        lab = label_of(sc, table)
        if lab is None:
            continue
        v, w, quick = lab
        f = flows.filter(pl.col("run_id") == r["run_id"])
        done = f.filter(pl.col("status") == "completed")
        times = done["fct_ns"].to_numpy()
        row: dict[str, Any] = {"run_id": r["run_id"], "variant": v.name, "workload": w.name, "quick": quick,
                               "scenario": sc,
                               "flows": int(r.get("flows_total") or f.height), "completed": done.height,
                               "receivers": sorted(set(f["dst"].to_list())) if "dst" in f.columns else []}
        if w.incast is not None:  # known even when no flow completed
            row["receivers"] = [w.traffic[0]["receiver"]]
        # A run ends when its last flow does, or at its stop time (`stop_reason` says
        # `stop_time` either way when one is set), or when no flow can progress (`stalled`).
        row["stop"] = "finished" if done.height == row["flows"] else (r.get("stop_reason") or "")
        if w.collective and "name" in coll.columns:
            c = coll.filter(pl.col("run_id") == r["run_id"])
            times = (c["end_ns"] - c["start_ns"]).to_numpy()
        row["p50_us"], row["p99_us"] = _pct(times, 50) / 1e3, _pct(times, 99) / 1e3
        # The span of a run cut short would be that of the flows that happened to end: left out.
        row["span_us"] = float((done["start_ns"] + done["fct_ns"]).max() - f["start_ns"].min()) / 1e3 \
            if done.height and row["stop"] == "finished" else float("nan")
        # Offered: an incast's N x size; otherwise the flow table's sizes, which miss the
        # flows of a run cut short (its ratio is then left out).
        row["offered"] = int(f["size"].sum()) if f.height and row["stop"] == "finished" else 0
        row["delivered"] = int(r.get("payload_bytes_delivered") or 0)
        if w.incast is not None:
            n, size = w.incast
            row["offered"] = n * size
            row["bound_us"] = n * size * 8 / _rate_bps(sc) * 1e6
        for k in LOSS_COUNTERS:
            row[k] = int(r.get(k) or 0)
        out.append(row)
    order_w = {quick: {w.name: i for i, w in enumerate(workloads(quick))} for quick in (False, True)}
    order_v = {v.name: i for i, v in enumerate(VARIANTS)}
    out.sort(key=lambda x: (x["quick"], order_w[x["quick"]].get(x["workload"], 99), order_v.get(x["variant"], 99)))
    return out


def compare_uec(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """p99 FCT (or collective time) of every run; for an incast, its span against the
    receiver link's payload bound (a closed form of the run's own scenario)."""
    out = []
    for x in rows(runs, flows, store):
        group = f"{x['workload']} {x['variant']}"
        if "bound_us" in x:
            out.append(Comparison(group, "span / link bound us", x["span_us"], x["bound_us"]))
        else:
            out.append(Comparison(group, "p99 FCT us (no paper)", x["p99_us"], float("nan")))
    return out


def _fmt(x: float, digits: int = 1) -> str:
    return "" if x != x else f"{x:,.{digits}f}"


def report_uec(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """Markdown: per workload and variant, p50/p99 FCT, the span (and an incast's bound),
    payload delivered over offered, and what the transport lost."""
    xs = rows(runs, flows, store)
    if not xs:
        return "(no runs of uec-vs-roce)"
    head = ("| workload | variant | flows done | p50 FCT us | p99 FCT us | span us | incast bound us | "
            "delivered / offered | drops | trims | retx | NACKs | timeouts | pauses | link-down losses | end |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for x in xs:
        ratio = x["delivered"] / x["offered"] if x["offered"] else float("nan")
        lines.append(
            f"| {x['workload']} | {x['variant']} | {x['completed']}/{x['flows']} | {_fmt(x['p50_us'])} | "
            f"{_fmt(x['p99_us'])} | {_fmt(x['span_us'])} | {_fmt(x.get('bound_us', float('nan')))} | "
            f"{_fmt(ratio, 4)} | " + " | ".join(f"{x[k]:,}" for k in LOSS_COUNTERS) + f" | {x['stop']} |")
    lines += ["", "For a collective, FCT is each rail's AllReduce time (first post to last completion). "
              "Delivered: payload the receivers accepted (`payload_bytes_delivered`); offered: an incast's N x size, "
              "else the flows' sizes (left out for a run cut short, whose flow table lists only the flows that "
              "ended). End: `finished` when "
              "every flow completed, else why the run ended: `stop_time` (cut at the workload's stop time) or "
              "`stalled` (flows left that could make no progress)."]
    return "\n".join(lines)


def _grid(n: int, width: float = 3.6, height: float = 3.0) -> tuple[Any, list[Any]]:
    cols = min(n, 5)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, height * nrows), squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def tail_figure(xs: list[dict[str, Any]], title: str, out: Path) -> list[Path]:
    """p99 FCT (bar) and p50 (tick) per variant, a panel per workload; the bar of a run cut
    short (its completed flows only) is hatched."""
    wl = list(dict.fromkeys(x["workload"] for x in xs))
    fig, axes = _grid(len(wl))
    colours = {v.name: f"C{i}" for i, v in enumerate(VARIANTS)}
    for ax, w in zip(axes, wl):
        mine = [x for x in xs if x["workload"] == w]
        pos = range(len(mine))
        bars = ax.bar(pos, [x["p99_us"] for x in mine], color=[colours.get(x["variant"], "k") for x in mine])
        for b, x in zip(bars, mine):  # a run cut short: its completed flows only, hatched
            if x["stop"] != "finished":
                b.set_hatch("//")
                b.set_edgecolor("k")
        ax.scatter(pos, [x["p50_us"] for x in mine], marker="_", color="k", s=120, zorder=3)
        ax.set_xticks(list(pos), [x["variant"] for x in mine], rotation=60, ha="right", fontsize=7)
        ax.set_title(w, fontsize=9)
        ax.set_ylabel("p99 FCT us (tick: p50)", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out)


def delivered_rate(store: Store, run_id: str, receivers: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(time us, Gb/s) of the bytes switches sent onto the links of the flows' receivers
    per sample interval (headers, and ACKs to a receiver that also sends, included): what
    the fabric delivered to them over time."""
    path = store.path("links", run_id)  # this run's file alone: a full run's has ~10^6 rows
    if not path.exists():
        return np.array([]), np.array([])
    lk = pl.read_parquet(path, columns=["time_ps", "node", "node_kind", "peer_node", "bytes"])
    hosts = lk.filter(pl.col("node_kind") == "host")["node"].unique()
    if receivers:
        hosts = hosts.filter(hosts.is_in(receivers))
    d = (lk.filter((pl.col("node_kind") == "switch") & pl.col("peer_node").is_in(hosts.implode()))
         .group_by("time_ps").agg(pl.col("bytes").sum()).sort("time_ps"))
    if d.height == 0:
        return np.array([]), np.array([])
    t = d["time_ps"].to_numpy().astype(float)
    dt = np.diff(np.concatenate([[0.0], t]))
    return t / 1e6, d["bytes"].to_numpy() * 8 / (dt / 1e12) / 1e9


def rate_figure(store: Store, xs: list[dict[str, Any]], title: str, out: Path) -> list[Path]:
    """Delivered rate over time per variant, a panel per workload; the time axis ends a
    little after the last run that finished (a run cut short goes on to its stop time)."""
    wl = list(dict.fromkeys(x["workload"] for x in xs))
    fig, axes = _grid(len(wl))
    colours = {v.name: f"C{i}" for i, v in enumerate(VARIANTS)}
    for ax, w in zip(axes, wl):
        right = 0.0
        for x in (x for x in xs if x["workload"] == w):
            t, g = delivered_rate(store, x["run_id"], x["receivers"])
            if t.size:
                ax.step(t, g / 1e3, where="post", lw=0.9, color=colours.get(x["variant"], "k"), label=x["variant"])
                right = max(right, t[-1]) if x["stop"] == "finished" else right
        if right:
            ax.set_xlim(0, 1.1 * right)
        ax.set_title(w, fontsize=9)
        ax.set_xlabel("time us", fontsize=7)
        ax.set_ylabel("to receivers, Tb/s", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    if axes:
        axes[0].legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out)


def figures(sweep_dir: Path, fig_dir: Path) -> list[Path]:
    """The tail-FCT bars and the delivered-rate curves."""
    runs, flows = load_sweep(sweep_dir, FLOW_COLUMNS)
    store = Store(sweep_dir)
    xs = rows(runs, flows, store)
    name = store.manifest().get("name", "uec-vs-roce")
    paths = tail_figure(xs, f"{name}: p99 FCT (collective: AllReduce time) per transport", fig_dir / "uec_tail_fct")
    paths += rate_figure(store, xs, f"{name}: bytes delivered to the receivers' links over time", fig_dir / "uec_delivered_rate")
    return paths


EXPERIMENTS = [
    Experiment(
        name="uec-vs-roce",
        title="Ultra Ethernet (NSCC, NSCC + RCCC; oblivious and REPS spraying; trimming on/off) vs RoCE, RoCE + IRN + "
              "spraying and InfiniBand: incasts, permutations, failures, AllReduce, web search",
        citation=("SMaRTT: Sender-based Marked Rapidly-adapting Trimmed & Timed Transport (arXiv 2404.01630) and "
                  "REPS: Recycled Entropy Packet Spraying (arXiv 2407.21625); no setup of theirs is run, no "
                  "published number is compared"),
        sweep="uec_vs_roce.toml", quick="uec_vs_roce_quick.toml",
        figures=[], by="topology", compare=compare_uec, report=report_uec,
        theirs="an incast's receiver-link bound N x size / rate; elsewhere none (no paper setup matches)",
        needs_cc=["dcqcn", "ib", "nscc", "nscc+rccc"], extra_figures=figures, flow_columns=FLOW_COLUMNS, theirs_from_runs=True,
    ),
]
