#!/usr/bin/env python3
"""One thread against two, through every door a user takes, interleaved.

Runs, round after round, each (path, threads) once, in the same order every round, so that a
machine's drift reaches every configuration alike; prints per configuration the median engine
time, CPU seconds per thread and the window statistics, and per path the speed-up of 2 threads
over 1 (medians). The paths:

- `rust`: the 1,024-host case (`bench/scenarios/fat_tree_1k_websearch.toml`) with the pure-Rust
  runner `scenario_run --threads N` (engine time: its `run_s`);
- `cli`: the same file through `rdmalab run --threads N` (what users type; engine time: the
  events over the summary's events/s, i.e. the run's slices without setup and output writing);
- `python`: the same file through `rdmalab.run(path, threads=N)` (`Results.wall_seconds`);
- `s1`: S1 with DCQCN (the reference's config, CC_MODE 1) with `hpcc_run --threads N`.

One thread is `--threads 1` (the origin order, what `auto` runs when it does not cut). Run it on
a machine the run has to itself (nothing else runnable: two CPU-bound threads need two idle
cores), after `make setup` and `cargo build --release -p rdmalab --examples`:

    python3 bench/threads.py                  # 5 rounds, every path
    python3 bench/threads.py --rounds 3 rust cli
    python3 bench/threads.py --rounds 3 --auto --case bench/scenarios/fat_tree_3k_fbhadoop.toml cli

Events per partition and windows do not depend on the load; CPU seconds per thread barely do;
engine times do, which is why the rounds interleave and the medians are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "examples"
VENV = REPO / ".venv" / "bin"
sys.path.insert(0, str(REPO / "bench"))
from run import REFERENCE  # noqa: E402  (the reference's files: `run.reference_dir`)

CASE = REPO / "bench" / "scenarios" / "fat_tree_1k_websearch.toml"
PATHS = ("rust", "cli", "python", "s1")
PY_RUN = ("import json, sys, rdmalab; t = sys.argv[2]; "
          "r = rdmalab.run(sys.argv[1], progress=False, threads=int(t) if t.isdigit() else t); "
          "print('PY', json.dumps({'run_s': r.wall_seconds, 'events': r.counters['events'], "
          "'parallel': r.extra.get('parallel')}))")


def s1_config(workdir: Path) -> Path:
    """S1's reference config with CC_MODE 1 (DCQCN) and its inputs, in `workdir`."""
    for name in ("fat.txt", "topology.txt", "trace.txt", "S1_flow.txt", "S2_flow.txt"):
        shutil.copy(REFERENCE / name, workdir / name)
    text = (REFERENCE / "S1_dcqcn_config.txt").read_text()
    lines = ["CC_MODE 1" if line.startswith("CC_MODE ") else line for line in text.splitlines()]
    (workdir / "s1.txt").write_text("\n".join(lines) + "\n")
    return workdir / "s1.txt"


def command(path: str, threads: int | str, workdir: Path, case: Path = CASE) -> list[str]:
    if path == "rust":
        return [str(EXAMPLES / "scenario_run"), str(case), "--threads", str(threads)]
    if path == "cli":
        out = workdir / f"cli{threads}"
        return [str(VENV / "rdmalab"), "run", str(case), "--threads", str(threads), "--out", str(out), "--force",
                "--quiet"]
    if path == "python":
        return [str(VENV / "python"), "-c", PY_RUN, str(case), str(threads)]
    return [str(EXAMPLES / "hpcc_run"), "s1.txt", "--threads", str(threads)]


