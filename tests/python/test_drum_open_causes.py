"""The DRUM cause scripts of docs/drum-fabric.md §6.10, each at its `quick` size:
what grows with cc in TC1 and with the background's batch in drum-fig2a, measured."""

from __future__ import annotations

import pytest


def test_tc1_grows_with_cc_only_when_the_nic_round_robins_over_cc_qps():
    """`drum_tc1_causes tc1:quick` on IB QDR: DRUM's foreground p80 is flat in cc because the
    agent keeps 19 dedicated QPs beside the shared one; with k = 200 and no cache limit every
    connection has a QP and the p80 grows by one IB packet time (1024 B payload + 26 B
    headers at 32 Gb/s) per added connection: one more QP in the NIC's per-packet round robin,
    and at cc = 100 it is one pass over the other 99."""
    from rdmalab.experiments.causes.drum_tc1_causes import tc1_case

    ib = ("infiniband", "QDR4x")
    base = {cc: tc1_case(*ib, "drum", cc, size="quick") for cc in (20, 100)}
    assert base[100]["p80"] == pytest.approx(base[20]["p80"], rel=0.02), base
    assert base[100]["dedicated"] == pytest.approx(19.0), base
    rr = {cc: tc1_case(*ib, "drum", cc, k=200, cache=False, size="quick") for cc in (20, 50, 100)}
    assert rr[100]["dedicated"] == pytest.approx(100.0), rr
    assert rr[20]["p80"] < rr[50]["p80"] < rr[100]["p80"], rr
    packet_us = (1024 + 26) * 8 / 32e3
    per_connection = (rr[100]["p80"] - rr[50]["p80"]) / 50
    assert per_connection == pytest.approx(packet_us, rel=0.05), (per_connection, packet_us)
    # Once a pass is longer than the round trip, the p80 is one pass over the other cc - 1 QPs.
    assert rr[100]["p80"] == pytest.approx(99 * packet_us, rel=0.02), rr


def test_fig6_growth_is_the_foregrounds_release_interval_and_goes_with_it():
    """`drum_fig6_causes fig6:quick` on IB QDR: under the base DRUM the foreground's p80 grows
    with the background's batch and follows its release interval 1/x̂ at the optimum (within
    one release slot and one round trip); letting it rank first (`a = "batch_size"`) or
    letting the utility set the rates (β = 10⁻⁹) makes it flat near its p80 alone."""
    from rdmalab.experiments.causes.drum_fig6_causes import fig6_case

    ib = ("infiniband", "QDR4x")
    base = {b: fig6_case(*ib, "drum", b, size="quick") for b in (20, 100)}
    assert base[100]["p80"] > 1.5 * base[20]["p80"], base
    assert base[100]["interval"] > 2 * base[20]["interval"], base
    slot = 0.68 / 0.9
    assert base[100]["interval"] - slot <= base[100]["p80"] <= base[100]["interval"] + 6.0, base
    alone = fig6_case(*ib, "drum", 100, alone=True, size="quick")["p80"]
    for kw in ({"a": "batch_size"}, {"beta": 1e-9}):
        r = {b: fig6_case(*ib, "drum", b, size="quick", **kw)["p80"] for b in (20, 100)}
        assert r[100] == pytest.approx(r[20], rel=0.05), (kw, r)
        assert r[100] < base[100]["p80"] / 2 and r[100] < alone + 1.0, (kw, r, alone)
