"""Results of a run as DataFrames, and the field's standard summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

#: Size buckets of the fidelity report (FORMATS.md §5 style), in payload bytes.
SIZE_BUCKETS: list[tuple[str, int, float]] = [
    ("all", 0, float("inf")),
    ("<100KB", 0, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">=1MB", 1_000_000, float("inf")),
]


def percentile(values: np.ndarray, p: float) -> float:
    """The reference analysis script's rule: sort, take element int(n * p)."""
    if len(values) == 0:
        return float("nan")
    s = np.sort(values)
    return float(s[min(int(len(s) * p), len(s) - 1)])


#: Columns of the per-QP rate samples, with their types (so an empty table has them too).
RATE_COLUMNS = {"time_ps": pl.UInt64, "qp": pl.UInt32, "flow": pl.UInt32, "src": pl.UInt32, "dst": pl.UInt32,
                "rate_gbps": pl.Float64, "throughput_gbps": pl.Float64}


def rates_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """The engine's rate samples (bit/s integers) as a DataFrame in Gb/s."""
    if not raw or len(raw.get("time_ps", [])) == 0:
        return pl.DataFrame(schema=RATE_COLUMNS)
    return pl.DataFrame({
        "time_ps": raw["time_ps"], "qp": raw["qp"], "flow": raw["flow"], "src": raw["src"], "dst": raw["dst"],
        "rate_gbps": raw["rate_bps"] / 1e9, "throughput_gbps": raw["throughput_bps"] / 1e9,
    }).cast(RATE_COLUMNS)


#: Columns of the multipath tables (so an empty table has them too). Times in ns:
#: messages' start_ns is absolute, fct_ns and recv_done_ns are durations from start_ns
#: (NaN while unfinished); chunks' post_ns, done_ns, recv_ns are absolute.
MESSAGE_COLUMNS = {"message": pl.UInt32, "src": pl.UInt32, "dst": pl.UInt32, "size": pl.UInt64, "qps": pl.UInt32,
                   "chunks": pl.UInt64, "start_ns": pl.Float64, "fct_ns": pl.Float64, "recv_done_ns": pl.Float64,
                   "ideal_ns": pl.Float64, "bytes_placed": pl.UInt64}
CHUNK_COLUMNS = {"message": pl.UInt32, "chunk": pl.UInt32, "qp": pl.UInt32, "sport": pl.UInt32, "sip": pl.UInt32,
                 "offset": pl.UInt64, "size": pl.UInt64, "post_ns": pl.Float64, "done_ns": pl.Float64,
                 "recv_ns": pl.Float64, "path": pl.Utf8}


def _ps_columns_frame(raw: dict[str, Any], schema: dict[str, Any]) -> pl.DataFrame:
    """The engine's columns as a DataFrame with `schema`: every `*_ns` column is the engine's
    `*_ps` column over 1000, the others are taken as they are."""
    if not raw or len(raw.get(next(iter(schema)), [])) == 0:
        return pl.DataFrame(schema=schema)
    cols = {k: raw[k[:-3] + "_ps"] / 1000.0 if k.endswith("_ns") else raw[k] for k in schema}
    return pl.DataFrame(cols).cast(schema)


def messages_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Multipath messages (one row per message posted) as a DataFrame."""
    return _ps_columns_frame(raw, MESSAGE_COLUMNS)


def chunks_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Multipath chunks (one row per chunk posted) as a DataFrame."""
    return _ps_columns_frame(raw, CHUNK_COLUMNS)


