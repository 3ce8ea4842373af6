"""*RDMA Load Balancing via Data Partition* (Wang et al.): the numbers its §IV
gives, and ours beside them, for the three `mp-partition-topo*` experiments.

Ours come from the sweep's `messages` table (the 10 MiB message, mean over seeds) scaled to
the paper's 10 MiB when a quick variant shrank it; and from the `flows` table for the share
of the fabric a connection of q QPs gets against one background flow (one share per QP
under per-QP congestion control: q).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from rdmalab.experiments.figures.multipath import fct_table
from rdmalab.experiments.repro.base import Comparison, Experiment

#: The paper's message: 10 MB read as 10 MiB (10 MB / 64K = 160 WRs, §IV).
PAPER_BYTES = 10 * 1024 * 1024
NAN = float("nan")

#: What §IV reports, per topology (ms unless named otherwise).
PAPER = {
    1: {"one_qp_ms": 20.639592, "two_qp_small_ms": (12.53, 12.65), "two_qp_64k_ms": 15.009224,
        "two_qp_128k_ms": 17.816130, "best_reduction_pct": 81.03, "chunk_effect_pct": (13.74, 69.71),
        "knee_kib": 32},
    2: {"one_qp_ms": 17.772320, "swing_128k_us": 180.0},
    # "about 200000 ns" above topology 1: derived, not printed in the paper.
    3: {"one_qp_ms": 20.639592 + 0.2},
}


def _scale(store) -> float:  # noqa: ANN001
    """Paper bytes over our message's bytes (4 for the quick variants, else 1)."""
    m = store.table("messages", params=False)
    return PAPER_BYTES / float(m["size"][0]) if m.height else 1.0


def _mean(t: pl.DataFrame, q: int, chunks: list[int] | None = None) -> float:
    sel = t.filter(pl.col("qps") == q)
    if chunks is not None:
        sel = sel.filter(pl.col("chunk").is_in(chunks))
    return float(sel["mean"].mean()) if sel.height else NAN


def _reductions(t: pl.DataFrame) -> dict[int, float]:
    """Per chunk size: the largest FCT reduction of any QP count over the 1-QP FCT at the
    same chunk size, in %. This is §I/§IV's "decrease the transmission time by 81.03 % at
    most" read literally: multipath against "single path transmission" (1 QP), the other
    settings equal. The paper's 1-QP FCT is the same at every chunk size, so for its
    numbers the baseline's chunk size does not matter; for ours (under `ack`) it does."""
    out = {}
    for chunk in sorted(set(t["chunk"].to_list())):
        sub = t.filter(pl.col("chunk") == chunk)
        one = sub.filter(pl.col("qps") == 1)["mean"]
        more = sub.filter(pl.col("qps") > 1)["mean"]
        if one.len() and more.len():
            out[chunk] = 100 * (1 - float(more.min()) / float(one[0]))
    return out