def numbers(path: str, text: str) -> dict:
    """Engine seconds, CPU seconds per thread and the window statistics of one run's output."""
    got: dict = {}
    if path == "python":
        stats = json.loads(next(line for line in text.splitlines() if line.startswith("PY "))[3:])
        got["run_s"] = stats["run_s"]
        par = stats["parallel"]
        if par:
            got |= {"cpu": par["cpu_s"], "wait": par["wait_s"], "windows": par["windows"],
                    "events": par["events_per_partition"]}
        return got
    if path == "cli":
        events, rate = re.search(r"^events\s+([\d,]+)\s+\(([\d.]+) M/s wall\)", text, re.M).groups()
        got["run_s"] = int(events.replace(",", "")) / (float(rate) * 1e6)
    else:
        got["run_s"] = float(re.search(r'"run_s": ([\d.e+-]+)', text).group(1))
    if m := re.search(r"events per partition \[([\d, ]+)\]", text):
        got["events"] = [int(x) for x in m.group(1).split(",")]
    if m := re.search(r"(?:\], |; )(\d[\d,]*) windows", text):
        got["windows"] = int(m.group(1).replace(",", ""))
    if m := re.search(r"CPU s per thread \[([\d., ]+)\]", text):
        got["cpu"] = [float(x) for x in m.group(1).split(",")]
    if m := re.search(r"s waited at barriers \[([\d., ]+)\]", text):
        got["wait"] = [float(x) for x in m.group(1).split(",")]
    return got


def run_once(path: str, threads: int | str, workdir: Path, case: Path = CASE) -> dict:
    proc = subprocess.Popen(command(path, threads, workdir, case), cwd=workdir, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{path} --threads {threads} failed:\n{text}")
    return numbers(path, text) | {"process_cpu_s": usage.ru_utime + usage.ru_stime}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", metavar="PATH", help=f"which of {', '.join(PATHS)} (default: all)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--case", type=Path, default=CASE,
                    help="the scenario file of the rust, cli and python paths (default: the 1,024-host fat tree)")
    ap.add_argument("--auto", action="store_true", help="also run `--threads auto` (must be no slower than 1)")
    args = ap.parse_args(argv)
    paths = args.paths or list(PATHS)
    if unknown := set(paths) - set(PATHS):
        ap.error(f"unknown path(s) {sorted(unknown)}: choose from {', '.join(PATHS)}")
    if not args.case.is_file():
        ap.error(f"--case {args.case}: no such file")
    case = args.case.resolve()
    counts = (1, 2, "auto") if args.auto else (1, 2)
    runs: dict[tuple[str, int | str], list[dict]] = {(p, t): [] for p in paths for t in counts
                                                      if t != "auto" or p != "s1"}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        s1_config(workdir)
        print(f"case {case.name}; load average before: {os.getloadavg()[0]:.2f}  ({os.cpu_count()} cores)")
        for r in range(args.rounds):
            for key in runs:
                got = run_once(*key, workdir, case)
                runs[key].append(got)
                cpu = ", ".join(f"{c:.2f}" for c in got.get("cpu", [])) or "-"
                print(f"round {r + 1}  {key[0]:6} {key[1]} thread(s): {got['run_s']:.3f} s engine, "
                      f"CPU s per thread {cpu}, process CPU {got['process_cpu_s']:.2f} s", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("\n| path | threads | engine s (median) | rounds | CPU s per thread (median) | windows | events per partition |")
    print("|---|---|---|---|---|---|---|")
    for (path, t), got in runs.items():
        times = [g["run_s"] for g in got]
        cpu = [statistics.median(g["cpu"][i] for g in got) for i in range(len(got[0]["cpu"]))] if "cpu" in got[0] else []
        per = ", ".join(f"{c:.2f}" for c in cpu) or "-"
        print(f"| {path} | {t} | {statistics.median(times):.3f} | {', '.join(f'{x:.2f}' for x in times)} | {per} "
              f"| {got[0].get('windows', '-')} | {got[0].get('events', '-')} |")
    print()
    for path in paths:
        one = statistics.median(g["run_s"] for g in runs[(path, 1)])
        two = statistics.median(g["run_s"] for g in runs[(path, 2)])
        rounds = [a["run_s"] / b["run_s"] for a, b in zip(runs[(path, 1)], runs[(path, 2)])]
        print(f"{path}: 2 threads {one / two:.2f}x faster than 1 (medians); round by round "
              f"{min(rounds):.2f}x to {max(rounds):.2f}x")
        if (path, "auto") in runs:
            auto = statistics.median(g["run_s"] for g in runs[(path, "auto")])
            print(f"{path}: auto {one / auto:.2f}x the speed of 1 thread (medians)")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main(sys.argv[1:])
    print(f"({time.perf_counter() - t0:.0f} s)")
    sys.exit(code)
