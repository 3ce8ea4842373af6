"""Collectives through Python: Scenario.collective and its TOML round trip, the
collectives table and its NCCL-tests bandwidths, the summary, the CLI's collectives.parquet,
and errors that name the field."""

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rdmalab import Scenario, plots, run
from rdmalab.collectives import COLLECTIVE_COLUMNS, COLLECTIVE_STEP_COLUMNS

RDMALAB = Path(sys.executable).parent / "rdmalab"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def scenario():
    return (Scenario.star(8)
            .collective("ring", "allreduce", ranks={"hosts": "0..7"}, size="800KB", chunk="1MB")
            .collective("hd", "allreduce", ranks=list(range(8)), size=800_000, algorithm="halving_doubling",
                        start="200us", repeat=2)
            .collective("a2a", "alltoall", ranks=[7, 6, 5, 4], size="1MiB", channels=2, start="500us"))


def test_the_builder_round_trips_through_toml():
    sc = scenario()
    back = Scenario.from_toml_text(sc.to_toml())
    assert back.spec == sc.spec
    assert sc.spec["collective"][2] == {"name": "a2a", "kind": "alltoall", "ranks": [7, 6, 5, 4], "size": "1MiB",
                                        "channels": 2, "start": "500us"}


def test_the_table_has_nccl_tests_bandwidths():
    res = run(scenario(), progress=False)
    c = res.collectives
    assert c.columns == list(COLLECTIVE_COLUMNS) and c.schema == pl.Schema(COLLECTIVE_COLUMNS)
    assert c["name"].to_list() == ["ring#0", "hd#0", "hd#1", "a2a#0"]
    assert c["algorithm"].to_list() == ["ring", "halving_doubling", "halving_doubling", "direct"]
    took = c["end_ns"] - c["start_ns"]
    # algbw = size / time in Gbit/s; busbw by NCCL-tests' factor for n ranks.
    assert ((c["algbw_gbps"] - c["size"] * 8 / took).abs() < 1e-9).all()
    factor = [2 * 7 / 8, 2 * 7 / 8, 2 * 7 / 8, 3 / 4]
    assert ((c["busbw_gbps"] / c["algbw_gbps"] - pl.Series(factor)).abs() < 1e-12).all()
    # Ring and halving-doubling both send 2(n-1)/n of S per rank: the ring's 14 steps of S/8
    # cost more latency than halving-doubling's 6 steps.
    assert c["steps"].to_list() == [14, 6, 6, 1]
    assert took[0] > took[1]
    assert c["start_ns"][1] == 200_000 and c["start_ns"][2] > c["end_ns"][1]
    # Every transfer is one of the run's flows: 14*8 + 2*6*8 + 2*4*3.
    assert res.counters["flows_total"] == res.flows.height == 14 * 8 + 2 * 6 * 8 + 2 * 4 * 3
    # S/n = 100 kB: the ring's 14 steps, and halving-doubling's last halving and first
    # doubling step (twice): each rank once per step.
    assert res.flows.filter(pl.col("size") == 100_000).height == 14 * 8 + 2 * 2 * 8
    assert set(c["slowest_rank"].to_list()) <= set(range(8))
    text = res.summary()
    assert "hd#1" in text and "halving_doubling" in text and "busbw" in text
    assert "collectives" in res.tables()


