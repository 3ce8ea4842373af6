"""`rdmalab hpcc FOLDER`: every HPCC config under a folder, in parallel (local processes or
Ray), one progress bar, and a status line per config (docs/hpcc-dialects.md, "A folder of
scenarios").

Each config runs in its own folder as its working directory, so that relative paths in it
resolve there and its outputs land where it names them: the fork's layout, one folder per
scenario. A config that fails (bad input, a failed run) is reported with its error; the
others go on.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from rdmalab.experiments import reaper
from rdmalab.runner import Terminated, detect_hpcc_dialect, run_hpcc

#: The file names a folder run picks up by default: m4's `config_topology_flows.txt`, the
#: reference's `config.txt` and `*_config.txt`.
DEFAULT_PATTERN = "config*.txt"


def find_configs(folder: str | Path, pattern: str = DEFAULT_PATTERN) -> list[Path]:
    """The configs under `folder` (any depth) whose names match `pattern`, sorted."""
    return sorted(p for p in Path(folder).rglob(pattern) if p.is_file())


def workdir(path: Path) -> tuple[Path, Path]:
    """Where a config runs from, and its path from there: its own folder, or for a config the
    ConWeave artifact's `run.py` wrote (`ROOT/mix/output/ID/config.txt`, whose paths are
    relative to ROOT, where its `waf --run` starts) the artifact's root."""
    if len(path.parents) >= 4 and path.parents[1].name == "output" and path.parents[2].name == "mix":
        return path.parents[3], path.relative_to(path.parents[3])
    return path.parent, Path(path.name)


