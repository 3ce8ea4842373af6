"""The experiment platform: sweep files, the store, executors (local and Ray), resume,
failures, figures and the repro registry. Scenarios are tiny: each run takes milliseconds."""

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rdmalab
from rdmalab import Scenario, _core
from rdmalab.cli import main
from rdmalab.experiments import repro
from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.executors import LocalExecutor, RayExecutor
from rdmalab.experiments.figures import KINDS, NoData, plot_sweep, qp_rate_over_time
from rdmalab.experiments.store import Store, load_sweep, load_table
from rdmalab.experiments.sweep import Sweep, SweepError, run_id

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # 3.9 and 3.10
    import tomli as tomllib


STAR = {
    "topology": {"kind": "star", "hosts": 5},
    "traffic": [{"kind": "incast", "senders": [1, 2, 3], "receiver": 0, "size": 50_000}],
}


def sweep_of(grid=None, base=STAR, **extra):
    doc = {"name": "t", "base": base, **extra}
    if grid is not None:
        doc["grid"] = grid
    return Sweep.from_dict(doc)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def cc_available(name):
    spec = {**STAR, "fabric": {"cc": name}}
    try:
        _core.Simulation.from_json(json.dumps(spec), ".")
        return True
    except ValueError:
        return False


# -- grid expansion -------------------------------------------------------------------------
def test_grid_expands_to_every_combination_times_seeds():
    s = sweep_of({"traffic[0].size": [1000, 2000, 3000], "fabric.buffer_mb": [1, 2]}, seeds=2)
    runs = s.expand()
    assert len(runs) == 3 * 2 * 2
    assert {(r.params["traffic[0].size"], r.params["fabric.buffer_mb"], r.params["seed"]) for r in runs} == {
        (a, b, c) for a in (1000, 2000, 3000) for b in (1, 2) for c in (1, 2)}
    r = runs[0]
    assert r.scenario["traffic"][0]["size"] == 1000 and r.scenario["fabric"]["buffer_mb"] == 1
    assert r.scenario["seed"] == 1 and r.label() == "size=1000 buffer_mb=1 seed=1"
    assert len({r.run_id for r in runs}) == len(runs)
    assert s.dimensions() == ["traffic[0].size", "fabric.buffer_mb", "seed"]
    assert STAR["traffic"][0]["size"] == 50_000  # the base is not modified


def test_zip_varies_paths_together_and_seed_lists():
    s = sweep_of({"fabric.buffer_mb": [1, 2]}, seeds=[7, 9],
                 zip={"topology.hosts": [3, 5], "traffic[0].senders": [[1, 2], [1, 2, 3, 4]]})
    runs = s.expand()
    assert len(runs) == 2 * 2 * 2
    assert all(len(r.scenario["traffic"][0]["senders"]) == r.scenario["topology"]["hosts"] - 1 for r in runs)
    assert sorted({r.params["seed"] for r in runs}) == [7, 9]
    # A value may repeat down one path of a zip: its rows, the runs, still differ.
    s = sweep_of(None, zip={"topology.hosts": [3, 3, 5], "traffic[0].size": [1, 2, 1]})
    assert [(r.scenario["topology"]["hosts"], r.scenario["traffic"][0]["size"]) for r in s.expand()] == \
        [(3, 1), (3, 2), (5, 1)]


def test_run_id_is_a_stable_hash_of_the_expanded_scenario():
    a = sweep_of({"traffic[0].size": [1000]}).expand()[0]
    b = sweep_of({"traffic[0].size": [1000, 2000]}).expand()[0]
    assert a.run_id == b.run_id == run_id(json.loads(json.dumps(a.scenario)))
    reordered = dict(reversed(list(a.scenario.items())))
    assert run_id(reordered) == a.run_id
    assert sweep_of({"traffic[0].size": [1000]}, seeds=[2]).expand()[0].run_id != a.run_id


