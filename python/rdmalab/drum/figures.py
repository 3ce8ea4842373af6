"""Convergence figures in the style of the paper's Figs. 4–5: objective and residuals per
iteration, ADMM against the dual-decomposition baseline on the same model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rdmalab.plots import plt, save_figure


def gap(values: np.ndarray, p_star: float) -> np.ndarray:
    """Relative gap ``(p* − f)/|p*|`` (0 at the optimum, ≤ 0.005 means "99.5 %")."""
    return (p_star - np.asarray(values, dtype=float)) / abs(p_star)


def iterations_to(values: np.ndarray, p_star: float, level: float) -> int | None:
    """First iteration (1-based) from which the feasible objective stays within
    ``1 − level`` of ``p*`` (e.g. level 0.995), or None."""
    ok = gap(values, p_star) <= 1.0 - level
    if not ok.any() or not ok[-1]:
        return None
    bad = np.nonzero(~ok)[0]
    return int(bad[-1] + 2) if bad.size else 1


def convergence_figure(admm, dd, p_star: float, title: str, out: Path) -> list[Path]:
    """Writes ``out``.png and .pdf: (a) objective / p*, (b) residuals, per iteration."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    it = np.arange(1, admm.iterations + 1)
    floor = 1e-16
    ax1.semilogy(it, np.maximum(gap(admm.history["objective"], p_star), floor), label="ADMM, feasible recovery", color="C0")
    if dd is not None:
        jt = np.arange(1, dd.iterations + 1)
        h = dd.history
        ax1.semilogy(jt, np.maximum(gap(h["recovered"], p_star), floor), label="DD, feasible recovery", color="C1")
        ax1.semilogy(jt, np.maximum(-gap(h["dual"], p_star), floor), label="DD, dual bound (above p*)", color="C1", ls="--")
    ax1.axhline(5e-3, color="grey", ls="-.", lw=0.8, label="99.5 % of optimum")
    ax1.axhline(1e-3, color="grey", ls=":", lw=0.8, label="99.9 % of optimum")
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("relative gap |f − p*| / |p*|")
    ax1.set_title("(a) objective")
    ax1.legend(fontsize=8)
    ax2.semilogy(it, admm.history["r_norm"], label="ADMM primal ‖a∘x − z‖", color="C0")
    ax2.semilogy(it, admm.history["s_norm"], label="ADMM dual ‖ρ a∘Δz‖", color="C0", ls="--")
    if dd is not None:
        ax2.semilogy(jt, dd.history["residual"], label="DD ‖z(y) − a∘x(y)‖", color="C1")
    ax2.set_xlabel("iteration")
    ax2.set_ylabel("residual norm")
    ax2.set_title("(b) residuals")
    ax2.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, out, dpi=130)
