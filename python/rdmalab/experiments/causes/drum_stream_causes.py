"""Why is a 32 B `wr_num = 1` stream's p80 under DRUM far above its p80 alone in mixes of
other applications? One suspected cause removed per row.

`python -m rdmalab.experiments.causes.drum_stream_causes [kv] [bulk] [two] [kv20]` runs, on host 0 of
the testbed (7 hosts, 40 Gb/s, 1 µs links, 1 KB packets, 20-entry QP-context cache with serial
1 µs fetches, 10 ms), a 32 B one-WQE stream to host 6 beside one of three mixes:

- `kv`: 70 KV clients to host 6, batches of 1-20 WQEs of U[32 B, 1 MB] (the first case);
- `bulk`: four streams beside four 1 KB `wr_num = 100` applications (its second);
- `two`: 36 smaller clients, 18 to host 5 and 18 to host 6, batches of 1-20 WQEs log-uniform in
  [32 B, 64 KB], 10 µs think time (its third: two destinations, a few dozen smaller clients).

Rows: the stream alone; RAW; DRUM with the defaults (`a = "cqe_per_wqe"`, β = 1, k = 20); then
one cause removed per row: `a = "batch_size"` (the ranking of a reversed, §6.7), β = 10⁻⁹ (the
utility, not the CQ penalty, sets the rates: equal among the applications that hold a
dedicated QP), and k = 200 without a cache limit (every application keeps a dedicated QP: no
shared QP); then the least-served slot rule (`select = "least_served"`) under both readings.
Columns: the streams' p80 (µs; a WQE still waiting at the end counted with its wait), their
batches seen, the share of control periods in which the stream held a dedicated QP, its
rate's share x̂ / Σx̂ and its release interval 1/x̂ (µs, median over periods), and the
applications with at least one batch seen.
Nothing is tuned: each row removes one cause and says so.

`kv20` runs the `kv` mix for 20 ms under RAW, SHARE and DRUM with each slot rule (`[drum]
select`: `smallest_a`, the paper's top-k, or `least_served`, docs/drum-fabric.md §6.11) and
both readings of `a`, then moves the least-served rule's one choice, its quantum (the window):
the stream's p80 beside its p80 alone, the applications with a WQE completed (acknowledged)
and with a WQE sent from, and the QP-context cache's misses (each slot handover is one).
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.repro.drum_fabric import drum_testbed

HEAD = drum_testbed("{stop_ms}ms") + '''{cache}
[host]
mechanism = "{mech}"
[drum]
a = "{a}"
beta = {beta}
k = {k}
select = "{select}"
shared_window = {window}
[[app]]
name = "stream"
host = 0
dst = 6
count = {streams}
size = 32
wr_num = 1
'''
CACHE = 'qp_cache_entries = 20\nqp_cache_miss_penalty = "1us"\nqp_cache_fetch = "serial"'

#: mix -> (streams, the other applications)
MIXES = {
    "kv": (1, '[[app]]\nname = "kv"\nhost = 0\ndst = 6\ncount = 70\nsize = [32, 1048576]\n'
              'size_dist = "uniform"\nwr_num = [1, 20]\n'),
    "bulk": (4, '[[app]]\nname = "bulk"\nhost = 0\ndst = 6\ncount = 4\nsize = 1024\nwr_num = 100\n'),
    "two": (1, '[[app]]\nname = "c5"\nhost = 0\ndst = 5\ncount = 18\nsize = [32, 65536]\nwr_num = [1, 20]\n'
               'think = "10us"\n[[app]]\nname = "c6"\nhost = 0\ndst = 6\ncount = 18\nsize = [32, 65536]\n'
               'wr_num = [1, 20]\nthink = "10us"\n'),
}

#: (label, settings): the references, then one cause removed per row.
ROWS = [
    ("the stream alone (DRUM)", {"alone": True}),
    ("RAW", {"mech": "raw"}),
    ("DRUM: a = cqe_per_wqe, beta 1, k 20 (defaults)", {}),
    ("(cause) a = batch_size: the one-WQE stream has the smallest a", {"a": "batch_size"}),
    ("(cause) beta 1e-9: the utility, not the CQ penalty, sets the rates", {"beta": 1e-9}),
    ("(cause) k 200, no cache limit: no shared QP", {"k": 200, "cache": False}),
    ("(rule) select = least_served (§6.11)", {"select": "least_served"}),
    ("(rule) select = least_served, a = batch_size", {"select": "least_served", "a": "batch_size"}),
]


def stream_case(mix: str, mech: str = "drum", a: str = "cqe_per_wqe", beta: float = 1.0, k: int = 20,
                cache: bool = True, alone: bool = False, select: str = "smallest_a", window: int = 65536,
                stop_ms: int = 10) -> dict[str, float]:
    """One run of `mix`: the measures of the module's tables, by column."""
    streams, others = MIXES[mix]
    text = HEAD.format(cache=CACHE if cache else "", mech=mech, a=a, beta=beta, k=k, streams=streams,
                       select=select, window=window, stop_ms=stop_ms)
    res = run(text + ("" if alone else others))
    w = res.wqes.filter(pl.col("name").str.starts_with("stream"))
    ct = w["ct_ns"].to_numpy()
    seen = np.isfinite(ct)
    ct = np.sort(np.where(seen, ct, stop_ms * 1e6 - w["posted_ns"].to_numpy())) / 1e3
    done = res.wqes.filter(pl.col("state").is_in(["completed", "seen"]))["app"].n_unique()
    sent = res.wqes.filter(pl.col("state").is_in(["wire", "completed", "seen"]))["app"].n_unique()
    out = {"p80": float(ct[min(int(len(ct) * 0.8), len(ct) - 1)]), "seen": float(seen.sum()),
           "dedicated": np.nan, "share": np.nan, "interval": np.nan,
           "progressed": float((res.apps["wqes"] > 0).sum()), "apps": float(res.apps.height),
           "completed": float(done), "sent": float(sent), "misses": float(res.counters["qp_cache_misses"])}
    if mech == "drum" and res.drum.height:
        total = res.drum.group_by("t_ns").agg(pl.col("x").sum().alias("sum_x"))
        s = res.drum.filter(pl.col("app") < streams).join(total, on="t_ns")
        out["dedicated"] = float(s["active"].cast(pl.Float64).mean())
        out["share"] = float((s["x"] / s["sum_x"]).mean())
        out["interval"] = float((1.0 / s["x"]).median())
    return out


