"""`rdmalab hpcc` prints the run's summary without building a table or loading polars or
numpy (`rdmalab.summary.Outcome`, from `Simulation.outcome`); what it prints is what
`Results.summary()` prints, and its slowdown rows, computed by the engine, are the ones
numpy computes from the flows table, to the bit."""

import subprocess
import sys
from pathlib import Path

import rdmalab
from rdmalab import _core, cli
from rdmalab.summary import Outcome


def test_loading_the_command_line_loads_no_table_library():
    code = ("import sys, rdmalab.cli; "
            "print(sorted(m for m in ('polars', 'numpy', 'tqdm', 'matplotlib', 'importlib.metadata') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_outcome_prints_what_results_print(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    sim = _core.Simulation.from_hpcc_config("S2_dcqcn_config.txt", None, None)
    while sim.run(max_events=1_000_000) == "paused":
        pass
    lean = sim.outcome(check=True)
    assert not lean["needs_tables"] and "failure" not in lean
    raw = sim.results(check=True, keep=True)
    outcome = Outcome(lean, "finished", False, 1.5)
    results = rdmalab.Results.from_core(raw, "finished", False, 1.5)
    assert outcome.summary() == results.summary()
    assert "flows completed   2321 / 2321" in outcome.summary() and ">=1MB" in outcome.summary()
    # Every row to the bit, the mean (numpy's pairwise sum) included; NaN only where empty.
    for mine, theirs in zip(outcome._slowdown_rows(), results._slowdown_rows(), strict=True):
        assert mine["flows"] == theirs["flows"] > 0, mine
        assert all(mine[k] == theirs[k] for k in ("bucket", "p50", "p95", "p99", "mean")), (mine, theirs)


def test_the_command_line_run_loads_neither_numpy_nor_polars(reference_copy):
    code = ("import sys; from rdmalab import cli; rc = cli.main(['hpcc', 'S2_dcqcn_config.txt', '--quiet']); "
            "print(rc, sorted(m for m in ('numpy', 'polars') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=reference_copy)
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout + out.stderr


def test_the_engine_and_numpy_agree_on_every_bucket_at_every_size():
    # The engine's mean repeats numpy's pairwise summation (first value, then blocks of 128
    # in eight lanes): incasts of 1 to 300 senders, whose slowdowns differ and do not add
    # exactly, and sizes on both sides of the 100 KB bucket edge.
    from rdmalab.runner import _simulation

    for n in (1, 7, 9, 129, 300):
        senders = list(range(1, n + 1))
        sizes = [50_000 if i % 3 else 150_000 for i in senders]
        flows = [{"src": i, "dst": 0, "size": s} for i, s in zip(senders, sizes, strict=True)]
        scen = {"topology": {"kind": "star", "hosts": n + 1, "rate": "100Gbps", "delay": "1us"},
                "fabric": {"cc": "dcqcn"}, "traffic": [{"kind": "flows", "flows": flows}]}
        sim = _simulation(scen, 1)
        while sim.run(max_events=1_000_000) == "paused":
            pass
        mine = sim.outcome(check=True)["slowdown_rows"]
        theirs = rdmalab.Results.from_core(sim.results(check=True), "finished", False, 1.0)._slowdown_rows()
        assert [r["flows"] for r in mine] == [r["flows"] for r in theirs] and mine[0]["flows"] == n
        for a, b in zip(mine, theirs, strict=True):
            same = [a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in ("p50", "p95", "p99", "mean")]
            assert all(same), (n, a, b)


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
