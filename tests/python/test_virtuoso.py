"""Virtuoso (seed 003) through Python: Scenario fields, the messages and paths tables, the
CLI's outputs, field-naming errors, and the three repro entries on small sweeps."""

import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.experiments import repro
from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.figures import plot_sweep
from rdmalab.experiments.store import Store, load_sweep, load_table
from rdmalab.experiments.sweep import Sweep
from rdmalab.results import MESSAGE_COLUMNS, PATH_COLUMNS

RDMALAB = Path(sys.executable).parent / "rdmalab"
MB4 = 4 << 20


def dumbbell_bed(links: int, rates="1Gbps") -> Scenario:
    return (Scenario.dumbbell(1, host_rate="10Gbps", bottleneck_rate=rates, delay="2us", bottleneck_links=links)
            .with_ips_per_host(links).with_fabric(path_selection="source_ip", cc="none"))


def test_virtuoso_tables_have_the_documented_columns():
    s = dumbbell_bed(4).multipath([{"src": 0, "dst": 1, "size": MB4, "verb": "send"}], split="virtuoso",
                             path_by="src_ip", qps=4, weights="equal")
    r = run(s, progress=False)
    assert list(r.messages.columns) == list(MESSAGE_COLUMNS)
    assert list(r.paths.columns) == list(PATH_COLUMNS)
    m = r.messages.row(0, named=True)
    assert (m["wrs"], m["cqes"], m["bytes_placed"]) == (5, 5, MB4)
    assert m["recv_done_ns"] < m["recv_cqe_ns"] < m["fct_ns"] and m["probe_ns"] == 0
    assert r.paths["bytes"].sum() == MB4 and r.paths["path"].to_list() == [0, 1, 2, 3]
    # Each path sends from its own vNIC address (11.0.0.1 .. 11.0.0.4).
    assert [ip & 0xFF for ip in r.paths["sip"].to_list()] == [1, 2, 3, 4]


def test_probe_weights_follow_a_rate_list(tmp_path):
    s = (Scenario.dumbbell(1, host_rate="40Gbps", bottleneck_rate=["1Gbps", "3Gbps"], delay="2us")
         .with_ips_per_host(2).with_fabric(path_selection="source_ip", cc="none")
         .multipath([{"src": 0, "dst": 1, "size": MB4}], split="virtuoso", path_by="src_ip", qps=2))
    r = run(s, progress=False)
    caps = r.paths["cap_gbps"].to_list()
    assert caps[1] / caps[0] == pytest.approx(3.0, rel=0.02)
    assert r.paths["bytes"][1] / MB4 == pytest.approx(0.75, rel=0.02)
    assert r.messages["probe_ns"][0] > 0


def test_run_writes_paths_parquet_and_bad_fields_are_named(tmp_path):
    scen = tmp_path / "v.toml"
    base = ('[topology]\nkind = "dumbbell"\nhosts_per_side = 1\nbottleneck_links = 2\nbottleneck_rate = "1Gbps"\n'
            'host_rate = "10Gbps"\nips_per_host = 2\ndelay = "2us"\n[fabric]\npath_selection = "source_ip"\n'
            '[[traffic]]\nkind = "multipath"\nsplit = "virtuoso"\npath_by = "src_ip"\n')
    scen.write_text(base + 'qps = 2\nmessages = [{ src = 0, dst = 1, size = 2000000, verb = "read" }]\n')
    out = subprocess.run([str(RDMALAB), "run", str(scen), "--out", str(tmp_path / "o"), "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    paths = pl.read_parquet(tmp_path / "o" / "paths.parquet")
    assert paths.height == 2 and paths["bytes"].sum() == 2000000
    scen.write_text(base + 'qps = 3\nmessages = [{ src = 0, dst = 1, size = 2000000 }]\n')
    out = subprocess.run([str(RDMALAB), "run", str(scen), "--out", str(tmp_path / "o2"), "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "field `traffic[0].qps`" in out.stderr and "ips_per_host" in out.stderr
    with pytest.raises(ValueError, match=r"traffic\[0\]\.small_path"):
        run(dumbbell_bed(2).multipath([{"src": 0, "dst": 1, "size": MB4}], split="virtuoso", qps=2, small_path=2),
            progress=False)


def _small(name: str, tmp_path: Path, edit) -> tuple:  # noqa: ANN001
    exp = repro.get(name)
    spec = tomllib.loads(exp.sweep_path(quick=True).read_text())
    edit(spec)
    run_sweep(Sweep.from_dict(spec), tmp_path / name, LocalExecutor(2), progress=False)
    runs, flows = load_sweep(tmp_path / name)
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / name))}
    made = plot_sweep(tmp_path / name, exp.figures, by=exp.by)
    return exp, rows, made


def _paths(spec: dict, paths: list[int]) -> None:
    spec["zip"] = {"topology.bottleneck_links": paths, "topology.ips_per_host": paths, "traffic[0].qps": paths}


def test_repro_paths_and_sizes_match_the_closed_form(tmp_path):
    def paths(spec):
        spec["base"]["traffic"][0]["messages"][0]["size"] = 20_000_000
        _paths(spec, [1, 4])

    exp, rows, made = _small("virtuoso-paths", tmp_path, paths)
    assert set(made) == {"virtuoso_paths"}
    for n in (1, 4):
        c = rows[(f"{n} paths", "FCT s w/o probe")]
        assert c.theirs == pytest.approx(8 * 100e9 * 1.048 / (n * 1e9))
        assert c.ours == pytest.approx(c.theirs, rel=0.01)
        # The probe (4.4 ms on any 1G path) is added once, unscaled.
        probe = rows[(f"{n} paths", "FCT s (100 GB)")].ours - c.ours
        assert probe == pytest.approx(512 * 1024 * 8 * 1.048 / 1e9, rel=0.02)
    assert "Tian et al." in repro.comparison_table(exp, tmp_path / "virtuoso-paths")

    def sizes(spec):
        spec["grid"] = {"traffic[0].messages[0].size": [5_000_000, 20_000_000]}
        _paths(spec, [1, 2])

    _, rows, made = _small("virtuoso-sizes", tmp_path, sizes)
    assert set(made) == {"virtuoso_speedup"}
    assert rows[("20 MB, 2 paths", "speed-up w/o probe")].ours == pytest.approx(2.0, rel=0.02)
    assert rows[("5 MB, 2 paths", "speed-up")].ours < rows[("20 MB, 2 paths", "speed-up")].ours < 2.0


def test_repro_overhead_counts_wrs_as_designed(tmp_path):
    def overhead(spec):
        spec["grid"] = {"traffic[0].messages[0].size": [100_000, 1_000_000],
                        "traffic[0].messages[0].verb": ["write", "send", "read"]}
        _paths(spec, [1, 3])

    exp, rows, made = _small("virtuoso-overhead", tmp_path, overhead)
    assert set(made) == {"virtuoso_overhead"}
    assert len(rows) == 2 * 2 * 3 * 2
    for c in rows.values():
        assert c.ours == c.theirs, c
    assert rows[("send 1 MB 3p", "WRs")].ours == 4
