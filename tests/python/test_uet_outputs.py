"""The Ultra Ethernet transport's outputs from Python (docs/uet.md, "Outputs"): the flow
table's `trimmed_packets` and `timeouts`, the port table's `trims` and `trimmed_bytes`, as
`res.flows` / `res.ports` and as the Parquet files a run writes, each summed against the run's
counters (counted elsewhere: at the switches' admission, at the sender's timer); and
`transport = "uet"` on a collective. The physics is checked in crates/rdmalab/tests/it/uet.rs
and collectives.rs."""

import warnings

import polars as pl
import pytest

from rdmalab import RdmalabWarning, Scenario, run

INCAST = """
seed = 2
[topology]
kind = "star"
hosts = 3
rate = "100Gbps"
delay = "1us"

[[traffic]]
kind = "flows"
transport = "uet"
flows = [{ src = 0, dst = 2, size = 500000 }, { src = 1, dst = 2, size = 500000 }]

[fabric]
cc = "none"
mtu = 1000
lossless = false

[fabric.trimming]
threshold_kb = 20
"""


def test_trims_per_flow_and_per_port_add_up_to_the_counters(tmp_path):
    path = tmp_path / "incast.toml"
    path.write_text(INCAST)
    res = run(Scenario.from_toml(path), progress=False)
    c = res.counters
    assert c["trims"] > 10
    flows, ports = res.flows, res.ports
    assert flows["trimmed_packets"].sum() == c["trims"] == ports["trims"].sum()
    assert ports["trimmed_bytes"].sum() == c["trimmed_bytes"]
    # Each trimmed packet is heard as a NACK and resent once; nothing waited for a timeout.
    assert flows["trimmed_packets"].to_list() == flows["nacks"].to_list() == flows["retx_packets"].to_list()
    assert flows["timeouts"].sum() == c["timeouts"] == 0
    # Every trim falls on one port: the switch's towards the receiver, host 2.
    hit = ports.filter(pl.col("trims") > 0)
    assert hit.height == 1 and hit["trims"][0] == c["trims"]
    for name, table in res.tables().items():
        table.write_parquet(tmp_path / f"{name}.parquet")
    assert pl.read_parquet(tmp_path / "flows.parquet")["trimmed_packets"].sum() == c["trims"]
    assert pl.read_parquet(tmp_path / "ports.parquet")["trims"].sum() == c["trims"]


def test_a_lossy_run_counts_its_timeouts_per_flow(tmp_path):
    # Lost packets without trimming: only the retransmission timer repairs them.
    path = tmp_path / "lossy.toml"
    path.write_text(INCAST.replace("[fabric.trimming]\nthreshold_kb = 20\n", "error_rate = 0.001\n"))
    res = run(Scenario.from_toml(path), progress=False)
    assert res.counters["link_error_losses"] > 0 and res.counters["timeouts"] > 0
    assert res.flows["timeouts"].sum() == res.counters["timeouts"]
    assert res.flows["trimmed_packets"].sum() == 0 and res.ports["trims"].sum() == 0


def test_a_collective_runs_over_uet():
    sc = Scenario.star(4).collective("g", "allreduce", {"hosts": "0..3"}, 400_000, transport="uet")
    assert sc.spec["collective"][0]["transport"] == "uet"
    rc = run(Scenario.star(4).collective("g", "allreduce", {"hosts": "0..3"}, 400_000), progress=False)
    uet = run(sc, progress=False)
    assert uet.collectives["end_ns"].is_not_null().all()
    # The same bytes move; UET's receivers acknowledge every fourth packet, RC's every one
    # by default, so the two take different times.
    assert uet.counters["payload_bytes_delivered"] == rc.counters["payload_bytes_delivered"]


@pytest.mark.parametrize("mode", ["ev_spray", "ev_cycle", "ev_bitmap", "reps"])
def test_an_entropy_mode_without_uet_traffic_is_warned_about(mode):
    # The entropy modes set what a UET packet carries: over RC flows only, the run warns that
    # they change nothing; over a UET flow they act, and the run says nothing of them.
    sc = Scenario.star(3).with_fabric(path_selection=mode)
    with pytest.warns(RdmalabWarning, match=rf'fabric\.path_selection = "{mode}" .*transport = "uet"'):
        run(sc.flow(1, 0, 20000), progress=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(sc.flow(1, 0, 20000, transport="uet"), progress=False)
    assert not [w for w in caught if "path_selection" in str(w.message)], [str(w.message) for w in caught]
