import shutil
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
