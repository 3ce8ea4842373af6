"""The DRUM paper's host model from Python (docs/drum-fabric.md): the `[host]` and `[[app]]` names,
a closed form for a lone application, the results tables, errors, and the repro entries."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rdmalab
from rdmalab import Scenario, _core
from rdmalab.experiments import repro
from rdmalab.cli import main
from rdmalab.experiments.repro.drum_fabric import drum_testbed
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.experiments.sweep import Sweep

TESTBED_TOML = drum_testbed("500us") + """[host]
mechanism = "MECH"
wqe_cost = "680ns"
poll_cost = "100ns"
cores = 24
share_ratio = 5
lock_cost = "200ns"
[drum]
period = "50us"
iterations = 5
alpha = 0.5
beta = 1.0
k = 20
q_fraction = 0.9
control = "local"
control_delay = "1us"
[[app]]
host = 0
dst = 6
name = "fg"
size = 1024
wr_num = 1
[[app]]
host = 0
dst = 6
count = 6
name = "bg"
size = [32, 65536]
wr_num = [20, 100]
think = "5us"
start = "1us"
"""


def python_testbed(mech: str) -> Scenario:
    """The same scenario as TESTBED_TOML, built with the Python API."""
    return (Scenario.star(7, rate="40Gbps", delay="1us").with_fabric(mtu=1024).with_stop_time("500us")
            .with_host(mechanism=mech, wqe_cost="680ns", poll_cost="100ns", cores=24, share_ratio=5,
                       lock_cost="200ns")
            .with_drum(period="50us", iterations=5, alpha=0.5, beta=1.0, k=20, q_fraction=0.9, control="local",
                       control_delay="1us")
            .app(0, 6, size=1024, wr_num=1, name="fg")
            .app(0, 6, size=[32, 65536], wr_num=[20, 100], count=6, name="bg", think="5us", start="1us"))


@pytest.mark.parametrize("control", ["local", "out_of_band", "in_band"])
def test_every_control_runs_from_python(control):
    res = rdmalab.run(python_testbed("drum").with_drum(control=control), progress=False)
    assert res.drum.height > 0 and res.wqes.height > 100
    # Local and out-of-band allocations start at period boundaries; in-band ones when the
    # last answer crossed the fabric.
    offsets = (res.drum["t_ns"].to_numpy() % 50_000)
    assert (offsets == 0).all() if control == "local" else (offsets > 0).any()


@pytest.mark.parametrize("mech", ["raw", "share", "drum"])
def test_python_api_and_toml_give_the_same_run(tmp_path, mech):
    path = tmp_path / "s.toml"
    path.write_text(TESTBED_TOML.replace("MECH", mech))
    a = rdmalab.run(Scenario.from_toml(path), progress=False)
    b = rdmalab.run(python_testbed(mech), progress=False)
    assert a.wqes.height > 100 and a.wqes.equals(b.wqes)
    assert list(a.wqes.columns) == ["app", "name", "host", "batch", "size", "posted_ns", "ct_ns", "state"]
    assert list(a.apps.columns) == ["app", "name", "host", "dst", "wqes", "bytes", "wqe_per_us", "gbps",
                                    "p50_ct_ns", "p80_ct_ns", "p99_ct_ns", "first_post_ns", "done_ns"]
    assert a.apps["name"].to_list() == ["fg"] + [f"bg#{k}" for k in range(6)]
    done = a.wqes.filter(~a.wqes["ct_ns"].is_nan())
    assert (done["ct_ns"] > 0).all()
    assert a.apps["wqes"].sum() == done.height
    if mech == "drum":
        assert list(a.drum.columns) == ["t_ns", "app", "x", "z", "a", "active", "rate"]
        # One row per period (0, 50, ..., 500 us) and application; x̂ within Q = 0.9/0.68 per µs.
        assert a.drum.height == 11 * 7
        sums = a.drum.group_by("t_ns").agg(pl.col("x").sum())["x"].to_numpy()
        assert (sums <= 0.9 / 0.68 * (1 + 1e-9)).all()
    else:
        assert a.drum.height == 0


def test_a_lone_raw_application_matches_the_closed_form():
    # One 32 B WQE per batch, nothing else on the host: WQE engine (680 ns) + data over two
    # store-and-forward hops of 1 us + ACK back, then the poll that ends next (100 ns grid
    # from the post). 32 B + 48 B header = 80 B = 16 ns at 40 Gb/s; ACK 60 B = 12 ns.
    sc = (Scenario.star(7, rate="40Gbps", delay="1us").with_stop_time("200us")
          .with_host(mechanism="raw", wqe_cost="680ns", poll_cost="100ns")
          .app(0, 6, size=32, wr_num=1))
    res = rdmalab.run(sc, progress=False)
    cqe = 680 + 2 * (16 + 1000) + 2 * (12 + 1000)
    seen = math.ceil(cqe / 100) * 100
    ct = res.wqes["ct_ns"].drop_nans().to_numpy()
    assert len(ct) > 30 and np.all(ct == seen), (cqe, seen, np.unique(ct))


def test_polling_threads_share_the_cores():
    # 8 busy-polling applications on 2 cores: a poll takes 4x poll_cost of wall time, so
    # completions are seen later than with 8 cores.
    def p50(cores: int) -> float:
        sc = (Scenario.star(7, rate="40Gbps").with_stop_time("300us")
              .with_host(mechanism="raw", poll_cost="2us", cores=cores)
              .app(0, 6, size=32, wr_num=1, count=8, think="3us"))
        return float(rdmalab.run(sc, progress=False).apps["p50_ct_ns"].mean())
    assert p50(2) > p50(8) + 2000


@pytest.mark.parametrize("field,settings", [
    ("app[0].wr_num", {"wr_num": 0}),
    ("app[0].size", {"size": [100, 10]}),
    ("host.share_ratio", {"share_ratio": 0}),
    ("host.mechanism", {"mechanism": "fifo"}),
    ("drum.period", {"period": "0ns"}),
    ("drum.control", {"control": "telepathy"}),
    ("drum.control_delay", {"control_delay": "0us"}),
    ("drum.solve", {"solve": "guess"}),
    ("host.lock_transfer", {"lock_transfer": "fast"}),
    ("app[0].total_bytes", {"total_bytes": None}),
])
def test_bad_input_names_the_field(field, settings):
    app = {"size": 1024, "wr_num": 4, "total_bytes": 10_000}
    host: dict = {}
    drum: dict = {}
    for k, v in settings.items():
        target = app if k in app else host if k in ("share_ratio", "mechanism", "lock_transfer") else drum
        target[k] = v
    app = {k: v for k, v in app.items() if v is not None}
    sc = Scenario.star(7).with_host(**host).with_drum(**drum).app(0, 6, **app)
    with pytest.raises(ValueError, match=re.escape(f"field `{field}`")):
        rdmalab.run(sc, progress=False)


def test_drum_fig2a_quick_reproduces_the_calibrated_slope(tmp_path, capsys):
    assert main(["repro", "run", "drum-fig2a", "--quick", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    out = capsys.readouterr().out
    exp = repro.get("drum-fig2a")
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    wqes = Store(tmp_path / "o").table("wqes", runs)
    # Each row runs on the testbed's IB QDR and on 40 Gb/s RoCE; the paper's numbers stand
    # beside the IB rows only.
    assert rows[("IB QDR RAW", "fg p80 us, batch 20")].theirs == 19.8
    assert math.isnan(rows[("RoCE 40G RAW", "fg p80 us, batch 20")].theirs)
    for ll, link in (("IB QDR ", "infiniband"), ("RoCE 40G ", "roce")):
        slope = rows[(ll + "RAW", "slope us/WQE")].ours
        # The same slope from the WQE records instead of the apps table's p80: under RAW every
        # foreground WQE after the first waits the background's whole batch in the FIFO engine,
        # so the median completion moves with the batch as the p80 does.
        fg = wqes.filter((pl.col("name") == "fg") & (pl.col("host.mechanism") == "raw")
                         & (pl.col("fabric.link_layer") == link))
        med = {int(b): float(np.median(d["ct_ns"].drop_nans().to_numpy())) / 1e3
               for (b,), d in fg.group_by("app[1].wr_num")}
        assert (med[100] - med[20]) / 80 == pytest.approx(slope, rel=0.01), (ll, med, slope)
        assert f"{slope:10.3f}" in out  # and the printed table carries it
        # Closed form: each background WQE ahead in the FIFO WQE engine delays the foreground
        # by one wqe_cost, so the p80 grows by wqe_cost per WQE of the background's batch, on
        # either link (the engine, not the wire, binds).
        wqe_cost_us = 0.68
        assert slope == pytest.approx(wqe_cost_us, rel=0.03), ll
        # Fig. 6 at (P)'s exact optimum: the foreground waits for its release slot, 1/x̂_fg, and
        # x ∝ a^(-2/3) gives the background a share that grows with its batch, but by far less
        # than RAW's FIFO engine, where the wait is the whole batch (docs/drum-fabric.md §5).
        drum = rows[(ll + "DRUM (Fig. 6)", "p80(100)/p80(20)")].ours
        raw = rows[(ll + "RAW", "p80(100)/p80(20)")].ours
        assert 1.0 < drum < 0.6 * raw, (ll, drum, raw)
    assert (tmp_path / "o" / "figures" / "drum_fig2a.png").is_file()


@pytest.mark.parametrize("name", ["drum-fig2b", "drum-fig2c", "drum-tc1", "drum-tc1-inband"])
def test_drum_quick_entries_run_and_compare(tmp_path, capsys, name):
    assert main(["repro", "run", name, "--quick", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    exp = repro.get(name)
    runs, flows = load_sweep(tmp_path / "o")
    rows = exp.compare(runs, flows, Store(tmp_path / "o"))
    assert rows and all(math.isfinite(r.ours) for r in rows)
    got = {(r.group, r.metric): r.ours for r in rows}
    if name == "drum-fig2b":
        # While polling binds (a poll period far longer than the batch's own round trip), the
        # batch posted at t is seen by the poll ending at t + P and re-posted at once: one batch
        # of wr_num x size bytes per poll period P, so a run of T moves wr_num x size x floor(T/P)
        # (the closed form, from the sweep file's size and stop time).
        base = Sweep.from_file(exp.sweep_path(quick=True)).base
        size, t_us = base["app"][0]["size"], _core.parse_time_ps(base["stop_time"]) / 1e6
        for link in ("infiniband", "roce"):  # polling, not the link, binds: the same on both
            pts = repro.drum_fabric.fig2b_points(Store(tmp_path / "o"), runs, link)
            slow = [(wr, rate, gbps) for wr, line in pts.items() for rate, gbps in line.items() if 1 / rate >= 100]
            assert len(slow) == 6  # P of 100 and 200 us (the rows the comparison uses), wr_num 1, 5, 10
            for wr, rate, gbps in slow:
                closed = wr * size * 8 * math.floor(t_us * rate + 1e-9) / (t_us * 1e3)
                assert gbps == pytest.approx(closed, rel=1e-6), (link, wr, 1 / rate, gbps, closed)
            # At 1 poll/us the batch's own round trip binds, and it is longer on QDR's 32 Gb/s.
            if link == "infiniband":
                ib = pts[10][1.0]
        assert ib < pts[10][1.0], (ib, pts[10][1.0])
    if name == "drum-tc1":
        for ll in ("IB QDR ", "RoCE 40G "):
            # Past the 20-entry serial cache every packet is a 1 us fetch and the NIC's round
            # robin gives the foreground one packet per pass over the cc QPs: its closed loop
            # completes once per pass, cc x 1 us (± one 100 ns poll).
            for cc in (50, 100):
                assert got[(ll + "RAW", f"p80 us, cc {cc}")] == pytest.approx(cc * 1.0, abs=0.1), (ll, cc)
            # DRUM keeps the foreground on a dedicated QP inside the cache and, below its share,
            # releases it at the next slot: its p80 does not move with cc.
            drum = [got[(ll + "DRUM", f"p80 us, cc {cc}")] for cc in (20, 50, 100)]
            assert max(drum) / min(drum) < 1.01, (ll, drum)
            assert drum[-1] < got[(ll + "RAW", "p80 us, cc 50")] / 4, (ll, drum)
    if name == "drum-tc1-inband":
        # Under either control the foreground stays below its share: flat in cc.
        for ll in ("IB QDR ", "RoCE 40G "):
            for c in ("local", "in_band"):
                p = [got[(f"{ll}DRUM {c}", f"p80 us, cc {cc}")] for cc in (20, 50, 100)]
                assert max(p) / min(p) < 1.01, (ll, c, p)
    if name == "drum-fig2c":
        # Measured levels against closed forms: within the cache, the line's goodput with 1 KB
        # payloads and its headers (IB QDR: 32 Gb/s of data, 26 B; RoCE: 40 Gb/s, 48 B); past it,
        # every packet a serial 1 us context fetch (MTU / penalty) on either link; UD one context
        # per NIC, so its level is the line's at any n.
        thrash = 1024 * 8 / 1e3
        for ll, line in (("IB QDR ", 32.0 * 1024 / (1024 + 26)), ("RoCE 40G ", 40.0 * 1024 / (1024 + 48))):
            for tr in ("RC", "UC"):
                assert got[(ll + tr, "Gb/s at the knee")] == pytest.approx(line, rel=0.05), ll
                assert got[(ll + tr, "Gb/s past the knee")] == pytest.approx(thrash, rel=0.05), ll
            assert got[(ll + "UD", "Gb/s at max n")] == pytest.approx(line, rel=0.05), ll
    assert any(Path(tmp_path / "o" / "figures").glob("drum_*.png"))


def test_the_documented_scenario_runs(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "docs" / "drum-fabric.md").read_text()
    block = text.split("```toml", 1)[1].split("```", 1)[0]
    path = tmp_path / "doc.toml"
    path.write_text(block)
    res = rdmalab.run(Scenario.from_toml(path), progress=False)
    assert res.stop_reason in ("stop_time", "finished") and res.apps.height == 10 and res.drum.height > 0


def test_drum_convergence_quick_runs_the_solver_at_the_paper_sizes(tmp_path, capsys):
    assert main(["repro", "run", "drum-convergence", "--quick", "--out", str(tmp_path / "o")]) == 0
    rows = {(c.group, c.metric): c.ours for c in repro.get("drum-convergence").solve(tmp_path / "p", True)}
    for n, m in ((100, 50), (1000, 500)):
        # ADMM reaches 99.5 % of the optimum within the paper's 20 iterations; 60 DD steps do not.
        assert rows[(f"n={n} m={m}", "ADMM its to 99.5 %")] <= 20
        assert rows[(f"n={n} m={m}", "DD loss after 60")] > 0.005
    assert (tmp_path / "o" / "figures" / "drum_convergence_100x50.png").is_file()


def test_transport_and_size_dist_are_reachable_from_the_builders():
    sc = (Scenario.star(3).with_fabric(mtu=1024)
          .flow(0, 1, 102400, transport="uc")
          .app(0, 2, size=[32, 1024], wr_num=1, size_dist="uniform", transport="ud", total_bytes=8192))
    text = sc.to_toml()
    assert 'transport = "uc"' in text and 'transport = "ud"' in text and 'size_dist = "uniform"' in text
    res = rdmalab.run(sc, progress=False)
    assert res.counters["messages_lost"] == 0 and res.stop_reason == "finished"
    with pytest.raises(ValueError, match=re.escape("field `app[0].size`")):
        rdmalab.run(Scenario.star(3).with_fabric(mtu=1024).app(0, 2, size=4096, wr_num=1, transport="ud",
                                                              total_bytes=8192), progress=False)


def test_share_starves_a_foreground_only_behind_its_co_sharers_megabyte_wqes():
    """TC1 under SHARE (docs/drum-fabric.md §6.6): the 32 B foreground grouped with four KV
    connections whose values reach 1 MB waits for their bytes in the shared send queue
    (milliseconds); sent to another host it gets a QP of its own and completes in
    microseconds. Fails if a shared QP stopped serving its WQEs in order, or if grouping
    ignored the destination."""
    from rdmalab.experiments.causes.drum_tc_causes import tc1_p80

    shared, alone = tc1_p80("share", 20, fg_dst=6), tc1_p80("share", 20, fg_dst=5)
    assert shared > 1000.0, shared
    assert alone < 20.0, alone
    # RAW does not group: the destination changes nothing for it.
    assert tc1_p80("raw", 20, fg_dst=5) == pytest.approx(tc1_p80("raw", 20, fg_dst=6), rel=0.1)


def test_tc3_on_the_testbeds_infiniband_moves_by_the_data_rate_alone():
    """drum-tc3 at N = 300 on IB QDR 4x against 40 Gb/s RoCE (docs/drum-fabric.md §6.8): DRUM's
    connections fit the QP-context cache and share the server's link, so their goodput scales
    with the data rate (32 against 40 Gb/s) and the payload's share of a 1 KB packet (1024 of
    1050 B on IB, of 1072 B on RoCE); SHARE's 60 QPs thrash the serial cache, one packet per
    1 us miss on either link, so theirs does not move."""
    from rdmalab.experiments.causes.drum_link_causes import tc3_gbps

    drum = {ll: tc3_gbps(ll, rate, "drum") for ll, rate in (("roce", "40Gbps"), ("infiniband", "QDR4x"))}
    share = {ll: tc3_gbps(ll, rate, "share") for ll, rate in (("roce", "40Gbps"), ("infiniband", "QDR4x"))}
    closed = (32 / 40) * (1024 + 48) / (1024 + 26)
    assert drum["infiniband"] / drum["roce"] == pytest.approx(closed, rel=0.01), drum
    assert share["infiniband"] == pytest.approx(share["roce"], rel=0.01), share


def test_a_one_wqe_stream_on_its_own_qp_waits_the_release_interval_of_the_optimum():
    """docs/drum-fabric.md §6.9, the `bulk` mix: four 32 B one-WQE streams beside four 1 KB
    `wr_num = 100` applications, all on dedicated QPs. The CQ penalty sets x ∝ a^(-2/3), so a
    stream (a = 1) holds 1 / (4 + 4 · 100^(2/3)) of Q = 0.9 / 680 ns; re-posting at once it is
    above its share and waits one release interval 1/x̂ per WQE, give or take the stride
    scheduler's granularity (one slot below, one slot per application above). Without a
    dedicated QP (the `two` mix, m > k) the top-k rule drops it to the shared QP in every
    period, and giving every application a QP (k = 200, no cache limit) removes the wait."""
    from rdmalab.experiments.causes.drum_stream_causes import stream_case

    share = 1 / (4 + 4 * 100 ** (2 / 3))
    slot = 0.68 / 0.9
    interval = slot / share
    bulk = stream_case("bulk")
    assert bulk["dedicated"] == 1.0 and bulk["share"] == pytest.approx(share, rel=0.01), bulk
    assert interval - slot <= bulk["p80"] <= interval + 8 * slot, (bulk, interval)
    shared, own = stream_case("two"), stream_case("two", k=200, cache=False)
    assert shared["dedicated"] == 0.0 and own["dedicated"] == 1.0, (shared, own)
    assert own["p80"] < shared["p80"] / 10, (own, shared)
