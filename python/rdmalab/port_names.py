"""How ports are named in every port-level table and figure: `node`, `node_kind`, `port`,
`peer_node`, `peer_port`, `rate_bps` and `link` (`sw12:3-h40:0`, the same for both directions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl


#: Columns naming a port, in every port-level table (`ports`, `queue_samples`, `pfc`, `links`).
PORT_COLUMNS = ["node", "node_kind", "port", "peer_node", "peer_port", "rate_bps", "link"]


def _node_name(node: int, switch: int) -> str:
    return f"sw{node}" if switch else f"h{node}"


def port_names(info: dict[str, Any]) -> pl.DataFrame:
    """One row per port id: `node`, `node_kind` (host/switch), `port` (its index on the
    node), `peer_node`, `peer_port`, `rate_bps`, `link` and `port_id`. A link is named by
    its two ends, `sw12:3-h40:0`: the end the topology lists first (its `a`) first, so both
    directions of a link carry the same name."""
    if not info or len(info.get("node", [])) == 0:
        return pl.DataFrame(schema={"port_id": pl.UInt32, "node": pl.UInt32, "node_kind": pl.Utf8,
                                    "port": pl.UInt32, "peer_node": pl.UInt32, "peer_port": pl.UInt32,
                                    "rate_bps": pl.UInt64, "link": pl.Utf8})
    # Built as columns, not string by string: a million-host fabric has five million ports.
    frame = pl.DataFrame({
        "port_id": np.arange(len(info["node"])), "node": info["node"],
        "switch": np.asarray(info["switch"], dtype=bool), "port": info["port"], "peer_node": info["peer_node"],
        "peer_port": info["peer_port"], "rate_bps": info["rate_bps"],
    }).cast({"port_id": pl.UInt32, "node": pl.UInt32, "port": pl.UInt32, "peer_node": pl.UInt32,
             "peer_port": pl.UInt32, "rate_bps": pl.UInt64})
    kind = pl.when(pl.col("switch")).then(pl.lit("switch")).otherwise(pl.lit("host"))
    end = pl.concat_str(pl.when(pl.col("switch")).then(pl.lit("sw")).otherwise(pl.lit("h")), pl.col("node"),
                        pl.lit(":"), pl.col("port"))
    ends, ids = frame.select(end).to_series(), np.arange(frame.height)
    links = ends.gather(ids & ~1) + "-" + ends.gather(ids | 1)  # port 2l is link l's `a` end, 2l+1 its `b`
    return frame.with_columns(node_kind=kind, link=links).select(
        "port_id", "node", "node_kind", "port", "peer_node", "peer_port", "rate_bps", "link")


def port_label(row: dict[str, Any]) -> str:
    """A port as figure legends name it: `sw8:2→h1:0` (egress node:port → peer node:port)."""
    own = f"{_node_name(row['node'], row['node_kind'] == 'switch')}:{row['port']}"
    a, b = row["link"].split("-")
    return f"{own}→{b if a == own else a}"


def with_port_names(df: pl.DataFrame, names: pl.DataFrame, on: str = "port_id") -> pl.DataFrame:
    """`df` (with a port id column `on`) with the naming columns first after time."""
    if names.height == 0 or on not in df.columns:
        return df
    if df.height == 0:
        # Nothing to name (no PFC frame, no sample): the join keeps its columns and types
        # without hashing every port (six million at a million hosts, some 2 s a table).
        names = names.clear()
    if df.height and _one_row_per_port(df, names, on):
        # The ports table: row i is port i. Side by side, without a join's hash table (six
        # million rows at a million hosts).
        joined = pl.concat([df, names.drop("port_id")], how="horizontal")
    else:
        joined = df.join(names.rename({"port_id": on}) if on != "port_id" else names, on=on, how="left")
    lead = [c for c in ("time_ps",) if c in df.columns]
    rest = [c for c in joined.columns if c not in lead + PORT_COLUMNS]
    return joined.select(lead + PORT_COLUMNS + rest)


def _one_row_per_port(df: pl.DataFrame, names: pl.DataFrame, on: str) -> bool:
    """True when `df`'s rows are the ports in id order and share no column with `names`."""
    if df.height != names.height or set(df.columns) & (set(names.columns) - {"port_id"}):
        return False
    ids = df.get_column(on)
    return ids.dtype == pl.UInt32 and ids.equals(names.get_column("port_id"), check_names=False)
