#!/usr/bin/env python3
"""S1 and S2 through the command line and through the engine alone, on the same build.

Runs the reference's configs (`../shared/reference/hpcc/`, CC_MODE as named) with
`rdmalab hpcc CONFIG --quiet` (Python: parsing, the run, writing fct.txt and pfc.txt) and with
the pure-Rust `hpcc_run` example of the same cargo profile, in alternation, and prints the best
user seconds and peak memory of each and their ratio:

    cargo build --profile test-release -p rdmalab --example hpcc_run
    .venv/bin/python bench/cli_vs_engine.py [--profile test-release] [--rounds 3] [S1-dcqcn S2-dcqcn ...]

On a shared machine compare the ratio, which alternation keeps fair, rather than the seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from run import INPUTS, REFERENCE, SCENARIOS, prepare  # noqa: E402


def measure(cmd: list[str], cwd: str) -> tuple[float, float]:
    """(user s, peak RSS MB) of one child process."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)}: {proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenarios", nargs="*", default=["S1-dcqcn", "S1-hpcc", "S2-dcqcn", "S2-hpcc"])
    ap.add_argument("--profile", default="release")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    engine = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / args.profile / "examples" / "hpcc_run"
    cli = shutil.which("rdmalab", path=str(Path(sys.executable).parent)) or "rdmalab"
    print("| run | CLI user s | CLI peak MB | engine user s | engine peak MB | CLI / engine |")
    print("|---|---|---|---|---|---|")
    for name in args.scenarios:
        best = {"cli": (1e9, 0.0), "engine": (1e9, 0.0)}
        for _ in range(args.rounds):
            for kind in ("cli", "engine"):
                with tempfile.TemporaryDirectory() as tmp:
                    for f in INPUTS:
                        shutil.copy(REFERENCE / f, Path(tmp) / f)
                    config, mode = SCENARIOS[name]
                    cfg = prepare(Path(tmp), config, mode).name
                    cmd = [cli, "hpcc", cfg, "--quiet"] if kind == "cli" else [str(engine), cfg]
                    user, rss = measure(cmd, tmp)
                    best[kind] = min(best[kind], (user, rss))
        (cu, cr), (eu, er) = best["cli"], best["engine"]
        print(f"| {name} | {cu:.2f} | {cr:.0f} | {eu:.2f} | {er:.0f} | {cu / eu:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
