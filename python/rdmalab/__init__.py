"""rdmalab: a packet-level simulator of lossless RDMA fabrics, driven from Python."""

from rdmalab import _core  # noqa: F401  (the compiled engine)

__all__ = ["_core"]
__version__ = "0.1.0"
