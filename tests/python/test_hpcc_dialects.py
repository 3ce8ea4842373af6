"""`rdmalab hpcc --dialect` (docs/hpcc-dialects.md): m4's published scenario runs from its
files, detected by its keys, and its FCTs match the fork's published file per size bucket;
the dialects not supported yet say so."""

import importlib.util
import shutil
from pathlib import Path

import pytest

from rdmalab import cli
from rdmalab.runner import detect_hpcc_dialect

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "data" / "m4" / "demo2"


def _bench():
    spec = importlib.util.spec_from_file_location("m4_published", REPO / "bench" / "m4_published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_published_m4_scenario_matches_the_forks_fct_file_per_size_bucket():
    bench = _bench()
    fork = bench.read_fct(DEMO / "fct_published_cut.txt")
    ours, _ = bench.run_demo()
    rows = bench.compare(ours, fork)
    assert [r["flows"] for r in rows] == [102, 29, 41, 92]
    for r in rows:
        # Every flow's standalone FCT is the fork's own number (a closed form of the path).
        assert r["standalone_equal"] == r["flows"], r
        assert abs(r["ratio"] - 1) <= 0.10, r
    # Flows that met no other traffic finish at the fork's nanosecond: 46 of the 102 below 1 kB.
    assert rows[0]["exact"] >= 40, rows[0]


def test_the_dialect_is_detected_and_printed(tmp_path, capsys, monkeypatch):
    assert detect_hpcc_dialect(DEMO / "config.txt") == ("m4", ("ENABLE_PFC", 2))
    work = tmp_path / "demo"
    shutil.copytree(DEMO, work)
    # A reference-dialect run of the m4 file stops at the first m4 key, naming it.
    monkeypatch.chdir(work)
    assert cli.main(["hpcc", "config.txt", "--dialect", "reference", "--quiet"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "config.txt:2: field `ENABLE_PFC`" in err and "--dialect m4" in err


@pytest.mark.parametrize("name", ["conweave", "simai"])
def test_dialects_not_supported_yet_say_so(name, capsys):
    assert cli.main(["hpcc", str(DEMO / "config.txt"), "--dialect", name, "--quiet"]) == cli.EXIT_BAD_INPUT
    assert f"the {name} dialect is not supported yet" in capsys.readouterr().err
