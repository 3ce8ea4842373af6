"""A run that did not end normally keeps what it measured.

When a run fails an internal check (a lossless fabric that dropped packets, bytes not
conserved), `rdmalab.run` raises `RunFailed`, which carries the results up to that moment
(`err.results`) and the failure record (`err.record`). A stall, a PFC deadlock and Ctrl-C
return their results as before; `failure_record` describes those too, so that `rdmalab run`
writes the same `failure.json` for each (docs/outputs.md, "When a run fails").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class RunFailed(RuntimeError):
    """A run that failed an internal check. `results`: everything measured up to that moment
    (every table, the counters, `summary()`); `record`: what failed, where and when
    (`failure_record`)."""

    def __init__(self, message: str, results: Any, record: dict[str, Any]) -> None:
        super().__init__(message)
        self.results = results
        self.record = record


def check_record(failure: dict[str, Any], results: Any) -> dict[str, Any]:
    """The record of a failed check, from the engine's `failure` (its message and, for a
    lossless drop, the first drop's node, port, class and time)."""
    site = failure.get("first_drop")
    what = "lossless_drop" if site is not None else "invariant"
    where = {"node": None, "port": None, "class": None, "time_ps": None}
    if site is not None:
        where = {"node": site["node"], "port": site["port"], "class": site["class"], "time_ps": site["time_ps"]}
    return _record(what, failure["message"], where, results)


def failure_record(results: Any) -> dict[str, Any] | None:
    """The record of a run that stopped on a PFC deadlock, a stall, Ctrl-C or SIGTERM (None when the
    run ended normally): what happened, where (the deadlock's first hop) and when."""
    where: dict[str, Any] = {"node": None, "port": None, "class": None, "time_ps": results.counters["end_time_ps"]}
    if results.interrupted:
        by = results.extra.get("interrupted_by", "Ctrl-C")
        return _record("interrupted", f"interrupted ({by})", where, results)
    if results.counters.get("deadlocks", 0) > 0:
        d = results.deadlock_rows()[0]
        # deadlock.parquet names the port by its ifindex (1-based); the record, as ports.parquet does.
        where = {"node": d["node"], "port": d["port"] - 1, "class": d["priority"],
                 "time_ps": round(d["formed_ns"] * 1000)}
        hops = ", ".join(f"({n}, {p}, {q})" for n, p, q in results.cycle())
        message = (f"PFC deadlock formed at {d['formed_ns'] / 1e3:.3f} us: cycle of (node, port, priority) "
                   f"{hops}")
        return _record("pfc_deadlock", message, where, results)
    if results.stop_reason == "stalled":
        return _record("stalled", f"stalled: {results.stall_cause or 'no progress possible'}", where, results)
    return None


def _record(what: str, message: str, where: dict[str, Any], results: Any) -> dict[str, Any]:
    # Every counter but `events`, which depends on how the parallel engine cut the fabric (each
    # partition admits the flows), so that the record is the same bytes for any thread count.
    counters = {k: int(v) for k, v in results.counters.items() if k != "events"}
    return {"what": what, "message": message, **where, "end_time_ps": results.counters["end_time_ps"],
            "stop_reason": results.stop_reason, "counters": counters}


def write_failure(record: dict[str, Any], path: str | Path) -> None:
    """Writes the record as JSON (sorted keys: the same run gives the same bytes)."""
    Path(path).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
