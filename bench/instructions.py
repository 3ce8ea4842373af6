#!/usr/bin/env python3
"""Instructions per event of the engine alone, counted by valgrind (cachegrind, no cache
simulation): a figure that other jobs on the machine do not move, unlike seconds.

    cargo build --profile test-release -p rdmalab --example hpcc_run --example scenario_run
    python3 bench/instructions.py [--profile test-release] S1-dcqcn fat-tree-128-pfc
    python3 bench/instructions.py --record S1-dcqcn fat-tree-128-pfc fat-tree-1k-perm

Runs each named run once under `valgrind --tool=cachegrind --cache-sim=no` (some 50 times
slower than natively) with the pure-Rust runner (`hpcc_run` for the reference's configs,
`scenario_run` for the bench scenarios) and prints the instructions (set-up included), the
events, and their ratio; then once natively, for the CPU nanoseconds per event beside it (which
the machine's load does move). `--record` writes the rows into the "Instructions per event" section
of `bench/recorded/performance.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from run import SCENARIOS, prepare  # noqa: E402

#: Bench scenarios (bench/scenarios/) run with `scenario_run`.
NATIVE = {"fat-tree-128-pfc": "fat_tree_128_pfc.toml", "fat-tree-1k-perm": "fat_tree_1k_permutation.toml",
          "fat-tree-pfc-quick": "fat_tree_pfc_quick.toml", "fat-tree-1k-pfc": "fat_tree_1k_pfc.toml"}
SECTION = "Instructions per event"


def native_cpu(cmd: list[str], cwd: str) -> float:
    """CPU seconds (user + system) of one native run of `cmd`."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def count(name: str, examples: Path) -> tuple[int, int, float]:
    """(instructions, events, native CPU seconds) of one run of `name`: under cachegrind, then
    natively."""
    with tempfile.TemporaryDirectory() as tmp:
        if name in NATIVE:
            cmd = [str(examples / "scenario_run"), str(REPO / "bench" / "scenarios" / NATIVE[name])]
        else:
            config, mode = SCENARIOS[name]
            cmd = [str(examples / "hpcc_run"), prepare(Path(tmp), config, mode).name]
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                              f"--cachegrind-out-file={tmp}/cg.out", *cmd],
                             cwd=tmp, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"{name}: {out.stderr[-2000:]}")
        text = out.stdout + out.stderr
        instructions = int(re.search(r"I\s+refs:\s+([\d,]+)", text).group(1).replace(",", ""))
        events = int(re.search(r"^events (\d+)", text, re.M).group(1))
        return instructions, events, native_cpu(cmd, tmp)


def record(rows: dict[str, tuple[int, int, float]], machine: str, profile: str) -> None:
    path = REPO / "bench" / "recorded" / "performance.json"
    data = json.loads(path.read_text())
    section = next((s for s in data["sections"] if s["title"] == SECTION), None)
    if section is None:
        raise SystemExit(f"{path}: no section {SECTION!r}")
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"
    keep = [r for r in section["rows"] if r["cells"][0] not in rows]
    for name, (instructions, events, cpu) in rows.items():
        keep.append({"cells": [name, profile, f"{events:,}", f"{instructions / 1e9:.2f} G",
                               f"{instructions / events:.0f}", f"{cpu * 1e9 / events:.0f}"],
                     "commit": head, "date": dt.date.today().isoformat(), "machine": machine})
    section["rows"] = keep
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="*", default=["S1-dcqcn", "fat-tree-128-pfc"])
    ap.add_argument("--profile", default="test-release")
    ap.add_argument("--record", action="store_true", help="write the rows into bench/recorded/performance.json")
    ap.add_argument("--machine", default="build-2c-shared")
    args = ap.parse_args()
    examples = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / args.profile / "examples"
    rows = {}
    print("| run | events | instructions | per event | CPU ns per event |")
    print("|---|---|---|---|---|")
    for name in args.runs:
        rows[name] = count(name, examples)
        i, e, cpu = rows[name]
        print(f"| {name} | {e:,} | {i / 1e9:.2f} G | {i / e:.0f} | {cpu * 1e9 / e:.0f} |", flush=True)
    if args.record:
        record(rows, args.machine, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
