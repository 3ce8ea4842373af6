"""`rdmalab repro run uec-vs-roce --quick` (docs/uec-vs-roce.md): RoCE, RoCE + IRN + spraying,
InfiniBand and UET (NSCC; oblivious and REPS spraying; trimming on and off) on incasts,
permutations, a degraded and a failed link, a ring AllReduce per rail and web-search
traffic. Each run is held to what holds whatever the transport: an incast cannot end before
the receiver's link has carried every sender's bytes, every byte offered is delivered once,
a trimmed packet is NACKed once, and a lossless fabric drops nothing unless a link fails."""

from __future__ import annotations

import json

import pytest

from rdmalab.cli import main
from rdmalab.experiments.repro import uec_vs_roce_sweep as gen
from rdmalab.experiments.repro.uec_vs_roce import FLOW_COLUMNS, delivered_rate, rows
from rdmalab.experiments.store import Store


def test_the_shipped_sweeps_are_what_the_generator_writes():
    for quick in (False, True):
        assert (gen.HERE / gen.SIZES[quick]["file"]).read_text() == gen.text(quick), \
            "run python -m rdmalab.experiments.repro.uec_vs_roce_sweep"


def test_every_run_of_both_sizes_has_its_own_label():
    every = [(quick, v.name, w.name) for quick in (False, True) for v, w in gen.runs(quick)]
    assert len(gen.labels()) == len(every) == len(set(every))
    # Receiver credit covers collectives too: the AllReduce runs every variant, RCCC's included.
    wanted = [v.name for v in gen.VARIANTS]
    assert [v.name for v, w in gen.runs(True) if w.name == "allreduce-rail"] == wanted
    assert any("rccc" in v.fabric["cc"] for v in gen.VARIANTS)
    uet = [(v, w) for v, w in gen.runs(True) if w.name == "allreduce-rail" and v.transport == "uet"]
    assert uet and all(c["transport"] == "uet" for v, w in uet for c in gen.scenario_tables(v, w)["collective"])


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("uec") / "q"
    assert main(["repro", "run", "uec-vs-roce", "--quick", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    store = Store(out)
    runs = store.runs()
    assert runs.height == len(gen.runs(True)) and (runs["status"] == "ok").all()
    quick_rows = rows(runs, store.table("flows", params=False, columns=FLOW_COLUMNS), store)
    for x in quick_rows:
        x["store"] = store
    return quick_rows


def test_every_run_is_labelled_and_ends_before_its_stop_time(quick):
    assert len(quick) == len(gen.runs(True))
    # docs/uec-vs-roce.md, "Results of the quick variant": every run ends, InfiniBand's after
    # the link failure and the incasts under NSCC + RCCC included.
    short = {(x["workload"], x["variant"]) for x in quick if x["stop"] != "finished"}
    assert not short


def test_every_byte_offered_is_delivered_once(quick):
    for x in quick:
        if x["stop"] != "finished":
            continue
        assert x["completed"] == x["flows"] > 0, (x["workload"], x["variant"])
        assert x["delivered"] == x["offered"], (x["workload"], x["variant"], x["delivered"], x["offered"])


def test_no_incast_ends_before_its_receiver_link_carried_every_byte(quick):
    incasts = [x for x in quick if x["workload"].startswith("incast-")]
    assert len(incasts) == 3 * len(gen.VARIANTS)
    for x in incasts:
        n = int(x["workload"].split("-")[1])
        bound_us = n * gen.SIZES[True]["incast_size"] * 8 / (gen.HOST_GBPS * 1e9) * 1e6
        assert x["bound_us"] == pytest.approx(bound_us)
        if x["stop"] == "finished":  # a run cut short has no span (its last flow did not end)
            assert x["span_us"] >= bound_us, (x["workload"], x["variant"])


def test_trims_come_only_with_trimming_and_each_is_nacked_once(quick):
    trimming = {v.name for v in gen.VARIANTS if "trimming" in v.fabric}
    assert any(x["trims"] for x in quick if x["variant"] in trimming)
    for x in quick:
        if x["variant"] not in trimming:
            assert x["trims"] == 0, (x["workload"], x["variant"])
        elif x["workload"] != "perm-failed":  # a header on the failed link is lost with it
            assert x["nacks"] == x["trims"], (x["workload"], x["variant"])


def test_lossless_fabrics_drop_only_at_the_failed_link(quick):
    for x in quick:
        if x["variant"] in ("roce", "ib"):
            assert x["drops"] == x["link_down_losses"], (x["workload"], x["variant"])
            assert x["drops"] == 0 or x["workload"] == "perm-failed"


def test_no_receiver_link_carries_more_than_its_rate_in_any_interval(quick):
    """The delivered-rate figure's samples: in each 5 us interval the receiver's link carries
    at most 100 Gb/s, give or take the one packet that straddles the interval's edge."""
    interval_us = float(gen.SIZES[True]["sample"].removesuffix("us"))
    edge = (gen.MTU + 100) * 8 / (interval_us * 1e-6) / 1e9  # one packet, headers generous, in Gb/s
    for x in quick:
        if x["workload"].startswith("incast-") and x["stop"] == "finished":
            t, gbps = delivered_rate(x["store"], x["run_id"], x["receivers"])
            assert t.size and x["receivers"] == [0]
            assert gbps.max() <= gen.HOST_GBPS + edge, (x["workload"], x["variant"], gbps.max())
            # ... and with 8 or more senders at line rate, some interval runs it nearly full.
            assert gbps.max() >= 0.9 * gen.HOST_GBPS


def test_the_parallel_runner_writes_the_rows_the_report_prints(quick, tmp_path):
    """`uec_vs_roce_runs` (one process a run, a file a run) gives, for the same runs, the
    numbers the repro's report computes from its store: an incast with trims, a permutation
    with a failed link (drops, a run cut short or not) and a collective (AllReduce times)."""
    from rdmalab.experiments.repro import uec_vs_roce_runs as ur

    picked = ("incast-16/uet-reps-trim", "perm-failed/uet-ops", "perm-failed/ib", "allreduce-rail/roce")
    only = "^(" + "|".join(picked) + ")$"
    assert [ur.label(v, w) for v, w in ur.chosen(True, only)] == [picked[2], picked[1], picked[3], picked[0]]
    assert ur.main(["--quick", "--only", only, "--jobs", "2", "--out", str(tmp_path)]) == 0
    report = {f"{x['workload']}/{x['variant']}": x for x in quick}
    for lab in picked:
        mine, theirs = json.loads((tmp_path / ur.file_name(lab)).read_text()), report[lab]
        assert mine["status"] == "ok" and mine["quick"] and mine["label"] == lab
        ends = (theirs["completed"], theirs["flows"], theirs["stop"])
        assert (mine["flows_done"], mine["flows"], mine["end"]) == ends, lab
        for key in ("p50_us", "p99_us", "span_us"):
            assert (mine[key] is None) == (theirs[key] != theirs[key]), (lab, key)
            if mine[key] is not None:
                assert mine[key] == pytest.approx(theirs[key], rel=1e-12), (lab, key)
        for k in ("drops", "trims", "retx_packets", "nacks", "timeouts", "pauses", "link_down_losses"):
            assert mine[k] == theirs[k], (lab, k)
        ratio = theirs["delivered"] / theirs["offered"] if theirs["offered"] else None
        assert mine["delivered_over_offered"] == ratio, lab
        assert mine["cpu_s"] >= 0 and mine["wall_s"] >= 0 and mine["max_rss_mb"] > 0
    assert any(json.loads((tmp_path / ur.file_name(lab)).read_text())["drops"] for lab in picked)


def test_a_run_past_its_timeout_says_so_and_only_full_size_rows_that_ran_are_merged(tmp_path, monkeypatch):
    """A run killed at `--timeout` leaves a file whose status says why; `bench/uec_page.py
    --merge` takes only full-size files whose status is ok, and renders the commit beside it."""
    import importlib.util
    from pathlib import Path

    from rdmalab.experiments.repro import uec_vs_roce_runs as ur

    out = tmp_path / "runs"
    assert ur.main(["--quick", "--only", "^incast-8/roce$", "--jobs", "1", "--timeout", "0.01", "--out", str(out)]) == 1
    killed = json.loads((out / "incast-8__roce.json").read_text())
    assert killed["status"].startswith("timeout") and "p99_us" not in killed
    # A full-size row as the runner writes it (one of the recorded file's, with its label).
    bench = Path(__file__).resolve().parents[2] / "bench"
    monkeypatch.syspath_prepend(str(bench))  # the page scripts import their shared end from there
    spec = importlib.util.spec_from_file_location("uec_page", bench / "uec_page.py")
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    recorded = json.loads(page.RECORDED.read_text())
    row = {**recorded["incast-16/roce"], "commit": "abcdef0", "label": "incast-16/roce", "status": "ok",
           "quick": False, "workload": "incast-16", "variant": "roce"}
    (out / "incast-16__roce.json").write_text(json.dumps(row))
    merged = page.merge([out], {})
    assert list(merged) == ["incast-16/roce"] and merged["incast-16/roce"]["commit"] == "abcdef0"
    assert not {"label", "status", "quick"} & set(merged["incast-16/roce"])
    runs = [(ur.label(v, w), w.name, v.name, ur.digest(v, w)) for v, w in ur.sweep.runs(False)]
    table = page.render(runs, merged)
    assert "| incast-16 | roce | 16/16 |" in table and "`abcdef0`" in table
    assert table.count(" not run |") == len(runs) - 1
