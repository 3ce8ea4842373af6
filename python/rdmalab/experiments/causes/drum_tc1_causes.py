"""Why is DRUM's TC1 line flat in cc where the paper's grows (the DRUM paper, Fig. 8: 8.8, 14.5 and
24.0 µs at cc = 20, 50, 100)? One suspected cause moved per row.

`python -m rdmalab.experiments.causes.drum_tc1_causes [tc1[:quick]]` runs drum-tc1's setting
(a 32 B `wr_num = 1` foreground on host 0 beside cc - 1 KV connections of the same host to
host 6, each one WQE of U[32 B, 1 MB] at a time with no think time; 20-entry QP-context cache
with serial 1 µs fetches; DRUM k = 20, 100 µs periods; 5 ms, `quick` 1 ms) on the testbed's
InfiniBand QDR 4x and on 40 Gb/s RoCE (the repros' comparison), cc = 20, 50, 100. The
foreground's p80 in µs, a WQE still waiting at the end counted with its wait (as the repro).

Rows, each the base with one suspected cause of a cc-dependent wait moved:

- base: DRUM as the repro runs it;
- the poller's cost removed (`poll_cost = 1 ns`): DRUM's one poller thread serves the cc
  applications' completion rings, one ring per poll (CQ polling contention);
- k = 200 with the cache kept: the top-k rule's k above cc (the paper gives no k), the cache
  still 20 entries (the agent fits its dedicated QPs to the cache);
- k = 200 and no cache limit: every connection keeps a QP of its own and no context misses,
  so the NIC's per-packet round robin serves cc QPs instead of at most 20;
- RAW, and RAW without a cache limit (the same round robin over cc QPs, no agent).

Columns: p80 at each cc, the foreground's WQEs seen at cc = 100, the mean number of DRUM's
dedicated QPs at cc = 100 (from `res.drum`), the NIC's QP-context misses at cc = 100 (the
counter `qp_cache_misses`), and the paper's p80s (Fig. 8's text). Nothing is
tuned: each row removes or moves one cause and says which.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from rdmalab.experiments.causes.base import Investigation, run

#: (label, link layer, rate): the testbed's link first, the repros' comparison beside it.
LINKS = [("IB QDR 4x (testbed)", "infiniband", "QDR4x"), ("RoCE 40 Gb/s", "roce", "40Gbps")]
CC = (20, 50, 100)
SERIAL = '\nqp_cache_entries = 20\nqp_cache_miss_penalty = "1us"\nqp_cache_fetch = "serial"'
STOP_US = {"full": 5000.0, "quick": 1000.0}
#: The paper's measured p80s (§IV-C, Fig. 8), µs, at cc = 20, 50, 100.
PAPER = {"drum": "8.8 / 14.5 / 24.0", "raw": "7.1 / 26.5 / 90.4"}

#: (label, mechanism, settings): the base, then one cause moved per row.
ROWS = [
    ("DRUM: k 20, 20-entry serial cache (base)", "drum", {}),
    ("(cause removed) DRUM, poller cost 1 ns: no CQ polling cost", "drum", {"poll": "1ns"}),
    ("(cause moved) DRUM, k 200, cache kept: the agent fits its QPs to it", "drum", {"k": 200}),
    ("(cause removed) DRUM, k 200, no cache limit: the NIC's round robin over cc QPs", "drum",
     {"k": 200, "cache": False}),
    ("RAW (base)", "raw", {}),
    ("RAW, no cache limit: the same round robin over cc QPs", "raw", {"cache": False}),
]


def tc1_case(link: str, rate: str, mech: str, cc: int, k: int = 20, cache: bool = True,
             poll: str = "100ns", size: str = "full") -> dict[str, float]:
    """One run of drum-tc1's setting: the foreground's p80 (µs), its WQEs seen, the NIC's
    QP-context misses, and under DRUM the mean number of dedicated QPs over the periods."""
    stop_us = STOP_US[size]
    toml = "\n".join([
        f'stop_time = "{stop_us:.0f}us"',
        f'[topology]\nkind = "star"\nhosts = 7\nrate = "{rate}"\ndelay = "1us"',
        f'[fabric]\nmtu = 1024\nlink_layer = "{link}"' + (SERIAL if cache else ""),
        f'[host]\nmechanism = "{mech}"\npoll_cost = "{poll}"',
        f'[drum]\nperiod = "100us"\nk = {k}',
        '[[app]]\nhost = 0\ndst = 6\nname = "fg"\nsize = 32\nwr_num = 1',
        f'[[app]]\nhost = 0\ndst = 6\nname = "bg"\ncount = {cc - 1}\nsize = [32, 1048576]\n'
        'size_dist = "uniform"\nwr_num = 1',
    ]) + "\n"
    res = run(toml)
    d = res.wqes.filter(pl.col("name") == "fg")
    ct = d["ct_ns"].to_numpy()
    seen = np.isfinite(ct)
    ct = np.sort(np.where(seen, ct, stop_us * 1e3 - d["posted_ns"].to_numpy())) / 1e3
    out = {"p80": float(ct[min(int(len(ct) * 0.8), len(ct) - 1)]), "seen": float(seen.sum()),
           "dedicated": float("nan"), "misses": float(res.counters.get("qp_cache_misses", 0))}
    if mech == "drum" and res.drum.height:
        per = res.drum.group_by("t_ns").agg(pl.col("active").cast(pl.Int64).sum().alias("n"))
        out["dedicated"] = float(per["n"].mean())
    return out


def tc1(size: str = "full") -> None:
    """The table: per link and row, the foreground's p80 at cc = 20, 50, 100."""
    if size not in STOP_US:
        raise SystemExit(f"drum_tc1_causes: tc1 takes 'full' or 'quick', not {size!r}")
    print(f"TC1 foreground p80 (us), {STOP_US[size] / 1e3:g} ms runs")
    print("| link | row | cc 20 | cc 50 | cc 100 | fg WQEs seen, cc 100 | dedicated QPs, cc 100 | context misses, cc 100 "
          "| paper (cc 20 / 50 / 100) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for llabel, link, rate in LINKS:
        for label, mech, kw in ROWS:
            r = [tc1_case(link, rate, mech, cc, size=size, **kw) for cc in CC]
            print(f"| {llabel} | {label} | " + " | ".join(f"{x['p80']:.2f}" for x in r)
                  + f" | {r[-1]['seen']:.0f} | {r[-1]['dedicated']:.1f} | {r[-1]['misses']:.0f} | {PAPER[mech]} |",
                  flush=True)


INVESTIGATION = Investigation("drum_tc1_causes", {"tc1": tc1}, ["tc1"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
