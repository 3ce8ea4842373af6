#!/usr/bin/env python3
"""Benchmark of the simulator on named scenarios.

Runs each scenario in its own process with the pure-Rust runner (no Python in the measured
process, so peak RSS is the engine's) and prints wall time, user time, events, events/s,
packet-hops/s and peak RSS. Scenarios are the ns-3 HPCC simulator's reference configs of
`$RDMALAB_REFERENCE/hpcc/`, by default `../shared/reference/hpcc/` (S1: 320-host fat tree,
9,672 flows; S2: 65-host star, 2,321 flows) with their CC_MODE replaced as named, and native TOML scenarios kept in `bench/`
(`MP-topo1`: the data-partition paper's multipath experiment at 16 QPs and 1 KiB chunks; `virtuoso-10paths`:
the Virtuoso paper's 1 GB WRITE over 10 parallel links; `fat-tree-10k`, `fat-tree-100k`, `fat-tree-250k` and
`fat-tree-1M`: k = 36, 74, 100 and 160 fat trees, 11,664 to 1,024,000 hosts, under a 10 KB
permutation; `fat-tree-1M` needs some 11 GB and is left out of the default list).

For the fat trees the fabric alone (one flow) runs too, and the memory is split: bytes per
host = the fabric's peak RSS / hosts, bytes per flow = (the run's peak RSS - the fabric's) /
flows, all flows being live at once.

    python3 bench/run.py                 # all scenarios
    python3 bench/run.py S1-dcqcn S2-none
    python3 bench/run.py --repeat 3      # best of three runs per scenario (a shared machine)
    python3 bench/run.py --threads 1     # the parallel engine's event order (SimConfig::threads)

Where the reference simulator has a run of the same scenario and CC
(`reference/hpcc/run_stats.csv`), its best user time is printed beside ours with the ratio.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def reference_dir(sub: str = "hpcc") -> Path:
    """The reference simulators' files `sub` (`hpcc`: the S1/S2 runs), found as the Rust tests
    find them: `$RDMALAB_REFERENCE/sub` when the variable is set, else `shared/reference/sub`
    beside the checkout (or in any folder above it). Every bench script takes it from here."""
    env = os.environ.get("RDMALAB_REFERENCE")
    if env:
        return Path(env) / sub
    return next((p / "shared" / "reference" / sub for p in Path(__file__).resolve().parents
                 if (p / "shared" / "reference" / sub).is_dir()), REPO.parent / "shared" / "reference" / sub)


REFERENCE = reference_dir()
EXAMPLES = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "examples"
BINARY = EXAMPLES / "hpcc_run"
#: Native TOML scenarios (`bench/scenarios/`), run with the `scenario_run` example.
NATIVE = {
    "stagger-10k": "stagger_recreate_10k.toml",
    "stagger-1M": "stagger_recreate_1M.toml",
    "fat-tree-10k": "fat_tree_10k.toml",
    "fat-tree-100k": "fat_tree_100k.toml",
    # k = 100 (250,000 hosts) and k = 160 (1,024,000 hosts), the same load.
    "fat-tree-250k": "fat_tree_250k.toml",
    "fat-tree-1M": "fat_tree_1M.toml",
    # The parallel engine's scaling case: k = 16 (1,024 hosts), WebSearch at 50 % load, DCQCN.
    "fat-tree-1k-ws": "fat_tree_1k_websearch.toml",
    # One host, 1000 closed-loop apps, 10 ms, each mechanism (target: 5 s wall each).
    "drum-1000-raw": "drum_1000_raw.toml",
    "drum-1000-share": "drum_1000_share.toml",
    "drum-1000-drum": "drum_1000_drum.toml",
    # A 1,024-GPU ring AllReduce of 1 GiB (4.19 million transfers; some 5 minutes on
    # 2 threads, so only when named).
    "ring-allreduce-1k": "ring_allreduce_1k.toml",
    # lb-host-vs-switch's symmetric row cut to 2 ms, Virtuoso (a QP per source
    # address and destination, ~1,400 per host) and its ECMP twin (only when named).
    "virtuoso-2ms": "virtuoso_vs_ecmp_2ms.toml",
    "virtuoso-2ms-ecmp": "virtuoso_vs_ecmp_2ms_ecmp.toml",
    # A congested lossless fabric, PAUSE and RESUME throughout (no congestion
    # control, 20 MB permutation): k = 8 cut at 2 ms (26 million events) and k = 16 (only when named).
    "fat-tree-pfc-quick": "fat_tree_pfc_quick.toml",
    "fat-tree-1k-pfc": "fat_tree_1k_pfc.toml",
    # The k = 16 one cut at 0.2 ms (22.5 million events): its cost per event beside S1's.
    "fat-tree-1k-pfc-cut": "fat_tree_1k_pfc_cut.toml",
}
#: Native scenarios whose memory is split per host and per flow: (fabric-only scenario, hosts).
FABRIC_ONLY = {
    "fat-tree-10k": ("fat_tree_10k_fabric.toml", 36**3 // 4),
    "fat-tree-100k": ("fat_tree_100k_fabric.toml", 74**3 // 4),
    "fat-tree-250k": ("fat_tree_250k_fabric.toml", 100**3 // 4),
    "fat-tree-1M": ("fat_tree_1M_fabric.toml", 160**3 // 4),
}
#: Scenarios run only when named (their memory: `fat-tree-1M` needs some 11 GB; their time:
#: `ring-allreduce-1k`).
NOT_BY_DEFAULT = {"fat-tree-250k", "fat-tree-1M", "ring-allreduce-1k", "virtuoso-2ms", "virtuoso-2ms-ecmp",
                  "fat-tree-1k-pfc"}

# name -> (reference config, CC_MODE), or (native scenario file under bench/, None)
SCENARIOS = {
    "S2-none": ("S2_dcqcn_config.txt", 0),
    "S1-none": ("S1_dcqcn_config.txt", 0),
    "S2-dcqcn": ("S2_dcqcn_config.txt", 1),
    "S2-hpcc": ("S2_hpcc_config.txt", 3),
    "S1-dcqcn": ("S1_dcqcn_config.txt", 1),
    "S1-hpcc": ("S1_hpcc_config.txt", 3),
    # The data-partition paper's topology 1 at its finest split: 16 QPs, 1 KiB chunks (10,240 WRs), DCQCN.
    "MP-topo1": ("mp_topo1.toml", None),
    # The Virtuoso paper's testbed: one 1 GB WRITE over 10 parallel 1 Gb/s links (Virtuoso, probed).
    "virtuoso-10paths": ("virtuoso_10paths.toml", None),
}
INPUTS = ["fat.txt", "topology.txt", "trace.txt", "S1_flow.txt", "S2_flow.txt"]


def build() -> None:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "rdmalab", "--example", "hpcc_run",
                    "--example", "scenario_run"], cwd=REPO, check=True)


def prepare(workdir: Path, config: str, cc_mode: int | None) -> Path:
    if cc_mode is None:  # a native scenario: self-contained
        out = workdir / config
        shutil.copy(REPO / "bench" / config, out)
        return out
    for name in INPUTS:
        shutil.copy(REFERENCE / name, workdir / name)
    text = (REFERENCE / config).read_text()
    lines = [f"CC_MODE {cc_mode}" if line.startswith("CC_MODE ") else line for line in text.splitlines()]
    out = workdir / f"bench_{config}"
    out.write_text("\n".join(lines) + "\n")
    return out


#: `--threads N` for every run (None: the sequential engine).
THREADS: int | None = None


def run_one(name: str, native_file: str | None = None) -> dict:
    native_file = native_file or NATIVE.get(name)
    with tempfile.TemporaryDirectory() as tmp:
        if native_file:
            cmd = [str(EXAMPLES / "scenario_run"), str(REPO / "bench" / "scenarios" / native_file)]
        else:
            config, mode = SCENARIOS[name]
            cmd = [str(BINARY), prepare(Path(tmp), config, mode).name]
        if THREADS is not None:
            cmd += ["--threads", str(THREADS)]
        out_path = Path(tmp) / "stdout.txt"
        with open(out_path, "w") as out:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
            wall = time.perf_counter() - t0
        text = out_path.read_text()
    if os.waitstatus_to_exitcode(status) != 0:
        return {"scenario": name, "error": text.strip().splitlines()[-1]}
    stats = json.loads(next(l for l in text.splitlines() if l.startswith("JSON "))[5:])
    return {
        "scenario": name,
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "events": stats["events"],
        "events_per_s": stats["events"] / stats["run_s"],
        "packet_hops_per_s": stats["packet_hops"] / stats["run_s"],
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "flows": stats["flows"],
        "setup_s": stats["setup_s"],
        # What a collective's scenario simulated: its time and bandwidths (`scenario_run`).
        "collectives": [l for l in text.splitlines() if l.startswith("collective ")],
    }


def reference_user_s() -> dict[str, float]:
    """Best user time of the reference simulator per scenario name (e.g. `S1-dcqcn`)."""
    best: dict[str, float] = {}
    path = REFERENCE / "run_stats.csv"
    if not path.exists():
        return best
    with open(path) as f:
        for row in csv.DictReader(f):
            name = f"{row['scenario']}-{row['cc']}"
            best[name] = min(best.get(name, float("inf")), float(row["user_s"]))
    return best


def best_of(name: str, repeat: int) -> dict:
    """The run with the least user time out of `repeat` (counts are identical)."""
    runs = [run_one(name) for _ in range(repeat)]
    ok = [r for r in runs if "error" not in r]
    return min(ok, key=lambda r: r["user_s"]) if ok else runs[0]


def memory_split(name: str, run: dict) -> str:
    """Bytes per host (the fabric alone) and per flow (the rest) of a FABRIC_ONLY scenario."""
    fabric_file, hosts = FABRIC_ONLY[name]
    fabric = run_one(name, fabric_file)
    if "error" in fabric:
        return f"  fabric-only run failed: {fabric['error']}"
    fabric_mb = fabric["peak_rss_mb"]
    per_host = fabric_mb * 2**20 / hosts
    per_flow = (run["peak_rss_mb"] - fabric_mb) * 2**20 / max(run["flows"], 1)
    return (f"  memory: fabric alone {fabric_mb:.1f} MB = {per_host:,.0f} B per host ({hosts:,} hosts, "
            f"setup {fabric['setup_s']:.1f} s); flows {run['peak_rss_mb'] - fabric_mb:.1f} MB = "
            f"{per_flow:,.0f} B per flow")


def main(argv: list[str]) -> int:
    global THREADS
    repeat = 1
    if "--repeat" in argv:
        i = argv.index("--repeat")
        repeat = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    if "--threads" in argv:
        i = argv.index("--threads")
        THREADS = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    names = argv or [n for n in list(SCENARIOS) + list(NATIVE) if n not in NOT_BY_DEFAULT]
    unknown = [n for n in names if n not in SCENARIOS and n not in NATIVE]
    if unknown:
        print(f"unknown scenario(s) {unknown}; known: {list(SCENARIOS) + list(NATIVE)}", file=sys.stderr)
        return 2
    if not REFERENCE.is_dir():
        print(f"reference data not found at {REFERENCE}", file=sys.stderr)
        return 2
    build()
    ref = reference_user_s()
    print(f"{'scenario':<18}{'wall s':>8}{'user s':>8}{'events':>14}{'Mev/s':>8}{'Mhops/s':>9}{'RSS MB':>8}"
          f"{'flows':>9}{'ref user s':>11}{'speed-up':>9}")
    for name in names:
        r = best_of(name, repeat)
        if "error" in r:
            print(f"{name:<18}  error: {r['error']}")
            continue
        theirs = ref.get(name)
        vs = f"{theirs:>11.1f}{theirs / r['user_s']:>8.1f}x" if theirs else f"{'-':>11}{'-':>9}"
        print(f"{name:<18}{r['wall_s']:>8.2f}{r['user_s']:>8.2f}{r['events']:>14,}{r['events_per_s'] / 1e6:>8.2f}"
              f"{r['packet_hops_per_s'] / 1e6:>9.2f}{r['peak_rss_mb']:>8.1f}{r['flows']:>9}{vs}")
        if name in FABRIC_ONLY:
            print(memory_split(name, r))
        for line in r["collectives"]:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
