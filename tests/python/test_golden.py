"""Golden snapshots: slowdown tables of fixed runs, kept in tests/python/golden/.

A change in the engine that moves any of these numbers fails here, so physics changes are
made on purpose. After an intended change, regenerate with
`RDMALAB_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/python/test_golden.py` and explain
the change in the commit.
"""

import os
from pathlib import Path

import pytest

import rdmalab
from rdmalab import Scenario, run

GOLDEN = Path(__file__).parent / "golden"


def table_text(results) -> str:
    rows = ["bucket,flows,p50,p95,p99,mean"]
    for r in results.slowdown_table().iter_rows(named=True):
        rows.append(f"{r['bucket']},{r['flows']},{r['p50']:.6f},{r['p95']:.6f},{r['p99']:.6f},{r['mean']:.6f}")
    c = results.counters
    rows.append(f"# drops={c['drops']} pauses={c['pauses']} ecn_marks={c['ecn_marks']}")
    return "\n".join(rows) + "\n"


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.csv"
    if os.environ.get("RDMALAB_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with RDMALAB_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{name} changed:\n{text}\nwas:\n{path.read_text()}"


@pytest.mark.parametrize("config", ["S2_dcqcn_config.txt", "S2_hpcc_config.txt"])
def test_reference_s2_slowdown_tables(reference_copy, monkeypatch, config):
    monkeypatch.chdir(reference_copy)
    results, _, _ = rdmalab.run_hpcc(config, progress=False)
    check(config.replace("_config.txt", ""), table_text(results))


@pytest.mark.parametrize("cc", ["none", "dcqcn", "hpcc"])
def test_native_fat_tree_slowdown_tables(cc):
    scenario = (Scenario.fat_tree(4).poisson("web_search", load=0.5, duration="2ms")
                .with_fabric(cc=cc).with_seed(11))
    check(f"native_k4_websearch_{cc}", table_text(run(scenario, progress=False)))
