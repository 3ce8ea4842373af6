"""The version: `rdmalab.__version__` and `rdmalab --version` give the package's version and
the commit it runs from, and every run records it (the results store's runs table and
sweep.json, `rdmalab run`'s run.json)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

import rdmalab
from rdmalab import _version, cli
from rdmalab.experiments.store import Store
from rdmalab.experiments.sweep import RunSpec

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_names_the_package_version_and_the_commit(capsys):
    v = rdmalab.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\+([0-9a-f]{7,}|unknown)", v), v
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert v.split("+")[0] == pyproject == _version.BASE_VERSION
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"rdmalab {v}"
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git checkout")
    assert v.endswith(f"+{head}")
    assert re.fullmatch(r"[0-9a-f]{7,}|unknown", rdmalab._core.build_commit())


def test_every_run_records_the_version():
    row = Store._run_row(RunSpec("r0", {"seed": 1}, {}, "."), {"status": "ok"}, "sweep")
    assert row["rdmalab_version"] == rdmalab.__version__
    res = rdmalab.run(rdmalab.Scenario.star(2).flow(1, 0, 1000), progress=False)
    assert cli.run_record(res, "t") == {"rdmalab_version": rdmalab.__version__, "title": "t",
                                        "stop_reason": "finished"}
