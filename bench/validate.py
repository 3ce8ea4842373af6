#!/usr/bin/env python3
"""Fidelity report: runs the reference's S1 and S2 configs (DCQCN and HPCC) with rdmalab and
compares FCT slowdowns with the reference's FCT files. Writes docs/validation.md's tables.

    .venv/bin/python bench/validate.py                  # all four runs, tables to stdout
    .venv/bin/python bench/validate.py --out report.md  # and to a file
    .venv/bin/python bench/validate.py S2:dcqcn
    .venv/bin/python bench/validate.py --threads 1      # the parallel engine's event order
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rdmalab.validation import FctFile, compare, markdown_table, per_flow_agreement, run_reference_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The ns-3 HPCC simulator's S1/S2 files (`run.reference_dir`: $RDMALAB_REFERENCE/hpcc, as in
# the Rust tests, else shared/reference/hpcc beside the checkout).
from run import REFERENCE  # noqa: E402

RUNS = ["S1:dcqcn", "S1:hpcc", "S2:dcqcn", "S2:hpcc"]


def report(run: str, threads: int | None = None) -> str:
    scenario, cc = run.split(":")
    ours = FctFile.read(run_reference_config(REFERENCE, f"{scenario}_{cc}_config.txt", threads=threads))
    ref = FctFile.read(REFERENCE / f"{scenario}_{cc}_fct.txt")
    noise = [FctFile.read(p) for p in sorted((REFERENCE / "noise").glob(f"{scenario}_{cc}_rng*_fct.txt"))]
    rows = compare(ours, ref, noise)
    med, matched = per_flow_agreement(ours, ref)
    misses = sum(r["verdict"] == "MISS" for r in rows)
    order = "" if threads is None else f" (--threads {threads}: the parallel engine's event order)"
    head = (f"### {scenario} {cc.upper()}{order}\n\n{len(ours.keys)} flows completed (reference {len(ref.keys)}); "
            f"per-flow agreement: median |ours/ref − 1| = {100 * med:.2f} % over {matched} matched flows; "
            f"reference spread from {len(noise)} other random-number runs; "
            f"{misses} cell(s) outside tolerance.\n")
    return head + "\n" + markdown_table(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", default=RUNS, help="scenario:cc pairs (default: all four)")
    ap.add_argument("--out", help="also write the tables to this file")
    ap.add_argument("--threads", type=int, help="run with the parallel engine's event order (SimConfig::threads)")
    args = ap.parse_args()
    text = "\n".join(report(r, args.threads) for r in args.runs)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
