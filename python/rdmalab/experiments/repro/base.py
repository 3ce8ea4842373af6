"""The vocabulary every paper's module shares: a registered `Experiment` and the rows of
(ours, theirs) its `compare` returns. A leaf: paper modules import it, `repro` collects them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import polars as pl

from rdmalab.experiments.store import Store

#: The folder of the sweep files and reference data.
HERE = Path(__file__).resolve().parent


@dataclass
class Comparison:
    """One number of ours beside the paper's (or a reference simulator's)."""

    group: str
    metric: str
    ours: float
    theirs: float

    def row(self, width: int = 22) -> str:
        """One line; `width`: the group column's width (at least the longest group + 1)."""
        ratio = self.ours / self.theirs if self.theirs else float("nan")
        return f"{self.group:<{width}}{self.metric:<22}{self.ours:>10.3f}{self.theirs:>10.3f}{ratio:>8.2f}"


@dataclass
class Experiment:
    """A registered paper experiment."""

    name: str
    title: str
    citation: str
    sweep: str
    quick: str | None
    figures: list[str]
    by: str
    #: (runs, flows, store) -> rows; runs and flows as `load_sweep` gives them, the store for other tables.
    compare: Callable[[pl.DataFrame, pl.DataFrame, Store], list[Comparison]]
    theirs: str
    needs_cc: list[str] = field(default_factory=list)
    #: (runs, flows, store) -> text printed after the comparison rows (e.g. a table of verdicts).
    report: Callable[[pl.DataFrame, pl.DataFrame, Store], str] | None = None
    #: (sweep folder, figure folder) -> files: a figure the generic kinds do not draw.
    extra_figures: Callable[[Path, Path], list[Path]] | None = None
    #: (output folder, quick) -> rows: an experiment that runs no sweep (e.g. a solver's
    #: convergence); `sweep` and `quick` are then empty.
    solve: Callable[[Path, bool], list[Comparison]] | None = None
    #: The flow-table columns `compare` and `report` read (None: all): a sweep of tens of
    #: millions of flows is loaded with only these.
    flow_columns: tuple[str, ...] | None = None
    #: The numbers beside ours are computed from each run's own scenario (closed forms), so a
    #: quick run's are its own rather than the full experiment's.
    theirs_from_runs: bool = False

    def sweep_path(self, quick: bool = False) -> Path:
        """The sweep file shipped with the package."""
        name = self.quick if quick and self.quick else self.sweep
        return Path(str(resources.files(__package__).joinpath(name)))
