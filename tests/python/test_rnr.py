"""Receive queues and RNR NAKs from Python (`[rnic]`, `verb = "send"`): `with_rnic` and the
traffic builders' `verb` write the same scenario as the TOML keys; the run reports
`rnr_naks` in `counters` and per flow in `res.rnr`; bad values name their field. The physics
(counts and FCTs against the closed form) is checked in crates/rdmalab/tests/it/rnr.rs."""

import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.experiments.repro.blitz_round import INCAST_DPORT, d16_scenario

TOML = """
[topology]
kind = "star"
hosts = 2
rate = "100Gbps"

[fabric]
cc = "none"
mtu = 1000

[rnic]
recv_queue_depth = 1
recv_repost_delay = "30us"
min_rnr_timer = 1
rnr_retry = 7

[[traffic]]
kind = "flows"
verb = "send"
flows = [{ src = 0, dst = 1, size = 10000 }, { src = 0, dst = 1, size = 10000, start = "3us" }]
"""


def built() -> Scenario:
    return (Scenario.star(2, rate="100Gbps").with_fabric(cc="none", mtu=1000)
            .with_rnic(recv_queue_depth=1, recv_repost_delay="30us", min_rnr_timer=1, rnr_retry=7)
            .flows([{"src": 0, "dst": 1, "size": 10000}, {"src": 0, "dst": 1, "size": 10000, "start": "3us"}],
                   verb="send"))


