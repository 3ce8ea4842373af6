"""A sweep's results store when things go wrong: the sweep killed mid-run and resumed, a
second sweep started into the same folder, a cell that fails or stalls."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from rdmalab.experiments.driver import run_sweep
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.experiments.sweep import Sweep

RDMALAB = Path(sys.executable).parent / "rdmalab"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_resume_after_the_sweep_is_killed_loses_and_redoes_nothing(tmp_path):
    # Each run takes about half a second, so the sweep is killed with most runs not done.
    f = write(tmp_path, "slow.toml", """
        name = "slow"
        seeds = 5
        [base.topology]
        kind = "fat_tree"
        k = 4
        [[base.traffic]]
        kind = "poisson"
        cdf = "fb_hadoop"
        load = 0.8
        duration = "600us"
    """)
    out = tmp_path / "o"
    cmd = [str(RDMALAB), "sweep", str(f), "--out", str(out), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    runs_dir, deadline = out / "runs", time.time() + 60
    while time.time() < deadline and not list(runs_dir.glob("*.parquet")):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {p.name: p.stat().st_mtime_ns for p in runs_dir.glob("*.parquet")}
    assert 1 <= len(done_before) < 5
    flows_before = {p.name: p.stat().st_mtime_ns for p in (out / "flows").glob("*.parquet")}

    res = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{5 - len(done_before)} ran now, {len(done_before)} were already done" in res.stdout
    after = {p.name: p.stat().st_mtime_ns for p in runs_dir.glob("*.parquet")}
    assert len(after) == 5
    assert all(after[n] == t for n, t in done_before.items())  # finished runs were not redone
    assert all((out / "flows" / n).stat().st_mtime_ns == t for n, t in flows_before.items() if n in done_before)
    runs, flows = load_sweep(out)
    assert (runs["status"] == "ok").all() and sorted(runs["seed"].to_list()) == [1, 2, 3, 4, 5]
    assert flows.group_by("run_id").len()["len"].min() > 100
    assert not list(out.rglob(".*.tmp*"))


def test_a_second_sweep_into_the_folder_leaves_the_files_another_is_writing(tmp_path):
    # Two sweeps into one folder (two batch jobs, `--resume`): the one that starts cleans up
    # temporaries of killed sweeps, and removed the file the other was about to rename into
    # place, whose write then failed and stopped it.
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / "flows").mkdir()
        busy = tmp_path / "flows" / f".abc.parquet.tmp{writer.pid}"
        busy.write_text("being written")
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        left = tmp_path / "flows" / f".def.parquet.tmp{dead.stdout.strip()}"
        left.write_text("left by a killed sweep")
        assert Store(tmp_path).clean_temporaries() == 1
        assert busy.exists() and not left.exists()
    finally:
        writer.kill()
        writer.wait()


def test_a_failed_or_stalled_run_names_the_sweep_file_and_the_cause(tmp_path):
    # The engine names a scenario given as data `<python scenario>`: a sweep's summary said
    # `error in dst=7 seed=1: ValueError: <python scenario>: field ...`, naming no file, and a
    # stalled run's line left out why it stalled (its `stall_cause`).
    (tmp_path / "lossy.txt").write_text("3 1 2\n2\n0 2 100Gbps 0.001ms 1.0\n1 2 100Gbps 0.001ms 0\n")
    f = write(tmp_path, "cells.toml", """
        name = "cells"
        [base.topology]
        kind = "hpcc_file"
        path = "lossy.txt"
        [[base.traffic]]
        kind = "flows"
        flows = [{ src = 0, dst = 1, size = 10000 }]
        [base.fabric]
        lossless = false
        [grid]
        "traffic[0].flows[0].dst" = [1, 7]
    """)
    report = run_sweep(Sweep.from_file(f), tmp_path / "o", LocalExecutor(1), progress=False)
    text = report.table()
    assert "error in dst=7 seed=1: ValueError: cells.toml (this run's scenario): field " \
           "`traffic[0].flows[0].dst`: unknown host 7" in text, text
    assert "stalled in dst=1 seed=1: no payload byte delivered" in text, text
