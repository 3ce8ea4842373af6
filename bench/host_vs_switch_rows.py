#!/usr/bin/env python3
"""The full rows of `lb-host-vs-switch`, Virtuoso's against ECMP's, through
`rdmalab run` (what users type), interleaved row by row.

The sweep (`python/rdmalab/experiments/repro/lb_host_vs_switch.toml`) has 12 Virtuoso rows
(`fabric.path_selection = "source_ip"`: a QP per source address and destination) and, in the
same cells (load 0.25 / 0.35; symmetric, a 25 Gb/s link, a failed link; lossless go-back-N /
IRN), 12 ECMP rows with one QP per flow. Each pair is written out as two scenario files and
run one after the other with `rdmalab run FILE --threads 1 --quiet`, round after round (so
that a machine's drift reaches both alike). Printed per cell: the median CPU seconds of each
process (user + system, Python's start and the output files included), the events and the
packet-hops from the summary, the peak RSS, Virtuoso's median over ECMP's, and that ratio round
by round. The ratio is split in two: Virtuoso's packet-hops over ECMP's (the traffic each row
simulates: Virtuoso's probes and retransmissions are hops too) and its CPU seconds a hop over
ECMP's (what a hop costs the engine). A row of this memory-bound kind moves by tens of percent
from one run to the next on a shared machine.

    .venv/bin/python bench/host_vs_switch_rows.py                 # all 12 cells
    .venv/bin/python bench/host_vs_switch_rows.py --cells 0 2 --rounds 3   # a selection, 3 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
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
HOPS = re.compile(r"packet hops\s+([\d,]+)")


def count(pattern: re.Pattern, text: str) -> int:
    """A count from the summary's line, or -1 where the summary has none."""
    found = pattern.search(text)
    return int(found.group(1).replace(",", "")) if found else -1


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
    """One `rdmalab run` of `scenario`: its CPU seconds, wall seconds, events and peak RSS."""
    path = folder / f"{name}.toml"
    path.write_text(dumps(scenario))
    cmd = [str(Path(sys.executable).parent / "rdmalab"), "run", str(path), "--threads", "1", "--quiet",
           "--force", "--out", str(folder / name)]
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own resource use
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode != 0:
        raise SystemExit(f"{name}: rdmalab run failed:\n{text}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall, "events": count(EVENTS, text),
            "hops": count(HOPS, text), "peak_mb": usage.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="*", help="cell indices (0-11; default all)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds over the cells (medians are printed)")
    args = ap.parse_args()
    table = cells()
    chosen = args.cells if args.cells else list(range(len(table)))
    runs: dict[int, dict[str, list[dict]]] = {i: {"ecmp": [], "virtuoso": []} for i in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for i in chosen:
                label, ecmp, virtuoso = table[i]
                for name, scenario in (("ecmp", ecmp), ("virtuoso", virtuoso)):
                    runs[i][name].append(run(scenario, Path(tmp), f"{name}{i}"))
                e, v = runs[i]["ecmp"][-1], runs[i]["virtuoso"][-1]
                print("JSON " + json.dumps({"round": r, "cell": i, "label": label, "ecmp": e, "virtuoso": v}),
                      file=sys.stderr, flush=True)
    # "hops ×": Virtuoso's packet-hops over ECMP's (the traffic simulated); "per hop ×": its CPU
    # seconds a hop over ECMP's (what a hop costs the engine). Their product is the ratio.
    print("| cell | ECMP CPU s | ECMP events | ECMP hops | ECMP MB | Virtuoso CPU s | Virtuoso events "
          "| Virtuoso hops | Virtuoso MB | hops × | per hop × | ratio of medians | per round |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i in chosen:
        e, v = runs[i]["ecmp"], runs[i]["virtuoso"]
        ce, cv = statistics.median(x["cpu_s"] for x in e), statistics.median(x["cpu_s"] for x in v)
        rounds = ", ".join(f"{b['cpu_s'] / a['cpu_s']:.2f}" for a, b in zip(e, v))
        hops = v[0]["hops"] / e[0]["hops"]
        print(f"| {i}: {table[i][0]} | {ce:.1f} | {e[0]['events']:,} | {e[0]['hops']:,} | {e[0]['peak_mb']:.0f} "
              f"| {cv:.1f} | {v[0]['events']:,} | {v[0]['hops']:,} | {v[0]['peak_mb']:.0f} | {hops:.2f} "
              f"| {cv / ce / hops:.2f} | {cv / ce:.2f} | {rounds} |", flush=True)


if __name__ == "__main__":
    main()
