"""The field's standard figures for a sweep, comparing its runs along one dimension.

Every function takes a sweep folder, the dimension to compare along (`by`, a dotted
parameter path such as `"fabric.cc"`; default: the sweep's `[plot] by`, else its first
varied parameter), an optional `where` filter ({path: value}) and an output path without
suffix; it writes a PNG and a PDF and returns their paths. Runs that share a value of
`by` (other seeds, say) are pooled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl

from rdmalab.experiments import figures_mp, figures_virtuoso
from rdmalab.experiments.store import Store, param_value
from rdmalab.experiments.sweep import MP_PLOT_KINDS, PLOT_KINDS
from rdmalab.plots import _save, plt, slowdown_by_size_frames
from rdmalab.results import port_label

#: Figure kinds of `rdmalab plot`, in order.
KINDS = PLOT_KINDS


class NoData(ValueError):
    """The sweep holds no data for this figure (e.g. queues were not sampled)."""


# -- selecting runs ------------------------------------------------------------------------
def default_by(store: Store) -> str:
    """The sweep's `[plot] by`, else its first varied parameter other than the seed."""
    m = store.manifest()
    by = (m.get("plot") or {}).get("by")
    if by:
        return by
    dims = [d for d in m.get("dimensions", []) if d != "seed"]
    return dims[0] if dims else "seed"


def _runs(store: Store, by: str, where: dict[str, Any] | None) -> pl.DataFrame:
    """Successful runs matching `where`, with a `group` label column for `by`."""
    runs = store.runs()
    if runs.height == 0:
        raise NoData(f"{store.root}: no finished runs")
    runs = runs.filter(pl.col("status") == "ok")
    for path, value in (where or {}).items():
        if path not in runs.columns:
            raise ValueError(f"where: `{path}` is not a parameter of this sweep ({', '.join(store.dimensions())})")
        runs = runs.filter(pl.col(path).cast(pl.Utf8) == str(param_value(value)))
    if by not in runs.columns:
        raise ValueError(f"by: `{by}` is not a parameter of this sweep ({', '.join(store.dimensions())})")
    if runs.height == 0:
        raise NoData("no successful runs match the selection")
    short = by.split(".")[-1]
    runs = runs.with_columns((pl.lit(f"{short}=") + pl.col(by).cast(pl.Utf8)).alias("group"))
    return runs.sort(pl.col("run_id").replace_strict(_sweep_order(store), default=len(store.run_ids())))


def _sweep_order(store: Store) -> dict[str, int]:
    """run id -> position in the sweep file's expansion (so groups keep the file's order)."""
    return {r["run_id"]: i for i, r in enumerate(store.manifest().get("runs", []))}


def _groups(store: Store, table: str, by: str, where: dict[str, Any] | None) -> dict[str, pl.DataFrame]:
    """`table` rows of the selected runs, split by the value of `by` (in sorted order)."""
    runs = _runs(store, by, where)
    df = store.table(table, params=False)
    if df.height == 0 or "run_id" not in df.columns or df.width <= 1:
        raise NoData(f"the sweep has no `{table}` data")
    df = df.join(runs.select("run_id", "group", by), on="run_id", how="inner")
    order = list(dict.fromkeys(runs["group"].to_list()))
    parts = {p["group"][0]: p for p in df.partition_by("group", maintain_order=True)}
    return {g: parts[g] for g in order if g in parts}


def _first_runs(store: Store, table: str, by: str, where: dict[str, Any] | None) -> dict[str, pl.DataFrame]:
    """Like `_groups`, but one run per group (the first seed): time series do not pool."""
    out = {}
    for g, df in _groups(store, table, by, where).items():
        first = df["run_id"][0]
        out[g] = df.filter(pl.col("run_id") == first)
    return out


def _out(store: Store, out: str | Path | None, kind: str) -> Path:
    return Path(out) if out else store.root / "figures" / kind


