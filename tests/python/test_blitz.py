"""Blitz (seed 004) through the Python face: `with_fabric(cc="blitz", iofd={...})`, the
`incast_rounds` builder, the IOFD counters, and errors naming the field."""

import pytest

from rdmalab import Scenario, run


def test_blitz_with_iofd_runs_and_reports_counters():
    sc = (Scenario.leaf_spine(leaves=2, hosts_per_leaf=2, spines=2)
          .flow(0, 2, 2_000_000, sport=1000).flow(1, 3, 2_000_000, sport=1001)
          .with_fabric(cc="blitz", cc_params={"dasr_utilization": 0.95}, iofd={"max_deflections": 1}))
    res = run(sc, progress=False)
    c = res.counters
    assert c["flows_completed"] == 2
    assert {"deflections", "resequenced", "reseq_escapes", "reseq_held"} <= set(c)
    assert c["reseq_held"] == 0 and c["nacks"] == 0


def test_incast_rounds_under_dcqcn_and_blitz():
    base = Scenario.star(5).incast_rounds([1, 2, 3, 4], 0, 64_000, period="200us", rounds=3, jitter="20us")
    for cc in ("dcqcn", "blitz"):
        res = run(base.with_fabric(cc=cc), progress=False)
        assert res.flows.height == 12


def test_blitz_errors_name_the_field():
    sc = Scenario.star(3).flow(1, 0, 1000).with_fabric(cc="blitz", cc_params={"dasr_count": "host"})
    with pytest.raises(ValueError, match=r"fabric\.cc_params\.dasr_count.*per_pair"):
        run(sc, progress=False)
    sc = Scenario.star(3).flow(1, 0, 1000).with_fabric(iofd={"paths": "sideways"})
    with pytest.raises(ValueError, match=r"fabric\.iofd\.paths"):
        run(sc, progress=False)


def test_staggered_incast_rounds_from_python():
    """`stagger` and `piece` reach the engine: a serial round's messages never overlap, so its
    last completion is later than the unstaggered round's (all four share the link at once)."""
    base = dict(senders=[1, 2, 3, 4], receiver=0, size=64_000, period="500us", rounds=2)
    plain = run(Scenario.star(5).incast_rounds(**base), progress=False)
    serial = run(Scenario.star(5).incast_rounds(**base, stagger="serial"), progress=False)
    paced = run(Scenario.star(5).incast_rounds(**base, stagger="paced", piece=8000), progress=False)
    for res in (plain, serial, paced):
        assert res.flows.height == 8
    assert serial.flows["fct_ns"].min() < plain.flows["fct_ns"].min()
    assert serial.flows["fct_ns"].max() > plain.flows["fct_ns"].max()
    with pytest.raises(ValueError, match=r"traffic\[0\]\.piece"):
        run(Scenario.star(5).incast_rounds(**base, stagger="serial", piece=1000), progress=False)
