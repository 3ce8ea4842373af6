"""Seed 002 from Python: tenants and `tenant_share`, the attack builders, `rdmalab run`'s
tenant table, and the quick attack reproductions end to end (docs/attacks.md)."""

from pathlib import Path

import polars as pl
import pytest

import rdmalab
from rdmalab import Scenario
from rdmalab.cli import main
from rdmalab.experiments import repro
from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.experiments.sweep import Sweep


def dumbbell() -> Scenario:
    return Scenario.dumbbell(2).tenant("victim", [0, 2]).tenant("attacker", [1, 3])


def test_tenant_share_splits_the_bottleneck_by_qps():
    sc = (dumbbell().flow(0, 2, 100_000_000, tenant="victim")
          .parallel_qps(1, 3, 4, 100_000_000, tenant="attacker")
          .with_fabric(cc="dcqcn").with_stop_time("3ms"))
    res = rdmalab.run(sc, progress=False)
    share = res.tenant_share("1ms", "3ms")
    assert share.columns == ["tenant", "bytes", "gbps", "share"]
    assert share["tenant"].to_list() == ["default", "victim", "attacker"]
    assert share["share"].sum() == pytest.approx(1.0)
    attacker = share.filter(share["tenant"] == "attacker").row(0, named=True)
    assert attacker["share"] == pytest.approx(0.8, abs=0.04)  # 4 of 5 per-QP states
    assert attacker["gbps"] == pytest.approx(attacker["bytes"] * 8 / 2e-3 / 1e9)
    # At most the bottleneck's payload rate, 100 x 1000/1048; DCQCN's sawtooth leaves some unused.
    assert 80 < share["gbps"].sum() <= 100 * 1000 / 1048
    assert set(res.flows["tenant"]) <= {"victim", "attacker"}
    # The window is half-open on the µs grid: two halves add up to the whole.
    halves = res.tenant_share("1ms", "2ms")["bytes"] + res.tenant_share("2ms", "3ms")["bytes"]
    assert halves.to_list() == share["bytes"].to_list()
    with pytest.raises(ValueError, match="after start"):
        res.tenant_share("2ms", "1ms")


def test_builders_match_the_toml_fields():
    sc = (dumbbell().staggered_qps(1, 3, qps=4, size=400_000, chunk=20_000, interval="2us", policy="recreate",
                                   tenant="attacker")
          .shuffled_overlay([0, 1, 2, 3], chunk=10_000, interval="5us", until="50us")
          .poisson("fb_hadoop", 0.1, "50us", split={"piece": 150_000, "gap": "13us", "tenant": "attacker"})
          .with_fabric(cc="dcqcn", granularity="per_pair", cc_state_linger="1ms", defense="tenant",
                       ecn_kmin=200_000, ecn_kmax=200_000))
    res = rdmalab.run(sc, progress=False)
    assert res.stop_reason == "finished"
    assert res.counters["qps_opened"] >= 400_000 // 20_000
    with pytest.raises(ValueError, match=r"traffic\[0\]\.flows\[0\]\.src.*not a host of tenant `victim` \(0, 2\)"):
        rdmalab.run(dumbbell().flow(1, 2, 1000, tenant="victim"), progress=False)
    with pytest.raises(ValueError, match=r"fabric\.defense.*unknown defense"):
        rdmalab.run(dumbbell().flow(0, 2, 1000).with_fabric(defense="moat"), progress=False)


