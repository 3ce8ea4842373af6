#!/usr/bin/env python3
"""rdmalab's m4 dialect against the FCT files m4's authors published for the same inputs.

Runs `tests/data/m4/NAME/config.txt` (netiken/parsimon-eval, `expts/fig_8/eval_test_demo/N`,
cut at a start time: tests/data/m4/demo2/README.md) with `rdmalab hpcc` in a scratch copy of
its folder, the dialect detected from the keys, joins rdmalab's FCT file with the published one
by flow id, and prints per size bucket the median FCT of each and their ratio, the median
slowdowns (FCT over the fork's standalone FCT), and how many flows match to the nanosecond.
Draws both slowdown distributions to docs/img/m4-NAME-slowdown.{png,pdf}.

    .venv/bin/python bench/m4_published.py                  # demo2 (TIMELY) and demo4 (DCTCP)
    .venv/bin/python bench/m4_published.py demo4 --no-plot  # one scenario, the table only
    .venv/bin/python bench/m4_published.py --mmu both --no-plot  # the fork's buffer, and without it

`--mmu both` is the cause script of the switch buffer: it runs each cut twice, with the m4
dialect's switch buffer (the fork's ingress pool, `fabric::MmuRule::M4`) and with the
reference's buffer rules in its place (`RDMALAB_M4_MMU=reference`, everything else the
dialect's), and prints both tables and the per-bucket ratios side by side.

Nothing is fetched: the published files are in the repository.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "m4"
DEMO = DATA / "demo2"
#: The published scenarios kept (tests/data/m4/NAME) and their congestion control.
SCENARIOS = {"demo0": "DCQCN", "demo2": "TIMELY", "demo4": "DCTCP"}
BUCKETS = [(0, 1_000), (1_000, 10_000), (10_000, 100_000), (100_000, 10**12)]


def read_fct(path: Path) -> dict[int, tuple[int, int, int]]:
    """id -> (size, fct_ns, standalone_ns) of an m4 FCT file."""
    out = {}
    for line in path.read_text().split("\n"):
        t = line.split()
        if t:
            out[int(t[0])] = (int(t[5]), int(t[7]), int(t[8]))
    return out


def run_demo(folder: Path = DEMO, mmu: str = "m4") -> tuple[dict[int, tuple[int, int, int]], float]:
    """Runs the demo's config in a scratch copy of its folder; rdmalab's FCT lines and the wall time.

    `mmu`: "m4" (the dialect's switch buffer) or "reference" (the reference's rules instead).
    """
    # Lazy on purpose: the extension only when a run is asked for (`--help` needs none).
    from rdmalab.runner import run_hpcc
    if mmu not in ("m4", "reference"):
        raise ValueError(f"mmu must be 'm4' or 'reference', not {mmu!r}")
    saved = os.environ.pop("RDMALAB_M4_MMU", None)
    if mmu == "reference":
        os.environ["RDMALAB_M4_MMU"] = "reference"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "demo"
        shutil.copytree(folder, work)
        old = Path.cwd()
        try:
            os.chdir(work)
            t0 = time.perf_counter()
            _, fct, _ = run_hpcc("config.txt", progress=False)
            wall = time.perf_counter() - t0
            return read_fct(work / fct), wall
        finally:
            os.chdir(old)
            os.environ.pop("RDMALAB_M4_MMU", None)
            if saved is not None:
                os.environ["RDMALAB_M4_MMU"] = saved


def compare(ours: dict, fork: dict) -> list[dict]:
    """Per size bucket: flows, the fork's and rdmalab's median FCT and their ratio, median slowdowns."""
    rows = []
    for lo, hi in BUCKETS:
        ids = [i for i, (size, _, _) in fork.items() if lo <= size < hi]
        if not ids:
            continue
        missing = [i for i in ids if i not in ours]
        if missing:
            raise SystemExit(f"rdmalab wrote no line for flows {missing[:5]} of the published file")
        fork_med = statistics.median(fork[i][1] for i in ids)
        ours_med = statistics.median(ours[i][1] for i in ids)
        rows.append({
            "bucket": f"[{lo:,}, {hi:,}) B" if hi < 10**12 else f">= {lo:,} B",
            "flows": len(ids),
            "fork_median_ns": fork_med,
            "rdmalab_median_ns": ours_med,
            "ratio": ours_med / fork_med,
            "fork_slowdown": statistics.median(fork[i][1] / fork[i][2] for i in ids),
            "rdmalab_slowdown": statistics.median(ours[i][1] / ours[i][2] for i in ids),
            "exact": sum(ours[i][1] == fork[i][1] for i in ids),
            "standalone_equal": sum(ours[i][2] == fork[i][2] for i in ids),
        })
    return rows


def plot(ours: dict, fork: dict, out: Path, title: str) -> list[Path]:
    from rdmalab import plots  # lazy: matplotlib only when drawing
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for name, data, style in (("m4's ns-3 (published)", fork, "-"), ("rdmalab --dialect m4", ours, "--")):
        s = sorted(data[i][1] / data[i][2] for i in fork)
        ax.plot(s, [(k + 1) / len(s) for k in range(len(s))], style, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / the fork's standalone FCT)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return plots.save_figure(fig, out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help=f"the scenarios, of {', '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--no-plot", action="store_true", help="print the tables only")
    ap.add_argument("--mmu", choices=["m4", "reference", "both"], default="m4",
                    help="the switch buffer: the fork's (m4, the dialect's), the reference's, or both "
                         "side by side (the cause script of the buffer's part)")
    args = ap.parse_args(argv)
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    ok = True
    for name in args.names or list(SCENARIOS):
        fork = read_fct(DATA / name / "fct_published_cut.txt")
        if args.mmu == "both":
            ratios = {}
            for mmu in ("reference", "m4"):
                ours, wall = run_demo(DATA / name, mmu)
                rows = compare(ours, fork)
                print_table(f"{name} ({SCENARIOS[name]}), {mmu} switch buffer", rows, wall, len(fork))
                ratios[mmu] = rows
            print(f"\n{name}: median FCT over the fork's, per bucket")
            print(f"{'bucket':>22} {'reference buffer':>16} {'m4 buffer':>10}")
            for a, b in zip(ratios["reference"], ratios["m4"]):
                print(f"{a['bucket']:>22} {a['ratio']:>16.3f} {b['ratio']:>10.3f}")
            ok &= all(abs(r["ratio"] - 1) <= 0.10 for r in ratios["m4"])
            continue
        ours, wall = run_demo(DATA / name, args.mmu)
        rows = compare(ours, fork)
        print_table(f"{name} ({SCENARIOS[name]})", rows, wall, len(fork))
        ok &= all(abs(r["ratio"] - 1) <= 0.10 for r in rows)
        if not args.no_plot:
            title = f"eval_test_demo/{name[4:]}, first {len(fork)} flows to finish ({SCENARIOS[name]})"
            for p in plot(ours, fork, REPO / "docs" / "img" / f"m4-{name}-slowdown", title):
                print(f"wrote {p.relative_to(REPO)}")
    return 0 if ok else 1


def print_table(title: str, rows: list[dict], wall: float, flows: int) -> None:
    print(f"\n{title}: rdmalab ran the cut in {wall:.2f} s; {flows} published flows\n")
    print(f"{'bucket':>22} {'flows':>5} {'fork med ns':>12} {'rdmalab':>12} {'ratio':>6} "
          f"{'slowdown fork':>13} {'rdmalab':>8} {'exact':>6} {'standalone =':>12}")
    for r in rows:
        print(f"{r['bucket']:>22} {r['flows']:>5} {r['fork_median_ns']:>12,.0f} {r['rdmalab_median_ns']:>12,.0f} "
              f"{r['ratio']:>6.3f} {r['fork_slowdown']:>13.2f} {r['rdmalab_slowdown']:>8.2f} {r['exact']:>6} "
              f"{r['standalone_equal']:>12}")


if __name__ == "__main__":
    sys.exit(main())
