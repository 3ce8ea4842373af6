"""One run of a sweep, as executed by a worker process (local pool or Ray).

`execute(task)` takes plain data (run id, scenario dict, base folder) and returns plain
data: status, error text, counters and the run's tables as polars DataFrames. It never
raises for a bad scenario or a failed run: the error is part of the result, so one bad
run cannot stop a sweep.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import threading
import time
import traceback
from typing import Any, Callable

import polars as pl

from rdmalab import _core
from rdmalab.results import Results
from rdmalab.scenario import PYTHON_SCENARIO, check_numbers

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
        out.update(status="error", error=_error_text(e, task.get("source")))
    out["wall_s"] = time.perf_counter() - t0
    return out


def _simulate(task: dict[str, Any], out: dict[str, Any], report: Reporter | None) -> None:
    check_numbers(task["scenario"])
    sim = _core.Simulation.from_json(json.dumps(task["scenario"]), task["base_dir"])
    out["warnings"] = "\n".join(sim.warnings()) or None
    t0 = time.perf_counter()
    reason = "paused"
    while reason == "paused":
        reason = sim.run(max_events=SLICE_EVENTS)
        if report:
            done, total = sim.progress()
            report(("progress", task["run_id"], done, total))
    raw = sim.results(check=reason != "stalled", release=True)  # the tables below need only `raw`
    res = Results.from_core(raw, reason, False, time.perf_counter() - t0)
    out["stop_reason"] = reason
    out["counters"] = dict(res.counters)
    out["stall_cause"] = res.stall_cause
    out["tables"] = {"flows": res.flows, "ports": res.ports, "pfc": res.pfc, "queues": res.queue_samples,
                     "rates": res.rates, "links": res.links, "deadlock": res.deadlock, "messages": res.messages,
                     "chunks": res.chunks, "paths": res.paths, "apps": res.apps, "drum": res.drum,
                     "wqes": res.wqes, "collectives": res.collectives, "collective_steps": res.collective_steps,
                     **res.mechanisms}
    # `port_info` names the ports of the tables above, `unreachable` is part of `flows`.
    known = {"flows", "counters", "ports", "pfc", "queue_samples", "rates", "port_info", "unreachable",
             "link_samples", "deadlock", "stall_cause", "messages", "chunks", "paths",
             "host_model", "tables", "collectives", "collective_steps"}
    for extra in sorted(set(raw) - known):
        out["tables"].update(_extra_table(extra, raw[extra]))


def _extra_table(name: str, value: Any) -> dict[str, Any]:
    """Tables the engine may add later, kept when they are columns."""
    if isinstance(value, dict):
        try:
            return {name: pl.DataFrame(value)}
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            return {}
    return {}


def _error_text(e: BaseException, source: str | None = None) -> str:
    """The error as stored. `source` (the sweep file's name) replaces the engine's name for a
    scenario given as data, which tells a sweep's user nothing: the field that follows is
    the run's scenario's, from the sweep's base or its grid."""
    head = f"{type(e).__name__}: {e}"
    if source:
        head = head.replace(f"{PYTHON_SCENARIO}: ", f"{source} (this run's scenario): ", 1)
    if isinstance(e, (ValueError, OSError)):
        return head[:MAX_ERROR_CHARS]  # input errors: the message says it all
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return (head + "\n" + tb[-(MAX_ERROR_CHARS - len(head)):])[:MAX_ERROR_CHARS]


# -- process-pool plumbing ---------------------------------------------------------------
_QUEUE = None


#: How often a pool worker checks that its driver is still alive, seconds.
PARENT_POLL_S = 0.2


def init_pool_worker(queue, driver_pid: int | None = None) -> None:  # noqa: ANN001
    """Pool initializer: remember the progress queue; leave Ctrl-C and SIGTERM to the parent;
    die with the driver (`driver_pid`, the process that made the pool).

    A terminal's Ctrl-C and a batch scheduler's SIGTERM reach every process of the job, the
    workers too. A worker that died of SIGTERM would break the pool, and every run not yet
    stored would come back as a failure and be stored as one; the driver alone stops the
    sweep and ends its workers (`executors._stop_pool`)."""
    global _QUEUE
    _QUEUE = queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent(driver_pid if driver_pid is not None else os.getppid())


def die_with_parent(parent: int) -> None:
    """Ends this process as soon as `parent`, the process that started it, is gone, even
    when that one was killed with SIGKILL and could clean nothing up.

    A pool worker waits on a pipe that it holds both ends of (a spawned child inherits the
    queue whole), so it never sees the driver's end close: without this it would wait, or
    finish its run, forever orphaned, and keep multiprocessing's resource tracker alive.
    A daemon thread polls the parent's id, which changes when the process is re-parented;
    the simulation releases the GIL, so the thread runs during a run too. (Linux's
    `PR_SET_PDEATHSIG` is not used: it fires when the parent *thread* that started the
    worker ends, which need not be the driver's end.) The parent's id comes from the parent
    itself: a worker still starting up when the driver died is already re-parented when this
    runs, and must not take its new parent for the driver.
    """
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="rdmalab-parent-watch", daemon=True).start()


def execute_in_pool(task: dict[str, Any]) -> dict[str, Any]:
    """`execute` with progress sent to the parent through the pool's queue."""
    return execute(task, _QUEUE.put if _QUEUE is not None else None)