def _rows(topo: int, t: pl.DataFrame, scale: float):  # noqa: ANN202
    """(group, metric, ours, theirs) of the FCT curves."""
    p = PAPER[topo]
    t = t.with_columns(pl.col("mean") * scale, pl.col("min") * scale, pl.col("max") * scale)
    chunks = sorted(set(t["chunk"].to_list()))
    rows = [Comparison("1 QP", "FCT ms", _mean(t, 1), p["one_qp_ms"])]
    if 1 in t["qps"].to_list():
        c = t.filter(pl.col("qps") == 1)["mean"]
        rows.append(Comparison("1 QP", "spread over chunks %", 100 * (c.max() - c.min()) / c.mean(), 0.0))
    if topo == 1:
        small = t.filter((pl.col("qps") == 2) & (pl.col("chunk") <= 32768))["mean"]
        lo, hi = (float(small.min()), float(small.max())) if small.len() else (NAN, NAN)
        rows += [
            # §IV: "from 12530000 ns to 12650000 ns" over chunks 1K-32K: the range, not a mean.
            Comparison("2 QPs, chunk <= 32K", "fastest FCT ms", lo, p["two_qp_small_ms"][0]),
            Comparison("2 QPs, chunk <= 32K", "slowest FCT ms", hi, p["two_qp_small_ms"][1]),
            Comparison("2 QPs, chunk 64K", "FCT ms", _mean(t, 2, [65536]), p["two_qp_64k_ms"]),
            Comparison("2 QPs, chunk 128K", "FCT ms", _mean(t, 2, [131072]), p["two_qp_128k_ms"]),
        ]
    red = _reductions(t)
    if red:
        best = max(red, key=red.get)
        rows.append(Comparison("vs 1 QP, same chunk", "best reduction %", red[best], p.get("best_reduction_pct", NAN)))
        rows.append(Comparison("vs 1 QP, same chunk", "best at chunk KiB", best / 1024, NAN))
    effects = []
    for q in sorted(q for q in set(t["qps"].to_list()) if q >= 2):
        c = t.filter(pl.col("qps") == q)["mean"].to_numpy()
        if len(c) >= 2 and c.max() > 0:
            # How much the chunk size changes this QP count's FCT: (slowest - fastest) / slowest.
            effects.append(100 * (c.max() - c.min()) / c.max())
    if effects:
        lo, hi = p.get("chunk_effect_pct", (NAN, NAN))
        rows.append(Comparison("chunk effect QPs>=2", "min %", min(effects), lo))
        rows.append(Comparison("chunk effect QPs>=2", "max %", max(effects), hi))
    if topo == 1:
        rows.append(Comparison("knee, QPs 2-5", "chunk KiB", _knee(t, chunks), p["knee_kib"]))
    if topo == 2:
        big = t.filter((pl.col("chunk") == 131072) & (pl.col("qps") >= 3))["mean"]
        swing = 1000 * (big.max() - big.min()) if big.len() else NAN
        rows.append(Comparison("128K, QPs >= 3", "FCT range us", swing, p["swing_128k_us"]))
    return rows


def _knee(t: pl.DataFrame, chunks: list[int]) -> float:
    """The chunk size after which the FCT (mean over 2-5 QPs) rises the most, in KiB."""
    curve = t.filter(pl.col("qps").is_between(2, 5)).group_by("chunk").agg(pl.col("mean").mean()).sort("chunk")
    y = curve["mean"].to_numpy()
    if len(y) < 2:
        return NAN
    return curve["chunk"][int(np.argmax(y[1:] / y[:-1]))] / 1024


def _shares(runs: pl.DataFrame, flows: pl.DataFrame, store):  # noqa: ANN001, ANN202
    """Per QP count: the message's throughput over the median background flow's, against q."""
    msgs = store.table("messages")
    if msgs.height == 0 or "traffic[0].qps" not in msgs.columns:
        return []
    rows = []
    for q, part in sorted(msgs.partition_by("traffic[0].qps", as_dict=True).items()):
        ratios = []
        for m in part.iter_rows(named=True):
            f = flows.filter(pl.col("run_id") == m["run_id"])
            bg = f.filter(pl.col("flow") < f["flow"].max())  # the message is the last flow row
            if bg.height and m["fct_ns"] and not math.isnan(m["fct_ns"]):
                median_bg = float((bg["size"] / bg["fct_ns"]).median())
                ratios.append((m["size"] / m["fct_ns"]) / median_bg)
        qv = int(q[0] if isinstance(q, tuple) else q)
        if ratios:
            rows.append(Comparison(f"{qv} QPs", "msg / bg throughput (one share per QP: q)", float(np.mean(ratios)),
                                   math.nan))
    return rows


