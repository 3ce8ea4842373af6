"""Checking a DRUM instance's arrays and handing them to the solvers (``_core.DrumProblem``).

A leaf of ``rdmalab.drum``: the single-host solvers (``drum/__init__``) and the network model
(``drum/network``) both build their problem here, so neither imports the other for it."""

from __future__ import annotations

from typing import Any

import numpy as np

from rdmalab import _core


def _f64(name: str, v: Any, ndim: int) -> np.ndarray:
    arr = np.ascontiguousarray(v, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"drum: {name}: expected a {ndim}-D array, got shape {arr.shape}")
    return arr


def _inputs(a, Q, C, active, k):  # noqa: ANN001, ANN202
    a = _f64("a", a, 2)
    n, m = a.shape
    Q, C = _f64("Q", Q, 1), _f64("C", C, 1)
    if Q.shape != (n,) or C.shape != (n,):
        raise ValueError(f"drum: Q/C: expected length n = {n}, got {Q.shape[0]} and {C.shape[0]}")
    if active is not None:
        if k is not None:
            raise ValueError("drum: give either an active mask or k, not both")
        act = np.asarray(active)
        if act.shape != (n, m):
            raise ValueError(f"drum: active: mask shape {act.shape} differs from a's {(n, m)}")
        if act.dtype != np.bool_:
            if not np.isin(act, (0, 1)).all():
                raise ValueError("drum: active: mask entries must be boolean (or 0/1)")
            act = act.astype(bool)
        active = np.ascontiguousarray(act)
    elif k is None:
        raise ValueError("drum: give an (n, m) bool mask `active` or `k` for the optimal top-k rule")
    else:
        if isinstance(k, bool) or int(k) != k or k < 0:
            raise ValueError(f"drum: k = {k!r} must be a non-negative integer")
        k = int(k)
    return a, Q, C, active, k


def _problem(a, Q, C, alpha, beta, active, k):  # noqa: ANN001, ANN202
    """Checked inputs as the solvers take them (``_core.DrumProblem``, no copies)."""
    return _core.DrumProblem(a, Q, C, float(alpha), float(beta), active=active, k=k)
