"""Which of our unstated choices decides TC3 (the DRUM paper, Figs. 10-11)? One choice moved per row.

`python -m rdmalab.experiments.causes.drum_tc3_choices [choices[:N] ...]` runs drum-tc3's full
setting (7 hosts at 40 Gb/s, QP-context cache of 20 with serial 1 µs fetches, 20 ms) at N client
connections (default 300; `choices:300 choices:402` for two) under SHARE and DRUM, once with our choices (the "base" row:
values log-uniform in [32 B, 1 MB], 10 µs client think time, the server writing each value
to its client, SHARE's lock with 40 ns per queued poster) and once per moved choice, and
prints what the paper reports above 300 connections beside ours: DRUM/SHARE mean throughput
per connection (paper 1.8), SHARE/DRUM mean batch latency (paper 1.673) and the share of
DRUM's requests under 18 µs (paper: "most"). Nothing is tuned: each row is one choice moved
to another value the paper's words allow. The part `tc1` prints instead how SHARE's
foreground p80 in drum-tc1 (full setting) moves with the lock's contention cost.
"""

from __future__ import annotations

import sys

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.causes.drum_tc_causes import tc1_p80

#: (label, changes): the base row first, then one moved choice per row.
VARIANTS = [
    ("base: log-uniform, think 10 us, server writes, lock 40 ns/poster", {}),
    ("values uniform in [32 B, 1 MB]", {"size_dist": "uniform"}),
    ("think 0", {"think": "0ns"}),
    ("think 100 us", {"think": "100us"}),
    ("clients write (values travel client -> server)", {"reverse": True}),
    ("SHARE lock without contention (lock_transfer 0)", {"lock_transfer": "0ns"}),
    ("SHARE lock 1 us per queued poster", {"lock_transfer": "1us"}),
    # Not a choice of ours but an input (Fig. 2c's knee): the run that removes the QP-context
    # cache's limit, to show what the gap is made of.
    ("(cause) no QP-context cache limit", {"cache": False}),
    # Nor this one: DRUM's shared QPs as they were before their window bounded them (§6.7), a
    # window of 1 GiB that no run here fills.
    ("(cause) DRUM's shared QPs without a window (1 GiB)", {"shared_window": 1 << 30}),
]


def scenario(mech: str, n: int, ch: dict) -> str:
    per = n // 6
    lines = [
        'stop_time = "20ms"',
        '[topology]\nkind = "star"\nhosts = 7\nrate = "40Gbps"\ndelay = "1us"',
        '[fabric]\nmtu = 1024' + ('\nqp_cache_entries = 20\nqp_cache_miss_penalty = "1us"\nqp_cache_fetch = "serial"'
                                 if ch.get("cache", True) else ''),
        f'[host]\nmechanism = "{mech}"\nlock_transfer = "{ch.get("lock_transfer", "40ns")}"',
        '[drum]\nperiod = "100us"\nk = 20' + (f'\nshared_window = {ch["shared_window"]}' if "shared_window" in ch else ''),
    ]
    for c in range(6):
        host, dst = (c, 6) if ch.get("reverse") else (6, c)
        lines.append(f'[[app]]\nhost = {host}\ndst = {dst}\nname = "c{c}"\ncount = {per}\nsize = [32, 1048576]\n'
                     f'size_dist = "{ch.get("size_dist", "log_uniform")}"\nwr_num = 1\n'
                     f'think = "{ch.get("think", "10us")}"')
    return "\n".join(lines) + "\n"


def metrics(mech: str, n: int, ch: dict) -> tuple[float, float, float]:
    """(mean Gb/s per connection, mean batch latency µs, share of batches under 18 µs)."""
    res = run(scenario(mech, n, ch))
    ct = res.wqes["ct_ns"].drop_nans().to_numpy() / 1e3
    return float(res.apps["gbps"].mean()), float(ct.mean()), float((ct < 18.0).mean())


def choices(n: str = "300") -> None:
    """The table at `n` client connections."""
    n = int(n)
    print("| N | choice moved | DRUM Gb/s/conn | SHARE Gb/s/conn | DRUM / SHARE (paper 1.8) | "
          "SHARE / DRUM latency (paper 1.673) | DRUM < 18 us (paper: most) |")
    print("|---|---|---|---|---|---|---|")
    for label, ch in VARIANTS:
        d, s = metrics("drum", n, ch), metrics("share", n, ch)
        print(f"| {n} | {label} | {d[0]:.3f} | {s[0]:.3f} | {d[0] / s[0]:.2f} | {s[1] / d[1]:.2f} | "
              f"{100 * d[2]:.0f} % |", flush=True)


def tc1() -> None:
    """SHARE's foreground p80 in drum-tc1 (full setting) by the lock's cost per queued poster."""
    print("| SHARE foreground p80 (us), TC1 | lock_transfer 0 | 40 ns | 1 us |")
    print("|---|---|---|---|")
    for cc in (20, 50, 100):
        print(f"| cc = {cc} | " + " | ".join(f"{tc1_p80('share', cc, lock_transfer=t):.1f}" for t in ("0ns", "40ns", "1us")) + " |")


INVESTIGATION = Investigation("drum_tc3_choices", {"choices": choices, "tc1": tc1}, ["choices"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
