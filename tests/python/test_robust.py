"""Robustness through the user's interfaces: PFC deadlocks named with exit status 3, stalled
runs with exit status 4, sweeps that record both and go on.

The deadlock is the ring of `crates/rdmalab/tests/deadlock.rs`: five switches in a ring, a
host on each, every host sending to the host two switches further on, no congestion control,
a small buffer. Cut open (the last ring link removed) the same flows cannot deadlock.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rdmalab
from rdmalab.experiments import load_table, run_sweep
from rdmalab.experiments.executors import LocalExecutor
from rdmalab.experiments.sweep import Sweep

RDMALAB = Path(sys.executable).parent / "rdmalab"
N = 5


def ring_topology(closed: bool = True) -> str:
    """An ns-3 HPCC topology file: hosts 0..N-1, switches N..2N-1, host i on switch N+i."""
    links = [f"{i} {N + i} 100Gbps 0.001ms 0" for i in range(N)]
    links += [f"{N + i} {N + (i + 1) % N} 100Gbps 0.001ms 0" for i in range(N if closed else N - 1)]
    return f"{2 * N} {N} {len(links)}\n" + " ".join(str(N + i) for i in range(N)) + "\n" + "\n".join(links) + "\n"


def write_ring_scenario(tmp: Path, closed: bool = True, extra: str = "") -> Path:
    """A scenario on the ring (or, not `closed`, the line) with both topology files beside it."""
    (tmp / "ring.txt").write_text(ring_topology(True))
    (tmp / "line.txt").write_text(ring_topology(False))
    name = "ring" if closed else "line"
    flows = ", ".join(f"{{ src = {i}, dst = {(i + 2) % N}, size = 5000000 }}" for i in range(N))
    scen = tmp / f"{name}.toml"
    scen.write_text(textwrap.dedent(f"""
        [topology]
        kind = "hpcc_file"
        path = "{name}.txt"
        [[traffic]]
        kind = "flows"
        flows = [{flows}]
        [fabric]
        buffer_mb = 0.25
        ecn = false
        {extra}
    """))
    return scen


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(RDMALAB), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_ring_deadlock_exits_3_naming_the_cycle(tmp_path):
    out = cli("run", str(write_ring_scenario(tmp_path)), "--out", str(tmp_path / "o"), "--quiet")
    assert out.returncode == 3, out.stdout + out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert "PFC deadlock" in last, out.stdout
    # The five clockwise ring ports (switch N+i's port towards N+i+1), priority 3.
    for i in range(N):
        assert f"({N + i}, " in last
    assert "stop reason       pfc_deadlock" in out.stdout
    assert (tmp_path / "o" / "fct.txt").exists(), "outputs are still written"
    # The failure record names the cycle's first hop (its port as ports.parquet numbers it).
    record = json.loads((tmp_path / "o" / "failure.json").read_text())
    assert record["what"] == "pfc_deadlock" and record["class"] == 3 and N <= record["node"] < 2 * N
    assert last.endswith(record["message"].split(": ", 1)[1]) and f"({record['node']}, {record['port'] + 1}, 3)" in last


def test_results_name_the_cycle(tmp_path):
    res = rdmalab.run(write_ring_scenario(tmp_path), progress=False)
    assert res.stop_reason == "pfc_deadlock"
    assert res.counters["deadlocks"] == 1
    cyc = res.cycle()
    assert sorted(n for n, _, _ in cyc) == list(range(N, 2 * N))
    assert {q for _, _, q in cyc} == {3}
    d = res.deadlock.row(0, named=True)
    assert d["formed_ns"] + 1e6 <= d["detected_ns"] <= d["formed_ns"] + 2e6  # timeout 1 ms (+ 1 ms)
    assert "PFC deadlock" in res.summary()


def test_ring_cut_open_completes_with_exit_0(tmp_path):
    out = cli("run", str(write_ring_scenario(tmp_path, closed=False)), "--out", str(tmp_path / "o"), "--quiet")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "flows completed   5 / 5" in out.stdout
    assert "PFC deadlock" not in out.stdout


def test_continue_runs_to_the_stop_time_and_still_exits_3(tmp_path):
    scen = write_ring_scenario(tmp_path, extra='on_deadlock = "continue"')
    scen.write_text('stop_time = "4ms"\n' + scen.read_text())
    res = rdmalab.run(scen, progress=False)
    assert res.stop_reason == "stop_time" and res.counters["deadlocks"] == 1
    out = cli("run", str(scen), "--out", str(tmp_path / "o"), "--quiet")
    assert out.returncode == 3 and "PFC deadlock" in out.stdout.strip().splitlines()[-1]


def test_bad_deadlock_fields_are_named(tmp_path):
    scen = write_ring_scenario(tmp_path, extra='on_deadlock = "pray"')
    with pytest.raises(ValueError, match=r"fabric.on_deadlock"):
        rdmalab.run(scen, progress=False)
    scen = write_ring_scenario(tmp_path, extra='deadlock_timeout = "0ms"')
    with pytest.raises(ValueError, match=r"fabric.deadlock_timeout.*positive"):
        rdmalab.run(scen, progress=False)


def test_a_run_that_cannot_progress_exits_4_with_its_cause(tmp_path):
    # Every packet from host 0 is corrupted and the fabric is lossy: the RTO resends forever.
    (tmp_path / "star.txt").write_text("3 1 2\n2\n0 2 100Gbps 0.001ms 1.0\n1 2 100Gbps 0.001ms 0\n")
    scen = tmp_path / "lost.toml"
    scen.write_text(textwrap.dedent("""
        [topology]
        kind = "hpcc_file"
        path = "star.txt"
        [[traffic]]
        kind = "flows"
        flows = [{ src = 0, dst = 1, size = 10000 }]
        [fabric]
        lossless = false
    """))
    out = cli("run", str(scen), "--out", str(tmp_path / "o"), "--quiet")
    assert out.returncode == 4, out.stdout + out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("rdmalab: stalled:") and "no payload byte delivered" in last


def test_hpcc_drop_in_exits_3_on_a_deadlocked_ring(reference_copy):
    (reference_copy / "ring.txt").write_text(ring_topology())
    flows = [f"{i} {(i + 2) % N} 3 100 5000000 2.0" for i in range(N)]
    (reference_copy / "ring_flow.txt").write_text(f"{N}\n" + "\n".join(flows) + "\n")
    text = (reference_copy / "S2_dcqcn_config.txt").read_text()
    text = (text.replace("topology.txt", "ring.txt").replace("S2_flow.txt", "ring_flow.txt")
            .replace("CC_MODE 1", "CC_MODE 0").replace("BUFFER_SIZE 32", "BUFFER_SIZE 1")
            .replace("ENABLE_QCN 1", "ENABLE_QCN 0"))
    (reference_copy / "ring_config.txt").write_text(text)
    out = cli("hpcc", "ring_config.txt", "--quiet", cwd=reference_copy)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "PFC deadlock" in out.stdout.strip().splitlines()[-1]
    # The config names the reference's own FCT file, which is there: said before it goes.
    assert "FCT_OUTPUT_FILE S2_dcqcn_fct.txt exists and will be overwritten" in out.stderr, out.stderr
    assert "overwritten" in cli("hpcc", "--help").stdout


def test_sweep_records_the_deadlock_per_run_and_goes_on(tmp_path):
    write_ring_scenario(tmp_path)
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(textwrap.dedent(f"""
        name = "ring-or-line"
        [base.topology]
        kind = "hpcc_file"
        path = "ring.txt"
        [[base.traffic]]
        kind = "flows"
        flows = [{", ".join(f"{{ src = {i}, dst = {(i + 2) % N}, size = 2000000 }}" for i in range(N))}]
        [base.fabric]
        buffer_mb = 0.25
        ecn = false
        [grid]
        "topology.path" = ["ring.txt", "line.txt"]
    """))
    report = run_sweep(Sweep.from_file(sweep_file), tmp_path / "out", executor=LocalExecutor(workers=1),
                       progress=False)
    assert report.ok == 2 and report.failed == 0
    runs = rdmalab.experiments.load_sweep(tmp_path / "out")[0].sort("topology.path")
    assert runs["stop_reason"].to_list() == ["finished", "pfc_deadlock"]
    cycles = load_table(tmp_path / "out", "deadlock")
    assert cycles.height == N and cycles["topology.path"].unique().to_list() == ["ring.txt"]
    assert "pfc deadlock in" in report.table()


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("fabric, field, what", [
    ({"buffer_mb": float("nan")}, "fabric.buffer_mb", "not a finite number"),
    ({"buffer_mb": float("inf")}, "fabric.buffer_mb", "not a finite number"),
    ({"mtu": 2**64}, "fabric.mtu", "does not fit in 64 bits"),
    ({"cc_params": {"rate_ai": -(2**70)}}, "fabric.cc_params.rate_ai", "does not fit in 64 bits"),
])
def test_python_numbers_without_a_json_form_name_their_field(fabric, field, what):
    sc = rdmalab.Scenario.star(3).incast([1, 2], 0, 1000).with_fabric(**fabric)
    with pytest.raises(ValueError, match=rf"^<python scenario>: field `{field}`: .*{what}"):
        rdmalab.run(sc, progress=False)


def test_python_flow_of_2_64_names_the_size():
    sc = rdmalab.Scenario.star(3).incast([1, 2], 0, 2**64)
    with pytest.raises(ValueError, match=r"field `traffic\[0\]\.size`: integer `18446744073709551616`"):
        rdmalab.run(sc, progress=False)
    sc = rdmalab.Scenario.star(3).incast([1, 2], 0, 2**64 - 1)
    with pytest.raises(ValueError, match=r"field `traffic\[0\]\.size`: .*larger than the largest flow"):
        rdmalab.run(sc, progress=False)


def test_hypothesis_bad_numbers_anywhere_name_their_field():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    from rdmalab.scenario import check_numbers

    bad = st.one_of(st.sampled_from([float("nan"), float("inf"), float("-inf")]),
                    st.integers(min_value=2**64, max_value=2**80), st.integers(max_value=-(2**63) - 1))
    fine = st.one_of(st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=3), st.booleans(), st.none())
    steps = st.lists(st.one_of(st.sampled_from(["fabric", "size", "flows"]), st.integers(0, 2)), max_size=4)

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(bad, fine, steps)
    def check(value, neighbour, path):
        # Nest the bad value along `path` (a key: a table; an index: a list with fine values
        # before it), and name the field as the engine does: `a.b[1].c`.
        doc, field = value, ""
        for step in reversed(path):
            if isinstance(step, int):
                doc, field = [neighbour] * step + [doc], f"[{step}]{field}"
            else:
                doc, field = {"ok": neighbour, step: doc}, f".{step}{field}"
        spec = {"top": doc}
        with pytest.raises(ValueError, match="^<python scenario>: field `" + re.escape("top" + field) + "`: "):
            check_numbers(spec)

    check()


def test_empty_hpcc_config_says_so(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    out = cli("hpcc", "empty.txt", "--quiet", cwd=tmp_path)
    assert out.returncode == 2
    assert "empty.txt: field `TOPOLOGY_FILE`: the config file is empty" in out.stderr, out.stderr


def test_warnings_are_printed_and_the_run_goes_on(tmp_path):
    # A duplicated link (a parallel link, used by ECMP) and a stop time before every flow.
    (tmp_path / "dup.txt").write_text("4 2 4\n2 3\n0 2 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n"
                                      "2 3 100Gbps 0.001ms 0\n3 2 100Gbps 0.001ms 0\n")
    scen = tmp_path / "dup.toml"
    scen.write_text(textwrap.dedent("""
        stop_time = "1us"
        [topology]
        kind = "hpcc_file"
        path = "dup.txt"
        [[traffic]]
        kind = "flows"
        flows = [{ src = 0, dst = 1, size = 1000, start = "2us" }]
    """))
    with pytest.warns(rdmalab.RdmalabWarning) as caught:
        res = rdmalab.run(scen, progress=False)
    texts = [str(w.message) for w in caught]
    assert any("nodes 2 and 3 are joined by 2 links" in t and "parallel equal-cost" in t for t in texts), texts
    assert any("no flow" in t for t in texts), texts
    assert res.counters["flows_completed"] == 0
    out = cli("run", str(scen), "--out", str(tmp_path / "o"), "--quiet")
    assert out.returncode == 0
    assert out.stderr.count("rdmalab: warning:") == 2, out.stderr


# -- processes -----------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaps has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _start_long_sweep(tmp_path: Path, seeds: list[int], *executor: str) -> subprocess.Popen:
    """A sweep driver whose runs take minutes: per seed, sixteen 10 GB flows on a k=4 fat
    tree, built at once and simulated with the GIL released."""
    sweep = tmp_path / "long.toml"
    sweep.write_text(textwrap.dedent(f"""
        name = "long"
        [base.topology]
        kind = "fat_tree"
        k = 4
        [[base.traffic]]
        kind = "permutation"
        size = 10000000000
        [grid]
        seed = {seeds}
    """))
    return subprocess.Popen([str(RDMALAB), "sweep", str(sweep), "--out", str(tmp_path / "o"), *executor, "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.serial  # a signal after a fixed wait: run alone
def test_sweep_workers_die_with_a_killed_driver(tmp_path):
    import signal
    import time

    driver = _start_long_sweep(tmp_path, [1, 2, 3, 4], "--workers", "2")
    try:
        deadline = time.time() + 60
        kids: list[int] = []
        while time.time() < deadline and len(kids) < 3:  # two workers and the resource tracker
            time.sleep(0.5)
            kids = _children(driver.pid)
        assert len(kids) >= 3, f"the sweep did not start its workers: {kids}"
        time.sleep(2.0)  # the workers are simulating
        assert all(_alive(k) for k in kids)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.time() + 30  # they poll every 0.2 s; the machine may be loaded
        while time.time() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.2)
        assert not any(_alive(k) for k in kids), f"orphans after kill -9: {[k for k in kids if _alive(k)]}"
    finally:
        if driver.poll() is None:
            driver.kill()
        for k in _children(driver.pid):
            os.kill(k, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    out, stack = [], [pid]
    while stack:
        kids = _children(stack.pop())
        out += kids
        stack += kids
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.serial  # a signal after a fixed wait: run alone
def test_a_local_ray_instance_dies_with_a_killed_driver(tmp_path):
    pytest.importorskip("ray")
    import signal
    import time

    driver = _start_long_sweep(tmp_path, [1, 2], "--ray")
    seen: set[int] = set()
    try:
        deadline = time.time() + 120
        tasks: list[int] = []
        while time.time() < deadline and not tasks:  # Ray is up and runs the sweep's tasks
            time.sleep(0.5)
            kids = _descendants(driver.pid)
            seen.update(kids)
            tasks = [k for k in kids if Path(f"/proc/{k}/cmdline").read_bytes().startswith(b"ray::execute")]
        assert tasks, "the sweep's Ray tasks did not start"
        time.sleep(1.0)
        seen.update(_descendants(driver.pid))
        assert len(seen) >= 4, seen  # GCS, raylet, agents, tasks
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        # Without the reaper, Ray's agents wait a minute or more on the dead GCS.
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(k) for k in seen):
            time.sleep(0.2)
        left = {k: Path(f"/proc/{k}/cmdline").read_bytes()[:60] for k in seen if _alive(k)}
        assert not left, f"Ray processes left after kill -9 of the driver: {left}"
    finally:
        if driver.poll() is None:
            driver.kill()
        for k in seen:
            if _alive(k):
                os.kill(k, signal.SIGKILL)


def test_ring_deadlock_is_named_alike_for_any_thread_count(tmp_path):
    # The cycle crosses every partition's cut: the parallel engine finds it from the merged
    # wait-for graph, at the same time and with the same hops as one partition.
    scen = write_ring_scenario(tmp_path)
    seen = {}
    for threads in ("1", "2", "4"):
        out = cli("run", str(scen), "--out", str(tmp_path / threads), "--quiet", "--threads", threads)
        assert out.returncode == 3, out.stdout + out.stderr
        last = out.stdout.strip().splitlines()[-1]
        assert "PFC deadlock" in last
        seen[threads] = (last, (tmp_path / threads / "fct.txt").read_text(), (tmp_path / threads / "pfc.txt").read_text())
    assert seen["1"] == seen["2"] == seen["4"]
