"""The data-partition paper's open differences, each with the run that removes its suspected cause.

`python -m rdmalab.experiments.causes.mp_partition_causes [bubble|paths|flatten|knee|fresh|ns3rdma|
ns3rdma_flatten|ns3rdma_knee|echo]` runs mp-partition-topo1's full setting (leaf-spine 5 x 4
hosts, 5 spines, 40 Gb/s, 1 µs links, DCQCN, 10 MiB from host 0 to host 19 beside 200 x 10 MiB
background flows, refill on "sent") for seeds 1-3 and prints the mean message FCT in ms:

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
- `flatten`: why our gain keeps growing to 16 QPs where the paper's flattens at 3-5.
  Suspected cause: in ours the message's bottleneck is the receiver's downlink, where every
  QP is one more share among the background flows that also end at host 19, so each QP
  adds about as much as the last. The run keeps the background off the message's two hosts
  (`hosts` 1-18), so the message's only contention is in the fabric, on the five spine
  paths its QPs hash onto. Run on topology 2 (a full mesh of 5 switches x 4 hosts) as well,
  whose 1-QP FCT the paper finds below topology 1's.
- `knee`: `paths`' question again with `flatten`'s background (off the message's hosts):
  with the contention in the fabric, do large chunks on a busy spine path cost time?
- `fresh`: the knee once more, with every chunk on a fresh QP (`qp_policy = "recreate"`), as
  a simulator whose flows are QPs would send it: each chunk starts at line rate, and a chunk
  larger than the path's BDP (about 50 KB here) is cut by DCQCN before it ends. Refill on
  `sent` and on `ack`.
- `ns3rdma`: `fresh` under `sent` once more (and kept QPs at 1 and 2 QPs), with the DCQCN of
  the simulator the paper cites ([33], ns3-rdma) as its shipped configuration sets it
  (`NS3_RDMA_DCQCN` below) instead of the HPCC reference's. Suspected: the size of the knee is
  set by how hard DCQCN cuts a chunk that outlives its first round trip, and ns3-rdma marks
  from 41 KB with probability up to 1 and sends at most one CNP per 50 us per flow, where the
  reference marks from 160 KB (at 40 Gb/s) with at most 0.2, and its flows recover by
  additive steps only.
- `ns3rdma_flatten`: `flatten` with that DCQCN: does the cited simulator's CC flatten the gain
  in QPs, or topology 2's curve?
- `ns3rdma_knee`: `knee` with that DCQCN: a QP cut on a busy spine path climbs back by additive
  steps only, so does a large chunk stuck on it hold the message up?
- `echo`: no simulation. How much of 10 MiB ns3-rdma's own chunk mode (`SEND_IN_CHUNKS`)
  delivers at each chunk size before it stops (`ns3rdma_echo_chunks`).
"""

from __future__ import annotations

import sys

import numpy as np

from rdmalab.experiments.causes.base import Investigation, run

SEEDS = (1, 2, 3)
#: The paper's chunk sizes (Figs. 7-11), 1 KiB to 128 KiB.
CHUNKS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


#: The data-partition paper's topologies 1 (leaf-spine) and 2 (full mesh), hosts 0-19 in both.
TOPOLOGY = {
    1: 'kind = "leaf_spine"\nleaves = 5\nspines = 5\nhosts_per_leaf = 4\nhost_rate = "40Gbps"\n'
       'fabric_rate = "40Gbps"\ndelay = "1us"',
    2: 'kind = "full_mesh"\nswitches = 5\nhosts_per_switch = 4\nrate = "40Gbps"\ndelay = "1us"',
}


