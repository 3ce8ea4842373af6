"""Why collectives-simai's tensor-parallel (TP) communications take well over their idle
closed form when a TP pair sits inside one server (SimAI's placement; docs/collectives.md,
"collectives-simai"), with the run that removes the suspected cause.

`python -m rdmalab.experiments.causes.collectives_simai_causes [nvlink]` runs the quick
iteration (16 GPUs: 4 servers of 4, 2 leaves per rail, 2 spines, 400 Gb/s and 1 µs links,
DCQCN; `repro/collectives_simai_quick.toml`) in the server placement, and prints from
`res.collectives` (one row per communication) the summed spans of the TP and data-parallel
(DP) communications, the iteration's end, and the bytes the GPUs' rail NICs sent.

- `nvlink`: suspected cause, the pair's two GPUs are on two rails, so every TP byte crosses
  a spine, where ECMP puts several pairs' flows on one link. The runs join each server's GPUs
  by NVLink (`nvlink_rate`, `nvlink_latency`), which the TP bytes then take. No paper gives
  the rate and latency for this cut-down workload: the choice is 3.6 Tb/s (an H100 SXM's
  NVLink 4, 900 GB/s both ways together, by NVIDIA's H100 datasheet) at 1 µs (the fabric's
  link delay, no NVLink latency being published there), and the rows show how the result
  moves with 400 Gb/s and 900 Gb/s, and with 250 ns.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.scenario import Scenario

QUICK = Path(__file__).resolve().parent.parent / "repro" / "collectives_simai_quick.toml"
#: The repro's server placement: rank 2d + p on GPU 2p + d div 4 of server d mod 4.
SERVER = [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
#: (label, nvlink_rate, nvlink_latency): the rail fabric alone, the choice, then its neighbours.
CASES = [("rails only", None, None), ("NVLink 3.6 Tb/s, 1 us (the choice)", "3600Gbps", "1us"),
         ("NVLink 900 Gb/s, 1 us", "900Gbps", "1us"), ("NVLink 400 Gb/s, 1 us", "400Gbps", "1us"),
         ("NVLink 3.6 Tb/s, 250 ns", "3600Gbps", "250ns")]


def scenario(rate: str | None, latency: str | None) -> Scenario:
    """The quick sweep's base scenario in the server placement, with NVLink if given."""
    sc = Scenario.from_toml(QUICK)
    spec = {k: v for k, v in sc.spec["base"].items()}
    spec["traffic"] = [dict(spec["traffic"][0], ranks=SERVER)]
    if rate is not None:
        spec["topology"] = dict(spec["topology"], nvlink_rate=rate, nvlink_latency=latency)
    return Scenario(spec, QUICK)


def nvlink() -> None:
    for label, rate, latency in CASES:
        r = run(scenario(rate, latency))
        c = r.collectives.with_columns(span=pl.col("end_ns") - pl.col("start_ns"))
        tp = c.filter(pl.col("ranks") == 2)["span"].sum()
        dp = c.filter(pl.col("ranks") == 8)["span"].sum()
        hosts = r.ports.filter((pl.col("node_kind") == "host") & (pl.col("port") == 0))
        print(f"| {label} | {tp / 1e3:.1f} | {dp / 1e3:.1f} | {c['end_ns'].max() / 1e6:.3f} | "
              f"{hosts['tx_bytes'].sum() / 2**20:.1f} | {r.wall_s:.1f} |")


INVESTIGATION = Investigation(
    "collectives_simai_causes", {"nvlink": nvlink}, ["nvlink"],
    header="| run | TP spans µs (sum) | DP spans µs (sum) | iteration ms | rail NIC MiB sent | wall s |\n"
           "|---|---:|---:|---:|---:|---:|")

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
