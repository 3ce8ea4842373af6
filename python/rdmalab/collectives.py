"""The collectives table (`[[collective]]`, docs/collectives.md): one row per iteration of
each collective, with NCCL-tests' algorithm and bus bandwidths, and its lines of the
summary. A leaf: it imports nothing of the package."""

from __future__ import annotations

from typing import Any

import polars as pl

#: Columns of `Results.collectives`. Times in ns (absolute; `end_ns` NaN while unfinished);
#: bandwidths in Gbit/s (nccl-tests prints GB/s: divide by 8); `slowest_rank` is the host
#: done last (-1 while unfinished); `step_spread_ns` the largest gap between a step's first and
#: last receive completion.
COLLECTIVE_COLUMNS = {"name": pl.Utf8, "kind": pl.Utf8, "algorithm": pl.Utf8, "ranks": pl.UInt32,
                      "size": pl.UInt64, "start_ns": pl.Float64, "end_ns": pl.Float64,
                      "algbw_gbps": pl.Float64, "busbw_gbps": pl.Float64, "slowest_rank": pl.Int64,
                      "steps": pl.UInt32, "step_spread_ns": pl.Float64}


#: Columns of `Results.collective_steps`: per iteration (`name`) and step (a depth of its
#: schedule, 0 first), the step's first and last receive completion in ns (absolute, as
#: `start_ns`; NaN while no rank has received that step).
COLLECTIVE_STEP_COLUMNS = {"name": pl.Utf8, "step": pl.UInt32, "first_ns": pl.Float64, "last_ns": pl.Float64}


def collective_steps_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    """The engine's per-step completion times as a DataFrame (empty without `[[collective]]`)."""
    if not raw or len(raw.get("name", [])) == 0:
        return pl.DataFrame(schema=COLLECTIVE_STEP_COLUMNS)
    cols = {k: raw[k[:-3] + "_ps"] / 1000.0 if k.endswith("_ns") else raw[k] for k in COLLECTIVE_STEP_COLUMNS}
    return pl.DataFrame(cols).cast(COLLECTIVE_STEP_COLUMNS)


def collectives_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    """The engine's collective records as a DataFrame (empty without `[[collective]]`)."""
    if not raw or len(raw.get("name", [])) == 0:
        return pl.DataFrame(schema=COLLECTIVE_COLUMNS)
    cols = {k: raw[k[:-3] + "_ps"] / 1000.0 if k.endswith("_ns") else raw[k] for k in COLLECTIVE_COLUMNS}
    return pl.DataFrame(cols).cast(COLLECTIVE_COLUMNS)


def collective_lines(df: pl.DataFrame) -> list[str]:
    """The summary's collectives block (first 20 rows); none without collectives."""
    if not df.height:
        return []
    # Widths fit a 1 GiB size and 1,024 ranks; the name column grows with the longest name
    # (SimAI's `layer.phase#k` run past 16), so columns never run together.
    rows = df.head(20)
    w = max(16, 1 + max(len(n) for n in rows["name"]))
    lines = ["", f"{'collective':<{w}}{'kind':<16}{'algorithm':<20}{'ranks':>6}{'size':>15}{'time us':>11}"
             f"{'algbw':>9}{'busbw':>9}   (Gbit/s, NCCL-tests' definitions; first 20)"]
    for r in rows.iter_rows(named=True):
        took = r["end_ns"] - r["start_ns"]
        lines.append(f"{r['name']:<{w}}{r['kind']:<16}{r['algorithm']:<20}{r['ranks']:>6}{r['size']:>15,}"
                     f"{took / 1e3:>11.3f}{r['algbw_gbps']:>9.2f}{r['busbw_gbps']:>9.2f}")
    return lines
