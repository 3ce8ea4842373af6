"""`lb-host-vs-switch`: the shipped sweeps are what their generator writes,
`[[links]] rate` from Python, and the physics of the quick variant's asymmetric case: under
the quarter-rate spine link CONGA and the data-partition paper's split cut ECMP's p99 FCT slowdown."""

import copy

import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.experiments import repro
from rdmalab.experiments.repro import host_vs_switch_sweep as gen
from rdmalab.experiments.repro.base import HERE
from rdmalab.experiments.sweep import Sweep


@pytest.mark.parametrize("quick", [False, True])
def test_the_shipped_sweeps_are_what_the_generator_writes(quick):
    shipped = (HERE / gen.VARIANTS[quick]["file"]).read_text()
    assert shipped == gen.text(quick), "regenerate: python -m rdmalab.experiments.repro.host_vs_switch_sweep"
    runs = Sweep.from_file(HERE / gen.VARIANTS[quick]["file"]).expand()
    rows = len(gen.SWITCH_ROWS) + len(gen.HOST_ROWS)
    assert len(runs) == rows * len(gen.RECOVERY) * len(gen.CASES) * len(gen.LOADS)
    assert "lb-host-vs-switch" in repro.REGISTRY


def test_link_rate_from_python_is_the_toml_key():
    s = Scenario.leaf_spine(2, 2, spines=2).flow(0, 2, 100_000).link(4, 6, rate="25Gbps", error_rate=0.0)
    assert s.spec["links"] == [{"a": 4, "b": 6, "error_rate": 0.0, "rate": "25Gbps"}]
    res = run(s, progress=False)
    ports = res.ports.filter((pl.col("node") == 4) & (pl.col("peer_node") == 6))
    assert ports["rate_bps"].to_list() == [25_000_000_000]


def test_a_multipath_workload_from_python_carries_the_flows_its_source_draws():
    poisson = {"kind": "poisson", "cdf": "web_search", "load": 0.3, "duration": "200us"}
    base = Scenario.leaf_spine(2, 4, spines=2).with_seed(3)
    s = base.multipath([], qps=4, workload=poisson)
    assert s.spec["traffic"][0] == {"kind": "multipath", "qps": 4, "workload": poisson, "messages": []}
    flows = run(base.poisson("web_search", 0.3, "200us"), progress=False).flows
    messages = run(s, progress=False).messages
    key = ["src", "dst", "size", "start_ns"]
    assert messages.height == flows.height > 0
    assert messages.select(key).sort(key).equals(flows.select(key).cast(messages.select(key).schema).sort(key))


def _quick_run(row: str, case: str = "quarter", recovery: str = "go_back_n", load: float = 0.35):
    """One run of the quick sweep, by its zipped settings (`partition`: the multipath row on
    ECMP)."""
    for spec in Sweep.from_file(HERE / gen.VARIANTS[True]["file"]).expand():
        s, t = spec.scenario, spec.scenario["traffic"][0]
        kind = "partition" if t["kind"] == "multipath" and t.get("split") != "virtuoso" else s["fabric"]["path_selection"]
        t = t.get("workload", t)
        if (kind == row and s["fabric"]["loss_recovery"] == recovery
                and t.get("load") == load and bool(s.get("links")) == (case == "quarter")
                and bool(s.get("events")) == (case == "failed")):
            s = copy.deepcopy(s)
            s["traffic"][0].get("workload", s["traffic"][0])["cdf"] = str(HERE / t["cdf"])
            return run(s, progress=False)
    raise AssertionError(f"no run {row} {case} {recovery} {load}")


def _p99(res) -> float:
    """p99 FCT slowdown of a run's flows, or of its multipath messages."""
    if res.messages.height:
        m = res.messages.filter(pl.col("fct_ns").is_not_nan())
        return float((m["fct_ns"] / m["ideal_ns"]).clip(lower_bound=1.0).quantile(0.99))
    return float(res.flows.filter(pl.col("status") == "completed")["slowdown"].quantile(0.99))


def test_under_a_quarter_rate_spine_link_conga_and_partition_beat_ecmp_s_p99():
    # ECMP hashes a quarter of leaf 0's flows onto the 25 Gb/s link whatever its queue;
    # CONGA's flowlets see its DRE and the feedback and avoid it; the data-partition paper's split
    # spreads each message over 4 QPs, so one slow path holds up only a part of it. The
    # quick variant, 70 % network load, lossless (measured: ECMP 167, CONGA 4.6, partition
    # 23; on the symmetric fabric 6.0, 4.7, 11.4).
    ecmp, conga, partition = (_p99(_quick_run(row)) for row in ("ecmp", "conga", "partition"))
    assert conga < ecmp / 3, (conga, ecmp)
    assert partition < ecmp / 2, (partition, ecmp)


def test_the_virtuoso_cause_runs_start_from_the_sweeps_own_scenarios():
    # `virtuoso_irn_causes` (docs/load-balancing.md) must find the runs its table changes: a
    # regenerated sweep that renamed or dropped them would make its rows silently wrong.
    from rdmalab.experiments.causes import virtuoso_irn_causes as causes

    for which in (0.25, 0.35, "lossless"):
        v, e = causes.sweep_run("virtuoso", which), causes.sweep_run(None, which)
        for spec in (v, e):
            s = spec.scenario
            assert (s["fabric"].get("loss_recovery") == "irn") == (which != "lossless")
            assert bool(s.get("events")) == (which == "lossless") and not s.get("links")
            assert s["traffic"][0]["workload" if spec is v else "kind"] is not None
        assert v.scenario["traffic"][0]["split"] == "virtuoso" and e.scenario["fabric"]["path_selection"] == "ecmp"
        assert v.scenario["traffic"][0]["workload"]["load"] == e.scenario["traffic"][0]["load"]
    assert all(key in (0.25, 0.35, "lossless") for key, _, _ in causes.ROWS)