def test_python_api_mirrors_the_toml_and_reports_rnr_naks(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    from_toml, from_api = Scenario.from_toml(path), built()
    assert from_api.spec["rnic"] == from_toml.spec["rnic"]
    assert from_api.spec["traffic"] == from_toml.spec["traffic"]
    a, b = run(from_toml, progress=False), run(from_api, progress=False)
    assert a.flows.equals(b.flows)
    # Flow 1 finds the one WQE still with flow 0 (reposted 30 us after it lands) and is
    # refused until then: the count the engine's closed-form test derives, 2 at these settings.
    assert a.counters["rnr_naks"] == 2 and a.counters["rnr_retry_exceeded"] == 0
    assert a.rnr.to_dicts() == [{"flow": 1, "rnr_naks": 2}]
    # Each refusal costs its NAK's way back, the 10 us timer and the first packet again.
    fct = dict(zip(a.flows["flow"], a.flows["fct_ns"]))
    assert fct[1] - fct[0] > 2 * 10_000


def test_writes_draw_on_no_queue_and_runs_without_rnic_have_an_empty_rnr_frame():
    write = run(built().flows([{"src": 0, "dst": 1, "size": 10000, "start": "6us"}]), progress=False)
    assert write.counters["rnr_naks"] == 2, "the WRITE (default verb) added is never refused"
    plain = run(Scenario.star(2).flow(0, 1, 10000), progress=False)
    assert plain.counters["rnr_naks"] == 0 and plain.rnr.height == 0
    assert plain.rnr.columns == ["flow", "rnr_naks"]


@pytest.mark.parametrize("settings, field", [
    ({"recv_queue_depth": 0}, "rnic.recv_queue_depth"),
    ({"recv_queue_depth": 1, "min_rnr_timer": 40}, "rnic.min_rnr_timer"),
    ({"rnr_retry": -1}, "rnic.rnr_retry"),
])
def test_bad_settings_name_their_field(settings, field):
    sc = Scenario.star(2).flow(0, 1, 1000, verb="send").with_rnic(**settings)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        run(sc, progress=False)


def test_an_unknown_verb_names_the_traffic_entry():
    with pytest.raises(ValueError, match=r"traffic\[0\]\.verb"):
        run(Scenario.star(2).flow(0, 1, 1000, verb="read"), progress=False)


def test_the_incast_round_is_refused_only_when_a_repost_outlasts_the_gap_to_the_next_message():
    # docs/blitz.md's `blitz_causes rnr`: one message per connection per round, one WQE. A
    # sender's round-2 message finds its WQE only if the round-1 message's repost, at most its
    # FCT plus D after its start, came before the round-2 start: D below every sender's slack
    # (gap between its starts less its round-1 FCT) refuses nothing; D above every slack refuses
    # every round-2 message. Slacks from the WRITE baseline's own flows (margins of 10 us for
    # the ACK's way back and the first packet's way there).
    def incast(d: str | None):
        changes = {} if d is None else {"traffic[1].verb": "send",
                                         "rnic": {"recv_queue_depth": 1, "recv_repost_delay": d}}
        sc, _ = d16_scenario("ib", {}, "none", changes, rounds=2)
        res = run(Scenario(sc), progress=False)
        return res, res.flows.filter(pl.col("dport") == INCAST_DPORT).sort("src", "start_ns")

    _, base = incast(None)
    by_src = base.group_by("src", maintain_order=True).agg(pl.col("start_ns"), pl.col("fct_ns"), pl.col("flow"))
    slack_us = [(s[1] - s[0] - f[0]) / 1e3 for s, f in zip(by_src["start_ns"], by_src["fct_ns"])]
    round2 = sorted(fl[1] for fl in by_src["flow"])
    lo, hi = min(slack_us) - 10, max(slack_us) + 10
    res, flows = incast(f"{lo:.0f}us")
    assert res.counters["rnr_naks"] == 0 and flows.equals(base)
    res, _ = incast(f"{hi:.0f}us")
    assert sorted(res.rnr["flow"]) == round2 and res.counters["rnr_retry_exceeded"] == 0


def test_a_shared_receive_queue_is_drawn_on_by_every_connection():
    # Two senders, one WQE: per connection each has its own and nothing is refused; one SRQ
    # of one WQE at host 1 refuses the second sender while the first message holds it.
    flows = [{"src": 0, "dst": 1, "size": 10000}, {"src": 2, "dst": 1, "size": 10000, "start": "3us"}]
    base = Scenario.star(3, rate="100Gbps").with_fabric(cc="none", mtu=1000)
    own = run(base.with_rnic(recv_queue_depth=1, recv_repost_delay="30us", min_rnr_timer=1)
              .flows(flows, verb="send"), progress=False)
    shared = run(base.with_rnic(srq_depth=1, recv_repost_delay="30us", min_rnr_timer=1)
                 .flows(flows, verb="send"), progress=False)
    assert own.counters["rnr_naks"] == 0
    assert shared.counters["rnr_naks"] == 2 and shared.rnr.to_dicts() == [{"flow": 1, "rnr_naks": 2}]
    with pytest.raises(Exception, match="rnic.srq_depth"):
        run(base.with_rnic(recv_queue_depth=1, srq_depth=1).flows(flows, verb="send"), progress=False)


def test_the_aggregators_processing_refuses_the_next_round_only_past_its_bound():
    # docs/blitz.md's `blitz_causes processing`: one WQE per connection, the aggregator
    # handling one completion at a time, T each (`recv_processing`). Round 1's completions,
    # taken from the WRITE baseline's own flows (start + FCT, in order of end), are handled at
    # h = max(end, previous h) + T; a sender's round-2 message is refused iff its WQE, back at
    # its h, is not back by the round-2 start. T* is the least T that refuses one: 5 % below
    # it nothing moves (the flows are the baseline's), 5 % above it the round meets RNR NAKs.
    def incast(t_us: float | None):
        changes = {} if t_us is None else {"traffic[1].verb": "send",
                                           "rnic": {"recv_queue_depth": 1, "recv_processing": f"{t_us:.3f}us"}}
        sc, _ = d16_scenario("ib", {}, "none", changes, rounds=2)
        res = run(Scenario(sc), progress=False)
        return res, res.flows.filter(pl.col("dport") == INCAST_DPORT).sort("src", "start_ns")

    _, base = incast(None)
    by_src = base.group_by("src", maintain_order=True).agg(pl.col("start_ns"), pl.col("fct_ns"))
    ends = sorted(((s[0] + f[0]) / 1e3, s[1] / 1e3) for s, f in zip(by_src["start_ns"], by_src["fct_ns"]))

    def refuses(t_us: float) -> bool:
        handled = 0.0
        for end, next_start in ends:
            handled = max(end, handled) + t_us
            if handled > next_start:
                return True
        return False

    lo, hi = 0.0, 10_000.0
    while hi - lo > 0.1:
        lo, hi = ((lo + hi) / 2, hi) if not refuses((lo + hi) / 2) else (lo, (lo + hi) / 2)
    assert 400 < hi < 700, f"T* = {hi:.1f} us: about (period - round) / 16"
    res, flows = incast(0.95 * hi)
    assert res.counters["rnr_naks"] == 0 and flows.equals(base)
    res, _ = incast(1.05 * hi)
    assert res.counters["rnr_naks"] > 0


def test_max_send_wr_bounds_what_a_multipath_qp_holds():
    """`with_rnic(max_send_wr=...)` writes `[rnic] max_send_wr`; a QP allowed 8 chunks in flight
    then holds at most that many WQEs between post and acknowledgement, and every byte still
    arrives (docs/model/rnic.md, "Send queues of applications' QPs")."""
    def most_open(depth):
        s = (Scenario.star(2, rate="100Gbps").with_fabric(cc="none")
             .multipath([{"src": 0, "dst": 1, "size": 400_000}], qps=2, chunk_size=4096, outstanding=8))
        if depth is not None:
            s = s.with_rnic(max_send_wr=depth)
            assert s.spec["rnic"] == {"max_send_wr": depth}
        r = run(s, progress=False)
        assert r.messages["fct_ns"].is_not_nan().all() and r.chunks["size"].sum() == 400_000
        c = r.chunks
        return max(c.filter((pl.col("qp") == row["qp"]) & (pl.col("post_ns") <= row["post_ns"])
                            & (pl.col("done_ns") > row["post_ns"])).height for row in c.iter_rows(named=True))

    assert most_open(None) == 8
    assert most_open(3) == 3


def test_a_send_queue_of_no_wqes_is_refused_by_name():
    s = Scenario.star(2).with_rnic(max_send_wr=0).flows([{"src": 0, "dst": 1, "size": 1000}])
    with pytest.raises(Exception, match=r"rnic\.max_send_wr"):
        run(s, progress=False)


def test_a_send_that_exhausts_rnr_retry_is_failed_not_unreachable(tmp_path, capsys):
    # rnr_retry = 0: flow 1's first RNR NAK fails its WR. Its status says so (not the link
    # failures' "unreachable"), the summary has a line for it and `rdmalab run` exits 6.
    from rdmalab.cli import main

    path = tmp_path / "fail.toml"
    path.write_text(TOML.replace("rnr_retry = 7", "rnr_retry = 0"))
    res = run(Scenario.from_toml(path), progress=False)
    assert dict(zip(res.flows["flow"], res.flows["status"])) == {0: "completed", 1: "rnr_retry_exceeded"}
    failed = res.flows.filter(pl.col("status") == "rnr_retry_exceeded").row(0, named=True)
    assert failed["start_ns"] < failed["gave_up_ns"] <= res.simulated_ps / 1000, failed
    assert res.flows.filter(pl.col("status") == "completed")["gave_up_ns"].is_null().all()
    assert (res.counters["flows_failed"], res.counters["flows_unreachable"]) == (1, 0)
    assert "flows failed      1" in res.summary() and "unreachable" not in res.summary()
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 6
    out = capsys.readouterr().out
    assert "1 flow(s) failed" in out, out