#: ns3-rdma's DCQCN (github.com/bobzhuyb/ns3-rdma, `windows/ns-3-dev/x64/Release/mix/config.txt`,
#: the configuration that turns on flow-level ECMP, which multipath needs): CNP_INTERVAL 50,
#: ALPHA_RESUME_INTERVAL 55, RP_TIMER 60 (us), RATE_AI 40 and RATE_HAI 200 Mb/s,
#: FAST_RECOVERY_TIMES 5, CLAMP_TARGET_RATE 1, DCTCP_GAIN 1/256, KMIN 40 and KMAX 1000 (KB of
#: 1,030 B, `broadcom-node.cc`), PMAX 1.0; the device's MinRate default 100 Mb/s. Two more
#: from `qbb-net-device.cc`: every flow's alpha starts at 0.5 (`initial_alpha`), and hyper
#: increase needs both the byte and the timer stage past FAST_RECOVERY_TIMES
#: (`rpr_active_select`). Its BYTE_COUNTER of 300 MB never fires in a 10 MiB run, so its
#: flows never leave additive increase: `byte_counter = 300000000` does the same here (a
#: counter of 0 would be the reference's timer-only rule, which reaches hyper increase at the
#: seventh timer event). Not carried over: it cuts on the CNP itself where ours cuts at the
#: next 4 us decrease check, and a first increase event divides a target above 10x the rate
#: by 8 (`AdjustRates`).
NS3_RDMA_DCQCN = """cnp_interval = "50us"
ecn_kmin = 41200
ecn_kmax = 1030000
ecn_pmax = 1.0
[fabric.cc_params]
alpha_resume_interval = "55us"
rp_timer = "60us"
rate_ai = "40Mb/s"
rate_hai = "200Mb/s"
fast_recovery_times = 5
clamp_target_rate = true
ewma_gain = 0.00390625
min_rate = "100Mb/s"
initial_alpha = 0.5
byte_counter = 300000000
"""


def scenario(qps: int, chunk: int, seed: int, outstanding: int = 1, slow_link: bool = False,
             mtu: int = 1000, bg_hosts: list[int] | None = None, topology: int = 1,
             qp_policy: str = "reuse", refill_on: str = "sent", dcqcn: str = "") -> str:
    links = '\n[[links]]\na = 24\nb = 25\nrate = "10Gbps"' if slow_link else ""
    hosts = f"\nhosts = {bg_hosts}" if bg_hosts else ""
    return f"""seed = {seed}
[topology]
{TOPOLOGY[topology]}
{links}

[[traffic]]
kind = "multipath"
qps = {qps}
chunk_size = {chunk}
outstanding = {outstanding}
refill_on = "{refill_on}"
qp_policy = "{qp_policy}"
messages = [{{ src = 0, dst = 19, size = 10485760 }}]

[[traffic]]
kind = "random_pairs"
count = 200
size = 10485760
window = "1ms"{hosts}

[fabric]
cc = "dcqcn"
mtu = {mtu}
{dcqcn}"""


def fct_ms(qps: int, chunk: int, **kw: object) -> float:
    """The message's FCT in ms, mean over the three seeds."""
    out = []
    for s in SEEDS:
        res = run(scenario(qps, chunk, s, **kw))
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
    chunks = CHUNKS
    print("| QPs | fabric | " + " | ".join(f"{c // 1024}K" for c in chunks) + " | 128K / min |")
    print("|---|---|" + "---|" * len(chunks) + "---|")
    for q in (2, 4):
        for slow in (False, True):
            v = [fct_ms(q, c, slow_link=slow) for c in chunks]
            label = "leaf 24 - spine 25 at 10 Gb/s" if slow else "all links 40 Gb/s"
            print(f"| {q} | {label} | " + " | ".join(f"{x:.2f}" for x in v) + f" | {v[-1] / min(v):.2f} |",
                  flush=True)


def flatten(dcqcn: str = "", name: str = "") -> None:
    qps = [1, 2, 3, 4, 5, 6, 8, 12, 16]
    print("| background | " + " | ".join(f"{q} QP" for q in qps) + " |")
    print("|---|" + "---|" * len(qps))
    for topo in (1, 2):
        for label, bg in (("any hosts (ours)", None), ("hosts 1-18 only", list(range(1, 19)))):
            v = [fct_ms(q, 32768, bg_hosts=bg, topology=topo, dcqcn=dcqcn) for q in qps]
            row = f"topology {topo}{name}, background on {label}"
            print(f"| {row}, FCT ms | " + " | ".join(f"{x:.2f}" for x in v) + " |", flush=True)
            print(f"| {row}, reduction | " + " | ".join(f"{1 - x / v[0]:.0%}" for x in v) + " |", flush=True)


