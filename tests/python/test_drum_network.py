"""Network-wide DRUM: fabric links from rdmalab topologies' routing (hand counts), sharing
ADMM against cvxpy, reduction to (P) without coupling, and identical iterates from the
in-process and Ray backends. cvxpy and Ray are test dependencies: their absence fails."""

from __future__ import annotations

import numpy as np
import pytest

import rdmalab.drum as drum
from rdmalab import Scenario
from rdmalab.drum.network import receiver_completions


def instance(seed, n=4, m=5, k=2):
    inst = drum.paper_instance(n, m, k, 0.5, 1.0, seed)
    rng = np.random.default_rng(seed)
    dst = (np.arange(n)[:, None] + 1 + rng.integers(0, n - 1, (n, m))) % n
    recv = receiver_completions(dst, rng.uniform(0.5, 2.0, (n, m)))
    # Two hosts per leaf, two spines. With 5000 B per WQE and rates in WQEs per µs, the
    # 120 Gb/s host links hold 3 WQE/µs and the 100 Gb/s fabric links 2.5: tight, so
    # that some links bind.
    topo = Scenario.leaf_spine(leaves=-(-n // 2), hosts_per_leaf=2, spines=2, host_rate="120Gbps", fabric_rate="100Gbps")
    r = drum.topology_routes(topo, dst, bytes_per_wqe=5000.0, time_unit=1e-6)
    return inst, recv, r.link_cap, r.route


def cvx_network(inst, recv, cap, route, active):
    import cvxpy as cp

    n, m = inst.a.shape
    x = cp.Variable(n * m, pos=True)
    a = inst.a.ravel()
    act = active.ravel().astype(float)
    obj = cp.sum(cp.multiply(act, cp.power(x, 0.5, approx=False))) / 0.5 - cp.sum(cp.power(cp.multiply(a, x), -2, approx=False))
    host = np.repeat(np.arange(n), m)
    Sq = np.zeros((n, n * m))
    Sq[host, np.arange(n * m)] = 1
    Sc = np.zeros((n, n * m))
    Sc[host, np.arange(n * m)] = a
    for i, j, h, c in recv:
        Sc[int(h), int(i) * m + int(j)] += c
    R = np.zeros((len(cap), n * m))
    for l, i, j, c in route:
        R[int(l), int(i) * m + int(j)] += c
    # Rows in units of each link's capacity: the same constraints, but conic solvers lose
    # accuracy on loads in bytes (coefficients of thousands).
    R = R / cap[:, None]
    cons = [Sq @ x <= inst.Q, Sc @ x <= inst.C, R @ x <= 1.0]
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500)
    assert prob.status == cp.OPTIMAL
    return prob.value, (R @ x.value - 1.0).max()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_network_matches_cvxpy(seed):
    inst, recv, cap, route = instance(seed)
    res = drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=inst.k, recv=recv, link_cap=cap, route=route, tol=1e-10, max_iter=20000)
    assert res.converged
    p_star, _ = cvx_network(inst, recv, cap, route, inst.active)
    assert abs(res.objective - p_star) <= 1e-6 * abs(p_star)
    assert res.history["violation"][-1] <= 1e-7
    assert np.all(res.prices >= 0)
    # Some shared resource binds, so the model is genuinely coupled.
    assert res.prices.max() > 1e-6


def fabric_of(inc, p):
    """(port, share) of pair p's switch-to-switch links."""
    fab = inc["links"]["fabric"]
    lo, hi = inc["ptr"][p], inc["ptr"][p + 1]
    return [(int(q), float(s)) for q, s in zip(inc["port"][lo:hi], inc["share"][lo:hi]) if fab[q]]


def test_leaf_spine_incidence_matches_a_hand_count():
    # Hosts 0, 1 under leaf 0; hosts 2, 3 under leaf 1; two spines.
    topo = Scenario.leaf_spine(leaves=2, hosts_per_leaf=2, spines=2)
    pairs = [(0, 1), (1, 2), (3, 0)]
    split = drum.link_incidence(topo, pairs)
    assert split["links"]["n_hosts"] == 4
    # Same leaf: the host's up-link and the leaf's down-link, no fabric link.
    assert split["ptr"][1] - split["ptr"][0] == 2 and fabric_of(split, 0) == []
    for p in (1, 2):
        # Across leaves: leaf→spine and spine→leaf over both spines, half the traffic each.
        assert sorted(s for _, s in fabric_of(split, p)) == [0.5] * 4
        assert split["share"][split["ptr"][p]:split["ptr"][p + 1]].sum() == pytest.approx(4.0)
    first = drum.link_incidence(topo, pairs, ecmp="first")
    assert [len(fabric_of(first, p)) for p in range(3)] == [0, 2, 2]
    assert np.all(first["share"] == 1.0)