def test_sweep_file_with_scenario_path_and_base_override(tmp_path):
    write(tmp_path, "scen.toml", """
        seed = 4
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "incast"
        senders = [1, 2]
        receiver = 0
        size = 1000
    """)
    f = write(tmp_path, "s.toml", """
        scenario = "scen.toml"
        [base.fabric]
        buffer_mb = 3
        [grid]
        "traffic[0].size" = [1000, 5000]
    """)
    s = Sweep.from_file(f)
    assert s.name == "s" and len(s.expand()) == 2
    assert s.expand()[1].scenario["fabric"] == {"buffer_mb": 3} and s.expand()[1].params["seed"] == 4


BAD_SWEEPS = [
    ("unknown top-level field", {"grids": {}}, ["grids"]),
    ("no base scenario", {"base": {}}, ["base scenario"]),
    ("unknown scenario table", {"grid": {"fabrik.cc": ["none"]}}, ["fabrik"]),
    ("unknown scenario field", {"grid": {"topology.colour": ["red"]}}, ["topology.colour", "unknown field"]),
    ("unknown fabric field", {"grid": {"fabric.buffer": [1]}}, ["fabric.buffer", "unknown field"]),
    ("empty grid list", {"grid": {"fabric.buffer_mb": []}}, ["fabric.buffer_mb", "empty"]),
    ("grid value not a list", {"grid": {"fabric.buffer_mb": 2}}, ["fabric.buffer_mb", "list"]),
    ("wrong value type", {"grid": {"topology.hosts": ["many"]}}, ["topology.hosts", "invalid type"]),
    ("wrong type of a name", {"name": 3}, ["name", "str"]),
    ("traffic index out of range", {"grid": {"traffic[3].size": [1]}}, ["traffic[3]"]),
    ("bad path", {"grid": {"traffic[x].size": [1]}}, ["traffic[x].size"]),
    ("seeds wrong type", {"seeds": "three"}, ["seeds"]),
    ("seeds empty", {"seeds": []}, ["seeds", "empty"]),
    ("zip lengths differ", {"zip": {"topology.hosts": [3, 4], "traffic[0].size": [1]}}, ["zip", "same length"]),
    ("zip rows repeat", {"zip": {"topology.hosts": [3, 3], "traffic[0].size": [1, 1]}}, ["zip", "same values"]),
    ("duplicate values", {"grid": {"traffic[0].size": [1, 1]}}, ["traffic[0].size", "twice"]),
    ("unknown plot field", {"plot": {"colour": "red"}}, ["plot.colour"]),
    ("plot.by not varied", {"plot": {"by": "fabric.cc"}}, ["plot.by", "fabric.cc"]),
    ("plot.kinds unknown", {"plot": {"kinds": ["pie"]}}, ["plot.kinds", "pie"]),
    ("plot.title wrong type", {"plot": {"title": 1}}, ["plot.title", "str"]),
    ("empty grid table", {"grid": {}}, ["`grid` is an empty table"]),
    ("empty zip table", {"grid": {"seed": [1]}, "zip": {}}, ["`zip` is an empty table"]),
    ("unknown field in the base", {"base": {**STAR, "topology": {"kind": "star", "hosts": 4, "colour": "red"}}},
     ["base.topology.colour: unknown field `colour`"]),
    ("wrong type in the base", {"base": {**STAR, "fabric": {"mtu": "big"}}}, ["base.fabric.mtu: invalid type"]),
    ("wrong type deep in the base", {"base": {**STAR, "traffic": [STAR["traffic"][0], {
        "kind": "flows", "flows": [{"src": 1, "dst": 0, "size": "x"}]}]}},
     ["base.traffic[1].flows[0].size: invalid type"]),
    ("unknown variant in the base", {"base": {**STAR, "topology": {"kind": "ring", "hosts": 4}}},
     ["base.topology.kind: unknown variant `ring`"]),
]


@pytest.mark.parametrize("what,doc,needles", BAD_SWEEPS, ids=[b[0] for b in BAD_SWEEPS])
def test_bad_sweep_files_name_the_field(what, doc, needles):
    full = {"base": STAR, **doc}
    with pytest.raises(SweepError) as e:
        Sweep.from_dict(full, source="bad.toml")
    msg = str(e.value)
    assert msg.startswith("bad.toml: ")
    for n in needles:
        assert n in msg, (what, msg)


