"""The researcher's daily workflow: complete, self-describing outputs; link failures and
lossy links through the scenario file, the CLI and the hpcc drop-in."""

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rdmalab
from rdmalab import Scenario, run
from rdmalab.results import PORT_COLUMNS, port_label, port_names, with_port_names

RDMALAB = Path(sys.executable).parent / "rdmalab"

# A leaf-spine of 2 leaves (8, 9) with 4 hosts each (0..7) and 2 spines (10, 11).
LEAF_SPINE = """
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4

[[traffic]]
kind = "flows"
flows = [
  { src = 0, dst = 4, size = 300000 }, { src = 1, dst = 5, size = 300000, sport = 7 },
  { src = 6, dst = 2, size = 300000 }, { src = 7, dst = 3, size = 300000, sport = 9 },
  { src = 0, dst = 1, size = 100000 },
]
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def cli(*args, cwd=None):
    return subprocess.run([str(RDMALAB), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


# -- 1. complete, self-describing outputs ------------------------------------------------------
def test_run_writes_every_table_into_a_default_folder_and_refuses_to_overwrite(tmp_path):
    write(tmp_path, "ls.toml", LEAF_SPINE + """
        [fabric]
        queue_sample_interval = "5us"
        rate_sample_interval = "5us"
    """)
    out = cli("run", "ls.toml", "--quiet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "out" / "ls"
    for name in ["fct.txt", "pfc.txt", "flows.parquet", "ports.parquet", "pfc.parquet", "queues.parquet",
                 "rates.parquet", "slowdown.png", "slowdown.pdf"]:
        assert (folder / name).is_file(), name
    queues = pl.read_parquet(folder / "queues.parquet")
    assert set(PORT_COLUMNS) <= set(queues.columns) and queues.height > 0
    assert pl.read_parquet(folder / "rates.parquet").height > 0
    again = cli("run", "ls.toml", "--quiet", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr and "not empty" in again.stderr
    assert cli("run", "ls.toml", "--quiet", "--force", cwd=tmp_path).returncode == 0


def test_ports_are_named_consistently_in_every_port_table():
    sc = Scenario.leaf_spine(2, 4, spines=2).permutation(200_000).with_fabric(queue_sample_interval="2us",
                                                                              buffer_mb=0.05)
    res = run(sc, progress=False)
    ports = res.ports
    assert ports.columns[:len(PORT_COLUMNS)] == PORT_COLUMNS
    assert ports.height == 2 * (8 + 4)  # 8 host links and 4 leaf-spine links, two ports each
    by_id = {r["port_id"]: r for r in ports.iter_rows(named=True)}
    for pid, r in by_id.items():
        peer = by_id[pid ^ 1]  # the other end of the same link
        assert (r["peer_node"], r["peer_port"]) == (peer["node"], peer["port"])
        assert r["link"] == peer["link"] and r["rate_bps"] == 100_000_000_000
        kind = "switch" if r["node"] >= 8 else "host"
        assert r["node_kind"] == kind
        ends = r["link"].split("-")
        prefix = "sw" if kind == "switch" else "h"
        assert f"{prefix}{r['node']}:{r['port']}" in ends
    assert len(set(ports["link"])) == 12
    # Host 0's only port is its port 0, on the link to leaf 8's port 0.
    h0 = ports.filter(pl.col("node") == 0).row(0, named=True)
    assert (h0["port"], h0["link"], port_label(h0)) == (0, "h0:0-sw8:0", "h0:0→sw8:0")
    q = res.queue_samples
    assert set(q["node_kind"]) == {"switch"} and set(q["link"]) <= set(ports["link"])
    if res.pfc.height:
        assert set(PORT_COLUMNS) <= set(res.pfc.columns)
        assert res.pfc["link"].null_count() == 0


def test_a_table_of_every_port_in_order_is_named_as_a_join_would_name_it():
    # The ports table takes its names side by side (no join); any other order takes the join.
    names = port_names({"node": np.array([0, 8, 8, 9], dtype=np.uint32), "switch": np.array([0, 1, 1, 1], dtype=np.uint8),
                        "port": np.array([0, 0, 1, 0], dtype=np.uint32),
                        "peer_node": np.array([8, 0, 9, 8], dtype=np.uint32),
                        "peer_switch": np.array([1, 0, 1, 1], dtype=np.uint8),
                        "peer_port": np.array([0, 0, 0, 1], dtype=np.uint32),
                        "rate_bps": np.full(4, 100_000_000_000, dtype=np.uint64)})
    assert names["link"].to_list() == ["h0:0-sw8:0", "h0:0-sw8:0", "sw8:1-sw9:0", "sw8:1-sw9:0"]
    assert names["node_kind"].to_list() == ["host", "switch", "switch", "switch"]
    in_order = pl.DataFrame({"tx_bytes": [10, 20, 30, 40]}).with_row_index("port_id")
    joined = in_order.join(names, on="port_id", how="left").select(PORT_COLUMNS + ["port_id", "tx_bytes"])
    assert with_port_names(in_order, names).equals(joined)
    shuffled = in_order[[2, 0, 3, 1]]
    assert with_port_names(shuffled, names).equals(joined[[2, 0, 3, 1]])


def test_simulated_time_is_the_last_completion_and_bytes_balance():
    # The RTO timer of the last flow outlives it: end_time is later than the last completion.
    res = run(Scenario.star(3).flow(1, 0, 100_000).flow(2, 0, 50_000), progress=False)
    c = res.counters
    assert c["last_completion_ps"] == round(max(res.flows["start_ns"] + res.flows["fct_ns"]) * 1000)
    assert c["last_completion_ps"] < c["end_time_ps"]
    assert res.simulated_ps == c["last_completion_ps"]
    text = res.summary()
    assert f"simulated time    {c['last_completion_ps'] / 1e6:.3f} us" in text
    assert (f"sent {c['payload_bytes_sent']:,} = delivered {c['payload_bytes_delivered']:,} + dropped in the "
            f"fabric {c['payload_bytes_dropped']:,} + discarded by receivers {c['payload_bytes_discarded']:,} + in "
            f"flight {c['payload_bytes_in_flight']:,}") in text
    assert c["payload_bytes_sent"] == (c["payload_bytes_delivered"] + c["payload_bytes_dropped"]
                                       + c["payload_bytes_discarded"] + c["payload_bytes_in_flight"])


def _all_parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _all_parsers(sub)


def test_every_help_is_complete():
    from rdmalab.cli import build_parser

    parser = build_parser()
    top = parser.format_help()
    for word in ("sweep", "plot", "repro", "run", "hpcc", "drum"):
        assert f"rdmalab {word}" in top
    for p in _all_parsers(parser):
        text = p.format_help()
        assert "==SUPPRESS==" not in text, p.prog
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{p.prog}: {action.dest} has no help"


# -- 3. link failures and lossy links -------------------------------------------------------------
def test_toml_link_failures_report_unreachable_flows_in_flows_and_summary(tmp_path):
    path = write(tmp_path, "cut.toml", LEAF_SPINE + """
        [fabric]
        reroute_delay = "2us"

        [[events]]
        kind = "link_down"
        at = "5us"
        a = 8
        b = 10

        [[events]]
        kind = "link_down"
        at = "5us"
        a = 11
        b = 8
    """)
    res = run(path, progress=False)
    assert res.stop_reason == "finished"
    status = dict(zip(res.flows["flow"].to_list(), res.flows["status"].to_list()))
    flows = res.flows.sort("flow")
    cross = flows.filter((pl.col("src") < 4) != (pl.col("dst") < 4))
    assert set(cross["status"]) == {"unreachable"} and cross.height == 4
    assert cross["fct_ns"].null_count() == 4
    # Given up when the routes recomputed after the cut (5 us + reroute_delay 2 us) left no
    # path to their destination.
    assert cross["gave_up_ns"].to_list() == [7000.0] * 4
    local = flows.filter((pl.col("src") < 4) & (pl.col("dst") < 4))
    assert local["status"].to_list() == ["completed"] and len(status) == 5
    assert local["gave_up_ns"].null_count() == 1
    assert res.counters["flows_unreachable"] == 4 and res.counters["link_failures"] == 2
    assert "flows unreachable 4" in res.summary()
    table = res.slowdown_table()
    assert table.filter(pl.col("bucket") == "all")["flows"][0] == 1  # percentiles over completed flows


def test_toml_error_rates_lose_packets_and_go_back_n_recovers(tmp_path):
    path = write(tmp_path, "lossy.toml", LEAF_SPINE + """
        [fabric]
        error_rate = 0.002

        [[links]]
        a = 8
        b = 0
        error_rate = 0.05
    """)
    res = run(path, progress=False)
    c = res.counters
    assert c["flows_completed"] == 5 and c["link_error_losses"] > 0 and c["drops"] == c["link_error_losses"]
    # The override makes host 0's link the lossiest: its two ports count most drops (a drop is
    # counted at the receiving port).
    host0_link = res.ports.filter(pl.col("link") == "h0:0-sw8:0")["drops"].sum()
    assert host0_link == res.ports.group_by("link").agg(pl.col("drops").sum())["drops"].max()


@pytest.mark.parametrize("text, needles", [
    ("[[events]]\nkind = 'link_down'\nat = '1us'\na = 0\nb = 5\n", ["bad.toml", "events[0].b", "no link joins"]),
    ("[[links]]\na = 8\nb = 99\nerror_rate = 0.1\n", ["bad.toml", "links[0].b", "unknown node 99"]),
    ("[[links]]\na = 8\nb = 0\nerror_rate = 1.5\n", ["bad.toml", "links[0].error_rate", "probability"]),
    ("[[events]]\nkind = 'link_flap'\nat = '1us'\na = 8\nb = 0\n", ["bad.toml", "events[0]", "link_flap"]),
])
def test_bad_link_settings_name_file_line_and_field(tmp_path, text, needles):
    path = write(tmp_path, "bad.toml", LEAF_SPINE + text)
    with pytest.raises(ValueError) as e:
        run(path, progress=False)
    for n in needles:
        assert n in str(e.value)
    assert "bad.toml:" in str(e.value) and ":0:" not in str(e.value)


def test_hpcc_link_down_cuts_a_host_off_the_star(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    cfg = reference_copy / "S2_dcqcn_config.txt"
    # Host 5's link to the switch (node 0) fails 100 us into the flows (which start at 2 s).
    cfg.write_text(cfg.read_text().replace("CC_MODE 1", "CC_MODE 0").replace("LINK_DOWN 0 0 0", "LINK_DOWN 100 0 5"))
    res, fct, _ = rdmalab.run_hpcc(cfg.name, progress=False)
    c = res.counters
    assert c["flows_completed"] + c["flows_unreachable"] == c["flows_total"] == 2321
    lost = res.flows.filter(pl.col("status") == "unreachable")
    assert lost.height > 0 and ((lost["src"] == 5) | (lost["dst"] == 5)).all()
    assert (lost["start_ns"] + 0 >= 0).all()
    assert len(Path(fct).read_text().splitlines()) == c["flows_completed"]


# -- 2. link utilisation -----------------------------------------------------------------------
def test_link_utilisation_of_a_lone_flow_is_line_rate_on_its_path_and_zero_elsewhere(tmp_path):
    # A lone 2 MB flow on a star at 100 Gb/s sends back to back: every 10 us interval inside
    # the transfer carries interval x rate bytes, to the byte (the packet that straddles a
    # boundary counts in each interval with the part serialized in it), never more.
    sc = Scenario.star(3).flow(0, 1, 2_000_000).with_fabric(link_sample_interval="10us")
    res = run(sc, progress=False)
    links = res.links
    assert {"time_ps", "link", "node", "port", "bytes", "utilization"} <= set(links.columns)
    assert links.height % res.ports.height == 0  # every port at every sample
    inside = links.filter((pl.col("time_ps") >= 20_000_000) & (pl.col("time_ps") <= 150_000_000))
    path = inside.filter(pl.col("link").is_in(["h0:0-sw3:0", "h1:0-sw3:1"])
                         & (((pl.col("node") == 0)) | (pl.col("node") == 3) & (pl.col("port") == 1)))
    assert path.height == 2 * 14
    assert ((path["utilization"] - 1.0).abs() <= 1 / 125_000 + 1e-12).all(), path["utilization"].to_list()
    assert links["utilization"].max() <= 1.0, links.sort("utilization").tail(3)
    idle = inside.filter(pl.col("link") == "h2:0-sw3:2")
    assert (idle["bytes"] == 0).all()
    write(tmp_path, "u.toml", """
        [topology]
        kind = "star"
        hosts = 2
        [[traffic]]
        kind = "flows"
        flows = [{ src = 0, dst = 1, size = 100000 }]
        [fabric]
        link_sample_interval = "1us"
    """)
    out = cli("run", "u.toml", "--quiet", "--out", tmp_path / "o", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert pl.read_parquet(tmp_path / "o" / "links.parquet").height > 0


# -- 2. the per-packet trace ---------------------------------------------------------------------
def test_trace_of_a_lone_flow_has_the_closed_form_event_counts(tmp_path):
    # h0 -> h1 through switch 2, 100 packets, an ACK per packet. Data: a dequeue at h0, an
    # enqueue and a dequeue at the switch; ACKs the same backwards; then the sender's `ack`.
    sc = Scenario.star(2).flow(0, 1, 100_000)
    sc.spec["trace"] = {"flows": [0]}
    res = run(sc, progress=False, trace_path=tmp_path / "t.parquet")
    t = res.trace.collect()
    counts = dict(t.group_by("event").len().iter_rows())
    assert counts == {"dequeue": 400, "enqueue": 200, "ack": 100}
    assert res.counters["trace_records"] == 700 and not res.counters["trace_truncated"]
    data_at_switch = t.filter((pl.col("event") == "dequeue") & (pl.col("kind") == "data") & (pl.col("node") == 2))
    assert set(data_at_switch["link"]) == {"h1:0-sw2:1"} and data_at_switch["payload"].sum() == 100_000
    assert t["time_ps"].is_sorted()


def test_trace_filters_by_port_and_window_and_refuses_above_its_cap(tmp_path):
    sc = Scenario.star(3).flow(0, 2, 100_000).flow(1, 2, 100_000)
    sc.spec["trace"] = {"ports": ["h1:0-sw3:1"], "start": "2us", "end": "5us"}
    t = run(sc, progress=False).trace.collect()
    assert t.height > 0 and set(t["link"]) == {"h1:0-sw3:1"}
    assert t["time_ps"].min() >= 2_000_000 and t["time_ps"].max() < 5_000_000
    sc.spec["trace"] = {"max_bytes": 10_000}
    with pytest.raises(ValueError, match=r"trace.max_bytes.*about \d+ bytes"):
        run(sc, progress=False)
    sc.spec["trace"] = {"ports": ["h1:0-sw3:2"]}
    with pytest.raises(ValueError, match=r"trace.ports\[0\].*not the two ends of one link"):
        run(sc, progress=False)


def test_hpcc_trace_and_queue_monitor_keys(reference_copy, monkeypatch):
    monkeypatch.chdir(reference_copy)
    (reference_copy / "nodes.txt").write_text("2\n1 2\n")
    cfg = reference_copy / "S2_dcqcn_config.txt"
    text = cfg.read_text().replace("CC_MODE 1", "CC_MODE 0").replace("TRACE_FILE trace.txt", "TRACE_FILE nodes.txt")
    text = text.replace("ENABLE_TRACE 0", "ENABLE_TRACE 1").replace("QLEN_MON_END 2000000000", "QLEN_MON_END 2000100000")
    cfg.write_text(text)
    res, _, _ = rdmalab.run_hpcc(cfg.name, progress=False)
    trace = pl.read_parquet(reference_copy / "S2_dcqcn_mix.tr")
    assert trace.height == res.counters["trace_records"] > 0 and set(trace["node"]) == {1, 2}
    # Every data packet host 1 sent appears once as a dequeue at its port.
    sent = trace.filter((pl.col("event") == "dequeue") & (pl.col("kind") == "data") & (pl.col("node") == 1))
    assert sent["payload"].sum() == res.flows.filter(pl.col("src") == 1)["size"].sum()
    # The monitor: a block at 2 s (one sample) and one at the end; 100 us of 100 ns samples.
    blocks = (reference_copy / "S2_dcqcn_qlen.txt").read_text().split("time: ")[1:]
    assert [b.splitlines()[0] for b in blocks][0] == "2000000000" and len(blocks) == 2
    for block, samples in zip(blocks, (1, 1001)):
        lines = block.splitlines()[1:]
        assert len(lines) == 65 and all(l.split()[0] == "0" for l in lines)  # switch 0, ports 1..65
        assert [int(l.split()[1]) for l in lines] == list(range(1, 66))
        assert all(sum(map(int, l.split()[2:])) == samples for l in lines)
