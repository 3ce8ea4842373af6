"""The mechanisms' own tables (the engine's `stats::table::Table`, emitted by
`Mechanisms::tables`): one generic path from the engine to `res.<name>` and a store's
`<name>.parquet`. The bindings hand every table as `raw["tables"][name]`, a dict of columns;
each becomes a DataFrame whose `*_ps` columns are read as `*_ns` (over 1000).

A table listed in `MECHANISM_TABLES` (the engine's `sim::mech::TABLE_SCHEMAS`, read through
`rdmalab._core.table_schemas()`) has a fixed schema and an empty frame when the run kept
none (so `res.balance` exists for every run); any other table the engine emits is taken as
it comes. Adding a mechanism's table edits nothing here: its schema lives beside the
mechanism in the engine.

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

from rdmalab import _core

_KINDS = {"u16": pl.UInt16, "u32": pl.UInt32, "u64": pl.UInt64, "f64": pl.Float64, "ps": pl.Float64}


def _schemas() -> dict[str, dict[str, Any]]:
    """The engine's table schemas (`sim::mech::TABLE_SCHEMAS`) as polars schemas: a `ps`
    column `<base>_ps` becomes `<base>_ns`, a float."""
    return {name: {(c[:-3] + "_ns" if kind == "ps" else c): _KINDS[kind] for c, kind in cols}
            for name, cols in _core.table_schemas()}


#: Each known table's columns, in order, with their types, as the engine declares them next
#: to the mechanism that emits the table (each table's meaning is written there). `*_ns`
#: columns come from the engine's `*_ps`. The first column tells whether the table has rows.
MECHANISM_TABLES: dict[str, dict[str, Any]] = _schemas()


def ps_columns_frame(raw: dict[str, Any], schema: dict[str, Any]) -> pl.DataFrame:
    """The engine's columns as a DataFrame with `schema`: a `*_ns` column the engine sent in
    ps (`*_ps`) is over 1000, the others are taken as they are."""
    if not raw or len(raw.get(next(iter(schema)), [])) == 0:
        return pl.DataFrame(schema=schema)
    cols = {k: raw[k[:-3] + "_ps"] / 1000.0 if k.endswith("_ns") and k not in raw else raw[k] for k in schema}
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
