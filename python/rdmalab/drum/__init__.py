"""DRUM resource scheduling (the DRUM paper) on a sound footing: the convex model (P), ADMM,
the dual-decomposition baseline, a KKT certificate, and the network-wide model solved by
host agents and a coordinator, in process or on Ray.

The solvers live in Rust (``rdmalab._core``); this module checks arguments, shapes the
results and drives the distributed solve. See ``docs/drum.md`` for the model and for every
deviation from the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from rdmalab import _core

from ._inputs import _f64, _inputs, _problem  # noqa: F401  (older private paths)
from .network import NetworkResult, TopologyRoutes, link_incidence, solve_network, topology_routes

__all__ = [
    "Instance",
    "Result",
    "NetworkResult",
    "TopologyRoutes",
    "kkt",
    "link_incidence",
    "paper_instance",
    "solve",
    "solve_network",
    "top_k_mask",
    "topology_routes",
]


@dataclass
class Result:
    """Outcome of :func:`solve`.

    ``x`` and ``z`` are the final iterates; ``x_hat`` (a property) is their feasible
    recovery, at which ``objective`` is evaluated. For ``method="dd"``, ``x`` is the best
    feasible recovered point, ``lam``/``mu`` are ``None`` and ``converged`` is ``False``
    (the subgradient method has no stopping rule).
    """

    x: np.ndarray
    z: np.ndarray
    objective: float
    iterations: int
    lam: Optional[np.ndarray]
    mu: Optional[np.ndarray]
    converged: bool
    history: dict[str, np.ndarray]
    active: np.ndarray
    method: str = "admm"
    w: Optional[np.ndarray] = None
    rho: float = float("nan")
    scales: Optional[np.ndarray] = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def x_hat(self) -> np.ndarray:
        """Feasible recovery ``x * min(1, Q/Σx, C/Σax)`` per host."""
        return self.x if self.scales is None else self.x * self.scales[:, None]

    def warm_start(self) -> dict[str, Any]:
        """The ADMM state, to pass as ``solve(..., warm_start=...)``."""
        if self.method != "admm":
            raise ValueError("drum: only an ADMM result can warm-start a solve")
        return {"x": self.x, "z": self.z, "w": self.w, "lam": self.lam, "mu": self.mu, "rho": self.rho}


def solve(
    a,
    Q,
    C,
    *,
    alpha: float,
    beta: float,
    active=None,
    k: Optional[int] = None,
    rho: float = 0.3,
    tol: float = 1e-9,
    max_iter: int = 10000,
    method: str = "admm",
    adaptive_rho: bool = False,
    warm_start: Optional[dict] = None,
    capacity: str = "linear",
    dd_iterations: Optional[int] = None,
    dd_step0: float = 1e-3,
) -> Result:
    """Solves (P): maximise ``Σ I U(x) − β Σ (a x)^-2`` within ``Σ_j x ≤ Q``, ``Σ_j a x ≤ C``.

    ``a`` is an (n, m) float64 array, ``Q`` and ``C`` have length n; ``active`` is an (n, m)
    bool mask, or ``None`` with ``k`` given (then the k apps with the smallest ``a_ij`` of
    each host are active, which is optimal). ``method`` is ``"admm"`` or ``"dd"`` (the
    dual-decomposition baseline, run for ``dd_iterations`` steps, default ``max_iter``).
    ``capacity="log"`` (the paper's form) is refused with the reason.
    """
    _core.drum_check_capacity(capacity)
    a, Q, C, active, k = _inputs(a, Q, C, active, k)
    if method == "admm":
        return _admm(a, Q, C, alpha, beta, active, k, rho, tol, max_iter, adaptive_rho, warm_start)
    if method == "dd":
        iters = max_iter if dd_iterations is None else dd_iterations
        return _dd(a, Q, C, alpha, beta, active, k, dd_step0, iters)
    raise ValueError(f"drum: method {method!r} is not one of 'admm', 'dd'")


def _admm(a, Q, C, alpha, beta, active, k, rho, tol, max_iter, adaptive_rho, warm_start):  # noqa: ANN001, ANN202
    if not (tol > 0):
        raise ValueError(f"drum: tol = {tol} must be > 0")
    warm = None
    if warm_start is not None:
        warm = {key: np.ascontiguousarray(warm_start[key], dtype=np.float64) for key in ("x", "z", "w", "lam", "mu")}
        warm["rho"] = float(warm_start["rho"])
    r = _core.drum_solve_admm(
        _problem(a, Q, C, alpha, beta, active, k), rho=float(rho), eps_abs=tol, eps_rel=tol,
        max_iter=int(max_iter), adaptive_rho=bool(adaptive_rho), warm=warm,
    )
    hist = {key[2:]: r[key] for key in r if key.startswith("h_")}
    return Result(
        x=r["x"], z=r["z"], objective=float(r["objective"]), iterations=int(r["iterations"]), lam=r["lam"],
        mu=r["mu"], converged=bool(r["converged"]), history=hist, active=r["active"], method="admm", w=r["w"],
        rho=float(r["rho"]), scales=r["scales"],
    )


def _dd(a, Q, C, alpha, beta, active, k, step0, iterations):  # noqa: ANN001, ANN202
    r = _core.drum_solve_dual(_problem(a, Q, C, alpha, beta, active, k), step0=float(step0), iterations=int(iterations))
    hist = {key[2:]: r[key] for key in r if key.startswith("h_")}
    x = r["x_best"]
    act = active if active is not None else top_k_mask(a, k)
    rec = hist["recovered"]
    best = float(np.max(rec)) if rec.size else float("nan")
    return Result(
        x=x, z=a * x, objective=best, iterations=int(iterations), lam=None, mu=None, converged=False,
        history=hist, active=act, method="dd", extra={"y": r["y"]},
    )


def kkt(a, Q, C, x, *, alpha: float, beta: float, active=None, k=None, lam=None, mu=None) -> dict:
    """KKT certificate of ``x`` for (P): relative stationarity, primal, dual and
    complementarity residuals (``max_residual``) and the multipliers used (inferred by
    non-negative least squares unless ``lam`` and ``mu`` are given)."""
    a, Q, C, active, k = _inputs(a, Q, C, active, k)
    x = _f64("x", x, 2)
    lam = None if lam is None else _f64("lam", lam, 1)
    mu = None if mu is None else _f64("mu", mu, 1)
    return _core.drum_kkt(_problem(a, Q, C, alpha, beta, active, k), x, lam=lam, mu=mu)


def top_k_mask(a, k: int) -> np.ndarray:
    """The optimal active set: the ``k`` apps with the smallest ``a_ij`` on each host."""
    return _core.drum_top_k_mask(_f64("a", a, 2), int(k))


@dataclass
class Instance:
    """A paper-style instance (see :func:`paper_instance`)."""

    a: np.ndarray
    Q: np.ndarray
    C: np.ndarray
    k: int
    alpha: float
    beta: float
    seed: int

    def solve(self, **kw: Any) -> Result:
        """``solve(a, Q, C, alpha=..., beta=..., k=...)`` with this instance's data."""
        kw.setdefault("alpha", self.alpha)
        kw.setdefault("beta", self.beta)
        if kw.get("active") is None:
            kw.setdefault("k", self.k)
        return solve(self.a, self.Q, self.C, **kw)

    @property
    def active(self) -> np.ndarray:
        """The optimal top-k mask."""
        return top_k_mask(self.a, self.k)


def paper_instance(n: int, m: int, k: int, alpha: float, beta: float, seed: int) -> Instance:
    """An instance as in the paper's simulations: ``a_ij`` ~ N(5.5, 2.25²) clipped to
    [1, 10]; linear budgets ``Q_i = (m/2)·U(0.8, 1.2)``, ``C_i = Q_i·mean(a_i)·U(0.8, 1.2)``
    (the paper's ``q_i = 25, c_i = 15`` belong to its rejected log-sum constraints)."""
    if not (0 <= k < m):
        raise ValueError(f"drum: k = {k} must satisfy 0 ≤ k < m = {m}")
    a, Q, C = _core.drum_paper_instance(int(n), int(m), int(seed))
    return Instance(a=a, Q=Q, C=C, k=int(k), alpha=float(alpha), beta=float(beta), seed=int(seed))
