#!/usr/bin/env python3
"""Where the CPU time of a command-line run goes: the interpreter's start, the imports, the
set-up (parsing the inputs, building the fabric), the engine, the tables, the files and the
figures, each phase timed in one process as the command runs it.

    .venv/bin/python bench/phases.py S1-dcqcn                 # `rdmalab hpcc` on the reference's S1
    .venv/bin/python bench/phases.py fat-tree-128-pfc         # `rdmalab run` on a bench scenario
    .venv/bin/python bench/phases.py --rounds 3 --record S1-dcqcn fat-tree-128-pfc
    .venv/bin/python bench/phases.py --threads 1 fat-tree-1M   # the million-host tree (10 GB)

Both run on one thread (the sequential engine; `--threads 1`: the origin order, as
`rdmalab run --threads 1` runs). Each row also prints the child's peak memory and events. Each phase is the process's CPU seconds (user + system, all threads) across it; `--rounds N`
takes the median of N processes per phase. The interpreter's start is `python -c pass`'s own
CPU time, measured the same way. `--record` writes the rows into the "Where a run's time goes"
section of `bench/recorded/performance.json` (with the commit, today's date and `--machine`);
`bench/perf_page.py` then regenerates the page.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from run import SCENARIOS, prepare  # noqa: E402

#: Bench scenarios run through `rdmalab run`'s path (files under bench/scenarios/).
NATIVE = {"fat-tree-128-pfc": "fat_tree_128_pfc.toml", "fat-tree-1k-perm": "fat_tree_1k_permutation.toml",
          "fat-tree-1k-ws": "fat_tree_1k_websearch.toml", "fat-tree-pfc-quick": "fat_tree_pfc_quick.toml",
          "fat-tree-1k-pfc": "fat_tree_1k_pfc.toml", "fat-tree-100k": "fat_tree_100k.toml",
          "fat-tree-250k": "fat_tree_250k.toml", "fat-tree-1M": "fat_tree_1M.toml"}
PHASES = ("start", "imports", "setup", "engine", "tables", "files", "figures")

#: One run in a child process: prints a JSON dict of CPU seconds per phase (and the events).
CHILD = r'''
import json, os, sys
def cpu():
    t = os.times()
    return t.user + t.system
marks = [cpu()]
kind, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
threads = int(sys.argv[4]) if len(sys.argv) > 4 else None
import rdmalab.cli as cli
from rdmalab import _core
if kind != "hpcc":  # what `rdmalab run` loads before its run: the results' tables (polars)
    from pathlib import Path
    from rdmalab.results import Results, describe
    from rdmalab.scenario import Scenario
marks.append(cpu())
if kind == "hpcc":
    sim = _core.Simulation.from_hpcc_config(path, None, None)
    marks.append(cpu())
    while sim.run(max_events=1_000_000) == "paused":
        pass
    marks.append(cpu())
    raw = sim.results(check=True, release=True, keep=True)
    from rdmalab.summary import Outcome
    res = Outcome(raw, "finished", False, 1.0)
    res.extra["core"] = sim
    summary = res.summary()
    marks.append(cpu())
    fct, pfc = sim.output_paths()
    res.write_fct(fct)
    res.write_pfc(pfc)
    marks.append(cpu())
    marks.append(cpu())
else:
    sim = _core.Simulation.from_toml_file(path, threads)
    marks.append(cpu())
    while sim.run(max_events=1_000_000) == "paused":
        pass
    marks.append(cpu())
    raw = sim.results(check=True, release=True, keep=True)
    res = Results.from_core(raw, "finished", False, 1.0)
    res.extra["core"] = sim
    summary = res.summary()
    marks.append(cpu())
    o = Path(out)
    (o / "summary.txt").write_text(summary + "\n")
    res.write_fct(o / "fct.txt")
    res.write_pfc(o / "pfc.txt")
    for name, table in res.tables().items():
        table.write_parquet(o / f"{name}.parquet")
    (o / "run.json").write_text(json.dumps(cli.run_record(res, "bench"), indent=1) + "\n")
    marks.append(cpu())
    cli.run_figures(res, o, f"bench: {describe(Scenario.from_toml(path), res)}")
    marks.append(cpu())
names = ("imports", "setup", "engine", "tables", "files", "figures")
import resource
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({**{n: b - a for n, a, b in zip(names, marks, marks[1:])}, "events": res.counters["events"],
                  "peak_bytes": peak}))
'''


def cpu_of(cmd: list[str], cwd: str) -> float:
    """CPU seconds (user + system) of one child process, from the kernel's accounting."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def one(name: str, threads: int | None = None) -> dict[str, float]:
    """Phases of one run of `name`, in a fresh process and folder."""
    with tempfile.TemporaryDirectory() as tmp:
        if name in NATIVE:
            kind, path = "run", str(REPO / "bench" / "scenarios" / NATIVE[name])
        else:
            config, mode = SCENARIOS[name]
            kind, path = "hpcc", prepare(Path(tmp), config, mode).name
        extra = [] if threads is None else [str(threads)]
        out = subprocess.run([sys.executable, "-c", CHILD, kind, path, tmp, *extra], cwd=tmp, capture_output=True,
                             text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"{name}: {out.stderr[-2000:]}")
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["start"] = cpu_of([sys.executable, "-c", "pass"], tmp)
        return row


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"


