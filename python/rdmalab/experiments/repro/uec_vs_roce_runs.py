"""Runs a chosen subset of `uec-vs-roce` in parallel processes, one result file per run.

    python -m rdmalab.experiments.repro.uec_vs_roce_runs --out DIR [--only REGEX] [--jobs N]
                                                         [--quick] [--timeout S] [--list]

Every run is one (workload, variant) of `uec_vs_roce_sweep.runs`, labelled
`workload/variant` (`incast-16/uet-ops-trim`); `--only` keeps the labels a regular
expression finds (`re.search`). Each run is simulated in a process of its own (a fresh
interpreter) by the sequential engine, with the sweep's own scenario and seed 1, as
`rdmalab repro run uec-vs-roce` runs it, so a row here is the row its report prints for the
same run. (The parallel engine, even on one thread, breaks ties between simultaneous events
in another order, and its numbers differ in detail.) Its row (the columns of the
table in docs/uec-vs-roce.md, plus wall and CPU seconds, peak memory, the commit and the date)
goes to `DIR/<workload>__<variant>.json` as soon as it ends; a run that fails or passes
`--timeout` writes its file with `status` saying so. Pieces of the sweep can run on several
machines into several folders; `python bench/uec_page.py --merge DIR...` folds their files
into `bench/recorded/uec_vs_roce_full.json` and regenerates the page's table.

Needs only the compiled engine, numpy and polars (no Ray, no tqdm). The longest runs are
started first (`COST_ORDER`), so that the last ones to end are short.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

import rdmalab
from rdmalab import Scenario
from rdmalab.experiments.repro import uec_vs_roce_sweep as sweep

#: The workloads from the slowest to run to the quickest (wall time at full size, roughly):
#: the order runs are started in. Chosen from the full-size runs' wall times; a workload not
#: named here goes last.
COST_ORDER = ("incast-1024", "perm-8to1", "perm-4to1", "perm-degraded", "perm-failed", "perm-1to1",
              "websearch", "allreduce-rail", "incast-128", "incast-16")
#: The counters of a row, as `res.counters` names them (absent ones read 0).
COUNTERS = ("drops", "trims", "retx_packets", "nacks", "timeouts", "pauses", "link_down_losses")
#: Bumped when a row's fields change meaning.
FORMAT = 1


def label(v: sweep.Variant, w: sweep.Workload) -> str:
    """A run's label: `workload/variant`."""
    return f"{w.name}/{v.name}"


def file_name(lab: str) -> str:
    """The result file of a label: `workload__variant.json`."""
    return lab.replace("/", "__") + ".json"


def scenario_tables(v: sweep.Variant, w: sweep.Workload) -> dict[str, Any]:
    """The run's scenario: the sweep's tables (empty ones left out) and seed 1."""
    tables = {k: x for k, x in sweep.scenario_tables(v, w).items() if x}
    tables["seed"] = 1
    return tables


def digest(v: sweep.Variant, w: sweep.Workload) -> str:
    """12 hex digits of the scenario's sha256: a recorded row whose digest differs from the
    current one ran another scenario (a variant or workload changed since)."""
    text = json.dumps(scenario_tables(v, w), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def chosen(quick: bool, only: str | None) -> list[tuple[sweep.Variant, sweep.Workload]]:
    """The runs `--only` keeps, the slowest workload first (sweep order within one)."""
    rank = {name: i for i, name in enumerate(COST_ORDER)}
    pat = re.compile(only) if only else None
    out = [(v, w) for v, w in sweep.runs(quick) if pat is None or pat.search(label(v, w))]
    return sorted(out, key=lambda vw: rank.get(vw[1].name, len(rank)))


def _pct(x: np.ndarray, p: float) -> float | None:
    return float(np.percentile(x, p)) if x.size else None


def _commit() -> str:
    """`UEC_RUNS_COMMIT` when set (`--commit`: a copy of the tree without its git folder), else
    the checkout's short commit, `+` when its engine or Python package (`crates/`, `python/`)
    differ from it; `unknown` outside a git checkout."""
    if os.environ.get("UEC_RUNS_COMMIT"):
        return os.environ["UEC_RUNS_COMMIT"]
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=here, capture_output=True,
                              text=True, check=True).stdout.strip()
        # Only what the numbers depend on: the engine and the Python package.
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "crates", "python"],
                               cwd=here.parents[3]).returncode
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def measure(v: sweep.Variant, w: sweep.Workload) -> dict[str, Any]:
    """Simulates one run and returns its row (the fields `report_uec` prints, computed the
    same way from the same tables)."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = rdmalab.run(Scenario(scenario_tables(v, w)), progress=False, threads=None)  # sequential
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    c = res.counters
    f = res.flows
    done = f.filter(f["status"] == "completed")
    times = done["fct_ns"].to_numpy()
    flows = int(c.get("flows_total") or f.height)
    stop = "finished" if done.height == flows else res.stop_reason
    if w.collective:
        times = (res.collectives["end_ns"] - res.collectives["start_ns"]).to_numpy()
    row: dict[str, Any] = {"flows_done": done.height, "flows": flows}
    p50, p99 = _pct(times, 50), _pct(times, 99)
    row["p50_us"] = None if p50 is None else p50 / 1e3
    row["p99_us"] = None if p99 is None else p99 / 1e3
    # As the report does: no span for a run cut short, no offered bytes for one unless an incast.
    row["span_us"] = float((done["start_ns"] + done["fct_ns"]).max() - f["start_ns"].min()) / 1e3 \
        if done.height and stop == "finished" else None
    offered = int(f["size"].sum()) if f.height and stop == "finished" else 0
    row["bound_us"] = None
    if w.incast is not None:
        offered = w.incast[0] * w.incast[1]
        row["bound_us"] = w.incast_bound_us()
    row["delivered_over_offered"] = int(c.get("payload_bytes_delivered") or 0) / offered if offered else None
    for k in COUNTERS:
        row[k] = int(c.get(k) or 0)
    row["end"] = stop
    row["wall_s"], row["cpu_s"] = round(wall, 2), round(cpu, 2)
    row["max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return row


def run_one(lab: str, out: Path, quick: bool) -> int:
    """The child's work: simulate `lab` and write its file."""
    runs = {label(v, w): (v, w) for v, w in sweep.runs(quick)}
    if lab not in runs:
        raise SystemExit(f"uec_vs_roce_runs: no run labelled {lab!r}")
    v, w = runs[lab]
    row = {"label": lab, "workload": w.name, "variant": v.name, "quick": quick, "status": "ok",
           "scenario": digest(v, w), **measure(v, w)}
    write(out / file_name(lab), {**row, **provenance()})
    return 0


