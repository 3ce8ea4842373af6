"""Which QPs does the DRUM paper's top-k rule keep on the TC1/TC2 instances? Solved exactly.

`python -m rdmalab.experiments.causes.drum_topk_exact` prints the table of
docs/drum-fabric.md §6.2. For each instance (one host's applications as DRUM's agent sees
them: a_j = 1/wr_num, rates per µs, Q = 0.9/0.68, C = 10, α = 0.5, β = 1, k = 19) it solves
(P) with a fixed active set exactly, from its KKT system (docs/drum.md §1) by bisection on
the multipliers, and checks the point with a generic convex solver (cvxpy, Clarabel), for
two active sets:

- ours: the k smallest a (docs/drum.md §2, the rule the agent uses), and
- fg kept: the foreground forced in, the background with the largest a out.

The paper's own rule (Definition 2: "the k applications with largest utilities", i.e. the
largest rates x) is the literal top-k objective (L) = max over all k-sets of (P). The last
column says where the foreground ranks by x at each optimum, so whether the paper's
ranking would keep it. A small instance (m = 8, k = 3) drawn the same way is solved for all
56 sets, to show which set (L)'s exact optimum picks. Needs scipy and cvxpy (the test extras).
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from rdmalab.experiments.causes.base import Investigation

ALPHA, BETA, K = 0.5, 1.0, 19
Q, C = 0.9 / 0.68, 10.0
SEED = 25  # the background's batch sizes are drawn once, with this seed


def x_of(nu: np.ndarray, a: np.ndarray, act: np.ndarray) -> np.ndarray:
    """x_j with I_j x^-α + 2β a_j^-2 x^-3 = ν_j, by bisection in log x (60 halvings)."""
    b = 2 * BETA / a**2
    lo = np.maximum((b / nu) ** (1 / 3), np.where(act, (1 / nu) ** (1 / ALPHA), 0))
    hi = np.maximum((2 * b / nu) ** (1 / 3), np.where(act, (2 / nu) ** (1 / ALPHA), 0))
    lo, hi = np.log(lo), np.log(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        x = np.exp(mid)
        g = np.where(act, x**-ALPHA, 0) + b * x**-3
        lo, hi = np.where(g > nu, mid, lo), np.where(g > nu, hi, mid)
    return np.exp((lo + hi) / 2)


def solve_kkt(a: np.ndarray, act: np.ndarray) -> tuple[np.ndarray, float]:
    """(P) with active mask `act`: the WQE budget binds (checked: the CQ budget is slack on
    these instances, μ = 0), λ by bisection in log λ on Σ x(λ) = Q."""
    lo, hi = np.log(1e-30), np.log(1e30)
    for _ in range(200):
        mid = (lo + hi) / 2
        if x_of(np.full(a.size, np.exp(mid)), a, act).sum() > Q:
            lo = mid
        else:
            hi = mid
    x = x_of(np.full(a.size, np.exp((lo + hi) / 2)), a, act)
    assert (a * x).sum() <= C, "CQ budget binds: μ > 0 is not handled here"
    return x, float(np.exp((lo + hi) / 2))


def objective(x: np.ndarray, a: np.ndarray, act: np.ndarray) -> float:
    return float((act * x ** (1 - ALPHA) / (1 - ALPHA)).sum() - BETA * ((a * x) ** -2.0).sum())


def solve_cvxpy(a: np.ndarray, act: np.ndarray) -> np.ndarray | None:
    """The same (P) by a generic conic solver, in units where the equal split is 1 and the
    objective divided by its penalty there (neither changes the optimum's x); None if the
    solver fails."""
    import cvxpy as cp  # optional (test extras) and slow to import: only this check needs it

    s = Q / a.size
    scale = BETA * ((a * s) ** -2.0).sum()
    y = cp.Variable(a.size, pos=True)
    util = s ** (1 - ALPHA) * cp.sum(cp.multiply(act.astype(float), cp.power(y, 1 - ALPHA))) / (1 - ALPHA)
    pen = BETA * cp.sum(cp.multiply((a * s) ** -2.0, cp.power(y, -2)))
    prob = cp.Problem(cp.Maximize((util - pen) / scale), [cp.sum(y) * s <= Q, cp.sum(cp.multiply(a, y)) * s <= C])
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:
        return None
    return None if y.value is None else np.asarray(y.value) * s


def smallest_k(a: np.ndarray, k: int) -> np.ndarray:
    act = np.zeros(a.size, bool)
    act[np.lexsort((np.arange(a.size), a))[:k]] = True
    return act


def instances() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(SEED)
    out = []
    for cc in (20, 100):
        bg = 1.0 / rng.integers(20, 101, cc - 1)
        out.append((f"TC1 cc = {cc} (KV clients, wr_num 1)", np.ones(cc)))
        out.append((f"TC2 Fig. 9 cc = {cc} (fg wr_num 100)", np.concatenate([[1 / 100], bg])))
        out.append((f"TC2 Fig. 7 cc = {cc} (fg wr_num 1)", np.concatenate([[1.0], bg])))
    return out


def row(name: str, a: np.ndarray) -> list[str]:
    ours = smallest_k(a, K)
    kept = ours.copy()
    if not kept[0]:
        kept[np.flatnonzero(kept)[np.argmax(a[kept])]] = False
        kept[0] = True
    lines = []
    for label, act in (("ours: k smallest a", ours), ("fg kept", kept)):
        x, _ = solve_kkt(a, act)
        xc = solve_cvxpy(a, act)
        rank = int((x > x[0]).sum()) + 1
        lines.append(f"| {name} | {label} | {'in' if act[0] else 'out'} | {objective(x, a, act):.6f} | "
                     f"{x[0]:.5f} | {x[1:].min():.5f}-{x[1:].max():.5f} | {rank} of {a.size} | "
                     f"{'failed' if xc is None else f'{np.abs(xc / x - 1).max():.1e}'} |")
        if np.array_equal(ours, kept):
            break
    return lines


def small_exhaustive() -> str:
    rng = np.random.default_rng(SEED)
    a = np.concatenate([[1.0], 1.0 / rng.integers(20, 101, 7)])
    best = max(itertools.combinations(range(8), 3),
               key=lambda s: objective(solve_kkt(a, np.isin(np.arange(8), s))[0], a, np.isin(np.arange(8), s)))
    ours = tuple(int(j) for j in np.flatnonzero(smallest_k(a, 3)))
    return (f"m = 8, k = 3, a = {np.round(a, 4).tolist()}: the best of the 56 sets is {best}, "
            f"the 3 smallest a are {ours}: {'the same' if best == ours else 'different'}; "
            f"foreground (index 0) {'in' if 0 in best else 'out'}")


def table() -> None:
    print(f"alpha {ALPHA}, beta {BETA}, k {K}, Q {Q:.4f}/us, C {C}/us, background wr_num ~ U[20, 100] "
          f"(seed {SEED}); x per us")
    print("| instance | active set | fg | optimum of (P) | fg x | background x | fg's rank by x | "
          "cvxpy vs KKT, max rel. x |")
    print("|---|---|---|---|---|---|---|---|")
    for name, a in instances():
        print("\n".join(row(name, a)))
    print(small_exhaustive())


INVESTIGATION = Investigation("drum_topk_exact", {"table": table}, ["table"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