def test_a_sweep_checks_fields_without_building_and_leaves_build_errors_to_the_run():
    # A missing CDF file or an unknown host only shows when the scenario is built: the sweep
    # loads (its check parses, it does not build), and the engine's own build refuses it.
    base = {**STAR, "traffic": [{"kind": "poisson", "cdf": "no/such/file.txt", "load": 0.3,
                                 "duration": "1ms"}]}
    s = Sweep.from_dict({"base": base, "grid": {"traffic[0].load": [0.2, 0.4]}}, source="s.toml")
    assert len(s.expand()) == 2
    text = json.dumps(s.expand()[0].scenario)
    _core.check_scenario_fields(text)
    with pytest.raises(ValueError, match=r"field `traffic\[0\]\.cdf`: cannot read \./no/such/file\.txt"):
        _core.Simulation.from_json(text, ".")
    with pytest.raises(ValueError, match="field `topology.colour`: unknown field `colour`"):
        _core.check_scenario_fields(json.dumps({**STAR, "topology": {"kind": "star", "hosts": 4, "colour": 1}}))


def test_a_base_value_only_the_engine_checks_refuses_the_sweep_before_any_run(tmp_path, capsys):
    # `buffer_mb = -1` parses; only building the fabric refuses it, and every run would fail on it.
    f = write(tmp_path, "neg.toml", """
        [base.topology]
        kind = "star"
        hosts = 5
        [[base.traffic]]
        kind = "incast"
        senders = [1, 2]
        receiver = 0
        size = 10000
        [base.fabric]
        buffer_mb = -1
        [grid]
        "traffic[0].size" = [10000, 20000]
    """)
    with pytest.raises(SweepError, match=r"neg\.toml: base\.fabric\.buffer_mb: must be a positive number of MiB"):
        run_sweep(Sweep.from_file(f), tmp_path / "o", LocalExecutor(1), progress=False)
    assert not (tmp_path / "o").exists()
    assert main(["sweep", str(f), "--out", str(tmp_path / "o")]) == 2
    assert "neg.toml: base.fabric.buffer_mb" in capsys.readouterr().err and not (tmp_path / "o").exists()
    # A grid value that sets the field, or changes what the mistake depends on, leaves it to the runs.
    fixed = Sweep.from_dict({"base": {**STAR, "fabric": {"buffer_mb": -1}}, "grid": {"fabric.buffer_mb": [-1, 4]}})
    report = run_sweep(fixed, tmp_path / "f", LocalExecutor(1), progress=False)
    assert (report.ok, report.failed) == (1, 1)
    hosts = Sweep.from_dict({"base": {**STAR, "topology": {"kind": "star", "hosts": 3}}, "grid": {"topology.hosts": [5]}})
    assert run_sweep(hosts, tmp_path / "h", LocalExecutor(1), progress=False).ok == 1


def test_sweep_without_grid_runs_the_base_once_per_seed():
    # Leaving [grid] out is how a file asks for the base scenario alone; only an empty one is refused.
    s = Sweep.from_dict({"base": STAR, "seeds": 3})
    assert [r.params for r in s.expand()] == [{"seed": 1}, {"seed": 2}, {"seed": 3}]


def test_bad_field_from_the_scenario_file_is_named_by_its_path(tmp_path):
    write(tmp_path, "scen.toml", """
        [topology]
        kind = "star"
        hosts = "four"
        [[traffic]]
        kind = "incast"
        senders = [1]
        receiver = 0
        size = 1000
    """)
    f = write(tmp_path, "s.toml", """
        scenario = "scen.toml"
        [base.fabric]
        buffer_mb = 3
        [grid]
        seed = [1, 2]
    """)
    with pytest.raises(SweepError, match=r"s\.toml: scenario\.topology\.hosts: invalid type: string \"four\""):
        Sweep.from_file(f)


def test_bad_sweep_file_on_the_command_line(tmp_path, capsys):
    f = write(tmp_path, "bad.toml", """
        [base.topology]
        kind = "star"
        hosts = 4
        [grid]
        "fabric.cc" = []
    """)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "fabric.cc" in err and "empty" in err and "bad.toml" in err


