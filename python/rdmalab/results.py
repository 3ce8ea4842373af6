"""Results of a run as DataFrames, and the field's standard summaries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab.host_results import apps_frame, drum_frame, wqes_frame

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


#: Columns of the deadlock cycle: one row per hop (node, port as its ifindex, priority), with when
#: the cycle formed and was found.
DEADLOCK_COLUMNS = {"node": pl.UInt32, "port": pl.UInt32, "priority": pl.UInt8, "formed_ns": pl.Float64,
                    "detected_ns": pl.Float64}


def deadlock_frame(raw: dict[str, Any] | None) -> pl.DataFrame:
    """The engine's deadlock cycle as a DataFrame (empty when no deadlock was found)."""
    if not raw or len(raw.get("node", [])) == 0:
        return pl.DataFrame(schema=DEADLOCK_COLUMNS)
    return pl.DataFrame({
        "node": raw["node"], "port": raw["port"], "priority": raw["priority"],
        "formed_ns": raw["formed_ps"] / 1000.0, "detected_ns": raw["detected_ps"] / 1000.0,
    }).cast(DEADLOCK_COLUMNS)


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
                   "ideal_ns": pl.Float64, "bytes_placed": pl.UInt64, "wrs": pl.UInt64, "cqes": pl.UInt64,
                   "recv_cqe_ns": pl.Float64, "probe_ns": pl.Float64}
#: Columns of the Virtuoso paths table (one row per path of each connection).
PATH_COLUMNS = {"connection": pl.UInt32, "path": pl.UInt32, "sip": pl.UInt32, "cap_gbps": pl.Float64,
                "bytes": pl.UInt64, "max_wr": pl.UInt64}
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