def _table(mix: str) -> None:
    print(f"\n{mix}: the 32 B stream's p80 (us)")
    print("| row | p80 us | batches seen | on a dedicated QP | x / sum x | 1/x us | apps with a batch seen |")
    print("|---|---|---|---|---|---|---|")
    for label, settings in ROWS:
        r = stream_case(mix, **settings)
        print(f"| {label} | {r['p80']:.2f} | {r['seen']:.0f} | {r['dedicated']:.2f} | {r['share']:.4f} | "
              f"{r['interval']:.1f} | {r['progressed']:.0f} of {r['apps']:.0f} |", flush=True)


#: (label, settings) of the `kv20` table: the `kv` case at 20 ms under each
#: mechanism and slot rule, then the least-served rule's one free choice (its quantum, the
#: window) moved.
KV20_ROWS = [
    ("RAW", {"mech": "raw"}),
    ("SHARE", {"mech": "share"}),
    ("DRUM smallest_a, a = cqe_per_wqe (defaults, the paper's top-k)", {}),
    ("DRUM smallest_a, a = batch_size", {"a": "batch_size"}),
    ("DRUM least_served, a = cqe_per_wqe", {"select": "least_served"}),
    ("DRUM least_served, a = batch_size", {"select": "least_served", "a": "batch_size"}),
    ("(choice) least_served, batch_size, window 16 KiB", {"select": "least_served", "a": "batch_size",
                                                          "window": 16384}),
    ("(choice) least_served, batch_size, window 256 KiB", {"select": "least_served", "a": "batch_size",
                                                           "window": 262144}),
]


def _kv20() -> None:
    """The `kv` case at 20 ms: who progresses under each slot rule."""
    alone = stream_case("kv", alone=True, stop_ms=20)["p80"]
    print("\nkv20: 32 B stream beside 70 KV clients, 20 ms; the stream alone (DRUM): p80 "
          f"{alone:.2f} us")
    print("| row | stream p80 us | x alone | stream WQEs seen | apps with a WQE completed | "
          "apps with a WQE sent from | QP-cache misses |")
    print("|---|---|---|---|---|---|---|")
    for label, settings in KV20_ROWS:
        r = stream_case("kv", stop_ms=20, **settings)
        print(f"| {label} | {r['p80']:.2f} | {r['p80'] / alone:.2f} | {r['seen']:.0f} | "
              f"{r['completed']:.0f} of {r['apps']:.0f} | {r['sent']:.0f} of {r['apps']:.0f} | "
              f"{r['misses']:.0f} |", flush=True)


PARTS = {m: (lambda m=m: _table(m)) for m in MIXES}
PARTS["kv20"] = _kv20
INVESTIGATION = Investigation("drum_stream_causes", PARTS, [*MIXES, "kv20"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