# -- running, the store, failures -----------------------------------------------------------
def test_failing_run_is_recorded_and_the_others_finish(tmp_path):
    s = sweep_of({"traffic[0].receiver": [0, 9], "traffic[0].size": [10_000, 20_000]})
    report = run_sweep(s, tmp_path / "o", LocalExecutor(2), progress=False)
    assert (report.ok, report.failed) == (2, 2)
    runs, flows = load_sweep(tmp_path / "o")
    assert runs.height == 4
    bad = runs.filter(pl.col("status") == "error")
    assert sorted(bad["traffic[0].receiver"].to_list()) == [9, 9]
    assert all("unknown host 9" in e and "traffic[0].receiver" in e for e in bad["error"].to_list())
    ok = runs.filter(pl.col("status") == "ok")
    assert ok["error"].is_null().all() and (ok["flows_completed"] == 3).all()
    assert flows.height == 6 and set(flows["run_id"]) == set(ok["run_id"])
    assert {"traffic[0].size", "seed", "label", "slowdown", "fct_ns"} <= set(flows.columns)
    assert "unknown host 9" in report.table() and "2 ok, 2 failed" in report.table()
    assert not list((tmp_path / "o").rglob(".*.tmp*"))


def test_store_refuses_to_mix_sweeps_without_resume_and_resume_skips(tmp_path):
    s = sweep_of({"traffic[0].size": [10_000, 20_000]})
    run_sweep(s, tmp_path / "o", LocalExecutor(1), progress=False)
    with pytest.raises(SweepError, match="--resume"):
        run_sweep(s, tmp_path / "o", LocalExecutor(1), progress=False)
    bigger = sweep_of({"traffic[0].size": [10_000, 20_000, 30_000]})
    report = run_sweep(bigger, tmp_path / "o", LocalExecutor(1), resume=True, progress=False)
    assert (report.skipped, report.ok) == (2, 1)
    assert load_table(tmp_path / "o", "ports")["run_id"].n_unique() == 3


def test_only_runs_part_of_a_sweep_and_resume_adds_the_rest(tmp_path):
    s = sweep_of({"traffic[0].size": [10_000, 20_000, 30_000]})
    part = run_sweep(s, tmp_path / "o", LocalExecutor(1), progress=False, only={"traffic[0].size": "20000"})
    assert (part.ok, part.skipped) == (1, 0)
    assert [r["status"] for r in part.rows] == ["not run", "ok", "not run"]
    rest = run_sweep(s, tmp_path / "o", LocalExecutor(1), resume=True, progress=False)
    assert (rest.ok, rest.skipped) == (2, 1)
    # The part's run is the whole sweep's run: the same id and the same ports table.
    whole = run_sweep(s, tmp_path / "w", LocalExecutor(1), progress=False)
    assert load_table(tmp_path / "o", "ports").sort("run_id", "node", "port").equals(
        load_table(tmp_path / "w", "ports").sort("run_id", "node", "port"))
    assert whole.ok == 3
    with pytest.raises(SweepError, match=r"--only traffic\[0\].size=5: no run of t has it \(traffic\[0\].size takes 10000, 20000, 30000\)"):
        s.select({"traffic[0].size": 5})
    with pytest.raises(SweepError, match="--only seedx: not a swept path of t"):
        s.select({"seedx": 1})


def test_only_given_twice_for_one_path_is_refused(tmp_path, capsys):
    # A second value for one path would silently replace the first.
    f = write(tmp_path, "t.toml", f"""
        name = "t"
        [base]
        {_inline_toml(STAR)}
        [grid]
        "traffic[0].size" = [10_000, 20_000]
    """)
    only = ["--only", "traffic[0].size=10000", "--only", "traffic[0].size=20000"]
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--dry-run", *only]) == 2
    err = capsys.readouterr().err
    assert "--only traffic[0].size given twice (10000 and 20000)" in err, err
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--dry-run", *only[:2]]) == 0
    assert "1 runs" in capsys.readouterr().out