@dataclass
class Results:
    """What a run measured.

    `flows` has one row per completed flow: src, dst, sip, dip, sport, dport, size,
    start_ns, fct_ns, ideal_ns and slowdown (fct/ideal clamped below at 1, as the reference's
    analysis does). `counters` holds run totals; `ports` per-port counters; `pfc` the PFC frames
    received; `queue_samples` switch queue lengths when sampling was asked for; `rates` one row
    per active QP per `fabric.rate_sample_interval`: time_ps, qp, flow, src, dst, rate_gbps
    (what congestion control allows) and throughput_gbps (payload acknowledged since the
    previous sample, over the interval). Both are empty when not sampled.

    Multipath traffic (`Scenario.multipath`) adds `messages`, one row per message: message,
    src, dst, size, qps, chunks, start_ns, fct_ns (last chunk's completion at the sender,
    from start), recv_done_ns (last byte placed at the receiver, from start), ideal_ns,
    bytes_placed; and `chunks`, one row per chunk: message, chunk, qp (0-based within the
    connection), sport, sip, offset, size, post_ns, done_ns, recv_ns (absolute times) and
    path (node ids joined by `-`). Each message is also one row of `flows`; its chunks are not.
    """

    flows: pl.DataFrame
    counters: dict[str, int]
    ports: pl.DataFrame
    pfc: pl.DataFrame
    queue_samples: pl.DataFrame
    rates: pl.DataFrame = field(default_factory=lambda: rates_frame({}))
    messages: pl.DataFrame = field(default_factory=lambda: messages_frame({}))
    chunks: pl.DataFrame = field(default_factory=lambda: chunks_frame({}))
    stop_reason: str = "finished"
    interrupted: bool = False
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_core(cls, raw: dict[str, Any], stop_reason: str, interrupted: bool, wall: float) -> "Results":
        f = raw["flows"]
        flows = pl.DataFrame({
            "flow": f["flow"], "src": f["src"], "dst": f["dst"], "sip": f["sip"], "dip": f["dip"],
            "sport": f["sport"], "dport": f["dport"], "size": f["size"],
            "start_ns": f["start_ps"] / 1000.0, "fct_ns": f["fct_ps"] / 1000.0, "ideal_ns": f["ideal_ps"] / 1000.0,
        })
        flows = flows.with_columns((pl.col("fct_ns") / pl.col("ideal_ns")).clip(lower_bound=1.0).alias("slowdown"))
        ports = pl.DataFrame(raw["ports"]).with_row_index("port")
        return cls(flows=flows, counters=dict(raw["counters"]), ports=ports, pfc=pl.DataFrame(raw["pfc"]),
                   queue_samples=pl.DataFrame(raw["queue_samples"]), rates=rates_frame(raw.get("rates", {})),
                   messages=messages_frame(raw.get("messages", {})), chunks=chunks_frame(raw.get("chunks", {})),
                   stop_reason=stop_reason,
                   interrupted=interrupted, wall_seconds=wall)

    def write_fct(self, path: str | Path) -> None:
        """Writes completed flows in the ns-3 HPCC simulator's FCT format."""
        self.extra["core"].write_fct(str(path))

    def write_pfc(self, path: str | Path) -> None:
        """Writes received PFC frames in the ns-3 HPCC simulator's PFC format."""
        self.extra["core"].write_pfc(str(path))

    def slowdown_table(self) -> pl.DataFrame:
        """p50/p95/p99 FCT slowdown per size bucket, with the flow count of each bucket."""
        rows = []
        sizes = self.flows["size"].to_numpy()
        slow = self.flows["slowdown"].to_numpy()
        for name, lo, hi in SIZE_BUCKETS:
            sel = slow[(sizes >= lo) & (sizes < hi)]
            rows.append({"bucket": name, "flows": len(sel), "p50": percentile(sel, 0.5),
                         "p95": percentile(sel, 0.95), "p99": percentile(sel, 0.99),
                         "mean": float(sel.mean()) if len(sel) else float("nan")})
        return pl.DataFrame(rows)

    def summary(self) -> str:
        """A human-readable summary: counters and the slowdown table."""
        c = self.counters
        lines = [
            f"flows completed   {c['flows_completed']} / {c['flows_total']}"
            + ("  (interrupted)" if self.interrupted else ""),
            f"stop reason       {self.stop_reason}",
            f"simulated time    {c['end_time_ps'] / 1e6:.3f} us",
            f"events            {c['events']:,}  ({c['events'] / max(self.wall_seconds, 1e-9) / 1e6:.2f} M/s wall)",
            f"packet hops       {c['packet_hops']:,}",
            f"drops / pauses    {c['drops']} / {c['pauses']}",
            f"ECN marks         {c['ecn_marks']}",
            *([f"IOFD              {c['deflections']} deflections, {c['resequenced']} re-sequenced, "
               f"{c['reseq_escapes']} escaped"] if c.get("deflections") or c.get("resequenced") else []),
            f"bytes sent/deliv  {c['payload_bytes_sent']:,} / {c['payload_bytes_delivered']:,}",
        ]
        table = self.slowdown_table()
        lines.append("")
        lines.append(f"{'bucket':<12}{'flows':>8}{'p50':>9}{'p95':>9}{'p99':>9}")
        for r in table.iter_rows(named=True):
            lines.append(f"{r['bucket']:<12}{r['flows']:>8}{r['p50']:>9.3f}{r['p95']:>9.3f}{r['p99']:>9.3f}")
        return "\n".join(lines)