def provenance() -> dict[str, Any]:
    """Where and when a row was taken."""
    return {"commit": _commit(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "format": FORMAT}


def write(path: Path, row: dict[str, Any]) -> None:
    """Writes one result file whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(row, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _child(lab: str, out: Path, quick: bool, timeout: float | None) -> tuple[str, float]:
    """Runs one label in a fresh interpreter; returns (status, wall s). A failure or a
    timeout writes its file with the status and the end of the child's error output."""
    cmd = [sys.executable, "-m", __name__ if __name__ != "__main__" else "rdmalab.experiments.repro.uec_vs_roce_runs",
           "--one", lab, "--out", str(out)] + (["--quick"] if quick else [])
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        status, err = ("ok", "") if p.returncode == 0 else (f"error (exit {p.returncode})", p.stderr[-2000:])
    except subprocess.TimeoutExpired:
        status, err = f"timeout ({timeout:g} s)", ""
    wall = time.perf_counter() - t0
    if status != "ok":
        w, v = lab.split("/")
        write(out / file_name(lab), {"label": lab, "workload": w, "variant": v, "quick": quick, "status": status,
                                     "error": err, "wall_s": round(wall, 2), **provenance()})
    return status, wall


def _summary(path: Path) -> str:
    r = json.loads(path.read_text())
    if r.get("status") != "ok":
        return r.get("status", "?")
    ratio = f", span/bound {r['span_us'] / r['bound_us']:.3f}" if r.get("span_us") and r.get("bound_us") else ""
    p99 = f"{r['p99_us']:,.1f}" if r.get("p99_us") is not None else "-"
    return (f"{r['end']}, {r['flows_done']}/{r['flows']} flows, p99 {p99} us{ratio}, "
            f"cpu {r['cpu_s']:.1f} s, {r['max_rss_mb']} MB")


def run_many(labels: list[str], out: Path, quick: bool, jobs: int, timeout: float | None) -> int:
    """Runs every label, `jobs` at a time, printing a line as each ends; 1 if any failed."""
    lock, state = threading.Lock(), {"done": 0, "failed": 0}
    t_start = time.perf_counter()

    def one(lab: str) -> None:
        status, wall = _child(lab, out, quick, timeout)
        with lock:
            state["done"] += 1
            state["failed"] += status != "ok"
            print(f"[{state['done']}/{len(labels)} {time.perf_counter() - t_start:6.0f} s] {lab}: "
                  f"{wall:.1f} s wall, {_summary(out / file_name(lab))}", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, labels))
    print(f"{len(labels) - state['failed']} of {len(labels)} runs ok in {time.perf_counter() - t_start:.0f} s; "
          f"files in {out}", flush=True)
    return 1 if state["failed"] else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="the full-size runs (the default)")
    size.add_argument("--quick", action="store_true", help="the quick runs (24-40 hosts)")
    ap.add_argument("--only", help="a regular expression: the labels (workload/variant) it finds are run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (default: the cores)")
    ap.add_argument("--out", type=Path, help="the folder of result files (one per run)")
    ap.add_argument("--timeout", type=float, help="seconds a run may take before it is killed")
    ap.add_argument("--skip-done", action="store_true", help="leave out runs whose file in --out says ok")
    ap.add_argument("--list", action="store_true", help="print the chosen labels in run order and exit")
    ap.add_argument("--commit", help="the commit to record (default: the checkout's, from git)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the child: one label, in this process
    a = ap.parse_args(argv)
    if a.commit:
        os.environ["UEC_RUNS_COMMIT"] = a.commit  # the children inherit it
    if a.one:
        return run_one(a.one, a.out, a.quick)
    labels = [label(v, w) for v, w in chosen(a.quick, a.only)]
    if a.list:
        print("\n".join(labels))
        return 0
    if a.out is None:
        ap.error("--out is required (the folder of result files)")
    if a.skip_done:
        labels = [lab for lab in labels if not _is_ok(a.out / file_name(lab))]
    if not labels:
        print("no run to do", flush=True)
        return 0
    print(f"{len(labels)} runs, {a.jobs} at a time, into {a.out}", flush=True)
    return run_many(labels, a.out, a.quick, a.jobs, a.timeout)


def _is_ok(path: Path) -> bool:
    try:
        return json.loads(path.read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    sys.exit(main())
