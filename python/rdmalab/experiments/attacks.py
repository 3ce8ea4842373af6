"""The old home of seed 002's attack experiments: they are `repro.attacks` now, the tenant
shares `tenants` and the share figure `figures.tenants`. Re-exported so that old imports work.
"""

from rdmalab.experiments.figures.tenants import share_bars  # noqa: F401
from rdmalab.experiments.repro.attacks import *  # noqa: F401,F403
from rdmalab.experiments.repro.attacks import attack_experiments  # noqa: F401
from rdmalab.experiments.tenants import (PAYLOAD_FRACTION, case_name, run_label, run_shares,  # noqa: F401
                                         share_of, stop_ps)
