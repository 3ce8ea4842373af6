"""The network-wide DRUM model, solved by host agents and a coordinator.

Agents (``rdmalab._core.DrumAgent``) each own a contiguous group of hosts and do the local
ADMM updates; the coordinator (``DrumCoordinator``) sums their per-resource loads in agent
order and broadcasts prices. The loop below is the same for both backends; only where the
agents live differs (this process, or one Ray actor per group), so iterates are identical.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from rdmalab import _core


@dataclass
class NetworkResult:
    """Outcome of :func:`solve_network`: raw rates ``x``, their feasible recovery ``x_hat``
    (scaled into every budget and link), its ``objective``, the resource ``prices`` (CQ
    budgets first, then links) and the per-iteration ``history``."""

    x: np.ndarray
    x_hat: np.ndarray
    objective: float
    prices: np.ndarray
    iterations: int
    converged: bool
    history: dict[str, np.ndarray]
    backend: str


def _rows(name: str, rows: Any, order: tuple[int, int, int, int]) -> Optional[np.ndarray]:
    if rows is None:
        return None
    arr = np.asarray(rows, dtype=np.float64)
    if arr.size == 0:
        return np.zeros((0, 4))
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"drum: {name}: expected rows of 4 numbers, got shape {arr.shape}")
    return np.ascontiguousarray(arr[:, list(order)])


class _LocalAgents:
    """Agents in this process."""

    def __init__(self, blobs: list[bytes]) -> None:
        self.agents = [_core.DrumAgent.from_bytes(b) for b in blobs]

    def step(self, u_prev: np.ndarray, u: np.ndarray) -> list:
        return [a.step(u_prev, u) for a in self.agents]

    def rates(self) -> list[np.ndarray]:
        return [a.x() for a in self.agents]

    def close(self) -> None:
        pass


class _RayAgents:
    """One Ray actor per agent; starts a local Ray instance if none is running."""

    def __init__(self, blobs: list[bytes], address: Optional[str]) -> None:
        import ray

        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                kw["num_cpus"] = max(1, min(len(blobs), os.cpu_count() or 1))
            ray.init(address=address, **kw)
            self.started = True

        @ray.remote(num_cpus=0)
        class AgentActor:
            def __init__(self, blob: bytes) -> None:
                from rdmalab import _core as core

                self.agent = core.DrumAgent.from_bytes(blob)

            def step(self, u_prev: np.ndarray, u: np.ndarray) -> tuple:
                return self.agent.step(u_prev, u)

            def rates(self) -> np.ndarray:
                return self.agent.x()

        self.actors = [AgentActor.remote(b) for b in blobs]

    def step(self, u_prev: np.ndarray, u: np.ndarray) -> list:
        refs = (self.ray.put(u_prev), self.ray.put(u))
        return self.ray.get([a.step.remote(*refs) for a in self.actors])

    def rates(self) -> list[np.ndarray]:
        return self.ray.get([a.rates.remote() for a in self.actors])

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
        if self.started:
            self.ray.shutdown()


def solve_network(
    a,
    Q,
    C,
    *,
    alpha: float,
    beta: float,
    active=None,
    k: Optional[int] = None,
    recv=None,
    link_cap=None,
    route=None,
    rho: float = 0.3,
    tol: float = 1e-9,
    max_iter: int = 10000,
    backend: str = "local",
    groups: int = 2,
    ray_address: Optional[str] = None,
) -> NetworkResult:
    """Solves the network-wide model (docs/drum.md, "network-wide model").

    ``C_h`` is host h's CQ budget, shared by its own completions ``a_hj x_hj`` and those of
    data it receives: ``recv`` rows ``(host, app, receiving_host, completions_per_wqe)``.
    Links: ``link_cap`` (length L) and ``route`` rows ``(link, host, app, load_per_wqe)``
    (e.g. bytes per WQE times the ECMP share; see :func:`leaf_spine_routes`).
    ``backend`` is ``"local"`` (agents in this process) or ``"ray"`` (one actor per group;
    ``ray_address=None`` starts a local Ray instance); both give identical iterates.
    """
    from . import _inputs

    a, Q, C, active, k = _inputs(a, Q, C, active, k)
    if backend not in ("local", "ray"):
        raise ValueError(f"drum: backend {backend!r} is not one of 'local', 'ray'")
    if not (tol > 0):
        raise ValueError(f"drum: tol = {tol} must be > 0")
    links = None if link_cap is None else np.ascontiguousarray(link_cap, dtype=np.float64)
    if (links is None) != (route is None):
        raise ValueError("drum: give link_cap and route together")
    coord = _core.DrumCoordinator(
        a, Q, C, float(alpha), float(beta), active=active, k=k, recv=_rows("recv", recv, (0, 1, 2, 3)),
        link_cap=links, route=_rows("route", route, (1, 2, 0, 3)), rho=float(rho), eps_abs=tol, eps_rel=tol,
        max_iter=int(max_iter),
    )
    blobs = coord.agents(int(groups))
    agents = _LocalAgents(blobs) if backend == "local" else _RayAgents(blobs, ray_address)
    records = []
    try:
        while not coord.done():
            u_prev, u = coord.prices()
            records.append(coord.update(agents.step(u_prev, u)))
        x = np.concatenate(agents.rates())
    finally:
        agents.close()
    out = coord.finish(x)
    hist = {key: np.array([r[key] for r in records]) for key in (records[0] if records else {})}
    return NetworkResult(
        x=out["x"], x_hat=out["x_hat"], objective=float(out["objective"]), prices=out["prices"],
        iterations=int(out["iterations"]), converged=bool(out["converged"]), history=hist, backend=backend,
    )


def receiver_completions(dst, ratio=1.0) -> np.ndarray:
    """``recv`` rows from a destination map: app ``(i, j)`` sends to host ``dst[i, j]``
    (``-1`` for none), whose CQ gets ``ratio`` completions per WQE."""
    dst = np.asarray(dst)
    ratio = np.broadcast_to(np.asarray(ratio, dtype=np.float64), dst.shape)
    i, j = np.nonzero(dst >= 0)
    return np.column_stack([i, j, dst[i, j], ratio[i, j]]).astype(np.float64)


def leaf_spine_routes(dst, hosts_per_leaf: int, n_spines: int, bytes_per_wqe, host_link: float, fabric_link: float):
    """Link capacities and ``route`` rows for a two-tier leaf–spine fabric with ECMP.

    Host ``h`` sits under leaf ``h // hosts_per_leaf``. Directed links, in order: host
    up-links (n), host down-links (n), leaf→spine (L·S), spine→leaf (L·S). A flow between
    leaves is split evenly over the spines (ECMP over equal-cost paths); within a leaf it
    uses only the two host links. Loads are ``bytes_per_wqe`` times the path share.
    """
    dst = np.asarray(dst)
    n = dst.shape[0]
    n_leaves = -(-n // hosts_per_leaf)
    bpw = np.broadcast_to(np.asarray(bytes_per_wqe, dtype=np.float64), dst.shape)
    up, down = 0, n
    l2s, s2l = 2 * n, 2 * n + n_leaves * n_spines
    cap = np.concatenate([np.full(2 * n, host_link), np.full(2 * n_leaves * n_spines, fabric_link)])
    rows = []
    for i, j in zip(*np.nonzero(dst >= 0)):
        d, b = int(dst[i, j]), float(bpw[i, j])
        rows.append((up + i, i, j, b))
        rows.append((down + d, i, j, b))
        ls, ld = i // hosts_per_leaf, d // hosts_per_leaf
        if ls != ld:
            for s in range(n_spines):
                rows.append((l2s + ls * n_spines + s, i, j, b / n_spines))
                rows.append((s2l + ld * n_spines + s, i, j, b / n_spines))
    return cap, np.array(rows, dtype=np.float64).reshape(-1, 4)
