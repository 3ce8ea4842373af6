"""The field's standard figures for a sweep, comparing its runs along one dimension.

Every function takes a sweep folder, the dimension to compare along (`by`, a dotted
parameter path such as `"fabric.cc"`; default: the sweep's `[plot] by`, else its first
varied parameter), an optional `where` filter ({path: value}) and an output path without
suffix; it writes a PNG and a PDF and returns their paths. Runs that share a value of
`by` (other seeds, say) are pooled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.ticker import MaxNLocator

from rdmalab.experiments.figures.base import (NoData, default_by, draw_panels, figure_title, first_run_tables,
                                              group_tables, out_path)
from rdmalab.experiments.store import Store
from rdmalab.plots import interval_steps, log_axis, plt, save_figure, slowdown_by_size_frames
from rdmalab.results import port_label


#: The flow-table columns the slowdown and CDF figures read (a sweep's other columns are not
#: loaded: tens of millions of flows would not fit).
FLOW_FIGURE_COLUMNS = ("size", "slowdown", "fct_ns", "status", "start_ns")


#: The most points a CDF is drawn with: beyond a few thousand a line looks the same, and a
#: sweep's tens of millions of flows drawn point by point take gigabytes (the PDF too).
CDF_POINTS = 4000


def cdf_steps(x: np.ndarray, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of sorted `x` as step points (value, fraction at or below it), at most
    `points` of them, evenly spaced in rank, the first and last always kept."""
    n = len(x)
    keep = np.unique(np.linspace(0, n - 1, min(n, points)).astype(np.int64)) if n else np.zeros(0, dtype=np.int64)
    return x[keep], (keep + 1) / n if n else np.zeros(0)


