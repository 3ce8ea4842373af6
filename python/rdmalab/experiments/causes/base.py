"""The shared base of the investigation scripts: named parts, one `main`, the timing line, and
every run made through `run`, which keeps its results in the sweep store.

A script makes its runs with `run(scenario)` (a `Scenario`, a scenario dict with its base
folder, or TOML text; it returns a `Run`: tables by name, counters, wall time), builds one
`Investigation` with its parts (name -> function printing a table) and the parts run when
none is named, and ends with::

    if __name__ == "__main__":
        sys.exit(INVESTIGATION.main())

`python -m rdmalab.experiments.causes.<script> [--out DIR] [--fresh] [PART[:ARG...] ...]` runs
the parts named, in order (`floor:0.5:qp` hands "0.5" and "qp" to the part `floor`), refuses
an unknown part with the list of known ones, and ends with the wall time, `(N s)`.

The store: under `main`, each run's tables are written to a results store
(`rdmalab.experiments.store.Store`, default `out/causes/<script>/`) under the run id of its
scenario (`rdmalab.experiments.sweep.run_id`), and a later run of the same scenario reads them
back instead of simulating again. The id is the scenario's, not the simulator's: after a
change to the engine, pass `--fresh` (or delete the folder) so that every run is made again.
Called from Python (tests, notebooks) without `main`, `run` simulates and keeps nothing.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import polars as pl

from rdmalab.experiments.store import RUN_COLUMNS, Store
from rdmalab.experiments.sweep import RunSpec, run_id
from rdmalab.experiments.worker import execute
from rdmalab.runner import RdmalabWarning
from rdmalab.scenario import Scenario

#: Where `main` keeps a script's runs unless `--out` says otherwise.
STORE_ROOT = Path("out/causes")


@dataclass
class Run:
    """One run's results: its tables by name (`flows`, `messages`, `apps`, `wqes`, `pfc`,
    `tenant_bins`, ...), its counters and its wall time (of the simulation that made it)."""

    run_id: str
    tables: Mapping[str, pl.DataFrame]
    counters: dict[str, int]
    wall_s: float
    stored: bool = False  #: read back from the store rather than simulated now

    def __getattr__(self, name: str) -> pl.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"run {self.__dict__.get('run_id')} has no table {name!r}")


class _StoredTables(Mapping[str, pl.DataFrame]):
    """A stored run's tables, each read when first asked for."""

    def __init__(self, store: Store, rid: str):
        self.store, self.rid, self.cache = store, rid, {}
        self.names = [d.name for d in sorted(store.root.iterdir())
                      if d.is_dir() and d.name != "runs" and store.path(d.name, rid).is_file()]

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self.names:
            raise KeyError(name)
        if name not in self.cache:
            self.cache[name] = pl.read_parquet(self.store.path(name, self.rid)).drop("run_id")
        return self.cache[name]

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def as_spec(scenario: Scenario | dict[str, Any] | str, base_dir: str | Path | None = None) -> tuple[dict, str]:
    """A scenario (a `Scenario`, a dict of the TOML's structure, or TOML text) as the plain
    dict a sweep's run holds, and the folder its relative paths start from."""
    if isinstance(scenario, str):
        scenario = Scenario.from_toml_text(scenario)
    if isinstance(scenario, Scenario):
        return scenario.spec, str(base_dir or scenario.base_dir())
    if isinstance(scenario, dict):
        return scenario, str(base_dir or ".")
    raise TypeError(f"a run takes a Scenario, a scenario dict or TOML text, got {type(scenario).__name__}")


@dataclass
class _Active:
    """The store of the script whose `main` is running (None: keep nothing)."""

    store: Store | None = None
    fresh: bool = False
    name: str = ""


_ACTIVE = _Active()