def knee(dcqcn: str = "", qps: tuple[int, ...] = (2, 3, 4, 5)) -> None:
    chunks = CHUNKS
    print("| QPs | background | " + " | ".join(f"{c // 1024}K" for c in chunks) + " | 128K / min |")
    print("|---|---|" + "---|" * len(chunks) + "---|")
    for q in qps:
        v = [fct_ms(q, c, bg_hosts=list(range(1, 19)), dcqcn=dcqcn) for c in chunks]
        print(f"| {q} | hosts 1-18 only | " + " | ".join(f"{x:.2f}" for x in v) + f" | {v[-1] / min(v):.2f} |",
              flush=True)


def fresh() -> None:
    chunks = CHUNKS
    print("| QPs | refill | " + " | ".join(f"{c // 1024}K" for c in chunks) + " | 128K / min |")
    print("|---|---|" + "---|" * len(chunks) + "---|")
    for refill in ("sent", "ack"):
        for q in (2, 3, 4, 5):
            v = [fct_ms(q, c, qp_policy="recreate", refill_on=refill) for c in chunks]
            print(f"| {q} | {refill} | " + " | ".join(f"{x:.2f}" for x in v) + f" | {v[-1] / min(v):.2f} |",
                  flush=True)


def ns3rdma() -> None:
    print("| QPs | DCQCN | QP per chunk | " + " | ".join(f"{c // 1024}K" for c in CHUNKS) + " | 128K / min |")
    print("|---|---|---|" + "---|" * len(CHUNKS) + "---|")
    one = fct_ms(1, 32768, dcqcn=NS3_RDMA_DCQCN)
    print(f"| 1 | ns3-rdma | kept (one flow), 32K | {one:.2f} (paper 20.64) |", flush=True)
    rows = [(2, "recreate"), (2, "reuse"), (3, "recreate"), (4, "recreate"), (5, "recreate")]
    for q, policy in rows:
        v = [fct_ms(q, c, qp_policy=policy, dcqcn=NS3_RDMA_DCQCN) for c in CHUNKS]
        label = "fresh" if policy == "recreate" else "kept"
        print(f"| {q} | ns3-rdma | {label} | " + " | ".join(f"{x:.2f}" for x in v) + f" | {v[-1] / min(v):.2f} |",
              flush=True)


def ns3rdma_echo_chunks(chunk: int, packet: int = 1000, total: int = 10 << 20) -> int:
    """Bytes of `total` that ns3-rdma's own chunk mode delivers before it stops for good.

    With `SEND_IN_CHUNKS 1` (`third.cc`; the shipped config has 0) each flow is a
    `UdpEchoClient` / `UdpEchoServer` pair sharing an attribute `ChunkSize`: the client may
    send `ChunkSize` bytes more per echo it receives, and the server echoes once it has
    received `ChunkSize` bytes since its last echo, then sets its count back to 0: bytes past
    the chunk are forgotten. Packets are `PACKET_PAYLOAD_SIZE` bytes (1,000). So each echo
    costs ceil(chunk / packet) packets, and the client stops at the first packet count n
    with n x packet >= chunk x (1 + echoes(n)). Timing decides only when, not where.
    """
    per_echo = -(-chunk // packet)
    n = 0
    while n * packet < total and n * packet < chunk * (1 + n // per_echo):
        n += 1
    return min(n * packet, total)


def echo() -> None:
    sizes = list(CHUNKS) + [1000, 32000, 128000]
    print("| ChunkSize B | bytes of 10 MiB delivered before the flow stops |")
    print("|---|---|")
    for c in sizes:
        print(f"| {c:,} | {ns3rdma_echo_chunks(c):,} |")


INVESTIGATION = Investigation("mp_partition_causes", {
    "bubble": bubble, "paths": paths, "flatten": lambda: flatten(), "knee": lambda: knee(), "fresh": fresh,
    "ns3rdma": ns3rdma, "ns3rdma_flatten": lambda: flatten(NS3_RDMA_DCQCN, ", ns3-rdma's DCQCN"),
    "ns3rdma_knee": lambda: knee(NS3_RDMA_DCQCN), "echo": echo}, ["bubble", "paths"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
