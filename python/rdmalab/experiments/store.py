"""The results store: one folder per sweep, Parquet files per run.

Layout of a sweep folder::

    sweep.json            the expanded sweep: name, dimensions, every run's id and parameters,
                          the rdmalab version (and commit) that expanded it
    sweep.toml            a copy of the sweep file it came from
    runs/<run_id>.parquet     one row: parameters, status, error text, wall time, counters, and
                              `rdmalab_version` (version + commit of the worker that ran it)
    flows/<run_id>.parquet    per-flow records (the `Results.flows` columns)
    ports/<run_id>.parquet    per-port counters (tx bytes, PFC pauses and paused time, ...)
    pfc/<run_id>.parquet      PFC frames received (time_ps, node, ifindex, pause)
    queues/<run_id>.parquet   switch queue samples when `fabric.queue_sample_interval` is set
    rates/<run_id>.parquet    per-QP rate and throughput samples when `fabric.rate_sample_interval`
                              is set (time_ps, qp, flow, src, dst, rate_gbps, throughput_gbps, ccti,
                              window_bytes)
    deadlock/<run_id>.parquet the first PFC deadlock's cycle, one row per hop (node, port,
                              priority, formed_ns, detected_ns); no rows when there was none
    messages/<run_id>.parquet multipath messages (`Results.messages`), empty without multipath
    chunks/<run_id>.parquet   multipath chunks (`Results.chunks`)
    paths/<run_id>.parquet    Virtuoso paths (`Results.paths`), empty without split = "virtuoso"
    apps/<run_id>.parquet     closed-loop applications (`Results.apps`), empty without `[[app]]`
    drum/<run_id>.parquet     DRUM's allocations per period (`Results.drum`)
    wqes/<run_id>.parquet     one row per WQE of those applications (`Results.wqes`)

Every file is written to a temporary name and renamed into place, and a run's row in
`runs/` is written last: a run is finished exactly when its `runs/` file exists, so a sweep
killed at any moment resumes without losing or redoing a finished run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from rdmalab._version import version
from rdmalab.experiments.sweep import RunSpec, Sweep, canonical_json

#: Per-run tables besides `runs`.
TABLES = ("flows", "ports", "pfc", "queues", "rates", "links", "deadlock", "messages", "chunks", "paths", "apps",
          "drum", "wqes", "balance", "reorder", "collectives", "collective_steps")
#: Columns of the runs table that are not parameters or counters.
RUN_COLUMNS = ("run_id", "sweep", "label", "status", "error", "wall_s", "stop_reason", "stall_cause",
               "warnings", "host", "finished_at", "rdmalab_version", "flows", "scenario")


def atomic_write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Writes `df` to `path` so that readers see the whole file or none of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, path)


def _atomic_write_text(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def param_value(v: Any) -> Any:
    """A parameter as a Parquet cell: scalars as they are, tables and lists as JSON text."""
    return v if isinstance(v, (bool, int, float, str)) or v is None else canonical_json({"v": v})[5:-1]


class Store:
    """A sweep's folder of results."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, table: str, run_id: str) -> Path:
        """Where a run's table lives."""
        return self.root / table / f"{run_id}.parquet"

    # -- writing ------------------------------------------------------------------------
    def write_manifest(self, sweep: Sweep, runs: list[RunSpec]) -> None:
        """Records the expanded sweep (and a copy of its file) in the folder."""
        self.root.mkdir(parents=True, exist_ok=True)
        manifest = {
            "name": sweep.name, "description": sweep.description, "source": sweep.source,
            "dimensions": sweep.dimensions(), "plot": sweep.plot, "rdmalab_version": version(),
            "runs": [{"run_id": r.run_id, "params": r.params} for r in runs],
        }
        _atomic_write_text(json.dumps(manifest, indent=1, default=str), self.root / "sweep.json")
        if sweep.source and Path(sweep.source).is_file():
            _atomic_write_text(Path(sweep.source).read_text(), self.root / "sweep.toml")

    def manifest(self) -> dict[str, Any]:
        """The manifest written by `write_manifest` (empty when there is none)."""
        p = self.root / "sweep.json"
        return json.loads(p.read_text()) if p.is_file() else {}

    def write_run(self, spec: RunSpec, result: dict[str, Any], sweep_name: str = "") -> None:
        """Writes a finished run: its tables first, its `runs/` row last."""
        for name, df in result.get("tables", {}).items():
            if isinstance(df, pl.DataFrame):
                atomic_write_parquet(df.insert_column(0, pl.lit(spec.run_id).alias("run_id")),
                                     self.path(name, spec.run_id))
        atomic_write_parquet(pl.DataFrame([self._run_row(spec, result, sweep_name)]),
                             self.path("runs", spec.run_id))

    @staticmethod
    def _run_row(spec: RunSpec, result: dict[str, Any], sweep_name: str) -> dict[str, Any]:
        flows = result.get("tables", {}).get("flows")
        row: dict[str, Any] = {
            "run_id": spec.run_id, "sweep": sweep_name, "label": spec.label(),
            "status": result["status"], "error": result.get("error"),
            "wall_s": float(result.get("wall_s") or 0.0), "stop_reason": result.get("stop_reason"),
            "stall_cause": result.get("stall_cause"), "warnings": result.get("warnings"),
            "host": result.get("host"), "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "rdmalab_version": version(),
            "flows": flows.height if isinstance(flows, pl.DataFrame) else 0,
            "scenario": canonical_json(spec.scenario),
        }
        row.update({k: param_value(v) for k, v in spec.params.items()})
        row.update({k: int(v) for k, v in result.get("counters", {}).items() if k not in row})
        return row

    # -- reading ------------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        """Ids of the runs finished (successfully or not), sorted."""
        d = self.root / "runs"
        return sorted(p.stem for p in d.glob("*.parquet") if not p.name.startswith(".")) if d.is_dir() else []

    def statuses(self) -> dict[str, str]:
        """run id -> status of every finished run."""
        out = {}
        for rid in self.run_ids():
            df = pl.read_parquet(self.path("runs", rid), columns=["status"])
            out[rid] = df["status"][0]
        return out

    def clean_temporaries(self) -> int:
        """Removes half-written files left by a killed sweep; returns how many. A file whose
        writer (the process id its name ends with) is still alive is left alone: another
        sweep writing into the same folder is about to rename it into place, and removing
        it would fail that write and stop that sweep."""
        n = 0
        for p in self.root.glob("*/.*.tmp*"):
            writer = p.name.rsplit(".tmp", 1)[1]
            if writer.isdigit() and int(writer) != os.getpid() and _alive(int(writer)):
                continue
            p.unlink(missing_ok=True)
            n += 1
        return n

    def runs(self) -> pl.DataFrame:
        """The runs table: one row per finished run."""
        frames = [pl.read_parquet(self.path("runs", rid)) for rid in self.run_ids()]
        if not frames:
            return pl.DataFrame(schema={"run_id": pl.Utf8, "status": pl.Utf8, "error": pl.Utf8,
                                        "wall_s": pl.Float64})
        return _concat(frames)

    def table(self, name: str, runs: pl.DataFrame | None = None, params: bool = True,
              columns: tuple[str, ...] | None = None) -> pl.DataFrame:
        """A per-run table (`flows`, `ports`, `pfc`, `queues`, `rates`, `messages`, `chunks`, `paths`) of every run, with `run_id` and,
        when `params`, the sweep's parameter columns joined on. `columns`: read only these
        (those a file has) and `run_id`, with the joined text parameters as categories: a
        sweep of tens of millions of flows then fits in a few GB."""
        d = self.root / name
        files = sorted(p for p in d.glob("*.parquet") if not p.name.startswith(".")) if d.is_dir() else []
        finished = set(self.run_ids())
        frames = [_read(p, columns) for p in files if p.stem in finished]
        if not frames:
            return pl.DataFrame(schema={"run_id": pl.Utf8})
        df = _concat(frames)
        if params:
            runs = self.runs() if runs is None else runs
            cols = ["run_id", "label"] + [c for c in self.dimensions() if c in runs.columns]
            joined = runs.select(cols)
            if columns is not None:
                text = [c for c in cols if joined.schema[c] == pl.Utf8]
                joined = joined.with_columns(pl.col(text).cast(pl.Categorical))
            df = df.join(joined, on="run_id", how="left")
        return df

    def dimensions(self) -> list[str]:
        """The sweep's varied parameters (from the manifest)."""
        return list(self.manifest().get("dimensions", []))


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _read(path: Path, columns: tuple[str, ...] | None) -> pl.DataFrame:
    """One run's table file, all its columns or those of `columns` it has (and `run_id`), the
    text ones then as categories (a run id or a status repeated on every row costs 4 bytes)."""
    if columns is None:
        return pl.read_parquet(path)
    have = pl.read_parquet_schema(path)
    df = pl.read_parquet(path, columns=[c for c in dict.fromkeys(("run_id", *columns)) if c in have])
    return df.with_columns(pl.col(pl.Utf8).cast(pl.Categorical))


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """Concatenates frames whose columns may differ; mixed-type columns become text."""
    try:
        return pl.concat(frames, how="diagonal_relaxed")
    except (pl.exceptions.PolarsError, TypeError):
        frames = [f.with_columns(pl.all().cast(pl.Utf8)) for f in frames]
        return pl.concat(frames, how="diagonal_relaxed")


def load_sweep(root: str | Path, columns: tuple[str, ...] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A sweep folder as DataFrames: (runs, flows). `flows` carries `run_id`, the run's
    `label` and its parameter columns, ready to group by; `columns`: only these of the flow
    table (`Store.table`)."""
    store = Store(root)
    if not (store.root / "runs").is_dir():
        raise FileNotFoundError(f"{root}: not a sweep folder (no runs/ inside)")
    runs = store.runs()
    return runs, store.table("flows", runs, columns=columns)


def load_table(root: str | Path, name: str) -> pl.DataFrame:
    """One per-run table of a sweep (`flows`, `ports`, `pfc`, `queues`, `rates`, `messages`,
    `chunks`), parameters joined."""
    return Store(root).table(name)
