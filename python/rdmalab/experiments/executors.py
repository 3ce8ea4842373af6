"""Where the runs of a sweep execute: a local process pool, or Ray.

Both take plain task dicts (see `RunSpec.task`), run `worker.execute` on each, and yield
the results as they finish, so the driver writes each run to the store at once. Neither
writes files itself: on a Ray cluster the workers need not share a file system with the
driver. Results do not depend on the executor: each run is one deterministic simulation.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import queue as queue_mod
from typing import Any, Callable, Iterable, Iterator

from rdmalab.experiments import reaper, worker

#: Called with ("start", run_id) and ("progress", run_id, done, total) events.
EventSink = Callable[[tuple], None]


def default_workers() -> int:
    """One worker per core available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    """A pool of worker processes on this machine (spawned, so safe on every platform)."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or default_workers())
        #: Given on the command line (else: shared with the runs' `threads`, see `pool_size`).
        self.explicit = workers is not None

    def capacity(self) -> int:
        """How many runs execute at once."""
        return self.workers

    def run(self, tasks: Iterable[dict[str, Any]], events: EventSink | None = None) -> Iterator[dict[str, Any]]:
        """Runs every task; yields each result as it finishes."""
        tasks = list(tasks)
        if not tasks:
            return
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        pool = cf.ProcessPoolExecutor(max_workers=min(self.pool_size(tasks), len(tasks)), mp_context=ctx,
                                      initializer=worker.init_pool_worker, initargs=(q, os.getpid()))
        futures = {pool.submit(worker.execute_in_pool, t): t for t in tasks}
        try:
            yield from self._collect(futures, q, events)
        finally:
            _stop_pool(pool)
            q.close()

    def pool_size(self, tasks: list[dict[str, Any]]) -> int:
        """Worker processes for these runs: `--workers` when given, else the cores divided by
        the most threads one run asks for (the parallel engine's `threads`), so that workers
        and threads share the cores without oversubscribing them."""
        if self.explicit:
            return self.workers
        threads = max((int(t.get("scenario", {}).get("threads") or 1) for t in tasks), default=1)
        return max(1, self.workers // max(1, threads))

    def _collect(self, futures: dict, q, events: EventSink | None) -> Iterator[dict[str, Any]]:  # noqa: ANN001
        pending = set(futures)
        while pending:
            done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            _drain(q, events)
            for fut in done:
                yield _result_of(fut, futures[fut])
        _drain(q, events)


def _drain(q, events: EventSink | None) -> None:  # noqa: ANN001
    while True:
        try:
            ev = q.get_nowait()
        except (queue_mod.Empty, OSError, ValueError):
            return
        if events:
            events(ev)


def _result_of(fut: cf.Future, task: dict[str, Any]) -> dict[str, Any]:
    """The worker's result, or an error result when the worker process itself died."""
    try:
        return fut.result()
    except Exception as e:  # noqa: BLE001 - e.g. BrokenProcessPool after a crash
        return {"run_id": task["run_id"], "status": "error", "wall_s": 0.0, "counters": {}, "tables": {},
                "stop_reason": None, "host": None,
                "error": f"{type(e).__name__}: {e} (the worker process died; rerun with --resume --retry-failed)"}


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Cancels queued runs and ends the workers (used on Ctrl-C, SIGTERM and at the end).
    SIGKILL: the workers ignore SIGTERM (`worker.init_pool_worker`), and a run stopped
    midway has nothing to keep."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(timeout=5)


class RayExecutor:
    """Runs on Ray: a local Ray instance when `address` is None, else an existing cluster.

    Needs `pip install rdmalab[ray]`. Workers must have rdmalab installed, and files that
    scenarios name (topology or flow files) must exist at the same paths there.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        self.address = address
        self.num_cpus = num_cpus
        self._started_here = False
        self._reaper = None

    def _ray(self):
        try:
            import ray  # lazy on purpose: an optional dependency, and slow to import
        except ImportError:
            raise RuntimeError("the Ray executor needs Ray: pip install 'rdmalab[ray]'") from None
        if not ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address:
                kw["address"] = self.address
            elif self.num_cpus:
                kw["num_cpus"] = self.num_cpus
            if not self.address:
                # A local instance is ours: it must not outlive this process (`reaper`).
                self._reaper = reaper.start()
            ray.init(**kw)
            self._started_here = True
        return ray

    def capacity(self) -> int:
        """CPUs in the Ray cluster."""
        ray = self._ray()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def run(self, tasks: Iterable[dict[str, Any]], events: EventSink | None = None) -> Iterator[dict[str, Any]]:
        """Runs every task as a Ray task; yields each result as it finishes."""
        tasks = list(tasks)
        if not tasks:
            return
        ray = self._ray()
        remote = ray.remote(num_cpus=1, max_retries=1)(worker.execute)
        refs = {remote.remote(t): t for t in tasks}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
                for ref in done:
                    yield _ray_result(ray, ref, refs[ref])
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        """Shuts down the Ray instance if this executor started it."""
        if self._started_here:
            import ray  # lazy on purpose: an optional dependency (imported by `_ray` already)

            ray.shutdown()
            self._started_here = False
        reaper.stop(self._reaper)
        self._reaper = None


def _ray_result(ray, ref, task: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN001
    try:
        return ray.get(ref)
    except Exception as e:  # noqa: BLE001 - a worker or node died
        return {"run_id": task["run_id"], "status": "error", "wall_s": 0.0, "counters": {}, "tables": {},
                "stop_reason": None, "host": None, "error": f"{type(e).__name__}: {e}"}
