"""Two of seed 001's open differences, each with the run that removes its suspected cause.

`python -m rdmalab.experiments.repro.mp_partition_causes [bubble|paths]` runs
mp-partition-topo1's full setting (leaf-spine 5 x 4 hosts, 5 spines, 40 Gb/s, 1 µs links,
DCQCN, 10 MiB from host 0 to host 19 beside 200 x 10 MiB background flows, refill on "sent")
for seeds 1-3 and prints the mean message FCT in ms:

- `bubble`: why 1 KiB chunks are slower than 8 KiB ones by more than their extra header
  bytes. Two suspected causes, one row each. (1) With one chunk in flight per QP
  (`outstanding = 1`) a QP might have nothing queued between the moment its chunk has been
  sent and the next post, and the NIC's round robin would pass it over: `outstanding` 2
  keeps a chunk queued behind the one on the wire. (2) A 1 KiB chunk with its 24-byte
  header is 1,048 bytes, two packets at the 1,000-byte MTU (1,000 and 48), and the sender
  NIC's round robin over QPs is per packet: each turn of a message QP then carries half a
  background QP's bytes on average. An MTU of 1,100 bytes makes every 1 KiB chunk one packet.
- `paths`: why our FCT does not rise with the chunk size at 2-5 QPs as the paper's does
  (knee at 32 KiB). Suspected cause: our equal-cost paths stay equal (a non-blocking
  leaf-spine whose bottleneck is the receiver's downlink), so no chunk is ever stuck on a
  slow path. The run gives the fabric unequal paths: the link between the receiver's leaf
  (24) and spine 25 at a quarter of the rate (10 Gb/s), routing unchanged.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import rdmalab

SEEDS = (1, 2, 3)


def scenario(qps: int, chunk: int, seed: int, outstanding: int = 1, slow_link: bool = False,
             mtu: int = 1000) -> str:
    links = '\n[[links]]\na = 24\nb = 25\nrate = "10Gbps"' if slow_link else ""
    return f"""seed = {seed}
[topology]
kind = "leaf_spine"
leaves = 5
spines = 5
hosts_per_leaf = 4
host_rate = "40Gbps"
fabric_rate = "40Gbps"
delay = "1us"
{links}

[[traffic]]
kind = "multipath"
qps = {qps}
chunk_size = {chunk}
outstanding = {outstanding}
refill_on = "sent"
messages = [{{ src = 0, dst = 19, size = 10485760 }}]

[[traffic]]
kind = "random_pairs"
count = 200
size = 10485760
window = "1ms"

[fabric]
cc = "dcqcn"
mtu = {mtu}
"""


def fct_ms(qps: int, chunk: int, **kw: object) -> float:
    """The message's FCT in ms, mean over the three seeds."""
    out = []
    for s in SEEDS:
        res = rdmalab.run(rdmalab.Scenario.from_toml_text(scenario(qps, chunk, s, **kw)), progress=False)
        out.append(float(res.messages["fct_ns"][0]) / 1e6)
    return float(np.mean(out))


def bubble() -> None:
    print("| QPs | setting | 1 KiB ms | 8 KiB ms | 1 KiB / 8 KiB |")
    print("|---|---|---|---|---|")
    for q in (2, 4, 8):
        for label, kw in (("base: outstanding 1, MTU 1,000 B", {}), ("outstanding 2", {"outstanding": 2}),
                          ("MTU 1,100 B (a 1 KiB chunk is one packet)", {"mtu": 1100})):
            a, b = fct_ms(q, 1024, **kw), fct_ms(q, 8192, **kw)
            print(f"| {q} | {label} | {a:.2f} | {b:.2f} | {a / b:.3f} |", flush=True)


def paths() -> None:
    chunks = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    print("| QPs | fabric | " + " | ".join(f"{c // 1024}K" for c in chunks) + " | 128K / min |")
    print("|---|---|" + "---|" * len(chunks) + "---|")
    for q in (2, 4):
        for slow in (False, True):
            v = [fct_ms(q, c, slow_link=slow) for c in chunks]
            label = "leaf 24 - spine 25 at 10 Gb/s" if slow else "all links 40 Gb/s"
            print(f"| {q} | {label} | " + " | ".join(f"{x:.2f}" for x in v) + f" | {v[-1] / min(v):.2f} |",
                  flush=True)


if __name__ == "__main__":
    t0 = time.time()
    for w in sys.argv[1:] or ["bubble", "paths"]:
        {"bubble": bubble, "paths": paths}[w]()
    print(f"({time.time() - t0:.0f} s)")
