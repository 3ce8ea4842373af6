"""Seed 003 (Tian et al., Virtuoso): the paper prints no values for Figs. 5-8, so ours are
set beside closed forms: the FCT of a message split evenly over N 1 Gb/s links
(8 * size * 1048/1000 / (N * 1 Gb/s)), the speed-up N, and the WRs the design posts
(N sub-WRs, one more for a large SEND's notice, one for a small message). Table 2 (the
lossy WR size search) has numbers: ours beside them, the buffer fitted at one path. Fig. 7
(mice) has none: ours beside a mouse alone on its link.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import polars as pl

from rdmalab.experiments.figures.virtuoso import (SIZE, TABLE2, VERB, chunk_table, closed_form_s, ingress_bound,
                                                  message_table, mice_table, mouse_alone_s, mouse_behind_pfc_s,
                                                  speedup_table)
from rdmalab.experiments.repro.base import Comparison, Experiment

#: Fig. 5's message: 100 GB.
PAPER_BYTES = 100e9
#: Below this a message is one WR (`small_message`'s default, §3.4's 512 KB).
SMALL = 512 * 1024


def compare_paths(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """FCT of the 100 GB message (ours scaled from the simulated size) against the closed
    form, with and without the probe (which does not grow with the size: not scaled)."""
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
    rows = []
    t = message_table(store).sort(SIZE, VERB, "paths")
    for m in t.iter_rows(named=True):
        size, verb, n = int(m[SIZE]), m[VERB], m["paths"]
        group = f"{verb} {size / 1e6:g} MB {n}p"
        want = expected_wrs(size, verb, n)
        rows.append(Comparison(group, "WRs", float(m["wrs"]), float(want)))
        rows.append(Comparison(group, "CQEs", float(m["cqes"]), float(want)))
    return rows


def compare_chunk(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Table 2: the largest WR summed over the paths and per path, KB, beside the paper's;
    per path also beside the shared-ingress bound of the fitted buffer (whose one-path bound
    is Table 2's first row)."""
    rows = []
    t = chunk_table(store)
    one = TABLE2[1][1]
    for r in t.iter_rows(named=True):
        n = r["paths"]
        total, avg = TABLE2.get(n, (float("nan"), float("nan")))
        rows.append(Comparison(f"{n} paths", "total KB", r["total"] / 1e3, total / 1e3))
        rows.append(Comparison(f"{n} paths", "per path KB", r["avg"] / 1e3, avg / 1e3))
        rows.append(Comparison(f"{n} paths", "per path KB vs bound", r["avg"] / 1e3, ingress_bound(n, one) / 1e3))
    return rows


def compare_mice(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Fig. 7: mean and p99 FCT of the mice (ms) with the elephant on one path or split,
    beside a mouse alone on its 1 Gb/s link (the paper prints no values: lower with split)."""
    rows = []
    alone = mouse_alone_s() * 1e3
    for (n,), sub in sorted(mice_table(store).partition_by("paths", as_dict=True).items()):
        fct = sub["fct_ns"].to_numpy() / 1e6
        group = "elephant on path 0" if n == 1 else f"elephant on {n} paths"
        rows.append(Comparison(group, "mouse mean ms", float(fct.mean()), alone))
        rows.append(Comparison(group, "mouse p99 ms", float(np.percentile(fct, 99)), alone))
        if n == 1:
            rows.append(Comparison(group, "mean vs PFC model", float(fct.mean()), mouse_behind_pfc_s() * 1e3))
    return rows


_VIRTUOSO_THEIRS = ("closed forms, not the paper's measurements (Tian et al. print no values for Figs. 5-8): "
                    "FCT = 8 x size x 1048/1000 / (N x 1 Gb/s), speed-up = N, WRs = N (+1 notice for a "
                    "large SEND; 1 below small_message)")


def _virtuoso_experiment(name: str, title: str, figs: str, compare: Callable) -> Experiment:
    stem = name.replace("-", "_")
    return Experiment(
        name=name, title=title, citation=f"Tian et al., Virtuoso (seed 003), {figs}",
        sweep=f"{stem}.toml", quick=f"{stem}_quick.toml", figures=[stem.replace("virtuoso_sizes", "virtuoso_speedup")],
        by="traffic[0].qps", compare=compare, theirs=_VIRTUOSO_THEIRS,
    )


EXPERIMENTS = [
    _virtuoso_experiment("virtuoso-paths", "Virtuoso: FCT of one WRITE vs paths, 1 Gb/s core links",
                         "§4.3, Fig. 5", compare_paths),
    _virtuoso_experiment("virtuoso-sizes", "Virtuoso: speed-up FCT(1)/FCT(N) by message size",
                         "§4.3, Fig. 6", compare_sizes),
    _virtuoso_experiment("virtuoso-overhead", "Virtuoso: WRs and CQEs per message (Fig. 8 proxy)",
                         "§4.6, Fig. 8", compare_overhead),
    Experiment(
        name="virtuoso-chunk", title="Virtuoso: largest WR per path vs paths, lossy fabric",
        citation="Tian et al., Virtuoso (seed 003), §3.5, Table 2", sweep="virtuoso_chunk.toml",
        quick="virtuoso_chunk_quick.toml", figures=["virtuoso_chunk"], by="traffic[0].qps",
        compare=compare_chunk,
        theirs="Table 2 of the paper (bytes, shown in KB); buffer_mb fitted once to its 1-path row; "
               "'vs bound': our ToR's shared-ingress bound for the fitted buffer"),
    Experiment(
        name="virtuoso-mice", title="Virtuoso: 256 KB mice beside an elephant on path 0 or split",
        citation="Tian et al., Virtuoso (seed 003), §4.4, Fig. 7", sweep="virtuoso_mice.toml",
        quick="virtuoso_mice_quick.toml", figures=["virtuoso_mice"], by="traffic[0].qps",
        compare=compare_mice,
        theirs="a mouse alone on its 1 Gb/s link (8 x 262144 x 1048/1000 / 1 Gb/s); 'vs PFC model': "
               "the PFC backlog of the fitted buffer, then the link shared with the elephant; the paper "
               "prints no values, only that mice are faster with the elephant split"),
]
