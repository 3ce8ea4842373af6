"""The `share` figure: per-tenant throughput of each case of a sweep (the CC-attack paper's attacks).

A case is one combination of the sweep's parameters other than the seed; its seeds are
pooled: the bar is the mean over the seeds, the error bar spans their min and max.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.figures.base import NoData, default_by, figure_title, out_path, select_runs
from rdmalab.experiments.store import Store
from rdmalab.experiments.tenants import run_label, run_shares, share_of
from rdmalab.plots import plt, save_figure


def case_table(store: Store, runs: pl.DataFrame, shares: pl.DataFrame, tenants: list[str]) -> pl.DataFrame:
    """Per case (in the sweep's order) and tenant: mean, min and max Gb/s over its seeds and
    the seed count. Columns: case, tenant, mean, min, max, seeds."""
    dims = [d for d in store.dimensions() if d != "seed"]
    rows = []
    for r in runs.iter_rows(named=True):
        case = run_label(r, dims) if dims else "all runs"
        rows.extend({"case": case, "tenant": t, "gbps": share_of(shares, r["run_id"], t, "gbps")} for t in tenants)
    df = pl.DataFrame(rows, schema={"case": pl.Utf8, "tenant": pl.Utf8, "gbps": pl.Float64})
    return (df.group_by("case", "tenant", maintain_order=True)
            .agg(pl.col("gbps").mean().alias("mean"), pl.col("gbps").min().alias("min"),
                 pl.col("gbps").max().alias("max"), pl.len().alias("seeds")))


def share_bars(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
               where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Bars of each case's per-tenant throughput over [T/4, T), one bar per tenant side by
    side; seeds pooled (mean, min-max bars)."""
    store = Store(sweep)
    runs = select_runs(store, by or default_by(store), where)
    shares = run_shares(store, runs)
    if shares.height == 0:
        raise NoData("no tenant meter in this sweep")
    tenants = sorted(set(shares["tenant"]) - {"default"}) or ["default"]
    table = case_table(store, runs, shares, tenants)
    cases = list(dict.fromkeys(table["case"].to_list()))
    seeds = table["seeds"].max()
    width = 0.8 / len(tenants)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(cases) + 2), 4.4))
    x = np.arange(len(cases))
    for k, t in enumerate(tenants):
        sub = table.filter(pl.col("tenant") == t)
        mean = sub["mean"].to_numpy()
        err = [mean - sub["min"].to_numpy(), sub["max"].to_numpy() - mean]
        ax.bar(x + (k - (len(tenants) - 1) / 2) * width, mean, width, yerr=err if seeds > 1 else None,
               capsize=3, label=t)
    long_labels = len(cases) > 6
    ax.set_xticks(x, cases, fontsize=8, rotation=30 if long_labels else 0, ha="right" if long_labels else "center")
    ax.set_ylabel("payload delivered (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(title="tenant", fontsize=8)
    pooled = f"mean of {seeds} seeds, bars min-max" if seeds > 1 else "one seed"
    ax.set_title(figure_title(store, title, f"throughput per tenant ({pooled})"), fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out_path(store, out, "share"))


#: The name `plot_sweep` knows it by.
tenant_shares = share_bars
