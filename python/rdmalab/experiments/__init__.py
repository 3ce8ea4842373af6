"""Experiment platform: sweeps, the results store, figures and paper reproductions.

    >>> from rdmalab.experiments import Sweep, run_sweep, load_sweep
    >>> report = run_sweep(Sweep.from_file("load.toml"), "out/load")
    >>> runs, flows = load_sweep("out/load")

See docs/experiments.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Sweep": "sweep", "SweepError": "sweep", "RunSpec": "sweep", "run_id": "sweep",
    "run_sweep": "driver", "SweepReport": "driver",
    "LocalExecutor": "executors", "RayExecutor": "executors",
    "Store": "store", "load_sweep": "store", "load_table": "store",
    "plot_sweep": "figures",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Imports the submodules on first use, so `rdmalab --help` stays quick."""
    if name in _EXPORTS:
        return getattr(import_module(f"rdmalab.experiments.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'rdmalab.experiments' has no attribute {name!r}")