def _title(store: Store, title: str | None, what: str) -> str:
    """`title: what`, the title defaulting to the sweep's name."""
    return f"{title or store.manifest().get('name', store.root.name)}: {what}"


# -- the figures ---------------------------------------------------------------------------
def slowdown_vs_size(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                     where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """FCT slowdown vs flow size: p50/p95/p99 per 5 %-of-flows bucket (HPCC paper style)."""
    store = Store(sweep)
    by = by or default_by(store)
    groups = _groups(store, "flows", by, where)
    return slowdown_by_size_frames(groups, _out(store, out, "slowdown"), _title(store, title, "FCT slowdown"))


def fct_cdf(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
            where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """CDFs of flow completion time (µs) and of FCT slowdown."""
    store = Store(sweep)
    by = by or default_by(store)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for g, df in _groups(store, "flows", by, where).items():
        for ax, col, scale in ((a, "fct_ns", 1e-3), (b, "slowdown", 1.0)):
            x = df[col].to_numpy() * scale
            x = np.sort(x[~np.isnan(x)])  # unreachable flows have no FCT
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=g)
    a.set_xlabel("flow completion time (µs)")
    b.set_xlabel("FCT slowdown (FCT / ideal FCT)")
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_ylabel("fraction of flows (CDF)")
        ax.set_ylim(0, 1.01)
        ax.grid(True, which="both", alpha=0.3)
    a.legend()
    fig.suptitle(_title(store, title, "FCT CDF"))
    fig.tight_layout()
    return _save(fig, _out(store, out, "cdf"))


def queue_over_time(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                    where: dict[str, Any] | None = None, title: str | None = None, ports: int = 4) -> list[Path]:
    """Switch egress queue length (KB) over time (µs): the `ports` busiest ports of one run
    per value of `by`. Needs `fabric.queue_sample_interval` in the sweep's scenario."""
    store = Store(sweep)
    by = by or default_by(store)
    try:
        groups = _first_runs(store, "queues", by, where)
    except NoData:
        raise NoData("the sweep has no queue samples: set fabric.queue_sample_interval (e.g. \"1us\")") from None

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        key = "port_id" if "port_id" in df.columns else "port"  # stores written before ports had names
        top = df.group_by(key).agg(pl.col("bytes").max()).sort(["bytes", key], descending=[True, False])
        busy = top.filter(pl.col("bytes") > 0)
        for port in (busy if busy.height else top)[key].head(ports).to_list():
            d = df.filter(pl.col(key) == port).sort("time_ps")
            label = port_label(d.row(0, named=True)) if "link" in d.columns else f"port {port}"
            ax.plot(d["time_ps"].to_numpy() / 1e6, d["bytes"].to_numpy() / 1e3, lw=1, label=label)
        ax.set_ylabel("queue length (KB)")

    return _panels(store, groups, draw, _out(store, out, "queue"), _title(store, title, "switch queue length"))


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
    by = by or default_by(store)
    try:
        groups = _first_runs(store, "rates", by, where)
    except NoData:
        raise NoData("the sweep has no rate samples: set fabric.rate_sample_interval (e.g. \"1us\")") from None

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        top = df.group_by("flow").agg(pl.col("throughput_gbps").sum()).sort(["throughput_gbps", "flow"],
                                                                             descending=[True, False])
        for f in sorted(top["flow"].head(flows).to_list()):
            d = df.filter(pl.col("flow") == f).sort("time_ps")
            src, dst = d["src"][0], d["dst"][0]
            # A sample covers the interval before it: draw it as a step ending at its time.
            ax.step(d["time_ps"].to_numpy() / 1e6, d[column].to_numpy(), where="pre", lw=1,
                    label=f"flow {f} ({src}→{dst})")
        ax.set_ylabel("throughput (Gb/s)" if metric == "throughput" else "CC rate (Gb/s)")
        ax.set_ylim(bottom=0)

    what = "per-QP throughput" if metric == "throughput" else "per-QP CC rate"
    return _panels(store, groups, draw, _out(store, out, "rate"), _title(store, title, what))


def pfc_pause_time(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                   where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Total PFC pause time (µs, summed over ports) and PAUSE frames sent, per value of `by`:
    mean over the runs of each value, bars spanning their min and max."""
    store = Store(sweep)
    by = by or default_by(store)
    per_run = {g: df.group_by("run_id").agg((pl.col("paused_ps").sum() / 1e6).alias("us"),
                                            pl.col("pause_sent").sum().alias("frames"))
               for g, df in _groups(store, "ports", by, where).items()}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = list(per_run)
    for ax, col, ylabel in zip(axes, ("us", "frames"), ("PFC pause time (µs, all ports)", "PAUSE frames sent")):
        vals = [per_run[g][col].to_numpy().astype(float) for g in labels]
        mean = np.array([v.mean() for v in vals])
        err = np.array([[m - v.min() for v, m in zip(vals, mean)], [v.max() - m for v, m in zip(vals, mean)]])
        ax.bar(range(len(labels)), mean, yerr=err, capsize=3, color="tab:blue")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        ax.set_xlabel(by)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(_title(store, title, "PFC pauses"))
    fig.tight_layout()
    return _save(fig, _out(store, out, "pfc"))


def _panels(store: Store, groups: dict[str, pl.DataFrame], draw: Callable, out: Path, title: str) -> list[Path]:
    """One subplot per group, shared time axis in µs."""
    n = len(groups)
    fig, axes = plt.subplots(n, 1, figsize=(9, 2.6 * n + 0.6), sharex=True, squeeze=False)
    for ax, (g, df) in zip(axes[:, 0], groups.items()):
        draw(ax, df)
        ax.set_title(f"{g} (run {df['run_id'][0][:8]})", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper right", ncol=2)
    axes[-1, 0].set_xlabel("time (µs)")
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out)


def tenant_shares(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                  where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Per-tenant throughput of each run, stacked (seed 002's attacks, `experiments.attacks`)."""
    from rdmalab.experiments.attacks import share_bars

    return share_bars(sweep, by=by, out=out, where=where, title=title)


FIGURES: dict[str, Callable[..., list[Path]]] = {
    "slowdown": slowdown_vs_size, "cdf": fct_cdf, "queue": queue_over_time,
    "rate": qp_rate_over_time, "pfc": pfc_pause_time,
    "share": tenant_shares,
    "mp_qps": figures_mp.fct_vs_qps, "mp_chunk": figures_mp.fct_vs_chunk,
    "virtuoso_paths": figures_virtuoso.fct_vs_paths, "virtuoso_speedup": figures_virtuoso.speedup_vs_size,
    "virtuoso_overhead": figures_virtuoso.wrs_vs_paths,
}


def plot_sweep(sweep: str | Path, kinds: list[str] | tuple[str, ...] | None = None, by: str | None = None,
               where: dict[str, Any] | None = None, out_dir: str | Path | None = None,
               skip_missing: bool = True) -> dict[str, list[Path]]:
    """Draws several figures of a sweep into `out_dir` (default: the sweep's `figures/`).
    `kinds` and `where` default to the sweep file's `[plot]` table (else every kind, all
    runs). Kinds whose data the sweep lacks are skipped when `skip_missing`."""
    defaults = Store(sweep).manifest().get("plot") or {}
    kinds = kinds or defaults.get("kinds") or KINDS
    where = defaults.get("where") if where is None else where
    out_dir = Path(out_dir) if out_dir else Path(sweep) / "figures"
    made: dict[str, list[Path]] = {}
    for kind in kinds:
        if kind not in FIGURES:
            raise ValueError(f"unknown figure kind `{kind}` (known: {', '.join(KINDS + MP_PLOT_KINDS)})")
        try:
            made[kind] = FIGURES[kind](sweep, by=by, out=out_dir / kind, where=where, title=defaults.get("title"))
        except NoData:
            if not skip_missing:
                raise
    return made
