"""DRUM solver: ADMM against cvxpy, the KKT certificate, the top-k rule by enumeration,
warm starts, the dual-decomposition baseline and input validation. Only the reference
optimum needs cvxpy (a test dependency, so its absence fails those tests, not the rest)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rdmalab.drum as drum


def cvx_optimum(a, Q, C, active, alpha, beta):
    """Reference optimum of (P) by a generic conic solver."""
    import cvxpy as cp

    x = cp.Variable(a.shape, pos=True)
    util = cp.sum(cp.multiply(active.astype(float), cp.power(x, 1 - alpha, approx=False))) / (1 - alpha)
    pen = cp.sum(cp.power(cp.multiply(a, x), -2, approx=False))
    cons = [cp.sum(x, axis=1) <= Q, cp.sum(cp.multiply(a, x), axis=1) <= C]
    prob = cp.Problem(cp.Maximize(util - beta * pen), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500)
    assert prob.status == cp.OPTIMAL
    return prob.value, x.value


def objective(a, x, active, alpha, beta):
    return float((active * x ** (1 - alpha)).sum() / (1 - alpha) - beta * ((a * x) ** -2.0).sum())


CASES = [(5, 8, 3, 0.5, 1.0, 11), (4, 12, 5, 0.3, 0.5, 12), (6, 7, 2, 0.8, 2.0, 13)]


@pytest.mark.parametrize("n,m,k,alpha,beta,seed", CASES)
@pytest.mark.parametrize("mask", ["topk", "random"])
def test_admm_matches_cvxpy(n, m, k, alpha, beta, seed, mask):
    inst = drum.paper_instance(n, m, k, alpha, beta, seed)
    rng = np.random.default_rng(seed)
    active = inst.active if mask == "topk" else rng.random((n, m)) < 0.5
    res = drum.solve(inst.a, inst.Q, inst.C, alpha=alpha, beta=beta, active=active, tol=1e-10)
    assert res.converged
    p_star, _ = cvx_optimum(inst.a, inst.Q, inst.C, active, alpha, beta)
    assert abs(res.objective - p_star) <= 1e-6 * abs(p_star)
    xh = res.x_hat
    assert abs(objective(inst.a, xh, active, alpha, beta) - res.objective) <= 1e-9 * abs(p_star)
    assert np.all(xh.sum(1) <= inst.Q * (1 + 1e-9))
    assert np.all((inst.a * xh).sum(1) <= inst.C * (1 + 1e-9))
    assert np.all(res.x.sum(1) <= inst.Q * (1 + 1e-9))
    assert np.all(res.z.sum(1) <= inst.C * (1 + 1e-9))
    assert np.all(res.lam >= 0) and np.all(res.mu >= 0)
    h = res.history
    assert len(h["objective"]) == res.iterations and h["r_norm"][-1] <= h["eps_pri"][-1]


def test_kkt_certificate_accepts_optimum_and_rejects_perturbations():
    inst = drum.paper_instance(6, 10, 4, 0.5, 1.0, 5)
    res = inst.solve(tol=1e-11)
    kw = dict(alpha=0.5, beta=1.0, k=4)
    assert drum.kkt(inst.a, inst.Q, inst.C, res.x_hat, **kw)["max_residual"] <= 1e-7
    given = drum.kkt(inst.a, inst.Q, inst.C, res.x, lam=res.lam, mu=res.mu, **kw)
    assert given["max_residual"] <= 1e-7
    rng = np.random.default_rng(0)
    for eps in (1e-2, 1e-4):
        noisy = res.x_hat * (1 + eps * rng.standard_normal(res.x.shape))
        noisy *= min(1.0, (inst.Q / noisy.sum(1)).min(), (inst.C / (inst.a * noisy).sum(1)).min())
        assert drum.kkt(inst.a, inst.Q, inst.C, noisy, **kw)["max_residual"] > 1e-5
    shrunk = 0.99 * res.x_hat
    assert drum.kkt(inst.a, inst.Q, inst.C, shrunk, **kw)["max_residual"] > 1e-3
    wrong_mult = drum.kkt(inst.a, inst.Q, inst.C, res.x, lam=res.lam * 1.01, mu=res.mu, **kw)
    assert wrong_mult["stationarity"] > 1e-4


@pytest.mark.parametrize("seed", range(4))
def test_top_k_rule_beats_every_subset(seed):
    m, k = 8, 3
    inst = drum.paper_instance(1, m, k, 0.5, 1.0, 100 + seed)
    subsets = list(itertools.combinations(range(m), k))
    n = len(subsets)
    a, Q, C = np.repeat(inst.a, n, 0), np.repeat(inst.Q, n), np.repeat(inst.C, n)
    mask = np.zeros((n, m), bool)
    for r, s in enumerate(subsets):
        mask[r, list(s)] = True
    res = drum.solve(a, Q, C, alpha=0.5, beta=1.0, active=mask, tol=1e-11)
    xh = res.x_hat
    values = (mask * 2 * np.sqrt(xh)).sum(1) - ((a * xh) ** -2.0).sum(1)
    best = int(np.argmax(values))
    top = set(np.argsort(inst.a[0], kind="stable")[:k])
    assert set(subsets[best]) == top
    top_row = subsets.index(tuple(sorted(top)))
    assert values[top_row] >= values.max() - 1e-9 * abs(values.max())
    single = drum.solve(inst.a, inst.Q, inst.C, alpha=0.5, beta=1.0, k=k, tol=1e-11)
    assert abs(single.objective - values.max()) <= 1e-7 * abs(values.max())


def test_warm_start_resumes_quickly():
    inst = drum.paper_instance(20, 30, 5, 0.5, 1.0, 3)
    cold = inst.solve(tol=1e-9)
    again = inst.solve(tol=1e-9, warm_start=cold.warm_start())
    assert again.iterations <= 2 and abs(again.objective - cold.objective) <= 1e-9 * abs(cold.objective)
    Q2 = inst.Q * 1.02
    warm = drum.solve(inst.a, Q2, inst.C, alpha=0.5, beta=1.0, k=5, tol=1e-9, warm_start=cold.warm_start())
    fresh = drum.solve(inst.a, Q2, inst.C, alpha=0.5, beta=1.0, k=5, tol=1e-9)
    assert warm.converged and warm.iterations < fresh.iterations
    broken = cold.warm_start()
    broken["w"] = np.full_like(broken["w"], np.nan)
    with pytest.raises(ValueError, match="NaN"):
        inst.solve(warm_start=broken)
    with pytest.raises(ValueError, match="shape"):
        drum.solve(inst.a[:5], inst.Q[:5], inst.C[:5], alpha=0.5, beta=1.0, k=5, warm_start=cold.warm_start())
    assert abs(warm.objective - fresh.objective) <= 1e-7 * abs(fresh.objective)


def test_adaptive_rho_from_the_papers_rho():
    inst = drum.paper_instance(10, 20, 5, 0.5, 1.0, 8)
    ref = inst.solve(tol=1e-10)
    ada = inst.solve(tol=1e-10, rho=1e-3, adaptive_rho=True, max_iter=5000)
    assert ada.converged and abs(ada.objective - ref.objective) <= 1e-6 * abs(ref.objective)
    assert ada.rho > 1e-3


def test_dual_decomposition_bounds():
    inst = drum.paper_instance(8, 10, 3, 0.5, 1.0, 4)
    p_star = inst.solve(tol=1e-10).objective
    dd = inst.solve(method="dd", dd_iterations=60)
    h = dd.history
    assert len(h["dual"]) == 60 and not dd.converged
    assert np.all(h["dual"] >= p_star - 1e-9 * abs(p_star))
    assert np.all(h["recovered"] <= p_star + 1e-9 * abs(p_star))
    assert dd.objective == pytest.approx(h["recovered"].max())
    xb = dd.x
    assert np.all(xb.sum(1) <= inst.Q * (1 + 1e-12)) and np.all((inst.a * xb).sum(1) <= inst.C * (1 + 1e-12))
    assert objective(inst.a, xb, inst.active, 0.5, 1.0) == pytest.approx(dd.objective, rel=1e-9)


def test_paper_instance_is_deterministic_and_in_range():
    i1 = drum.paper_instance(30, 40, 5, 0.5, 1.0, 9)
    i2 = drum.paper_instance(30, 40, 5, 0.5, 1.0, 9)
    assert np.array_equal(i1.a, i2.a) and np.array_equal(i1.Q, i2.Q) and np.array_equal(i1.C, i2.C)
    assert i1.a.min() >= 1 and i1.a.max() <= 10 and i1.a.shape == (30, 40)
    assert np.all(i1.Q > 0) and np.all(i1.C > 0)
    assert (i1.active.sum(1) == 5).all()


def good():
    inst = drum.paper_instance(3, 4, 2, 0.5, 1.0, 1)
    return inst.a.copy(), inst.Q.copy(), inst.C.copy()


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda a, Q, C, kw: (a[:2], Q, C, kw), "Q/C"),
        (lambda a, Q, C, kw: (a, Q[:2], C, kw), "Q/C"),
        (lambda a, Q, C, kw: (a.ravel(), Q, C, kw), "2-D"),
        (lambda a, Q, C, kw: (a * np.where(np.arange(4) == 1, -1, 1), Q, C, kw), "> 0"),
        (lambda a, Q, C, kw: (a * np.where(np.arange(4) == 1, 0, 1), Q, C, kw), "> 0"),
        (lambda a, Q, C, kw: (np.where(a > 5, np.nan, a), Q, C, kw), "finite"),
        (lambda a, Q, C, kw: (a, -Q, C, kw), "Q"),
        (lambda a, Q, C, kw: (a, Q, C * 0, kw), "C"),
        (lambda a, Q, C, kw: (a, Q, np.full(3, np.inf), kw), "C"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "k": 4}), "k = 4"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "k": None}), "top-k"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "k": None, "active": np.ones((3, 5), bool)}), "shape"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "active": np.ones((3, 4), bool)}), "either"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "alpha": 1.0}), "α"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "beta": float("nan")}), "β"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "rho": 0.0}), "ρ"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "method": "newton"}), "method"),
        (lambda a, Q, C, kw: (a, Q, C, {**kw, "capacity": "log"}), "unbounded"),
    ],
)
def test_bad_inputs_raise_clear_errors(mutate, match):
    a, Q, C = good()
    a2, Q2, C2, kw = mutate(a, Q, C, {"alpha": 0.5, "beta": 1.0, "k": 2})
    with pytest.raises(ValueError, match=match):
        drum.solve(a2, Q2, C2, **kw)


def test_cli_solve_and_bench(tmp_path, capsys):
    from rdmalab.cli import main

    assert main(["drum", "solve", "--hosts", "6", "--apps", "8", "--k", "3", "--seed", "2", "--dd-iterations", "10", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "iterations to 99.5 % of optimum" in out and "dual bound" in out
    assert (tmp_path / "drum_convergence_6x8.png").stat().st_size > 0
    assert (tmp_path / "drum_convergence_6x8.pdf").stat().st_size > 0
    bench = tmp_path / "bench.json"
    assert main(["drum", "bench", "--scales", "5x6", "--k", "2", "--iterations", "3", "--out", str(bench)]) == 0
    import json

    (row,) = json.loads(bench.read_text())
    assert row["iterations"] == 3 and row["seconds_per_iteration"] > 0 and row["fallback_rows"] == 0
