"""Blitz through the Python face: `with_fabric(cc="blitz", iofd={...})`, the
`incast_rounds` builder, the IOFD counters, and errors naming the field."""

import copy
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.experiments.repro import blitz
from rdmalab.experiments.sweep import Sweep
from rdmalab.results import percentile


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


def test_no_schedule_beats_the_aggregators_link_on_the_quick_testbed():
    """docs/blitz.md's bound, on measured runs of `blitz_incast_quick.toml` (d = 4 and 16, every
    scheme; 3 rounds 2 ms apart to keep it short): in every round the last message ends at least
    n·W/C after the first start, W a message's wire bytes and C FDR 4x's data rate. The bound is
    what caps DASR's possible gain: at d = 16 IB's largest FCT is less than 2.5x (the poster's
    lowest ratio) of the least any schedule could reach, n·W/C less the round's spread of starts."""
    sweep = Sweep.from_file(Path(blitz.__file__).with_name("blitz_incast_quick.toml"))
    for spec in sweep.expand():
        sc = copy.deepcopy(spec.scenario)
        rounds = next(t for t in sc["traffic"] if t["kind"] == "incast_rounds")
        rounds.update(rounds=3, period="2ms")
        sc["stop_time"] = "7ms"
        flows = run(Scenario(sc), progress=False).flows
        b = blitz.round_link_bound(flows, period_ns=2e6)
        n = len(rounds["senders"])
        assert b.height == 3 and (b["n"] == n).all(), spec.label()
        assert (b["over"] >= 1.0).all(), f"{spec.label()}: {b}"
        if n == 16 and spec.params["fabric.cc"] == "ib" and spec.params["traffic[1].stagger"] == "none":
            inc = flows.filter(pl.col("dport") == blitz.INCAST_DPORT)
            for r in b.iter_rows(named=True):
                f = inc.filter((pl.col("start_ns") >= r["first_ns"]) & (pl.col("start_ns") < r["first_ns"] + 1e6))
                least = r["bound_us"] - (f["start_ns"].max() - r["first_ns"]) / 1e3
                assert f["fct_ns"].max() / 1e3 < blitz.PAPER_RATIO_LOW * least, (r, least)


def test_the_bounds_wire_bytes_and_rate_are_what_the_engine_sends():
    """`round_link_bound`'s W and C against a run: one 256 KiB WRITE on an FDR 4x InfiniBand link
    puts exactly `ib_message_wire_bytes` on the sender's wire, at the port's rate."""
    res = run(Scenario.star(2, rate="FDR4x").flow(1, 0, 262_144).with_fabric(link_layer="infiniband"), progress=False)
    port = res.ports.filter(pl.col("node") == 1).row(0, named=True)
    assert port["tx_bytes"] == blitz.ib_message_wire_bytes(262_144) and port["tx_packets"] == 128
    assert abs(port["rate_bps"] - blitz.FDR4X_BPS) < 1


