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
