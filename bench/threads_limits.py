#!/usr/bin/env python3
"""What limits two threads on each workload: balance, windows, the cut's traffic.

Runs each workload with the pure-Rust runner at one and at two threads (`scenario_run FILE
--threads 1|2`, the barrier set to sleep at once, `RDMALAB_BARRIER_SPIN_US=0`, so that a
thread's CPU seconds are its work, not its spinning) and prints, per workload, figures that
do not depend on the machine's load:

- events per partition and their imbalance (largest / mean);
- windows, and the events per window (all partitions, and on the critical path: per window
  the most events one partition ran, summed over windows, as the engine counts it);
- the packets sent across the cut (per window, and per hundred events);
- the speed-ups these bound: the balance bound (events / the largest partition's), the
  window bound (events / the critical path), and the same against one thread's events (one
  thread runs fewer: its switch dequeues wait without events, `sim/mech/deferred_dequeues.rs`);
- CPU seconds of the run, setup left out (user + system; per thread with two), which barely
  depend on the load; the CPU bound (one thread's CPU over the critical path at the
  partitions' CPU per event); and from them the
  window cost `b*` at which two threads would fall to 1.7x: one thread's CPU over 1.7, less the
  critical path at the partitions' cost per event, over the windows. A `b*` far above what a
  window's two barrier waits cost (a few microseconds on idle cores, about 100 us when a
  thread has to be woken) means the windows are not the limit; a negative one that the
  critical path alone is too long.

Wall times are printed too, but on a loaded machine they say little. A long workload runs a
prefix (`stop_time`, its steady state): the ring AllReduce of 1 GiB takes hours whole.

    python3 bench/threads_limits.py                      # the four workloads
    python3 bench/threads_limits.py incasts permutation  # some of them
    python3 bench/threads_limits.py --stop ring=100us --build test-release
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "bench" / "scenarios"
# Workload: (scenario file, prefix simulated: None for the whole run).
WORKLOADS = {
    "websearch": ("fat_tree_1k_websearch.toml", None),
    "incasts": ("fat_tree_1k_incasts.toml", None),
    "permutation": ("fat_tree_1k_permutation.toml", "300us"),
    "ring": ("ring_allreduce_1k.toml", "40us"),
}
TARGET_SPEEDUP = 1.7


def runner(profile: str) -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / profile / "examples" / "scenario_run"


def scenario(name: str, stop: str | None, workdir: Path) -> Path:
    """The workload's file, or a copy of it that stops at `stop` (the key goes first, above
    every table, where a scenario's top-level keys live)."""
    path = SCENARIOS / WORKLOADS[name][0]
    if stop is None:
        return path
    text = path.read_text()
    if re.search(r"^stop_time\s*=", text, re.M):
        text = re.sub(r"^stop_time\s*=.*$", f'stop_time = "{stop}"', text, flags=re.M)
    else:
        text = f'stop_time = "{stop}"\n' + text
    copy = workdir / f"{name}.toml"
    copy.write_text(text)
    return copy