def record(rows: dict[str, dict[str, float]], machine: str) -> None:
    """Puts the rows into the results file's phase section (replacing the rows of the same runs)."""
    path = REPO / "bench" / "recorded" / "performance.json"
    data = json.loads(path.read_text())
    title = "Where a run's time goes"
    section = next((s for s in data["sections"] if s["title"] == title), None)
    if section is None:
        raise SystemExit(f"{path}: no section {title!r}")
    label = {n: (f"{n} (`rdmalab hpcc`)" if n not in NATIVE else f"{n} (`rdmalab run`)") for n in rows}
    keep = [r for r in section["rows"] if r["cells"][0] not in label.values()]
    for name, r in rows.items():
        total = sum(r[p] for p in PHASES)
        cells = [label[name]] + [f"{r[p]:.2f}" for p in PHASES] + [f"{total:.2f}",
                                                                   f"{100 * (total - r['engine']) / total:.0f} %"]
        keep.append({"cells": cells, "commit": commit(), "date": dt.date.today().isoformat(), "machine": machine})
    section["rows"] = keep
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="*", default=["S1-dcqcn", "fat-tree-128-pfc"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None,
                    help="the bench scenarios' thread count (1: `rdmalab run --threads 1`'s origin order; "
                         "default: the sequential engine in the reference's order)")
    ap.add_argument("--record", action="store_true", help="write the rows into bench/recorded/performance.json")
    ap.add_argument("--machine", default="build-2c-shared", help="the machine key the rows name (with --record)")
    args = ap.parse_args()
    rows = {}
    print("| run | " + " | ".join(PHASES) + " | total | outside the engine |")
    print("|---|" + "---|" * (len(PHASES) + 2))
    for name in args.runs:
        runs = [one(name, args.threads) for _ in range(args.rounds)]
        rows[name] = {p: statistics.median(r[p] for r in runs) for p in PHASES}
        rows[name]["peak_bytes"] = max(r["peak_bytes"] for r in runs)
        rows[name]["events"] = runs[0]["events"]
        r = rows[name]
        total = sum(r[p] for p in PHASES)
        print(f"| {name} | " + " | ".join(f"{r[p]:.2f}" for p in PHASES)
              + f" | {total:.2f} | {100 * (total - r['engine']) / total:.0f} % |"
              + f" peak {r['peak_bytes'] / 1e9:.2f} GB, {r['events']:,} events")
    if args.record:
        record(rows, args.machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
