"""One run of a sweep, as executed by a worker process (local pool or Ray).

`execute(task)` takes plain data (run id, scenario dict, base folder) and returns plain
data: status, error text, counters and the run's tables as polars DataFrames. It never
raises for a bad scenario or a failed run: the error is part of the result, so one bad
run cannot stop a sweep.
"""

from __future__ import annotations

import json
import platform
import signal
import time
import traceback
from typing import Any, Callable

#: Events per slice between progress reports.
SLICE_EVENTS = 1_000_000
#: Error text kept per run (the end of a traceback is the informative part).
MAX_ERROR_CHARS = 4000

Reporter = Callable[[tuple], None]


def execute(task: dict[str, Any], report: Reporter | None = None) -> dict[str, Any]:
    """Simulates one run; `report((kind, run_id, ...))` receives start and progress events."""
    run_id = task["run_id"]
    t0 = time.perf_counter()
    out: dict[str, Any] = {"run_id": run_id, "status": "ok", "error": None, "stop_reason": None,
                           "counters": {}, "tables": {}, "host": platform.node()}
    if report:
        report(("start", run_id))
    try:
        _simulate(task, out, report)
    except KeyboardInterrupt:
        out.update(status="interrupted", error="interrupted")
    except Exception as e:  # noqa: BLE001 - every failure is recorded, none stops the sweep
        out.update(status="error", error=_error_text(e))
    out["wall_s"] = time.perf_counter() - t0
    return out


def _simulate(task: dict[str, Any], out: dict[str, Any], report: Reporter | None) -> None:
    from rdmalab import _core
    from rdmalab.results import Results

    sim = _core.Simulation.from_json(json.dumps(task["scenario"]), task["base_dir"])
    t0 = time.perf_counter()
    reason = "paused"
    while reason == "paused":
        reason = sim.run(max_events=SLICE_EVENTS)
        if report:
            done, total = sim.progress()
            report(("progress", task["run_id"], done, total))
    raw = sim.results(check=reason != "stalled")
    res = Results.from_core(raw, reason, False, time.perf_counter() - t0)
    out["stop_reason"] = reason
    out["counters"] = dict(res.counters)
    out["tables"] = {"flows": res.flows, "ports": res.ports, "pfc": res.pfc, "queues": res.queue_samples,
                     "rates": res.rates, "links": res.links, "messages": res.messages, "chunks": res.chunks}
    # `port_info` names the ports of the tables above, `unreachable` is part of `flows`.
    known = {"flows", "counters", "ports", "pfc", "queue_samples", "rates", "port_info", "unreachable",
             "link_samples", "messages", "chunks"}
    for extra in sorted(set(raw) - known):
        out["tables"].update(_extra_table(extra, raw[extra]))


def _extra_table(name: str, value: Any) -> dict[str, Any]:
    """Tables the engine may add later, kept when they are columns."""
    import polars as pl

    if isinstance(value, dict):
        try:
            return {name: pl.DataFrame(value)}
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            return {}
    return {}


def _error_text(e: BaseException) -> str:
    head = f"{type(e).__name__}: {e}"
    if isinstance(e, (ValueError, OSError)):
        return head[:MAX_ERROR_CHARS]  # input errors: the message says it all
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return (head + "\n" + tb[-(MAX_ERROR_CHARS - len(head)):])[:MAX_ERROR_CHARS]


# -- process-pool plumbing ---------------------------------------------------------------
_QUEUE = None


def init_pool_worker(queue) -> None:  # noqa: ANN001
    """Pool initializer: remember the progress queue; leave Ctrl-C to the parent."""
    global _QUEUE
    _QUEUE = queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def execute_in_pool(task: dict[str, Any]) -> dict[str, Any]:
    """`execute` with progress sent to the parent through the pool's queue."""
    return execute(task, _QUEUE.put if _QUEUE is not None else None)