def test_run_prints_the_tenant_table(tmp_path, capsys):
    toml = tmp_path / "s.toml"
    toml.write_text("""
stop_time = "500us"
[topology]
kind = "dumbbell"
hosts_per_side = 2
[[tenants]]
name = "attacker"
hosts = [1, 3]
[[traffic]]
kind = "parallel_qps"
tenant = "attacker"
src = 1
dst = 3
qps = 2
size = 1000000
""")
    assert main(["run", str(toml), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "tenant" in out and "attacker" in out and "share" in out


@pytest.mark.parametrize("name", ["attack-parallel", "attack-staggered"])
def test_quick_attack_repros_compare_with_the_paper(tmp_path, name):
    exp = repro.get(name)
    run_sweep(Sweep.from_file(exp.sweep_path(quick=True)), tmp_path / "o", LocalExecutor(2), progress=False)
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    if name == "attack-parallel":
        assert rows[("per_qp N=2", "attacker share")].ours == pytest.approx(2 / 3, abs=0.04)
        assert rows[("per_qp N=2", "attacker share")].theirs == pytest.approx(2 / 3)
        assert rows[("per_qp N=16", "attacker share")].ours > 0.85
        assert rows[("per_pair N=16", "attacker share")].ours == pytest.approx(0.5, abs=0.06)
        assert rows[("CX-5 N=2", "attacker share")].theirs == 0.60
        assert rows[("no CC N=16", "attacker share")].ours == pytest.approx(0.5, abs=0.03)
    else:
        alone = rows[("staggered alone", "attacker Gb/s")].ours
        assert alone > 90  # line rate: the attack ignores congestion control
        assert rows[("staggered+victim", "victim Gb/s")].ours < 40
    from rdmalab.experiments.figures import plot_sweep
    assert (Path(plot_sweep(tmp_path / "o", exp.figures, by=exp.by)["share"][0])).is_file()


def test_quick_defense_meets_every_goal(tmp_path):
    # The goals at quick size: with the tenant defense the victim keeps >= 0.45
    # under each attack with both DCQCN and HPCC (HPCC against staggered `recreate` kept
    # 0.37 before the tenant state paced as one), and the benign p99 slowdown of flows
    # < BDP stays within 1.2x of the undefended run's.
    exp = repro.get("attack-defense")
    run_sweep(Sweep.from_file(exp.sweep_path(quick=True)), tmp_path / "o", LocalExecutor(2), progress=False)
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c.ours for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    for cc in ("dcqcn", "hpcc"):
        for attack in ("par16", "recreate", "overlay"):
            assert rows[(f"{cc} {attack} tenant", "victim share")] >= 0.45, (cc, attack)
            assert rows[(f"{cc} {attack} none", "victim share")] < rows[(f"{cc} {attack} tenant", "victim share")]
        assert rows[(f"{cc} benign", "p99 <BDP vs none")] <= 1.2, cc
        assert rows[(f"{cc} benign", "p99.9 <BDP vs none")] > 0, cc


def test_quick_datacenter_attacks_hurt_the_victims(tmp_path):
    # Fig. 5 at laptop scale: splitting big flows into pieces that each start at line rate
    # (per-QP CC) must raise the tail of the victims' short flows, under DCQCN and HPCC.
    exp = repro.get("attack-datacenter")
    run_sweep(Sweep.from_file(exp.sweep_path(quick=True)), tmp_path / "o", LocalExecutor(2), progress=False)
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    for cc in ("dcqcn", "hpcc"):
        base = rows[(f"{cc} baseline", "victim p99 <BDP")].ours
        for case in ("split-parallel", "split-staggered"):
            assert rows[(f"{cc} {case}", "victim p99 <BDP")].ours > 2 * base, (cc, case, base)
    assert rows[("dcqcn split-staggered", "victim p99 <BDP")].theirs == 140.0
    # The pieces are the attacker's, at most one piece (150 KB) each.
    pieces = flows.filter(pl.col("tenant") == "attacker")
    assert pieces.height > 0 and pieces["size"].max() <= 150_000


def test_quick_enforcement_per_pair_costs_short_flows(tmp_path):
    # Fig. 6 at laptop scale: under HPCC per src/dst pair, a short flow that joins a pair
    # whose long flow is running shares that pair's window instead of starting at line
    # rate: the p99.9 of short flows rises.
    exp = repro.get("attack-hpcc-enforcement")
    run_sweep(Sweep.from_file(exp.sweep_path(quick=True)), tmp_path / "o", LocalExecutor(2), progress=False)
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    assert rows[("hpcc per_pair", "p99.9 20-110KB max")].ours > rows[("hpcc per_qp", "p99.9 20-110KB max")].ours
    assert rows[("hpcc per_qp", "p99.9 20-110KB min")].theirs == 5.0


def test_an_attacker_on_three_hosts_gets_three_nic_shares_under_the_defense():
    # The tenant defense lives at the sending NICs: an attacker tenant sending from three
    # hosts holds three tenant states, so the victim keeps about 1/4, not the 1/2 a
    # tenant-fair network would give (docs/attacks.md reports this limit; no goal).
    def victim(defense: str) -> float:
        sc = (Scenario.dumbbell(4).tenant("victim", [0, 4]).tenant("attacker", [1, 2, 3, 5])
              .flow(0, 4, 1_000_000_000, tenant="victim"))
        for h in (1, 2, 3):
            sc = sc.parallel_qps(h, 5, 4, 1_000_000_000, tenant="attacker")
        res = rdmalab.run(sc.with_fabric(cc="dcqcn", defense=defense).with_stop_time("3ms"), progress=False)
        s = res.tenant_share("1ms", "3ms")
        return s.filter(s["tenant"] == "victim")["share"][0]

    assert victim("none") == pytest.approx(1 / 13, abs=0.03)  # 1 of 13 per-QP states
    assert victim("tenant") == pytest.approx(1 / 4, abs=0.04)
