"""HPCC (Li et al., SIGCOMM 2019): FCT slowdown of DCQCN and HPCC on a fat tree under FB
Hadoop at 30 % load, beside the reference ns-3 simulator's S1 runs (not the paper's figure).
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl

from rdmalab.experiments.figures.base import default_by, group_tables
from rdmalab.experiments.repro.base import HERE, Comparison, Experiment
from rdmalab.experiments.store import Store
from rdmalab.plots import slowdown_by_size_frames
from rdmalab.results import SIZE_BUCKETS, percentile

_REF_BUCKETS = {"all": "all", "<100KB": "lt100KB", "100KB-1MB": "100KB-1MB", ">=1MB": "ge1MB"}


def hpcc_reference() -> dict[tuple[str, str], dict[str, float]]:
    """(cc, bucket) -> p50/p95/p99 of the reference simulator's S1 runs."""
    path = HERE / "data" / "hpcc_reference_s1.csv"
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {(r["cc"], r["bucket"]): {p: float(r[p]) for p in ("p50", "p95", "p99")} for r in rows}


def compare_hpcc(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None = None) -> list[Comparison]:
    """Our p50/p95/p99 slowdown per CC and size bucket beside the reference's."""
    ref = hpcc_reference()
    out = []
    for cc in ("dcqcn", "hpcc"):
        f = flows.filter(pl.col("fabric.cc") == cc) if "fabric.cc" in flows.columns else flows.clear()
        sizes, slow = f["size"].to_numpy(), f["slowdown"].to_numpy()
        for name, lo, hi in SIZE_BUCKETS:
            sel = slow[(sizes >= lo) & (sizes < hi)]
            theirs = ref[(cc, _REF_BUCKETS[name])]
            for p in ("p50", "p95", "p99"):
                ours = percentile(sel, float(p[1:]) / 100)
                out.append(Comparison(f"{cc} {name}", f"{p} slowdown", ours, theirs[p]))
    return out


def hpcc_reference_flows() -> pl.DataFrame:
    """Every S1 flow of the reference simulator's runs: cc, size, slowdown (from its FCT
    files of S1 under DCQCN and HPCC, described in docs/validation.md; normal flows only)."""
    return pl.read_parquet(HERE / "data" / "hpcc_reference_s1_flows.parquet")


def hpcc_reference_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """The slowdown figure with the reference simulator's S1 curves dashed beside ours. Our
    flows are the reference's flow for flow only in the full sweep (S1's flow file); a quick
    run is drawn alone, titled so."""
    store = Store(sweep_dir)
    ours = group_tables(store, "flows", "fabric.cc", None) if default_by(store) else {}
    full = store.manifest().get("name") == "hpcc-fb-hadoop"
    ref = hpcc_reference_flows()
    reference = {f"ns-3 {cc}": ref.filter(pl.col("cc") == cc) for cc in ours} if full else None
    title = ("S1 (320-host fat tree, FB Hadoop 30 %): rdmalab solid, ns-3 reference dashed" if full
             else "quick variant (k=4 fat tree): no reference curve at this scale")
    return slowdown_by_size_frames({f"rdmalab {k}": v for k, v in ours.items()},
                                   Path(out_dir) / "slowdown_vs_reference", title, reference=reference)


EXPERIMENTS = [
    Experiment(
        name="hpcc-fb-hadoop",
        title="HPCC vs DCQCN: FCT slowdown by flow size, fat tree, FB Hadoop, 30% load",
        citation="Li et al., HPCC: High Precision Congestion Control, SIGCOMM 2019 (the FB Hadoop "
                 "30%-load FCT-slowdown comparison)",
        sweep="hpcc_fb_hadoop.toml", quick="hpcc_fb_hadoop_quick.toml",
        figures=["slowdown", "cdf", "pfc"], by="fabric.cc", compare=compare_hpcc,
        theirs="the reference ns-3 HPCC simulator on the same topology and flows (its S1 runs, "
               "data/hpcc_reference_s1.csv), not numbers read off the paper's figure",
        needs_cc=["dcqcn", "hpcc"], extra_figures=hpcc_reference_figure,
    ),
]
