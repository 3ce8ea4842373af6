"""Collectives on the simulated fabric (docs/collectives.md, "Reproductions").

`collectives-busbw`: NCCL-tests' sweep (busbw and algbw against the size) for every collective
kind and algorithm of the engine on a 128-GPU rail fabric. `collectives-cc`: ring AllReduce
under no CC, DCQCN, HPCC and InfiniBand CC, on 1 and 4 channels, with the ranks in rail order
(an idle fabric) and in host order (ECMP collisions on the spines).

No published numbers are compared: each row sets a measured busbw beside a closed form of the
idle fabric (the ring's and the pipelined broadcast's, derived below) or beside the payload
ceiling of a link. The closed forms extend the star's of docs/collectives.md to the rail
fabric (a hop between leaves crosses a spine: four links instead of two) and to ACKs per
packet, which share each rank's uplink with its data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store
from rdmalab.plots import save_figure

#: NCCL-tests' bus-bandwidth factors (nccl-tests, doc/PERFORMANCE.md), n ranks.
FACTORS = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}
#: Steps of the ring per loop: allreduce is reduce-scatter then allgather.
RING_STEPS = {"allreduce": lambda n: 2 * (n - 1), "allgather": lambda n: n - 1, "reduce_scatter": lambda n: n - 1}
#: The engine's defaults the closed forms use (`SimConfig::default`; docs/model/links-and-switches.md#the-closed-form-of-a-lone-flow).
DEFAULT_MTU, DEFAULT_HEADER, DEFAULT_ACK, DEFAULT_CHUNK = 1000, 48, 60, 512 * 1024
#: INT bytes that HPCC adds to every data packet (`CcConfig::int_bytes`).
HPCC_INT = 42
#: InfiniBand's packet format (docs/model/infiniband.md#packet-format): LRH + BTH + ICRC + VCRC on every data packet,
#: a RETH on a message's first, a 30-byte ACK, and a 6-byte flow-control packet per packet.
IB_HEADER, IB_RETH, IB_ACK, IB_FC = 26, 16, 30, 6

_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4,
          "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_RATES = {"bps": 1, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12}
_TIMES = {"ps": 1e-3, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def _split(text: str | int | float, units: dict[str, float], what: str) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2) not in units:
        raise ValueError(f"cannot read {what} `{text}` (units: {', '.join(u for u in units if u)})")
    return float(m.group(1)) * units[m.group(2)]


def size_bytes(size: str | int) -> int:
    """`"64MiB"` -> 67108864 (as `[[collective]] size` reads it)."""
    return int(_split(size, _UNITS, "size"))


@dataclass(frozen=True)
class Wire:
    """What the closed forms need of a scenario's fabric."""

    rate_bps: float      #: every link's rate (the rail fabric's host and fabric rates are equal here)
    delay_ns: float      #: every link's delay
    mtu: int             #: payload bytes of a full packet
    header: int          #: wire bytes a data packet adds to its payload
    first: int           #: extra bytes on a message's first packet (InfiniBand's RETH)
    back: float          #: bytes a receiver returns per data packet (ACK, IB flow control)
    ack: int             #: an ACK's wire bytes

    def tx(self, nbytes: float) -> float:
        """ns to send `nbytes` on a link."""
        return nbytes * 8 / self.rate_bps * 1e9

    def serial(self, payload: int, parts: int = 1) -> float:
        """ns that a rank's uplink spends on `payload` bytes cut into `parts` equal messages
        (channels), with the ACKs (and IB credits) it returns for as many received packets."""
        each = -(-payload // parts)
        full, rest = divmod(each, self.mtu)
        pkts = full + (1 if rest else 0)
        return parts * self.tx(each + pkts * (self.header + self.back) + self.first)

    def arrive(self, payload: int, links: int, parts: int = 1) -> float:
        """ns from a message's first bit to its last byte placed, `links` links away:
        serialised on the first, one packet's store-and-forward and a delay per further link."""
        last = min(-(-payload // parts), self.mtu) + self.header
        return self.serial(payload, parts) + (links - 1) * self.tx(last) + links * self.delay_ns

    def payload_gbps(self) -> float:
        """A link's payload ceiling when it also carries the returns for as much data."""
        return self.rate_bps / 1e9 * self.mtu / (self.mtu + self.header + self.back)


def wire(scenario: dict) -> Wire:
    """The fabric of a scenario (a run's expanded scenario, as the store keeps it)."""
    topo, fab = scenario["topology"], scenario.get("fabric", {})
    # The rail fabric's rates default to 400 Gb/s, the star's and leaf-spine's to 100 Gb/s.
    default = "400Gbps" if topo.get("kind") == "rail" else "100Gbps"
    host = topo.get("rate", default) if topo.get("kind") == "star" else topo.get("host_rate", default)
    rate = _split(host, _RATES, "rate")
    if _split(topo.get("fabric_rate", host), _RATES, "rate") != rate:
        raise ValueError("the closed forms here assume one rate for host and fabric links")
    delay = _split(topo.get("delay", "1us"), _TIMES, "delay")
    mtu = int(fab.get("mtu", 2048 if fab.get("link_layer") == "infiniband" else DEFAULT_MTU))
    if fab.get("link_layer") == "infiniband":
        return Wire(rate, delay, mtu, IB_HEADER, IB_RETH, IB_ACK + IB_FC, IB_ACK)
    interval = int(fab.get("ack_interval", 1))
    intb = HPCC_INT if fab.get("cc") == "hpcc" else 0
    ack = max(14 + 20 + 12 + intb, int(fab.get("ack_bytes", DEFAULT_ACK))) if intb else int(
        fab.get("ack_bytes", DEFAULT_ACK))
    header = int(fab.get("header_bytes", DEFAULT_HEADER)) + intb
    return Wire(rate, delay, mtu, header, 0, ack / interval, ack)


def ranks_of(spec: dict) -> list[int]:
    """A `[[collective]]`'s ranks as hosts in rank order."""
    r = spec["ranks"]
    if isinstance(r, dict):
        a, b = (int(x) for x in r["hosts"].split(".."))
        return list(range(a, b + 1))
    return [int(x) for x in r]


def rail_links(topo: dict) -> Callable[[int, int], int]:
    """(host a, host b) -> links between them on a `kind = "rail"` fabric: 2 under one leaf,
    4 through a spine (docs/collectives.md, "Rail-optimised fabrics")."""
    if topo.get("kind") != "rail":
        raise ValueError("the closed forms here are the rail fabric's")
    g = int(topo.get("gpus_per_server", 8))
    per_leaf = int(topo["servers"]) // int(topo.get("leaves_per_rail", 1))

    def leaf(h: int) -> tuple[int, int]:
        return h % g, (h // g) // per_leaf

    return lambda a, b: 2 if leaf(a) == leaf(b) else 4


def links_of(topo: dict) -> Callable[[int, int], int]:
    """(host a, host b) -> links between them: 2 on a star or under one leaf, 4 through a
    spine of a leaf-spine (hosts numbered leaf by leaf) or of a rail fabric."""
    kind = topo.get("kind")
    if kind == "star":
        return lambda a, b: 2
    if kind == "leaf_spine":
        per = int(topo["hosts_per_leaf"])
        return lambda a, b: 2 if a // per == b // per else 4
    return rail_links(topo)


def direct_alltoall_closed_form_ns(scenario: dict, spec: dict) -> float:
    """Completion of the direct all-to-all on an idle non-blocking fabric: each rank's n-1
    pieces of size/n leave its uplink back to back (with the ACKs it returns for as many
    received packets), and the last piece then crosses the longest way to its destination
    (the star's form of docs/collectives.md, hop by hop)."""
    w, links, ranks = wire(scenario), links_of(scenario["topology"]), ranks_of(spec)
    n, size = len(ranks), size_bytes(spec["size"])
    seg = size // n
    far = max(links(a, b) for a in ranks for b in ranks if a != b)
    return (n - 2) * w.serial(seg) + w.arrive(seg, far)


def ring_closed_form_ns(scenario: dict, spec: dict | None = None) -> float | None:
    """Completion of a ring allreduce, allgather or reduce-scatter on the idle fabric, one
    loop (size / ranks at most `chunk`): rank j's last step ends a chain of K ring hops (K =
    2(n-1) or n-1), the hops into j, each A(size/n) over its links, plus an ACK's transmission
    per step after the first (docs/collectives.md's star form, hop by hop). With more loops,
    the bandwidth bound K · size/n at the payload ceiling (the loops hide the latencies).
    None for another kind or algorithm."""
    spec = spec or scenario["collective"][0]
    kind, alg = spec["kind"], spec.get("algorithm") or ("direct" if spec["kind"] == "alltoall" else "ring")
    if kind not in RING_STEPS or alg != "ring":
        return None
    w, links, ranks = wire(scenario), links_of(scenario["topology"]), ranks_of(spec)
    n, size, c = len(ranks), size_bytes(spec["size"]), int(spec.get("channels", 1))
    k = RING_STEPS[kind](n)
    seg = size // n
    if -(-size // (n * c)) > size_bytes(spec.get("chunk", DEFAULT_CHUNK)):
        return k * w.serial(seg, c)
    hop = [w.arrive(seg, links(ranks[i], ranks[(i + 1) % n]), c) for i in range(n)]
    chains = [sum(hop[(j - 1 - s) % n] for s in range(k)) for j in range(n)]
    return max(chains) + (k - 1) * w.tx(w.ack)


def broadcast_closed_form_ns(scenario: dict, spec: dict | None = None) -> float | None:
    """Completion of the pipelined ring broadcast on the idle fabric (one channel): the first
    chunk down the chain of n-1 hops, then the other m-1 chunks one serialisation apart."""
    spec = spec or scenario["collective"][0]
    if spec["kind"] != "broadcast" or int(spec.get("channels", 1)) != 1:
        return None
    w, links, ranks = wire(scenario), links_of(scenario["topology"]), ranks_of(spec)
    size, chunk = size_bytes(spec["size"]), size_bytes(spec.get("chunk", DEFAULT_CHUNK))
    c = min(size, chunk)
    m = -(-size // c)
    first = sum(w.arrive(c, links(ranks[i], ranks[i + 1])) for i in range(len(ranks) - 1))
    return first + (m - 1) * w.serial(c)


def closed_form_busbw(scenario: dict) -> float | None:
    """busbw (Gbit/s) of the run's first collective by its closed form, if it has one."""
    spec = scenario["collective"][0]
    t = ring_closed_form_ns(scenario, spec)
    t = broadcast_closed_form_ns(scenario, spec) if t is None else t
    if t is None:
        return None
    n, size = len(ranks_of(spec)), size_bytes(spec["size"])
    return size * 8 / t * FACTORS[spec["kind"]](n)


def results(store: Store, runs: pl.DataFrame) -> list[dict]:
    """Per successful run: its scenario and its first collective's record (iteration 0)."""
    ok = runs.filter(pl.col("status") == "ok")
    coll = store.table("collectives", params=False)
    if "name" not in coll.columns:
        return []
    rec = {r["run_id"]: r for r in coll.filter(pl.col("name").str.ends_with("#0")).iter_rows(named=True)}
    out = []
    for r in ok.iter_rows(named=True):
        if r["run_id"] in rec:
            out.append({"scenario": json.loads(r["scenario"]), "counters": r, **rec[r["run_id"]]})
    return out


def _label(rec: dict) -> str:
    return f"{rec['kind']}/{rec['algorithm']}"


def _size_text(b: int) -> str:
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if b >= scale and b % scale == 0:
            return f"{b // scale}{unit}"
    return f"{b}B"


# -- collectives-busbw --------------------------------------------------------------------------
def compare_busbw(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per kind/algorithm: busbw at the largest size against the link's payload ceiling; the
    ring kinds at their largest one-loop size, and the broadcast at the largest size, against
    their closed forms."""
    recs = results(store, runs)
    out = []
    for label in sorted({_label(r) for r in recs}):
        mine = sorted((r for r in recs if _label(r) == label), key=lambda r: r["size"])
        big = mine[-1]
        ceiling = wire(big["scenario"]).payload_gbps()
        out.append(Comparison(f"{label} {_size_text(big['size'])}", "busbw / ceiling", big["busbw_gbps"], ceiling))
        loop = [r for r in mine if r["kind"] in RING_STEPS and r["algorithm"] == "ring"
                and r["size"] <= r["ranks"] * size_bytes(r["scenario"]["collective"][0].get("chunk", DEFAULT_CHUNK))]
        for r in ([loop[-1]] if loop else []) + ([big] if big["kind"] == "broadcast" else []):
            cf = closed_form_busbw(r["scenario"])
            if cf is not None:
                out.append(Comparison(f"{label} {_size_text(r['size'])}", "busbw / closed form", r["busbw_gbps"], cf))
    return out


def busbw_table(recs: list[dict], column: str = "busbw_gbps") -> str:
    """A markdown table: one row per kind/algorithm, one column per size (Gbit/s)."""
    sizes = sorted({r["size"] for r in recs})
    labels = sorted({_label(r) for r in recs})
    cell = {(_label(r), r["size"]): r[column] for r in recs}
    lines = ["| kind / algorithm | " + " | ".join(_size_text(s) for s in sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for lab in labels:
        vals = [cell.get((lab, s)) for s in sizes]
        lines.append(f"| {lab} | " + " | ".join("" if v is None else f"{v:.1f}" for v in vals) + " |")
    return "\n".join(lines)


def report_busbw(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """busbw and algbw by size (markdown), and the closed forms at the largest sizes."""
    recs = results(store, runs)
    if not recs:
        return "(no collective records)"
    n = recs[0]["ranks"]
    w = wire(recs[0]["scenario"])
    lines = [f"busbw (Gbit/s; nccl-tests prints GB/s = Gbit/s / 8), {n} ranks:", "", busbw_table(recs), "",
             "algbw (Gbit/s):", "", busbw_table(recs, "algbw_gbps"), "",
             f"payload ceiling of a link carrying its returns: {w.payload_gbps():.1f} Gbit/s "
             f"({w.rate_bps / 1e9:g} Gb/s x {w.mtu}/{w.mtu + w.header + w.back})", ""]
    lines.append("| kind / algorithm | size | time us | closed form us | busbw | closed-form busbw | ratio |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in sorted(recs, key=lambda r: (_label(r), r["size"])):
        cf = closed_form_busbw(r["scenario"])
        if cf is None:
            continue
        t, tcf = r["end_ns"] - r["start_ns"], r["size"] * 8 / cf * FACTORS[r["kind"]](r["ranks"])
        lines.append(f"| {_label(r)} | {_size_text(r['size'])} | {t / 1e3:.1f} | {tcf / 1e3:.1f} | "
                     f"{r['busbw_gbps']:.1f} | {cf:.1f} | {r['busbw_gbps'] / cf:.3f} |")
    return "\n".join(lines)


def busbw_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """busbw and algbw against the size, log-x, one line per kind/algorithm, the ceiling dashed."""
    store = Store(sweep_dir)
    recs = results(store, store.runs())
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = sorted({r["size"] for r in recs})
    # Allgather and reduce-scatter trace the ring allreduce's busbw: styles keep all three visible.
    for i, lab in enumerate(sorted({_label(r) for r in recs})):
        mine = sorted((r for r in recs if _label(r) == lab), key=lambda r: r["size"])
        for ax, col in zip(axes, ("busbw_gbps", "algbw_gbps")):
            ax.plot([r["size"] for r in mine], [r[col] for r in mine], marker="os^vDPX"[i % 7], ms=4,
                    lw=1.2, ls=("-", "--", ":", "-.")[i % 4], label=lab)
    if recs:
        ceiling = wire(recs[0]["scenario"]).payload_gbps()
        axes[0].axhline(ceiling, color="k", ls="--", lw=0.8, label=f"payload ceiling {ceiling:.0f}")
    n = recs[0]["ranks"] if recs else 0
    for ax, what in zip(axes, ("busbw", "algbw")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [_size_text(s) for s in sizes], fontsize=7)
        ax.set_xlabel("size per rank (NCCL-tests' size)")
        ax.set_ylabel(f"{what} (Gbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    name = store.manifest().get("name", "")
    fig.suptitle(f"{name}: {n} ranks on a rail fabric, one collective at a time (NCCL-tests' definitions)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize=8)
    return save_figure(fig, Path(out_dir) / "busbw_vs_size")


# -- collectives-cc -----------------------------------------------------------------------------
def order_name(scenario: dict) -> str:
    """`host` for the ranks in host order, `rail` for them rail by rail (GPU g of every
    server, then GPU g+1), `custom` otherwise."""
    ranks = ranks_of(scenario["collective"][0])
    topo = scenario["topology"]
    g, s = int(topo.get("gpus_per_server", 8)), int(topo.get("servers", 0))
    if ranks == sorted(ranks):
        return "host"
    return "rail" if ranks == [si * g + gi for gi in range(g) for si in range(s)] else "custom"


def cc_name(scenario: dict) -> str:
    fab = scenario.get("fabric", {})
    cc = fab.get("cc", "none")
    return f"{cc} (IB)" if fab.get("link_layer") == "infiniband" else cc


def _cc_key(rec: dict) -> tuple:
    order = ["none", "dcqcn", "hpcc", "ib (IB)"]
    sc = rec["scenario"]
    cc = cc_name(sc)
    return (order_name(sc) != "rail", order.index(cc) if cc in order else 9, cc,
            int(sc["collective"][0].get("channels", 1)))


def uncongested_busbw(scenario: dict) -> float | None:
    """The ring's closed form on this fabric with this CC's packet format, one channel, the
    ranks in rail order: what the ring achieves when nothing collides."""
    spec = dict(scenario["collective"][0])
    ranks = ranks_of(spec)
    topo = scenario["topology"]
    g, s = int(topo.get("gpus_per_server", 8)), int(topo["servers"])
    if sorted(ranks) != list(range(g * s)):
        return None
    spec["ranks"], spec["channels"] = [si * g + gi for gi in range(g) for si in range(s)], 1
    return closed_form_busbw({**scenario, "collective": [spec]})


def compare_cc(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per CC, channels and rank order: busbw against the idle ring's closed form."""
    out = []
    for r in sorted(results(store, runs), key=_cc_key):
        sc = r["scenario"]
        ch = int(sc["collective"][0].get("channels", 1))
        cf = uncongested_busbw(sc)
        out.append(Comparison(f"{cc_name(sc)} ch={ch} {order_name(sc)}", "busbw / idle ring",
                              r["busbw_gbps"], cf if cf is not None else float("nan")))
    return out


def report_cc(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """Completion time, algbw and busbw per CC, channels and rank order, with the marks and
    pauses (markdown)."""
    recs = sorted(results(store, runs), key=_cc_key)
    if not recs:
        return "(no collective records)"
    lines = ["| ranks | CC | channels | time us | algbw | busbw | idle-ring busbw | ratio | ECN / FECN marks | "
             "PFC pauses | run wall s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        sc, c = r["scenario"], r["counters"]
        cf = uncongested_busbw(sc) or float("nan")
        marks = int(c.get("ecn_marks") or 0) + int(c.get("fecn_marks") or 0)
        lines.append(f"| {order_name(sc)} order | {cc_name(sc)} | {sc['collective'][0].get('channels', 1)} | "
                     f"{(r['end_ns'] - r['start_ns']) / 1e3:.1f} | {r['algbw_gbps']:.1f} | {r['busbw_gbps']:.1f} | "
                     f"{cf:.1f} | {r['busbw_gbps'] / cf:.3f} | {marks} | {int(c.get('pauses') or 0)} | "
                     f"{c.get('wall_s', 0.0):.1f} |")
    return "\n".join(lines)


def cc_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """busbw per CC: bars per channels, one panel per rank order, the idle ring dashed."""
    store = Store(sweep_dir)
    recs = sorted(results(store, store.runs()), key=_cc_key)
    orders = [o for o in ("rail", "host") if any(order_name(r["scenario"]) == o for r in recs)]
    fig, axes = plt.subplots(1, max(len(orders), 1), figsize=(5 * max(len(orders), 1), 3.8), squeeze=False)
    for ax, order in zip(axes[0], orders):
        mine = [r for r in recs if order_name(r["scenario"]) == order]
        ccs = list(dict.fromkeys(cc_name(r["scenario"]) for r in mine))
        chans = sorted({int(r["scenario"]["collective"][0].get("channels", 1)) for r in mine})
        width = 0.8 / len(chans)
        for k, ch in enumerate(chans):
            ys = [next((r["busbw_gbps"] for r in mine if cc_name(r["scenario"]) == cc
                        and int(r["scenario"]["collective"][0].get("channels", 1)) == ch), 0.0) for cc in ccs]
            ax.bar([i + (k - (len(chans) - 1) / 2) * width for i in range(len(ccs))], ys, width,
                   label=f"{ch} channel{'s' if ch > 1 else ''}")
        cf = uncongested_busbw(mine[0]["scenario"])
        if cf is not None:
            ax.axhline(cf, color="k", ls="--", lw=0.8, label=f"idle ring (closed form) {cf:.0f}")
        ax.set_xticks(range(len(ccs)), ccs, fontsize=8)
        ax.set_ylabel("busbw (Gbit/s)")
        ax.set_ylim(0, 1.3 * max([cf or 0.0] + [r["busbw_gbps"] for r in mine]))
        ax.set_title(f"ranks in {order} order", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", ncol=3)
    name = store.manifest().get("name", "")
    size = _size_text(recs[0]["size"]) if recs else ""
    fig.suptitle(f"{name}: ring AllReduce of {size} on {recs[0]['ranks'] if recs else 0} GPUs", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "busbw_by_cc")


CITATION = ("NCCL-tests' algbw and busbw (NVIDIA/nccl-tests, doc/PERFORMANCE.md); no paper's "
            "numbers are reproduced or compared")

EXPERIMENTS = [
    Experiment(
        name="collectives-busbw",
        title="Collectives: busbw and algbw vs size per kind and algorithm, 128-GPU rail fabric",
        citation=CITATION,
        sweep="collectives_busbw.toml", quick="collectives_busbw_quick.toml",
        figures=[], by="collective[0].size", compare=compare_busbw, report=report_busbw,
        theirs="closed forms of the idle fabric (the ring's and the pipelined broadcast's, hop by hop, "
               "ACKs sharing the uplink) and a link's payload ceiling: rdmalab's own derivations, "
               "docs/collectives.md 'Reproductions'",
        needs_cc=["dcqcn"], extra_figures=busbw_figure, theirs_from_runs=True,
    ),
    Experiment(
        name="collectives-cc",
        title="Collectives: ring AllReduce under none / DCQCN / HPCC / IB CC, channels 1 and 4, 128 GPUs",
        citation=CITATION,
        sweep="collectives_cc.toml", quick="collectives_cc_quick.toml",
        figures=[], by="fabric", compare=compare_cc, report=report_cc,
        theirs="the ring's closed form on the idle fabric (ranks in rail order, one channel, the row's "
               "packet format): what the ring gets when nothing collides",
        needs_cc=["none", "dcqcn", "hpcc", "ib"], extra_figures=cc_figure, theirs_from_runs=True,
    ),
]
