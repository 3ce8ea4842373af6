"""Chakra traces written from a scenario's workload (docs/chakra.md, "Writing traces"): a
`[[collective]]` list and a SimAI workload written by the engine's writer, read back by the
reader, run to the same collective times; the CLI's `rdmalab chakra export`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import polars as pl
import pytest

import rdmalab
from rdmalab import Scenario, chakra
from rdmalab.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def times(res) -> pl.DataFrame:
    """Each collective's start and end, its groups merged (a SimAI communication is one record,
    its traces' process groups one each)."""
    c = res.collectives.with_columns(pl.col("name").str.replace(r"(#0)+$", ""))
    return c.group_by("name").agg(pl.col("start_ns").min(), pl.col("end_ns").max()).sort("name")


def test_a_collective_list_written_and_read_back_runs_the_same(tmp_path):
    # A repeated ring AllReduce that starts late beside an all-to-all on other hosts.
    s = (Scenario.star(8, rate="100Gbps")
         .collective("g", "allreduce", [1, 0, 2, 3], 400_000, chunk="64KB", repeat=2, start="3us")
         .collective("a", "alltoall", [4, 5, 6, 7], 300_000, chunk="64KB"))
    out = chakra.export(s, tmp_path / "t" / "w")
    assert [f.name for f in out.files] == [f"w.{r}.et" for r in range(8)]
    # The traces number the ranks so that each collective's hosts come in its order.
    assert out.hosts == [1, 0, 2, 3, 4, 5, 6, 7] and out.notes == []
    assert out.traffic["algorithm"] == {"allreduce": "ring", "alltoall": "direct"}
    assert out.traffic["chunk"] == 64_000 and out.traffic["channels"] == 1
    direct, traced = rdmalab.run(s, progress=False), rdmalab.run(out.replay(s), progress=False)
    a, b = times(direct), times(traced)
    assert a["name"].to_list() == ["a", "g", "g#1"] and a.equals(b)
    # Two orders that no numbering of the ranks keeps: refused, naming the later collective.
    s = Scenario.star(4).collective("x", "allgather", [0, 1, 2], 30_000).collective("y", "allgather", [2, 1], 20_000)
    with pytest.raises(ValueError, match=r"collective\[1\]\.ranks.*order contradicts"):
        chakra.export(s, tmp_path / "bad")


def test_the_simai_example_round_trips_on_a_rail_fabric_with_two_spines(tmp_path):
    # examples/simai.toml with its updates of 100 ns made 1 us: every compute time is whole
    # microseconds, as Chakra records them. Eight GPUs on two servers, TP, EP and DP_EP groups;
    # the traces' process groups take SimAI's communicators, so ECMP hashes their QPs alike.
    text = (EXAMPLES / "simai_tiny.txt").read_text().replace("  100\n", "  1000\n")
    (tmp_path / "w.txt").write_text(text)
    toml = (EXAMPLES / "simai.toml").read_text().replace('path = "simai_tiny.txt"', 'path = "w.txt"')
    (tmp_path / "s.toml").write_text(toml)
    s = Scenario.from_toml(tmp_path / "s.toml")
    out = chakra.export(tmp_path / "s.toml", tmp_path / "tr")
    assert len(out.files) == 8 and out.notes == []
    assert out.traffic["algorithm"] == {"allreduce": "ring"} and out.traffic["chunk"] == 256 * 1024
    a, b = times(rdmalab.run(s, progress=False)), times(rdmalab.run(out.replay(s), progress=False))
    assert a.height == 13 and a.equals(b)


def test_compute_that_is_not_whole_microseconds_is_rounded_and_said(tmp_path):
    out = chakra.export(EXAMPLES / "simai.toml", tmp_path / "tr")
    # Five layers' updates of 100 ns: each blocking communication's next compute is 0.1 us over.
    assert out.notes == ["12 compute time(s) of a rank rounded to whole microseconds (Chakra's duration_micros), "
                         "by up to 100 ns"]


def test_the_cli_writes_the_traces_and_prints_the_entry(tmp_path, capsys):
    s = tmp_path / "c.toml"
    s.write_text('[topology]\nkind = "star"\nhosts = 4\n[[collective]]\nname = "x"\nkind = "allgather"\n'
                 'ranks = { hosts = "0..3" }\nsize = "1MiB"\n')
    assert main(["chakra", "export", str(s), "--out", str(tmp_path / "o" / "x")]) == 0
    text = capsys.readouterr().out
    assert "wrote 4 trace file(s)" in text and 'kind = "chakra"' in text and "ranks = [0, 1, 2, 3]" in text
    assert (tmp_path / "o" / "x.3.et").is_file()
    # Nothing to write, and collectives that would need two chunks: errors naming the field.
    s.write_text('[topology]\nkind = "star"\nhosts = 4\n')
    assert main(["chakra", "export", str(s), "--out", str(tmp_path / "y")]) == 2
    assert "nothing to export" in capsys.readouterr().err
    s.write_text('[topology]\nkind = "star"\nhosts = 4\n'
                 '[[collective]]\nname = "x"\nkind = "allgather"\nranks = [0, 1]\nsize = "1MiB"\n'
                 '[[collective]]\nname = "y"\nkind = "allgather"\nranks = [2, 3]\nsize = "1MiB"\nchunk = "64KiB"\n')
    assert main(["chakra", "export", str(s), "--out", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert "c.toml" in err and "collective[1].chunk" in err


def test_the_benchmark_ring_written_as_traces_runs_in_the_same_time_at_64_ranks():
    # bench/chakra_1k.py at 64 ranks (k = 8 fat tree, 4 MiB, DCQCN, MTU 4096): the ring from
    # the traces against the [[collective]] run it came from (1,024 ranks: docs/chakra.md).
    spec = importlib.util.spec_from_file_location("chakra_1k", EXAMPLES.parent / "bench" / "chakra_1k.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = mod.compare(ranks=64, size="4MiB", threads=1)
    assert r["trace_files"] == 64
    assert r["collective"]["time_us"] > 0 and abs(r["ratio"] - 1) <= 0.10
    # One ring, one process group, its QPs opened in the same order: the same run.
    assert r["chakra"]["time_us"] == r["collective"]["time_us"]
    assert r["chakra"]["events"] == r["collective"]["events"]