# -- the figures ---------------------------------------------------------------------------
def slowdown_vs_size(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                     where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """FCT slowdown vs flow size: p50/p95/p99 per 5 %-of-flows bucket (HPCC paper style)."""
    store = Store(sweep)
    by = by or default_by(store)
    groups = group_tables(store, "flows", by, where, FLOW_FIGURE_COLUMNS)
    return slowdown_by_size_frames(groups, out_path(store, out, "slowdown"), figure_title(store, title, "FCT slowdown"))


def fct_cdf(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
            where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """CDFs of flow completion time (µs) and of FCT slowdown."""
    store = Store(sweep)
    by = by or default_by(store)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for g, df in group_tables(store, "flows", by, where, FLOW_FIGURE_COLUMNS).items():
        for ax, col, scale in ((a, "fct_ns", 1e-3), (b, "slowdown", 1.0)):
            x = df[col].to_numpy() * scale
            x = np.sort(x[~np.isnan(x)])  # unreachable flows have no FCT
            ax.step(*cdf_steps(x), where="post", label=g)
    a.set_xlabel("flow completion time (µs)")
    b.set_xlabel("FCT slowdown (FCT / ideal FCT)")
    for ax in (a, b):
        log_axis(ax, "x")
        ax.set_ylabel("fraction of flows (CDF)")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="both", alpha=0.3)
    a.legend()
    fig.suptitle(figure_title(store, title, "FCT CDF"))
    fig.tight_layout()
    return save_figure(fig, out_path(store, out, "cdf"))


def _sampled_first_runs(store: Store, table: str, by: str | None, where: dict[str, Any] | None, what: str,
                        setting: str) -> dict[str, pl.DataFrame]:
    """`first_run_tables` of a table the engine fills only when asked (`setting`, a sampling
    interval): a sweep without `what` is told which setting to give."""
    try:
        return first_run_tables(store, table, by or default_by(store), where)
    except NoData:
        raise NoData(f"the sweep has no {what}: set {setting} (e.g. \"1us\")") from None


def queue_over_time(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                    where: dict[str, Any] | None = None, title: str | None = None, ports: int = 4) -> list[Path]:
    """Switch egress queue length (KB) over time (µs): the `ports` busiest ports of one run
    per value of `by`. Needs `fabric.queue_sample_interval` in the sweep's scenario."""
    store = Store(sweep)
    groups = _sampled_first_runs(store, "queues", by, where, "queue samples", "fabric.queue_sample_interval")

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        key = "port_id" if "port_id" in df.columns else "port"  # stores written before ports had names
        top = df.group_by(key).agg(pl.col("bytes").max()).sort(["bytes", key], descending=[True, False])
        busy = top.filter(pl.col("bytes") > 0)
        for port in (busy if busy.height else top)[key].head(ports).to_list():
            d = df.filter(pl.col(key) == port).sort("time_ps")
            label = port_label(d.row(0, named=True)) if "link" in d.columns else f"port {port}"
            ax.plot(d["time_ps"].to_numpy() / 1e6, d["bytes"].to_numpy() / 1e3, lw=1, label=label)
        ax.set_ylabel("queue length (KB)")

    return draw_panels(store, groups, draw, out_path(store, out, "queue"), figure_title(store, title, "switch queue length"))


def qp_rate_over_time(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                      where: dict[str, Any] | None = None, title: str | None = None, flows: int = 8,
                      metric: str = "throughput") -> list[Path]:
    """Per-QP throughput (or CC rate) in Gb/s over time (µs), one run per value of `by`.

    Draws the engine's rate samples (the `rates` table, needs `fabric.rate_sample_interval`):
    `metric="throughput"` the payload each QP got acknowledged per interval, what convergence
    plots show; `metric="rate"` the rate its congestion control allowed. With many QPs, the
    `flows` that moved the most bytes are drawn.
    """
    column = {"throughput": "throughput_gbps", "rate": "rate_gbps"}.get(metric)
    if column is None:
        raise ValueError(f"metric: {metric!r} is not `throughput` or `rate`")
    store = Store(sweep)
    groups = _sampled_first_runs(store, "rates", by, where, "rate samples", "fabric.rate_sample_interval")

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        top = df.group_by("flow").agg(pl.col("throughput_gbps").sum()).sort(["throughput_gbps", "flow"],
                                                                             descending=[True, False])
        for f in sorted(top["flow"].head(flows).to_list()):
            d = df.filter(pl.col("flow") == f).sort("time_ps")
            src, dst = d["src"][0], d["dst"][0]
            # A sample covers the interval before it: draw it as a step ending at its time.
            ax.step(*interval_steps(d["time_ps"].to_numpy() / 1e6, d[column].to_numpy()), where="pre", lw=1,
                    label=f"flow {f} ({src}→{dst})")
        ax.set_ylabel("throughput (Gb/s)" if metric == "throughput" else "CC rate (Gb/s)")
        ax.set_ylim(bottom=0)

    what = "per-QP throughput" if metric == "throughput" else "per-QP CC rate"
    return draw_panels(store, groups, draw, out_path(store, out, "rate"), figure_title(store, title, what))


def pfc_pause_time(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                   where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Total PFC pause time (µs, summed over ports) and PAUSE frames sent, per value of `by`:
    mean over the runs of each value, bars spanning their min and max. Both axes start at
    zero; frame counts get whole-number ticks; runs that paused nothing say so on the panel."""
    store = Store(sweep)
    by = by or default_by(store)
    per_run = {g: df.group_by("run_id").agg((pl.col("paused_ps").sum() / 1e6).alias("us"),
                                            pl.col("pause_sent").sum().alias("frames"))
               for g, df in group_tables(store, "ports", by, where).items()}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = list(per_run)
    for ax, col, ylabel in zip(axes, ("us", "frames"), ("PFC pause time (µs, all ports)", "PAUSE frames sent")):
        vals = [per_run[g][col].to_numpy().astype(float) for g in labels]
        mean = np.array([v.mean() for v in vals])
        err = np.array([[m - v.min() for v, m in zip(vals, mean)], [v.max() - m for v, m in zip(vals, mean)]])
        ax.bar(range(len(labels)), mean, yerr=err if any(len(v) > 1 for v in vals) else None, capsize=3,
               color="tab:blue")
        ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 4 else 0,
                      ha="right" if len(labels) > 4 else "center")
        ax.set_ylabel(ylabel)
        ax.set_xlabel(by)
        ax.grid(True, axis="y", alpha=0.3)
        top = float(max((v.max() for v in vals), default=0.0))
        if top <= 0:
            # Nothing paused: an empty axis from 0 to 1 and the statement, not a +-0.05 band.
            ax.set_ylim(0, 1)
            ax.set_yticks([0])
            ax.text(0.5, 0.5, "no PFC pauses in these runs", transform=ax.transAxes, ha="center", va="center")
        else:
            ax.set_ylim(0, top * 1.1)
            if col == "frames":
                ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(figure_title(store, title, "PFC pauses"))
    fig.tight_layout()
    return save_figure(fig, out_path(store, out, "pfc"))