def paths_frame(raw: dict[str, Any]) -> pl.DataFrame:
    """Virtuoso paths (one row per path of each connection) as a DataFrame."""
    return _ps_columns_frame(raw, PATH_COLUMNS)


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

    `stop_reason` is `finished`, `stop_time`, `stalled` (with `stall_cause` saying why, in
    one line) or `pfc_deadlock`. `deadlock` is the first PFC deadlock found, one row per hop of
    its cycle: node, port (its ifindex), priority, formed_ns, detected_ns; empty when none.
    `counters["deadlocks"]` counts them (more than one only with `fabric.on_deadlock = "continue"`).

    Multipath traffic (`Scenario.multipath`) adds `messages`, one row per message: message,
    src, dst, size, qps, chunks, start_ns, fct_ns (last chunk's completion at the sender,
    from start), recv_done_ns (last byte placed at the receiver, from start), ideal_ns,
    bytes_placed; and `chunks`, one row per chunk: message, chunk, qp (0-based within the
    connection), sport, sip, offset, size, post_ns, done_ns, recv_ns (absolute times) and
    path (node ids joined by `-`). Each message is also one row of `flows`; its chunks are not.
    Messages also have wrs (WRs posted for it), cqes (completions the sender polled),
    recv_cqe_ns (the receiver's one completion, from start: a SEND's, or a partition
    message's last chunk; NaN for Virtuoso's WRITE and READ, whose receiver is passive) and
    probe_ns (time waiting for Virtuoso's path probe). `split = "virtuoso"` adds `paths`,
    one row per path of each connection: connection, path, sip, cap_gbps (the capacity
    estimate eq. 1 used last), bytes (data sent over it) and max_wr (its largest WR).

    Closed-loop applications (`Scenario.app`, seed 000, docs/drum-fabric.md) add `wqes`
    (one row per WQE: app, name, host, batch, size, posted_ns, ct_ns), `apps` (per app:
    wqes, bytes, wqe_per_us, gbps, p50/p80/p99_ct_ns) and, under DRUM, `drum` (per control
    period and app: t_ns, app, x, z, a, active, rate); see `rdmalab.host_results`.
    """

    flows: pl.DataFrame
    counters: dict[str, int]
    ports: pl.DataFrame
    pfc: pl.DataFrame
    queue_samples: pl.DataFrame
    rates: pl.DataFrame = field(default_factory=lambda: rates_frame({}))
    deadlock: pl.DataFrame = field(default_factory=lambda: deadlock_frame(None))
    stall_cause: str | None = None
    messages: pl.DataFrame = field(default_factory=lambda: messages_frame({}))
    chunks: pl.DataFrame = field(default_factory=lambda: chunks_frame({}))
    paths: pl.DataFrame = field(default_factory=lambda: paths_frame({}))
    wqes: pl.DataFrame = field(default_factory=lambda: wqes_frame(None))
    apps: pl.DataFrame = field(default_factory=lambda: apps_frame(None, wqes_frame(None), 0.0))
    drum: pl.DataFrame = field(default_factory=lambda: drum_frame(None))
    stop_reason: str = "finished"
    interrupted: bool = False
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_core(cls, raw: dict[str, Any], stop_reason: str, interrupted: bool, wall: float) -> "Results":
        f = raw["flows"]
        names = list(raw.get("tenant_names", ["default"]))
        tenant_idx = f.get("tenant", np.zeros(len(f["flow"]), dtype=np.uint64))
        flows = pl.DataFrame({
            "flow": f["flow"], "src": f["src"], "dst": f["dst"], "sip": f["sip"], "dip": f["dip"],
            "sport": f["sport"], "dport": f["dport"], "size": f["size"],
            "start_ns": f["start_ps"] / 1000.0, "fct_ns": f["fct_ps"] / 1000.0, "ideal_ns": f["ideal_ps"] / 1000.0,
            "tenant": pl.Series([names[int(i)] for i in tenant_idx], dtype=pl.Utf8),
        })
        flows = flows.with_columns((pl.col("fct_ns") / pl.col("ideal_ns")).clip(lower_bound=1.0).alias("slowdown"))
        ports = pl.DataFrame(raw["ports"]).with_row_index("port")
        hm = raw.get("host_model")
        wqes = wqes_frame(hm)
        return cls(flows=flows, counters=dict(raw["counters"]), ports=ports, pfc=pl.DataFrame(raw["pfc"]),
                   queue_samples=pl.DataFrame(raw["queue_samples"]), rates=rates_frame(raw.get("rates", {})),
                   deadlock=deadlock_frame(raw.get("deadlock")), stall_cause=raw.get("stall_cause"),
                   messages=messages_frame(raw.get("messages", {})), chunks=chunks_frame(raw.get("chunks", {})),
                   paths=paths_frame(raw.get("paths", {})),
                   wqes=wqes, apps=apps_frame(hm, wqes, float(raw["counters"]["end_time_ps"])),
                   drum=drum_frame(hm),
                   stop_reason=stop_reason,
                   interrupted=interrupted, wall_seconds=wall,
                   extra={"tenant_names": names, "tenant_bins": raw.get("tenant_bins"),
                          "tenant_bin_ps": raw.get("tenant_bin_ps", 1_000_000)})

    def write_fct(self, path: str | Path) -> None:
        """Writes completed flows in the ns-3 HPCC simulator's FCT format."""
        self.extra["core"].write_fct(str(path))

    def write_pfc(self, path: str | Path) -> None:
        """Writes received PFC frames in the ns-3 HPCC simulator's PFC format."""
        self.extra["core"].write_pfc(str(path))

    def tenant_share(self, start: str | int = 0, end: str | int | None = None) -> pl.DataFrame:
        """Payload each tenant's receivers accepted in order during `[start, end)`.

        `start`/`end` are time strings (`"1ms"`) or picoseconds; `end` defaults to the end of
        the run. Receivers count bytes in 1 µs bins; a bin counts if it starts inside the
        window, so windows on the µs grid are exact. Columns: tenant, bytes, gbps (bytes over
        the window length), share (of all tenants' bytes; 0 when nothing was delivered). One
        row per declared tenant, in declaration order (`default` first).
        """
        from rdmalab import _core

        def ps(t: str | int | None, default: int) -> int:
            if t is None:
                return default
            return int(t) if isinstance(t, (int, np.integer)) else _core.parse_time_ps(t)

        lo, hi = ps(start, 0), ps(end, int(self.counters["end_time_ps"]))
        if hi <= lo:
            raise ValueError(f"tenant_share: end ({end}) must be after start ({start})")
        names = self.extra.get("tenant_names", ["default"])
        bins = self.extra.get("tenant_bins")
        totals = np.zeros(len(names), dtype=np.float64)
        if bins is not None and len(bins["bin"]):
            t0 = np.asarray(bins["bin"], dtype=np.uint64) * np.uint64(self.extra["tenant_bin_ps"])
            sel = (t0 >= lo) & (t0 < hi)
            np.add.at(totals, np.asarray(bins["tenant"], dtype=np.int64)[sel],
                      np.asarray(bins["bytes"], dtype=np.float64)[sel])
        elif bins is None:
            raise ValueError("tenant_share: this run kept no per-tenant meter (`rdmalab hpcc` runs do not)")
        total = totals.sum()
        seconds = (hi - lo) / 1e12
        return pl.DataFrame({
            "tenant": names,
            "bytes": totals.astype(np.uint64),
            "gbps": totals * 8 / seconds / 1e9,
            "share": totals / total if total > 0 else np.zeros(len(names)),
        })

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
            f"stop reason       {self.stop_reason}"
            + (f": {self.stall_cause}" if self.stop_reason == "stalled" and self.stall_cause else ""),
            f"simulated time    {c['end_time_ps'] / 1e6:.3f} us",
            f"events            {c['events']:,}  ({c['events'] / max(self.wall_seconds, 1e-9) / 1e6:.2f} M/s wall)",
            f"packet hops       {c['packet_hops']:,}",
            f"drops / pauses    {c['drops']} / {c['pauses']}",
            f"ECN marks         {c['ecn_marks']}",
            *([f"IOFD              {c['deflections']} deflections, {c['resequenced']} re-sequenced, "
               f"{c['reseq_escapes']} escaped"] if c.get("deflections") or c.get("resequenced") else []),
            f"bytes sent/deliv  {c['payload_bytes_sent']:,} / {c['payload_bytes_delivered']:,}",
        ]
        bins = self.extra.get("tenant_bins")
        if bins is not None and len(bins["bin"]):
            lines.append("")
            lines.append(f"{'tenant':<16}{'bytes':>16}{'Gb/s':>9}{'share':>8}   (payload delivered, whole run)")
            for r in self.tenant_share().iter_rows(named=True):
                lines.append(f"{r['tenant']:<16}{r['bytes']:>16,}{r['gbps']:>9.2f}{r['share']:>8.3f}")
        if self.apps.height:
            lines.append("")
            lines.append(f"{'application':<16}{'WQEs':>10}{'Gb/s':>9}{'p50 us':>10}{'p80 us':>10}{'p99 us':>10}"
                         "   (closed-loop apps; first 20)")
            for r in self.apps.head(20).iter_rows(named=True):
                lines.append(f"{r['name']:<16}{r['wqes']:>10}{r['gbps']:>9.3f}{r['p50_ct_ns'] / 1e3:>10.2f}"
                             f"{r['p80_ct_ns'] / 1e3:>10.2f}{r['p99_ct_ns'] / 1e3:>10.2f}")
        table = self.slowdown_table()
        lines.append("")
        lines.append(f"{'bucket':<12}{'flows':>8}{'p50':>9}{'p95':>9}{'p99':>9}")
        for r in table.iter_rows(named=True):
            lines.append(f"{r['bucket']:<12}{r['flows']:>8}{r['p50']:>9.3f}{r['p95']:>9.3f}{r['p99']:>9.3f}")
        lines.extend(self.deadlock_lines())
        return "\n".join(lines)

    def cycle(self) -> list[tuple[int, int, int]]:
        """The deadlock cycle as (node, port ifindex, priority) hops; empty when none."""
        return [(r["node"], r["port"], r["priority"]) for r in self.deadlock.iter_rows(named=True)]

    def deadlock_lines(self) -> list[str]:
        """Lines naming the PFC deadlock, when one was found (none otherwise)."""
        if self.deadlock.height == 0:
            return []
        d = self.deadlock.row(0, named=True)
        hops = " -> ".join(f"node {n} port {p} prio {q}" for n, p, q in self.cycle())
        n = self.counters.get("deadlocks", 1)
        return ["", f"PFC deadlock: formed at {d['formed_ns'] / 1e3:.3f} us, found at {d['detected_ns'] / 1e3:.3f} us"
                + (f" ({n} deadlocks in all)" if n > 1 else ""),
                f"  cycle (each paused port waits on the next): {hops} -> back to the first"]
