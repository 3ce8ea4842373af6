"""InfiniBand congestion control (`cc = "ib"`, IBA annex A10) through the Python face:
`with_fabric(cc="ib", cc_params={...})`, the FECN/BECN counters, the CCT index in
`res.rates`, Blitz's `dasr_fallback`, and errors naming the field."""

import pytest

from rdmalab import Scenario, run


def test_ib_cc_marks_returns_becns_and_samples_the_index():
    sc = (Scenario.star(3).incast([1, 2], 0, 3_000_000)
          .with_fabric(link_layer="infiniband", cc="ib", cc_params={"ccti_timer": "5us", "cct": [0] + [f"3:{i}" for i in range(1, 64)]},
                       rate_sample_interval="5us"))
    res = run(sc, progress=False)
    c = res.counters
    assert c["flows_completed"] == 2 and c["ecn_marks"] == 0
    assert c["fecn_marks"] > 0 and c["becns"] == c["fecn_marks"]
    assert res.rates["ccti"].max() > 0 and res.rates["ccti"].max() <= 63
    assert "FECN / BECN" in res.summary()


def test_per_sl_granularity_and_blitz_ib_fallback_run():
    base = Scenario.star(4).incast([1, 2, 3], 0, 1_000_000)
    res = run(base.with_fabric(link_layer="infiniband", cc="ib", granularity="per_sl"), progress=False)
    assert res.counters["flows_completed"] == 3
    res = run(base.with_fabric(link_layer="infiniband", cc="blitz", cc_params={"dasr_fallback": "ib", "dasr_edge_ecn": True}), progress=False)
    assert res.counters["flows_completed"] == 3 and res.counters["ecn_marks"] == 0


def test_ib_errors_name_the_field():
    base = Scenario.star(3).flow(1, 0, 1000)
    for params, field in [({"cct": []}, "cct"), ({"cct": [0, 16, 8]}, "cct"), ({"rp_timer": "5us"}, "rp_timer"),
                          ({"marking_rate": -1}, "marking_rate")]:
        with pytest.raises(ValueError, match=rf"fabric\.cc_params\.{field}"):
            run(base.with_fabric(link_layer="infiniband", cc="ib", cc_params=params), progress=False)


def test_ib_cc_on_roce_is_refused_naming_the_field():
    base = Scenario.star(3).flow(1, 0, 1000)
    with pytest.raises(ValueError, match=r"fabric\.cc\b.*link_layer"):
        run(base.with_fabric(cc="ib"), progress=False)


def test_a_run_names_the_preset_and_table_it_used():
    """`ib_cc_preset` and `cct = "<name>"` from Python; the run's settings line names the set,
    the table and the timer in A10's units (49 x 1.024 us); a RoCE run has no such line."""
    base = Scenario.star(3).incast([1, 2], 0, 500_000)
    mellanox = {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": 49}
    res = run(base.with_fabric(link_layer="infiniband", cc="ib", cc_params=mellanox), progress=False)
    line = res.extra["cc_settings"]
    assert "IB CC preset mellanox_ccmgr" in line and "cct mellanox_default (128 entries)" in line, line
    assert "ccti_timer 50.176 us (49.00 x 1.024 us)" in line and "level 15" in line, line
    res = run(base.with_fabric(link_layer="infiniband", cc="ib"), progress=False)
    assert "IB CC preset rdmalab_v1" in res.extra["cc_settings"]
    assert "cc_settings" not in run(base.with_fabric(cc="dcqcn"), progress=False).extra
    with pytest.raises(ValueError, match=r"fabric\.cc_params\.ccti_timer.*unpublished"):
        run(base.with_fabric(link_layer="infiniband", cc="ib", cc_params={"ib_cc_preset": "mellanox_ccmgr"}),
            progress=False)
