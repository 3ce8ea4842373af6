"""DCQCN (Zhu et al., SIGCOMM 2015): N flows converging on one 40 Gb/s bottleneck, beside the
fair share of theory (the paper reports convergence, not numbers to compare).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from rdmalab.experiments.figures.base import default_by, draw_panels, first_run_tables
from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store

BOTTLENECK_GBPS = 40.0
#: Header bytes of a data packet without INT (`SimConfig::header_bytes`; DCQCN carries no INT).
DATA_HEADER_BYTES = 48


def payload_fraction(scenario: dict) -> float:
    """The share of a link's bits that are payload when it carries full data packets."""
    mtu = scenario.get("fabric", {}).get("mtu", 1000)
    return mtu / (mtu + DATA_HEADER_BYTES)


def convergence_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Each flow's throughput over time, one panel per N, with the fair share of theory
    (40 x 1000/1048 / N Gb/s of payload) dashed."""
    store = Store(sweep_dir)
    groups = first_run_tables(store, "rates", default_by(store), None)
    scenario = json.loads(store.runs()["scenario"][0]) if store.runs().height else {}

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        flows = sorted(set(df["flow"].to_list()))
        for f in flows:
            d = df.filter(pl.col("flow") == f).sort("time_ps")
            ax.step(d["time_ps"].to_numpy() / 1e6, d["throughput_gbps"].to_numpy(), where="pre", lw=1,
                    label=f"flow {f}")
        fair = BOTTLENECK_GBPS * payload_fraction(scenario) / len(flows)
        ax.axhline(fair, color="k", ls="--", lw=1, label=f"fair share {fair:.1f} Gb/s (theory)")
        ax.set_ylabel("throughput (Gb/s)")
        ax.set_ylim(bottom=0)

    return draw_panels(store, groups, draw, Path(out_dir) / "convergence_vs_fair_share",
                   "DCQCN flows on one 40 Gb/s bottleneck against the fair share")


def converged_throughputs(rates: pl.DataFrame) -> np.ndarray:
    """Each flow's mean throughput (Gb/s) over the second half of the window in which every
    flow of the run is active: where a converged algorithm should hold the fair share.

    A flow's last sample covers the interval in which it completed (it was not sending for
    all of it), so it is left out. Empty when the flows never overlap.
    """
    flows = [d.sort("time_ps").head(d.height - 1) for d in rates.partition_by("flow")]
    flows = [d for d in flows if d.height]
    if not flows:
        return np.array([])
    start = max(d["time_ps"].min() for d in flows)
    end = min(d["time_ps"].max() for d in flows)
    if end <= start:
        return np.array([])
    mid = start + (end - start) // 2
    t = pl.col("time_ps")
    return np.array([d.filter((t > mid) & (t <= end))["throughput_gbps"].mean() for d in flows])


def jain(x: np.ndarray) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if len(x) and x.any() else float("nan")


def compare_convergence(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per N, from the per-QP rate samples: the lowest and highest flow throughput once all
    N flows run (`converged_throughputs`) against the fair share of the bottleneck's payload
    capacity, and Jain's fairness index of the N throughputs against 1."""
    rates = store.table("rates", params=False)
    if "flow" not in rates.columns:
        return []
    out = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        x = converged_throughputs(rates.filter(pl.col("run_id") == r["run_id"]))
        if len(x) == 0:
            continue
        n = len(x)
        fair = BOTTLENECK_GBPS * payload_fraction(json.loads(r["scenario"])) / n
        out.append(Comparison(f"N={n}", "slowest flow Gb/s", float(x.min()), fair))
        out.append(Comparison(f"N={n}", "fastest flow Gb/s", float(x.max()), fair))
        out.append(Comparison(f"N={n}", "Jain fairness", jain(x), 1.0))
    return sorted(out, key=lambda c: (int(c.group[2:]), c.metric))


EXPERIMENTS = [
    Experiment(
        name="dcqcn-convergence",
        title="DCQCN: N flows converging on one 40 Gb/s bottleneck",
        citation="Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM 2015",
        sweep="dcqcn_convergence.toml", quick="dcqcn_convergence_quick.toml",
        figures=["rate", "queue", "cdf"], by="traffic[0].senders", compare=compare_convergence,
        theirs="fair-share theory, not the paper's measurements: the paper reports DCQCN converging "
               "to a fair share, i.e. 40/N Gb/s of wire rate each, here in payload (40 x 1000/1048 / N "
               "Gb/s), and a Jain index of 1. Ours: each flow's mean throughput over the second half "
               "of the window in which all N flows send, from the per-QP rate samples",
        needs_cc=["dcqcn"], extra_figures=convergence_figure,
    ),
]
