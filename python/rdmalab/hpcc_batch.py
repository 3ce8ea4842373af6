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
import multiprocessing as mp
import os
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from rdmalab.runner import detect_hpcc_dialect, run_hpcc

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
        if out["status"] == "failed":
            out["error"] = f"the run ended {res.stop_reason}"
    except (ValueError, OSError, RuntimeError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        os.chdir(cwd)
        out["wall_s"] = time.perf_counter() - t0
    return out


def _local(configs: list[Path], dialect: str | None, workers: int) -> Iterator[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(run_one, str(c), dialect) for c in configs]
        for f in cf.as_completed(futures):
            yield f.result()


def _ray(configs: list[Path], dialect: str | None, address: str | None) -> Iterator[dict[str, Any]]:
    # Lazy on purpose: Ray only when asked for (it takes seconds to import).
    import ray
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(run_one)
    pending = [remote.remote(str(c), dialect) for c in configs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0])


def run_folder(configs: list[Path], dialect: str | None = None, executor: str = "local",
               workers: int | None = None, address: str | None = None,
               progress: bool = True) -> list[dict[str, Any]]:
    """Runs `configs` on `executor` ("local": `workers` processes; "ray": the cluster at
    `address`, or a local one), with one progress bar; the status dicts in `configs`' order."""
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor `{executor}`: local or ray")
    workers = max(1, workers or os.cpu_count() or 1)
    it = _ray(configs, dialect, address) if executor == "ray" else _local(configs, dialect, workers)
    by_config: dict[str, dict[str, Any]] = {}
    failed = 0
    # Lazy on purpose: only a folder of configs draws this bar; `rdmalab hpcc CONFIG` does without tqdm.
    from tqdm import tqdm

    with tqdm(total=len(configs), unit="config", disable=not progress) as bar:
        for r in it:
            by_config[r["config"]] = r
            failed += r["status"] != "ok"
            bar.set_postfix(failed=failed)
            bar.update()
    return [by_config[str(Path(c).resolve())] for c in configs]


def status_line(r: dict[str, Any]) -> str:
    """One line per config: status, dialect, flows, wall time, and the error when it failed."""
    head = f"{r['status']:<6} {r['config']}"
    if r["status"] == "ok":
        return f"{head}  [{r['dialect']}] {r['flows']:,} flows in {r['wall_s']:.2f} s -> {r['fct']}"
    return f"{head}  {r['error']}"
