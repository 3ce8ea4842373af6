"""Every bench script finds the reference simulators' files by one rule (`bench/run.py`'s
`reference_dir`), the one the Rust tests follow: `$RDMALAB_REFERENCE/hpcc` when the variable
is set, else `shared/reference/hpcc` beside the checkout."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ("run", "identity", "threads", "validate", "cli_vs_engine", "pgo")


def references(env_value: str | None) -> dict[str, str]:
    """Each script's REFERENCE, imported in a fresh interpreter under `env_value`."""
    env = {k: v for k, v in os.environ.items() if k != "RDMALAB_REFERENCE"}
    if env_value is not None:
        env["RDMALAB_REFERENCE"] = env_value
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r})\n"
            f"for m in {SCRIPTS!r}:\n    print(m, __import__(m).REFERENCE)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_every_bench_script_reads_rdmalab_reference(tmp_path):
    assert references(str(tmp_path)) == {m: str(tmp_path / "hpcc") for m in SCRIPTS}


def test_without_the_variable_every_script_finds_the_same_folder():
    found = set(references(None).values())
    assert len(found) == 1, found
    beside = REPO.parent / "shared" / "reference" / "hpcc"
    if beside.is_dir():  # the Rust tests' default
        assert found == {str(beside)}
