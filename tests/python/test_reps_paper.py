"""`rdmalab repro run reps-nscc-permutation --quick` (docs/reps-paper.md): the REPS paper's
permutation under NSCC, oblivious spraying against REPS, with its artifact's settings.

The sweep files are held to the artifact's htsim flags they convert (queue and ECN
thresholds in packets of 4,150 bytes, the trimmed size, ACK per packet, the entropy
values), the full and quick sizes differ in size only, and each run to what holds
whatever the spraying: both sprayings run the same permutation, every flow completes with
exactly its bytes, and none ends before its payload at line rate plus its path's round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rdmalab.cli import main
from rdmalab.experiments.repro import get
from rdmalab.experiments.repro.reps_paper import ARTIFACT, FLOW_COLUMNS, flow_bounds_ns, rows
from rdmalab.experiments.store import Store
from rdmalab.experiments.sweep import Sweep


def _runs(quick: bool):
    return Sweep.from_file(get("reps-nscc-permutation").sweep_path(quick)).expand()


def test_the_sweeps_carry_the_artifacts_settings_converted():
    a = ARTIFACT
    for quick in (False, True):
        runs = _runs(quick)
        assert sorted(r.scenario["fabric"]["path_selection"] for r in runs) == ["ev_spray", "reps"]
        for r in runs:
            fab = r.scenario["fabric"]
            # A queue of `-q` packets that trims what would exceed it: the threshold is its bytes.
            assert fab["trimming"]["threshold_kb"] == a["queue_packets"] * a["packet_bytes"] / 1000
            assert fab["trimming"]["header_bytes"] == a["trim_bytes"]
            # `-ecn low high` in packets, a probability rising to 1 at the high one.
            assert (fab["ecn_kmin"], fab["ecn_kmax"]) == tuple(n * a["packet_bytes"] for n in a["ecn_packets"])
            assert fab["ecn_pmax"] == 1.0
            # The receiver ACKs once its unacknowledged bytes pass the threshold: every this many packets.
            assert fab["uet"]["ack_every"] == math.ceil(a["sack_threshold_bytes"] / a["packet_bytes"])
            assert fab["uet"]["entropies"] == a["paths"] and fab["uet"]["reps_buffer"] == a["reps_buffer"]
            # A payload and the data header fill the artifact's packet (within one header).
            assert 0 <= a["packet_bytes"] - fab["mtu"] < 2 * 48
            assert fab["cc"] == "nscc" and fab["lossless"] is False


def test_the_quick_size_differs_from_the_full_in_size_only():
    full, quick = _runs(False), _runs(True)
    for f, q in zip(full, quick):
        assert f.scenario["fabric"] == q.scenario["fabric"] and f.scenario["seed"] == q.scenario["seed"]
        ft, qt = dict(f.scenario["topology"]), dict(q.scenario["topology"])
        for k in ("leaves", "hosts_per_leaf", "spines"):
            ft.pop(k), qt.pop(k)
        assert ft == qt
        assert [{**t, "size": 0} for t in f.scenario["traffic"]] == [{**t, "size": 0} for t in q.scenario["traffic"]]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("reps") / "q"
    assert main(["repro", "run", "reps-nscc-permutation", "--quick", "--out", str(out), "--quiet",
                 "--workers", "1"]) == 0
    store = Store(out)
    runs = store.runs()
    assert runs.height == 2 and (runs["status"] == "ok").all()
    return runs, store.table("flows", params=False, columns=FLOW_COLUMNS)


def test_both_sprayings_run_one_permutation_and_deliver_every_byte(quick):
    runs, flows = quick
    xs = rows(runs, flows)
    assert [x["selection"] for x in xs] == ["ev_spray", "reps"]
    pairs = []
    for x in xs:
        f = flows.filter(flows["run_id"] == x["run_id"]).sort("src")
        hosts = x["hosts"]
        # A permutation: every host sends one flow and receives one.
        assert sorted(f["src"].to_list()) == sorted(f["dst"].to_list()) == list(range(hosts))
        pairs.append(list(zip(f["src"].to_list(), f["dst"].to_list())))
        assert x["completed"] == x["flows"] == hosts
        assert x["delivered"] == x["offered"] == hosts * x["size"]
        # Every trimmed packet is NACKed once; the trimming threshold sits below the buffer.
        assert x["trims"] == x["nacks"] and x["drops"] == 0
    assert pairs[0] == pairs[1]


def test_no_flow_ends_before_its_idle_path_bound(quick):
    runs, flows = quick
    for r in runs.iter_rows(named=True):
        sc = json.loads(r["scenario"])
        f = flows.filter(flows["run_id"] == r["run_id"])
        bound = flow_bounds_ns(sc, f)
        fct = f["fct_ns"].to_numpy()
        assert bound.size == f.height > 0
        assert np.all(fct >= bound), (sc["fabric"]["path_selection"], float((fct / bound).min()))


def test_the_cause_scripts_last_rows_run_uec_vs_roces_settings():
    """`reps_causes`' row "all of uec-vs-roce's settings" moves every setting in which
    uec-vs-roce's 1:1 permutation (UET, REPS, trimming) differs, as its generator writes it."""
    import copy

    from rdmalab.experiments.causes import reps_causes as rc
    from rdmalab.experiments.sweep import set_path

    spec = rc._specs()["reps"]
    moved = copy.deepcopy(spec.scenario)
    for path, value in rc.ALL.items():
        set_path(moved, path, value)
    uec = rc.UEC_TABLES
    # Only the RTO is set, so UET's other defaults, which the row sets, are what it runs.
    assert set(uec["fabric"]["uet"]) == {"rto"}
    assert moved["fabric"]["uet"]["rto"] == uec["fabric"]["uet"]["rto"] == "auto"
    for k, v in uec["fabric"].items():
        if k in ("link_sample_interval", "path_selection", "uet"):
            continue
        if k == "trimming":
            assert moved["fabric"]["trimming"]["threshold_kb"] == v["threshold_kb"]
        else:
            assert moved["fabric"][k] == v, k
    for k in ("host_rate", "fabric_rate", "delay"):
        assert moved["topology"][k] == uec["topology"][k], k
    assert moved["fabric"]["uet"]["ack_every"] == rc.UET_DEFAULTS["ack_every"]
    assert moved["fabric"]["uet"]["entropies"] == rc.UET_DEFAULTS["entropies"]
