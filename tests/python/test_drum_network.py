"""Network-wide DRUM: sharing ADMM against cvxpy, reduction to (P) without coupling, and
identical iterates from the in-process and Ray backends."""

from __future__ import annotations

import numpy as np
import pytest

import rdmalab.drum as drum
from rdmalab.drum.network import leaf_spine_routes, receiver_completions

cp = pytest.importorskip("cvxpy")


def instance(seed, n=4, m=5, k=2):
    inst = drum.paper_instance(n, m, k, 0.5, 1.0, seed)
    rng = np.random.default_rng(seed)
    dst = (np.arange(n)[:, None] + 1 + rng.integers(0, n - 1, (n, m))) % n
    recv = receiver_completions(dst, rng.uniform(0.5, 2.0, (n, m)))
    # Tight fabric links so that some of them bind.
    cap, route = leaf_spine_routes(dst, hosts_per_leaf=2, n_spines=2, bytes_per_wqe=1.0, host_link=0.6 * m, fabric_link=0.5 * m)
    return inst, recv, cap, route


def cvx_network(inst, recv, cap, route, active):
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
    cons = [Sq @ x <= inst.Q, Sc @ x <= inst.C, R @ x <= cap]
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500)
    assert prob.status == cp.OPTIMAL
    return prob.value, (R @ x.value - cap).max()


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


def test_local_and_ray_backends_give_the_same_iterates():
    ray = pytest.importorskip("ray")
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
