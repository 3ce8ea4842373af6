"""Figures in the field's usual style."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rdmalab.results import Results, percentile  # noqa: E402


def slowdown_by_size(results: dict[str, Results] | Results, out: str | Path, title: str = "") -> list[Path]:
    """FCT slowdown vs flow size (HPCC paper style): flows sorted by size in 5 %-of-flows
    buckets; p50, p95 and p99 of each bucket against the bucket's largest size.
    Writes PNG and PDF; returns their paths."""
    if isinstance(results, Results):
        results = {"rdmalab": results}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharex=True)
    for label, res in results.items():
        df = res.flows.sort("size")
        sizes, slow = df["size"].to_numpy(), df["slowdown"].to_numpy()
        if len(sizes) == 0:
            continue
        edges = np.linspace(0, len(sizes), 21).astype(int)
        xs = [sizes[hi - 1] for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
        for ax, p in zip(axes, (0.5, 0.95, 0.99)):
            ys = [percentile(slow[lo:hi], p) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]
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


def _save(fig, out: str | Path) -> list[Path]:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths
