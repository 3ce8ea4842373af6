"""Figures of Virtuoso sweeps (the Virtuoso paper): FCT against the number of paths beside the closed
form (Fig. 5), the speed-up FCT(1)/FCT(N) by message size (Fig. 6), and the CPU cycles per
message a cost model predicts from the WRs posted and CQEs polled (Fig. 8).

All read the sweep's `messages` table; the number of paths is `traffic[0].qps`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl

from rdmalab.experiments.figures.base import NoData, figure_title
from rdmalab.experiments.store import Store
from rdmalab.plots import log_axis, plt, save_figure

QPS = "traffic[0].qps"
#: The egress dynamic threshold's multiplier, where a sweep varies it.
ALPHA = "fabric.dt_alpha"
SIZE = "traffic[0].messages[0].size"
VERB = "traffic[0].messages[0].verb"
#: Bytes on the wire per payload byte: 1000-byte payloads with 48 bytes of headers.
WIRE = 1048 / 1000


def closed_form_s(size: float, paths: int, link_gbps: float = 1.0) -> float:
    """FCT of `size` bytes split evenly over `paths` links of `link_gbps`, in seconds:
    8 * size * (mtu + 48) / mtu / (N * rate)."""
    return 8 * size * WIRE / (paths * link_gbps * 1e9)


def message_table(store: Store) -> pl.DataFrame:
    """The first message of every successful run, with `paths` (and `size`, `verb` columns
    as swept)."""
    df = store.table("messages")
    if df.height == 0 or QPS not in df.columns:
        raise NoData("the sweep has no Virtuoso messages varied by traffic[0].qps")
    runs = store.runs().filter(pl.col("status") == "ok").select("run_id")
    df = df.join(runs, on="run_id").filter(pl.col("message") == 0)
    return df.with_columns(pl.col(QPS).cast(pl.Int64).alias("paths"))


def _finish(fig, ax, store: Store, title: str | None, what: str, out: Path) -> list[Path]:  # noqa: ANN001
    """Grid, legend and title; saves the figure to `out` (.png and .pdf)."""
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(figure_title(store, title, what))
    fig.tight_layout()
    return save_figure(fig, out)


def fct_vs_paths(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                 where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """The message's FCT against the number of paths, with the closed form (Fig. 5)."""
    store = Store(sweep)
    t = message_table(store).sort("paths")
    n = t["paths"].to_numpy()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(n, t["fct_ns"].to_numpy() / 1e9, "o-", label="rdmalab (probe included)")
    ax.plot(n, [closed_form_s(s, int(k)) for s, k in zip(t["size"], n)], "k--", label="closed form")
    ax.set_xlabel("paths (1 Gb/s links)")
    ax.set_ylabel("FCT (s)")
    out = out or Path(sweep) / "figures" / "virtuoso_paths"
    return _finish(fig, ax, store, title, f"{int(t['size'][0]):,} bytes", out)


def speedup_table(store: Store) -> pl.DataFrame:
    """Per (size, paths): FCT, probe time and the speed-up over one path, with and without
    the probe."""
    t = message_table(store)
    one = t.filter(pl.col("paths") == 1).select("size", pl.col("fct_ns").alias("fct1"),
                                                pl.col("probe_ns").alias("probe1"))
    t = t.join(one, on="size")
    return t.with_columns(
        (pl.col("fct1") / pl.col("fct_ns")).alias("speedup"),
        ((pl.col("fct1") - pl.col("probe1")) / (pl.col("fct_ns") - pl.col("probe_ns"))).alias("speedup_data"),
    ).select("size", "paths", "fct_ns", "probe_ns", "speedup", "speedup_data").sort("size", "paths")


def speedup_vs_size(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                    where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Speed-up FCT(1)/FCT(N) against the message size, one line per N (Fig. 6)."""
    store = Store(sweep)
    t = speedup_table(store)
    fig, ax = plt.subplots(figsize=(6, 4))
    for n in sorted(set(t["paths"].to_list())):
        sub = t.filter(pl.col("paths") == n)
        ax.plot(sub["size"].to_numpy(), sub["speedup"].to_numpy(), "o-", label=f"{n} paths")
        ax.axhline(n, color="grey", lw=0.5, ls=":")
    log_axis(ax, "x")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("FCT(1 path) / FCT(N paths)")
    out = out or Path(sweep) / "figures" / "virtuoso_speedup"
    return _finish(fig, ax, store, title, "speed-up (dotted: N)", out)


# -- CPU cost model (Fig. 8) -------------------------------------------------------------------
# The paper measures the middleware's CPU cycles (§4.6); a simulator has no CPU, so we predict
# them from the work it does, priced with the host model's costs (`app/host_model.rs`) and
# one published measurement. Nothing here is fitted to Fig. 8.

#: The testbed's CPU clock: Xeon E5-2620 v3 @ 2.40 GHz (§4.2).
CPU_GHZ = 2.4
#: Posting one WR: the host model's `wqe_cost`, 0.68 µs per WQE (the DRUM paper's Fig. 2a slope,
#: (74.3 - 19.8) / 80 µs, docs/drum-fabric.md).
POST_NS = 680.0
#: Polling one CQE: the host model's `poll_cost`, 100 ns.
POLL_NS = 100.0
#: §4.6 polls by event (`ibv_get_cq_event`: the thread sleeps until the CQ's interrupt): one
#: wake-up per completion, priced as one context switch's direct cost, 3.8 µs (Chuanpeng Li,
#: Chen Ding and Kai Shen, "Quantifying the Cost of Context Switch", ExpCS '07, ACM FCRC, San
#: Diego, June 2007). The value is as previously cited and has not been checked against the
#: paper's text (docs/virtuoso.md says what was checked). An upper bound: completions that
#: land while the thread is awake share its wake-up.
EVENT_NS = 3800.0


def cpu_cycles(wrs: float, cqes: float) -> float:
    """Predicted CPU cycles of one message: every WR posted, every CQE polled and woken for."""
    return CPU_GHZ * (wrs * POST_NS + cqes * (POLL_NS + EVENT_NS))


def lossy_wrs(size: float, paths: int, max_wr: float) -> int:
    """WRs of one message in lossy mode: each path's eq.-1 share (equal links) cut into WRs of
    at most `max_wr` bytes (§3.5: "the maximum chunk size value is used to determine the number
    of WRs")."""
    return paths * math.ceil(size / paths / max_wr)


def wrs_vs_paths(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                 where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Predicted CPU cycles per message against the number of paths, one line per (size, verb)."""
    store = Store(sweep)
    t = message_table(store).sort("paths")
    fig, ax = plt.subplots(figsize=(6, 4))
    for (size, verb), sub in sorted(t.partition_by(SIZE, VERB, as_dict=True).items()):
        cycles = [cpu_cycles(w, c) for w, c in zip(sub["wrs"], sub["cqes"])]
        ax.plot(sub["paths"].to_numpy(), cycles, "o-", label=f"{verb} {int(size):,} B")
    ax.set_xlabel("paths")
    ax.set_ylabel("predicted CPU cycles per message")
    out = out or Path(sweep) / "figures" / "virtuoso_overhead"
    return _finish(fig, ax, store, title, "CPU cost model (posts, polls, wake-ups)", out)


# -- lossy mode (Table 2) and mice (Fig. 7) --------------------------------------------------

#: Table 2 of the paper: paths -> (largest WR summed over the paths, average per path), bytes.
TABLE2 = {1: (700_417, 700_417), 2: (1_300_482, 650_241), 4: (2_537_172, 634_293),
          6: (4_405_660, 734_280), 8: (9_371_656, 1_171_457), 9: (18_984_993, 2_109_400)}
#: The mice of `virtuoso-mice`.
MOUSE = 262_144


def chunk_table(store: Store) -> pl.DataFrame:
    """Per run: `paths`, the size search's result per path (`avg`, all paths share it) and
    summed over the paths (`total`)."""
    df = store.table("paths")
    if df.height == 0 or QPS not in df.columns:
        raise NoData("the sweep has no Virtuoso paths varied by traffic[0].qps")
    runs = store.runs().filter(pl.col("status") == "ok").select("run_id")
    keys = ["run_id", QPS] + ([ALPHA] if ALPHA in df.columns else [])
    return (df.join(runs, on="run_id").group_by(keys)
            .agg(pl.col("max_wr").sum().alias("total"), pl.col("max_wr").mean().alias("avg"))
            .with_columns(pl.col(QPS).cast(pl.Int64).alias("paths")).sort("paths"))


def ingress_bound(paths: int, one_path: float, core_gbps: float = 1.0, host_gbps: float = 10.0) -> float:
    """Largest WR per path that our ToR takes, scaled from one path's: every path's data
    enters through the host's one ingress port, whose drop threshold bounds the backlog of
    all paths together; a round of N WRs of S bytes leaves N S (1 - N R_core / R_host)
    queued (one path: S (1 - R_core / R_host))."""
    left = lambda n: 1 - n * core_gbps / host_gbps  # noqa: E731
    return one_path * left(1) / (paths * left(paths))


def egress_bound(paths: int, one_path: float, core_gbps: float = 1.0, host_gbps: float = 10.0) -> float:
    """Largest WR per path under static per-port buffers, scaled from one path's: each path
    has its own egress port and buffer, and a round leaves S (1 - N R_core / R_host) queued
    at each (the host's rate split N ways, each link draining R_core)."""
    left = lambda n: 1 - n * core_gbps / host_gbps  # noqa: E731
    return one_path * left(1) / left(paths)


def dynamic_bound(paths: int, one_path: float, alpha: float, core_gbps: float = 1.0,
                  host_gbps: float = 10.0) -> float:
    """Largest WR per path under an egress dynamic threshold (one pool of B bytes, a port may
    hold alpha times the free bytes), scaled from one path's: N queues filling together
    settle at alpha B / (1 + alpha N) each (Choudhury and Hahne), and a round leaves
    S (1 - N R_core / R_host) at each."""
    left = lambda n: 1 - n * core_gbps / host_gbps  # noqa: E731
    return one_path * (1 + alpha) * left(1) / ((1 + alpha * paths) * left(paths))


def chunk_vs_paths(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
                   where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """Largest WR per path against the number of paths: ours, Table 2's, and the bound of
    a shared ingress threshold fitted at one path."""
    store = Store(sweep)
    t = chunk_table(store)
    fig, ax = plt.subplots(figsize=(6, 4))
    paper = sorted(TABLE2.items())
    ax.plot([k for k, _ in paper], [v[1] / 1e3 for _, v in paper], "s--", label="paper, Table 2")
    one = TABLE2[1][1]  # the buffer is fitted so that this is one path's bound
    if ALPHA in t.columns:
        # Each alpha is drawn against its own bound, scaled from its own one-path size.
        for (alpha,), sub in sorted(t.sort("paths").partition_by(ALPHA, as_dict=True).items()):
            n = sub["paths"].to_numpy()
            line, = ax.plot(n, sub["avg"].to_numpy() / 1e3, "o-", label=f"rdmalab, egress DT alpha = {alpha:g}")
            own = float(sub.filter(pl.col("paths") == 1)["avg"].max() or one)
            ax.plot(n, [dynamic_bound(int(k), own, alpha) / 1e3 for k in n], ":", color=line.get_color())
    else:
        n = t["paths"].to_numpy()
        ax.plot(n, t["avg"].to_numpy() / 1e3, "o-", label="rdmalab (size search)")
        ax.plot(n, [ingress_bound(int(k), one) / 1e3 for k in n], "k:", label="shared-ingress bound (fitted)")
        ax.plot(n, [egress_bound(int(k), one) / 1e3 for k in n], "k-.", label="per-port bound (fitted)")
    ax.set_xlabel("paths (1 Gb/s links, 10 Gb/s host)")
    ax.set_ylabel("largest WR per path (KB)")
    out = out or Path(sweep) / "figures" / "virtuoso_chunk"
    return _finish(fig, ax, store, title, "lossy WR size search", out)


def mice_table(store: Store) -> pl.DataFrame:
    """The mice (`MOUSE`-byte messages) of every run, with `paths` (the elephant's QPs)."""
    df = store.table("messages")
    if df.height == 0 or QPS not in df.columns:
        raise NoData("the sweep has no Virtuoso messages varied by traffic[0].qps")
    runs = store.runs().filter(pl.col("status") == "ok").select("run_id")
    df = df.join(runs, on="run_id").filter(pl.col("size") == MOUSE)
    return df.with_columns(pl.col(QPS).cast(pl.Int64).alias("paths"))


def mouse_alone_s(link_gbps: float = 1.0) -> float:
    """A mouse alone on one link: its bytes on the wire at the link's rate."""
    return closed_form_s(MOUSE, 1, link_gbps)


def mouse_behind_pfc_s(link_gbps: float = 1.0) -> float:
    """A mouse on a link that an elephant keeps at the ToR's PFC threshold: it waits for the
    backlog ahead of it (the threshold, 0.9 x 1048/1000 x Table 2's one-path WR for the
    buffer fitted in virtuoso-chunk) and then shares the link with the elephant, one packet
    each (the NIC's round robin), so its own bytes take twice their time."""
    backlog = 0.9 * TABLE2[1][1] * WIRE
    return (backlog + 2 * MOUSE * WIRE) * 8 / (link_gbps * 1e9)


def mice_fct(sweep: str | Path, by: str | None = None, out: str | Path | None = None,
             where: dict[str, Any] | None = None, title: str | None = None) -> list[Path]:
    """FCT of each mouse in post order, with the elephant on path 0 only or split."""
    store = Store(sweep)
    t = mice_table(store).sort("paths", "start_ns")
    host = "topology.host_rate"
    keys = [host, "paths"] if host in t.columns else ["paths"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, sub in sorted(t.partition_by(keys, as_dict=True).items()):
        rate, n = (key if len(key) == 2 else ("", key[0]))
        where = "on path 0 only" if n == 1 else f"split over {n} paths"
        label = f"elephant {where}" + (f", {rate} host" if rate else "")
        ax.plot(range(1, sub.height + 1), sub["fct_ns"].to_numpy() / 1e6, "o-", label=label)
    ax.axhline(mouse_alone_s() * 1e3, color="k", ls=":", label="mouse alone")
    log_axis(ax, "y")
    ax.set_xlabel("mouse, in post order")
    ax.set_ylabel("mouse FCT (ms)")
    out = out or Path(sweep) / "figures" / "virtuoso_mice"
    return _finish(fig, ax, store, title, "256 KB mice on path 0", out)