def run_one(config: str, dialect: str | None = None) -> dict[str, Any]:
    """Runs one config from its folder (`workdir`); a status dict (never raises): config, status
    ("ok", "failed", "error"), dialect, flows completed, stop reason, wall seconds, FCT path, error."""
    path = Path(config).resolve()
    where, rel = workdir(path)
    out: dict[str, Any] = {"config": str(path), "status": "error", "dialect": dialect, "flows": 0,
                           "stop_reason": None, "wall_s": 0.0, "fct": None, "error": None}
    cwd = os.getcwd()
    t0 = time.perf_counter()
    try:
        os.chdir(where)
        if dialect is None:
            out["dialect"] = detect_hpcc_dialect(rel)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res, fct, _ = run_hpcc(rel, progress=False, dialect=out["dialect"])
        out.update(flows=res.flows.height, stop_reason=res.stop_reason, fct=str(where / fct),
                   status="ok" if res.stop_reason in ("finished", "stop_time") else "failed")
        if res.stop_reason == "interrupted":
            out["error"] = (f"interrupted ({res.extra.get('interrupted_by', 'Ctrl-C')}): its outputs hold what it "
                            "measured up to then")
        elif out["status"] == "failed":
            out["error"] = f"the run ended {res.stop_reason}"
    except (ValueError, OSError, RuntimeError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        os.chdir(cwd)
        out["wall_s"] = time.perf_counter() - t0
    return out


class FolderRun(list):
    """The status dicts of a folder run, in the configs' order; `interrupted_by` is "Ctrl-C" or
    "SIGTERM" when one stopped it (the configs it never started have status "not run")."""

    interrupted_by: str | None = None


def _stop_once(signum: int, frame: object) -> None:
    """In a pool worker during a run: the first Ctrl-C or SIGTERM stops the run as it stops
    `rdmalab hpcc CONFIG` (its outputs are written); a repeat, from the driver or the
    terminal, is ignored so that it cannot cut those outputs short."""
    signal.signal(signum, signal.SIG_IGN)
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _init_worker(driver_pid: int | None = None) -> None:
    """A pool worker between configs ignores Ctrl-C and SIGTERM: the driver decides what stops;
    a worker that died of one would break the pool and lose the other configs' results. Given
    the driver's pid, it also ends when the driver is gone, even after `kill -9` of it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if driver_pid is not None:
        # Lazy on purpose: the sweep's worker module loads polars, which the driver of
        # `rdmalab hpcc` does without; a worker's run loads it anyway.
        from rdmalab.experiments.worker import die_with_parent

        die_with_parent(driver_pid)


def _interrupted_before_run(config: str, dialect: str | None, stop: KeyboardInterrupt) -> dict[str, Any]:
    """The row of a config whose worker was stopped before its run began."""
    by = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
    return {"config": str(Path(config).resolve()), "status": "failed", "dialect": dialect, "flows": 0,
            "stop_reason": "interrupted", "wall_s": 0.0, "fct": None,
            "error": f"interrupted ({by}) before its run began"}


def _run_in_pool(config: str, dialect: str | None) -> dict[str, Any]:
    signal.signal(signal.SIGINT, _stop_once)
    signal.signal(signal.SIGTERM, _stop_once)
    try:
        return run_one(config, dialect)
    except KeyboardInterrupt as stop:  # before the run began: nothing was measured
        return _interrupted_before_run(config, dialect, stop)
    finally:
        _init_worker()


def _failed_row(config: str, dialect: str | None, e: BaseException) -> dict[str, Any]:
    """A config whose worker process died (out of memory, killed): the others' results stay."""
    return {"config": str(Path(config).resolve()), "status": "error", "dialect": dialect, "flows": 0,
            "stop_reason": None, "wall_s": 0.0, "fct": None,
            "error": f"{type(e).__name__}: {e} (the worker process died)"}


#: Seconds the running configs get to stop and write their outputs after Ctrl-C or SIGTERM.
STOP_WAIT_S = 120.0


def _local(configs: list[Path], dialect: str | None, workers: int,
           stopped: list[str]) -> Iterator[dict[str, Any]]:
    """Runs the configs on `workers` processes; yields each result. On Ctrl-C or SIGTERM
    (`stopped` gets which), queued configs are cancelled, the running ones stop as a single
    run would (their outputs written) and their results are still yielded."""
    ctx = mp.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                  initargs=(os.getpid(),))
    futures = {pool.submit(_run_in_pool, str(c), dialect): str(c) for c in configs}
    left = set(futures)  # not yet yielded
    try:
        with _signals_stop_folder():
            while left:
                done, _ = cf.wait(left, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                for f in done:
                    left.discard(f)
                    yield _result(f, futures[f], dialect)
    except KeyboardInterrupt as stop:
        stopped.append("SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C")
        sig = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
        running = {f for f in left if not f.cancel()}  # done or executing
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            with contextlib.suppress(OSError):
                os.kill(proc.pid, sig)  # a worker that got it already ignores the repeat
        done, late = cf.wait(running, timeout=STOP_WAIT_S)
        for f in done:
            yield _result(f, futures[f], dialect)
        for proc in list((getattr(pool, "_processes", None) or {}).values()) if late else []:
            proc.kill()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(f: cf.Future, config: str, dialect: str | None) -> dict[str, Any]:
    try:
        return f.result()
    except Exception as e:  # noqa: BLE001 - e.g. BrokenProcessPool when a worker was killed
        return _failed_row(config, dialect, e)


def _default_signals() -> list[int]:
    """Ctrl-C and SIGTERM where they still have their default action, in the main thread (a
    handler the caller installed is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return []
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    return [sig for sig, default in defaults.items() if signal.getsignal(sig) is default]


@contextlib.contextmanager
def _signals_stop_folder(mine: list[int] | None = None, heard: list[str] | None = None) -> Iterator[None]:
    """SIGTERM stops the folder as Ctrl-C does, each once, for the signals `mine` (default:
    those with their default action now); `heard` gets which arrived. The handlers found
    are put back after (Ray's driver installs a SIGTERM handler of its own: `mine` is then
    decided before Ray starts, and Ray's handler is what is put back)."""
    mine = _default_signals() if mine is None else mine

    def stop(signum: int, frame: object) -> None:
        # Once: a repeat while the running configs write their outputs ends the driver.
        signal.signal(signum, signal.SIG_DFL)
        if heard is not None:
            heard.append("SIGTERM" if signum == signal.SIGTERM else "Ctrl-C")
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    found = {sig: signal.getsignal(sig) for sig in mine}
    for sig in mine:
        signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _rest(it: Iterator[dict[str, Any]], stop: KeyboardInterrupt) -> Iterator[dict[str, Any]]:
    """The results still to come after `stop` reached the driver outside `_local`'s own
    frame: `_local` is told (it stops its workers) and yields what the running configs wrote."""
    try:
        first = it.throw(stop)
    except StopIteration:
        return
    yield first
    yield from it


def _stop_once_in_ray(signum: int, frame: object) -> None:
    """In a Ray task during a run: the first Ctrl-C or SIGTERM (Ray's cancel arrives as
    Ctrl-C) stops the run as it stops `rdmalab hpcc CONFIG`; both are then ignored, so that
    neither a repeat nor the driver's cancel after a signal to the whole job can cut the
    outputs short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _run_in_ray(config: str, dialect: str | None) -> dict[str, Any]:
    """`run_one` as a Ray task: stopped by a signal as in a pool worker (`_run_in_pool`), the
    Ray worker's own handlers back after it."""
    found = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in found:
        signal.signal(sig, _stop_once_in_ray)
    try:
        return run_one(config, dialect)
    except KeyboardInterrupt as stop:  # before the run began: nothing was measured
        return _interrupted_before_run(config, dialect, stop)
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _ray(configs: list[Path], dialect: str | None, address: str | None,
         stopped: list[str]) -> Iterator[dict[str, Any]]:
    """Runs the configs as Ray tasks; yields each result. On Ctrl-C or SIGTERM (`stopped`
    gets which) the tasks not started are cancelled, the running ones stop as a single run
    would (Ray's cancel interrupts them; their outputs are written) and their results are
    still yielded; a local Ray instance started here ends with the folder."""
    # Lazy on purpose: Ray only when asked for (it takes seconds to import).
    import ray
    from ray.exceptions import TaskCancelledError

    mine = _default_signals()  # decided before Ray starts: its driver installs a SIGTERM handler
    started, reaping = not ray.is_initialized(), None
    if started:
        if address is None:  # a local instance is ours: it must not outlive this process
            reaping = reaper.start()
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(_run_in_ray)
    refs = {remote.remote(str(c), dialect): str(c) for c in configs}
    left = list(refs)  # not yet yielded
    try:
        with _signals_stop_folder(mine, stopped):
            while left:
                done, left = ray.wait(left, num_returns=1, timeout=0.5)
                for ref in done:
                    yield _ray_result(ray, ref, refs[ref], dialect)
    except KeyboardInterrupt:
        # Ray's wait turns what a signal handler raises into a plain KeyboardInterrupt:
        # `stopped` says which signal it was.
        if not stopped:
            stopped.append("Ctrl-C")
        for ref in left:
            ray.cancel(ref)
        done, late = ray.wait(left, num_returns=len(left), timeout=STOP_WAIT_S) if left else ([], [])
        for ref in done:
            try:
                yield ray.get(ref)
            except TaskCancelledError:  # cancelled before it started: "not run"
                continue
            except Exception as e:  # noqa: BLE001 - its worker ended first (below)
                yield _ended_with_ray(refs[ref], dialect, stopped[0], e)
        for ref in late:
            ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()
            reaper.stop(reaping)


def _ended_with_ray(config: str, dialect: str | None, by: str, e: BaseException) -> dict[str, Any]:
    """A config whose Ray worker ended before its run returned, after the folder was stopped:
    a signal to every process of the job also reaches a local Ray's raylet, which ends its
    workers, at times before their runs have written their outputs."""
    return {"config": str(Path(config).resolve()), "status": "failed", "dialect": dialect, "flows": 0,
            "stop_reason": "interrupted", "wall_s": 0.0, "fct": None,
            "error": f"interrupted ({by}): its Ray worker ended with the job before the run returned "
                     f"({type(e).__name__}); its outputs hold what it wrote by then"}


def _ray_result(ray: Any, ref: Any, config: str, dialect: str | None) -> dict[str, Any]:
    try:
        return ray.get(ref)
    except Exception as e:  # noqa: BLE001 - a worker or node died
        return _failed_row(config, dialect, e)


def run_folder(configs: list[Path], dialect: str | None = None, executor: str = "local",
               workers: int | None = None, address: str | None = None,
               progress: bool = True) -> FolderRun:
    """Runs `configs` on `executor` ("local": `workers` processes; "ray": the cluster at
    `address`, or a local one), with one progress bar; the status dicts in `configs`' order.
    Ctrl-C or SIGTERM stops the folder: the running configs stop and write what they
    measured, the others are "not run", and `interrupted_by` says which signal it was."""
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor `{executor}`: local or ray")
    workers = max(1, workers or os.cpu_count() or 1)
    stopped: list[str] = []
    it = _ray(configs, dialect, address, stopped) if executor == "ray" else _local(configs, dialect, workers, stopped)
    by_config: dict[str, dict[str, Any]] = {}
    failed = 0
    # Lazy on purpose: only a folder of configs draws this bar; `rdmalab hpcc CONFIG` does without tqdm.
    from tqdm import tqdm

    with tqdm(total=len(configs), unit="config", disable=not progress) as bar:
        def take(r: dict[str, Any]) -> None:
            nonlocal failed
            by_config[r["config"]] = r
            failed += r["status"] != "ok"
            bar.set_postfix(failed=failed)
            bar.update()

        try:
            for r in it:
                take(r)
        except KeyboardInterrupt as stop:
            for r in _rest(it, stop):
                take(r)
    out = FolderRun(by_config.get(str(Path(c).resolve())) or _not_run(c) for c in configs)
    out.interrupted_by = stopped[0] if stopped else None
    return out


def _not_run(config: Path) -> dict[str, Any]:
    return {"config": str(Path(config).resolve()), "status": "not run", "dialect": None, "flows": 0,
            "stop_reason": None, "wall_s": 0.0, "fct": None, "error": "not started before the folder was stopped"}


def status_line(r: dict[str, Any]) -> str:
    """One line per config: status, dialect, flows, wall time, and the error when it failed."""
    head = f"{r['status']:<6} {r['config']}"
    if r["status"] == "ok":
        return f"{head}  [{r['dialect']}] {r['flows']:,} flows in {r['wall_s']:.2f} s -> {r['fct']}"
    return f"{head}  {r['error']}"
