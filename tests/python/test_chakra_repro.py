"""`rdmalab repro run chakra-microbenchmarks --quick` (docs/chakra.md): ASTRA-sim's 4-rank
Chakra microbenchmarks and the 8-rank ring AllReduce, native and written as point-to-point
sends, on a star and a leaf-spine at 400 Gb/s under no CC, DCQCN and HPCC. Each collective is
held against its closed form, worked out here by hand for one of them; the point-to-point ring
against the native ring."""

from __future__ import annotations

import pytest

from rdmalab.cli import main
from rdmalab.experiments.repro.chakra import rows
from rdmalab.experiments.store import Store

RATE, DELAY = 400e9, 1000.0     # the quick fabric's links
MTU, HDR, ACK, INT = 1000, 48, 60, 42


def tx_ns(nbytes: float) -> float:
    return nbytes * 8 / RATE * 1e9


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("chakra") / "q"
    assert main(["repro", "run", "chakra-microbenchmarks", "--quick", "--out", str(out), "--quiet",
                 "--workers", "1"]) == 0
    store = Store(out)
    runs = store.runs()
    assert runs.height == 36 and (runs["status"] == "ok").all()
    return out, rows(store, runs, store.table("flows", params=False))


def test_the_ring_allreduce_on_the_star_takes_its_hand_worked_closed_form(quick):
    _, (micro, _) = quick
    x = next(m for m in micro if (m["kind"], m["ranks"], m["fabric"], m["cc"]) == ("allreduce", 4, "star", "none"))
    # 6 ring steps of 262,144 bytes (263 packets, each with its header and an ACK returned on
    # the same uplink), each crossing two links (one store-and-forward of a full packet), and
    # an ACK's time between steps.
    step = tx_ns(262144 + 263 * (HDR + ACK)) + tx_ns(MTU + HDR) + 2 * DELAY
    assert x["closed_ns"] == pytest.approx(6 * step + 5 * tx_ns(ACK), rel=1e-9)
    assert x["time_ns"] == pytest.approx(x["closed_ns"], rel=0.03)


def test_every_collective_on_the_star_is_within_3_percent_of_its_closed_form(quick):
    _, (micro, _) = quick
    star = [m for m in micro if m["fabric"] == "star"]
    assert len(star) == 15
    for m in star:
        assert m["time_ns"] == pytest.approx(m["closed_ns"], rel=0.03), m["set"]


def test_on_the_leaf_spine_rings_keep_their_form_and_ecmp_slows_the_all_to_all(quick):
    _, (micro, _) = quick
    ls = [m for m in micro if m["fabric"] == "leaf-spine"]
    for m in ls:
        if m["kind"] != "alltoall":
            # Two hops of the ring cross a spine, one flow each way: nothing shares a link.
            assert m["time_ns"] == pytest.approx(m["closed_ns"], rel=0.03), m["set"]
        else:
            # ECMP puts all four pieces that leave a leaf on one of its two uplinks (the
            # busiest carries twice the mean), so they take at least that uplink's time.
            assert m["uplink_spread"] == 2.0
            assert m["time_ns"] > 1.15 * m["closed_ns"]
            assert m["time_ns"] > 4 * tx_ns(262144 + 263 * HDR)


def test_dcqcn_marks_nothing_and_hpcc_costs_its_int_bytes(quick):
    _, (micro, _) = quick
    by = {(m["set"], m["fabric"], m["cc"]): m for m in micro}
    for (s, fab, cc), m in by.items():
        if cc == "dcqcn":
            assert m["time_ns"] == by[(s, fab, "none")]["time_ns"]
            assert int(m["counters"]["ecn_marks"]) == 0
        if cc == "hpcc":
            # HPCC's closed form carries INT bytes on every data packet and ACK; the run
            # keeps the same ratio to it as without CC, within 1 %.
            none = by[(s, fab, "none")]
            assert m["time_ns"] / m["closed_ns"] == pytest.approx(none["time_ns"] / none["closed_ns"], rel=0.01)
            assert m["time_ns"] > none["time_ns"]


def test_the_point_to_point_ring_takes_the_native_ring_s_time(quick):
    out, (_, p2p) = quick
    assert len(p2p) == 6
    for p in p2p:
        # Within one packet's time a step (14 steps).
        assert p["slack_ns"] == pytest.approx(14 * tx_ns(MTU + HDR + (INT if p["cc"] == "hpcc" else 0)))
        assert abs(p["span_ns"] - p["native_ns"]) <= p["slack_ns"]
    assert (out / "figures" / "chakra_vs_closed_form.png").is_file()
