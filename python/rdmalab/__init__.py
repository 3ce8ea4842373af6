"""rdmalab: a packet-level simulator of lossless RDMA fabrics, driven from Python.

    >>> import rdmalab
    >>> res = rdmalab.run(rdmalab.Scenario.star(4).incast([1, 2, 3], 0, 1_000_000))
    >>> res.flows            # polars DataFrame, one row per completed flow
    >>> print(res.summary())
"""

from typing import TYPE_CHECKING, Any

from rdmalab import _core  # noqa: F401  (the compiled engine)
from rdmalab._version import version as _full_version
from rdmalab.failure import RunFailed
from rdmalab.runner import RdmalabWarning, run, run_hpcc
from rdmalab.scenario import Scenario

if TYPE_CHECKING:
    from rdmalab.results import Results

__all__ = ["Scenario", "Results", "RdmalabWarning", "RunFailed", "run", "run_hpcc"]


def __getattr__(name: str) -> Any:
    # `__version__` is computed on first use: reading the commit may ask git.
    if name == "__version__":
        return _full_version()
    if name == "Results":
        # Lazy on purpose: the results module loads polars, which `rdmalab hpcc` does without.
        from rdmalab.results import Results

        return Results
    raise AttributeError(f"module 'rdmalab' has no attribute {name!r}")
