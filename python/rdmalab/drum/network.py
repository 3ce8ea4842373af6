"""The network-wide DRUM model, solved by host agents and a coordinator.

Agents (``rdmalab._core.DrumAgent``) each own a contiguous group of hosts and do the local
ADMM updates; the coordinator (``DrumCoordinator``) sums their per-resource loads in agent
order and broadcasts prices. The loop below is the same for both backends; only where the
agents live differs (this process, or one Ray actor per group), so iterates are identical.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from rdmalab import _core
from rdmalab.drum._inputs import _inputs, _problem
from rdmalab.scenario import Scenario


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
        import ray  # lazy on purpose: Ray is an optional dependency (rdmalab[ray])

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
                from rdmalab import _core as core  # runs in the Ray worker process

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
    (e.g. bytes per WQE times the ECMP share; :func:`topology_routes` builds them from an
    rdmalab topology's routing).
    ``backend`` is ``"local"`` (agents in this process) or ``"ray"`` (one actor per group;
    ``ray_address=None`` starts a local Ray instance); both give identical iterates.
    """
    a, Q, C, active, k = _inputs(a, Q, C, active, k)
    if backend not in ("local", "ray"):
        raise ValueError(f"drum: backend {backend!r} is not one of 'local', 'ray'")
    if not (tol > 0):
        raise ValueError(f"drum: tol = {tol} must be > 0")
    links = None if link_cap is None else np.ascontiguousarray(link_cap, dtype=np.float64)
    if (links is None) != (route is None):
        raise ValueError("drum: give link_cap and route together")
    coord = _core.DrumCoordinator(
        _problem(a, Q, C, alpha, beta, active, k), recv=_rows("recv", recv, (0, 1, 2, 3)), link_cap=links,
        route=_rows("route", route, (1, 2, 0, 3)), rho=float(rho), eps_abs=tol, eps_rel=tol, max_iter=int(max_iter),
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


@dataclass
class TopologyRoutes:
    """Fabric links of the network-wide model, from a topology's own routing tables.

    Resource ``l`` (the ``link`` column of ``route``) is the directed link ``port[l]`` of
    the topology, from node ``from_node[l]`` to ``to_node[l]``, of rate ``rate_bps[l]``;
    ``fabric[l]`` says whether it joins two switches (else it is a host NIC link).
    ``link_cap`` and ``route`` go to :func:`solve_network` as they are.
    """

    link_cap: np.ndarray
    route: np.ndarray
    port: np.ndarray
    from_node: np.ndarray
    to_node: np.ndarray
    rate_bps: np.ndarray
    fabric: np.ndarray
    n_hosts: int


def _topology_json(topology) -> tuple[str, str]:
    """The JSON scenario holding only ``topology``'s table, and the folder its paths are
    relative to. Accepts a :class:`rdmalab.Scenario`, a topology table (``{"kind":
    "fat_tree", "k": 4}``) or a whole scenario dict, or the path of a TOML scenario."""
    if isinstance(topology, (str, os.PathLike)):
        topology = Scenario.from_toml(topology)
    if isinstance(topology, Scenario):
        spec, base = topology.spec.get("topology"), topology.base_dir()
    elif isinstance(topology, dict):
        spec, base = topology.get("topology", topology), os.getcwd()
    else:
        raise ValueError(f"drum: topology: expected a Scenario, a topology dict or a TOML path, got {type(topology).__name__}")
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError("drum: topology: no topology table with a 'kind' (e.g. Scenario.fat_tree(4))")
    return json.dumps({"topology": spec}), base


def _ecmp(ecmp: str) -> str:
    if ecmp not in ("split", "first"):
        raise ValueError(f"drum: ecmp {ecmp!r} is not one of 'split', 'first'")
    return ecmp


def link_incidence(topology, pairs, *, ecmp: str = "split") -> dict[str, Any]:
    """Which directed links each ``(src, dst)`` host pair's traffic crosses, with its share
    on each, under the topology's own shortest-path routing (hosts numbered in ascending
    node id). ``ecmp="split"`` divides traffic evenly over the equal-cost next hops at every
    switch (the expected load of hash ECMP); ``"first"`` uses the first shortest path.

    Returns ``ptr``, ``port``, ``share`` (pair ``p`` owns entries ``ptr[p]:ptr[p+1]``) and
    ``links``: per port of the topology, ``from_node``, ``to_node``, ``rate_bps``, ``fabric``.
    """
    text, base = _topology_json(topology)
    arr = np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
    return _core.drum_pair_links(text, base, arr, _ecmp(ecmp))


def topology_routes(
    topology,
    dst,
    *,
    bytes_per_wqe=4096.0,
    time_unit: float = 1e-6,
    ecmp: str = "split",
    host_links: bool = True,
) -> TopologyRoutes:
    """Link capacities and ``route`` rows of :func:`solve_network` for a real rdmalab
    topology (``Scenario.leaf_spine(...)``, ``Scenario.fat_tree(4)``, a topology dict or a
    TOML scenario path), so the model is solved on the fabric that is simulated.

    App ``(i, j)`` sends to host ``dst[i, j]`` (``-1``: nothing), DRUM host ``i`` being the
    topology's i-th host. Its rate loads every link on its route by ``bytes_per_wqe[i, j]``
    times the link's share of the pair's traffic (see :func:`link_incidence` for ``ecmp``).
    A link's capacity is its rate in bytes per ``time_unit`` seconds, so the rates ``x``
    are WQEs per ``time_unit``. Only crossed links are kept; host NIC links only with
    ``host_links``.
    """
    text, base = _topology_json(topology)
    dst = np.ascontiguousarray(np.asarray(dst, dtype=np.int64))
    if dst.ndim != 2:
        raise ValueError(f"drum: dst: expected an (n, m) array, got shape {dst.shape}")
    bpw = np.ascontiguousarray(np.broadcast_to(np.asarray(bytes_per_wqe, dtype=np.float64), dst.shape))
    out = _core.drum_topology_routes(text, base, dst, bpw, time_unit=float(time_unit), ecmp=_ecmp(ecmp),
                                     host_links=bool(host_links))
    return TopologyRoutes(**out)