def run(exe: Path, path: Path, threads: int) -> dict:
    env = os.environ | {"RDMALAB_BARRIER_SPIN_US": "0"}
    proc = subprocess.Popen([str(exe), str(path), "--threads", str(threads)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    text = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{path.name} --threads {threads} failed:\n{text}")
    got = {"cpu_process": usage.ru_utime + usage.ru_stime,
           "events": int(re.search(r"^events (\d+)", text, re.M).group(1)),
           "run_s": float(re.search(r'"run_s": ([\d.e+-]+)', text).group(1)),
           "stop": re.search(r"^stop: (\w+)", text, re.M).group(1),
           "cpu_run": float(re.search(r"^CPU s: setup [\d.]+, run ([\d.]+)", text, re.M).group(1))}
    if m := re.search(r"events per partition \[([\d, ]+)\], (\d+) windows, critical path (\d+) events", text):
        got["parts"] = [int(x) for x in m.group(1).split(",")]
        got["windows"], got["critical"] = int(m.group(2)), int(m.group(3))
        got["cpu"] = [float(x) for x in re.search(r"CPU s per thread \[([\d., ]+)\]", text).group(1).split(",")]
        got["crossed"] = [int(x) for x in re.search(r"sent across the cut \[([\d, ]+)\]", text).group(1).split(",")]
        got["spread"] = [int(x) for x in re.search(r"per power of two \[([\d, ]+)\]", text).group(1).split(",")]
    return got


def limits(one: dict, two: dict) -> dict:
    """The load-independent figures of one workload (see the module's comment)."""
    parts, windows, critical = two["parts"], two["windows"], two["critical"]
    total = sum(parts)
    per_event = sum(two["cpu"]) / total  # CPU seconds per event in a partition
    crossed = sum(two["crossed"])
    # Windows whose spread exceeds what the early thread spins through before it sleeps
    # (`SPIN`, 50 us, at the partitions' CPU cost per event): each costs a wake-up.
    spin_events = 50e-6 / per_event
    sleeps = sum(n for i, n in enumerate(two["spread"]) if 2 ** i >= spin_events)
    return {
        "events_1": one["events"],
        "events_2": total,
        "parts": parts,
        "imbalance": max(parts) / (total / len(parts)),
        "windows": windows,
        "per_window": total / windows,
        "critical_per_window": critical / windows,
        "crossed": crossed,
        "crossed_per_window": crossed / windows,
        "crossed_per_100_events": 100 * crossed / total,
        "spread": two["spread"],
        "spin_events": spin_events,
        "sleeping_windows": sleeps,
        "balance_bound": total / max(parts),
        "window_bound": total / critical,
        "bound_vs_one": one["events"] / critical,
        "cpu_1": one["cpu_run"],
        "cpu_2": two["cpu"],
        "cpu_bound": one["cpu_run"] / (critical * per_event),
        "b_star_us": (one["cpu_run"] / TARGET_SPEEDUP - critical * per_event) / windows * 1e6,
        "wall": (one["run_s"], two["run_s"]),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=f"which of {', '.join(WORKLOADS)} (default: all)")
    ap.add_argument("--stop", action="append", default=[], metavar="NAME=TIME",
                    help="simulate only this prefix of a workload (`whole` for all of it)")
    ap.add_argument("--build", default="test-release", help="cargo profile of scenario_run (default test-release)")
    args = ap.parse_args(argv)
    names = args.workloads or list(WORKLOADS)
    if unknown := set(names) - set(WORKLOADS):
        ap.error(f"unknown workload(s) {sorted(unknown)}: choose from {', '.join(WORKLOADS)}")
    stops = {name: stop for name, (_, stop) in WORKLOADS.items()}
    for item in args.stop:
        name, _, stop = item.partition("=")
        if name not in WORKLOADS or not stop:
            ap.error(f"--stop {item}: expected NAME=TIME with NAME one of {', '.join(WORKLOADS)}")
        stops[name] = None if stop == "whole" else stop
    exe = runner(args.build)
    if not exe.is_file():
        ap.error(f"{exe}: build it first (cargo build --profile {args.build} -p rdmalab --example scenario_run)")
    rows = {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times say little when loaded)")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = scenario(name, stops[name], Path(tmp))
            one, two = run(exe, path, 1), run(exe, path, 2)
            rows[name] = lim = limits(one, two)
            print(f"\n{name} ({WORKLOADS[name][0]}, {stops[name] or 'whole run'}; stop {two['stop']})", flush=True)
            print(f"  events: 1 thread {lim['events_1']:,}; 2 threads {lim['events_2']:,} = {lim['parts']}, "
                  f"imbalance {lim['imbalance']:.3f}")
            print(f"  windows {lim['windows']:,}: {lim['per_window']:,.0f} events each, "
                  f"{lim['critical_per_window']:,.0f} on the critical path")
            print(f"  windows by spread of the partitions' events (powers of two): {lim['spread']}; "
                  f"{lim['sleeping_windows']:,} spread by {lim['spin_events']:,.0f} or more (the barrier's "
                  f"50 us spin at {1e9 * sum(lim['cpu_2']) / lim['events_2']:.0f} ns an event): the early thread sleeps")
            print(f"  across the cut {lim['crossed']:,} ({lim['crossed_per_window']:,.1f} a window, "
                  f"{lim['crossed_per_100_events']:.2f} per 100 events)")
            print(f"  bounds: balance {lim['balance_bound']:.2f}x, windows {lim['window_bound']:.2f}x, "
                  f"against one thread's events {lim['bound_vs_one']:.2f}x, from CPU {lim['cpu_bound']:.2f}x")
            print(f"  CPU s: 1 thread {lim['cpu_1']:.2f}; 2 threads {', '.join(f'{c:.2f}' for c in lim['cpu_2'])}; "
                  f"window cost for {TARGET_SPEEDUP}x b* = {lim['b_star_us']:.0f} us")
            print(f"  wall (loaded): {lim['wall'][0]:.2f} s / {lim['wall'][1]:.2f} s")
    print("\n| workload | events 1 / 2 threads | imbalance | windows | events / window (critical) "
          "| across / window | balance | window | vs 1 thread | CPU | b* us |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['events_1']:,} / {r['events_2']:,} | {r['imbalance']:.3f} | {r['windows']:,} "
              f"| {r['per_window']:,.0f} ({r['critical_per_window']:,.0f}) | {r['crossed_per_window']:,.1f} "
              f"| {r['balance_bound']:.2f}x | {r['window_bound']:.2f}x | {r['bound_vs_one']:.2f}x "
              f"| {r['cpu_bound']:.2f}x | {r['b_star_us']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
