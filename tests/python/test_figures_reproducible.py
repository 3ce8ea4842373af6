"""Every figure file is byte-reproducible: drawing it again gives the same PNG and PDF bytes.
The PDF backend stamps the time of drawing unless told not to, so each pair of
drawings here runs under a different SOURCE_DATE_EPOCH (the time matplotlib stamps): a
writer that bypasses `rdmalab.plots.save_figure` and its fixed metadata shows as a difference.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rdmalab.cli import main
from rdmalab.drum.figures import convergence_figure
from rdmalab.experiments import repro
from rdmalab.experiments.figures import plot_sweep
from rdmalab.plots import plt, save_figure


def _same_bytes(a: Path, b: Path) -> list[str]:
    """Names of the figure files of folder `a` whose bytes differ in folder `b` (or are missing)."""
    names = sorted(p.name for p in a.iterdir() if p.suffix in (".pdf", ".png"))
    assert any(n.endswith(".pdf") for n in names), f"no PDF in {a}"
    return [n for n in names if not (b / n).is_file() or (a / n).read_bytes() != (b / n).read_bytes()]


def _draw(monkeypatch, epoch: int, draw):  # noqa: ANN001, ANN202
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(epoch))
    return draw()


def test_save_figure_writes_the_same_bytes_at_another_time(tmp_path, monkeypatch):
    def draw(out: Path) -> list[Path]:
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2], [2, 0, 1], label="x")
        ax.legend()
        return save_figure(fig, out / "f")

    _draw(monkeypatch, 0, lambda: draw(tmp_path / "a"))
    _draw(monkeypatch, 1_000_000_000, lambda: draw(tmp_path / "b"))
    assert _same_bytes(tmp_path / "a", tmp_path / "b") == []


def test_a_repro_draws_the_same_figures_twice(tmp_path, monkeypatch, capsys):
    """`rdmalab repro run drum-fig2a --quick` (its own figure, drawn by drum_fabric's writer),
    then its figures drawn again from the stored results at another time."""
    out = tmp_path / "o"
    code = _draw(monkeypatch, 0, lambda: main(["repro", "run", "drum-fig2a", "--quick", "--out", str(out),
                                                  "--quiet"]))
    assert code == 0
    exp = repro.get("drum-fig2a")
    again = tmp_path / "again"
    _draw(monkeypatch, 1_000_000_000, lambda: exp.extra_figures(out, again))
    assert _same_bytes(out / "figures", again) == []


def test_the_generic_kinds_and_an_experiments_own_figure_are_reproducible(tmp_path, monkeypatch, capsys):
    """blitz-incast-roce's own figure (incast FCT against the degree) and the generic CDF, twice."""
    out = tmp_path / "o"
    exp = repro.get("blitz-incast-roce")
    assert main(["repro", "run", exp.name, "--quick", "--out", str(out), "--quiet"]) == 0
    for epoch, folder in ((0, tmp_path / "a"), (1_000_000_000, tmp_path / "b")):
        _draw(monkeypatch, epoch, lambda: (exp.extra_figures(out, folder),
                                           plot_sweep(out, exp.figures, by=exp.by, out_dir=folder)))
    assert (tmp_path / "a" / "cdf.pdf").is_file() and (tmp_path / "a" / "incast_fct.pdf").is_file()
    assert _same_bytes(tmp_path / "a", tmp_path / "b") == []


def test_the_drum_solver_convergence_figure_is_reproducible(tmp_path, monkeypatch):
    it = np.arange(1, 21, dtype=float)
    admm = SimpleNamespace(iterations=20, history={"objective": 1 - 1 / it, "r_norm": 1 / it, "s_norm": 1 / it ** 2})
    dd = SimpleNamespace(iterations=20, history={"recovered": 1 - 2 / it, "dual": 1 + 1 / it, "residual": 1 / it})
    for epoch, folder in ((0, "a"), (1_000_000_000, "b")):
        _draw(monkeypatch, epoch, lambda: convergence_figure(admm, dd, 1.0, "test", tmp_path / folder / "conv"))
    assert _same_bytes(tmp_path / "a", tmp_path / "b") == []
