#!/usr/bin/env python3
"""The NSCC + RCCC rows of `uec-vs-roce` at full size on the incasts and two permutations,
without the rest of the sweep: each run in this process, on one thread, and the table of
docs/uec-vs-roce.md ("NSCC with receiver credit at full size") printed in markdown.

    python3 bench/uec_rccc_full.py [--workloads incast-16,incast-128,incast-1024,perm-1to1,perm-8to1]

The scenarios are the sweep's own (`uec_vs_roce_sweep.runs(quick=False)`, seed 1), so a row
here is the row `rdmalab repro run uec-vs-roce` prints for the same run.
"""

from __future__ import annotations

import argparse
import time

import rdmalab
from rdmalab import Scenario
from rdmalab.experiments.repro import uec_vs_roce_sweep as sweep

DEFAULT = "incast-16,incast-128,incast-1024,perm-1to1,perm-8to1"


def row(v: sweep.Variant, w: sweep.Workload) -> str:
    tables = {k: x for k, x in sweep.scenario_tables(v, w).items() if x}
    tables["seed"] = 1
    t0 = time.time()
    res = rdmalab.run(Scenario(tables), progress=False, threads=1)
    c = res.counters
    fct = sorted(res.completed["fct_ns"].to_list())
    n = len(fct)
    pct = lambda q: fct[min(int(n * q), n - 1)] / 1000 if n else float("nan")  # noqa: E731
    done = c["flows_completed"] == c["flows_total"]
    span = c["last_completion_ps"] / 1e6 if done else float("nan")
    ratio = ""
    if w.incast is not None and done:
        ratio = f"{span / w.incast_bound_us():.3f}"
    return (f"| {w.name} | {v.name} | {c['flows_completed']}/{c['flows_total']} | {pct(0.5):,.1f} | "
            f"{pct(0.99):,.1f} | {span:,.1f} | {ratio} | {c['drops']:,} | {c.get('trims', 0):,} | "
            f"{c['retx_packets']:,} | {c['nacks']:,} | {c['timeouts']:,} | {res.stop_reason} | "
            f"{time.time() - t0:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=DEFAULT, help=f"comma-separated (default {DEFAULT})")
    names = ap.parse_args().workloads.split(",")
    print("| workload | variant | flows done | p50 FCT us | p99 FCT us | span us | span / incast bound | drops | "
          "trims | retx | NACKs | timeouts | end | wall s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for v, w in sweep.runs(False):
        if not v.collectives and w.name in names:
            print(row(v, w), flush=True)


if __name__ == "__main__":
    main()
