#!/usr/bin/env python3
"""The 1,024-GPU ring AllReduce (bench/scenarios/ring_allreduce_1k.toml) written as Chakra
traces by rdmalab's writer and run again from them: the collective's time from the traces
against the `[[collective]]` run it came from (docs/chakra.md, "Writing traces"; within 10 %).

    python3 bench/chakra_1k.py                      # the benchmark itself: 1,024 ranks, 1 GiB
    python3 bench/chakra_1k.py --ranks 64 --size 4MiB --threads 1

With `--ranks` below 1,024 the ring runs over the first hosts of the smallest fat tree that
holds them (k even, k³/4 hosts), the rest of the scenario unchanged. Prints one JSON line:
both times, their ratio, and each run's wall time and events (loaded machines: say so).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import rdmalab
from rdmalab import Scenario, chakra

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "ring_allreduce_1k.toml"


def scenario(ranks: int, size: str | None) -> Scenario:
    """The benchmark's scenario, cut to `ranks` hosts and `size` bytes when asked."""
    s = Scenario.from_toml(SCENARIO)
    if ranks != 1024 or size is not None:
        spec = dict(s.spec)
        k = next(k for k in range(4, 64, 2) if k ** 3 // 4 >= ranks)
        spec["topology"] = dict(spec["topology"], k=k)
        c = dict(spec["collective"][0], ranks={"hosts": f"0..{ranks - 1}"})
        if size is not None:
            c["size"] = size
        spec["collective"] = [c]
        s = Scenario(spec, SCENARIO)
    return s


def timed(s: Scenario, threads: int | None) -> tuple[rdmalab.Results, float]:
    t0 = time.perf_counter()
    res = rdmalab.run(s, progress=False, threads=threads)
    return res, time.perf_counter() - t0


def compare(ranks: int = 1024, size: str | None = None, threads: int | None = 2, out: Path | None = None) -> dict:
    """Both runs' collective time (first post to the last rank's part done) and their ratio."""
    s = scenario(ranks, size)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = (out or Path(tmp)) / "ring"
        t0 = time.perf_counter()
        exp = chakra.export(s, prefix)
        write_s = time.perf_counter() - t0
        direct, wall_direct = timed(s, threads)
        traced, wall_traced = timed(exp.replay(s), threads)
    one = {}
    for name, res, wall in (("collective", direct, wall_direct), ("chakra", traced, wall_traced)):
        row = res.collectives.row(0, named=True)
        one[name] = {"time_us": (row["end_ns"] - row["start_ns"]) / 1e3, "busbw_gbps": row["busbw_gbps"],
                     "wall_s": round(wall, 1), "events": int(res.counters["events"])}
    return {"ranks": ranks, "size": s.spec["collective"][0]["size"], "threads": threads, "trace_files": len(exp.files),
            "write_s": round(write_s, 2), **one, "ratio": one["chakra"]["time_us"] / one["collective"]["time_us"]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=1024)
    p.add_argument("--size", default=None, help="bytes per rank (default the benchmark's 1GiB)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=None, help="keep the traces in this folder")
    a = p.parse_args(argv)
    r = compare(a.ranks, a.size, a.threads, a.out)
    print(json.dumps(r))
    return 0 if abs(r["ratio"] - 1) <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