def test_fat_tree_incidence_matches_a_hand_count():
    # k = 4: 16 hosts, two per edge switch, four per pod.
    topo = Scenario.fat_tree(4)
    pairs = [(0, 1), (0, 3), (0, 4), (5, 14)]
    first = drum.link_incidence(topo, pairs, ecmp="first")
    split = drum.link_incidence(topo, pairs, ecmp="split")
    # Same edge: none; same pod: edge→agg→edge; other pod: edge→agg→core→agg→edge.
    assert [len(fabric_of(first, p)) for p in range(4)] == [0, 2, 4, 4]
    assert [len(fabric_of(split, p)) for p in range(4)] == [0, 4, 12, 12]
    for p in (2, 3):
        assert sorted(s for _, s in fabric_of(split, p)) == [0.25] * 8 + [0.5] * 4
        assert sum(s for _, s in fabric_of(split, p)) == pytest.approx(4.0)


def test_topology_routes_are_bytes_times_shares():
    topo = Scenario.fat_tree(4, fabric_rate="40Gbps")
    dst = np.array([[4, 1, -1], [0, 15, 0]] + [[-1, -1, -1]] * 14)
    r = drum.topology_routes(topo, dst, bytes_per_wqe=1000.0, time_unit=1e-6, host_links=False)
    assert np.all(r.fabric) and np.all(r.link_cap == 5000.0)  # 40 Gb/s = 5000 B/µs
    inc = drum.link_incidence(topo, [(0, 4), (0, 1), (1, 0), (1, 15), (1, 0)])
    for p, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]):
        mine = r.route[(r.route[:, 1] == i) & (r.route[:, 2] == j)]
        got = sorted((int(r.port[int(l)]), c) for l, _, _, c in mine)
        assert got == sorted((q, 1000.0 * s) for q, s in fabric_of(inc, p))
    with_hosts = drum.topology_routes(topo, dst, bytes_per_wqe=1000.0, time_unit=1e-6)
    # Up-links of hosts 0 and 1, down-links to hosts 0, 1, 4 and 15.
    assert (~with_hosts.fabric).sum() == 6
    with pytest.raises(ValueError, match="out of range"):
        drum.topology_routes(topo, np.full((2, 2), 16))
    with pytest.raises(ValueError, match="ecmp"):
        drum.topology_routes(topo, dst, ecmp="hash")
    with pytest.raises(ValueError, match="topology"):
        drum.topology_routes(42, dst)


def test_network_on_a_fat_tree_matches_cvxpy():
    # k = 4 fat tree, every app sending to another pod; 12500 B per WQE against 100 Gb/s
    # (12500 B/µs) fabric links, so edge up-links bind.
    n, m = 16, 3
    inst = drum.paper_instance(n, m, 1, 0.5, 1.0, 3)
    dst = (np.arange(n)[:, None] + 4 * (1 + np.arange(m))[None, :]) % n
    r = drum.topology_routes(Scenario.fat_tree(4), dst, bytes_per_wqe=12500.0, time_unit=1e-6, host_links=False)
    assert len(r.link_cap) == 64 and np.all(r.fabric)
    res = drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=1, link_cap=r.link_cap, route=r.route,
                             tol=1e-10, max_iter=20000, groups=4)
    assert res.converged
    p_star, _ = cvx_network(inst, np.zeros((0, 4)), r.link_cap, r.route, inst.active)
    assert abs(res.objective - p_star) <= 1e-6 * abs(p_star)
    assert res.history["violation"][-1] <= 1e-7
    assert res.prices[n:].max() > 1e-6


def test_without_coupling_equals_the_local_model():
    inst = drum.paper_instance(5, 6, 2, 0.5, 1.0, 7)
    local = inst.solve(tol=1e-10)
    net = drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=2, tol=1e-10, groups=3)
    assert net.converged
    assert abs(net.objective - local.objective) <= 1e-7 * abs(local.objective)


def test_network_rejects_bad_couplings():
    inst, recv, cap, route = instance(1)
    bad = recv.copy()
    bad[0, 2] = 99
    with pytest.raises(ValueError, match="out of range"):
        drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=2, recv=bad)
    with pytest.raises(ValueError, match="together"):
        drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=2, link_cap=cap)
    with pytest.raises(ValueError, match="link_cap"):
        drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=2, link_cap=-cap, route=route)
    with pytest.raises(ValueError, match="backend"):
        drum.solve_network(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=2, backend="mpi")


@pytest.mark.serial  # a local Ray instance of its own: run alone
def test_local_and_ray_backends_give_the_same_iterates():
    import ray

    inst, recv, cap, route = instance(4, n=6, m=5)
    kw = dict(alpha=0.5, beta=1.0, k=2, recv=recv, link_cap=cap, route=route, tol=1e-12, max_iter=60, groups=3)
    local = drum.solve_network(inst.a, inst.Q, inst.C, backend="local", **kw)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = drum.solve_network(inst.a, inst.Q, inst.C, backend="ray", **kw)
    finally:
        if started:
            ray.shutdown()
    assert remote.iterations == local.iterations == 60
    np.testing.assert_allclose(remote.x, local.x, rtol=0, atol=1e-12)
    for key in local.history:
        np.testing.assert_allclose(remote.history[key], local.history[key], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(remote.prices, local.prices, rtol=0, atol=1e-12)