def test_published_settings_leave_the_d16_round_as_without_cc():
    """docs/blitz.md's table, one round: the Mellanox manager's set at a 1 ms timer gives the
    incast the median and p99 it has without CC (to 0.1 %: over the table's 3 rounds the medians
    are 607.38 and 607.45 us, p99 equal), while marking every packet with the Mellanox table and the
    longest timer makes the round take more of the link's time."""
    settings = {"none": ("none", {}), "mellanox 1ms": ("ib", {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": "1ms"}),
                "harshest": ("ib", {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": 8192, "marking_rate": 0})}
    t = blitz.d16_round(settings, rounds=1)
    none, mellanox, harsh = t.iter_rows(named=True)
    for q in ("median_us", "p99_us"):
        assert abs(mellanox[q] - none[q]) <= 1e-3 * none[q], (q, mellanox[q], none[q])
    assert mellanox["fecn_marks"] > 0 and "preset mellanox_ccmgr" in mellanox["printed"]
    assert harsh["span_over_bound"] > none["span_over_bound"] >= 1.0


def test_the_fluid_yardstick_has_its_closed_forms():
    """docs/blitz.md's yardstick (`fair_share_fcts`, `serial_fcts`) against closed forms: n flows
    started together on a fair-shared link end together after (n + long flows)·T; two flows t
    apart both take 2T − t (alone for t, then halves); a serial round whose senders all start
    at the round's start completes its k-th after k·(grant + T + tail) + ack, median (n+1)/2 of
    that; a late first sender holds up every later one by its lateness."""
    t = blitz.message_time_us()
    assert 16 * t == pytest.approx(16 * blitz.ib_message_wire_bytes(262_144) * 8 / blitz.FDR4X_BPS * 1e6)
    for longs in (0, 1):
        fct = blitz.fair_share_fcts(np.zeros(16), t, longs)
        assert fct == pytest.approx(np.full(16, (16 + longs) * t), rel=1e-12)
    assert blitz.fair_share_fcts(np.array([5.0, 15.0]), 30.0) == pytest.approx([50.0, 50.0], rel=1e-12)
    assert blitz.fair_share_fcts(np.array([0.0, 40.0]), 30.0) == pytest.approx([30.0, 30.0], rel=1e-12)
    g = blitz.serial_gaps_us()
    per = t + g["grant_us"] + g["tail_us"]
    fct = blitz.serial_fcts(np.full(16, 1000.0), 1000.0, t, **g)
    assert fct == pytest.approx(np.arange(1, 17) * per + g["ack_us"], rel=1e-12)
    assert np.median(fct) == pytest.approx(17 / 2 * per + g["ack_us"], rel=1e-12)
    late = blitz.serial_fcts(np.array([1050.0] + [1000.0] * 15), 1000.0, t, **g)
    assert late[1:] - fct[1:] == pytest.approx(np.full(15, 50.0 - g["grant_us"]), rel=1e-9)


def _d16(cc, params, *rest):
    sc, _ = blitz.d16_scenario(cc, params, *rest)
    inc = run(Scenario(sc), progress=False).flows.filter(pl.col("dport") == blitz.INCAST_DPORT)
    return inc.with_columns(((pl.col("start_ns") - 1e6) / 10e6).round(0).cast(pl.Int64).alias("round")) \
        .sort("round", "src")


def _per_round(inc, model):
    return np.concatenate([model(f["start_ns"].to_numpy() / 1e3, 1000.0 + 10_000.0 * r)
                           for (r,), f in inc.group_by("round", maintain_order=True)])


def test_a_serial_round_without_the_long_flow_is_the_serial_schedule():
    """`blitz_causes serial_no_long_flow` (d = 16, 3 rounds) against `serial_fcts` over the run's
    own starts: every flow ends no earlier than the model and less than one data packet's time
    on the link later (the model counts the last packet's store and forward once; measured
    0.003-0.2 us), so the round's median is the closed form (n+1)/2·(grant + T + tail) + ack
    moved only by the jittered starts (each within 100 us of the round's)."""
    inc = _d16("ib", {}, "serial", blitz.NO_LONG_FLOW)
    assert inc.height == 48
    t, g = blitz.message_time_us(), blitz.serial_gaps_us()
    model = _per_round(inc, lambda s, r: blitz.serial_fcts(s, r, t, **g))
    diff = inc["fct_ns"].to_numpy() / 1e3 - model
    packet = (2048 + blitz.IB_DATA_HEADER) * 8 / blitz.FDR4X_BPS * 1e6
    assert diff.min() >= 0 and diff.max() < packet, (diff.min(), diff.max())
    closed = 17 / 2 * (t + g["grant_us"] + g["tail_us"]) + g["ack_us"]
    assert abs(np.median(inc["fct_ns"].to_numpy() / 1e3) - closed) < 100


def test_the_baseline_round_is_fair_sharing_with_or_without_ib_cc():
    """`blitz_causes baseline` and `no_cc` (d = 16, 3 rounds): each round's median and p99 are
    fair sharing's (`fair_share_fcts` over the run's own starts, the long flow always there)
    to within one round-robin cycle of the aggregator's egress over its 17 inputs (17 data
    packets' time, 5.2 us; measured 2.0-3.4 us), and IB CC moves neither by more than that."""
    t = blitz.message_time_us()
    cycle = 17 * (2048 + blitz.IB_DATA_HEADER) * 8 / blitz.FDR4X_BPS * 1e6
    got = {}
    for cc in ("ib", "none"):
        inc = _d16(cc, {})
        meas = inc["fct_ns"].to_numpy() / 1e3
        model = _per_round(inc, lambda s, _r: blitz.fair_share_fcts(s, t, 1))
        for q in (0.5, 0.99):
            assert abs(percentile(meas, q) - percentile(model, q)) < cycle, (cc, q)
        got[cc] = meas
    for q in (0.5, 0.99):
        assert abs(percentile(got["ib"], q) - percentile(got["none"], q)) < cycle


def test_the_headline_keeps_ib_cc_on_under_every_dasr():
    """docs/blitz.md's row on the two readings: `blitz_incast.toml` (the headline) runs the
    serial and paced emulations with `cc = "ib"` and DASR in the NIC over IB CC, the runs
    `blitz_causes dasr_cc` labels "the headline's"."""
    from rdmalab.experiments.causes import blitz_causes  # the script, imported only by this test

    sweep = Sweep.from_file(Path(blitz.__file__).with_name("blitz_incast.toml"))
    seen = {}
    for spec in sweep.expand():
        fab = spec.scenario["fabric"]
        seen[blitz.scheme(spec.params)] = (fab["cc"], fab.get("cc_params", {}), spec.scenario["traffic"][1]["stagger"])
    assert seen == {"ib": ("ib", {}, "none"), "serial": ("ib", {}, "serial"), "paced": ("ib", {}, "paced"),
                    "nic": ("blitz", {"dasr_fallback": "ib"}, "none")}
    headline = {k: v for k, v in blitz_causes.ROWS["dasr_cc"].items() if "the headline's" in k}
    assert sorted((cc, p, (r or ["none"])[0]) for cc, p, *r in headline.values()) == \
        sorted(v for k, v in seen.items() if k != "ib")


def test_serial_sends_never_find_a_short_srq_empty():
    """`blitz_causes dasr_srq` at an SRQ of 4 WQEs for 16 senders: serial grants keep one message
    in progress, so its SENDs meet no RNR NAK and complete as its WRITEs do (the same FCTs), while
    the unstaggered baseline's SENDs are refused; the gains are the baseline's over each run."""
    from rdmalab.experiments.causes import blitz_causes  # the script, imported only by this test

    rows = {r["run"]: r for r in blitz_causes.dasr_srq_table(16, (4,))}
    assert set(rows) == {f"{name}, SRQ of 4" for name in blitz_causes.DASR_SRQ_SCHEMES}
    serial, base = rows["serial, SRQ of 4"], rows["baseline (IB CC, no stagger), SRQ of 4"]
    assert serial["rnr_naks"] == 0 and base["rnr_naks"] > 0
    write = _d16("ib", {}, "serial")["fct_ns"].to_numpy() / 1e3
    assert serial["median_us"] == pytest.approx(float(np.median(write)), abs=1e-6)
    assert serial["p99_us"] == pytest.approx(percentile(write, 0.99), abs=1e-6)
    assert serial["gain_median"] == pytest.approx(base["median_us"] / serial["median_us"])
    assert base["gain_median"] == base["gain_p99"] == 1.0


def test_dasr_srq_runs_the_full_sweeps_degrees_and_refuses_others(capsys):
    """`dasr_srq:8+2`: the degrees only `blitz_incast.toml` has (its base is the quick file's);
    at d = 8 on an SRQ of 2 serial's SENDs meet no RNR NAK and complete as its WRITEs do."""
    from rdmalab.experiments.causes import blitz_causes

    rows = {r["run"]: r for r in blitz_causes.dasr_srq_table(8, (2,))}
    assert set(rows) == {f"{n}, SRQ of 2" for n, (_, _, stagger) in blitz_causes.DASR_SRQ_SCHEMES.items()
                         if stagger != "paced"}
    serial, base = rows["serial, SRQ of 2"], rows["baseline (IB CC, no stagger), SRQ of 2"]
    assert serial["rnr_naks"] == 0 and base["rnr_naks"] > 0 and serial["flows"] == base["flows"] == 24
    sc, _ = blitz.d16_scenario("ib", {}, "serial", degree=8)
    flows = run(Scenario(sc), progress=False).flows
    write = flows.filter(pl.col("dport") == blitz.INCAST_DPORT)["fct_ns"].to_numpy() / 1e3
    assert serial["median_us"] == pytest.approx(float(np.median(write)), abs=1e-6)
    with pytest.raises(ValueError, match="degree 3 has no depths"):
        blitz_causes.dasr_srq("3")
