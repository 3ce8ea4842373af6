import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The reference's files: `shared/reference/hpcc` beside the checkout or in any folder above it.
REFERENCE = next((p / "shared" / "reference" / "hpcc" for p in REPO.parents
                  if (p / "shared" / "reference" / "hpcc").is_dir()), REPO.parent / "shared" / "reference" / "hpcc")


@pytest.fixture
def reference_copy(tmp_path):
    """A scratch copy of the ns-3 HPCC reference inputs (their configs write next to themselves)."""
    if not REFERENCE.is_dir():
        pytest.skip(f"reference data not found at {REFERENCE}")
    for name in ["fat.txt", "topology.txt", "trace.txt", "S1_flow.txt", "S2_flow.txt",
                 "S1_dcqcn_config.txt", "S2_dcqcn_config.txt", "S1_hpcc_config.txt", "S2_hpcc_config.txt",
                 "S2_hpcc_fct.txt",
                 "S1_dcqcn_fct.txt", "S2_dcqcn_fct.txt"]:
        shutil.copy(REFERENCE / name, tmp_path / name)
    return tmp_path


def wait_for(cond, what: str, limit_s: float = 90.0, step_s: float = 0.2) -> None:  # noqa: ANN001
    """Polls `cond()` until it holds; fails naming `what` after `limit_s` seconds."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if cond():
            return
        time.sleep(step_s)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_completed_flows(proc: subprocess.Popen, log: Path, limit_s: float = 120.0) -> None:
    """Polls a running `rdmalab run`'s progress bar (its stderr, written to `log`) until it
    counts a completed flow. A signal sent then finds the run simulating with something to
    keep, however loaded the machine (a fixed wait either wastes time or, on a slow machine,
    arrives while the scenario is still being built)."""

    def counted() -> bool:
        text = log.read_text(errors="replace")
        assert proc.poll() is None, f"the run ended before completing a flow: {text[-500:]}"
        done = re.findall(r"\| *(\d+)/\d+ \[", text)
        return bool(done) and int(done[-1]) > 0

    wait_for(counted, f"a completed flow in {log}", limit_s, step_s=0.1)
