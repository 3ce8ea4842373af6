#!/usr/bin/env python3
"""Issue 45 §2: the full rows of `lb-host-vs-switch`, Virtuoso's against ECMP's, through
`rdmalab run` (what users type), interleaved row by row.

The sweep (`python/rdmalab/experiments/repro/lb_host_vs_switch.toml`) has 12 Virtuoso rows
(`fabric.path_selection = "source_ip"`: a QP per source address and destination) and, in the
same cells (load 0.25 / 0.35; symmetric, a 25 Gb/s link, a failed link; lossless go-back-N /
IRN), 12 ECMP rows with one QP per flow. Each pair is written out as two scenario files and
run one after the other with `rdmalab run FILE --threads 1 --quiet`; the script prints, per
cell, the CPU seconds of each process (user + system, Python's start and the output files
included), the engine's run time and events from the summary, and Virtuoso's CPU time over
ECMP's.

    .venv/bin/python bench/host_vs_switch_rows.py                 # all 12 cells
    .venv/bin/python bench/host_vs_switch_rows.py --cells 0 1     # a selection
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rdmalab.experiments.sweep import Sweep
from rdmalab.toml_writer import dumps

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "python/rdmalab/experiments/repro/lb_host_vs_switch.toml"
EVENTS = re.compile(r"events\s+([\d,]+)")


def absolute_paths(node, base: Path):
    """The scenario with every `cdf` file named by its absolute path (the files are written
    elsewhere than the sweep's folder)."""
    if isinstance(node, dict):
        return {k: (str(base / v) if k == "cdf" and isinstance(v, str) else absolute_paths(v, base))
                for k, v in node.items()}
    if isinstance(node, list):
        return [absolute_paths(v, base) for v in node]
    return node


def cells() -> list[tuple[str, dict, dict]]:
    """(label, ECMP scenario, Virtuoso scenario) per cell, in the sweep's order."""
    runs = Sweep.from_file(SWEEP).expand()
    ecmp = [r for r in runs if r.params["fabric.path_selection"] == "ecmp"
            and r.scenario["traffic"][0]["kind"] == "poisson"]
    virtuoso = [r for r in runs if r.params["fabric.path_selection"] == "source_ip"]
    assert len(ecmp) == len(virtuoso) == 12, (len(ecmp), len(virtuoso))
    out = []
    for e, v in zip(ecmp, virtuoso):
        load = e.scenario["traffic"][0]["load"]
        assert v.scenario["traffic"][0]["workload"]["load"] == load
        case = "failed link" if e.scenario.get("events") else "25G link" if e.scenario.get("links") else "symmetric"
        loss = "lossless" if e.scenario["fabric"].get("lossless", True) else "IRN"
        base = Path(e.base_dir)
        out.append((f"{load} {case} {loss}", absolute_paths(e.scenario, base), absolute_paths(v.scenario, base)))
    return out


def run(scenario: dict, folder: Path, name: str) -> dict:
    """One `rdmalab run` of `scenario`: CPU seconds, wall seconds, events, engine seconds."""
    path = folder / f"{name}.toml"
    path.write_text(dumps(scenario))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "rdmalab"), "run", str(path), "--threads", "1", "--quiet",
                           "--force", "--out", str(folder / name)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: rdmalab run failed:\n{proc.stderr}")
    text = proc.stdout + proc.stderr
    events = int(EVENTS.search(text).group(1).replace(",", "")) if EVENTS.search(text) else -1
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall, "events": events, "peak_mb": after.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="*", help="cell indices (0-11; default all)")
    args = ap.parse_args()
    table = cells()
    chosen = args.cells if args.cells else range(len(table))
    print("| cell | ECMP CPU s | ECMP events | Virtuoso CPU s | Virtuoso events | CPU ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in chosen:
            label, ecmp, virtuoso = table[i]
            e = run(ecmp, Path(tmp), f"ecmp{i}")
            v = run(virtuoso, Path(tmp), f"virtuoso{i}")
            ratios.append(v["cpu_s"] / e["cpu_s"])
            print(f"| {i}: {label} | {e['cpu_s']:.1f} | {e['events']:,} | {v['cpu_s']:.1f} | {v['events']:,} "
                  f"| {ratios[-1]:.2f} |", flush=True)
            print("JSON " + json.dumps({"cell": i, "label": label, "ecmp": e, "virtuoso": v}), file=sys.stderr)
    print(f"\nratio of CPU seconds, Virtuoso over ECMP: {min(ratios):.2f} to {max(ratios):.2f}")


if __name__ == "__main__":
    main()
