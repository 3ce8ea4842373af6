#!/usr/bin/env python3
"""Two builds of the engine, alternated run by run on the same scenarios.

A machine's speed drifts (by up to 2x from one day to the next on the 2-core build machine),
so a build is only ever timed against another one in alternation: round after round, each
scenario runs once with the old build and once with the new one, each in its own process.
Prints, per scenario and build, the best and median user seconds, the nanoseconds of user
time per event, the ratio new / old of the medians, the median and range of the rounds' own
ratios (each round's new run over its old run: the drift of the machine from minute to minute
moves both runs of a round together, so this ratio is the steadier of the two), and, when
`S1-dcqcn` is among the scenarios, each scenario's cost per event relative to S1's with the
same build.

    python3 bench/ab.py --old OLD_DIR --new NEW_DIR [--rounds 7] [--jobs N] [--json FILE] S1-dcqcn PATH.toml ...
    .venv/bin/python bench/ab.py --cli --old OLD/python --new NEW/python S1-dcqcn

`OLD_DIR` and `NEW_DIR` hold the `hpcc_run` and `scenario_run` examples of one build (e.g.
`target/release/examples`). With `--cli` they are instead the `python/` folders of two
checkouts, each with its built extension (`rdmalab/_core.abi3.so`), and each run is the
command a user types, `rdmalab hpcc CONFIG --quiet` (the reference's configs only), with that
folder first on `PYTHONPATH`. A scenario is a name of `bench/run.py` (S1-dcqcn, fat-tree-pfc-quick,
...) or the path of a TOML scenario. `--jobs N` runs N streams at once, each alternating on
its own (a many-core machine; on 2 cores keep 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from run import NATIVE, SCENARIOS, prepare  # noqa: E402


#: `--cli`: run through the command line of the package in the build's folder.
CLI = False


def command(build: Path, scenario: str, workdir: Path) -> list[str]:
    """The command line that runs `scenario` with the examples in `build`."""
    if CLI:
        if scenario not in SCENARIOS or SCENARIOS[scenario][1] is None:
            raise SystemExit(f"ab.py --cli: {scenario!r} is not one of the reference's configs")
        config, mode = SCENARIOS[scenario]
        script = Path(sys.executable).parent / "rdmalab"
        return [sys.executable, str(script), "hpcc", prepare(workdir, config, mode).name, "--quiet"]
    if scenario in SCENARIOS and SCENARIOS[scenario][1] is not None:
        config, mode = SCENARIOS[scenario]
        return [str(build / "hpcc_run"), prepare(workdir, config, mode).name]
    if scenario in SCENARIOS:  # a native scenario kept in bench/
        return [str(build / "scenario_run"), str(REPO / "bench" / SCENARIOS[scenario][0])]
    if scenario in NATIVE:
        return [str(build / "scenario_run"), str(REPO / "bench" / "scenarios" / NATIVE[scenario])]
    path = Path(scenario)
    if path.suffix == ".toml" and path.is_file():
        return [str(build / "scenario_run"), str(path.resolve())]
    raise SystemExit(f"ab.py: unknown scenario {scenario!r} (a bench/run.py name or a .toml file)")


def run_once(build: Path, scenario: str) -> tuple[float, int]:
    """(user seconds, events) of one run in its own process."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = command(build, scenario, Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(build)) if CLI else None
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = proc.stdout.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ab.py: {' '.join(cmd)} failed: {out.strip()[-2000:]}")
    if CLI:  # the command line prints no event count: 0 leaves the cost per event out
        return usage.ru_utime, 0
    stats = json.loads(next(line for line in out.splitlines() if line.startswith("JSON "))[5:])
    return usage.ru_utime, int(stats["events"])


def stream(builds: dict[str, Path], scenarios: list[str], rounds: int) -> dict:
    """One alternating stream: every round runs each scenario with each build in turn."""
    times: dict = {(s, b): [] for s in scenarios for b in builds}
    events: dict = {}
    for r in range(rounds):
        order = list(builds) if r % 2 == 0 else list(builds)[::-1]
        for s in scenarios:
            for b in order:
                user, n = run_once(builds[b], s)
                times[(s, b)].append(user)
                events[(s, b)] = n
    return {"times": times, "events": events}


def round_ratios(old: list[float], new: list[float]) -> list[float]:
    """Each round's new time over its old one (the lists in run order, round by round; with
    `--jobs`, each stream's rounds in turn, as `main` joins them)."""
    assert len(old) == len(new), "one run of each build a round"
    return [n / o for o, n in zip(old, new)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="+")
    ap.add_argument("--old", required=True, type=Path)
    ap.add_argument("--new", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write every run's user seconds here")
    ap.add_argument("--cli", action="store_true", help="OLD and NEW are python/ folders: time `rdmalab hpcc`")
    args = ap.parse_args()
    global CLI
    CLI = args.cli
    builds = {"old": args.old.resolve(), "new": args.new.resolve()}
    for name, build in builds.items():
        for s in args.scenarios:
            hpcc = s in SCENARIOS and SCENARIOS[s][1] is not None
            binary = build / ("rdmalab/_core.abi3.so" if CLI else "hpcc_run" if hpcc else "scenario_run")
            if not binary.is_file():
                raise SystemExit(f"ab.py: --{name} has no {binary.name} ({binary})")
    with ThreadPoolExecutor(args.jobs) as pool:
        parts = list(pool.map(lambda _: stream(builds, args.scenarios, args.rounds), range(args.jobs)))
    times = {k: [t for p in parts for t in p["times"][k]] for k in parts[0]["times"]}
    events = parts[0]["events"]
    for k, n in events.items():
        if any(p["events"][k] != n for p in parts) or n != events[(k[0], "old")]:
            print(f"note: {k[0]} runs a different number of events with the two builds")
    print("| scenario | build | runs | best user s | median user s | ns per event (median) | new / old (median) "
          "| new / old (per round: median, range) | per event / S1's |")
    print("|---|---|---|---|---|---|---|---|---|")
    per_event = {k: statistics.median(v) / events[k] * 1e9 for k, v in times.items() if events[k]}
    for s in args.scenarios:
        for b in builds:
            v = sorted(times[(s, b)])
            ratio = statistics.median(v) / statistics.median(times[(s, "old")])
            ns = per_event.get((s, b))
            s1 = per_event.get(("S1-dcqcn", b))
            vs_s1 = f"{ns / s1:.2f}" if ns and s1 else "-"
            per_round = "-"
            if b != "old":
                rounds = round_ratios(times[(s, "old")], times[(s, b)])
                per_round = f"{statistics.median(rounds):.3f} ({min(rounds):.2f}-{max(rounds):.2f})"
            print(f"| {s} | {b} | {len(v)} | {v[0]:.3f} | {statistics.median(v):.3f} | "
                  f"{'-' if ns is None else f'{ns:.1f}'} | {ratio:.3f} | {per_round} | {vs_s1} |")
    if args.json:
        args.json.write_text(json.dumps({f"{s}|{b}": {"user_s": v, "events": events[(s, b)]}
                                         for (s, b), v in times.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