@pytest.mark.serial  # a local Ray instance of its own: run alone
def test_ray_executor_starts_its_own_local_instance_and_matches_local(tmp_path, capsys):
    # `--ray` with no address: RayExecutor starts a local Ray itself and shuts it down after.
    # Ray is a test dependency (rdmalab[test]); without it this fails rather than skips.
    import ray

    if ray.is_initialized():
        ray.shutdown()
    f = write(tmp_path, "two.toml", f"""
        name = "two"
        [base]
        {_inline_toml(STAR)}
        [grid]
        "traffic[0].size" = [30_000, 300_000]
    """)
    assert main(["sweep", str(f), "--out", str(tmp_path / "ray"), "--ray", "--quiet"]) == 0
    assert not ray.is_initialized(), "the executor left the Ray instance it started running"
    assert main(["sweep", str(f), "--out", str(tmp_path / "local"), "--workers", "2", "--quiet"]) == 0
    assert "2 ok, 0 failed" in capsys.readouterr().out
    for table in ("flows", "ports"):
        a = load_table(tmp_path / "local", table).sort("run_id", maintain_order=True)
        b = load_table(tmp_path / "ray", table).sort("run_id", maintain_order=True)
        assert a.height > 0
        assert_frame_equal(a, b)
    drop = ["wall_s", "finished_at", "host"]
    ra, rb = (load_sweep(tmp_path / d)[0].drop(drop).sort("run_id") for d in ("local", "ray"))
    assert ra.height == 2
    assert_frame_equal(ra, rb)


def _inline_toml(spec):
    """STAR as TOML lines for a `[base]` table (inline tables and arrays)."""
    topo = ", ".join(f"{k} = {json.dumps(v)}" for k, v in spec["topology"].items())
    traffic = ", ".join("{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in t.items()) + "}"
                        for t in spec["traffic"])
    return f"topology = {{{topo}}}\n        traffic = [{traffic}]"


@pytest.fixture(scope="module")
def ray_local():
    import ray  # a test dependency: missing Ray fails the test, it does not skip it

    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.serial  # a local Ray instance of its own: run alone
def test_local_and_ray_executors_give_identical_results(tmp_path, ray_local):
    s = sweep_of({"traffic[0].size": [30_000, 300_000], "traffic[0].receiver": [0, 9]},
                 base={**STAR, "fabric": {"queue_sample_interval": "1us", "rate_sample_interval": "1us",
                                          "buffer_mb": 0.2}})
    local = run_sweep(s, tmp_path / "local", LocalExecutor(2), progress=False)
    remote = run_sweep(s, tmp_path / "ray", RayExecutor(), progress=False)
    assert (local.ok, local.failed) == (remote.ok, remote.failed) == (2, 2)
    for table in ("flows", "ports", "pfc", "queues", "rates"):
        a = load_table(tmp_path / "local", table).sort("run_id", maintain_order=True)
        b = load_table(tmp_path / "ray", table).sort("run_id", maintain_order=True)
        assert a.height > 0
        assert_frame_equal(a, b)
    drop = ["wall_s", "finished_at", "host"]
    ra, rb = (load_sweep(tmp_path / d)[0].drop(drop).sort("run_id") for d in ("local", "ray"))
    assert_frame_equal(ra, rb)


