"""Why does DRUM's single-WQE completion time grow with the background's batch in drum-fig2a,
where the DRUM paper's Fig. 6 says it is "unaffected by the background traffic"? One
suspected cause removed per row.

`python -m rdmalab.experiments.causes.drum_fig6_causes [fig6[:quick]]` runs drum-fig2a's
setting (host 0 to host 6 of the 7-host testbed, 1 µs links, 1 KB packets, `wqe_cost` 680 ns,
no QP-context cache limit; a 1 KB `wr_num = 1` foreground that re-posts as soon as its CQE is
seen, beside one background application posting batches of B = 20, 60, 100 WQEs of 1 KB;
5 ms, `quick` 1 ms) on the testbed's InfiniBand QDR 4x and on 40 Gb/s RoCE (the repro's link).
The foreground's p80 in µs (a WQE still waiting at the end counted with its wait).

Rows: the foreground alone; RAW (Fig. 2a, whose p80s the paper prints); DRUM as the repro runs
it (`a = "cqe_per_wqe"`, β = 1, k = 20); then one suspected cause removed per row:

- the poller's cost (`poll_cost = 1 ns`): CQ polling;
- the foreground above its share: 20 µs of think time after each CQE, so it asks for less
  than the rate the optimum gives it (a change of the workload: the paper's foreground
  requests continuously);
- the CQ penalty setting the rates (β = 10⁻⁹: the utility sets them, equal);
- the foreground's rank (`a = "batch_size"`: a read as WQEs per CQE, so the one-WQE
  foreground has the smallest a and the largest rate, docs/drum-fabric.md §6.7).

Columns: p80 at each B; under DRUM the foreground's share of the rates x̂ / Σx̂ and its release
interval 1/x̂ (µs, median over the control periods) at B = 20 and 100, and the share of
periods in which it held a dedicated QP (a shared QP would queue it behind the background);
the paper's measured p80s where it prints them (Fig. 2a's RAW; Fig. 6 prints none for DRUM).
Nothing is tuned: each row removes one cause and says which.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from rdmalab.experiments.causes.base import Investigation, run

#: (label, link layer, rate): the testbed's link first, the repro's beside it.
LINKS = [("IB QDR 4x (testbed)", "infiniband", "QDR4x"), ("RoCE 40 Gb/s", "roce", "40Gbps")]
BATCHES = (20, 60, 100)
STOP_US = {"full": 5000.0, "quick": 1000.0}
#: The paper's measured p80s at B = 20 / 100 (Fig. 2a's caption), µs; Fig. 6 prints none.
PAPER = {"raw": "19.8 / 74.3 (Fig. 2a)", "drum": "none printed (Fig. 6: \"unaffected\")"}

#: (label, mechanism, settings): references, the base, then one cause removed per row.
ROWS = [
    ("the foreground alone (DRUM)", "drum", {"alone": True}),
    ("RAW", "raw", {}),
    ("DRUM: a = cqe_per_wqe, beta 1, k 20 (base)", "drum", {}),
    ("(cause removed) poller cost 1 ns: no CQ polling cost", "drum", {"poll": "1ns"}),
    ("(cause removed) fg below its share: 20 us think after each CQE (workload changed)", "drum",
     {"think": "20us"}),
    ("(cause removed) beta 1e-9: the utility, not the CQ penalty, sets the rates", "drum", {"beta": 1e-9}),
    ("(cause removed) a = batch_size: the one-WQE fg has the smallest a", "drum", {"a": "batch_size"}),
]


def fig6_case(link: str, rate: str, mech: str, batch: int, alone: bool = False, poll: str = "100ns",
              think: str = "0ns", beta: float = 1.0, a: str = "cqe_per_wqe", size: str = "full") -> dict[str, float]:
    """One run of drum-fig2a's setting: the foreground's p80 (µs) and, under DRUM, its share
    of the rates, its release interval 1/x̂ (µs) and the share of periods on a dedicated QP."""
    stop_us = STOP_US[size]
    lines = [
        f'stop_time = "{stop_us:.0f}us"',
        f'[topology]\nkind = "star"\nhosts = 7\nrate = "{rate}"\ndelay = "1us"',
        f'[fabric]\nmtu = 1024\nlink_layer = "{link}"',
        f'[host]\nmechanism = "{mech}"\nwqe_cost = "680ns"\npoll_cost = "{poll}"',
        f'[drum]\nperiod = "100us"\nk = 20\nbeta = {beta}\na = "{a}"',
        f'[[app]]\nhost = 0\ndst = 6\nname = "fg"\nsize = 1024\nwr_num = 1\nthink = "{think}"',
    ]
    if not alone:
        lines.append(f'[[app]]\nhost = 0\ndst = 6\nname = "bg"\nsize = 1024\nwr_num = {batch}')
    res = run("\n".join(lines) + "\n")
    d = res.wqes.filter(pl.col("name") == "fg")
    ct = d["ct_ns"].to_numpy()
    ct = np.sort(np.where(np.isfinite(ct), ct, stop_us * 1e3 - d["posted_ns"].to_numpy())) / 1e3
    out = {"p80": float(ct[min(int(len(ct) * 0.8), len(ct) - 1)]), "share": np.nan, "interval": np.nan,
           "dedicated": np.nan}
    if mech == "drum" and res.drum.height:
        total = res.drum.group_by("t_ns").agg(pl.col("x").sum().alias("sum_x"))
        s = res.drum.filter(pl.col("app") == 0).join(total, on="t_ns")
        out["share"] = float((s["x"] / s["sum_x"]).mean())
        out["interval"] = float((1.0 / s["x"]).median())
        out["dedicated"] = float(s["active"].cast(pl.Float64).mean())
    return out


def fig6(size: str = "full") -> None:
    """The table: per link and row, the foreground's p80 at each background batch."""
    if size not in STOP_US:
        raise SystemExit(f"drum_fig6_causes: fig6 takes 'full' or 'quick', not {size!r}")
    print(f"drum-fig2a's foreground p80 (us), {STOP_US[size] / 1e3:g} ms runs")
    print("| link | row | B 20 | B 60 | B 100 | x/sum x, B 20 / 100 | 1/x us, B 20 / 100 | on a dedicated QP | paper, B 20 / 100 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for llabel, link, rate in LINKS:
        for label, mech, kw in ROWS:
            r = [fig6_case(link, rate, mech, b, size=size, **kw) for b in BATCHES]
            print(f"| {llabel} | {label} | " + " | ".join(f"{x['p80']:.2f}" for x in r)
                  + f" | {r[0]['share']:.3f} / {r[-1]['share']:.3f} | {r[0]['interval']:.2f} / {r[-1]['interval']:.2f}"
                  f" | {r[-1]['dedicated']:.2f} | {PAPER[mech]} |", flush=True)


INVESTIGATION = Investigation("drum_fig6_causes", {"fig6": fig6}, ["fig6"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
