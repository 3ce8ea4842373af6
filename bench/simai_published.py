#!/usr/bin/env python3
"""rdmalab's simai dialect against the allreduce bus bandwidths SimAI's authors published.

SimAI's tutorial (aliyun/SimAI at cef83f9, `docs/Tutorial.md`, "RING VS NVLS", lines 270-303)
runs a workload of six tensor-parallel allreduces, 16 MiB to 512 MiB, over groups of 8 GPUs
(`model_parallel_NPU_group: 8`, `all_gpus: 32`) on the topology its generator writes with
`gen_Topo_Template.py --ro -g 32 -gt H100 -bw 400Gbps -nvbw 1440Gbps`, with `AS_SEND_LAT=2`
and `AS_PXN_ENABLE=1` (which changes nothing in rings inside a server), and publishes the busbw of each ("RING" column). A group of 8 is one server, so its traffic
stays on that server's NVLink: the four groups share no link and each runs as it would alone.
The cut here runs one of them on the published topology: `tests/data/simai/ring32/` holds
SimAI's generator's output for those options, SimAI's own `SimAI.conf` with its output paths
made local, and the workload with `all_gpus: 8` (GPUs 0-7, server 0). The topology stays the
tutorial's 32-GPU one: SimAI's window and base RTT are the largest over all GPU pairs, the
servers' NIC paths among them (on a one-server topology every pair is an NVLink pair and the
window 36 kB). `--one-server` runs the same workload on the generator's file for 8 GPUs
(`-g 8`, the other options the tutorial's), also in the folder: with SimAI's eight channels
per ring, a link's eight QPs hold more than its bandwidth-delay product on either topology.

Runs it with `rdmalab hpcc --dialect simai` and prints, per allreduce, the time from its issue
(its first flow's post less the send latency) to its last byte, the busbw NCCL-tests define
(size × 2(n−1)/n over that time) in GiB/s, the published value and their ratio.

`--cause` is the cause script of the unit: it prints, per size, the time each published busbw
implies and the fixed cost beyond the NVLink's rate (1,440 Gb/s) it leaves, reading "GB/s" as
2^30 bytes and as 10^9 bytes per second. Only the first reading leaves the same cost (about
30 µs: 14 ring steps of 2 µs send latency, plus the steps' propagation) at every size.

    .venv/bin/python bench/simai_published.py            # the six allreduces
    .venv/bin/python bench/simai_published.py --sizes 2  # the first two only (the test's cut)
    .venv/bin/python bench/simai_published.py --cause    # no run: what the published numbers imply
    .venv/bin/python bench/simai_published.py --one-server --sizes 2  # on a topology of server 0 alone
    .venv/bin/python bench/simai_published.py --nvls     # the six as NVLS allreduces ("NVLS" column)

`--nvls` runs the tutorial's NVLS case: the topology of `gen_Topo_Template.py --ro -g 32 -gt H100
-bw 400Gbps -nvbw 1360Gbps` (`tests/data/simai/nvls32/`, the generator's file for those options),
`AS_SEND_LAT=12` and `AS_NVLS_ENABLE=1`, as the tutorial's NVLS command line gives them, and
compares with its "NVLS" column.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "simai" / "ring32"
TOPOLOGY = "Rail_Opti_SingleToR_32g_8gps_400Gbps_H100"
#: The generator's file for 8 GPUs, one server (`--one-server`).
ONE_SERVER = "Rail_Opti_SingleToR_8g_8gps_400Gbps_H100"
WORKLOAD = "microAllReduce_8g.txt"
#: The NVLS case's topology (`-nvbw 1360Gbps`), same name as SimAI's generator gives it.
NVLS_DATA = REPO / "tests" / "data" / "simai" / "nvls32"
#: SimAI's published busbw of the ring allreduce per size in MiB (docs/Tutorial.md lines 298-303).
PUBLISHED = {16: 141.84, 32: 153.68, 64: 160.60, 128: 163.85, 256: 165.72, 512: 166.68}
#: SimAI's published busbw of the NVLS allreduce per size in MiB (the "NVLS" column).
PUBLISHED_NVLS = {16: 148.88, 32: 178.04, 64: 197.38, 128: 208.70, 256: 214.87, 512: 218.09}
RANKS = 8
SEND_LAT_US = 2
#: The tutorial's NVLS command line: `AS_SEND_LAT=12 AS_NVLS_ENABLE=1`.
NVLS_SEND_LAT_US = 12
NVLINK_BPS = 1440e9


def busbw_gib(size: int, t_ns: float, n: int = RANKS) -> float:
    """NCCL-tests' bus bandwidth of an allreduce of `size` bytes over `n` ranks, GiB/s."""
    return size * 2 * (n - 1) / n / (t_ns * 1e-9) / 2**30