def compare(topo: int):  # noqa: ANN201
    """The `compare` of experiment `mp-partition-topo{topo}`."""

    def run(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
        rows = _rows(topo, fct_table(store), _scale(store))
        return rows + _shares(runs, flows, store)

    return run


REFILL = "traffic[0].refill_on"
BG_COUNT, BG_SIZE = "traffic[1].count", "traffic[1].size"


def _by(store, cols: list[str]) -> pl.DataFrame:  # noqa: ANN001
    """Mean FCT (ms, scaled to the paper's 10 MiB) of the first message per value of `cols`
    and the QP count (and chunk size)."""
    df = store.table("messages")
    runs = store.runs().filter(pl.col("status") == "ok").select("run_id")
    df = df.join(runs, on="run_id").filter(pl.col("message") == 0)
    keys = [c for c in cols + ["traffic[0].qps", "traffic[0].chunk_size"] if c in df.columns]
    t = df.group_by(keys).agg((pl.col("fct_ns").mean() / 1e6 * _scale(store)).alias("ms"))
    return t.rename({"traffic[0].qps": "qps"}).sort([k.replace("traffic[0].qps", "qps") for k in keys])


def compare_refill(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Per refill rule: the 1-QP FCT at each chunk size beside the paper's (the same at every
    chunk size), its spread, and the best reduction against the 1-QP FCT at the same chunk."""
    t = _by(store, [REFILL]).rename({"traffic[0].chunk_size": "chunk"})
    rows = []
    for mode in ("ack", "sent"):
        sub = t.filter(pl.col(REFILL) == mode)
        one = sub.filter(pl.col("qps") == 1).sort("chunk")
        for r in one.iter_rows(named=True):
            rows.append(Comparison(f"{mode}, 1 QP", f"FCT ms, {r['chunk'] // 1024}K", r["ms"], PAPER[1]["one_qp_ms"]))
        if one.height:
            c = one["ms"]
            rows.append(Comparison(f"{mode}, 1 QP", "spread over chunks %", 100 * (c.max() - c.min()) / c.mean(), 0.0))
        red = _reductions(sub.rename({"ms": "mean"}))
        if red:
            rows.append(Comparison(f"{mode}", "best reduction %", max(red.values()), PAPER[1]["best_reduction_pct"]))
    return rows


def compare_background(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Per background (count x size): the message's FCT on 1 QP beside the paper's 20.6 ms, and
    on more QPs with its reduction against 1 QP."""
    t = _by(store, [BG_COUNT, BG_SIZE])
    rows = []
    for (count, size), sub in sorted(t.partition_by(BG_COUNT, BG_SIZE, as_dict=True).items()):
        group = f"{int(count)} x {int(size) / 2**20:g} MiB"
        one = sub.filter(pl.col("qps") == 1)["ms"]
        base = float(one[0]) if one.len() else NAN
        rows.append(Comparison(group, "1 QP FCT ms", base, PAPER[1]["one_qp_ms"]))
        for r in sub.filter(pl.col("qps") > 1).iter_rows(named=True):
            rows.append(Comparison(group, f"{r['qps']} QPs FCT ms", r["ms"], NAN))
            rows.append(Comparison(group, f"{r['qps']} QPs reduction %", 100 * (1 - r["ms"] / base), NAN))
    return rows


def compare_shares(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Per topology, with one rate per connection (`per_pair`): the message's FCT per QP count
    and its reduction against 1 QP. What is left is the paths' gain alone; the paper's curves
    "tend to be stable" from 3-5 QPs (topology 1 has 5 spines, topology 2 one path)."""
    df = store.table("messages")
    ok = store.runs().filter(pl.col("status") == "ok").select("run_id")
    df = df.join(ok, on="run_id").filter(pl.col("message") == 0)
    kind = pl.col("topology").str.json_path_match("$.kind")  # the grid stores the table as JSON
    t = df.with_columns(kind.alias("topo"), (pl.col("fct_ns") / 1e6 * _scale(store)).alias("ms"))
    rows = []
    for (topo,), sub in sorted(t.partition_by("topo", as_dict=True).items()):
        sub = sub.group_by("traffic[0].qps").agg(pl.col("ms").mean()).sort("traffic[0].qps")
        one = sub.filter(pl.col("traffic[0].qps") == 1)["ms"]
        base = float(one[0]) if one.len() else NAN
        for q, ms in sub.iter_rows():
            rows.append(Comparison(f"{topo}, per_pair", f"{q} QPs FCT ms", ms, NAN))
            if q > 1:
                rows.append(Comparison(f"{topo}, per_pair", f"{q} QPs reduction %", 100 * (1 - ms / base), NAN))
    return rows


def compare_dense(runs: pl.DataFrame, flows: pl.DataFrame, store) -> list:  # noqa: ANN001
    """Topology 3 with topology 1's background density: the message's FCT per QP count (mean
    over seeds) beside the paper's topology-3 1-QP value."""
    t = _by(store, [])
    rows = []
    for r in t.iter_rows(named=True):
        theirs = PAPER[3]["one_qp_ms"] if r["qps"] == 1 else NAN
        rows.append(Comparison("topo 3, bg 20 hosts", f"{r['qps']} QPs FCT ms", r["ms"], theirs))
    return rows


_MP_THEIRS = ("Wang et al.'s ns-3 numbers as printed in §IV (ms; topology 3's 1-QP value is topology 1's "
              "plus the 'about 200000 ns' the text gives). Quick variants shrink every size by 4 and our "
              "times are scaled back by 4. 'msg / bg throughput' is the message's throughput over the median "
              "background flow's in the same run; the paper prints no such number, so none stands beside it "
              "(one share per QP would make it q)")


def _mp_experiment(topo: int, figs: str, what: str) -> Experiment:
    return Experiment(
        name=f"mp-partition-topo{topo}",
        title=f"Multipath by data partition, topology {topo} ({figs}): {what}",
        citation="Wang et al., RDMA Load Balancing via Data Partition, §IV",
        sweep=f"mp_partition_topo{topo}.toml", quick=f"mp_partition_topo{topo}_quick.toml",
        figures=["mp_qps", "mp_chunk"], by="traffic[0].qps", compare=compare(topo),
        theirs=_MP_THEIRS, needs_cc=["dcqcn"],
    )


EXPERIMENTS = [
    _mp_experiment(1, "Figs. 7, 10", "leaf-spine 5x4 hosts, 5 spines, 10 MiB from host 0 to 19"),
    _mp_experiment(2, "Figs. 8, 11", "full mesh of 5 switches x 4 hosts"),
    _mp_experiment(3, "Figs. 9, 12", "leaf-spine 8x16 hosts, 4 spines"),
    Experiment(
        name="mp-partition-refill", title="Multipath by data partition, topology 1: refill on ack vs sent",
        citation="Wang et al., RDMA Load Balancing via Data Partition, §III-B, §IV",
        sweep="mp_partition_refill.toml", quick="mp_partition_refill_quick.toml", figures=[], by=REFILL,
        compare=compare_refill, needs_cc=["dcqcn"],
        theirs="§IV's 1-QP FCT (20,639,592 ns at every chunk size) and best reduction (81.03 %)"),
    Experiment(
        name="mp-partition-background", title="Multipath by data partition, topology 1: FCT against the background",
        citation="Wang et al., RDMA Load Balancing via Data Partition, §IV",
        sweep="mp_partition_background.toml", quick="mp_partition_background_quick.toml", figures=[],
        by=BG_COUNT, compare=compare_background, needs_cc=["dcqcn"],
        theirs="§IV's 1-QP FCT on topology 1 (20,639,592 ns); the paper gives the background only as "
               "'200 background streams added randomly'"),
    Experiment(
        name="mp-partition-shares", title="Multipath by data partition, topologies 1 and 2: one rate per connection",
        citation="Wang et al., RDMA Load Balancing via Data Partition, §IV",
        sweep="mp_partition_shares.toml", quick="mp_partition_shares_quick.toml", figures=[],
        by="traffic[0].qps", compare=compare_shares, needs_cc=["dcqcn"],
        theirs="none: the run that removes per-QP shares; set beside mp-partition-topo1/-topo2 (per_qp)"),
    Experiment(
        name="mp-partition-topo3-dense", title="Multipath by data partition, topology 3 with topology 1's background density",
        citation="Wang et al., RDMA Load Balancing via Data Partition, §IV",
        sweep="mp_partition_topo3_dense.toml", quick="mp_partition_topo3_dense_quick.toml", figures=[],
        by="traffic[0].qps", compare=compare_dense, needs_cc=["dcqcn"],
        theirs="§IV's topology-3 1-QP FCT (topology 1's 20.64 ms plus 'about 200000 ns')"),
]
