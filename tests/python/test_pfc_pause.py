"""PAUSE frames with a pause time (`[fabric.pfc_pause]`, docs/model/pfc.md "PFC pause time"):
8 senders in an incast on a 100 Gb/s star under PFC without CC. On lossless links a sender
still over XOFF sends its PAUSE again every `refresh_quanta` x 512 bit times, and since each
refresh arrives before the pause runs out, no flow's completion time moves. On lossy links
the reference's PAUSE (held until its RESUME) leaves a port paused for good once a RESUME is
lost; with a pause time every flow finishes, the lost RESUMEs costing one pause time each."""

import polars as pl
import pytest

from rdmalab import run

STAR = """
stop_time = "20ms"

[topology]
kind = "star"
hosts = 9
rate = "100Gbps"
delay = "1us"

[fabric]
cc = "none"
buffer_mb = 1
error_rate = {error_rate}
{pause}

[[traffic]]
kind = "incast"
senders = [1, 2, 3, 4, 5, 6, 7, 8]
receiver = 0
size = 2000000
"""

SHORT = "[fabric.pfc_pause]\nquanta = 1000\nrefresh_quanta = 500"
#: 500 quanta of 512 bit times at 100 Gb/s.
REFRESH_PS = 500 * 512 * 10
#: A PFC frame waits for the packet on the wire: at most one MTU packet (1,000 B of payload
#: and its headers) at 100 Gb/s.
ONE_PACKET_PS = 1100 * 8 * 10


def star(error_rate: float, pause: str = "") -> str:
    return STAR.format(error_rate=error_rate, pause=pause)


def test_refreshes_come_every_refresh_quanta_and_move_no_flow_on_lossless_links():
    held = run(star(0.0), progress=False)
    timed = run(star(0.0, SHORT), progress=False)
    assert timed.flows["fct_ns"].to_list() == held.flows["fct_ns"].to_list()
    c = timed.counters
    assert c["pfc_pause_expiries"] == 0 and c["pfc_pause_refreshes"] > 0
    assert c["pauses"] == held.counters["pauses"] + c["pfc_pause_refreshes"]
    # Two PAUSEs in a row at one port, no RESUME between: one refresh apart, give or take the
    # packet each may have waited behind.
    frames = timed.pfc.sort("time_ps").with_columns(
        pl.col("time_ps").diff().over("node", "ifindex").alias("gap"),
        pl.col("pause").shift(1).over("node", "ifindex").alias("before"))
    gaps = frames.filter((pl.col("pause") == 1) & (pl.col("before") == 1))["gap"]
    assert gaps.len() == c["pfc_pause_refreshes"]
    assert gaps.min() >= REFRESH_PS - ONE_PACKET_PS and gaps.max() <= REFRESH_PS + ONE_PACKET_PS


def test_a_lost_resume_pauses_for_good_without_a_pause_time_and_one_pause_time_with_it():
    held = run(star(0.01), progress=False)
    assert held.counters["flows_completed"] < 8  # the reference's PAUSE: a lost RESUME never ends
    assert held.summary().splitlines()[1].split()[-1] == "stop_time"
    timed = run(star(0.01, "[fabric.pfc_pause]"), progress=False)  # 65,535 quanta: 335.5 us
    c = timed.counters
    assert c["flows_completed"] == 8 and c["pfc_pause_expiries"] > 0
    assert f"{c['pfc_pause_expiries']} pauses ran out" in timed.summary()
    # Lost PAUSEs let buffers overflow (counted among the drops, as a real switch's): the run
    # is still checked for byte conservation.
    assert c["drops"] > c["link_error_losses"]


@pytest.mark.parametrize("pause, needle", [
    ("quanta = 0", "fabric.pfc_pause.quanta"),
    ("quanta = 70000", "fabric.pfc_pause.quanta"),
    ("quanta = 100\nrefresh_quanta = 100", "fabric.pfc_pause.refresh_quanta"),
    ("refresh_quanta = 0", "fabric.pfc_pause.refresh_quanta"),
    ("pause_time = 3", "pause_time"),
])
def test_bad_pause_settings_name_their_field(pause, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
        run(star(0.0, "[fabric.pfc_pause]\n" + pause), progress=False)


def test_pause_times_give_the_same_results_for_any_thread_count():
    # A leaf-spine cuts into partitions; the refresh lives with the sender's node, the
    # expiry with the paused port's.
    text = """
        [topology]
        kind = "leaf_spine"
        leaves = 2
        hosts_per_leaf = 4
        spines = 2
        host_rate = "100Gbps"
        fabric_rate = "100Gbps"

        [fabric]
        cc = "none"
        buffer_mb = 1
        error_rate = 0.01

        [fabric.pfc_pause]
        quanta = 4000

        [[traffic]]
        kind = "incast"
        senders = [4, 5, 6, 7]
        receiver = 0
        size = 1000000
        """
    one, two = (run(text, progress=False, threads=n) for n in (1, 2))
    assert two.extra["engine"].startswith("parallel")
    assert one.counters["pfc_pause_expiries"] + one.counters["pfc_pause_refreshes"] > 0
    assert two.flows.equals(one.flows) and two.pfc.equals(one.pfc)
    assert {k: two.counters[k] for k in one.counters if k.startswith(("pfc_pause", "drops"))} == \
        {k: one.counters[k] for k in one.counters if k.startswith(("pfc_pause", "drops"))}
