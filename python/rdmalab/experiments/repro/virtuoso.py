"""Seed 003 (Tian et al., Virtuoso): the paper prints no values for Figs. 5-8, so ours are
set beside closed forms: the FCT of a message split evenly over N 1 Gb/s links
(8 * size * 1048/1000 / (N * 1 Gb/s)), the speed-up N, and the WRs the design posts
(N sub-WRs, one more for a large SEND's notice, one for a small message).
"""

from __future__ import annotations

import polars as pl

from rdmalab.experiments.figures_virtuoso import SIZE, VERB, closed_form_s, message_table, speedup_table

#: Fig. 5's message: 100 GB.
PAPER_BYTES = 100e9
#: Below this a message is one WR (`small_message`'s default, §3.4's 512 KB).
SMALL = 512 * 1024


def compare_paths(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """FCT of the 100 GB message (ours scaled from the simulated size) against the closed
    form, with and without the probe (which does not grow with the size: not scaled)."""
    from rdmalab.experiments.repro import Comparison

    rows = []
    for m in message_table(store).sort("paths").iter_rows(named=True):
        scale = PAPER_BYTES / m["size"]
        data_s = (m["fct_ns"] - m["probe_ns"]) / 1e9 * scale
        want = closed_form_s(PAPER_BYTES, m["paths"])
        rows.append(Comparison(f"{m['paths']} paths", "FCT s (100 GB)", data_s + m["probe_ns"] / 1e9, want))
        rows.append(Comparison(f"{m['paths']} paths", "FCT s w/o probe", data_s, want))
    return rows


def compare_sizes(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Speed-up FCT(1)/FCT(N) per size against N; the probe's share shows at small sizes."""
    from rdmalab.experiments.repro import Comparison

    rows = []
    for r in speedup_table(store).filter(pl.col("paths") > 1).iter_rows(named=True):
        group = f"{r['size'] / 1e6:g} MB, {r['paths']} paths"
        rows.append(Comparison(group, "speed-up", r["speedup"], float(r["paths"])))
        rows.append(Comparison(group, "speed-up w/o probe", r["speedup_data"], float(r["paths"])))
    return rows


def expected_wrs(size: int, verb: str, paths: int) -> int:
    """WRs the design posts for one message: 1 below `small_message`, else one per path and,
    for a SEND, the notice."""
    if size < SMALL:
        return 1
    return paths + (1 if verb == "send" else 0)


def compare_overhead(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """WRs and CQEs per message against what the design implies."""
    from rdmalab.experiments.repro import Comparison

    rows = []
    t = message_table(store).sort(SIZE, VERB, "paths")
    for m in t.iter_rows(named=True):
        size, verb, n = int(m[SIZE]), m[VERB], m["paths"]
        group = f"{verb} {size / 1e6:g} MB {n}p"
        want = expected_wrs(size, verb, n)
        rows.append(Comparison(group, "WRs", float(m["wrs"]), float(want)))
        rows.append(Comparison(group, "CQEs", float(m["cqes"]), float(want)))
    return rows
