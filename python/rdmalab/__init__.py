"""rdmalab: a packet-level simulator of lossless RDMA fabrics, driven from Python.

    >>> import rdmalab
    >>> res = rdmalab.run(rdmalab.Scenario.star(4).incast([1, 2, 3], 0, 1_000_000))
    >>> res.flows            # polars DataFrame, one row per completed flow
    >>> print(res.summary())
"""

from rdmalab import _core  # noqa: F401  (the compiled engine)
from rdmalab._version import version as _full_version
from rdmalab.failure import RunFailed
from rdmalab.results import Results
from rdmalab.runner import RdmalabWarning, run, run_hpcc
from rdmalab.scenario import Scenario

__all__ = ["Scenario", "Results", "RdmalabWarning", "RunFailed", "run", "run_hpcc"]


def __getattr__(name: str) -> str:
    # `__version__` is computed on first use: reading the commit may ask git.
    if name == "__version__":
        return _full_version()
    raise AttributeError(f"module 'rdmalab' has no attribute {name!r}")
