"""Per-tenant throughput of the runs of a sweep (the CC-attack paper's attacks, docs/attacks.md): what the
attack comparisons and the `share` figure both read.

A run's shares are measured over the last three quarters of its run time, [T/4, T) with T
its stop time (or, for a run to completion, the end of its last delivery): the warm-up (slow
start of the victim's rate, first RTTs at line rate) is left out, as the paper's Fig. 3 window
[1, 4) ms of a 4 ms run does.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from rdmalab import _core
from rdmalab.experiments.case_names import case_name
from rdmalab.experiments.store import Store

#: Payload over wire bytes of a full data packet (1000 B payload, 48 B headers).
PAYLOAD_FRACTION = 1000 / 1048


def stop_ps(scenario: dict[str, Any]) -> int:
    """The run's stop time in ps (`stop_time`, default 4 ms)."""
    return _core.parse_time_ps(scenario.get("stop_time", "4ms"))


def run_shares(store: Store, runs: pl.DataFrame) -> pl.DataFrame:
    """Per run and tenant: payload delivered in [T/4, T), Gb/s and share of all tenants.
    Columns: run_id, tenant, bytes, gbps, share."""
    bins = store.table("tenant_bins", params=False)
    rows = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        b = bins.filter(pl.col("run_id") == r["run_id"]) if bins.height else bins
        scenario = json.loads(r["scenario"])
        if "stop_time" in scenario or not b.height:
            stop = stop_ps(scenario)
        else:  # a run to completion: up to its last delivery
            stop = (int(b["bin"].max()) + 1) * 1_000_000
        lo = stop // 4
        if b.height:
            t = b["bin"].to_numpy().astype(np.uint64) * np.uint64(1_000_000)
            b = b.filter(pl.Series((t >= lo) & (t < stop)))
        per = {} if not b.height else dict(b.group_by("tenant_name").agg(pl.col("bytes").sum()).iter_rows())
        total = sum(per.values())
        for name, n in sorted(per.items()):
            rows.append({"run_id": r["run_id"], "tenant": name, "bytes": int(n),
                         "gbps": n * 8 / ((stop - lo) / 1e12) / 1e9, "share": n / total if total else 0.0})
    return pl.DataFrame(rows, schema={"run_id": pl.Utf8, "tenant": pl.Utf8, "bytes": pl.Int64,
                                      "gbps": pl.Float64, "share": pl.Float64})


def share_of(shares: pl.DataFrame, run_id: str, tenant: str, col: str = "share") -> float:
    """One run's value of `col` for `tenant` (0 when it delivered nothing)."""
    x = shares.filter((pl.col("run_id") == run_id) & (pl.col("tenant") == tenant))[col]
    return float(x[0]) if len(x) else 0.0


def run_label(run: dict[str, Any], dims: list[str]) -> str:
    parts = []
    for d in dims:
        v = run.get(d)
        if d == "traffic" or (isinstance(v, str) and v.startswith("[")):
            v = case_name(json.loads(v) if isinstance(v, str) else v)
        parts.append(f"{d.split('.')[-1]}={v}")
    return "\n".join(parts)

