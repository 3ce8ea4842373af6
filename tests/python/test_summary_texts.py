"""What the summary and the command line say about a run."""

import re
from pathlib import Path

import pytest

import rdmalab
from rdmalab import Scenario, cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_tenant_rate_is_over_the_flows_span_not_leftover_timers():
    # A 4-to-1 incast of 500 kB each at 100G: the receiver's link carries the 2 MB, so the
    # tenant's rate over the flows' span is 2 MB over the last completion.
    res = rdmalab.run(Scenario.from_toml(EXAMPLES / "incast.toml"), progress=False)
    text = res.summary()
    gbps = float(re.search(r"^default\s+2,000,000\s+([\d.]+)", text, re.M).group(1))
    expected = 2_000_000 * 8 / (res.counters["last_completion_ps"] / 1e12) / 1e9
    assert gbps == pytest.approx(expected, rel=0.01), text
    assert res.counters["end_time_ps"] > res.counters["last_completion_ps"]  # leftover timers exist


def test_an_applications_only_run_has_a_simulated_time():
    sc = Scenario.star(2).app(0, 1, size=1000, wr_num=2, total_bytes=100_000)
    res = rdmalab.run(sc, progress=False)
    assert res.simulated_ps == res.counters["end_time_ps"] > 0
    assert "simulated time    0.000 us" not in res.summary() and "(last event)" in res.summary()


def test_plot_of_a_missing_folder_is_an_error(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path / "nowhere")]) == cli.EXIT_BAD_INPUT
    assert "not a sweep's output folder" in capsys.readouterr().err
