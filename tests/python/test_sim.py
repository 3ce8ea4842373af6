"""The simulator through its Python face: determinism, errors, the hpcc drop-in, Ctrl-C."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rdmalab
from rdmalab import Scenario, run
from rdmalab.results import percentile

from conftest import wait_for_completed_flows

RDMALAB = Path(sys.executable).parent / "rdmalab"


def small_scenario(seed=3):
    return Scenario.fat_tree(4).poisson("fb_hadoop", load=0.5, duration="200us").with_seed(seed)


def test_same_seed_gives_byte_identical_fct_file(tmp_path):
    a, b = run(small_scenario(), progress=False), run(small_scenario(), progress=False)
    a.write_fct(tmp_path / "a.txt")
    b.write_fct(tmp_path / "b.txt")
    text = (tmp_path / "a.txt").read_bytes()
    assert len(text.splitlines()) == a.counters["flows_total"] > 20
    assert text == (tmp_path / "b.txt").read_bytes()
    c = run(small_scenario(seed=4), progress=False)
    c.write_fct(tmp_path / "c.txt")
    assert (tmp_path / "c.txt").read_bytes() != text


def test_a_run_frees_its_engine_and_still_writes_the_reference_files(tmp_path):
    """`run` releases the engine once its results are taken (at a million hosts the engine is
    most of the memory); the FCT file is then written from the results it handed out, the same
    bytes as from an engine kept alive, and a call that needs the engine says it was freed."""
    from rdmalab import _core
    from rdmalab.runner import drive

    kept = drive(_core.Simulation.from_json(small_scenario().to_json(), "."), progress=False, release=False)
    freed = run(small_scenario(), progress=False)
    kept.write_fct(tmp_path / "kept.txt")
    freed.write_fct(tmp_path / "freed.txt")
    assert (tmp_path / "freed.txt").read_bytes() == (tmp_path / "kept.txt").read_bytes()
    assert kept.extra["core"].progress()[0] == freed.counters["flows_total"]
    with pytest.raises(RuntimeError, match="released"):
        freed.extra["core"].progress()
    freed.extra["core"].release()  # a second release does nothing


def test_results_are_dataframes_with_slowdowns():
    res = run(Scenario.star(3).flow(1, 0, 1_000_000).flow(2, 0, 1_000_000), progress=False)
    assert res.flows.height == 2
    assert set(res.flows.columns) >= {"src", "dst", "sport", "size", "fct_ns", "ideal_ns", "slowdown"}
    # Two equal flows share the receiver's link: each takes about twice its ideal time.
    assert all(1.8 < s < 2.1 for s in res.flows["slowdown"].to_list())
    assert res.counters["drops"] == 0
    table = res.slowdown_table()
    assert table.filter(table["bucket"] == ">=1MB")["flows"][0] == 2


def test_percentile_follows_the_reference_rule():
    import numpy as np

    assert percentile(np.array([5.0, 1.0, 3.0, 2.0]), 0.5) == 3.0  # sorted[int(4*0.5)]
    assert percentile(np.array([1.0, 2.0, 3.0]), 0.99) == 3.0


# Each text starts with an empty line, so `[topology]` is line 2.
BAD_SCENARIOS = [
    ("unknown field", """
        [topology]
        kind = "star"
        hosts = 4
        colour = "red"
     """, ["bad.toml:5: field `topology.colour`", "unknown field"]),
    ("bad unit", """
        [topology]
        kind = "star"
        hosts = 4
        rate = "100Gbitz"
     """, ["bad.toml:5: field `topology.rate`", "Gbitz"]),
    ("flow to itself", """
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "flows"
        flows = [{src = 1, dst = 1, size = 10}]
     """, ["bad.toml:7: field `traffic[0].flows[0].dst`", "itself"]),
    ("flow to a switch", """
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "flows"
        flows = [{src = 1, dst = 4, size = 10}]
     """, ["bad.toml:7: field `traffic[0].flows[0].dst`", "switch"]),
    ("unknown host", """
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "incast"
        senders = [1, 2]
        receiver = 99
        size = 10
     """, ["bad.toml:8: field `traffic[0].receiver`", "unknown host 99"]),
    ("negative size", """
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "flows"
        flows = [
          {src = 1, dst = 2, size = 5},
          {src = 1, dst = 2, size = -5},
        ]
     """, ["bad.toml:9: field `traffic[0].flows[1].size`", "-5"]),
    ("zero-rate link", """
        [topology]
        kind = "star"
        hosts = 4
        rate = "0Gbps"
     """, ["bad.toml:5: field `topology.rate`", "zero"]),
    ("odd fat tree", """
        [topology]
        kind = "fat_tree"
        k = 3
     """, ["bad.toml:4: field `topology.k`", "must be even"]),
    ("load above one", """
        [topology]
        kind = "star"
        hosts = 4
        [[traffic]]
        kind = "poisson"
        cdf = "fb_hadoop"
        load = 1.5
        duration = "1ms"
     """, ["bad.toml:8: field `traffic[0].load`", "(0, 1]"]),
    ("source address not owned", """
        [topology]
        kind = "star"
        hosts = 4
        ips_per_host = 2
        [[traffic]]
        kind = "flows"
        flows = [{src = 1, dst = 2, size = 10, src_ip_index = 2}]
     """, ["bad.toml:8: field `traffic[0].flows[0].src_ip_index`", "owns 2 address"]),
    ("zero mtu", """
        [topology]
        kind = "star"
        hosts = 4
        [fabric]
        mtu = 0
     """, ["bad.toml:6: field `fabric.mtu`", "at least 1 byte"]),
    ("unknown cc parameter", """
        [topology]
        kind = "star"
        hosts = 4
        [fabric]
        cc = "hpcc"
        [fabric.cc_params]
        rp_timer = "300us"
     """, ["bad.toml:8: field `fabric.cc_params.rp_timer`", "hpcc"]),
    ("bad cc parameter value", """
        [topology]
        kind = "star"
        hosts = 4
        [fabric]
        cc = "dcqcn"
        [fabric.cc_params]
        rate_ai = 20
     """, ["bad.toml:8: field `fabric.cc_params.rate_ai`", "rate string"]),
    ("wrong type", """
        [topology]
        kind = "star"
        hosts = "four"
     """, ["bad.toml:4: field `topology.hosts`", "invalid type"]),
]


@pytest.mark.parametrize("name,text,needles", BAD_SCENARIOS, ids=[b[0] for b in BAD_SCENARIOS])
def test_bad_scenarios_name_file_line_and_field(tmp_path, name, text, needles):
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ValueError) as err:
        run(path, progress=False)
    msg = str(err.value)
    for needle in needles:
        assert needle in msg, f"{name}: {needle!r} not in {msg!r}"


# A scenario built in code has no file or lines; its errors still name the full field.
BAD_CODE_SCENARIOS = [
    ("odd fat tree", lambda: Scenario.fat_tree(3), ["field `topology.k`", "must be even"]),
    ("negative size", lambda: Scenario.star(4).flow(1, 2, 10).flow(1, 2, -5),
     ["field `traffic[1].flows[0].size`", "-5"]),
    ("flow to itself", lambda: Scenario.star(4).flow(1, 1, 10), ["field `traffic[0].flows[0].dst`", "itself"]),
    ("load above one", lambda: Scenario.star(4).poisson("fb_hadoop", load=2.0, duration="1ms"),
     ["field `traffic[0].load`", "(0, 1]"]),
    ("unknown fabric setting", lambda: Scenario.star(4).with_fabric(colour="red"),
     ["field `fabric.colour`", "unknown field"]),
    ("source address not owned", lambda: Scenario.star(4).flow(1, 2, 10, src_ip_index=1),
     ["field `traffic[0].flows[0].src_ip_index`", "owns 1 address"]),
]


@pytest.mark.parametrize("name,build,needles", BAD_CODE_SCENARIOS, ids=[b[0] for b in BAD_CODE_SCENARIOS])
def test_bad_scenarios_built_in_code_name_the_field(name, build, needles):
    with pytest.raises(ValueError) as err:
        run(build(), progress=False)
    msg = str(err.value)
    assert msg.startswith("<python scenario>: field `"), msg
    for needle in needles:
        assert needle in msg, f"{name}: {needle!r} not in {msg!r}"


def test_flows_send_from_a_chosen_host_address(tmp_path):
    sc = Scenario.star(3).with_ips_per_host(3).flow(1, 0, 10_000, src_ip_index=2).flow(2, 0, 10_000)
    res = run(sc, progress=False)
    res.write_fct(tmp_path / "fct.txt")
    sips = sorted(line.split()[0] for line in (tmp_path / "fct.txt").read_text().splitlines())
    # Host 1's third address 11.0.1.3; host 2's own 11.0.2.1.
    assert sips == ["0b000103", "0b000201"]


def test_hpcc_drop_in_runs_s2_without_cc(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    cfg = reference_copy / "S2_dcqcn_config.txt"
    cfg.write_text(cfg.read_text().replace("CC_MODE 1", "CC_MODE 0"))
    res, fct, pfc = rdmalab.run_hpcc(cfg.name, progress=False)
    lines = Path(fct).read_text().splitlines()
    assert len(lines) == 2321 == res.counters["flows_total"]
    assert Path(pfc).exists()
    # Same flows as the reference's FCT file (matched by sip, dip, sport), same ideal FCT.
    ours = {tuple(l.split()[:3]): l.split() for l in lines}
    ref = [l.split() for l in (reference_copy / "S2_dcqcn_fct.txt").read_text().splitlines()]
    assert len(ref) == 2321
    for r in ref:
        o = ours[tuple(r[:3])]
        assert o[3:6] == r[3:6], "dport, size and start_ns agree"
        assert o[7] == r[7], "ideal FCT by the reference's formula"


def test_hpcc_drop_in_rejects_unsupported_modes(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    cfg = reference_copy / "S2_hpcc_config.txt"
    cfg.write_text(cfg.read_text().replace("CC_MODE 3", "CC_MODE 10"))
    with pytest.raises(ValueError, match=r"CC_MODE.*not supported"):
        rdmalab.run_hpcc(cfg.name, progress=False)


def test_hpcc_drop_in_rejects_unknown_keys(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    cfg = reference_copy / "S2_dcqcn_config.txt"
    cfg.write_text(cfg.read_text().replace("CC_MODE 1", "CC_MODE 0\nFANCY_KNOB 7"))
    with pytest.raises(ValueError, match="FANCY_KNOB"):
        rdmalab.run_hpcc(cfg.name, progress=False)


def test_cli_demo_prints_summary_and_writes_figure(tmp_path):
    out = subprocess.run([str(RDMALAB), "demo", "--out", str(tmp_path), "--quiet"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "p99" in out.stdout and "flows completed" in out.stdout
    assert (tmp_path / "slowdown.png").stat().st_size > 10_000
    assert (tmp_path / "fct.txt").read_text().count("\n") > 100


@pytest.mark.serial  # a signal to a running simulation: run alone
def test_ctrl_c_stops_cleanly_and_keeps_completed_flows(tmp_path):
    scen = tmp_path / "long.toml"
    scen.write_text(textwrap.dedent("""
        [topology]
        kind = "fat_tree"
        k = 8
        [[traffic]]
        kind = "poisson"
        cdf = "web_search"
        load = 0.6
        duration = "50ms"
    """))
    log = tmp_path / "progress.txt"
    with open(log, "w") as bar:
        proc = subprocess.Popen([str(RDMALAB), "run", str(scen), "--out", str(tmp_path / "out")],
                                stdout=subprocess.PIPE, stderr=bar, text=True)
    # Interrupt once the run is simulating and has completed a flow.
    wait_for_completed_flows(proc, log)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, log.read_text()[-2000:]
    assert "interrupted" in out
    fct = (tmp_path / "out" / "fct.txt").read_text().splitlines()
    assert len(fct) > 0, "flows completed before Ctrl-C are written"


def test_cc_parameters_are_scenario_fields():
    base = Scenario.star(5).incast([1, 2, 3, 4], 0, 2_000_000)
    slow = run(base.with_fabric(cc="dcqcn", cc_params={"rp_timer": "300us"}), progress=False)
    fast = run(base.with_fabric(cc="dcqcn", cc_params={"rp_timer": "50us", "rate_ai": "100Mb/s"}),
               progress=False)
    assert slow.counters["ecn_marks"] > 0
    # A faster increase timer recovers the rate sooner: the incast finishes no later.
    assert fast.flows["fct_ns"].max() <= slow.flows["fct_ns"].max()
    assert not fast.flows["fct_ns"].equals(slow.flows["fct_ns"])