def _set_env(values: dict[str, str | None]) -> None:
    """Sets each environment variable of `values`, and removes those it gives as None."""
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def run(sizes: int | None = None, topology: str = TOPOLOGY, nvls: bool = False
        ) -> tuple[list[tuple[int, float]], float]:
    """Runs the cut (its first `sizes` allreduces) on `topology` in a scratch copy, as NVLS
    allreduces with `nvls` (the NVLS case's topology and send latency); (size, time ns) per
    allreduce in issue order, and the wall time."""
    # Lazy on purpose: the extension only when a run is asked for (`--help` needs none).
    from rdmalab.runner import run_hpcc
    lat = NVLS_SEND_LAT_US if nvls else SEND_LAT_US
    # The tutorial's command lines: `AS_SEND_LAT=2 AS_PXN_ENABLE=1` for the ring,
    # `AS_SEND_LAT=12 AS_NVLS_ENABLE=1` for NVLS.
    env = {"AS_SEND_LAT": str(lat), "AS_NVLS_ENABLE": "1" if nvls else None, "AS_PXN_ENABLE": None if nvls else "1"}
    with tempfile.TemporaryDirectory(prefix="simai-ring32-") as tmp:
        work = Path(tmp)
        shutil.copy(DATA / "SimAI.conf", work / "SimAI.conf")
        shutil.copy((NVLS_DATA if nvls else DATA) / topology, work / topology)
        lines = (DATA / WORKLOAD).read_text().splitlines()
        if sizes is not None:
            lines = [lines[0], str(sizes)] + lines[2:2 + sizes]
        (work / WORKLOAD).write_text("\n".join(lines) + "\n")
        (work / "out").mkdir()
        cwd, saved = os.getcwd(), {k: os.environ.get(k) for k in env}
        os.chdir(work)
        _set_env(env)
        try:
            t0 = time.perf_counter()
            res, _, _ = run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=topology,
                                 workload=WORKLOAD)
            wall = time.perf_counter() - t0
        finally:
            os.chdir(cwd)
            _set_env(saved)
    rows = res.collectives.sort("start_ns")
    if nvls:
        assert set(rows["algorithm"]) == {"nvls"}, rows["algorithm"]
    out = [(int(r["size"]), r["end_ns"] - r["start_ns"] + lat * 1000) for r in rows.iter_rows(named=True)]
    return out, wall


def cause() -> None:
    """The fixed cost each published busbw implies, under each reading of "GB/s"."""
    print(f"{'size':>6} {'t (GiB/s) us':>13} {'fixed us':>9} {'t (GB/s) us':>12} {'fixed us':>9}")
    for mib, b in PUBLISHED.items():
        s = mib * 2**20
        ideal = s * 2 * (RANKS - 1) / RANKS * 8 / NVLINK_BPS * 1e6
        t_gib = s * 2 * (RANKS - 1) / RANKS / (b * 2**30) * 1e6
        t_gb = s * 2 * (RANKS - 1) / RANKS / (b * 1e9) * 1e6
        print(f"{mib:>4}Mi {t_gib:>13.1f} {t_gib - ideal:>9.1f} {t_gb:>12.1f} {t_gb - ideal:>9.1f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, default=None, help="run only the first N allreduces")
    p.add_argument("--cause", action="store_true", help="print what the published numbers imply; no run")
    p.add_argument("--one-server", action="store_true", help="run on the topology of one server (8 GPUs)")
    p.add_argument("--nvls", action="store_true", help="the NVLS case (AS_NVLS_ENABLE=1, -nvbw 1360Gbps, AS_SEND_LAT=12)")
    a = p.parse_args(argv)
    if a.nvls and a.one_server:
        p.error("--nvls runs on the NVLS case's 32-GPU topology only")
    if a.cause:
        cause()
        return 0
    rows, wall = run(a.sizes, ONE_SERVER if a.one_server else TOPOLOGY, nvls=a.nvls)
    published = PUBLISHED_NVLS if a.nvls else PUBLISHED
    print(f"{'size':>6} {'time us':>9} {'busbw GiB/s':>12} {'SimAI':>8} {'ratio':>6}")
    worst = 0.0
    for size, t in rows:
        b = busbw_gib(size, t)
        pub = published[size // 2**20]
        worst = max(worst, abs(b / pub - 1))
        print(f"{size // 2**20:>4}Mi {t / 1000:>9.1f} {b:>12.2f} {pub:>8.2f} {b / pub:>6.3f}")
    print(f"\nlargest difference {worst:.1%}; wall {wall:.1f} s (loaded machine)")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
