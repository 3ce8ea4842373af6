"""Chakra execution traces through Python (docs/chakra.md): Scenario.chakra and its TOML round
trip, the shipped example (ASTRA-sim's 4-rank AllReduce and its Ring_4chunks.json) from
Python and from the CLI, and errors that name the file, rank and node or the field."""

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rdmalab import Scenario, run

RDMALAB = Path(sys.executable).parent / "rdmalab"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRACES = EXAMPLES / "chakra" / "all_reduce"
SYSTEM = EXAMPLES / "chakra" / "Ring_4chunks.json"
SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def test_the_builder_round_trips_through_toml():
    sc = Scenario.star(4).chakra(TRACES, system=SYSTEM, algorithm={"allreduce": "halving_doubling"}, splits=2,
                                 compute_scale=0.5)
    assert sc.spec["traffic"] == [{"kind": "chakra", "path": str(TRACES), "system": str(SYSTEM),
                                   "algorithm": {"allreduce": "halving_doubling"}, "splits": 2,
                                   "compute_scale": 0.5}]
    assert Scenario.from_toml_text(sc.to_toml()).spec == sc.spec


def test_the_system_file_cuts_the_allreduce_into_four_rings():
    # Ring_4chunks.json: 4 pieces of 256 KiB, one in flight: 4 rings of 6 steps of 64 KiB at
    # each of the 4 ranks, each a flow.
    res = run(Scenario.star(4).chakra(TRACES, system=SYSTEM), progress=False)
    assert res.stop_reason == "finished"
    f = res.flows
    assert f.height == 4 * 6 * 4 and (f["size"] == 65536).all()
    c = res.collectives.row(0, named=True)
    assert (c["name"], c["kind"], c["algorithm"], c["ranks"], c["size"]) == \
        ("all_reduce_4npus_1MB#0", "allreduce", "ring", 4, 1 << 20)
    assert c["busbw_gbps"] == pytest.approx(c["algbw_gbps"] * 1.5)


def test_the_cli_runs_the_example(tmp_path):
    out = subprocess.run([str(RDMALAB), "run", str(EXAMPLES / "chakra.toml"), "--quiet", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    c = pl.read_parquet(tmp_path / "collectives.parquet")
    assert c.height == 1 and c["busbw_gbps"][0] > 0
    assert pl.read_parquet(tmp_path / "chakra.parquet").height == 4


@pytest.mark.parametrize("extra, says", [
    ({"algorithm": {"alltoall": "ring"}}, "traffic[0].algorithm.alltoall"),
    ({"splits": 0}, "traffic[0].splits"),
    ({"ranks": [0, 1, 2, 3, 4]}, "all_reduce.4.et: field `rank 4`"),
])
def test_bad_input_names_the_field(extra, says):
    with pytest.raises(ValueError) as e:
        run(Scenario.star(8).chakra(TRACES, **extra), progress=False)
    assert says in str(e.value)


def test_every_node_is_a_row_of_res_chakra():
    res = run(Scenario.star(4).chakra(TRACES, system=SYSTEM), progress=False)
    n = res.chakra
    # One collective node a rank, its part ending by the collective's end.
    assert n.height == 4 and n["rank"].to_list() == [0, 1, 2, 3]
    assert set(n["kind"]) == {"collective"} and (n["bytes"] == 1 << 20).all()
    c = res.collectives.row(0, named=True)
    assert n["start_ns"].min() == pytest.approx(c["start_ns"])
    assert n["end_ns"].max() >= c["end_ns"]
    assert n["waited_on"].is_nan().all()


def test_the_timeline_outlines_a_critical_path_that_chains_back_to_the_start():
    from rdmalab import plots

    # Each rank's collective waits on nothing: the path is the node that ends last.
    res = run(Scenario.star(4).chakra(TRACES, system=SYSTEM), progress=False)
    path = plots.chakra_critical_path(res.chakra)
    assert len(path) == 1 and res.chakra["end_ns"][path[0]] == res.chakra["end_ns"].max()
    fig = plots.chakra_timeline(res)
    assert len(fig.axes[0].collections) == 4  # one bar per node
    with pytest.raises(ValueError, match="no Chakra trace nodes"):
        plots.chakra_timeline(run(Scenario.star(2).flows([{"src": 0, "dst": 1, "size": 1000}]), progress=False))
    # The ring AllReduce written as sends, receives and reductions (ASTRA-sim's example, in
    # the shared folder beside the checkout): the path runs back through one rank's chain,
    # each node starting as the one it waited on released it, to a node that waited on none.
    custom = SHARED / "traces/astra-sim/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB"
    if not custom.exists():
        pytest.skip(f"no ASTRA-sim traces at {custom}")
    n = run(Scenario.star(8).chakra(custom / "custom_allreduce"), progress=False).chakra
    path = plots.chakra_critical_path(n)
    assert len(path) > 10 and n["waited_on"][path[-1]] != n["waited_on"][path[-1]]
    for later, earlier in zip(path, path[1:]):
        release = n["start_ns"][earlier] if n["kind"][earlier] == "send" else n["end_ns"][earlier]
        assert n["start_ns"][later] == pytest.approx(release), (later, earlier)


def test_dims_run_a_collective_per_network_dimension(tmp_path):
    # ASTRA-sim's 4-rank AllReduce of 1 MiB over dims [2, 2], a ring per dimension. Under
    # `baseline` an all-reduce of the whole buffer along each dimension: a 2-rank ring sends
    # half the buffer twice, so each rank sends 2 x 1 MiB (one ring over 4 ranks: 1.5 MiB).
    sys_file = tmp_path / "sys.json"
    sys_file.write_text('{"all-reduce-implementation": ["ring", "ring"], "collective-optimization": "baseline"}')
    sc = Scenario.star(4).chakra(TRACES, system=sys_file, dims=[2, 2])
    assert sc.spec["traffic"][0]["dims"] == [2, 2]
    res = run(sc, progress=False)
    sent = res.flows.group_by("src").agg(pl.col("size").sum())["size"].to_list()
    assert sent == [2 << 20] * 4
    # ASTRA-sim's network file gives the same dimensions.
    (tmp_path / "net.json").write_text('{"logical-dims": ["2", "2"]}')
    by_file = run(Scenario.star(4).chakra(TRACES, system=sys_file, network=tmp_path / "net.json"), progress=False)
    assert by_file.flows.group_by("src").agg(pl.col("size").sum())["size"].to_list() == sent
    with pytest.raises(Exception, match=r"traffic\[0\]\.dims.*multiply to 6"):
        run(Scenario.star(4).chakra(TRACES, system=sys_file, dims=[2, 3]), progress=False)
