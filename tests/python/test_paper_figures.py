"""Figures a researcher can put in a paper as drawn: plain tick labels on log
axes, PFC bars that start at zero with whole frame counts (and say when nothing paused), the
`share` figure pooling seeds per case, and `rdmalab run` drawing what the run sampled and
nothing for what it lacks."""

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rdmalab import plots
from rdmalab.cli import main
from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.figures import standard, tenants
from rdmalab.experiments.sweep import Sweep

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def tick_texts(ax, axis: str = "y") -> list[str]:
    ax.figure.canvas.draw()
    a = ax.yaxis if axis == "y" else ax.xaxis
    return [t.get_text() for t in a.get_ticklabels(which="both") if t.get_text()]


def capture(monkeypatch, module) -> list:
    """The figures `module` would save, kept open instead."""
    figs = []
    monkeypatch.setattr(module, "save_figure", lambda fig, out, **_: figs.append(fig) or [Path(out)])
    return figs


def test_log_axes_are_labelled_with_plain_numbers():
    # Slowdowns between 2 and 4: less than a decade, so matplotlib labels minor ticks, which
    # its default formatter writes as `2×10⁰`, `3×10⁰` (mathtext).
    flows = pl.DataFrame({"size": np.arange(1, 201) * 1000, "slowdown": np.linspace(2.0, 4.0, 200)})
    fig = plots.slowdown_figure(flows, percentiles=["p50"])
    labels = tick_texts(fig.axes[0])
    assert labels and not any("times" in t or "$" in t or "10^" in t for t in labels), labels
    assert {"2", "3", "4"} <= set(labels), labels
    assert [plots.plain_number(x) for x in (2.75, 40, 1000, 2_500_000, 0.005)] == \
        ["2.75", "40", "1,000", "2,500,000", "0.005"]


REPORTS = {}


def sweep(tmp_path, grid, base, seeds=1, name="f"):
    s = Sweep.from_dict({"name": name, "base": base, "grid": grid, "seeds": seeds})
    REPORTS[name] = run_sweep(s, tmp_path / name, LocalExecutor(1), progress=False)
    return tmp_path / name


STAR = {"topology": {"kind": "star", "hosts": 4},
        "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": 300_000}]}


def test_pfc_figure_starts_at_zero_counts_whole_frames_and_says_when_nothing_paused(tmp_path, monkeypatch):
    figs = capture(monkeypatch, standard)
    # 32 MB of buffer: nothing pauses; 0.2 MB: the incast pauses its senders.
    standard.pfc_pause_time(sweep(tmp_path, {"fabric.buffer_mb": [32]}, STAR, name="calm"))
    standard.pfc_pause_time(sweep(tmp_path, {"fabric.buffer_mb": [0.2, 32]}, STAR, name="paused"))
    calm, paused = figs
    for ax in calm.axes:
        assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 0
        assert any("no PFC pauses" in t.get_text() for t in ax.texts)
        assert tick_texts(ax) == ["0"]
    for ax in paused.axes:
        assert ax.get_ylim()[0] == 0 and not ax.texts
    frames = tick_texts(paused.axes[1])
    assert all(t.replace(",", "").isdigit() for t in frames), frames  # no 0.25 frames


def test_share_figure_pools_seeds_into_one_bar_group_per_case(tmp_path, monkeypatch):
    figs = capture(monkeypatch, tenants)
    base = {"topology": {"kind": "dumbbell", "hosts_per_side": 2},
            "tenants": [{"name": "victim", "hosts": [0, 2]}, {"name": "attacker", "hosts": [1, 3]}],
            "stop_time": "200us",
            "traffic": [{"kind": "flows", "tenant": "victim", "flows": [{"src": 0, "dst": 2, "size": 10**9}]},
                        {"kind": "parallel_qps", "tenant": "attacker", "src": 1, "dst": 3, "qps": 2,
                         "size": 10**9}]}
    tenants.share_bars(sweep(tmp_path, {"traffic[1].qps": [1, 4]}, base, seeds=2))
    (ax,) = figs[0].axes
    labels = tick_texts(ax, "x")
    assert labels == ["qps=1", "qps=4"], labels  # one group per case, not one bar per seed
    assert all(t.get_rotation() == 0 and t.get_fontsize() >= 8 for t in ax.get_xticklabels())
    assert "mean of 2 seeds" in ax.get_title()
    assert len(ax.containers) >= 2 and ax.get_ylim()[0] == 0  # a bar series per tenant
    # The sweep's summary gives each attack run's tenants' Gb/s, not a nan slowdown.
    table = REPORTS["f"].table()
    assert "nan" not in table and re.search(r"attacker \d+\.\d, victim \d+\.\d Gb/s .* qps=4 seed=2", table), table


def test_the_sweep_summary_names_runs_in_full_and_traffic_lists_by_kind(tmp_path):
    base = {"topology": {"kind": "star", "hosts": 4}}
    cases = [[{"kind": "parallel_qps", "src": 1, "dst": 0, "qps": q, "size": 10_000}] for q in (2, 3)]
    table = REPORTS[sweep(tmp_path, {"traffic": cases}, base, name="long").name].table()
    assert "traffic=parallel2 seed=1" in table and "traffic=parallel3 seed=1" in table, table
    assert "nan" not in table


def test_run_draws_the_figures_of_what_was_sampled(tmp_path, capsys):
    out = tmp_path / "incast"
    assert main(["run", str(EXAMPLES / "incast.toml"), "--out", str(out), "--quiet", "--threads", "1"]) == 0
    for name in ("slowdown", "queues", "links", "rates"):
        assert (out / f"{name}.png").is_file() and (out / f"{name}.pdf").is_file(), name
    assert not (out / "pfc.png").exists()
    assert "no pfc figure: no port was paused" in capsys.readouterr().out


def test_an_apps_only_run_draws_no_empty_slowdown_figure(tmp_path, capsys):
    toml = tmp_path / "apps.toml"
    toml.write_text('stop_time = "30us"\n[topology]\nkind = "star"\nhosts = 2\n'
                    '[[app]]\nhost = 0\ndst = 1\nsize = 4096\nwr_num = 4\n')
    assert main(["run", str(toml), "--out", str(tmp_path / "o"), "--quiet", "--threads", "1"]) == 0
    assert not (tmp_path / "o" / "slowdown.png").exists()
    assert "no slowdown figure: no flow completed" in capsys.readouterr().out
    assert (tmp_path / "o" / "apps.parquet").is_file()


def test_the_sweep_summary_gives_messages_and_applications_what_they_measured(tmp_path):
    star = {"topology": {"kind": "star", "hosts": 3}}
    mp = {**star, "traffic": [{"kind": "multipath", "qps": 2, "chunk_size": 10_000,
                               "messages": [{"src": 1, "dst": 0, "size": 100_000}]}]}
    table = REPORTS[sweep(tmp_path, {"traffic[0].qps": [2]}, mp, name="mp").name].table()
    assert re.search(r"1 messages, FCT p50 \d+\.\d us", table) and "nan" not in table, table
    apps = {**star, "stop_time": "30us", "app": [{"host": 0, "dst": 1, "size": 4096, "wr_num": 4}]}
    table = REPORTS[sweep(tmp_path, {"app[0].wr_num": [4]}, apps, name="apps").name].table()
    assert re.search(r"1 apps, \d+\.\d Gb/s", table) and "nan" not in table, table
