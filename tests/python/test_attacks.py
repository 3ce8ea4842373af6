"""The CC-attack paper from Python: tenants and `tenant_share`, the attack builders, `rdmalab run`'s
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
        # Equal per-QP states: N/(N+1) (the shares sit 0.01-0.08 under it, docs/attacks.md).
        for fifo in ("", " fifo"):
            assert rows[(f"per_qp N=2{fifo}", "attacker share")].ours == pytest.approx(2 / 3, abs=0.05)
            assert rows[(f"per_qp N=16{fifo}", "attacker share")].ours == pytest.approx(16 / 17, abs=0.08)
            assert rows[(f"per_pair N=16{fifo}", "attacker share")].ours == pytest.approx(0.5, abs=0.06)
        # Fig. 3's "16 No CC": the input-fair switch splits its egress between the two inputs.
        assert rows[("no CC N=16", "attacker share")].ours == pytest.approx(0.5, abs=0.005)
        # The 60/40 of §IV-A is the paper's worked example, never a reference.
        assert all(c.theirs != c.theirs for (g, _), c in rows.items() if g.startswith("CX-5 N=2"))
    else:
        # The staggered attack ignores congestion control: our payload line rate, 100 x 1000/1048.
        for fifo in ("", " fifo"):
            assert rows[(f"staggered alone{fifo}", "attacker Gb/s")].ours == pytest.approx(95.4, abs=0.2)
            assert rows[(f"victim alone{fifo}", "victim Gb/s")].ours == pytest.approx(95.4, abs=0.2)
        # Fig. 4's testbed case, one 1.125 MB transfer against a running victim: the staggered
        # attack beats the same bytes on 30 parallel QPs (the parallel QPs' rates are cut
        # together, docs/attacks.md), and marking at 8 KB cuts the victim earlier, so the
        # attacker gains (the paper: 60 -> 74 Gb/s).
        stag = rows[("1.125MB staggered+victim", "attacker Gb/s")].ours
        assert rows[("1.125MB parallel30+victim", "attacker Gb/s")].ours < 0.8 * stag
        assert rows[("1.125MB staggered+victim 8KB", "attacker Gb/s")].ours > 1.05 * stag
    from rdmalab.experiments.figures import plot_sweep
    assert (Path(plot_sweep(tmp_path / "o", exp.figures, by=exp.by)["share"][0])).is_file()


def fig4_dumbbell(arbitration: str, victim_gbps: float | None = None, pg: int | None = None) -> Scenario:
    """Fig. 4's dumbbell (500 ns links): 30 staggered reused QPs, 37.5 KB every 3 us, against a
    victim on one QP: always backlogged, or offering `victim_gbps` of wire rate (37.5 KB chunks
    on one reused QP), optionally in its own traffic class `pg`."""
    sc = Scenario.dumbbell(2, delay="500ns").tenant("victim", [0, 2]).tenant("attacker", [1, 3])
    if victim_gbps is None:
        sc = sc.flow(0, 2, 1_000_000_000, tenant="victim", **({"pg": pg} if pg else {}))
    else:
        gap_ns = round(37_500 * 8 / victim_gbps)
        sc = sc.staggered_qps(0, 2, 1, 1_000_000_000, chunk=37_500, interval=f"{gap_ns}ns", tenant="victim")
    sc = sc.staggered_qps(1, 3, 30, 1_000_000_000, chunk=37_500, interval="3us", policy="reuse", tenant="attacker")
    return sc.with_fabric(egress_arbitration=arbitration)


def gbps(sc: Scenario, stop: str = "2ms") -> dict[str, float]:
    res = rdmalab.run(sc.with_stop_time(stop), progress=False)
    t = rdmalab._core.parse_time_ps(stop) // 1_000_000
    return {r["tenant"]: r["gbps"] for r in res.tenant_share(f"{t // 4}us", f"{t}us").iter_rows(named=True)}


@pytest.mark.parametrize("attacker_qps", [1, 4, 16])
def test_input_fair_without_cc_splits_two_inputs_evenly_whatever_the_qps(attacker_qps):
    # Fig. 3's "16 No CC" bar: without congestion control the SN2100's fair arbitration shares
    # the bottleneck equally between the two input ports, whatever the QPs behind each. The
    # victim offers 75 Gb/s (37.5 KB every 4 us), so both inputs are backlogged but arrive at
    # different rates: a FIFO egress (shares by arrival) gives the attacker 0.517 here (measured),
    # outside the tolerance.
    sc = (dumbbell().staggered_qps(0, 2, 1, 1_000_000_000, chunk=37_500, interval="4us", tenant="victim")
          .parallel_qps(1, 3, attacker_qps, 1_000_000_000, tenant="attacker")
          .with_fabric(cc="none", egress_arbitration="input_fair"))
    g = gbps(sc)
    assert g["attacker"] / (g["attacker"] + g["victim"]) == pytest.approx(0.5, abs=0.003)
    assert g["attacker"] + g["victim"] == pytest.approx(100 * 1000 / 1048, abs=0.3)


def test_input_fair_gives_a_half_line_victim_its_input_against_30_staggered_qps():
    # The paper's rule (§IV-A): "the switch only allocates more bandwidth to the attacker's port
    # if the victim's port does not send enough traffic". Without CC a victim offering half the
    # line (50 Gb/s of wire, 47.7 of payload) keeps all of it under input_fair; a FIFO egress
    # shares by arrival rate and gives the line-rate attacker more.
    offered = 50 * 1000 / 1048
    fair = gbps(fig4_dumbbell("input_fair", victim_gbps=50).with_fabric(cc="none"))
    fifo = gbps(fig4_dumbbell("fifo", victim_gbps=50).with_fabric(cc="none"))
    assert fair["victim"] == pytest.approx(offered, abs=0.3)
    assert fifo["victim"] == pytest.approx(38.6, abs=1.5)  # measured; well below its input


def test_dcqcn_marks_on_the_shared_queue_not_arbitration_hold_the_fig4_victim():
    # Fig. 4 on the input-fair switch with DCQCN and step marking at 200 KB: the reused slots'
    # DCQCN states and the victim's are cut by marks on the one egress queue the attacker fills,
    # and the victim ends near one state's share of 31 (docs/attacks.md). Without marking the
    # fair switch splits the line; with the victim in its own class (marks see its own queue
    # only) it keeps about half.
    def share(sc: Scenario) -> float:
        g = gbps(sc.with_fabric(cc="dcqcn"), "5ms")
        return g["victim"] / (g["victim"] + g["attacker"])

    marked = fig4_dumbbell("input_fair").with_fabric(ecn_kmin=200_000, ecn_kmax=200_000)
    assert share(marked) == pytest.approx(1 / 31, abs=0.015)
    assert share(marked.with_fabric(ecn_kmin=100_000_000, ecn_kmax=100_000_000)) == pytest.approx(0.5, abs=0.005)
    own = fig4_dumbbell("input_fair", pg=4).with_fabric(ecn_kmin=200_000, ecn_kmax=200_000)
    assert share(own) == pytest.approx(0.5, abs=0.05)


@pytest.mark.xfail(strict=True, reason="with DCQCN a victim offering half the line keeps 4 % "
                                       "(ConnectX defaults: 15 %), not >= 45 %, on our input-fair switch "
                                       "(docs/attacks.md, Fig. 4)")
def test_dcqcn_victim_offering_half_the_line_keeps_its_fair_share_against_30_staggered_qps():
    # The paper's rule (§IV-A) with DCQCN on: what the testbed's victim kept (about 30 of 90).
    g = gbps(fig4_dumbbell("input_fair", victim_gbps=50).with_fabric(cc="dcqcn", ecn_kmin=200_000,
                                                                          ecn_kmax=200_000), "5ms")
    assert g["victim"] / (g["victim"] + g["attacker"]) >= 0.45


def test_quick_defense_meets_every_goal(tmp_path):
    # The defense's goals at quick size: with the tenant defense the victim keeps >= 0.45
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


def test_fig5_cause_helpers_count_victims_only_and_by_their_start():
    # `attack_dcqcn_causes` bins victims (tenant `default`, < 162.5 KB) by the millisecond they
    # started in and marks those whose sender had an attacker piece alive during their life;
    # the pieces and the unsplit large flows must not enter either.
    from rdmalab.experiments.causes.attack_dcqcn_causes import by_start, sender_classes, start_rows

    rows = []
    for ms in range(3):
        for k in range(50):
            rows.append(("default", 0, 10_000, ms * 1_000_000 + k, 5_000, float(ms + 1)))
    rows.append(("attacker", 0, 150_000, 100, 1_500_000, 500.0))  # alive 100 ns .. 1.5 ms at host 0
    rows.append(("default", 1, 900_000, 200, 1_000, 900.0))  # unsplit but above the BDP
    flows = pl.DataFrame(rows, schema=["tenant", "src", "size", "start_ns", "fct_ns", "slowdown"], orient="row")
    assert list(by_start(flows)) == [1.0, 2.0, 3.0]
    shared = sender_classes(flows)
    assert shared.height == 150
    last_shared = shared.filter(pl.col("shared"))["start_ns"].max()
    assert last_shared < 2_000_000 <= shared.filter(~pl.col("shared"))["start_ns"].min()
    twice = flows.with_columns(pl.col("slowdown") * 2)
    text = start_rows("x", [flows, flows, twice])
    assert text.splitlines()[-1] == "| x, staggered / parallel | " + " | ".join(["2.00"] * 3) + " |"
