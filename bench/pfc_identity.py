#!/usr/bin/env python3
"""Output identity of two engine builds on the congested lossless fabric (PAUSE and RESUME
throughout the run): runs `bench/scenarios/fat_tree_pfc_quick.toml` (or another scenario) with
two `scenario_run` binaries, in the reference's event order and on one and two threads (the
origin order), and compares everything each run measured (`RDMALAB_DUMP`: the `Results`,
PFC events included) and the counters it prints, byte for byte.

    cargo build --profile test-release -p rdmalab --example scenario_run
    python3 bench/pfc_identity.py --old OLD/scenario_run --new target/test-release/examples/scenario_run
    python3 bench/pfc_identity.py --old A --new B --stop-time 0.5ms    # quicker: the first 0.5 ms
    python3 bench/pfc_identity.py --old A --new B --stop-time none     # to the end (46 M events)

The quick scenario stops at 2 ms (26 million events, some 22,000 PAUSE frames); `--stop-time`
sets another end (`none`: when every flow is done).

`bench/identity.py` does the same for the reference's S1 and S2 and for one small scenario per
mechanism; neither of those pauses for long. Exit status 1 when any output differs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "bench" / "scenarios" / "fat_tree_pfc_quick.toml"
#: What of `scenario_run`'s output measures the machine, not the run.
TIMING = [re.compile(p, re.M) for p in (r"\(\d+\.\d+ M/s\)", r'"(run_s|setup_s)": [0-9.e-]+',
                                        r"; CPU s per thread.*$", r"^CPU s: .*$")]
#: Thread settings: the reference's order (none), the origin order on one thread, two threads.
MODES = ((), ("--threads", "1"), ("--threads", "2"))


def scenario_text(path: Path, stop_time: str) -> str:
    """The scenario, its `stop_time` replaced (`none`: removed; empty: kept)."""
    text = path.read_text()
    if not stop_time:
        return text
    lines = [line for line in text.splitlines() if not line.startswith("stop_time")]
    head = "" if stop_time == "none" else f'stop_time = "{stop_time}"\n'
    return head + "\n".join(lines) + "\n"


def run(binary: str, toml: Path, mode: tuple[str, ...], tmp: Path, tag: str) -> tuple[str, str]:
    """(printed output without timings, digest of the dumped results) of one run."""
    dump = tmp / f"{tag}.dump"
    env = {**os.environ, "RDMALAB_DUMP": str(dump)}
    out = subprocess.run([binary, str(toml), *mode], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(mode)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    text = out.stdout
    for p in TIMING:
        text = p.sub("", text)
    return text, hashlib.sha256(dump.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the old scenario_run binary")
    ap.add_argument("--new", required=True, help="the new scenario_run binary")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--stop-time", default="", help="simulated time to run (`none`: to the end; default: the scenario's)")
    args = ap.parse_args()
    differ = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        toml = tmp / "scenario.toml"
        toml.write_text(scenario_text(args.scenario, args.stop_time))
        for mode in MODES:
            name = " ".join(mode) or "reference order"
            old = run(args.old, toml, mode, tmp, "old")
            new = run(args.new, toml, mode, tmp, "new")
            events = re.search(r"^events (\d+)", new[0], re.M)
            same = old == new
            print(f"{name:>12}: {'same' if same else 'DIFFERENT'} ({events.group(1) if events else '?'} events, "
                  f"results {new[1][:12]})")
            if not same:
                differ.append(name)
    if differ:
        print(f"outputs differ: {', '.join(differ)}")
        return 1
    print("all outputs identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
