"""Switch-side load balancing from Python: `with_fabric(path_selection=..., lb={...})` writes the same
scenario as `[fabric.lb]`, a sprayed run has its `balance` table and out-of-order counts, bad
values name their field, and `lb-conweave` is registered. The physics is checked in
crates/rdmalab/tests/it/lb.rs."""

import tomllib

import pytest

from rdmalab import Scenario, run
from rdmalab.experiments import repro
from rdmalab.experiments.sweep import Sweep

TOML = """
[topology]
kind = "leaf_spine"
leaves = 2
hosts_per_leaf = 2
spines = 2
host_rate = "100Gbps"
fabric_rate = "100Gbps"
delay = "1us"

[[traffic]]
kind = "flows"
flows = [{ src = 0, dst = 2, size = 2000000 }, { src = 1, dst = 3, size = 2000000 }]

[fabric]
cc = "dcqcn"
path_selection = "spray"

[fabric.lb]
lb_window = "20us"
"""


def built() -> Scenario:
    return (Scenario.leaf_spine(2, 2, spines=2).flow(0, 2, 2_000_000).flow(1, 3, 2_000_000)
            .with_fabric(cc="dcqcn", path_selection="spray", lb={"lb_window": "20us"}))


def test_python_api_mirrors_the_toml_and_sprayed_runs_have_their_tables(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    from_toml, from_api = Scenario.from_toml(path), built()
    assert from_api.spec["fabric"] == from_toml.spec["fabric"]
    res = run(from_api, progress=False)
    assert "balance" in res.tables() and res.balance.height > 0
    assert set(res.balance["uplinks"].to_list()) == {2}
    # Spraying reorders: the receivers count packets beyond a hole, per flow and in total.
    assert res.flows["ooo_packets"].sum() == res.counters["ooo_packets"] > 0
    hashed = run(from_api.with_fabric(path_selection="ecmp"), progress=False)
    assert hashed.counters["ooo_packets"] == 0 and hashed.balance.height > 0


@pytest.mark.parametrize("settings, field", [
    ({"path_selection": "flowlet"}, "fabric.path_selection"),
    ({"path_selection": "drill", "lb": {"drill_samples": 0}}, "fabric.lb.drill_samples"),
    ({"path_selection": "conga", "lb": {"conga_alpha": 1.5}}, "fabric.lb.conga_alpha"),
    ({"path_selection": "letflow", "lb": {"flowlet_table": 1000}}, "fabric.lb.flowlet_table"),
])
def test_bad_settings_name_their_field(settings, field):
    sc = Scenario.leaf_spine(2, 1, spines=2).flow(0, 1, 1000).with_fabric(**settings)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        run(sc, progress=False)


def test_conga_off_leaf_spine_is_refused_by_name():
    sc = Scenario.fat_tree(4).flow(0, 9, 1000).with_fabric(path_selection="conga")
    with pytest.raises(ValueError, match=r"fabric\.path_selection.*leaf-spine"):
        run(sc, progress=False)


def test_lb_conweave_is_registered_with_a_quick_variant():
    e = repro.get("lb-conweave")
    assert e.sweep_path().exists() and e.sweep_path(quick=True).exists() and e.by == "fabric.path_selection"
    # The 80 % network-load variant differs from it in the load and ConWeave's table.
    e80 = repro.get("lb-conweave-load80")
    for quick in (False, True):
        a, b = (tomllib.loads(x.sweep_path(quick=quick).read_text()) for x in (e, e80))
        assert (a["base"]["traffic"][0]["load"], b["base"]["traffic"][0]["load"]) == (0.25, 0.4)
        b["base"]["traffic"][0]["load"] = 0.25
        assert b["base"]["fabric"]["lb"].pop("conweave_table") == 1 << 18
        assert {k: v for k, v in a.items() if k not in ("name", "description")} == \
            {k: v for k, v in b.items() if k not in ("name", "description")}



@pytest.mark.parametrize("name, key, values", [
    ("lb-conweave-buffer", "fabric.buffer_mb", [2, 4, 6, 9, 12, 24]),
    ("lb-conweave-loss", "fabric.error_rate", [1e-6, 1e-5, 1e-4, 1e-3]),
    ("lb-conweave-workloads", "traffic[0].cdf", ["data/AliStorage2019.txt", "data/FbHdp2015.txt",
                                                 "data/GoogleRPC2008.txt", "data/Solar2022.txt", "web_search"]),
])
def test_lb_conweave_variants_expand_to_their_rows(name, key, values):
    # ECMP and ConWeave, each lossless go-back-N and IRN without PFC, at every
    # value of the one setting the variant sweeps; the rest is lb-conweave's, at full size and quick.
    e, base = repro.get(name), repro.get("lb-conweave")
    for quick in (False, True):
        rows = Sweep.from_file(e.sweep_path(quick)).expand()
        got = sorted((r.params["fabric.path_selection"], r.params["fabric.loss_recovery"],
                      r.params["fabric.lossless"], str(r.params[key])) for r in rows)
        want = sorted((s, rec, rec == "go_back_n", str(v)) for s in ("ecmp", "conweave")
                      for rec in ("go_back_n", "irn") for v in values)
        assert got == want
        a, b = (tomllib.loads(x.sweep_path(quick=quick).read_text()) for x in (base, e))
        assert a["base"] == b["base"] and a["zip"] == b["zip"] and a["seeds"] == b["seeds"]
        assert set(b["grid"]) == {"fabric.path_selection", key}
    # The copied CDFs are there, beside the sweep files.
    files = [v for v in values if isinstance(v, str) and v.startswith("data/")]
    assert all((e.sweep_path().parent / f).is_file() for f in files)


def test_conweave_runs_in_order_with_its_reorder_table_and_counters():
    # A 1 ns reply margin makes every reply late: flows move once per epoch and the
    # destination ToRs reorder; no NIC sees a packet out of order.
    flows = Scenario.leaf_spine(2, 4, spines=2)
    for i in range(4):
        flows = flows.flow(i, 4 + i, 1_000_000).flow(4 + i, i, 1_000_000)
    sc = flows.with_fabric(cc="dcqcn", path_selection="conweave", lb={"conweave_reply_extra": "1ns"})
    res = run(sc, progress=False)
    c = res.counters
    assert c["lb_reroutes"] > 0 and c["lb_control_packets"] > 0
    assert c["ooo_packets"] == 0 and res.flows["ooo_packets"].sum() == 0
    assert c["reorder_held"] > 0 and "reorder" in res.tables() and res.reorder["bytes"].max() > 0
    # ConWeave's out-of-order cause counters: present under ConWeave, and none with nothing out of order.
    assert all(c[f"reorder_ooo_{k}"] == c[f"reorder_gaps_{k}"] == 0
               for k in ("deadline", "unheld", "epoch_held", "moved", "other", "unseen_start"))
    assert "reorder_ooo_deadline" not in run(sc.with_fabric(path_selection="ecmp"), progress=False).counters
    with pytest.raises(ValueError, match=r"fabric\.nack_interval"):  # the ConWeave artifact's NIC setting
        run(sc.with_fabric(nack_interval="0us"), progress=False)
    with pytest.raises(ValueError, match=r"fabric\.lb\.conweave_queues"):
        run(sc.with_fabric(lb={"conweave_queues": 0}), progress=False)


def test_lb_conweave_fattree_runs_the_artifacts_fat_tree_with_its_timers():
    # ECMP and ConWeave on the artifact's k = 8 (quick: k = 4) 2:1 fat tree,
    # ConWeave's flush margin and default wait zipped with the loss recovery as its run.py sets
    # them for a fat tree (64 us / 600 us lossless, 16 us / 300 us with IRN; expiry 1 ms).
    e = repro.get("lb-conweave-fattree")
    want = sorted([(s, "go_back_n", True, "64us", "600us") for s in ("ecmp", "conweave")]
                  + [(s, "irn", False, "16us", "300us") for s in ("ecmp", "conweave")])
    for quick, head in ((False, "336 80 512"), (True, "52 20 64")):
        rows = Sweep.from_file(e.sweep_path(quick)).expand()
        got = sorted((r.params["fabric.path_selection"], r.params["fabric.loss_recovery"], r.params["fabric.lossless"],
                      r.params["fabric.lb.conweave_flush_extra"], r.params["fabric.lb.conweave_default_wait"])
                     for r in rows)
        assert got == want
        doc = tomllib.loads(e.sweep_path(quick).read_text())
        assert doc["base"]["fabric"]["lb"]["conweave_tx_expiry"] == "1ms"
        topo = e.sweep_path(quick).parent / doc["base"]["topology"]["path"]
        assert topo.read_text().splitlines()[0].split() == head.split()


def test_conweave_runs_on_a_fat_tree_in_order():
    # A 1 ns reply margin: flows between pods move at every epoch, across the aggregation and
    # core tiers; the destination ToRs keep every NIC in order (ConWeave on a fat tree, not
    # only on a leaf-spine).
    sc = Scenario.fat_tree(4)
    for i in range(4):
        sc = sc.flow(i, 12 + i, 1_000_000).flow(12 + i, i, 1_000_000)
    sc = sc.with_fabric(cc="dcqcn", path_selection="conweave",
                        lb={"conweave_reply_extra": "1ns", "conweave_flush_extra": "64us",
                            "conweave_default_wait": "600us", "conweave_tx_expiry": "1ms"})
    res = run(sc, progress=False)
    c = res.counters
    assert len(res.flows) == 8 and c["lb_reroutes"] > 0 and c["lb_control_packets"] > 0
    assert c["ooo_packets"] == 0 and c["lb_untracked"] == 0


def test_size_bins_split_the_flows_into_tenths_by_size():
    # ConWeave's by-size figure: sizes 1..100 with slowdown = size fall into ten bins of ten
    # flows, whose median sizes are 5.5, 15.5, ... and whose p99 is numpy's at the bin's top.
    import numpy as np
    import polars as pl

    from rdmalab.experiments.repro.load_balancing import size_bins

    sizes = np.arange(1, 101, dtype=float)
    bins = size_bins(pl.DataFrame({"size": sizes[::-1], "slowdown": sizes[::-1]}))
    assert [b[0] for b in bins] == [10 * i + 5.5 for i in range(10)]
    assert [b[1] for b in bins] == [10 * i + 5.5 for i in range(10)]
    assert bins[0][2] == pytest.approx(1 + 0.99 * 9)
    # A size shared by most flows is one bin, not split between tenths.
    tied = pl.DataFrame({"size": [7.0] * 90 + [50.0] * 10, "slowdown": [1.0] * 90 + [3.0] * 10})
    assert [(b[0], b[1]) for b in size_bins(tied)] == [(7.0, 1.0), (50.0, 3.0)]
    assert size_bins(tied.clear()) == []
