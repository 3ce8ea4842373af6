"""The ConWeave artifact's leaf-spine scenario through `rdmalab hpcc --dialect conweave`.

The artifact (conweave-project/conweave-ns3) commits no FCT output, so no run of the fork can
be compared flow by flow. This runs its own files: its 128-host leaf-spine
(`config/leaf_spine_128_100G_OS2.txt`, unchanged), a flow file its `traffic_gen.py` wrote
(AliStorage2019, 25 % of each 100 Gb/s NIC, the 50 % network load of its `autorun.sh`, 1 ms
of arrivals: 9,808 flows) and the configs its `run.py` writes for ECMP (`LB_MODE 0`) and
ConWeave (`LB_MODE 9`), lossless; with `--irn` also the IRN pair (`ENABLE_PFC 0`,
`ENABLE_IRN 1`). It prints, per size bucket, the median FCT and the mean and p99 slowdown
(FCT over the fork's standalone FCT, the file's last column) of each, and ConWeave's gain over
ECMP beside the best case the ConWeave paper reports (42.3 % mean, 66.8 % p99).

    .venv/bin/python bench/conweave_artifact.py [--flows N] [--irn]

`--flows N` keeps the first N flows (tests/python/test_hpcc_conweave.py runs a cut).
`--growth` is the cause script of the gap to the paper's numbers: ConWeave's gain over ECMP
for the flows that start in the first 0.125, 0.25, 0.5 and 1 ms of the file (lossless).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "tests" / "data" / "conweave" / "ls128"
FLOW = "config/L_25.00_CDF_AliStorage2019_N_128_T_1ms_B_100_flow.txt"
CONFIGS = {"ecmp": "mix/output/100000/config.txt", "conweave": "mix/output/100009/config.txt"}
BUCKETS = [(0, 4_000), (4_000, 32_000), (32_000, 256_000), (256_000, None)]
PAPER_GAIN = (42.3, 66.8)  # the paper's best case: mean and p99 FCT slowdown over ECMP, %


def bucket_name(lo: int, hi: int | None) -> str:
    return f"[{lo:,}, {hi:,}) B" if hi else f">= {lo:,} B"


def read_fct(path: Path) -> np.ndarray:
    """The fork's FCT file: sid did sport dport size start_ns fct_ns standalone_ns."""
    rows = [[int(x) for x in line.split()] for line in path.read_text().splitlines() if line.strip()]
    return np.array(rows, dtype=np.int64).reshape(-1, 8)


def prepare(work: Path, flows: int | None, irn: bool) -> None:
    """The scenario's files under `work`, the flow file cut to its first `flows` records, and
    with `irn` the configs' loss recovery switched to IRN as run.py writes it (`--pfc 0 --irn 1`)."""
    shutil.copytree(SCENARIO, work, dirs_exist_ok=True)
    if flows is not None:
        lines = (SCENARIO / FLOW).read_text().splitlines()
        body = lines[1:1 + flows]
        (work / FLOW).write_text(f"{len(body)}\n" + "\n".join(body) + "\n")
    if irn:
        for cfg in CONFIGS.values():
            p = work / cfg
            p.write_text(p.read_text().replace("ENABLE_PFC 1", "ENABLE_PFC 0").replace("ENABLE_IRN 0", "ENABLE_IRN 1"))


def run(work: Path, name: str) -> tuple[np.ndarray, float]:
    """Runs one config from the scenario's root, as the fork's `waf --run` does."""
    import warnings

    from rdmalab.runner import run_hpcc

    cwd = os.getcwd()
    os.chdir(work)
    try:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the monitors the dialect does not write
            _, fct, _ = run_hpcc(CONFIGS[name], progress=False)
        wall = time.perf_counter() - t0
        return read_fct(work / fct), wall
    finally:
        os.chdir(cwd)


def gain(ecmp: np.ndarray, cw: np.ndarray) -> tuple[float, float]:
    """ConWeave's gain over ECMP in mean and p99 slowdown, %."""
    e, c = table(ecmp)[-1], table(cw)[-1]
    return 100 * (1 - c["mean_sd"] / e["mean_sd"]), 100 * (1 - c["p99_sd"] / e["p99_sd"])


def growth() -> None:
    """The gain for the flows starting in the file's first T ms, each cut run on its own."""
    lines = (SCENARIO / FLOW).read_text().splitlines()[1:]
    print(f"{'arrivals':>9} {'flows':>6} {'gain mean %':>12} {'gain p99 %':>11}")
    for ms in (0.125, 0.25, 0.5, 1.0):
        n = sum(1 for line in lines if float(line.split()[4]) < 2.0 + ms / 1000)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "ls128"
            prepare(work, n, irn=False)
            g = gain(run(work, "ecmp")[0], run(work, "conweave")[0])
        print(f"{ms:>7} ms {n:>6} {g[0]:>12.1f} {g[1]:>11.1f}")


def table(fct: np.ndarray) -> list[dict]:
    size, f, ideal = fct[:, 4], fct[:, 6], fct[:, 7]
    out = []
    for lo, hi in BUCKETS:
        m = (size >= lo) & ((size < hi) if hi else True)
        sd = f[m] / ideal[m]
        out.append({"bucket": bucket_name(lo, hi), "flows": int(m.sum()), "median_ns": float(np.median(f[m])),
                    "mean_sd": float(sd.mean()), "p99_sd": float(np.percentile(sd, 99))})
    sd = f / ideal
    out.append({"bucket": "all", "flows": len(f), "median_ns": float(np.median(f)), "mean_sd": float(sd.mean()),
                "p99_sd": float(np.percentile(sd, 99))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=None, help="keep the first N flows")
    ap.add_argument("--irn", action="store_true", help="also the IRN pair (ENABLE_PFC 0, ENABLE_IRN 1)")
    ap.add_argument("--growth", action="store_true", help="the gain against the arrivals' length (lossless)")
    args = ap.parse_args(argv)
    if args.growth:
        growth()
        return 0
    modes = [False, True] if args.irn else [False]
    for irn in modes:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "ls128"
            prepare(work, args.flows, irn)
            res = {name: run(work, name) for name in CONFIGS}
        label = "IRN (ENABLE_PFC 0, ENABLE_IRN 1)" if irn else "lossless (ENABLE_PFC 1)"
        print(f"\n{label}: " + ", ".join(f"{n} {len(r[0]):,} flows in {r[1]:.1f} s" for n, r in res.items()))
        tabs = {n: table(r[0]) for n, r in res.items()}
        print(f"{'bucket':>22} {'flows':>6} | {'ECMP med ns':>12} {'mean':>6} {'p99':>7} | "
              f"{'ConWeave med ns':>15} {'mean':>6} {'p99':>7}")
        for e, c in zip(tabs["ecmp"], tabs["conweave"]):
            print(f"{e['bucket']:>22} {e['flows']:>6} | {e['median_ns']:>12,.0f} {e['mean_sd']:>6.2f} {e['p99_sd']:>7.2f}"
                  f" | {c['median_ns']:>15,.0f} {c['mean_sd']:>6.2f} {c['p99_sd']:>7.2f}")
        g = gain(res["ecmp"][0], res["conweave"][0])
        print(f"ConWeave's gain over ECMP: mean {g[0]:.1f} %, p99 {g[1]:.1f} % "
              f"(the paper's best case: {PAPER_GAIN[0]} %, {PAPER_GAIN[1]} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
