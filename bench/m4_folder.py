#!/usr/bin/env python3
"""A folder of m4 scenarios through one `rdmalab hpcc` command, each checked against m4's published FCTs.

Builds `--count` scenarios (default 20) in m4's layout, one folder each
(`NAME/config_topology_flows.txt`, `topology.txt`, `flows.txt`), from the three published cuts
in `tests/data/m4/` (tests/data/m4/demo2/README.md): each scenario is one cut's config and
topology, unchanged, with the first `k` of its flows, `k` spread over the cut. Then runs the
whole folder with one command, `rdmalab hpcc FOLDER` (one progress bar, a status line per
scenario), and checks each scenario's FCT file against the published one: a published flow
that finished before the first flow left out starts cannot have been changed by the flows
left out, so for those the scenario must give the fork's FCT per size bucket as the full cut
does. Prints, per scenario, its flows, the published flows it can be checked on, the median
of rdmalab's FCT over the fork's over those flows, and how many finish at the fork's
nanosecond.

    .venv/bin/python bench/m4_folder.py                   # 20 scenarios, local processes
    .venv/bin/python bench/m4_folder.py --count 6 --workers 2 --keep /tmp/m4-folder
    .venv/bin/python bench/m4_folder.py --executor ray    # the same on Ray

Nothing is fetched: the published files are in the repository.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "m4"
CUTS = ("demo0", "demo2", "demo4")
FCT_NAME = "fct_topology_flows.txt"


def read_fct(path: Path) -> dict[int, tuple[int, int, int, int]]:
    """id -> (size, start_ns, fct_ns, standalone_ns) of an m4 FCT file."""
    out = {}
    for line in path.read_text().split("\n"):
        t = line.split()
        if t:
            out[int(t[0])] = (int(t[5]), int(t[6]), int(t[7]), int(t[8]))
    return out


def flow_lines(cut: str) -> list[str]:
    """The cut's flow lines (`id src dst pg dport size start`), without the count line."""
    lines = (DATA / cut / "flows.txt").read_text().split("\n")
    return [ln for ln in lines[1:] if ln.strip()]


def start_ns(line: str) -> int:
    """A flow line's start time in ns, from its decimal seconds, exactly."""
    whole, _, frac = line.split()[6].partition(".")
    return int(whole) * 1_000_000_000 + int((frac + "0" * 9)[:9])


def build(folder: Path, count: int) -> list[tuple[str, str, int]]:
    """Writes `count` scenarios under `folder`; (name, cut, flows) of each."""
    made = []
    for i in range(count):
        cut = CUTS[i % len(CUTS)]
        lines = flow_lines(cut)
        rank, of = i // len(CUTS), (count - i % len(CUTS) + len(CUTS) - 1) // len(CUTS)
        # k from a tenth of the cut up to all of it, evenly over this cut's scenarios.
        k = max(10, round(len(lines) * (1 + 9 * (rank + 1) / of) / 10))
        k = min(k, len(lines))
        name = f"s{i:02d}_{cut}_{k}"
        d = folder / name
        d.mkdir(parents=True)
        (d / "topology.txt").write_text((DATA / cut / "topology.txt").read_text())
        (d / "flows.txt").write_text(f"{k}\n" + "\n".join(lines[:k]) + "\n")
        (d / "config_topology_flows.txt").write_text((DATA / cut / "config.txt").read_text())
        made.append((name, cut, k))
    return made


def check(folder: Path, name: str, cut: str, k: int) -> dict:
    """The scenario's FCTs against the published ones it can be checked on."""
    lines = flow_lines(cut)
    fork = read_fct(DATA / cut / "fct_published_cut.txt")
    # The first flow left out starts here; a published flow done before it is unaffected.
    horizon = start_ns(lines[k]) if k < len(lines) else None
    ids = [i for i, (_, s, f, _) in fork.items() if horizon is None or s + f < horizon]
    ours = read_fct(folder / name / FCT_NAME)
    missing = [i for i in ids if i not in ours]
    ratio = statistics.median(ours[i][2] / fork[i][2] for i in ids) if ids and not missing else None
    exact = sum(ours[i][2] == fork[i][2] for i in ids if i in ours)
    return {"name": name, "flows": k, "checked": len(ids), "missing": len(missing), "ratio": ratio, "exact": exact}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=20, help="scenarios to build (default 20)")
    ap.add_argument("--workers", type=int, help="local processes (default: one per core)")
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    ap.add_argument("--keep", type=Path, help="build the folder here (empty or absent) and keep it")
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("--count must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "m4-scenarios"
        if folder.exists() and any(folder.iterdir()):
            ap.error(f"{folder} is not empty")
        made = build(folder, args.count)
        cmd = [sys.executable, "-m", "rdmalab.cli", "hpcc", str(folder), "--executor", args.executor]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        wall = time.perf_counter() - t0
        print(f"\n{len(made)} scenarios in {wall:.1f} s through one command (exit {rc})\n")
        print(f"{'scenario':>18} {'flows':>5} {'checked':>7} {'median FCT / fork':>17} {'at the ns':>9}")
        ok = rc == 0
        for name, cut, k in made:
            r = check(folder, name, cut, k)
            ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
            print(f"{r['name']:>18} {r['flows']:>5} {r['checked']:>7} {ratio:>17} {r['exact']:>9}")
            ok &= r["missing"] == 0 and (r["ratio"] is None or abs(r["ratio"] - 1) <= 0.10)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