def test_the_cli_writes_collectives_parquet(tmp_path):
    out = subprocess.run([str(RDMALAB), "run", str(EXAMPLES / "collectives.toml"), "--quiet", "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    c = pl.read_parquet(tmp_path / "collectives.parquet")
    assert c["name"].to_list() == ["grad#0", "grad#1", "tree#0", "moe#0"]
    assert c["end_ns"].is_not_nan().all() and (c["busbw_gbps"] > 0).all()
    # The figure of completion by step, and its data: every rank of these collectives receives,
    # so an iteration ends at its last receive completion, the latest of its steps' last ones.
    assert (tmp_path / "collectives.png").stat().st_size > 0 and (tmp_path / "collectives.pdf").exists()
    assert "collectives.png" in out.stdout
    steps = pl.read_parquet(tmp_path / "collective_steps.parquet")
    assert steps.schema == pl.Schema(COLLECTIVE_STEP_COLUMNS)
    per = steps.group_by("name", maintain_order=True).agg(pl.len().alias("steps"), pl.col("last_ns").max(),
                                                          pl.col("first_ns").min())
    both = c.join(per, on="name")
    assert both.height == 4 and (both["steps"] == both["steps_right"]).all()
    assert (both["last_ns"] == both["end_ns"]).all()
    assert (both["first_ns"] > both["start_ns"]).all()
    assert (steps["first_ns"] <= steps["last_ns"]).all()


def test_completion_by_step_follows_the_ring_closed_form():
    # docs/collectives.md's closed form on an idle star (100 Gb/s, 1 us links), ACKs only at a
    # message's end: every rank receives step k of the ring at start + (k+1)·A(S/n) + k·tx(ack),
    # A(b) = Σ tx(packet) + tx(largest packet) + 2d, so the step's first and last rank coincide.
    n, size = 8, 800_000
    sc = (Scenario.star(n).with_fabric(ack_interval=1_000_000)
          .collective("ring", "allreduce", ranks=list(range(n)), size=size, chunk="1MB"))
    res = run(sc, progress=False)
    ps_per_byte = 8e12 / 100e9
    b = size // n
    wires = [1000 + 48] * (b // 1000) + ([b % 1000 + 48] if b % 1000 else [])
    arrival_ns = (sum(wires) + max(wires)) * ps_per_byte / 1e3 + 2 * 1000
    ack_ns = 60 * ps_per_byte / 1e3
    steps = res.collective_steps.filter(pl.col("name") == "ring#0").sort("step")
    c = res.collectives.row(0, named=True)
    assert steps["step"].to_list() == list(range(2 * (n - 1))) == list(range(c["steps"]))
    for k, first, last in steps.select("step", "first_ns", "last_ns").iter_rows():
        expect = c["start_ns"] + (k + 1) * arrival_ns + k * ack_ns
        assert abs(first - expect) < 1e-6 and abs(last - expect) < 1e-6, (k, first, last, expect)
    assert steps["last_ns"][-1] == c["end_ns"]
    assert c["step_spread_ns"] == 0.0


def test_the_figure_draws_each_collective_by_step():
    res = run(scenario(), progress=False)
    fig = plots.collective_steps(res)
    lines = fig.axes[0].get_lines()
    assert [ln.get_label() for ln in lines] == [f"{n} (last rank)" for n in ["ring#0", "hd#0", "hd#1", "a2a#0"]]
    # Each line is its iteration's last completion per step, in µs since its start.
    for ln, (name, start) in zip(lines, res.collectives.select("name", "start_ns").iter_rows()):
        d = res.collective_steps.filter(pl.col("name") == name).sort("step")
        assert list(ln.get_xdata()) == d["step"].to_list()
        assert max(abs(a - (b - start) / 1e3) for a, b in zip(ln.get_ydata(), d["last_ns"])) < 1e-9
    with pytest.raises(ValueError, match="no collective steps"):
        plots.collective_steps(run(Scenario.star(2).flows([{"src": 0, "dst": 1, "size": 1000}]), progress=False))


@pytest.mark.parametrize("fields, field, says", [
    ({"kind": "allsum"}, "collective[0].kind", "known: allreduce"),
    ({"algorithm": "direct"}, "collective[0].algorithm", "does not carry out allreduce"),
    ({"ranks": [0, 1, 2], "algorithm": "halving_doubling"}, "collective[0].ranks", "power-of-two"),
    ({"ranks": [0, 0]}, "collective[0].ranks", "listed twice"),
    ({"size": "1Mb"}, "collective[0].size", "unknown byte unit"),
])
def test_bad_input_names_the_field(fields, field, says):
    e = {"name": "g", "kind": "allreduce", "ranks": [0, 1, 2, 3], "size": "1MiB", **fields}
    sc = Scenario.star(4)
    sc.spec["collective"] = [e]
    with pytest.raises(ValueError) as err:
        run(sc, progress=False)
    assert field in str(err.value) and says in str(err.value), str(err.value)


def _ring_of_four_ns(rate_bps: float, latency_ns: float) -> float:
    """A 4-rank ring AllReduce of 400,000 B in one chunk through one switch on idle links:
    2(n-1) = 6 steps of 100 packets of 1048 B on the wire, each arriving after all its wires,
    one more packet's time for the switch's store and forward, and two links' latency; between
    steps, the 60-byte ACK that lets the next one start."""
    ps_per_byte = 8e12 / rate_bps
    wires = [1048] * 100
    arrival_ns = (sum(wires) + max(wires)) * ps_per_byte / 1e3 + 2 * latency_ns
    return 6 * arrival_ns + 5 * 60 * ps_per_byte / 1e3


def test_a_rail_fabric_from_python_runs_a_ring_on_one_rail():
    # GPU 2 of 4 servers meets at rail 2's one leaf: a star at 400 Gb/s, where the ring takes
    # 2(n-1) steps of A(S/n) (docs/collectives.md; exact in tests/it/rail.rs).
    sc = (Scenario.rail(servers=4, spines=2, gpus_per_server=4).with_fabric(ack_interval=1_000_000)
          .collective("r", "allreduce", ranks=[2, 6, 10, 14], size=400_000, chunk="1MB"))
    assert Scenario.from_toml_text(sc.to_toml()).spec == sc.spec
    res = run(sc, progress=False)
    c = res.collectives.row(0, named=True)
    assert abs(c["end_ns"] - c["start_ns"] - _ring_of_four_ns(400e9, 1000)) < 1e-6
    # Hosts, then 4 rail leaves, then 2 spines: 16 host links and 8 leaf-spine links.
    assert res.ports.filter(pl.col("node_kind") == "host").height == 16
    assert res.ports["link"].n_unique() == 16 + 4 * 2


def test_nvlink_from_python_carries_a_servers_ring():
    # 4 GPUs of one server over NVLink at 800 Gb/s and 250 ns: the ring's closed form at the
    # NVLink's rate and latency (exact in tests/it/nvlink.rs), and nothing on the rails.
    sc = (Scenario.rail(servers=2, spines=2, gpus_per_server=4, nvlink_rate="800Gbps", nvlink_latency="250ns")
          .with_fabric(ack_interval=1_000_000)
          .collective("r", "allreduce", ranks=[0, 1, 2, 3], size=400_000, chunk="1MB"))
    assert Scenario.from_toml_text(sc.to_toml()).spec == sc.spec
    res = run(sc, progress=False)
    c = res.collectives.row(0, named=True)
    assert abs(c["end_ns"] - c["start_ns"] - _ring_of_four_ns(800e9, 250)) < 1e-6
    # 8 rail links, 8 leaf-spine links, the 8 GPUs' NVLinks; the rails sent nothing, NVLink the ring.
    assert res.ports["link"].n_unique() == 8 + 8 + 8
    rails = res.ports.filter((pl.col("node_kind") == "host") & (pl.col("port") == 0))  # a GPU's first port: its rail
    assert rails.height == 8 and rails["tx_bytes"].sum() == 0
    nvlinks = res.ports.filter((pl.col("node_kind") == "host") & (pl.col("port") == 1) & (pl.col("node") < 4))
    assert nvlinks["tx_bytes"].min() > 0
    with pytest.raises(ValueError) as err:
        run(Scenario.rail(servers=2, spines=2, gpus_per_server=4, nvlink_rate="800Gbps"), progress=False)
    assert "topology.nvlink_latency" in str(err.value)


def test_bad_rail_input_names_the_field():
    with pytest.raises(ValueError) as err:
        run(Scenario.rail(servers=6, spines=2, leaves_per_rail=4), progress=False)
    assert "topology.leaves_per_rail" in str(err.value) and "split evenly" in str(err.value)
