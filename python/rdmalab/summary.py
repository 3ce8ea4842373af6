"""The run summary's text, from the counters and the completed flows' sizes and slowdowns,
without building a table: `Results.summary()` and the command line's `rdmalab hpcc` (which
writes the reference's text files and reads no table) print the same lines from it.

`RunOutcome` holds what every run has (counters, how it stopped, the engine for the FCT and
PFC files); `Results` adds the tables. `Outcome` is a run whose tables were never built (no
polars or numpy loaded): `rdmalab hpcc`'s, when the run has none of the blocks that need a
table (tenants, applications, classes, collectives). The engine computes its slowdown rows
(`rdmalab::stats::slowdown`) with the float operations `slowdown_rows` does here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


#: Size buckets of the fidelity report (docs/validation.md), in payload bytes.
SIZE_BUCKETS: list[tuple[str, int, float]] = [
    ("all", 0, float("inf")),
    ("<100KB", 0, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">=1MB", 1_000_000, float("inf")),
]


def percentile(values: np.ndarray, p: float) -> float:
    """The reference analysis script's rule: sort, take element int(n * p). NaN values
    (flows that did not complete, e.g. `unreachable` ones) are left out."""
    import numpy as np  # lazy: `rdmalab hpcc` prints its summary without numpy (`Outcome`)

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return float("nan")
    s = np.sort(values)
    return float(s[min(int(len(s) * p), len(s) - 1)])


def slowdown_rows(sizes: np.ndarray, slow: np.ndarray) -> list[dict[str, Any]]:
    """p50/p95/p99 and mean slowdown per size bucket, with the flow count of each bucket."""
    rows = []
    for name, lo, hi in SIZE_BUCKETS:
        sel = slow[(sizes >= lo) & (sizes < hi)]
        rows.append({"bucket": name, "flows": len(sel), "p50": percentile(sel, 0.5),
                     "p95": percentile(sel, 0.95), "p99": percentile(sel, 0.99),
                     "mean": float(sel.mean()) if len(sel) else float("nan")})
    return rows


class RunOutcome:
    """What every run has, tables or not: `counters`, `stop_reason`, `interrupted`,
    `wall_seconds`, `stall_cause`, `extra` (the engine under `core`), and the summary."""

    counters: dict[str, int]
    stop_reason: str
    interrupted: bool
    wall_seconds: float
    stall_cause: str | None
    extra: dict[str, Any]

    def write_fct(self, path: str | Path) -> None:
        """Writes completed flows in the ns-3 HPCC simulator's FCT format."""
        self.extra["core"].write_fct(str(path))

    def write_pfc(self, path: str | Path) -> None:
        """Writes received PFC frames in the ns-3 HPCC simulator's PFC format."""
        self.extra["core"].write_pfc(str(path))

    @property
    def simulated_ps(self) -> int:
        """The run's simulated time: the stop time if it stopped there, else when the last
        flow completed (`last_completion_ps`), not when the last leftover timer fired."""
        c = self.counters
        if self.stop_reason in ("stop_time", "pfc_deadlock", "stalled") or self.interrupted:
            return int(c["end_time_ps"])
        # A run of applications only completes no flow: its last event ends it.
        return int(c.get("last_completion_ps") or c["end_time_ps"])

    def _time_note(self) -> str:
        notes = {"stop_time": "the stop time", "pfc_deadlock": "when the deadlock was found",
                 "stalled": "when the run stalled"}
        if self.interrupted:
            return "when interrupted"
        if self.stop_reason in notes:
            return notes[self.stop_reason]
        return "last flow completed" if self.counters.get("last_completion_ps") else "last event"

    def _loss_note(self) -> str:
        c = self.counters
        parts = [f"{c[k]} {what}" for k, what in (("link_error_losses", "link errors"),
                                                   ("link_down_losses", "link failures"),
                                                   ("no_route_drops", "no route"),
                                                   ("pfc_pause_refreshes", "pauses refreshed"),
                                                   ("pfc_pause_expiries", "pauses ran out")) if c.get(k)]
        return f"  ({', '.join(parts)})" if parts else ""

    def _recovery_line(self) -> str:
        """Loss recovery and reordering: what senders resent, NACKs, out-of-order arrivals,
        and CNPs by cause (a CE mark, or an out-of-order packet under `cnp_on_ooo`)."""
        c = self.counters
        return (f"recovery          {c.get('retx_packets', 0):,} packets resent, {c['nacks']:,} NACKs, "
                f"{c.get('ooo_packets', 0):,} out of order; CNPs {c.get('cnps_ecn', 0):,} ECN / "
                f"{c.get('cnps_ooo', 0):,} out of order")

    def _head_lines(self) -> list[str]:
        """The summary's counters block."""
        c = self.counters
        lines = [
            f"flows completed   {c['flows_completed']} / {c['flows_total']}"
            + ("  (interrupted)" if self.interrupted else ""),
        ]
        if c.get("flows_unreachable"):
            lines.append(f"flows unreachable {c['flows_unreachable']}  (destination cut off by link failures; "
                         "status column of flows)")
        if c.get("flows_failed"):
            lines.append(f"flows failed      {c['flows_failed']}  (a WR exhausted retry_cnt or rnr_retry; status "
                         "column of flows)")
        return lines + [
            f"stop reason       {self.stop_reason}"
            + (f": {self.stall_cause}" if self.stop_reason == "stalled" and self.stall_cause else ""),
            f"simulated time    {self.simulated_ps / 1e6:.3f} us  ({self._time_note()})",
            f"events            {c['events']:,}  ({c['events'] / max(self.wall_seconds, 1e-9) / 1e6:.2f} M/s wall)",
            f"packet hops       {c['packet_hops']:,}",
            f"drops / pauses    {c['drops']} / {c['pauses']}" + self._loss_note(),
            f"ECN marks         {c['ecn_marks']}",
            *([f"FECN / BECN       {c['fecn_marks']} / {c['becns']}"] if c.get("fecn_marks") or c.get("becns") else []),
            *([f"IOFD              {c['deflections']} deflections, {c['resequenced']} re-sequenced, "
               f"{c['reseq_escapes']} escaped"] if c.get("deflections") or c.get("resequenced") else []),
            "payload bytes     sent {:,} = delivered {:,} + dropped in the fabric {:,} + discarded by "
            "receivers {:,} + in flight {:,}".format(
                c["payload_bytes_sent"], c["payload_bytes_delivered"], c["payload_bytes_dropped"],
                c.get("payload_bytes_discarded", 0), c["payload_bytes_in_flight"]),
            *([self._recovery_line()] if c.get("retx_packets") or c.get("ooo_packets") or c.get("nacks") else []),
        ]

    def _table_lines(self) -> list[str]:
        """The blocks read from tables (tenants, applications, classes, collectives); none here."""
        return []

    def _slowdown_rows(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def deadlock_rows(self) -> list[dict[str, Any]]:
        """The first PFC deadlock's cycle, one dict per hop (node, port as its ifindex,
        priority, formed_ns, detected_ns); empty when none was found."""
        raise NotImplementedError

    def cycle(self) -> list[tuple[int, int, int]]:
        """The deadlock cycle as (node, port ifindex, priority) hops; empty when none."""
        return [(r["node"], r["port"], r["priority"]) for r in self.deadlock_rows()]

    def deadlock_lines(self) -> list[str]:
        """Lines naming the PFC deadlock, when one was found (none otherwise)."""
        rows = self.deadlock_rows()
        if not rows:
            return []
        d = rows[0]
        hops = " -> ".join(f"node {r['node']} port {r['port']} prio {r['priority']}" for r in rows)
        n = self.counters.get("deadlocks", 1)
        return ["", f"PFC deadlock: formed at {d['formed_ns'] / 1e3:.3f} us, found at {d['detected_ns'] / 1e3:.3f} us"
                + (f" ({n} deadlocks in all)" if n > 1 else ""),
                f"  cycle (each paused port waits on the next): {hops} -> back to the first"]

    def summary(self) -> str:
        """A human-readable summary: counters and the slowdown table."""
        c = self.counters
        lines = self._head_lines() + self._table_lines()
        if "trace_records" in c:
            lines.append(f"trace             {c['trace_records']:,} records"
                         + ("  (TRUNCATED at trace.max_bytes)" if c.get("trace_truncated") else ""))
        lines.append("")
        lines.append(f"{'bucket':<12}{'flows':>8}{'p50':>9}{'p95':>9}{'p99':>9}")
        for r in self._slowdown_rows():
            lines.append(f"{r['bucket']:<12}{r['flows']:>8}{r['p50']:>9.3f}{r['p95']:>9.3f}{r['p99']:>9.3f}")
        lines.extend(self.deadlock_lines())
        return "\n".join(lines)


class Outcome(RunOutcome):
    """A run whose tables were not built: the counters and the summary, from the engine's
    outcome (`Simulation.outcome`: plain Python values, the slowdown rows computed by the
    engine with the rule of `slowdown_rows`). `rdmalab hpcc` prints it; loading it loads
    neither polars nor numpy."""

    def __init__(self, lean: dict[str, Any], stop_reason: str, interrupted: bool, wall: float):
        self.counters = dict(lean["counters"])
        self.stop_reason, self.interrupted, self.wall_seconds = stop_reason, interrupted, wall
        self.stall_cause = lean.get("stall_cause")
        self.extra = {}
        self._rows = [dict(r) for r in lean["slowdown_rows"]]
        self._deadlock = [dict(h) for h in lean["deadlock"]]

    def _slowdown_rows(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._rows]

    def deadlock_rows(self) -> list[dict[str, Any]]:
        return [dict(h) for h in self._deadlock]
