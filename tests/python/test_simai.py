"""SimAI workloads through Python: Scenario.simai and its TOML round trip,
the shipped example run from Python and from the CLI, and errors that name the field."""

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rdmalab import Scenario, run

RDMALAB = Path(sys.executable).parent / "rdmalab"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKLOAD = EXAMPLES / "simai_tiny.txt"


def test_the_builder_round_trips_through_toml():
    sc = Scenario.star(8).simai(WORKLOAD, ranks={"hosts": "0..7"}, algorithm="double_binary_tree", chunk="256KiB",
                                start="2us")
    assert sc.spec["traffic"] == [{"kind": "simai", "path": str(WORKLOAD), "ranks": {"hosts": "0..7"},
                                   "algorithm": "double_binary_tree", "chunk": "256KiB", "start": "2us"}]
    assert Scenario.from_toml_text(sc.to_toml()).spec == sc.spec


def test_an_iteration_on_a_star_completes_every_transfer():
    # 8 GPUs: TP groups of 2 and EP groups of 2 make 2-rank collectives, DP groups of 4 and
    # DP_EP groups of 2 the weight gradients; every transfer is a row of `flows`.
    res = run(Scenario.star(8).simai(WORKLOAD), progress=False)
    assert res.stop_reason == "finished"
    f = res.flows
    assert f.height > 0 and (f["status"] == "completed").all()
    # Messages of 512 KiB (the default chunk): lm_head's weight-gradient allreduce (2 MiB over
    # 2 DP groups of 4: 6 ring steps of S/4 at 4 ranks, 48), its forward allgather and
    # input-gradient reduce-scatter (1 MiB over 4 TP groups of 2: one step at 2 ranks, 8
    # each) and moe's ALLREDUCE_DP_EP (1 MiB over 4 groups of 2: 2 steps at 2 ranks, 16).
    assert f.filter(pl.col("size") == 512 * 1024).height == 48 + 8 + 8 + 16
    # Compute is serial at each rank: the iteration outlasts its compute (557 us, the forward
    # computes and the backward ones up to the last communication issued).
    assert (f["start_ns"] + f["fct_ns"]).max() > 557_000


def test_the_cli_runs_the_example(tmp_path):
    out = subprocess.run([str(RDMALAB), "run", str(EXAMPLES / "simai.toml"), "--quiet", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    f = pl.read_parquet(tmp_path / "flows.parquet")
    assert f.height > 0 and (f["status"] == "completed").all()


@pytest.mark.parametrize("extra, field, says", [
    ({"algorithm": "tree"}, "traffic[0].algorithm", "unknown value `tree`"),
    ({"ranks": [0, 1, 2]}, "traffic[0].ranks", "all_gpus = 8"),
    ({"channels": 0}, "traffic[0].channels", "at least 1"),
])
def test_bad_input_names_the_field(extra, field, says):
    with pytest.raises(ValueError) as e:
        run(Scenario.star(8).simai(WORKLOAD, **extra), progress=False)
    assert field in str(e.value) and says in str(e.value)


def test_a_bad_row_names_the_workload_line_and_field(tmp_path):
    bad = tmp_path / "w.txt"
    bad.write_text(WORKLOAD.read_text().replace("ALLGATHER      1048576", "ALLGATHER      lots"))
    with pytest.raises(ValueError) as e:
        run(Scenario.star(8).simai(bad), progress=False)
    assert "w.txt:7" in str(e.value) and "fwd_size" in str(e.value)
