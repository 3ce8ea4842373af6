"""What moves when drum-tc1 and drum-tc3 go from 40 Gb/s RoCE to the testbed's InfiniBand QDR
4x (the DRUM paper's §IV), and is it the link layer or the rate? One of the two moved per row.

`python -m rdmalab.experiments.causes.drum_link_causes [tc1] [tc3]` runs drum-tc1's full setting
(the 32 B foreground beside cc - 1 KV connections, 5 ms; p80 of the foreground, a WQE still
waiting at the end counted with its wait) and drum-tc3's (N = 300 client connections on the
server host, 20 ms; mean Gb/s per connection) on four links, the two ends and the two crossings:

- RoCE at 40 Gb/s (the repros' comparison rows) and RoCE at 32 Gb/s (QDR 4x's data rate);
- InfiniBand at 40 Gb/s of data and at QDR 4x (32 Gb/s of data after 8b/10b: the testbed).

The link layer brings IB's credits instead of PFC, its headers (26 B per packet and a 16 B RETH
per message, against RoCE's 48 B) and input-fair switch arbitration (docs/model/infiniband.md,
"InfiniBand link layer"); the rate is the data rate. Nothing is tuned: each row is a link.
"""

from __future__ import annotations

import sys

import numpy as np

from rdmalab.experiments.causes.base import Investigation, run

#: (label, link layer, rate): the repros' two links first, then the two crossings.
LINKS = [
    ("RoCE 40 Gb/s (repros' comparison)", "roce", "40Gbps"),
    ("IB QDR 4x, 32 Gb/s (testbed)", "infiniband", "QDR4x"),
    ("RoCE at 32 Gb/s", "roce", "32Gbps"),
    ("IB at 40 Gb/s", "infiniband", "40Gbps"),
]
CACHE = '\nqp_cache_entries = 20\nqp_cache_miss_penalty = "1us"\nqp_cache_fetch = "serial"'


def _head(stop: str, link: str, rate: str, mech: str) -> list[str]:
    return [
        f'stop_time = "{stop}"',
        f'[topology]\nkind = "star"\nhosts = 7\nrate = "{rate}"\ndelay = "1us"',
        f'[fabric]\nmtu = 1024\nlink_layer = "{link}"' + CACHE,
        f'[host]\nmechanism = "{mech}"',
        '[drum]\nperiod = "100us"\nk = 20',
    ]


def tc1_cts(link: str, rate: str, mech: str, cc: int) -> np.ndarray:
    """drum-tc1's main rows (KV background uniform in [32 B, 1 MB]): the foreground's
    completion times in µs, sorted, a WQE still waiting at 5 ms counted with its wait."""
    lines = _head("5ms", link, rate, mech) + [
        '[[app]]\nhost = 0\ndst = 6\nname = "fg"\nsize = 32\nwr_num = 1',
        f'[[app]]\nhost = 0\ndst = 6\nname = "bg"\ncount = {cc - 1}\nsize = [32, 1048576]\n'
        'size_dist = "uniform"\nwr_num = 1',
    ]
    res = run("\n".join(lines) + "\n")
    d = res.wqes.filter(res.wqes["name"] == "fg")
    ct = d["ct_ns"].to_numpy()
    return np.sort(np.where(np.isnan(ct), 5e6 - d["posted_ns"].to_numpy(), ct)) / 1e3


def _pct(ct: np.ndarray, q: float) -> float:
    """The repro's percentile: the sorted value at index ⌊q·n⌋."""
    return float(ct[min(int(len(ct) * q), len(ct) - 1)])


def tc1_p80(link: str, rate: str, mech: str, cc: int) -> float:
    """The foreground's p80 in drum-tc1's setting, µs (as the repro computes it)."""
    return _pct(tc1_cts(link, rate, mech, cc), 0.8)


def tc3_gbps(link: str, rate: str, mech: str, n: int = 300) -> float:
    """drum-tc3's setting at `n` connections: mean Gb/s per connection."""
    lines = _head("20ms", link, rate, mech)
    for c in range(6):
        lines.append(f'[[app]]\nhost = 6\ndst = {c}\nname = "c{c}"\ncount = {n // 6}\nsize = [32, 1048576]\n'
                     'wr_num = 1\nthink = "10us"')
    return float(run("\n".join(lines) + "\n").apps["gbps"].mean())


def tc1() -> None:
    """The foreground's p80 (µs) in drum-tc1 at cc = 20 and 100, RAW and DRUM, per link."""
    print("| link | RAW cc 20 | RAW cc 100 | DRUM cc 20 | DRUM cc 100 |")
    print("|---|---|---|---|---|")
    for label, link, rate in LINKS:
        v = [tc1_p80(link, rate, m, cc) for m in ("raw", "drum") for cc in (20, 100)]
        print(f"| {label} | " + " | ".join(f"{x:.2f}" for x in v) + " |", flush=True)
    print("\nThe foreground's completion times at cc = 20 (µs), all of them:")
    print("| link | mechanism | WQEs | p10 | p50 | p80 | p99 |")
    print("|---|---|---|---|---|---|---|")
    for label, link, rate in LINKS:
        for m in ("raw", "drum"):
            ct = tc1_cts(link, rate, m, 20)
            print(f"| {label} | {m.upper()} | {len(ct)} | "
                  + " | ".join(f"{_pct(ct, q):.2f}" for q in (0.1, 0.5, 0.8, 0.99)) + " |", flush=True)


def tc3() -> None:
    """drum-tc3 at N = 300: mean Gb/s per connection under DRUM and SHARE, per link."""
    print("| link | DRUM Gb/s/conn | SHARE Gb/s/conn | DRUM / SHARE |")
    print("|---|---|---|---|")
    for label, link, rate in LINKS:
        d, s = tc3_gbps(link, rate, "drum"), tc3_gbps(link, rate, "share")
        print(f"| {label} | {d:.4f} | {s:.4f} | {d / s:.2f} |", flush=True)


INVESTIGATION = Investigation("drum_link_causes", {"tc1": tc1, "tc3": tc3}, ["tc1", "tc3"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
