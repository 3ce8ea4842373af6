"""Blitz reproductions: comparisons and figures (docs/blitz.md, docs/experiments.md).

The poster's numbers are from a 20-node InfiniBand testbed with DASR emulated at the
application (§3): `blitz-incast` and `blitz-incast-cdf` run that testbed (FDR 4x, InfiniBand
CC, the application's staggering read as serial grants or paced pieces, and DASR in the NIC);
`blitz-incast-roce` keeps the RoCE question (DCQCN against DASR in the NIC). What the poster
does not fix is written where it is chosen (the sweep files) and in docs/blitz.md. The round
docs/blitz.md takes apart (the link bound, the d = 16 runs, the fluid model) is in `blitz_round`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.repro.blitz_round import (  # noqa: F401 (re-exported)
    ACK_WIRE_BYTES, D16_SETTINGS, FDR4X_BPS, GRANT_WIRE_BYTES, IB_DATA_HEADER, IB_RETH, INCAST_DPORT, LINK_DELAY_US,
    NO_LONG_FLOW, d16_dasr_over_harshest, d16_round, d16_round_table, d16_scenario, d16_sensitivity, d16_summary,
    fair_share_fcts, ib_message_wire_bytes, message_time_us, round_link_bound, serial_fcts, serial_gaps_us)
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.plots import plt, save_figure
from rdmalab.results import percentile

NAN = float("nan")
#: The poster's DCQCN/DASR reduction of median and p99 incast FCT, over degrees (§3).
PAPER_RATIO_LOW, PAPER_RATIO_HIGH = 2.5, 3.3
#: InfiniBand's p99/median at the testbed's scale (§3: "about 1.2x").
PAPER_TAIL_OVER_MEDIAN = 1.2
#: Fewer ECN marks with Blitz (§2, "by 4x for typical workloads"; workload unstated).
PAPER_MARK_RATIO = 4.0


def _cmp(group: str, metric: str, ours: float, theirs: float) -> Comparison:
    return Comparison(group, metric, float(ours), float(theirs))


#: The schemes of the InfiniBand tables, by (fabric.cc, traffic[1].stagger): IB CC alone
#: (the baseline), the poster's application-layer DASR read as serial grants or paced pieces,
#: DASR in the NIC over IB CC. RoCE runs (no stagger column) are named by their cc.
IB_SCHEMES = {("ib", "none"): "ib", ("ib", "serial"): "serial", ("ib", "paced"): "paced", ("blitz", "none"): "nic"}
#: The IB table's DASR variants, in print order.
DASR_VARIANTS = ("serial", "paced", "nic")
#: The incast rounds' start and period in the InfiniBand sweeps (1 ms, 100 ms): a rate sample
#: at 2 ms into a period covers the first ms of its round, where the round's flows run.
ROUND_START_PS, ROUND_PERIOD_PS = 1_000_000_000, 100_000_000_000


def scheme(row: dict) -> str:
    """The scheme a run row stands for (`IB_SCHEMES`, else its cc)."""
    cc = str(row.get("fabric.cc"))
    stagger = row.get("traffic[1].stagger")
    return IB_SCHEMES.get((cc, str(stagger)), cc) if stagger is not None else cc


def incast_fcts(runs: pl.DataFrame, flows: pl.DataFrame) -> dict[tuple[int, str], np.ndarray]:
    """(degree, scheme) -> incast FCTs in µs, over all seeds. The long flow never completes, so
    a run's completed incast-port flows are its incast flows, and their distinct senders its
    degree."""
    runs = runs.filter(pl.col("status") == "ok")
    out: dict[tuple[int, str], np.ndarray] = {}
    inc = flows.filter(pl.col("dport") == INCAST_DPORT) if "dport" in flows.columns else flows
    for r in runs.iter_rows(named=True):
        f = inc.filter(pl.col("run_id") == r["run_id"])
        if f.height == 0:
            continue
        key = (int(f["src"].n_unique()), scheme(r))
        out[key] = np.concatenate([out.get(key, np.array([])), f["fct_ns"].to_numpy() / 1e3])
    return out


def long_flow_gbps(store: Store, runs: pl.DataFrame, in_rounds: bool = False) -> dict[str, float]:
    """scheme -> the long flow's mean delivered throughput (Gb/s) over all runs: from the per-QP
    rate samples of the flow that is not an incast flow (the background flow never ends).
    `in_rounds`: only the samples that cover the first ms of a round (`ROUND_*`)."""
    rates = store.table("rates", params=False)
    if "flow" not in rates.columns:
        return {}
    ok = runs.filter(pl.col("status") == "ok")
    names = pl.DataFrame({"run_id": ok["run_id"], "scheme": [scheme(r) for r in ok.iter_rows(named=True)]})
    long = rates.join(names, on="run_id").filter(pl.col("flow") == 0)  # traffic[0], the first flow
    if in_rounds:
        into = (pl.col("time_ps").cast(pl.Int64) - ROUND_START_PS) % ROUND_PERIOD_PS
        long = long.filter(into == 1_000_000_000)
    return {k: float(d["throughput_gbps"].mean()) for (k,), d in long.group_by("scheme") if d.height}


def _quantiles(fcts: dict[tuple[int, str], np.ndarray], d: int, names: tuple[str, ...]) -> dict:
    return {(n, q): percentile(fcts[d, n], q) for n in names if len(fcts.get((d, n), [])) for q in (0.5, 0.99)}


def compare_incast(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """The InfiniBand table. Per incast degree: IB CC's median and p99 FCT, each DASR variant's
    (serial, paced, in the NIC) and the ratios IB/variant beside the poster's 2.5-3.3x (its
    range over degrees; the theirs column holds the midpoint), IB's p99/median beside ~1.2;
    then the long flow's throughput with each variant over IB's beside 1 ("within 0.5 %"),
    over the whole run and over the first ms of each round."""
    fcts = incast_fcts(runs, flows)
    mid = (PAPER_RATIO_LOW + PAPER_RATIO_HIGH) / 2
    out = []
    for d in sorted({k[0] for k in fcts}):
        p = _quantiles(fcts, d, ("ib",) + DASR_VARIANTS)
        if ("ib", 0.5) not in p:
            continue
        g = f"d={d}"
        out.append(_cmp(g, "ib median us", p["ib", 0.5], NAN))
        out.append(_cmp(g, "ib p99 us", p["ib", 0.99], NAN))
        out.append(_cmp(g, "ib p99/median", p["ib", 0.99] / p["ib", 0.5], PAPER_TAIL_OVER_MEDIAN))
        for v in DASR_VARIANTS:
            if (v, 0.5) not in p:
                continue
            out.append(_cmp(g, f"{v} median us", p[v, 0.5], NAN))
            out.append(_cmp(g, f"{v} p99 us", p[v, 0.99], NAN))
            out.append(_cmp(g, f"median ib/{v}", p["ib", 0.5] / p[v, 0.5], mid))
            out.append(_cmp(g, f"p99 ib/{v}", p["ib", 0.99] / p[v, 0.99], mid))
    for label, in_rounds in (("long flow", False), ("long flow in rounds", True)):
        thr = long_flow_gbps(store, runs, in_rounds)
        if "ib" not in thr:
            continue
        out.append(_cmp(label, "ib Gb/s", thr["ib"], NAN))
        for v in DASR_VARIANTS:
            if v in thr:
                out.append(_cmp(label, f"Gb/s {v}/ib", thr[v] / thr["ib"], 1.0))
    return out


def compare_incast_roce(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """The RoCE table (what a RoCE user asks): per incast degree, DCQCN/Blitz ratios of median
    and p99 FCT beside the poster's 2.5-3.3x (midpoint), DCQCN's p99/median beside ~1.2, our
    absolute medians; then the long flow's throughput Blitz/DCQCN beside 1."""
    fcts = incast_fcts(runs, flows)
    mid = (PAPER_RATIO_LOW + PAPER_RATIO_HIGH) / 2
    out = []
    for d in sorted({k[0] for k in fcts}):
        p = _quantiles(fcts, d, ("dcqcn", "blitz"))
        if ("dcqcn", 0.5) not in p or ("blitz", 0.5) not in p:
            continue
        g = f"d={d}"
        out.append(_cmp(g, "median dcqcn/blitz", p["dcqcn", 0.5] / p["blitz", 0.5], mid))
        out.append(_cmp(g, "p99 dcqcn/blitz", p["dcqcn", 0.99] / p["blitz", 0.99], mid))
        out.append(_cmp(g, "dcqcn p99/median", p["dcqcn", 0.99] / p["dcqcn", 0.5], PAPER_TAIL_OVER_MEDIAN))
        out.append(_cmp(g, "blitz p99/median", p["blitz", 0.99] / p["blitz", 0.5], NAN))
        out.append(_cmp(g, "dcqcn median us", p["dcqcn", 0.5], NAN))
        out.append(_cmp(g, "blitz median us", p["blitz", 0.5], NAN))
    thr = long_flow_gbps(store, runs)
    if "dcqcn" in thr and "blitz" in thr:
        out.append(_cmp("long flow", "Gb/s blitz/dcqcn", thr["blitz"] / thr["dcqcn"], 1.0))
        out.append(_cmp("long flow", "dcqcn Gb/s", thr["dcqcn"], NAN))
        out.append(_cmp("long flow", "blitz Gb/s", thr["blitz"], NAN))
    return out


def compare_incast_cdf(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Deciles of the incast FCT distribution at the largest degree, IB CC and each DASR
    variant (the poster's Fig. 1b shows the curves only: no number to put beside them, except
    its 2.5-3.3x shift of the median)."""
    fcts = incast_fcts(runs, flows)
    if not fcts:
        return []
    d = max(k[0] for k in fcts)
    base = fcts.get((d, "ib"), np.array([]))
    out = []
    for q in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
        if not len(base):
            break
        g = f"d={d} p{int(q * 100)}"
        a = percentile(base, q)
        out.append(_cmp(g, "ib us", a, NAN))
        for v in DASR_VARIANTS:
            x = fcts.get((d, v), np.array([]))
            if len(x):
                theirs = (PAPER_RATIO_LOW + PAPER_RATIO_HIGH) / 2 if q == 0.5 else NAN
                out.append(_cmp(g, f"ib/{v}", a / percentile(x, q), theirs))
    return out


def _label(r: dict) -> str:
    """`fat_tree 30%`: the run's fabric (the sweep varies the whole topology table) and load."""
    topo = r.get("topology")
    try:
        kind = json.loads(topo)["kind"] if isinstance(topo, str) else (topo or {}).get("kind", "")
    except (ValueError, KeyError, TypeError):
        kind = str(topo)
    load = r.get("traffic[0].load")
    return f"{kind} {int(round(load * 100))}%" if load is not None else str(kind)


def _p99_slowdown(flows: pl.DataFrame, run_ids: list[str]) -> float:
    s = flows.filter(pl.col("run_id").is_in(run_ids))["slowdown"].to_numpy()
    return percentile(s, 0.99) if len(s) else NAN


def _delivered_gbps(runs: pl.DataFrame) -> float:
    """Payload delivered per simulated second, summed over the runs (Gb/s)."""
    bits = float(runs["payload_bytes_delivered"].sum()) * 8
    secs = float(runs["end_time_ps"].sum()) / 1e12
    return bits / secs / 1e9 if secs else NAN


def _ecn_scheme(r: dict) -> str:
    """`blitz` (DASR's edge rule: host-facing ports do not mark), `blitz edge-ecn` (they do),
    or the run's cc."""
    cc = str(r["fabric.cc"])
    params = r.get("fabric.cc_params")
    try:
        edge = bool(json.loads(params).get("dasr_edge_ecn", False)) if isinstance(params, str) else False
    except (ValueError, AttributeError):
        edge = False
    return f"{cc} edge-ecn" if cc == "blitz" and edge else cc


def _by_setting(runs: pl.DataFrame) -> dict[tuple[str, str], pl.DataFrame]:
    runs = runs.filter(pl.col("status") == "ok")
    out: dict[tuple[str, str], list[dict]] = {}
    for r in runs.iter_rows(named=True):
        out.setdefault((_label(r), _ecn_scheme(r)), []).append(r)
    return {k: pl.DataFrame(v) for k, v in out.items()}


def _marks_per_gb(r: pl.DataFrame) -> float:
    """ECN marks per GB of payload delivered (runs summed)."""
    gb = float(r["payload_bytes_delivered"].sum()) / 1e9
    return float(r["ecn_marks"].sum()) / gb if gb else NAN


def compare_ecn(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per fabric and load: ECN marks per GB delivered, DCQCN over Blitz+IOFD beside the
    poster's 4x, with DASR's edge rule (host-facing ports do not mark) and without it (they
    do: only what DASR and IOFD save, not the marking switched off); PAUSE frames and p99
    slowdown of each."""
    groups = _by_setting(runs)
    out = []
    for setting in sorted({k[0] for k in groups}):
        dc = groups.get((setting, "dcqcn"))
        if dc is None:
            continue
        out.append(_cmp(setting, "marks/GB dcqcn", _marks_per_gb(dc), NAN))
        out.append(_cmp(setting, "pauses dcqcn", float(dc["pauses"].sum()), NAN))
        out.append(_cmp(setting, "p99 slowdown dcqcn", _p99_slowdown(flows, dc["run_id"].to_list()), NAN))
        for name in ("blitz", "blitz edge-ecn"):
            bz = groups.get((setting, name))
            if bz is None:
                continue
            m_dc, m_bz = _marks_per_gb(dc), _marks_per_gb(bz)
            ratio = m_dc / m_bz if m_bz > 0 else (float("inf") if m_dc > 0 else NAN)
            out.append(_cmp(setting, f"marks/GB dcqcn/{name}", ratio, PAPER_MARK_RATIO))
            out.append(_cmp(setting, f"marks/GB {name}", _marks_per_gb(bz), NAN))
            out.append(_cmp(setting, f"pauses {name}", float(bz["pauses"].sum()), NAN))
            out.append(_cmp(setting, f"deflections {name}", float(bz["deflections"].sum()), NAN))
            out.append(_cmp(setting, f"p99 slowdown {name}", _p99_slowdown(flows, bz["run_id"].to_list()), NAN))
    return out


def compare_scale(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per fabric and load: p99 slowdown of DCQCN and TIMELY over Blitz+IOFD, and delivered
    throughput Blitz / each. Our seed (the poster) gives no number at scale, so the theirs
    column is empty (docs/blitz.md names the longer version's, unverified)."""
    groups = _by_setting(runs)
    out = []
    for setting in sorted({k[0] for k in groups}):
        bz = groups.get((setting, "blitz"))
        if bz is None:
            continue
        p99_bz = _p99_slowdown(flows, bz["run_id"].to_list())
        for other in ("dcqcn", "timely"):
            o = groups.get((setting, other))
            if o is not None:
                out.append(_cmp(setting, f"p99 {other}/blitz", _p99_slowdown(flows, o["run_id"].to_list()) / p99_bz,
                                NAN))
                out.append(_cmp(setting, f"thr blitz/{other}", _delivered_gbps(bz) / _delivered_gbps(o), NAN))
        out.append(_cmp(setting, "p99 slowdown blitz", p99_bz, NAN))
    return out


def compare_iofd(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """ECMP-colliding long flows on a leaf-spine, IOFD off and on (no paper number: ours). Mean
    and max FCT slowdown beside 1 (no collision), ECN marks, NACKs beside 0 (IOFD keeps order
    while the last hop's buffer holds the overtaken packets; escapes say when it did not),
    deflections."""
    runs = runs.filter(pl.col("status") == "ok")
    col = "fabric.iofd.max_deflections"
    out = []
    for (m,), r in sorted(runs.group_by(col), key=lambda g: g[0][0]):
        name = "iofd off" if m == 0 else f"iofd max {m}"
        s = flows.filter(pl.col("run_id").is_in(r["run_id"].to_list()))["slowdown"].to_numpy()
        out.append(_cmp(name, "mean slowdown", float(s.mean()) if len(s) else NAN, 1.0))
        out.append(_cmp(name, "max slowdown", float(s.max()) if len(s) else NAN, 1.0))
        out.append(_cmp(name, "ECN marks", float(r["ecn_marks"].sum()), NAN))
        out.append(_cmp(name, "NACKs", float(r["nacks"].sum()), 0.0))
        out.append(_cmp(name, "deflections", float(r["deflections"].sum()), NAN))
        out.append(_cmp(name, "re-sequenced", float(r["resequenced"].sum()), NAN))
        out.append(_cmp(name, "re-seq escapes", float(r["reseq_escapes"].sum()), 0.0))
    return out


_SCHEME_STYLE = {"ib": "tab:red", "serial": "tab:green", "paced": "tab:purple", "nic": "tab:blue",
                 "dcqcn": "tab:red", "blitz": "tab:blue"}


def incast_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Fig. 1a's shape: median and p99 incast FCT against the incast degree for each scheme;
    beside it the baseline/DASR ratios of median and p99 with the poster's 2.5-3.3x band."""
    runs, flows = load_sweep(sweep_dir)
    fcts = incast_fcts(runs, flows)
    schemes = [n for n in _SCHEME_STYLE if any(k[1] == n for k in fcts)]
    base = "ib" if "ib" in schemes else "dcqcn"
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(11, 4))
    for n in schemes:
        ds = sorted(d for d, c in fcts if c == n)
        for q, style in ((0.5, "-o"), (0.99, "--s")):
            ax.plot(ds, [percentile(fcts[d, n], q) / 1e3 for d in ds], style, color=_SCHEME_STYLE[n],
                    label=f"{n} {'median' if q == 0.5 else 'p99'}")
            if n != base:
                both = [d for d in ds if (d, base) in fcts]
                rx.plot(both, [percentile(fcts[d, base], q) / percentile(fcts[d, n], q) for d in both], style,
                        color=_SCHEME_STYLE[n], label=f"{base}/{n} {'median' if q == 0.5 else 'p99'}")
    rx.axhspan(PAPER_RATIO_LOW, PAPER_RATIO_HIGH, color="0.85", label="poster 2.5-3.3x")
    rx.axhline(1.0, color="0.5", lw=0.8)
    ax.set_xlabel("incast degree (senders)")
    ax.set_ylabel("incast flow completion time (ms)")
    rx.set_xlabel("incast degree (senders)")
    rx.set_ylabel(f"FCT ratio {base} / DASR variant")
    fabric = "FDR 4x InfiniBand" if base == "ib" else "56 Gb/s RoCE"
    ax.set_title(f"256 KiB incasts beside a long flow, {fabric} star")
    for a in (ax, rx):
        a.grid(True, alpha=0.3)
        a.legend(fontsize=7)
    return save_figure(fig, Path(out_dir) / "incast_fct", dpi=120)


def incast_cdf_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Fig. 1b's shape: the incast FCT distribution at the largest degree for each scheme, with
    the poster's 2.5-3.3x shift of the baseline's median drawn as a band."""
    runs, flows = load_sweep(sweep_dir)
    fcts = incast_fcts(runs, flows)
    fig, ax = plt.subplots(figsize=(6, 4))
    if fcts:
        d = max(k[0] for k in fcts)
        for n, color in _SCHEME_STYLE.items():
            x = np.sort(fcts.get((d, n), np.array([])))
            if len(x):
                ax.plot(x / 1e3, np.arange(1, len(x) + 1) / len(x), color=color, label=n)
        b = fcts.get((d, "ib"), fcts.get((d, "dcqcn"), np.array([])))
        if len(b):
            m = percentile(b, 0.5) / 1e3
            ax.axvspan(m / PAPER_RATIO_HIGH, m / PAPER_RATIO_LOW, color="0.85",
                       label="poster: baseline median / 2.5-3.3")
        ax.set_title(f"incast FCT distribution, degree {d}")
    ax.set_xlabel("incast flow completion time (ms)")
    ax.set_ylabel("CDF")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, Path(out_dir) / "incast_cdf", dpi=120)


_BLITZ_CITATION = ("Xue et al., Fast Congestion Control in RDMA-based Datacenter Networks, SIGCOMM 2018 "
                   "poster")
_BLITZ_ASSUMPTIONS = ("20-host InfiniBand FDR 4x star (20 nodes on a 36-port SX6025), 1 us links, default VL "
                      "buffers, input-fair switch arbitration; InfiniBand CC under our set rdmalab_v1 (Mellanox's "
                      "marking_rate, packet_size, ccti_increase, ccti_min; our threshold depth, 50 us timer and "
                      "table); rounds every 100 ms; 256 KiB per sender; U(0, 100 us) jitter; the poster's "
                      "application-layer DASR read two ways (serial grants of 64 B on the fabric, or 4 KiB pieces "
                      "paced to C/n) beside DASR in the NIC (cc = blitz, dasr_fallback = ib)")
_ROCE_ASSUMPTIONS = ("InfiniBand CC -> DCQCN (reference defaults); DASR in the NIC; 20-host star at 56 Gb/s, 1 us "
                     "links, 32 MB buffer; rounds every 5 ms, not 100 ms; 256 KiB per sender; U(0, 100 us) jitter")


def _incast_under_set(slug: str, what: str, setting: str) -> Experiment:
    """`blitz-incast` with the fabric's IB CC under another published setting (`setting`, in place
    of rdmalab_v1): the same figures and comparison, its own sweep files."""
    return Experiment(
        name=f"blitz-incast-{slug}",
        title=f"The poster's testbed {what}: IB CC vs DASR, incast FCT by degree",
        citation=_BLITZ_CITATION,
        sweep=f"blitz_incast_{slug.replace('-', '_')}.toml",
        quick=f"blitz_incast_{slug.replace('-', '_')}_quick.toml",
        figures=[], by="fabric.cc", compare=compare_incast,
        theirs=f"as blitz-incast, with IB CC under {setting} in place of rdmalab_v1. Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["ib", "blitz"], extra_figures=incast_figure,
    )

def _incast_with_loss(slug: str, what: str, setting: str) -> Experiment:
    """`blitz-incast` with a loss mechanism of the receive side (`setting`):
    the incast's messages as SENDs that each take a receive WQE, under rdmalab_v1."""
    return Experiment(
        name=f"blitz-incast-{slug}",
        title=f"The poster's testbed with {what}: IB CC vs DASR, incast FCT by degree",
        citation=_BLITZ_CITATION,
        sweep=f"blitz_incast_{slug}.toml", quick=f"blitz_incast_{slug}_quick.toml",
        figures=[], by="fabric.cc", compare=compare_incast,
        theirs=f"as blitz-incast, the incast's messages as SENDs with {setting}. Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["ib", "blitz"], extra_figures=incast_figure,
    )


EXPERIMENTS = [
    Experiment(
        name="blitz-incast",
        title="The poster's testbed: IB CC vs DASR (serial, paced, in the NIC), incast FCT by degree (Fig. 1a)",
        citation=_BLITZ_CITATION,
        sweep="blitz_incast.toml", quick="blitz_incast_quick.toml",
        figures=[], by="fabric.cc", compare=compare_incast,
        theirs="the poster's testbed: IB/DASR median and p99 ratios 2.5-3.3x over degrees (midpoint shown), "
               "InfiniBand p99 about 1.2x its median, long-flow throughput within 0.5 %. Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["ib", "blitz"], extra_figures=incast_figure,
    ),
    _incast_under_set("mellanox", "under the Mellanox CC manager's set",
                      "ib_cc_preset = mellanox_ccmgr (ccti_timer 49 units, ours: the manager leaves it open)"),
    _incast_under_set("harsh", "at the harshest published IB CC corner",
                      "ib_cc_preset = mellanox_ccmgr with every eligible packet marked (marking_rate 0) and a "
                      "8192-unit ccti_timer, the corner of LLNL's published sweep that loses the link in the quick "
                      "d = 4 and 16 rounds"),
    _incast_under_set("opensm", "with IB CC as OpenSM ships it (off)",
                      "ib_cc_preset = opensm_default (OpenSM's congestion_control FALSE: no marking, a one-entry "
                      "table)"),
    *(_incast_under_set(f"llnl-{table.replace('_', '-')}", f"under LLNL's {table} set",
                        f"ib_cc_preset = llnl_{table} (LLNL's OpenSM CC generator, its {table} table) at the "
                        "corner of the generator's sweep that marks and slows the most: threshold_level 15, "
                        "marking_rate 0, ccti_timer 8192 units")
      for table in ("mellanox_default", "mellanox_llnl", "simula_optimal", "simula_llnl")),
    _incast_with_loss("srq", "an SRQ of 4 WQEs at the aggregator",
                      "rnic.srq_depth 4 (ours), each WQE posted again 5 us after its completion (ours), "
                      "min_rnr_timer 12 (0.64 ms, ibv_rc_pingpong's), rnr_retry 7"),
    _incast_with_loss("rnr", "one receive WQE per connection, reposted after a period",
                      "rnic.recv_queue_depth 1, the WQE posted again 105 ms after its completion (longer than "
                      "the period; ours), min_rnr_timer 12 (0.64 ms), rnr_retry 7"),
    _incast_with_loss("processing", "RAMCloud's per-message processing at the aggregator",
                      "rnic.srq_depth 16, recv_processing 2.35 us a message (RAMCloud's InfiniBand transport "
                      "under load), min_rnr_timer 12 (0.64 ms), rnr_retry 7"),
    Experiment(
        name="blitz-incast-cdf",
        title="The poster's testbed: incast FCT distribution at degree 16, IB CC and each DASR (Fig. 1b)",
        citation=_BLITZ_CITATION,
        sweep="blitz_incast_cdf.toml", quick="blitz_incast_cdf_quick.toml",
        figures=[], by="fabric.cc", compare=compare_incast_cdf,
        theirs="the poster's Fig. 1b gives curves only; beside the median, its 2.5-3.3x (midpoint). Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["ib", "blitz"], extra_figures=incast_cdf_figure,
    ),
    Experiment(
        name="blitz-incast-roce",
        title="Blitz DASR vs DCQCN on RoCE: incast FCT by degree beside a long flow (Fig. 1a's question on RoCE)",
        citation=_BLITZ_CITATION,
        sweep="blitz_incast_roce.toml", quick="blitz_incast_roce_quick.toml",
        figures=["cdf"], by="fabric.cc", compare=compare_incast_roce,
        theirs="the poster's InfiniBand testbed numbers, beside a RoCE question: DCQCN/DASR median and p99 ratios "
               "2.5-3.3x (midpoint), p99 about 1.2x the median, long flow within 0.5 %. Assumptions: "
               + _ROCE_ASSUMPTIONS,
        needs_cc=["dcqcn", "blitz"], extra_figures=incast_figure,
    ),
    Experiment(
        name="blitz-ecn",
        title="Blitz (DASR + IOFD) vs DCQCN: ECN marks, pauses and p99 slowdown under web search + incast",
        citation=_BLITZ_CITATION,
        sweep="blitz_fabric.toml", quick="blitz_fabric_quick.toml",
        figures=["slowdown", "pfc"], by="fabric.cc", compare=compare_ecn,
        theirs="the poster's section 2 end: about 4x fewer ECN marks 'for typical workloads' (workload, fabric and "
               "scale unstated). Ours: marks per GB delivered on a k=8 fat tree and a 2:1 leaf-spine at 100 Gb/s, "
               "web search at 30 and 50 % load plus a 16->1 incast of 64 KB per sender every 1 ms; Blitz with "
               "dasr_edge_ecn false (host-facing ports do not mark) and true; DCQCN runs carry IOFD with "
               "max_deflections = 0, identical to IOFD off (the sweep's TIMELY runs serve blitz-scale)",
        needs_cc=["dcqcn", "timely", "blitz"],
    ),
    Experiment(
        name="blitz-scale",
        title="Blitz vs DCQCN and TIMELY at scale: p99 slowdown and throughput",
        citation=_BLITZ_CITATION,
        sweep="blitz_fabric.toml", quick="blitz_fabric_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.cc", compare=compare_scale,
        theirs="no number in our seed (the poster shows no result at scale): ours only, same sweep as blitz-ecn. "
               "Throughput: payload delivered per simulated second over the whole run",
        needs_cc=["dcqcn", "timely", "blitz"],
    ),
    Experiment(
        name="blitz-iofd",
        title="IOFD: ECMP-colliding long flows on a leaf-spine, deflection off and on (ours)",
        citation=_BLITZ_CITATION + " (section 2: in-order flow deflection; no number in the poster)",
        sweep="blitz_iofd.toml", quick="blitz_iofd_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.iofd.max_deflections", compare=compare_iofd,
        theirs="no paper number: slowdown 1 is a collision-free path, 0 NACKs is IOFD's in-order promise",
        needs_cc=["dcqcn"],
    ),
]

#: The name `repro` exported them by.
BLITZ_EXPERIMENTS = EXPERIMENTS
