"""The profile-guided build of the engine's runners (`bench/pgo.py`): its training set exists
and is not the benchmark, and a missing or mismatched `llvm-profdata` is a clear error, not a
failed build minutes in. (The build itself takes two release builds: it is not run here.)"""

import os
import stat
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import pgo  # noqa: E402
from run import SCENARIOS  # noqa: E402


#: What the performance page measures the build on, untrained.
MEASURED = {"S1-dcqcn", "S1-hpcc", "scenarios/fat_tree_1k_pfc_cut.toml", "scenarios/fat_tree_1k_permutation.toml"}


def test_the_training_runs_exist_and_leave_out_the_benchmarks():
    for name in pgo.TRAIN_REFERENCE:
        assert name in SCENARIOS, name
    for toml in pgo.TRAIN_NATIVE:
        assert (REPO / "bench" / toml).is_file(), toml
    assert not MEASURED & set(pgo.TRAIN_REFERENCE + pgo.TRAIN_NATIVE)


@pytest.mark.parametrize("text, major", [
    ("rustc 1.95.0\nhost: x86_64-unknown-linux-gnu\nLLVM version: 22.1.2\n", "22"),
    ("Debian LLVM version 14.0.6\n  Optimized build.\n", "14"),
    ("no version here", None),
])
def test_the_llvm_major_version_is_read_from_rustc_and_from_llvm_tools(text, major):
    assert pgo.llvm_major(text) == major


def test_without_a_matching_llvm_profdata_the_error_says_how_to_get_one(tmp_path, monkeypatch):
    # A rustc whose LLVM no installed llvm-profdata matches, and a sysroot without llvm-tools.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rustc"
    fake.write_text("#!/bin/sh\n"
                    'if [ "$1" = "-vV" ]; then printf "host: x86_64-unknown-linux-gnu\\nLLVM version: 999.0.0\\n";'
                    f' else echo {tmp_path}; fi\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SystemExit) as err:
        pgo.find_profdata()
    message = str(err.value)
    assert "LLVM 999" in message and "rustup component add llvm-tools" in message


def test_the_package_is_trained_through_commands_its_command_line_accepts(tmp_path):
    from rdmalab.cli import build_parser

    venv = tmp_path / "venv"
    runs = pgo.training_runs(tmp_path, examples=None, venv=venv)
    assert len(runs) >= len(pgo.TRAIN_NATIVE)
    for name, cmd in runs:
        assert cmd[0] == str(venv / "bin" / "rdmalab"), name
        args = build_parser().parse_args(cmd[1:])  # exits on an option it does not know
        assert args.command in ("hpcc", "run"), name


def test_a_failed_training_run_is_named_with_what_it_printed(tmp_path, monkeypatch):
    monkeypatch.setattr(pgo, "training_runs", lambda work, examples, venv: [("broken", ["sh", "-c", "echo boom >&2; exit 3"])])
    with pytest.raises(SystemExit) as err:
        pgo.train(tmp_path, examples=tmp_path)
    assert "training run broken failed (exit 3)" in str(err.value) and "boom" in str(err.value)
