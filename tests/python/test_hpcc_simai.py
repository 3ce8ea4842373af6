"""`rdmalab hpcc --dialect simai`: SimAI's config, topology and workload files
(docs/hpcc-dialects.md, "The simai dialect"), and the check against SimAI's published busbw."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from rdmalab.runner import detect_hpcc_dialect, run_hpcc

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "simai" / "ring32"
TOPO = "Rail_Opti_SingleToR_32g_8gps_400Gbps_H100"


def _bench():
    spec = importlib.util.spec_from_file_location("simai_published", REPO / "bench" / "simai_published.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_detected_from_a_key_only_simai_reads():
    assert detect_hpcc_dialect(DATA / "SimAI.conf") == ("simai", ("BW_MON_FILE", 58))


def _copy(tmp_path: Path, extra: str = "") -> Path:
    for f in ("SimAI.conf", TOPO, "microAllReduce_8g.txt"):
        shutil.copy(DATA / f, tmp_path / f)
    (tmp_path / "out").mkdir()
    if extra:
        with open(tmp_path / "SimAI.conf", "a") as f:
            f.write(extra)
    return tmp_path


@pytest.mark.parametrize(("extra", "message"), [
    ("\nTOPOLOGY_FILE t.txt\n", "SimAI.conf:66: field `TOPOLOGY_FILE`: not a key of SimAI's ns-3 backend"),
    ("\nFIXED_WIN 100\n", "SimAI.conf:66: field `FIXED_WIN`: a key of the m4 dialect"),
    ("\nNIC_TOTAL_PAUSE_TIME 3\n", "field `NIC_TOTAL_PAUSE_TIME`: a budget of PFC pauses"),
])
def test_refuses_what_it_does_not_model_by_name(tmp_path, monkeypatch, extra, message):
    monkeypatch.chdir(_copy(tmp_path, extra))
    with pytest.raises(ValueError, match=message):
        run_hpcc("SimAI.conf", progress=False, dialect="simai", topology=TOPO, workload="microAllReduce_8g.txt")


def test_needs_its_topology_and_workload(tmp_path, monkeypatch):
    monkeypatch.chdir(_copy(tmp_path))
    with pytest.raises(ValueError, match="needs SimAI's topology"):
        run_hpcc("SimAI.conf", progress=False, dialect="simai")


def test_ring_allreduces_match_simai_published_busbw():
    """The first two allreduces of SimAI's tutorial (16 and 32 MiB over 8 GPUs on NVLink):
    busbw within 10 % of the published (bench/simai_published.py runs all six)."""
    bench = _bench()
    rows, _ = bench.run(sizes=2)
    assert [s for s, _ in rows] == [16 * 2**20, 32 * 2**20]
    for size, t in rows:
        ratio = bench.busbw_gib(size, t) / bench.PUBLISHED[size // 2**20]
        assert abs(ratio - 1) <= 0.10, (size, t, ratio)
