"""A failed run keeps what it measured (docs/outputs.md, "When a run fails"): a lossless
incast whose switch keeps no PFC headroom (`fabric.pfc_headroom_kb = 0`) drops packets and
fails its lossless check; `rdmalab run` still writes the summary, every table and
`failure.json` and exits 5, and `rdmalab.run` raises `RunFailed` carrying the same results.
The first drop the record names is the trace's first `drop` event, and the message's count is
the counters' drops."""

import json
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from rdmalab import RdmalabWarning, RunFailed, run
from rdmalab.cli import EXIT_FAILED, EXIT_TERMINATED, main

from conftest import wait_for_completed_flows

TOML = """
[topology]
kind = "star"
hosts = 5
rate = "100Gbps"
delay = "1us"

[[traffic]]
kind = "incast"
senders = [1, 2, 3, 4]
receiver = 0
size = 200000

[fabric]
cc = "none"
buffer_mb = 0.25
pfc_headroom_kb = 0
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "noheadroom.toml"
    path.write_text(TOML)
    return path


def test_python_raises_with_the_results_and_the_first_drop(scenario, tmp_path):
    # 2 x 12,500 bytes of round trip, 3 x 1,048-byte frames and the 64-byte PAUSE: 28,208 bytes.
    with pytest.warns(RdmalabWarning, match="0 bytes of PFC headroom, less than the 28208 bytes"):
        with pytest.raises(RunFailed) as caught:
            run(scenario.read_text() + "\n[trace]\n", progress=False, threads=1, trace_path=tmp_path / "t.parquet")
    err = caught.value
    res, record = err.results, err.record
    drops = res.counters["drops"]
    assert drops > 0 and res.counters["pauses"] > 0
    assert re.match(rf"invariant violated: {drops} packets dropped in lossless mode; the first at switch "
                    rf"{record['node']} ingress port {record['port']} class 3 at ", str(err))
    assert record["what"] == "lossless_drop" and record["class"] == 3
    # Where and when, as the per-packet trace saw it.
    first = res.trace.filter(pl.col("event") == "drop").sort("time_ps").collect().row(0, named=True)
    assert (record["node"], record["port"], record["time_ps"]) == (first["node"], first["port"], first["time_ps"])
    assert record["counters"]["drops"] == drops and record["end_time_ps"] == res.counters["end_time_ps"]
    # Every table up to that moment: go-back-N repaired the losses, so each flow completed.
    assert res.flows.height == 4 and res.ports.height > 0 and res.pfc.height > 0


def test_cli_writes_summary_tables_and_record_and_agrees_with_python(scenario, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(scenario), "--out", str(out), "--quiet", "--threads", "1"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "rdmalab: run failed: invariant violated:" in err
    for name in ("summary.txt", "fct.txt", "pfc.txt", "flows.parquet", "ports.parquet", "pfc.parquet",
                 "failure.json"):
        assert (out / name).exists(), name
    record = json.loads((out / "failure.json").read_text())
    assert "packets dropped in lossless mode" in (out / "summary.txt").read_text()
    assert len((out / "fct.txt").read_text().splitlines()) == 4
    with pytest.raises(RunFailed) as caught:
        run(scenario, progress=False, threads=1)
    assert caught.value.record == record, "CLI and Python report the same numbers"
    assert pl.read_parquet(out / "flows.parquet").equals(caught.value.results.flows)


def test_a_run_with_its_headroom_loses_nothing(scenario):
    res = run(scenario.read_text().replace("pfc_headroom_kb = 0\n", ""), progress=False, threads=1)
    assert res.counters["drops"] == 0 and res.counters["pauses"] > 0 and res.flows.height == 4


def test_a_stalled_run_writes_its_record_too(tmp_path):
    # Lossy, no retransmission timeout: a lost tail is never repaired and the run stalls.
    path = tmp_path / "stalls.toml"
    path.write_text(TOML.replace("pfc_headroom_kb = 0", 'lossless = false\nrto = "none"')
                    .replace("buffer_mb = 0.25", "buffer_mb = 0.1"))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--quiet", "--threads", "1"]) == 4
    record = json.loads((out / "failure.json").read_text())
    summary = (out / "summary.txt").read_text()
    assert record["what"] == "stalled" and record["stop_reason"] == "stalled"
    assert record["message"].startswith("stalled: ") and record["message"][len("stalled: "):] in summary
    assert record["node"] is None and record["time_ps"] == record["end_time_ps"] > 0
    assert (out / "flows.parquet").exists() and (out / "ports.parquet").exists()


@pytest.mark.serial  # a signal to a running simulation: run alone
def test_sigterm_stops_the_run_and_keeps_what_it_measured(tmp_path):
    # A batch scheduler's time limit sends SIGTERM: the run stops as at Ctrl-C, writes every
    # table, the flows completed so far and failure.json, and exits 143 (128 + SIGTERM).
    scen = tmp_path / "long.toml"
    scen.write_text(textwrap.dedent("""
        [topology]
        kind = "fat_tree"
        k = 8
        [[traffic]]
        kind = "poisson"
        cdf = "web_search"
        load = 0.6
        duration = "50ms"
        transport = "uet"
        [fabric]
        lossless = false
        path_selection = "reps"
        [fabric.trimming]
        threshold_kb = 50
    """))
    out = tmp_path / "out"
    rdmalab = Path(sys.executable).parent / "rdmalab"
    log = tmp_path / "progress.txt"
    with open(log, "w") as bar:
        proc = subprocess.Popen([str(rdmalab), "run", str(scen), "--out", str(out), "--threads", "1"],
                                stdout=subprocess.PIPE, stderr=bar, text=True)
    wait_for_completed_flows(proc, log)  # simulating, with a flow to keep
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == EXIT_TERMINATED, log.read_text()[-2000:]
    record = json.loads((out / "failure.json").read_text())
    assert record["what"] == "interrupted" and record["message"] == "interrupted (SIGTERM)"
    assert record["stop_reason"] == "interrupted" and record["end_time_ps"] > 0
    assert json.loads((out / "run.json").read_text())["stop_reason"] == "interrupted"
    assert (out / "summary.txt").exists() and (out / "ports.parquet").exists()
    assert len((out / "fct.txt").read_text().splitlines()) > 0, "flows completed before SIGTERM are written"
