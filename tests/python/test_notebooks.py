"""Notebook use: figures that return a Figure and take `ax=`, HTML reprs, the TOML round
trip of a scenario, byte-reproducible figure files, and the examples/ folder."""

import runpy
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import rdmalab  # noqa: E402
from rdmalab import Scenario, plots, run  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RDMALAB = Path(sys.executable).parent / "rdmalab"


@pytest.fixture(scope="module")
def sampled():
    sc = (Scenario.star(5).incast([1, 2, 3, 4], 0, 300_000)
          .with_fabric(cc="dcqcn", buffer_mb=0.3, queue_sample_interval="2us", rate_sample_interval="5us",
                       link_sample_interval="5us"))
    return sc, run(sc, progress=False)


def test_to_toml_round_trips_to_the_same_scenario_and_run(tmp_path, sampled):
    sc, res = sampled
    sc = sc.flow(1, 2, 12_345, start="3us", pg=3, sport=77).with_fabric(cc_params={"rate_ai": "40Mb/s"})
    sc.spec["events"] = [{"kind": "link_down", "at": "50us", "a": 5, "b": 4}]
    path = tmp_path / "s.toml"
    path.write_text(sc.to_toml())
    back = Scenario.from_toml(path)
    assert back.spec == sc.spec
    assert run(back, progress=False).flows.equals(run(sc, progress=False).flows)


def test_html_reprs_describe_the_scenario_and_the_results(sampled):
    sc, res = sampled
    html = sc._repr_html_()
    assert "<table" in html and "star" in html and "incast" in html and "dcqcn" in html
    rhtml = res._repr_html_()
    assert "<table" in rhtml and "flows completed" in rhtml and "p99" in rhtml


def test_plotting_functions_return_figures_and_draw_into_given_axes(sampled):
    _, res = sampled
    for f in (plots.slowdown_figure, plots.queue_lengths, plots.link_utilisation, plots.pfc_timeline,
              plots.flow_rates):
        assert isinstance(f(res), Figure), f.__name__
    fig, axes = plt.subplots(1, 3)
    assert plots.slowdown_figure(res, percentiles=["p99"], ax=axes[0]) is fig
    assert plots.queue_lengths(res, ports=["sw5:0→h0:0"], ax=axes[1]) is fig
    assert [t.get_text() for t in axes[1].get_legend().get_texts()] == ["sw5:0→h0:0"]
    assert plots.link_utilisation(res, links=["h0:0-sw5:0"], ax=axes[2]) is fig
    assert len(axes[2].get_lines()) == 2  # both directions of the link
    plt.close(fig)
    with pytest.raises(ValueError, match="expected 3 Axes"):
        plots.slowdown_figure(res, ax=axes[0])


def test_slowdown_buckets_are_equal_count_and_thin_tails_are_hollow():
    rng = np.random.default_rng(1)
    sizes = np.concatenate([rng.integers(1_000, 10_000, 900), rng.integers(1_000_000, 2_000_000, 100)])
    flows = pl.DataFrame({"size": sizes, "slowdown": rng.uniform(1, 3, len(sizes))})
    edges = plots.bucket_edges([flows], 10)
    xs, cols, n = plots.slowdown_buckets(flows, edges)
    assert n == [100] * 10 and sum(n) == len(sizes)
    assert xs[-1] == sizes.max() and xs == sorted(xs)
    # p99 of a bucket of 100 flows rests on one flow: hollow; p50 on 50: filled.
    fig = plots.slowdown_figure(flows, buckets=10)
    p99 = fig.axes[2]
    hollow = [ln for ln in p99.get_lines() if ln.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and len(hollow[0].get_xdata()) == 10
    assert fig.axes[0].get_xticklabels()[-1].get_text() == plots.size_label(sizes.max())


def test_figure_files_are_byte_reproducible(tmp_path, sampled):
    _, res = sampled
    a = plots.slowdown_by_size(res, tmp_path / "a" / "fig", title="x")
    b = plots.slowdown_by_size(res, tmp_path / "b" / "fig", title="x")
    for pa, pb in zip(a, b):
        assert pa.read_bytes() == pb.read_bytes(), pa.name


def test_examples_run(tmp_path):
    for name in ("incast.toml", "link_failure.toml", "classes.toml", "collectives.toml", "swift_nscc.toml"):
        out = subprocess.run([str(RDMALAB), "run", str(EXAMPLES / name), "--quiet", "--out", str(tmp_path / name)],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
    assert pl.read_parquet(tmp_path / "link_failure.toml" / "trace.parquet").height > 0
    classes = pl.read_parquet(tmp_path / "classes.toml" / "classes.parquet")
    assert not classes["pfc"][2] and classes["ecn_marks"][2] > 0  # the lossy class, marked early
    windows = pl.read_parquet(tmp_path / "swift_nscc.toml" / "rates.parquet")["window_bytes"]
    assert windows.min() > 0  # Swift's windows, sampled with the rates
    out = subprocess.run([str(RDMALAB), "sweep", str(EXAMPLES / "load_sweep.toml"), "--out", str(tmp_path / "sw"),
                          "--workers", "1", "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # What the example advertises: hundreds of flows per run and data for every figure kind.
    from rdmalab.experiments.figures import plot_sweep
    from rdmalab.experiments.store import Store

    runs = Store(tmp_path / "sw").runs()
    assert runs.height == 4 and (runs["status"] == "ok").all() and runs["flows"].min() >= 200, runs
    made = plot_sweep(tmp_path / "sw", skip_missing=False)  # NoData for any kind without data
    assert list(made) == ["slowdown", "cdf", "queue", "rate", "pfc"]
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        runpy.run_path(str(EXAMPLES / "notebook.py"), run_name="__main__")
    finally:
        os.chdir(cwd)
    assert (tmp_path / "out" / "notebook" / "overview.png").stat().st_size > 10_000
