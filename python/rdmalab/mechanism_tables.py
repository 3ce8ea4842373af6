"""The mechanisms' own tables (the engine's `stats::table::Table`, emitted by
`Mechanisms::tables`): one generic path from the engine to `res.<name>` and a store's
`<name>.parquet`. The bindings hand every table as `raw["tables"][name]`, a dict of columns;
each becomes a DataFrame whose `*_ps` columns are read as `*_ns` (over 1000).

A table listed in `MECHANISM_TABLES` has a fixed schema and an empty frame when the run kept
none (so `res.balance` exists for every run); any other table the engine emits is taken as
it comes. To add a mechanism's table: emit it in `sim/mech/tables.rs` and, for its empty
frame, add its schema here.

    >>> import numpy as np
    >>> col = lambda *v: np.array(v, dtype=np.uint64)
    >>> frames = mechanism_frames({"reorder": {"window_start_ps": col(0, 100_000), "switch": col(3, 3),
    ...                                        "queues": col(1, 2), "packets": col(4, 5), "bytes": col(4096, 5120)}})
    >>> frames["reorder"]["window_start_ns"].to_list(), frames["balance"].height
    ([0.0, 100.0], 0)
"""

from __future__ import annotations

from typing import Any

import polars as pl

#: Each known table's columns, in order, with their types. `*_ns` columns come from the
#: engine's `*_ps`. The first column tells whether the table has rows.
MECHANISM_TABLES: dict[str, dict[str, Any]] = {
    # Per ToR and `fabric.lb.lb_window`: its uplinks' data bytes and (max - min) / mean
    # (docs/load-balancing.md); a switch-side balancer or `[fabric.lb]`.
    "balance": {"switch": pl.UInt32, "window_start_ns": pl.Float64, "uplinks": pl.UInt16,
                "min_bytes": pl.UInt64, "max_bytes": pl.UInt64, "mean_bytes": pl.Float64,
                "imbalance": pl.Float64},
    # ConWeave: per destination ToR and `lb_window`, the most reorder queues in use and packets
    # and bytes held at once.
    "reorder": {"switch": pl.UInt32, "window_start_ns": pl.Float64, "queues": pl.UInt32,
                "packets": pl.UInt64, "bytes": pl.UInt64},
    # `[rnic] recv_queue_depth`: RNR NAKs sent per plain flow, for the flows that met one
    # (docs/physics.md, "Receive queues and RNR NAKs").
    "rnr": {"flow": pl.UInt32, "rnr_naks": pl.UInt64},
}


def ps_columns_frame(raw: dict[str, Any], schema: dict[str, Any]) -> pl.DataFrame:
    """The engine's columns as a DataFrame with `schema`: every `*_ns` column is the engine's
    `*_ps` column over 1000, the others are taken as they are."""
    if not raw or len(raw.get(next(iter(schema)), [])) == 0:
        return pl.DataFrame(schema=schema)
    cols = {k: raw[k[:-3] + "_ps"] / 1000.0 if k.endswith("_ns") else raw[k] for k in schema}
    return pl.DataFrame(cols).cast(schema)


def _unknown_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """A table with no schema here: its columns as they come, `*_ps` read as `*_ns`."""
    return pl.DataFrame({(k[:-3] + "_ns" if k.endswith("_ps") else k): (v / 1000.0 if k.endswith("_ps") else v)
                         for k, v in raw.items()})


def mechanism_frames(raw: dict[str, dict[str, Any]] | None) -> dict[str, pl.DataFrame]:
    """Every mechanism table of a run by name: the known ones always (empty when the run kept
    none), then any other the engine emitted."""
    raw = raw or {}
    out = {name: ps_columns_frame(raw.get(name, {}), schema) for name, schema in MECHANISM_TABLES.items()}
    for name in sorted(set(raw) - set(MECHANISM_TABLES)):
        out[name] = _unknown_frame(raw[name])
    return out
