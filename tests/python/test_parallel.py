"""The parallel engine through Python and the command line: `threads=N` and
`--threads N` give the same FCT and PFC files, samples and trace for every N; what it cannot
split is refused with a clear error. The engine's own tests are crates/rdmalab/tests/parallel.rs."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rdmalab import Scenario, run

RDMALAB = Path(sys.executable).parent / "rdmalab"

FAT_TREE = """
seed = 9
[topology]
kind = "fat_tree"
k = 4
[[traffic]]
kind = "poisson"
cdf = "web_search"
load = 0.5
duration = "300us"
[[traffic]]
kind = "incast"
senders = [4, 8, 12, 13]
receiver = 0
size = 300000
start = "50us"
[fabric]
cc = "dcqcn"
buffer_mb = 1
"""


def files(results, folder: Path, name: str) -> tuple[bytes, bytes]:
    results.write_fct(folder / f"{name}.fct")
    results.write_pfc(folder / f"{name}.pfc")
    return (folder / f"{name}.fct").read_bytes(), (folder / f"{name}.pfc").read_bytes()


def test_run_gives_the_same_files_for_any_thread_count(tmp_path):
    path = tmp_path / "ft.toml"
    path.write_text(FAT_TREE)
    one = files(run(path, progress=False, threads=1), tmp_path, "one")
    assert len(one[0].splitlines()) > 10 and len(one[1].splitlines()) > 0
    for n in (2, 4):
        assert files(run(path, progress=False, threads=n), tmp_path, f"t{n}") == one, f"{n} threads"


def test_the_scenario_and_the_command_line_take_threads(tmp_path):
    (tmp_path / "ft.toml").write_text("threads = 2\n" + FAT_TREE)
    (tmp_path / "ft1.toml").write_text(FAT_TREE)
    for args, out in ((["ft.toml"], "a"), (["ft1.toml", "--threads", "3"], "b"), (["ft1.toml", "--threads", "1"], "c")):
        done = subprocess.run([str(RDMALAB), "run", *args, "--quiet", "--out", out], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    fct = [(tmp_path / o / "fct.txt").read_bytes() for o in "abc"]
    assert fct[0] == fct[1] == fct[2]
    bad = subprocess.run([str(RDMALAB), "run", "ft1.toml", "--threads", "0", "--quiet"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert bad.returncode == 2 and "--threads" in bad.stderr


def test_samples_and_the_trace_are_the_same_for_any_thread_count(tmp_path):
    path = tmp_path / "ft.toml"
    path.write_text(FAT_TREE.replace("[fabric]", '[trace]\nstart = "50us"\nend = "60us"\n[fabric]')
                    + 'queue_sample_interval = "500ns"\nrate_sample_interval = "5us"\nlink_sample_interval = "2us"\n')
    tables = {}
    for n in (1, 2, 4):
        res = run(path, progress=False, threads=n, trace_path=tmp_path / f"trace{n}.parquet")
        tables[n] = (res.queue_samples, res.rates, res.links, res.trace.collect())
    one = tables[1]
    assert all(t.height > 100 for t in one), [t.height for t in one]
    assert one[1]["flow"].n_unique() > 10  # rows for the flows, each from its start
    for n in (2, 4):
        for a, b in zip(one, tables[n]):
            assert a.equals(b), f"{n} threads"


def test_what_is_not_split_yet_is_refused_by_name(tmp_path):
    path = tmp_path / "apps.toml"
    drum = '[host]\nmechanism = "drum"\n[drum]\ncontrol = "out_of_band"\n'
    path.write_text(FAT_TREE + drum + "[[app]]\nhost = 0\ndst = 6\nsize = 1024\nwr_num = 1\ntotal_bytes = 4096\n")
    with pytest.raises(ValueError, match="--threads > 1 does not support DRUM's network-wide control"):
        run(path, progress=False, threads=2)


def test_a_sweep_shares_the_cores_between_workers_and_threads():
    from rdmalab.experiments.executors import LocalExecutor

    tasks = [{"scenario": {"threads": 4}}, {"scenario": {}}]
    assert LocalExecutor(8).pool_size(tasks) == 8  # --workers given: as given
    auto = LocalExecutor()
    auto.workers = 8
    assert auto.pool_size(tasks) == 2 and auto.pool_size([{"scenario": {}}]) == 8


def test_auto_takes_the_cores_and_falls_back_where_the_engine_refuses(tmp_path):
    """`threads="auto"` (`--threads auto`): in the origin order, so the files equal `threads=1`
    whatever the machine and the choice; up to the machine's cores, capped by the partitions,
    where the cut is expected to pay, else one thread (this small fat tree ran at
    0.39x one thread's speed when cut; the estimate's own test is in tests/it/parallel.rs); a
    scenario the parallel engine refuses runs on the sequential engine instead of failing."""
    path = tmp_path / "ft.toml"
    path.write_text(FAT_TREE)
    auto = run(path, progress=False, threads="auto")
    assert auto.extra["engine"].startswith("sequential, origin order"), auto.extra["engine"]
    assert files(auto, tmp_path, "auto") == files(run(path, progress=False, threads=1), tmp_path, "one")
    # Links of zero delay leave no lookahead to cut at: the parallel engine refuses them.
    instant = tmp_path / "instant.toml"
    instant.write_text(textwrap.dedent("""
        [topology]
        kind = "fat_tree"
        k = 4
        delay = "0us"
        [[traffic]]
        kind = "incast"
        senders = [4, 8, 12]
        receiver = 0
        size = 30000
        """))
    fallback = run(instant, progress=False, threads="auto")
    assert fallback.extra["engine"] == "sequential, the reference's event order"
    assert files(fallback, tmp_path, "fb") == files(run(instant, progress=False), tmp_path, "seq")
    with pytest.raises(ValueError, match="threads must be"):
        run(path, progress=False, threads=0)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="auto cuts only on a machine with two cores or more")
def test_auto_runs_on_one_thread_where_the_partitions_would_not_fit_in_memory(tmp_path, monkeypatch):
    """Each partition is a copy of the fabric (at a million hosts, two need 16.5 GB where one
    thread needs 9.8): `auto` measures the first copy and, where the memory available would
    not hold the others, runs on one thread in the origin order (the files the cut would give)
    and says why in a warning. `--threads 2` is built as asked."""
    import warnings

    from rdmalab import _core
    from rdmalab.runner import RdmalabWarning

    scenario = str(Path(__file__).parents[2] / "bench/scenarios/fat_tree_1k_fbhadoop.toml")
    assert _core.Simulation.from_toml_file(scenario, 0).engine().startswith("parallel: 2 partitions")
    monkeypatch.setenv("RDMALAB_MEMORY_AVAILABLE", str(10**6))  # 1 MB: no second copy fits
    squeezed = _core.Simulation.from_toml_file(scenario, 0)
    assert squeezed.engine() == "sequential, origin order (--threads 1)"
    why = squeezed.warnings()[0]
    assert "2 partitions would need about" in why and "1 MB are available (RDMALAB_MEMORY_AVAILABLE)" in why
    assert _core.Simulation.from_toml_file(scenario, 2).engine().startswith("parallel: 2 partitions")
    # Through `run`, a scenario `auto` does not cut gets no such warning; one it would cut does.
    small = tmp_path / "ft.toml"
    small.write_text(FAT_TREE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(small, progress=False, threads="auto")
    assert not any("would need about" in str(w.message) for w in caught)  # this one is not cut at all
    with pytest.warns(RdmalabWarning, match="would need about"):
        sim = _core.Simulation.from_toml_file(scenario, 0)
        from rdmalab.runner import warn_scenario
        warn_scenario(sim)


# Every table and the summary are the same for 1, 2 and 4 threads, in scenarios
# that use traffic classes, closed-loop applications under DRUM (applications only, ending at
# the stop time), samples, and a run that stalls.
CLASSES = FAT_TREE.replace("load = 0.5", "load = 0.5\npg = 3").replace("start = \"50us\"", "start = \"50us\"\npg = 1") + """
queue_sample_interval = "2us"
rate_sample_interval = "10us"
link_sample_interval = "5us"
[[fabric.classes]]
pg = 1
scheduler = "strict"
[[fabric.classes]]
pg = 3
weight = 1
ecn_kmin = 20000
ecn_kmax = 100000
"""
DRUM_APPS_ONLY = """
stop_time = "400us"
[topology]
kind = "fat_tree"
k = 4
[host]
mechanism = "drum"
[drum]
period = "50us"
control = "local"
[[app]]
host = 0
dst = 15
count = 2
size = 1024
wr_num = [1, 8]
think = "1us"
[[app]]
host = 9
dst = 1
size = 4096
wr_num = 4
"""
STALLS = """
[topology]
kind = "fat_tree"
k = 4
[[traffic]]
kind = "incast"
senders = [4, 5, 6, 7, 8, 9, 10, 11]
receiver = 0
size = 200000
[fabric]
cc = "dcqcn"
buffer_mb = 0.2
lossless = false
rto = "none"
link_sample_interval = "10ms"
"""


def everything(path: Path, threads: int) -> tuple[dict, str, str]:
    res = run(path, progress=False, threads=threads)
    assert res.extra["engine"].startswith("parallel" if threads > 1 else "sequential, origin order")
    # The events counter may differ by a few (each partition admits flows), and the rate is wall time.
    summary = "\n".join(line for line in res.summary().splitlines() if not line.startswith("events "))
    return res.tables(), summary, res.stop_reason


@pytest.mark.parametrize("name,text,stop", [("classes", CLASSES, "finished"),
                                            ("drum", DRUM_APPS_ONLY, "stop_time"),
                                            ("stalls", STALLS, "stalled")])
def test_every_table_and_the_summary_are_the_same_for_any_thread_count(tmp_path, name, text, stop):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    tables, summary, reason = everything(path, 1)
    assert reason == stop, summary
    expected = {"classes": {"classes", "queues", "rates", "links"}, "drum": {"apps", "drum", "wqes"},
                "stalls": {"links"}}[name]
    assert expected <= set(tables), sorted(tables)
    for n in (2, 4):
        tables_n, summary_n, reason_n = everything(path, n)
        assert reason_n == reason and summary_n == summary, f"{name}, {n} threads:\n{summary}\n---\n{summary_n}"
        assert sorted(tables_n) == sorted(tables)
        for key, table in tables.items():
            assert table.equals(tables_n[key]), f"{name}, {n} threads: table {key} differs"
    if name == "drum":
        assert "simulated time    400.000 us  (the stop time)" in summary
    if name == "classes":
        marks = tables["classes"]["ecn_marks"].sum()
        assert marks > 0 and f"ECN marks         {marks}" in summary


def command_line_files(path: Path, threads: int, out: Path) -> tuple[dict[str, bytes], str]:
    """What `rdmalab run --threads N` writes, byte for byte, and its summary: every file but
    the PDFs (their CreationDate is the wall clock); the summary less the lines that differ by
    design (`events`: each partition admits flows, and its rate is wall time; `engine:`; the
    `wrote ... in FOLDER` line names the folder)."""
    done = subprocess.run([str(RDMALAB), "run", str(path), "--threads", str(threads), "--out", str(out), "--quiet"],
                          capture_output=True, text=True, cwd=path.parent)
    assert done.returncode in (0, 4), done.stderr  # 4: stalled, as one case is
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix != ".pdf"}
    keep = ("events ", "engine: ", "wrote ")
    summary = "\n".join(line for line in done.stdout.splitlines() if not line.startswith(keep))
    return files, summary


@pytest.mark.parametrize("name,text", [("classes", CLASSES + "[trace]\nnodes = [0, 4]\n"), ("drum", DRUM_APPS_ONLY),
                                       ("stalls", STALLS)])
def test_every_file_the_command_line_writes_is_the_same_for_any_thread_count(tmp_path, name, text):
    """Through the door users take: the files of `rdmalab run` (FCT and PFC
    text, every Parquet table, the trace, the figures' PNGs) and its summary are the same
    bytes with 1, 2 and 4 threads."""
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    one, summary = command_line_files(path, 1, tmp_path / "t1")
    assert {"fct.txt", "pfc.txt", "flows.parquet", "ports.parquet"} <= set(one), sorted(one)
    for n in (2, 4):
        many, summary_n = command_line_files(path, n, tmp_path / f"t{n}")
        assert sorted(many) == sorted(one), f"{name}, {n} threads"
        differ = [f for f in one if one[f] != many[f]]
        assert not differ, f"{name}, {n} threads: {differ} differ"
        assert summary_n == summary, f"{name}, {n} threads:\n{summary}\n---\n{summary_n}"
