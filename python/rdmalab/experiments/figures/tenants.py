"""The `share` figure: per-tenant throughput of each run (seed 002's attacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rdmalab.experiments.figures.base import NoData, default_by, figure_title, out_path, select_runs
from rdmalab.experiments.store import Store
from rdmalab.experiments.tenants import run_label, run_shares, share_of
from rdmalab.plots import plt, save_figure


def share_bars(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
               where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Stacked bars of each run's per-tenant throughput over [T/4, T), one bar per run."""
    store = Store(sweep)
    runs = select_runs(store, by or default_by(store), where)
    shares = run_shares(store, runs)
    if shares.height == 0:
        raise NoData("no tenant meter in this sweep")
    dims = [d for d in store.dimensions() if d != "seed"]
    tenants = sorted(set(shares["tenant"]) - {"default"}) or ["default"]
    ids = runs["run_id"].to_list()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(ids) + 2), 4.2))
    bottom = np.zeros(len(ids))
    for t in tenants:
        v = np.array([share_of(shares, rid, t, "gbps") for rid in ids])
        ax.bar(range(len(ids)), v, bottom=bottom, label=t)
        bottom += v
    ax.set_xticks(range(len(ids)))
    ax.set_xticklabels([run_label(r, dims) for r in runs.iter_rows(named=True)], fontsize=6, rotation=90)
    ax.set_ylabel("payload delivered, Gb/s")
    ax.legend(fontsize=8)
    ax.set_title(figure_title(store, title, "throughput per tenant"))
    fig.tight_layout()
    return save_figure(fig, out_path(store, out, "share"))


#: The name `plot_sweep` knows it by.
tenant_shares = share_bars
