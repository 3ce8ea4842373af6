"""Multipath by data partition through Python: Scenario.multipath, the messages and chunks
tables, the CLI's and the store's outputs, field-naming errors, and the repro entries."""

import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rdmalab import Scenario, run
from rdmalab.experiments import repro
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.figures import plot_sweep
from rdmalab.experiments.store import Store, load_sweep, load_table
from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.sweep import Sweep
from rdmalab.results import CHUNK_COLUMNS, MESSAGE_COLUMNS

RDMALAB = Path(sys.executable).parent / "rdmalab"
MSG = 1 << 20


def clos():
    return Scenario.leaf_spine(2, 2, spines=4, host_rate="100Gbps", fabric_rate="25Gbps")


def test_multipath_tables_have_the_documented_columns():
    s = clos().multipath([{"src": 0, "dst": 2, "size": MSG}], qps=4, chunk_size=MSG // 8,
                         sport_policy="distinct_paths")
    r = run(s, progress=False)
    assert list(r.messages.columns) == list(MESSAGE_COLUMNS)
    assert list(r.chunks.columns) == list(CHUNK_COLUMNS)
    m = r.messages.row(0, named=True)
    assert (m["size"], m["qps"], m["chunks"], m["bytes_placed"]) == (MSG, 4, 8, MSG)
    assert m["recv_done_ns"] < m["fct_ns"]
    # The message is one row of flows, its chunks are not.
    assert r.flows.height == 1 and r.flows["fct_ns"][0] == pytest.approx(m["fct_ns"])
    assert r.chunks.height == 8 and r.chunks["path"].n_unique() == 4
    assert all(p.startswith("0-4-") and p.endswith("-5-2") for p in r.chunks["path"])
    assert sorted(r.chunks["offset"]) == [i * MSG // 8 for i in range(8)]


def test_run_writes_messages_and_chunks(tmp_path):
    scen = tmp_path / "mp.toml"
    scen.write_text(
        '[topology]\nkind = "full_mesh"\nswitches = 3\nhosts_per_switch = 2\nrate = "40Gbps"\n'
        '[[traffic]]\nkind = "multipath"\nqps = 2\nchunk_size = 65536\n'
        'messages = [{ src = 0, dst = 5, size = 1048576 }, { src = 0, dst = 5, size = 262144, start = "10us" }]\n'
        '[[traffic]]\nkind = "random_pairs"\ncount = 4\nsize = 100000\nwindow = "20us"\n'
    )
    out = subprocess.run([str(RDMALAB), "run", str(scen), "--out", str(tmp_path / "o"), "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    msgs = pl.read_parquet(tmp_path / "o" / "messages.parquet")
    chunks = pl.read_parquet(tmp_path / "o" / "chunks.parquet")
    assert msgs["message"].to_list() == [0, 1] and msgs["chunks"].to_list() == [16, 4]
    assert chunks.height == 20
    # Full mesh: one shortest path between two switches, whatever the port.
    assert chunks["path"].unique().to_list() == ["0-6-8-5"]
    assert len((tmp_path / "o" / "fct.txt").read_text().splitlines()) == 6


def test_bad_multipath_fields_are_named(tmp_path):
    scen = tmp_path / "bad.toml"
    scen.write_text('[topology]\nkind = "star"\nhosts = 2\n[[traffic]]\nkind = "multipath"\nqps = 2\n'
                    'sport_policy = "explicit"\nsports = [5, 5]\nmessages = [{ src = 0, dst = 1, size = 1000 }]\n')
    out = subprocess.run([str(RDMALAB), "run", str(scen), "--out", str(tmp_path / "o"), "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad.toml:8: field `traffic[0].sports`" in out.stderr and "twice" in out.stderr
    with pytest.raises(ValueError, match=r"traffic\[0\]\.chunk_size"):
        run(Scenario.star(2).multipath([{"src": 0, "dst": 1, "size": 1000}], chunk_size=1001), progress=False)


def test_a_small_repro_sweep_stores_tables_draws_and_compares(tmp_path):
    exp = repro.get("mp-partition-topo1")
    import tomllib

    spec = tomllib.loads(exp.sweep_path(quick=True).read_text())
    spec["base"]["traffic"][0]["messages"][0]["size"] = 262144
    spec["base"]["traffic"][1].update(count=20, size=262144, window="20us")
    spec["grid"] = {"traffic[0].qps": [1, 2], "traffic[0].chunk_size": [16384, 65536]}
    sweep = Sweep.from_dict(spec)
    run_sweep(sweep, tmp_path / "o", LocalExecutor(2), progress=False)
    msgs = load_table(tmp_path / "o", "messages")
    assert msgs.height == 4 and "traffic[0].qps" in msgs.columns
    assert load_table(tmp_path / "o", "chunks").height == 16 + 4 + 16 + 4
    assert set(plot_sweep(tmp_path / "o", exp.figures, by=exp.by)) == {"mp_qps", "mp_chunk"}
    runs, flows = load_sweep(tmp_path / "o")
    rows = {(c.group, c.metric): c for c in exp.compare(runs, flows, Store(tmp_path / "o"))}
    one = rows[("1 QP", "FCT ms")]
    # Ours are scaled by 40 (10 MiB over 256 KiB) to the paper's message.
    raw = msgs.filter(pl.col("traffic[0].qps") == 1)["fct_ns"].mean() / 1e6
    assert one.ours == pytest.approx(40 * raw)
    # The paper prints no throughput ratio: nothing stands in its column.
    share = rows[("2 QPs", "msg / bg throughput (one share per QP: q)")]
    assert share.ours > 0 and math.isnan(share.theirs)
    assert "Wang et al." in repro.comparison_table(exp, tmp_path / "o")


def _one_qp_fct(refill: str, chunk: int) -> float:
    s = Scenario.star(2).multipath([{"src": 0, "dst": 1, "size": 1 << 20}], qps=1, chunk_size=chunk, refill_on=refill)
    return float(run(s, progress=False).messages["fct_ns"][0])


def test_one_qp_fct_does_not_depend_on_the_chunk_size_when_refilled_on_sent():
    # The data-partition paper's flat 1-QP curve: a QP refilled as its chunk leaves never idles, so the FCT is
    # the bytes on the wire at line rate, which the chunk size changes only through headers
    # (24 B per chunk, 48 B per packet: 6.4 % extra at 4K, 4.9 % at 128K).
    sent = [_one_qp_fct("sent", c) for c in (4096, 32768, 131072)]
    assert max(sent) / min(sent) - 1 < 0.02, sent
    # Refilled on the RC completion, a QP idles a round trip per chunk: 256 of them at 4K.
    ack = [_one_qp_fct("ack", c) for c in (4096, 131072)]
    assert ack[0] > 1.5 * ack[1], ack


def test_the_reduction_is_against_the_one_qp_fct_at_the_same_chunk_size():
    from rdmalab.experiments.repro.multipath import _reductions

    # An RTT-bound 1-QP point (40 ms at 4K) must not lend its slowness to the 128K chunks:
    # against a baseline averaged over chunk sizes (30 ms) 128K would show 73 %, not 60 %.
    t = pl.DataFrame({"qps": [1, 1, 4, 4], "chunk": [4096, 131072, 4096, 131072], "mean": [40.0, 20.0, 10.0, 8.0]})
    assert _reductions(t) == {4096: pytest.approx(75.0), 131072: pytest.approx(60.0)}


def _two_qps_beside_two_flows(chunk: int, mtu: int) -> float:
    """FCT (µs) of 1 MiB over 2 QPs from host 0, beside two long flows from the same host,
    no CC: host 0's uplink is the only bottleneck and its NIC serves the four QPs round robin."""
    toml = f"""
[topology]
kind = "star"
hosts = 3
rate = "40Gbps"
delay = "1us"

[[traffic]]
kind = "multipath"
qps = 2
chunk_size = {chunk}
refill_on = "sent"
messages = [{{ src = 0, dst = 1, size = 1048576 }}]

[[traffic]]
kind = "flows"
flows = [{{ src = 0, dst = 2, size = 20000000 }}, {{ src = 0, dst = 2, size = 20000000 }}]

[fabric]
cc = "none"
mtu = {mtu}
"""
    return float(run(Scenario.from_toml_text(toml), progress=False).messages["fct_ns"][0]) / 1e3


def test_a_one_kib_chunk_is_two_packets_and_the_nic_takes_one_per_turn():
    """Why 1 KiB chunks are slow (docs/multipath.md): a 1 KiB chunk and its 24 B header are
    1,048 B, two packets at a 1,000 B MTU (payload 1,000 and 48, each with 48 B of headers),
    and the NIC's round robin gives each QP one packet per turn. Over two turns the message's
    two QPs put 2 x 1,144 B on the wire for 2 x 1,024 B of data, the two long flows
    2 x 2,096 B: the message's goodput is 40 Gb/s x 2,048 / 6,480."""
    goodput = 40e9 * 2 * 1024 / (2 * (1000 + 48 + 48 + 48) + 2 * 2 * (1000 + 48))
    closed_form_us = 1048576 * 8 / goodput * 1e6
    assert _two_qps_beside_two_flows(1024, 1000) == pytest.approx(closed_form_us, rel=0.02)
    # With an MTU that fits the chunk, 1 KiB and 8 KiB chunks share the link alike.
    assert _two_qps_beside_two_flows(1024, 1100) == pytest.approx(_two_qps_beside_two_flows(8192, 1100), rel=0.03)


def test_the_cause_runs_build_seed_001s_topologies_with_either_background():
    # `mp_partition_causes flatten` and `knee` (docs/multipath.md): topology 2 is the full
    # mesh, and the "hosts 1-18" background never touches the message's two hosts.
    from rdmalab.experiments.causes import mp_partition_causes as causes

    for topo, switches in ((1, 10), (2, 5)):
        s = Scenario.from_toml_text(causes.scenario(2, 32768, 1, topology=topo, bg_hosts=list(range(1, 19))))
        r = run(s.with_stop_time("1001us"), progress=False)
        assert r.ports.filter(pl.col("node_kind") == "switch")["node"].n_unique() == switches
        assert r.counters["qps_opened"] == 200 + 2, "the background's 200 flows and the message's 2 QPs"
        # Host 19 receives the message and sends nothing but its ACKs and CNPs.
        sent_by_19 = r.ports.filter(pl.col("node") == 19)["tx_bytes"].sum()
        assert 0 < sent_by_19 < 0.1 * r.ports.filter(pl.col("node") == 0)["tx_bytes"].sum()


def test_ns3_rdma_chunk_mode_stalls_unless_the_chunk_is_whole_packets():
    # docs/multipath.md: the cited simulator's own chunk mode. Worked by hand for 1 KiB and
    # 1,000 B packets: two packets reach the 1,024 B mark and earn an echo (allowance 2,048),
    # the third packet brings the client to 3,000 B, past its allowance, and leaves the
    # server at 1,000 of 1,024 B: nothing more moves. With whole packets every echo is
    # exact and all 10 MiB arrive.
    from rdmalab.experiments.causes.mp_partition_causes import CHUNKS, ns3rdma_echo_chunks

    assert ns3rdma_echo_chunks(1024) == 3000
    assert ns3rdma_echo_chunks(4096) == 9000  # 5 packets, echo, 4 more, 4,000 < 4,096
    for chunk in CHUNKS:
        assert ns3rdma_echo_chunks(chunk) < 0.03 * (10 << 20), chunk
        assert ns3rdma_echo_chunks(chunk, packet=1024) == 10 << 20, chunk
    for chunk in (1000, 32000, 128000):
        assert ns3rdma_echo_chunks(chunk) == 10 << 20
