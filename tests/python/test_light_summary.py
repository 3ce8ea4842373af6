"""`rdmalab hpcc` prints the run's summary without building a table or loading polars
(`rdmalab.summary.Outcome`); what it prints is what `Results.summary()` prints."""

import subprocess
import sys
from pathlib import Path

import rdmalab
from rdmalab import _core, cli
from rdmalab.summary import Outcome, needs_tables


def test_loading_the_command_line_loads_no_table_library():
    code = ("import sys, rdmalab.cli; "
            "print(sorted(m for m in ('polars', 'tqdm', 'matplotlib', 'importlib.metadata') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_outcome_prints_what_results_print(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    sim = _core.Simulation.from_hpcc_config("S2_dcqcn_config.txt", None, None)
    while sim.run(max_events=1_000_000) == "paused":
        pass
    raw = sim.results(check=True, keep=True)
    assert not needs_tables(raw)
    light = Outcome(raw, "finished", False, 1.5).summary()
    full = rdmalab.Results.from_core(raw, "finished", False, 1.5).summary()
    assert light == full
    assert "flows completed   2321 / 2321" in light and ">=1MB" in light


def test_hpcc_command_prints_the_results_summary(reference_copy, monkeypatch, capsys):
    monkeypatch.chdir(reference_copy)
    assert cli.main(["hpcc", "S2_dcqcn_config.txt", "--quiet"]) == 0
    printed = capsys.readouterr().out
    res, _, _ = rdmalab.run_hpcc("S2_dcqcn_config.txt", progress=False)
    lines = [line for line in res.summary().splitlines() if not line.startswith("events ")]
    for line in lines:
        assert line in printed.splitlines()


def test_run_without_figures_writes_the_same_files_but_figures(tmp_path):
    scen = str(Path(__file__).resolve().parents[2] / "examples" / "incast.toml")
    assert cli.main(["run", scen, "--out", str(tmp_path / "all"), "--quiet", "--threads", "1"]) == 0
    assert cli.main(["run", scen, "--out", str(tmp_path / "bare"), "--quiet", "--threads", "1", "--no-figures"]) == 0
    everything = {p.name for p in (tmp_path / "all").iterdir()}
    bare = {p.name for p in (tmp_path / "bare").iterdir()}
    drawn = {n for n in everything if n.endswith((".png", ".pdf"))}
    assert drawn and bare == everything - drawn
    for name in bare:
        assert (tmp_path / "bare" / name).read_bytes() == (tmp_path / "all" / name).read_bytes(), name
