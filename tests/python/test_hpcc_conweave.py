"""`rdmalab hpcc --dialect conweave` (docs/hpcc-dialects.md, "The conweave dialect"): the
ConWeave artifact's files run unchanged, and its FCT file comes out with its columns, its
port numbering and its standalone FCTs, each checked against the fork's statement."""

import importlib.util
import warnings
from pathlib import Path

import pytest

from rdmalab import cli
from rdmalab.runner import detect_hpcc_dialect

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "data" / "conweave" / "ls128"


def _bench():
    spec = importlib.util.spec_from_file_location("conweave_artifact", REPO / "bench" / "conweave_artifact.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tors(topology: Path) -> dict[int, int]:
    """Each host's ToR, from the artifact's topology file."""
    lines = topology.read_text().split("\n")
    nodes, switches, links = (int(x) for x in lines[0].split()[:3])
    sw = {int(x) for x in lines[1].split()}
    tor = {}
    for line in lines[2:2 + links]:
        a, b = (int(x) for x in line.split()[:2])
        if a not in sw:
            tor[a] = b
        if b not in sw:
            tor[b] = a
    return tor


def _forks_standalone(size: int, same_tor: bool) -> int:
    """The fork's standalone FCT (main program, lines 469-476 and 1466) on the artifact's
    100 Gb/s, 1 us leaf-spine: base RTT = 2 x delay + one 1,000 B payload per hop at 80 ns,
    plus (size + 48 B per packet) at 100 Gb/s, in integer ns."""
    hops = 2 if same_tor else 4
    base_rtt = 2 * hops * 1000 + hops * (1000 * 1_000_000_000 * 8 // 100_000_000_000)
    total = size + ((size - 1) // 1000 + 1) * 48
    return base_rtt + total * 8_000_000_000 // 100_000_000_000


def test_the_artifacts_files_run_unchanged_and_write_its_fct_file(tmp_path):
    bench = _bench()
    work = tmp_path / "ls128"
    bench.prepare(work, 400, irn=False)
    assert detect_hpcc_dialect(work / bench.CONFIGS["conweave"]) == ("conweave", ("FLOW_INPUT_FILE", 4))
    with pytest.warns(UserWarning, match="not written.*VOQ_MON_FILE mix/output/100009/100009_out_voq.txt"):
        fct, _ = _run_here(bench, work, "conweave")
    # FLOW_INPUT_FILE exists and is empty, as the fork leaves it (its logging is `if (0)`).
    assert (work / "mix" / "output" / "100009" / "100009_in.txt").read_text() == ""
    flows = [line.split() for line in (work / bench.FLOW).read_text().splitlines()[1:]]
    assert len(fct) == len(flows) == 400
    # Ports as ScheduleFlowInputs numbers them: 10000 up per source, 100 up per destination.
    sport, dport, expected = {}, {}, {}
    for src, dst, _pg, size, _start in flows:
        s, d = sport.get(src, 10_000), dport.get(dst, 100)
        sport[src], dport[dst] = s + 1, d + 1
        expected[(int(src), int(dst), s, d)] = int(size)
    tor = _tors(work / "config" / "leaf_spine_128_100G_OS2.txt")
    for row in fct:
        sid, did, sp, dp, size, start, f, standalone = (int(x) for x in row)
        assert expected.pop((sid, did, sp, dp)) == size, row
        assert standalone == _forks_standalone(size, tor[sid] == tor[did]), row
        # The propagation there and back bounds every FCT (the standalone FCT does not: it counts a
        # full payload per hop, more than a small flow's packet takes).
        assert f >= (2 if tor[sid] == tor[did] else 4) * 2 * 1000, row
    assert not expected


def _run_here(bench, work, name):
    import os

    cwd = os.getcwd()
    os.chdir(work)
    try:
        from rdmalab.runner import run_hpcc

        _, fct, _ = run_hpcc(bench.CONFIGS[name], progress=False)
        return bench.read_fct(work / fct), fct
    finally:
        os.chdir(cwd)


def test_ecmp_and_conweave_configs_run_the_same_flows(tmp_path):
    bench = _bench()
    work = tmp_path / "ls128"
    bench.prepare(work, 400, irn=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ecmp, _ = _run_here(bench, work, "ecmp")
        cw, _ = _run_here(bench, work, "conweave")
    assert len(ecmp) == len(cw) == 400
    # The two runs differ only in the switches' balancer: the same flows, the same standalone FCTs.
    assert sorted(map(tuple, ecmp[:, [0, 1, 2, 3, 4, 7]].tolist())) == sorted(map(tuple, cw[:, [0, 1, 2, 3, 4, 7]].tolist()))
    assert ecmp[:, 6].tolist() != cw[:, 6].tolist(), "LB_MODE 9 changed no FCT: the balancer did not run"


@pytest.mark.parametrize("edit,key,line_has", [
    (("LB_MODE 9", "LB_MODE 4"), "LB_MODE", "aborts on any other mode"),
    (("CC_MODE 1", "CC_MODE 3"), "CC_MODE", "DCQCN"),
    (("RANDOM_SEED 1", "RANDOM_SEED 1\nACK_HIGH_PRIO 1"), "ACK_HIGH_PRIO", "not read by the ConWeave artifact"),
    (("BUFFER_SIZE 9", "BUFFER_SIZE 0"), "BUFFER_SIZE", "a switch needs a buffer"),
])
def test_what_the_dialect_does_not_model_is_refused_by_name(tmp_path, capsys, monkeypatch, edit, key, line_has):
    bench = _bench()
    work = tmp_path / "ls128"
    bench.prepare(work, 10, irn=False)
    cfg = work / bench.CONFIGS["conweave"]
    cfg.write_text(cfg.read_text().replace(*edit))
    monkeypatch.chdir(work)
    assert cli.main(["hpcc", bench.CONFIGS["conweave"], "--quiet"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"field `{key}`" in err and line_has in err, err


def test_a_folder_of_the_artifacts_runs_runs_from_its_root(tmp_path):
    # `rdmalab hpcc FOLDER` finds run.py's mix/output/ID/config.txt and runs each from the
    # artifact's root, where its paths start (hpcc_batch.workdir).
    from rdmalab import hpcc_batch

    bench = _bench()
    work = tmp_path / "ls128"
    bench.prepare(work, 20, irn=False)
    rows = hpcc_batch.run_folder(hpcc_batch.find_configs(work), workers=1, progress=False)
    assert [(r["status"], r["dialect"], r["flows"]) for r in rows] == [("ok", "conweave", 20)] * 2, rows
    assert (work / "mix" / "output" / "100009" / "100009_out_fct.txt").read_text().count("\n") == 20
