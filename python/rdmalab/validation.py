"""Fidelity against the ns-3 HPCC simulator: slowdown percentiles per size bucket, per-flow
agreement, and the reference's own run-to-run spread as the floor of what can match.

Used by `bench/validate.py`, which writes `docs/validation.md`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import rdmalab
from rdmalab.results import SIZE_BUCKETS, percentile

#: Percentiles compared, their base tolerance and the flows a bucket needs for each.
PERCENTILES = [("p50", 0.50, 0.05, 20), ("p95", 0.95, 0.05, 100), ("p99", 0.99, 0.10, 300)]
#: Inputs every reference scenario needs.
INPUTS = ["fat.txt", "topology.txt", "trace.txt", "S1_flow.txt", "S2_flow.txt"]


@dataclass
class FctFile:
    """One FCT file as arrays, with flows keyed by (sip, dip, sport)."""

    keys: list[tuple[str, str, str]]
    size: np.ndarray
    fct: np.ndarray
    ideal: np.ndarray

    @classmethod
    def read(cls, path: str | Path) -> "FctFile":
        rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
        rows = [r for r in rows if r[3] == "100"]  # normal flows, as the reference's analysis
        return cls(keys=[(r[0], r[1], r[2]) for r in rows],
                   size=np.array([int(r[4]) for r in rows]),
                   fct=np.array([int(r[6]) for r in rows], dtype=float),
                   ideal=np.array([int(r[7]) for r in rows], dtype=float))

    def slowdown(self) -> np.ndarray:
        return np.maximum(self.fct / self.ideal, 1.0)

    def bucket_percentiles(self) -> dict[tuple[str, str], tuple[float, int]]:
        """{(bucket, pXX): (value, flows in bucket)}."""
        out = {}
        slow = self.slowdown()
        for name, lo, hi in SIZE_BUCKETS:
            sel = slow[(self.size >= lo) & (self.size < hi)]
            for pname, p, _, _ in PERCENTILES:
                out[(name, pname)] = (percentile(sel, p), len(sel))
        return out


def per_flow_agreement(ours: FctFile, ref: FctFile) -> tuple[float, int]:
    """Median |our FCT / ref FCT - 1| over flows present in both, and how many matched."""
    index = {k: i for i, k in enumerate(ours.keys)}
    ratios = [abs(ours.fct[index[k]] / ref.fct[j] - 1) for j, k in enumerate(ref.keys) if k in index]
    return (float(np.median(ratios)) if ratios else float("nan")), len(ratios)


def run_reference_config(reference_dir: Path, config: str, cc_mode: int | None = None,
                         threads: int | None = None) -> Path:
    """Runs one reference config with rdmalab in a scratch copy; returns our FCT file."""
    work = Path(tempfile.mkdtemp(prefix="rdmalab-validate-"))
    for name in INPUTS:
        shutil.copy(reference_dir / name, work / name)
    text = (reference_dir / config).read_text()
    if cc_mode is not None:
        text = "\n".join(f"CC_MODE {cc_mode}" if l.startswith("CC_MODE ") else l for l in text.splitlines())
    (work / config).write_text(text)
    cwd = os.getcwd()
    try:
        os.chdir(work)
        _, fct, _ = rdmalab.run_hpcc(config, progress=False, threads=threads)
    finally:
        os.chdir(cwd)
    return work / fct


def compare(ours: FctFile, ref: FctFile, noise: list[FctFile]) -> list[dict]:
    """One row per (bucket, percentile): ours, reference, relative difference, the
    reference's spread across random-number runs, the tolerance and the verdict."""
    mine, theirs = ours.bucket_percentiles(), ref.bucket_percentiles()
    spreads = [n.bucket_percentiles() for n in noise]
    rows = []
    for name, _, _ in SIZE_BUCKETS:
        for pname, _, base_tol, min_flows in PERCENTILES:
            key = (name, pname)
            (o, n_ours), (r, n_ref) = mine[key], theirs[key]
            spread = max((abs(s[key][0] / r - 1) for s in spreads), default=0.0)
            tol = base_tol + 1.5 * spread
            rel = o / r - 1
            judged = n_ref >= min_flows
            rows.append({"bucket": name, "pct": pname, "flows": n_ref, "ours": o, "ref": r, "rel": rel,
                         "spread": spread, "tol": tol,
                         "verdict": ("ok" if abs(rel) <= tol else "MISS") if judged else "n/a"})
    return rows


def markdown_table(rows: list[dict]) -> str:
    lines = ["| bucket | pct | flows | ours | reference | diff | ref spread | tolerance | verdict |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['bucket']} | {r['pct']} | {r['flows']} | {r['ours']:.3f} | {r['ref']:.3f} | "
                     f"{100 * r['rel']:+.1f} % | {100 * r['spread']:.1f} % | {100 * r['tol']:.1f} % | {r['verdict']} |")
    return "\n".join(lines)
