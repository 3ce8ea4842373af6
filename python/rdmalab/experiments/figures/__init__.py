"""The figures of a sweep, by kind (`rdmalab plot`, `plot_sweep`).

Every figure function takes a sweep folder, the dimension to compare along (`by`, a dotted
parameter path such as `"fabric.cc"`; default: the sweep's `[plot] by`, else its first
varied parameter), an optional `where` filter ({path: value}) and an output path without
suffix; it writes a PNG and a PDF (`rdmalab.plots.save_figure`) and returns their paths.

    base       what every figure shares (run selection, grouping, titles, panels)
    standard   the field's figures: slowdown, CDF, queues, rates, PFC
    multipath  the data-partition paper's FCT against QPs and chunk size
    virtuoso   the Virtuoso paper's FCT, speed-up, WRs, WR size search and mice
    tenants    the CC-attack paper's per-tenant shares
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rdmalab.experiments.figures import multipath, virtuoso
from rdmalab.experiments.figures.base import (NoData, default_by, draw_panels, figure_title, first_run_tables,
                                              group_tables, out_path, select_runs)
from rdmalab.experiments.figures.standard import (fct_cdf, pfc_pause_time, qp_rate_over_time, queue_over_time,
                                                  slowdown_vs_size)
from rdmalab.experiments.figures.tenants import tenant_shares
from rdmalab.experiments.store import Store
from rdmalab.experiments.sweep import MP_PLOT_KINDS, PLOT_KINDS

#: Figure kinds of `rdmalab plot`, in order.
KINDS = PLOT_KINDS

FIGURES: dict[str, Callable[..., list[Path]]] = {
    "slowdown": slowdown_vs_size, "cdf": fct_cdf, "queue": queue_over_time,
    "rate": qp_rate_over_time, "pfc": pfc_pause_time,
    "share": tenant_shares,
    "mp_qps": multipath.fct_vs_qps, "mp_chunk": multipath.fct_vs_chunk,
    "virtuoso_paths": virtuoso.fct_vs_paths, "virtuoso_speedup": virtuoso.speedup_vs_size,
    "virtuoso_overhead": virtuoso.wrs_vs_paths,
    "virtuoso_chunk": virtuoso.chunk_vs_paths, "virtuoso_mice": virtuoso.mice_fct,
}

__all__ = ["KINDS", "FIGURES", "NoData", "plot_sweep", "default_by", "slowdown_vs_size", "fct_cdf",
           "queue_over_time", "qp_rate_over_time", "pfc_pause_time", "tenant_shares"]


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
