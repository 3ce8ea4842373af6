"""Virtuoso through Python: Scenario fields, the messages and paths tables, the
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
from rdmalab.experiments.figures.virtuoso import lossy_wrs
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


def test_repro_overhead_prices_the_work_of_each_message_with_the_cited_costs(tmp_path):
    def overhead(spec):
        spec["grid"] = {"traffic[0].messages[0].size": [100_000, 1_000_000],
                        "traffic[0].messages[0].verb": ["write", "send"]}
        _paths(spec, [1, 3])

    exp, rows, made = _small("virtuoso-overhead", tmp_path, overhead)
    assert set(made) == {"virtuoso_overhead"}
    # By hand, at 2.4 GHz: a 1 MB SEND over 3 paths posts 3 WRITEs and the notice and polls 4
    # CQEs: 4 x 0.68 us + 4 x (0.1 + 3.8) us = 18.32 us = 43,968 cycles.
    assert rows[("send 1 MB 3p", "k cycles / message")].ours == pytest.approx(43.968)
    # A message below small_message is one SEND on one path whatever the path count.
    one = rows[("send 0.1 MB 1p", "k cycles / message")].ours
    assert one == pytest.approx(2.4 * (0.68 + 3.9)) and rows[("send 0.1 MB 3p", "k cycles / message")].ours == one


def test_lossy_wrs_follow_the_size_search():
    # §3.5: each path's share is cut into WRs of at most the searched size.
    assert lossy_wrs(100e6, 1, 700_417) == 143
    assert lossy_wrs(100e6, 9, 2_109_400) == 9 * 6


def lossy_bed(links: int, buffer_mb: float, **fabric) -> Scenario:
    return (Scenario.dumbbell(1, host_rate="10Gbps", bottleneck_rate="1Gbps", delay="2us", bottleneck_links=links)
            .with_ips_per_host(links)
            .with_fabric(path_selection="source_ip", cc="none", lossless=False, buffer_mb=buffer_mb, **fabric))


def test_chunk_probe_caps_data_wrs_and_retry_limit_errors_are_named():
    s = lossy_bed(2, 1.0).multipath([{"src": 0, "dst": 1, "size": 2_000_000}], split="virtuoso", path_by="src_ip",
                                    qps=2, weights="equal", chunk_probe=True, chunk_probe_signal="retransmission")
    r = run(s, progress=False)
    m = r.messages.row(0, named=True)
    found = r.paths["max_wr"].to_list()
    # One size for both paths, below one path's (126 KB at 1 MiB) and above a third of it.
    assert found[0] == found[1] and 40_000 < found[0] < 126_000
    assert m["bytes_placed"] == 2_000_000 and m["wrs"] >= 2 * (1_000_000 // found[0])
    assert m["probe_ns"] > 0 and r.counters["wr_failures"] == 0
    with pytest.raises(ValueError, match=r"fabric\.retry_limit"):
        run(lossy_bed(1, 1.0, retry_limit=0).multipath([{"src": 0, "dst": 1, "size": MB4}], split="virtuoso"),
            progress=False)
    with pytest.raises(ValueError, match=r"traffic\[0\]\.chunk_probe.*lossless"):
        run(dumbbell_bed(1).multipath([{"src": 0, "dst": 1, "size": MB4}], split="virtuoso", chunk_probe=True),
            progress=False)


def test_repro_chunk_and_mice(tmp_path):
    def chunk(spec):
        spec["base"]["traffic"][0]["chunk_probe_step"] = 16384
        _paths(spec, [1, 4])

    exp, rows, made = _small("virtuoso-chunk", tmp_path, chunk)
    assert set(made) == {"virtuoso_chunk"}
    # buffer_mb is fitted so that one path's bound is Table 2's 700,417 bytes: the probe finds
    # it within one step (16.384 KB) below.
    one = rows[("1 paths", "per path KB")]
    assert 700.417 - 16.384 < one.ours <= 700.417
    # The bound counts the backlog as N S (1 - N/10) and leaves out the extra ports' headroom
    # and reserves (-0.6 KB at 4 paths): exact to within one packet on the wire (1.048 KB).
    four = rows[("4 paths", "per path KB vs bound")]
    assert four.theirs - 16.384 < four.ours <= four.theirs + 1.048
    assert rows[("4 paths", "total KB")].ours == pytest.approx(4 * four.ours)
    assert "Table 2" in repro.comparison_table(exp, tmp_path / "virtuoso-chunk")

    def dynamic(spec):
        spec["base"]["traffic"][0]["chunk_probe_step"] = 16384
        spec["grid"] = {"fabric.dt_alpha": [0.5, 1.0]}
        _paths(spec, [1, 4])

    exp, rows, made = _small("virtuoso-chunk-egress-dynamic", tmp_path, dynamic)
    assert set(made) == {"virtuoso_chunk"}
    # The buffer is fitted at alpha = 1: one path within a step of Table 2's first row; at four
    # paths each queue settles at alpha B / (1 + 4 alpha), and admission against the free bytes
    # before a frame lets it end up to alpha frames above: 1.048 KB / (1.048 x 0.6) of WR size.
    one = rows[("alpha 1, 1 paths", "per path KB")]
    assert one.theirs - 16.384 < one.ours <= one.theirs
    four = rows[("alpha 1, 4 paths", "per path KB vs bound")]
    assert four.theirs - 16.384 < four.ours <= four.theirs + 1.0 / 0.6
    # alpha moves the shape: the closed form's (1 + a) / (1 + 4 a) / (2/3) is 0.75 at a = 0.5, 0.6 at 1.
    for alpha, want in ((0.5, 0.75), (1, 0.6)):
        assert rows[(f"alpha {alpha:g}, 4 paths", "per path / 1 path")].ours == pytest.approx(want, abs=0.03)

    def mice(spec):
        spec["zip"]["traffic[0].messages[0].size"] = [150_000_000, 150_000_001]
        spec["grid"] = {"topology.host_rate": ["10Gbps"]}
        spec["base"]["traffic"][1]["messages"] = [{"src": 0, "dst": 1, "size": 262144, "start": f"{t}ms"}
                                                  for t in (20, 60)]

    exp, rows, made = _small("virtuoso-mice", tmp_path, mice)
    assert set(made) == {"virtuoso_mice"}
    alone = rows[("10G host, path 0", "mouse mean ms")].theirs
    assert alone == pytest.approx(8 * 262144 * 1.048 / 1e9 * 1e3)
    single, split = rows[("10G host, path 0", "mouse mean ms")].ours, rows[("10G host, 10 paths", "mouse mean ms")].ours
    assert alone < split < single
    # On one path the mouse waits for the PFC backlog, then gets every other packet slot.
    model = rows[("10G host, path 0", "mean vs PFC model")]
    assert model.ours == pytest.approx(model.theirs, rel=0.02)


def test_fig8_cause_small_message_threshold_decides_whether_paths_cost_cycles():
    # docs/virtuoso.md, Fig. 8: with our 512 KiB threshold a 100 KB message is one WR on one
    # path whatever the paths; with 64 KiB it is split, one WR and one CQE per path (a SEND
    # adds its notice), so its predicted cycles grow linearly with the paths.
    from rdmalab.experiments.causes.virtuoso_overhead_causes import cycles_table

    rows = cycles_table()
    assert {(r[0], r[1]) for r in rows} == {(v, n) for v in ("read", "send", "write") for n in (1, 2, 4, 6, 8, 10)}
    for verb, paths, threshold, _k_cycles, wrs, cqes in rows:
        notice = 1 if verb == "send" and threshold < 100_000 else 0
        expect = 1 if threshold > 100_000 else paths + notice
        assert (wrs, cqes) == (expect, expect), (verb, paths, threshold)