def run(scenario: Scenario | dict[str, Any] | str, base_dir: str | Path | None = None) -> Run:
    """Simulates `scenario` (a `Scenario`, a scenario dict with its `base_dir`, or TOML text),
    or, under a script's `main`, reads it back from the store when a run of the same scenario
    is there. Raises RuntimeError with the run's error when it fails."""
    spec, base = as_spec(scenario, base_dir)
    rid = run_id(spec)
    store = _ACTIVE.store
    if store is not None and not _ACTIVE.fresh and store.path("runs", rid).is_file():
        row = pl.read_parquet(store.path("runs", rid)).row(0, named=True)
        if row["status"] == "ok":
            counters = {k: v for k, v in row.items() if k not in RUN_COLUMNS and isinstance(v, int)}
            return Run(rid, _StoredTables(store, rid), counters, float(row["wall_s"]), stored=True)
    out = execute({"run_id": rid, "scenario": spec, "base_dir": base})
    if out["status"] != "ok":
        raise RuntimeError(out["error"])
    for line in (out.get("warnings") or "").splitlines():  # as `rdmalab.run` warns
        warnings.warn(line, RdmalabWarning, stacklevel=2)
    if store is not None:  # the store adds a run_id column to what it writes: hand it copies
        store.write_run(RunSpec(rid, {}, spec, base), {**out, "tables": {k: v.clone() for k, v in out["tables"].items()}},
                        _ACTIVE.name)
    return Run(rid, out["tables"], dict(out["counters"]), float(out["wall_s"]))


@dataclass
class Investigation:
    """A script's parts: `parts` maps a part's name to the function that prints it (taking
    the strings after the name's colons, if any); `default` are the parts run when the
    command line names none; `header`, if any, is printed once before the first part (a
    table that the parts fill row by row)."""

    name: str
    parts: dict[str, Callable[..., None]]
    default: Sequence[str]
    header: str = ""

    def __post_init__(self) -> None:
        unknown = [p for p in self.default if p not in self.parts]
        if unknown:
            raise ValueError(f"{self.name}: default parts {unknown} are not among {list(self.parts)}")

    def main(self, argv: Sequence[str] | None = None) -> int:
        """The command line: the parts in order, then the timing line. 2 for an unknown part."""
        ap = argparse.ArgumentParser(prog=f"python -m rdmalab.experiments.causes.{self.name}",
                                     description=f"parts: {', '.join(self.parts)} (default: {' '.join(self.default)})")
        ap.add_argument("parts", nargs="*", metavar="PART[:ARG...]", help="the parts to run, in order")
        ap.add_argument("--out", type=Path, default=None,
                        help=f"the results store (default {STORE_ROOT}/{self.name})")
        ap.add_argument("--fresh", action="store_true", help="simulate every run again (after an engine change)")
        args = ap.parse_args(argv)
        calls = []
        for token in args.parts or list(self.default):
            name, *rest = token.split(":")
            if name not in self.parts:
                print(f"{self.name}: unknown part {name!r}: choose from {', '.join(self.parts)}", file=sys.stderr)
                return 2
            try:
                inspect.signature(self.parts[name]).bind(*rest)
            except TypeError as e:
                print(f"{self.name}: part {name!r} does not take {rest}: {e}", file=sys.stderr)
                return 2
            calls.append((self.parts[name], rest))
        _ACTIVE.store, _ACTIVE.fresh, _ACTIVE.name = Store(args.out or STORE_ROOT / self.name), args.fresh, self.name
        t0 = time.time()
        if self.header:
            print(self.header)
        try:
            for part, rest in calls:
                part(*rest)
        finally:
            _ACTIVE.store, _ACTIVE.fresh, _ACTIVE.name = None, False, ""
        print(f"({time.time() - t0:.0f} s)")
        return 0


def figure_dir(name: str) -> Path:
    """Where a script's figures go: its store's folder under `main`, else `out/causes/<name>`."""
    return _ACTIVE.store.root if _ACTIVE.store is not None else STORE_ROOT / name
