"""Figures of multipath sweeps (the data-partition paper's Figs. 7-12): the message's FCT against the number
of QPs, one line per chunk size, and against the chunk size, one line per number of QPs.

Both read the sweep's `messages` table and pool seeds (mean, with min-max bars). The sweep
must vary `traffic[0].qps` and `traffic[0].chunk_size` (the multipath entry comes first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from rdmalab.experiments.figures.base import NoData, figure_title
from rdmalab.experiments.store import Store
from rdmalab.plots import log_axis, plt, save_figure

QPS = "traffic[0].qps"
CHUNK = "traffic[0].chunk_size"


def fct_table(store: Store) -> pl.DataFrame:
    """Mean, min and max FCT (ms) of the first multipath message per (qps, chunk size)."""
    df = store.table("messages")
    if df.height == 0 or QPS not in df.columns or CHUNK not in df.columns:
        raise NoData("the sweep has no multipath messages varied by qps and chunk size")
    runs = store.runs().filter(pl.col("status") == "ok").select("run_id")
    df = df.join(runs, on="run_id").filter(pl.col("message") == 0)
    df = df.with_columns(pl.col(QPS).cast(pl.Int64).alias("qps"), pl.col(CHUNK).cast(pl.Int64).alias("chunk"),
                         (pl.col("fct_ns") / 1e6).alias("fct_ms"))
    return (df.group_by("qps", "chunk").agg(pl.col("fct_ms").mean().alias("mean"), pl.col("fct_ms").min().alias("min"),
                                            pl.col("fct_ms").max().alias("max"), pl.len().alias("seeds"))
            .sort("qps", "chunk"))


def _line(ax, sub: pl.DataFrame, x: str, label: str) -> None:  # noqa: ANN001
    m = sub["mean"].to_numpy()
    err = [m - sub["min"].to_numpy(), sub["max"].to_numpy() - m]
    ax.errorbar(sub[x].to_numpy(), m, yerr=err, marker="o", ms=3, capsize=2, label=label)


def fct_vs_qps(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
               where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """The message's FCT against the number of QPs, one line per chunk size (Figs. 7-9)."""
    store = Store(sweep)
    t = fct_table(store)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for chunk in sorted(set(t["chunk"].to_list())):
        _line(ax, t.filter(pl.col("chunk") == chunk), "qps", f"{chunk // 1024}K")
    ax.set_xlabel("QPs per connection")
    ax.set_ylabel("message completion time (ms)")
    ax.grid(True, alpha=0.3)
    ax.legend(title="chunk", fontsize=7, ncol=2)
    fig.suptitle(figure_title(store, title, "FCT vs QPs"))
    fig.tight_layout()
    return save_figure(fig, Path(out) if out else store.root / "figures" / "mp_qps")


def fct_vs_chunk(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                 where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """The message's FCT against the chunk size, one line per QP count from 2 to 5 (Figs. 10-12;
    every count when the sweep has none of them)."""
    store = Store(sweep)
    t = fct_table(store)
    qps = [q for q in sorted(set(t["qps"].to_list())) if 2 <= q <= 5] or sorted(set(t["qps"].to_list()))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for q in qps:
        _line(ax, t.filter(pl.col("qps") == q), "chunk", f"{q} QPs")
    log_axis(ax, "x", base=2)
    ax.set_xlabel("chunk size (bytes)")
    ax.set_ylabel("message completion time (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(figure_title(store, title, "FCT vs chunk size"))
    fig.tight_layout()
    return save_figure(fig, Path(out) if out else store.root / "figures" / "mp_chunk")
