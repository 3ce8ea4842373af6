"""Figures in the field's usual style."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from rdmalab.results import Results, describe, percentile  # noqa: E402,F401 (describe: re-exported)


def slowdown_by_size(results: dict[str, Results] | Results, out: str | Path, title: str = "") -> list[Path]:
    """FCT slowdown vs flow size (HPCC paper style): flows sorted by size in 5 %-of-flows
    buckets; p50, p95 and p99 of each bucket against the bucket's largest size.
    Writes PNG and PDF; returns their paths. A lone `Results` is labelled by its flow count."""
    if isinstance(results, Results):
        results = {f"{results.counters['flows_completed']:,} flows": results}
    return slowdown_by_size_frames({label: res.completed for label, res in results.items()}, out, title)


def slowdown_by_size_frames(frames: dict[str, pl.DataFrame], out: str | Path, title: str = "") -> list[Path]:
    """`slowdown_by_size` for flow tables (any DataFrame with `size` and `slowdown`), one
    line per label. Writes PNG and PDF; returns their paths."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharex=True)
    for label, flows in frames.items():
        xs, cols = slowdown_buckets(flows)
        for ax, ys in zip(axes, cols):
            ax.plot(xs, ys, marker="o", ms=3, label=label)
    for ax, p in zip(axes, ("p50", "p95", "p99")):
        ax.set_xscale("log")
        ax.set_xlabel("flow size (bytes)")
        ax.set_ylabel(f"{p} FCT slowdown")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out)


def slowdown_buckets(flows: pl.DataFrame, buckets: int = 20) -> tuple[list[float], list[list[float]]]:
    """Flows sorted by size in `buckets` equal-count buckets (5 % of flows each by default):
    the largest size of each bucket, and the p50, p95 and p99 slowdown of each bucket."""
    if "status" in flows.columns:
        flows = flows.filter(pl.col("status") == "completed")
    df = flows.sort("size")
    sizes, slow = df["size"].to_numpy(), df["slowdown"].to_numpy()
    edges = np.linspace(0, len(sizes), buckets + 1).astype(int)
    spans = [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
    xs = [float(sizes[hi - 1]) for _, hi in spans]
    return xs, [[percentile(slow[lo:hi], p) for lo, hi in spans] for p in (0.5, 0.95, 0.99)]


def _save(fig, out: str | Path) -> list[Path]:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths
