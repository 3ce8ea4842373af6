"""Switch-side load balancing: ConWeave's setup (Song et al., SIGCOMM 2023, as
its public ns-3 artifact encodes it): ECMP, LetFlow, CONGA, DRILL, spraying and ConWeave under
DCQCN, each lossless (PFC, go-back-N) and with IRN's loss recovery (PFC off, IRN's usual
setting) (docs/load-balancing.md).

The paper's published improvements of ConWeave over ECMP (42.3 % average, 66.8 % p99 FCT) are
printed beside every scheme's improvement over ECMP under the same loss recovery; the row that
compares like with like is ConWeave's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.ticker import FuncFormatter

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store
from rdmalab.plots import bucket_edges, plt, save_figure

#: One BDP on the 128-host fabric: 100 Gb/s x an 8 us base RTT (4 hops of 1 us each way).
BDP_BYTES = 100_000
#: Flows that start in the first 5 ms are dropped from the full variant (warm-up).
WARMUP_NS = 5_000_000.0
#: ConWeave's published improvements of the average and 99th-percentile FCT (42.3 %, 66.8 %).
PAPER_AVG, PAPER_P99 = 42.3, 66.8
SCHEMES = ("ecmp", "letflow", "conga", "drill", "spray", "conweave")
#: Loss recovery of each row: lossless go-back-N (PFC on) and IRN (PFC off), with the short
#: name the comparison rows carry.
RECOVERIES = ("go_back_n", "irn")
_TAG = {"go_back_n": "pfc", "irn": "irn"}
#: The full-size experiments, whose comparisons drop flows of the first 5 ms (their quick
#: variants drop nothing).
FULL = ("lb-conweave", "lb-conweave-load80", "lb-conweave-buffer", "lb-conweave-loss", "lb-conweave-workloads",
        "lb-conweave-fattree")


#: The flow-table columns the comparisons read (a full GoogleRPC2008 run has 13.5 M flows).
LB_FLOW_COLUMNS = ("size", "slowdown", "status", "start_ns")


def _stats(slowdown: np.ndarray) -> dict[str, float]:
    if slowdown.size == 0:
        return {k: float("nan") for k in ("avg", "p50", "p95", "p99")}
    return {"avg": float(slowdown.mean()), "p50": float(np.percentile(slowdown, 50)),
            "p95": float(np.percentile(slowdown, 95)), "p99": float(np.percentile(slowdown, 99))}


def slowdown_table(flows: pl.DataFrame, warmup_ns: float,
                   recovery: str | None = None) -> dict[tuple[str, str], dict[str, float]]:
    """(scheme, `<BDP` | `>=BDP` | `all`) -> avg, p50, p95, p99 slowdown of completed flows
    started after the warm-up (of the runs with `fabric.loss_recovery` = `recovery` if given)."""
    col = "fabric.path_selection"
    out = {}
    done = flows.filter((pl.col("status") == "completed") & (pl.col("start_ns") >= warmup_ns))
    if recovery is not None and "fabric.loss_recovery" in done.columns:
        done = done.filter(pl.col("fabric.loss_recovery") == recovery)
    for scheme in SCHEMES:
        f = done.filter(pl.col(col) == scheme) if col in done.columns else done.clear()
        small = f.filter(pl.col("size") < BDP_BYTES)["slowdown"].to_numpy()
        large = f.filter(pl.col("size") >= BDP_BYTES)["slowdown"].to_numpy()
        out[(scheme, "<BDP")], out[(scheme, ">=BDP")] = _stats(small), _stats(large)
        out[(scheme, "all")] = _stats(f["slowdown"].to_numpy())
    return out


def mean_imbalance(store: Store | None, recovery: str | None = None) -> dict[str, float]:
    """Mean over ToRs and windows of the uplink imbalance, per scheme (of the runs with
    `fabric.loss_recovery` = `recovery` if given)."""
    if store is None:
        return {}
    b = store.table("balance")
    if b.height == 0 or "imbalance" not in b.columns:
        return {}
    if recovery is not None and "fabric.loss_recovery" in b.columns:
        b = b.filter(pl.col("fabric.loss_recovery") == recovery)
    g = b.group_by("fabric.path_selection").agg(pl.col("imbalance").mean())
    return dict(zip(g["fabric.path_selection"].to_list(), g["imbalance"].to_list()))


def reorder_peak(store: Store | None, recovery: str) -> dict[str, float]:
    """ConWeave's largest reorder-queue occupancy (bytes held at one ToR at once) per scheme."""
    if store is None:
        return {}
    t = store.table("reorder")
    if t.height == 0 or "bytes" not in t.columns:
        return {}
    if "fabric.loss_recovery" in t.columns:
        t = t.filter(pl.col("fabric.loss_recovery") == recovery)
    g = t.group_by("fabric.path_selection").agg(pl.col("bytes").max())
    return dict(zip(g["fabric.path_selection"].to_list(), [float(x) for x in g["bytes"].to_list()]))


def compare_lb(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None = None) -> list[Comparison]:
    """Per loss recovery, scheme and size class the slowdown statistics (no published
    counterpart: theirs is NaN), the uplink imbalance, ConWeave's peak reorder occupancy, and
    each scheme's improvement of the average and p99 FCT slowdown over ECMP (all flows, same
    loss recovery) beside ConWeave's published improvements."""
    full = store is not None and store.manifest().get("name") in FULL
    nan = float("nan")
    rows = []
    for rec in RECOVERIES:
        table = slowdown_table(flows, WARMUP_NS if full else 0.0, rec)
        tag = _TAG[rec]
        rows += [Comparison(f"{s} {tag} {size}", f"{k} slowdown", v, nan)
                 for (s, size), stats in table.items() for k, v in stats.items()]
        imbalance = mean_imbalance(store, rec)
        rows += [Comparison(f"{s} {tag}", "uplink imbalance", imbalance[s], nan) for s in SCHEMES if s in imbalance]
        peak = reorder_peak(store, rec)
        rows += [Comparison(f"{s} {tag}", "reorder peak bytes", peak[s], nan) for s in SCHEMES if s in peak]
        base = table[("ecmp", "all")]
        for s in SCHEMES[1:]:
            for k, paper in (("avg", PAPER_AVG), ("p99", PAPER_P99)):
                x, b = table[(s, "all")][k], base[k]
                gain = 100.0 * (1.0 - x / b) if b == b and b > 0 else nan
                rows.append(Comparison(f"{s} {tag}", f"{k} gain vs ECMP %", gain, paper))
    return rows


# -- lb-conweave's variants: ECMP against ConWeave along one setting ---------
#: The setting each variant sweeps, and how a value of it is named in the rows.
#: The fat tree sweeps nothing but its timers, which go with the loss recovery: its rows are
#: named by the reorder-queue flush margin (64us lossless, 16us with IRN).
VARIANT_KEYS = {"lb-conweave-buffer": "fabric.buffer_mb", "lb-conweave-loss": "fabric.error_rate",
                "lb-conweave-workloads": "traffic[0].cdf", "lb-conweave-fattree": "fabric.lb.conweave_flush_extra"}
#: Run counters the variant rows carry for each scheme: packets beyond a gap at the NICs,
#: NACKs, packets resent, packets dropped by the fabric (of them lost on links), PFC pauses.
VARIANT_COUNTERS = ("ooo_packets", "nacks", "retx_packets", "drops", "link_error_losses", "pauses")


def _value_name(value: object) -> str:
    """A swept value as a row names it: a CDF file by its stem, a number as written."""
    text = str(value)
    return text.rsplit("/", 1)[-1].removesuffix(".txt") if isinstance(value, str) else text


def variant_table(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None) -> list[dict]:
    """One dict per (recovery, swept value, scheme): avg and p99 slowdown of the completed flows
    (after the warm-up at full size), the flow count, the run's counters and wall time."""
    name = store.manifest().get("name", "") if store is not None else ""
    key = VARIANT_KEYS[name.removesuffix("-quick")]
    warmup = WARMUP_NS if name in FULL else 0.0
    done = flows.filter((pl.col("status") == "completed") & (pl.col("start_ns") >= warmup))
    ok = runs.filter(pl.col("status") == "ok")
    out = []
    for rec in RECOVERIES:
        for value in sorted(set(ok[key].to_list()), key=lambda v: (isinstance(v, str), v)):
            for scheme in ("ecmp", "conweave"):
                sel = ((pl.col("fabric.loss_recovery") == rec) & (pl.col(key) == value)
                       & (pl.col("fabric.path_selection") == scheme))
                run = ok.filter(sel)
                if run.height == 0:
                    continue
                slow = done.filter(sel)["slowdown"].to_numpy()
                stats = _stats(slow)
                row = {"recovery": _TAG[rec], "value": _value_name(value), "scheme": scheme, "flows": slow.size,
                       "avg": stats["avg"], "p99": stats["p99"], "wall_s": float(run["wall_s"][0])}
                row.update({c: int(run[c][0]) if c in run.columns and run[c][0] is not None else 0
                            for c in VARIANT_COUNTERS})
                out.append(row)
    return out


def compare_variant(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None = None) -> list[Comparison]:
    """Per loss recovery and swept value: ECMP's and ConWeave's avg and p99 slowdown, and
    ConWeave's gain over ECMP. Nothing published for these setups: theirs is NaN."""
    nan = float("nan")
    table = variant_table(runs, flows, store)
    rows = [Comparison(f"{r['scheme']} {r['recovery']} {r['value']}", f"{k} slowdown", r[k], nan)
            for r in table for k in ("avg", "p99")]
    by = {(r["recovery"], r["value"], r["scheme"]): r for r in table}
    for (rec, value, scheme), r in by.items():
        base = by.get((rec, value, "ecmp"))
        if scheme != "conweave" or base is None:
            continue
        for k in ("avg", "p99"):
            gain = 100.0 * (1.0 - r[k] / base[k]) if base[k] > 0 else nan
            rows.append(Comparison(f"conweave {rec} {value}", f"{k} gain vs ECMP %", gain, nan))
    return rows


def report_variant(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None = None) -> str:
    """The variant's rows as a markdown table, ECMP and ConWeave side by side."""
    head = ("| recovery | value | scheme | flows | avg | p99 | out of order at NICs | NACKs | resent "
            "| dropped (on links) | PFC pauses | wall s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in variant_table(runs, flows, store):
        lines.append(f"| {r['recovery']} | {r['value']} | {r['scheme']} | {r['flows']:,} | {r['avg']:.2f} | "
                     f"{r['p99']:.2f} | {r['ooo_packets']:,} | {r['nacks']:,} | {r['retx_packets']:,} | "
                     f"{r['drops']:,} ({r['link_error_losses']:,}) | {r['pauses']:,} | {r['wall_s']:.1f} |")
    return "\n".join(lines)


#: Flow-size bins of the variant figure: equal shares of the flows (deciles of size), as the
#: x axis of ConWeave's Figs 12-14 spaces its size classes.
SIZE_BINS = 10
#: A scheme's colour; lossless rows solid, IRN dashed.
_SCHEME_COLOR = {"ecmp": "tab:blue", "letflow": "tab:green", "conga": "tab:purple", "drill": "tab:orange",
                 "spray": "tab:brown", "conweave": "tab:red"}
_RECOVERY_STYLE = {"go_back_n": "-", "irn": "--"}
def _plain_tick(y: float, _pos: int) -> str:
    """A log-scale slowdown tick as a plain number (2, not 2 x 10^0), labelled only at 1, 2,
    3 and 5 times a power of ten so that a wide axis stays readable."""
    if y <= 0:
        return ""
    lead = round(y / 10 ** np.floor(np.log10(y)), 6)
    return f"{y:g}" if lead in (1, 2, 3, 5) else ""


_PLAIN = FuncFormatter(_plain_tick)


def _run_slowdowns(store: Store, run_id: str, warmup_ns: float) -> pl.DataFrame:
    """One run's completed flows after the warm-up: size and slowdown only (a full
    GoogleRPC2008 run has 13.5 M flows; the other columns are not read)."""
    return (pl.scan_parquet(store.path("flows", run_id))
            .filter((pl.col("status") == "completed") & (pl.col("start_ns") >= warmup_ns))
            .select("size", "slowdown").collect())


def size_bins(flows: pl.DataFrame, bins: int = SIZE_BINS) -> list[tuple[float, float, float]]:
    """(median size, avg slowdown, p99 slowdown) per bin of `bins` equal shares of the flows
    ordered by size (`plots.bucket_edges`, the slowdown figure's buckets: a size that spans
    several bins stays in one)."""
    edges = bucket_edges([flows], bins)
    if len(edges) < 2:
        return []
    sizes, slow = flows["size"].to_numpy(), flows["slowdown"].to_numpy()
    which = np.searchsorted(edges, sizes, side="left") - 1  # (edge[i], edge[i+1]] -> i
    return [(float(np.median(sizes[which == b])), float(slow[which == b].mean()),
             float(np.percentile(slow[which == b], 99))) for b in np.unique(which)]


def by_size_figure(sweep_dir, out_dir) -> list:
    """ConWeave's Figs 12-14 shape: average and p99 FCT slowdown by flow size (deciles of the
    flows) per scheme, lossless (solid) and with IRN (dashed); a variant of lb-conweave gets one
    row per value of its swept setting."""
    store = Store(sweep_dir)
    name = store.manifest().get("name", "")
    key = VARIANT_KEYS.get(name.removesuffix("-quick"))
    warmup = WARMUP_NS if name in FULL else 0.0
    runs = store.runs().filter(pl.col("status") == "ok")
    values = sorted(set(runs[key].to_list()), key=lambda v: (isinstance(v, str), v)) if key else [None]
    fig, axes = plt.subplots(len(values), 2, figsize=(10, 2.8 * len(values) + 0.6), squeeze=False)
    for row, value in zip(axes, values):
        of_value = runs.filter(pl.col(key) == value) if key else runs
        for scheme, rec in ((s, r) for r in RECOVERIES for s in SCHEMES):
            sel = of_value.filter((pl.col("fabric.path_selection") == scheme) & (pl.col("fabric.loss_recovery") == rec))
            if sel.height == 0:
                continue
            points = size_bins(_run_slowdowns(store, sel["run_id"][0], warmup))
            for ax, k in zip(row, (1, 2)):
                ax.plot([p[0] for p in points], [p[k] for p in points], _RECOVERY_STYLE[rec], marker=".",
                        color=_SCHEME_COLOR[scheme], label=f"{scheme} {_TAG[rec]}")
        for ax, what in zip(row, ("average", "p99")):
            ax.set_xscale("log")
            low, high = ax.get_ylim()
            if low > 0 and high / low > 4:  # a wide range (a collapse beside the rest): log
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(_PLAIN)
                ax.yaxis.set_minor_formatter(_PLAIN)
            ax.set_ylabel(f"{what} slowdown")
            if key:
                ax.set_title(f"{key.rsplit('.', 1)[-1]} = {_value_name(value)}", fontsize=9)
            ax.grid(True, alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("flow size (bytes, median of each tenth of the flows)")
    axes[0][0].legend(fontsize=7, handlelength=3.5)
    fig.suptitle(f"{name}: FCT slowdown by flow size", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / f"{name}_by_size", dpi=110)


EXPERIMENTS = [
    Experiment(
        name="lb-conweave",
        title="Switch-side load balancing under DCQCN, lossless and IRN: ConWeave's 128-host 2:1 leaf-spine, "
              "AliStorage2019",
        citation="Song et al., Network Load Balancing with In-network Reordering Support for RDMA "
                 "(ConWeave), SIGCOMM 2023; setup from its public ns-3 artifact",
        sweep="lb_conweave.toml", quick="lb_conweave_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.path_selection", compare=compare_lb, extra_figures=by_size_figure,
        theirs="ConWeave's published improvements over ECMP (42.3 % average, 66.8 % p99 FCT) on the "
               "gain rows only; the conweave rows compare like with like, the others are reference points",
        needs_cc=["dcqcn"], flow_columns=LB_FLOW_COLUMNS,
    ),
    Experiment(
        name="lb-conweave-load80",
        title="lb-conweave at 80 % network load (40 % of each NIC), the artifact's other standard load",
        citation="Song et al., Network Load Balancing with In-network Reordering Support for RDMA "
                 "(ConWeave), SIGCOMM 2023; setup from its public ns-3 artifact",
        sweep="lb_conweave_load80.toml", quick="lb_conweave_load80_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.path_selection", compare=compare_lb, extra_figures=by_size_figure,
        theirs="ConWeave's published improvements over ECMP (42.3 % average, 66.8 % p99 FCT; the paper "
               "reports its gains growing with load) on the gain rows only",
        needs_cc=["dcqcn"], flow_columns=LB_FLOW_COLUMNS,
    ),
    *[Experiment(
        name=f"lb-conweave-{variant}",
        title=f"lb-conweave's ECMP and ConWeave rows, {what}",
        citation="Song et al., Network Load Balancing with In-network Reordering Support for RDMA "
                 "(ConWeave), SIGCOMM 2023; the setting from its public ns-3 artifact",
        sweep=f"lb_conweave_{variant}.toml", quick=f"lb_conweave_{variant}_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.path_selection", compare=compare_variant,
        theirs="nothing published for this exact setup (NaN): ConWeave's gain over ECMP is ours alone",
        needs_cc=["dcqcn"], flow_columns=LB_FLOW_COLUMNS, report=report_variant, extra_figures=by_size_figure,
    ) for variant, what in (("buffer", "switch buffer 2, 4, 6, 9, 12, 24 MB"),
                            ("loss", "per-link loss 1e-6, 1e-5, 1e-4, 1e-3"),
                            ("workloads", "AliStorage2019, FbHdp2015, GoogleRPC2008, Solar2022 and WebSearch"),
                            ("fattree", "the artifact's 256-host k = 8 2:1 fat tree (fat_k8_100G_OS2) with ConWeave's "
                                        "fat-tree timers"))],
]