# -- figures ----------------------------------------------------------------------------------
def test_figures_are_drawn_from_a_small_sweep(tmp_path, capsys):
    base = {**STAR, "fabric": {"queue_sample_interval": "1us", "rate_sample_interval": "1us"}}
    s = sweep_of({"fabric.buffer_mb": [0.2, 2.0]}, base=base, seeds=2)
    run_sweep(s, tmp_path / "o", LocalExecutor(2), progress=False)
    rates = load_table(tmp_path / "o", "rates")
    assert rates["run_id"].n_unique() == 4 and set(rates["flow"]) == {0, 1, 2}
    assert {"fabric.buffer_mb", "seed", "throughput_gbps", "rate_gbps", "time_ps"} <= set(rates.columns)
    made = plot_sweep(tmp_path / "o", skip_missing=False)
    assert list(made) == list(KINDS)
    for paths in made.values():
        assert [p.suffix for p in paths] == [".png", ".pdf"]
        assert all(p.stat().st_size > 5000 for p in paths)
    assert main(["plot", str(tmp_path / "o"), "--kind", "cdf", "--by", "seed", "--where", "fabric.buffer_mb=0.2",
                 "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "cdf.png").is_file() and (tmp_path / "figs" / "cdf.pdf").is_file()
    assert main(["plot", str(tmp_path / "o"), "--by", "fabric.colour"]) == 2
    assert "fabric.colour" in capsys.readouterr().err


def test_rate_figure_needs_rate_samples(tmp_path):
    run_sweep(sweep_of({"traffic[0].size": [10_000]}), tmp_path / "o", LocalExecutor(1), progress=False)
    assert load_table(tmp_path / "o", "rates").height == 0
    with pytest.raises(NoData, match="rate_sample_interval"):
        qp_rate_over_time(tmp_path / "o")


# -- per-QP rate samples ----------------------------------------------------------------------
def test_rate_samples_are_a_dataframe_that_accounts_for_every_byte_and_empty_when_off():
    sc = Scenario.star(4).incast([1, 2, 3], 0, 300_000).with_fabric(cc="dcqcn")
    res = rdmalab.run(sc.with_fabric(rate_sample_interval="2us"), progress=False)
    r = res.rates
    assert r.columns == ["time_ps", "qp", "flow", "src", "dst", "rate_gbps", "throughput_gbps", "ccti", "window_bytes"]
    assert r.height > 3 and (r["time_ps"] % 2_000_000 == 0).all()
    assert sorted(r["flow"].unique()) == [0, 1, 2] and (r["dst"] == 0).all()
    acked = r.group_by("flow").agg((pl.col("throughput_gbps") * 1e9 * 2e-6 / 8).sum().alias("bytes"))
    assert np.allclose(acked["bytes"].to_numpy(), 300_000, rtol=1e-9)
    assert r["rate_gbps"].max() <= 100 and r["throughput_gbps"].max() <= 100
    off = rdmalab.run(sc, progress=False)
    assert off.rates.height == 0 and off.rates.columns == r.columns
    assert off.flows.drop("slowdown").equals(res.flows.drop("slowdown"))  # sampling only reads


def test_two_dcqcn_flows_converge_to_half_a_100g_bottleneck_in_the_samples():
    big = 10_000_000_000  # never finishes inside the 20 ms
    sc = (Scenario.star(3).flow(1, 0, big).flow(2, 0, big).with_stop_time("20ms")
          .with_fabric(cc="dcqcn", rate_sample_interval="10us"))
    r = rdmalab.run(sc, progress=False).rates
    second_half = r.filter(pl.col("time_ps") > 10_000_000_000)
    means = second_half.group_by("flow").agg(pl.col("throughput_gbps").mean()).sort("flow")
    assert means["flow"].to_list() == [0, 1]
    for g in means["throughput_gbps"]:
        assert abs(g - 50) <= 5, means


def test_converged_throughputs_judge_the_second_half_of_the_common_window():
    # Flow 0 runs 0..100 us; flow 1 from 20 us to 60 us (its last row, 70 us, is the partial
    # interval it finished in). Common window 20..60 us, second half 40..60 us.
    rows = [(t, 0, 30.0 if t <= 40 else 20.0) for t in range(10, 101, 10)]
    rows += [(t, 1, 5.0 if t <= 40 else 18.0) for t in range(20, 61, 10)] + [(70, 1, 1.0)]
    df = pl.DataFrame({"time_ps": [t * 1_000_000 for t, _, _ in rows], "flow": [f for _, f, _ in rows],
                       "throughput_gbps": [g for _, _, g in rows]})
    assert repro.converged_throughputs(df).tolist() == [20.0, 18.0]
    assert repro.jain(np.array([20.0, 20.0])) == 1.0 and repro.jain(np.array([1.0, 0.0])) == 0.5


# -- progress ---------------------------------------------------------------------------------
def test_sweep_progress_bar_and_summary_table(tmp_path, capfd):
    f = write(tmp_path, "p.toml", f"""
        name = "progress-check"
        [base]
        {_inline_toml(STAR)}
        [grid]
        "traffic[0].receiver" = [0, 9]
        "traffic[0].size" = [10_000, 20_000]
    """)
    assert main(["sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "2"]) == 1  # a run failed
    out, err = capfd.readouterr()
    states = [x for x in re.split(r"[\r\n]", err) if x.startswith("progress-check")]
    last = states[-1]  # the bar's final state (tqdm redraws it in place with \r)
    assert "4/4" in last, err
    assert "done=2" in last and "failed=2" in last and "running=0" in last, last
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", last), f"no elapsed<ETA field in {last!r}"
    assert re.search(r"^status +flows +result +wall s +run$", out, re.M), out
    assert re.search(r"^ok +3 +slowdown p50 \d+\.\d+ +p99 \d+\.\d+ +\d+\.\d+ +receiver=0 size=10000 seed=1$",
                     out, re.M), out
    assert "receiver=0 size=10000 seed=1" in out and "4 runs: 2 ok, 2 failed, 0 not run" in out
    assert "error in receiver=9" in out and "unknown host 9" in out


def test_a_running_run_gets_its_own_bar(tmp_path, capsys, monkeypatch):
    # Runs get a bar after RUN_BAR_DELAY_S; at zero even these millisecond runs show theirs.
    from rdmalab.experiments import driver

    monkeypatch.setattr(driver, "RUN_BAR_DELAY_S", 0.0)
    s = sweep_of({"traffic[0].size": [10_000, 20_000]})
    assert run_sweep(s, tmp_path / "o", LocalExecutor(1), progress=True).ok == 2
    err = capsys.readouterr().err
    for r in s.expand():
        bars = [x for x in re.split(r"[\r\n]", err) if f"  {r.run_id[:8]}:" in x]
        assert bars, err
        assert re.search(r"\d+flow \[\d\d:\d\d, .*flow/s\]", bars[0]), bars[0]  # counts flows


# -- repro ------------------------------------------------------------------------------------
def test_repro_list_names_the_experiments(capsys):
    assert main(["repro", "list"]) == 0
    text = capsys.readouterr().out
    assert "hpcc-fb-hadoop" in text and "dcqcn-convergence" in text and "SIGCOMM" in text


@pytest.mark.parametrize("name", [n for n, e in repro.REGISTRY.items() if e.solve is None])  # a solve runs no sweep
def test_repro_sweeps_load_and_expand(name):
    exp = repro.get(name)
    for quick in (False, True):
        s = Sweep.from_file(exp.sweep_path(quick))
        assert exp.by in s.dimensions() and len(s.expand()) >= 2
    ccs = {r.scenario["fabric"].get("cc", "none") for r in Sweep.from_file(exp.sweep_path()).expand()}
    assert ccs <= set(exp.needs_cc or ["none"])


def test_repro_reference_numbers_are_the_reference_simulators():
    ref = repro.hpcc_reference()
    assert ref[("dcqcn", "all")]["p99"] == pytest.approx(5.5069)
    assert ref[("hpcc", "ge1MB")]["p95"] == pytest.approx(3.0918)


def test_repro_convergence_compares_sampled_throughput_with_the_fair_share(tmp_path):
    exp = repro.get("dcqcn-convergence")
    run_sweep(Sweep.from_file(exp.sweep_path(quick=True)), tmp_path / "o", LocalExecutor(2), progress=False)
    assert set(plot_sweep(tmp_path / "o", exp.figures, by=exp.by)) == set(exp.figures)
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    assert set(rows) == {(f"N={n}", m) for n in (2, 4)
                         for m in ("slowest flow Gb/s", "fastest flow Gb/s", "Jain fairness")}
    for n in (2, 4):
        fair = 40 * 1000 / 1048 / n  # the link's payload rate shared by n
        assert rows[(f"N={n}", "slowest flow Gb/s")].theirs == pytest.approx(fair)
        assert 0.8 * fair <= rows[(f"N={n}", "slowest flow Gb/s")].ours <= rows[(f"N={n}", "fastest flow Gb/s")].ours
        assert rows[(f"N={n}", "fastest flow Gb/s")].ours <= 1.2 * fair
        assert rows[(f"N={n}", "Jain fairness")].ours >= 0.98
    table = repro.comparison_table(exp, tmp_path / "o")
    assert "fair-share theory" in table and "Jain fairness" in table and "19.084" in table


@pytest.mark.skipif(not (cc_available("dcqcn") and cc_available("hpcc")),
                    reason="the engine does not support cc = dcqcn/hpcc yet")
def test_repro_quick_hpcc_runs_end_to_end(tmp_path, capsys):
    assert main(["repro", "run", "hpcc-fb-hadoop", "--quick", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "dcqcn all" in out and "hpcc >=1MB" in out
    assert (tmp_path / "o" / "figures" / "slowdown.png").is_file()


def test_every_top_level_scenario_table_is_a_sweepable_base_field(tmp_path):
    # Link overrides, link events and the trace are scenario tables like any other: a sweep
    # takes them in its base and varies their fields.
    base = {**STAR, "links": [{"a": 1, "b": 5, "error_rate": 0.0}],
            "events": [{"kind": "link_down", "at": "1ms", "a": 2, "b": 5}],
            "trace": {"flows": [0], "max_bytes": 1_000_000}}
    sw = sweep_of({"links[0].error_rate": [0.0, 0.001]}, base=base)
    assert len(sw.expand()) == 2
    with pytest.raises(SweepError, match="unknown field `base.bogus`"):
        sweep_of(base={**STAR, "bogus": 1})


def test_a_figure_legend_names_a_traffic_list_by_its_case_not_its_json():
    from rdmalab.experiments.figures.base import _legend_value

    parallel = '[{"kind":"poisson","cdf":"fb_hadoop","load":0.9,"split":{"min_size":1000000,"piece":150000,' \
               '"gap":"0ns","tenant":"attacker"}}]'
    assert _legend_value(parallel) == "split-parallel"
    assert _legend_value('[{"kind":"poisson","cdf":"fb_hadoop","load":0.9}]') == "benign"
    assert _legend_value("dcqcn") == "dcqcn" and _legend_value("0.3") == "0.3"


def test_a_table_read_by_columns_keeps_only_those_with_parameters_as_categories(tmp_path):
    # What a sweep of tens of millions of flows is loaded with (figures, lb comparisons).
    s = sweep_of({"traffic[0].size": [10_000, 20_000], "fabric.cc": ["dcqcn", "none"]})
    run_sweep(s, tmp_path / "o", LocalExecutor(1), progress=False)
    store = Store(tmp_path / "o")
    whole = store.table("flows")
    part = store.table("flows", columns=("size", "slowdown", "no_such_column"))
    assert part.columns == ["run_id", "size", "slowdown", "label", "traffic[0].size", "fabric.cc", "seed"]
    assert part.schema["fabric.cc"] == pl.Categorical and part.schema["traffic[0].size"] == whole.schema["traffic[0].size"]
    key = ["run_id", "size", "slowdown"]
    assert part.with_columns(pl.col("fabric.cc", "label").cast(pl.Utf8)).sort(key).equals(
        whole.select(part.columns).sort(key))
    assert part.filter(pl.col("fabric.cc") == "none").height == whole.filter(pl.col("fabric.cc") == "none").height > 0


def test_a_cdf_of_many_flows_is_drawn_with_a_few_thousand_exact_points():
    import numpy as np

    from rdmalab.experiments.figures.standard import CDF_POINTS, cdf_steps

    x = np.sort(np.random.default_rng(3).exponential(size=1_000_003))
    v, f = cdf_steps(x)
    assert len(v) == CDF_POINTS and v[0] == x[0] and v[-1] == x[-1] and f[-1] == 1.0
    # Every point drawn is a point of the exact CDF: the fraction of values at or below it.
    assert np.array_equal(np.searchsorted(x, v, side="right") / len(x), f)
    small = np.array([1.0, 2.0, 3.0])
    assert [list(a) for a in cdf_steps(small)] == [[1.0, 2.0, 3.0], [1 / 3, 2 / 3, 1.0]]
    assert [len(a) for a in cdf_steps(np.zeros(0))] == [0, 0]
