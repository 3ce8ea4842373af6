"""Paper experiments: each a sweep file, a figure recipe and the published numbers to compare.

    rdmalab repro list
    rdmalab repro run hpcc-fb-hadoop [--quick] [--out DIR] [--workers N | --ray [ADDR]]

Each paper's module (hpcc, dcqcn, multipath, blitz, attacks, virtuoso, drum_fabric,
load_balancing, host_vs_switch, collectives, collectives_simai, chakra, uec_vs_roce, reps_paper) holds its
comparisons and figures and exports its `EXPERIMENTS`; this package only collects them. Add an
experiment by shipping its sweep TOML in this folder and listing an `Experiment` in its paper's
module (`repro.base` has the vocabulary); `compare` turns the stored results into rows of
(ours, theirs).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rdmalab.experiments.repro import (attacks, blitz, chakra, collectives, collectives_simai, dcqcn, drum_fabric,
                                       drum_solver, host_vs_switch, hpcc, load_balancing, multipath, reps_paper,
                                       uec_vs_roce, virtuoso)
from rdmalab.experiments.repro.base import HERE, Comparison, Experiment  # noqa: F401 (re-exported)
from rdmalab.experiments.repro.blitz import BLITZ_EXPERIMENTS  # noqa: F401 (re-exported)
from rdmalab.experiments.repro.dcqcn import (BOTTLENECK_GBPS, DATA_HEADER_BYTES,  # noqa: F401 (re-exported)
                                             compare_convergence, converged_throughputs, convergence_figure, jain,
                                             payload_fraction)
from rdmalab.experiments.repro.hpcc import (compare_hpcc, hpcc_reference, hpcc_reference_figure,  # noqa: F401
                                            hpcc_reference_flows)
from rdmalab.experiments.store import Store, load_sweep

#: The paper modules, and every experiment of `rdmalab repro` by name, in the order `repro list` prints them.
PAPERS = (hpcc, dcqcn, multipath, blitz, attacks, virtuoso, drum_fabric, drum_solver, load_balancing, host_vs_switch,
          collectives, collectives_simai, chakra, uec_vs_roce, reps_paper)
REGISTRY: dict[str, Experiment] = {e.name: e for paper in PAPERS for e in paper.EXPERIMENTS}


def get(name: str) -> Experiment:
    """The experiment called `name`; ValueError listing the known ones otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment `{name}` (known: {', '.join(REGISTRY)})")
    return REGISTRY[name]


def comparison_table(exp: Experiment, sweep_dir: str | Path) -> str:
    """Our numbers beside theirs, as printed by `rdmalab repro run`."""
    runs, flows = load_sweep(sweep_dir, exp.flow_columns)
    flows = flows.filter(pl.col("run_id").is_in(runs.filter(pl.col("status") == "ok")["run_id"].implode()))
    # Runs of long flows may complete none and still have numbers (e.g. tenant shares).
    ok = runs.filter(pl.col("status") == "ok").height if runs.height else 0
    rows = exp.compare(runs, flows, Store(sweep_dir)) if ok else []
    lines = rows_table(exp, rows)
    if exp.report is not None and ok:
        lines += ["", exp.report(runs, flows, Store(sweep_dir))]
    return "\n".join(lines)


def rows_table(exp: Experiment, rows: list[Comparison]) -> list[str]:
    """The header and the rows of a comparison, one line each."""
    width = max([22] + [len(c.group) + 1 for c in rows])
    head = f"{'':<{width}}{'metric':<22}{'ours':>10}{'theirs':>10}{'ratio':>8}"
    lines = [f"{exp.title}", f"  paper:  {exp.citation}", f"  theirs: {exp.theirs}", "", head, "-" * len(head)]
    return lines + ([c.row(width) for c in rows] or ["(no successful runs to compare)"])
