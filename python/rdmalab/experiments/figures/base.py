"""What every sweep figure shares: picking a sweep's runs and grouping them along one
dimension, titles, output paths, panels of time series. A leaf: it imports the store and
`rdmalab.plots`, never a figure kind or a paper's module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import polars as pl

from rdmalab.experiments.store import Store, param_value
from rdmalab.experiments.sweep import short_value
from rdmalab.plots import plt, save_figure


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


def select_runs(store: Store, by: str, where: dict[str, Any] | None) -> pl.DataFrame:
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
    labels = [f"{short}={_legend_value(v)}" for v in runs[by].cast(pl.Utf8).to_list()]
    runs = runs.with_columns(pl.Series("group", labels, dtype=pl.Utf8))
    return runs.sort(pl.col("run_id").replace_strict(_sweep_order(store), default=len(store.run_ids())))


def _legend_value(text: str) -> str:
    """A parameter's value as a legend shows it: a list of traffic entries by its kinds
    (`split-parallel`, as run labels name it), not its JSON; anything else as it is."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return text
    return short_value(value) if isinstance(value, list) else text


def _sweep_order(store: Store) -> dict[str, int]:
    """run id -> position in the sweep file's expansion (so groups keep the file's order)."""
    return {r["run_id"]: i for i, r in enumerate(store.manifest().get("runs", []))}


def group_tables(store: Store, table: str, by: str, where: dict[str, Any] | None,
                 columns: tuple[str, ...] | None = None) -> dict[str, pl.DataFrame]:
    """`table` rows of the selected runs (only `columns` of it, if given), split by the value of
    `by` (in sorted order)."""
    runs = select_runs(store, by, where)
    df = store.table(table, params=False, columns=columns)
    if df.height == 0 or "run_id" not in df.columns or df.width <= 1:
        raise NoData(f"the sweep has no `{table}` data")
    keys = runs.select("run_id", "group", by)
    if df.schema["run_id"] == pl.Categorical:  # read by columns: the joined labels as categories too
        keys = keys.with_columns(pl.col(c).cast(pl.Categorical) for c in keys.columns if keys.schema[c] == pl.Utf8)
    df = df.join(keys, on="run_id", how="inner")
    order = list(dict.fromkeys(runs["group"].to_list()))
    parts = {p["group"][0]: p for p in df.partition_by("group", maintain_order=True)}
    return {g: parts[g] for g in order if g in parts}


def first_run_tables(store: Store, table: str, by: str, where: dict[str, Any] | None) -> dict[str, pl.DataFrame]:
    """Like `group_tables`, but one run per group (the first seed): time series do not pool."""
    out = {}
    for g, df in group_tables(store, table, by, where).items():
        first = df["run_id"][0]
        out[g] = df.filter(pl.col("run_id") == first)
    return out


def out_path(store: Store, out: str | Path | None, kind: str) -> Path:
    """`out`, else the sweep's `figures/KIND`."""
    return Path(out) if out else store.root / "figures" / kind


def figure_title(store: Store, title: str | None, what: str) -> str:
    """`title: what`, the title defaulting to the sweep's name."""
    return f"{title or store.manifest().get('name', store.root.name)}: {what}"


# -- drawing -------------------------------------------------------------------------------
def draw_panels(store: Store, groups: dict[str, pl.DataFrame], draw: Callable, out: Path, title: str) -> list[Path]:
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
    return save_figure(fig, out)
