"""The CC-attack paper's attack experiments (docs/attacks.md): the comparisons and the share-vs-QPs
figure of `rdmalab repro run attack-*`, and their `EXPERIMENTS`. The per-tenant shares they
read are `rdmalab.experiments.tenants`'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.experiments.case_names import case_name
from rdmalab.experiments.tenants import run_shares, share_of, stop_ps
from rdmalab.plots import log_axis, plt, save_figure
from rdmalab.results import percentile


# -- comparisons ---------------------------------------------------------------------------
NAN = float("nan")


def _ok_runs(runs: pl.DataFrame) -> list[dict[str, Any]]:
    return list(runs.filter(pl.col("status") == "ok").iter_rows(named=True))


def _param(run: dict[str, Any], path: str, default: Any = None) -> Any:
    v = run.get(path, None)
    if v is None:
        return default
    try:
        return json.loads(v) if isinstance(v, str) and v[:1] in "[{" else v
    except json.JSONDecodeError:
        return v


#: The CC-attack paper's one measured ConnectX-5 share: "an attacker can obtain 72% of the available
#: bandwidth with a victim flow" (abstract, §I), the most Fig. 3 shows; we put it beside N = 16.
PAPER_CX5_MAX = 0.72
#: §IV-A's worked example (two QPs at 30 Gb/s each against one at 40): an illustration of
#: per-destination rates applied unsplit, not a measurement; drawn, never compared.
PAPER_CX5_EXAMPLE = (2, 0.60)


def _cc(run: dict[str, Any]) -> str:
    """The run's CC, whether the sweep varies `fabric.cc` or whole `fabric` tables."""
    return _param(run, "fabric.cc", None) or _param(run, "fabric", {}).get("cc", "dcqcn")


def _arbitration(run: dict[str, Any]) -> str:
    return _param(run, "fabric.egress_arbitration", None) or _param(run, "fabric", {}).get("egress_arbitration", "fifo")


def compare_parallel(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """The attacker's share per granularity, N and switch arbitration. Testbed rows (the
    SN2100's fair arbitration among input ports, `input_fair`) carry the references: per-QP
    N/(N+1) and per-pair 1/2 (closed forms of equal shares per CC state), CX-5 0.72 at N=16
    (the paper's measured maximum), no CC 0.50 (Fig. 3's `16 No CC`). FIFO rows (a shared-
    buffer switch without fair arbitration, suffix ` fifo`) carry the closed forms only."""
    shares = run_shares(store, runs)
    out = []
    for r in _ok_runs(runs):
        n, gran, cc = int(_param(r, "traffic[1].qps", 1)), _param(r, "fabric.granularity", "per_qp"), _param(r, "fabric.cc")
        fair = _arbitration(r) == "input_fair"
        suffix = "" if fair else " fifo"
        s = share_of(shares, r["run_id"], "attacker")
        if cc == "none":
            if gran == "per_qp":
                out.append(Comparison(f"no CC N={n}{suffix}", "attacker share", s, 0.50 if fair else NAN))
            continue
        theirs = {"per_qp": n / (n + 1), "per_pair": 0.5}.get(gran, NAN)
        if gran == "per_destination_unsplit":
            theirs = PAPER_CX5_MAX if (n == 16 and fair) else NAN
        short = {"per_destination_unsplit": "CX-5"}.get(gran, gran)
        out.append(Comparison(f"{short} N={n}{suffix}", "attacker share", s, theirs))
    order = {"per_qp": 0, "CX-5": 1, "per_pair": 2, "per_destination": 3, "no": 4}
    return sorted(out, key=lambda c: (c.group.endswith("fifo"), order.get(c.group.split()[0], 9),
                                      int(c.group.split("=")[-1].split()[0])))


def parallel_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Fig. 3's question as a curve: the attacker's share against its QPs, per granularity,
    with the closed forms (per QP N/(N+1), per pair 1/2) and the paper's ConnectX-5 points."""
    store = Store(sweep_dir)
    runs, flows = load_sweep(sweep_dir)
    rows = [c for c in compare_parallel(runs, flows, store) if not c.group.startswith("no CC")]
    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    for gran, color in (("per_qp", "tab:red"), ("CX-5", "tab:orange"), ("per_pair", "tab:blue")):
        for fifo, style in ((False, "-o"), (True, ":x")):
            pts = sorted((int(c.group.split("=")[1].split()[0]), c.ours) for c in rows
                         if c.group.split()[0] == gran and c.group.endswith("fifo") == fifo)
            if pts:
                ax.plot(*zip(*pts), style, color=color, label=f"rdmalab {gran}" + (" (FIFO switch)" if fifo else ""))
    n = np.arange(1, 17)
    ax.plot(n, n / (n + 1), "k--", lw=1, label="per QP, theory N/(N+1)")
    ax.axhline(0.5, color="k", ls=":", lw=1, label="per pair, theory 1/2")
    ax.axhline(PAPER_CX5_MAX, color="tab:orange", ls="-.", lw=0.8, label="paper CX-5, measured maximum 0.72 (§I)")
    ax.plot([PAPER_CX5_EXAMPLE[0]], [PAPER_CX5_EXAMPLE[1]], "s", mfc="none", color="gray",
            label="paper's worked example (§IV-A), not a measurement")
    log_axis(ax, "x", base=2)
    ax.set_xlabel("attacker QPs (N), victim one QP")
    ax.set_ylabel("attacker share of the bottleneck")
    ax.set_ylim(0.3, 1.0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    ax.set_title("parallel-QP attack, DCQCN, 100G dumbbell (solid: input-fair switch)")
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "share_vs_qps")


#: Fig. 4 (§IV-A), testbed Gb/s: the RNIC's maximum 92; staggered alone 74; with a victim the
#: attacker 60 and the victim "less than 40" (an upper bound, the paper gives no value); with
#: marking at 8 KB the attacker "matches the theoretical limit", i.e. its no-contention 74.
#: Beside our single 1.125 MB transfer on the input-fair switch (the testbed's rows).
PAPER_FIG4 = {("victim alone", "victim Gb/s"): 92.0, ("1.125MB staggered alone", "attacker Gb/s"): 74.0,
              ("1.125MB staggered+victim", "attacker Gb/s"): 60.0,
              ("1.125MB staggered+victim", "victim Gb/s (< paper)"): 40.0,
              ("1.125MB staggered+victim 8KB", "attacker Gb/s"): 74.0}


def _staggered_label(run: dict[str, Any]) -> str:
    traffic = _param(run, "traffic", [])
    case = case_name(traffic)
    fabric = _param(run, "fabric", {})
    fabric = fabric if isinstance(fabric, dict) else {}
    kmin = int(fabric.get("ecn_kmin", _param(run, "fabric.ecn_kmin", 0) or 0))
    names = {"staggered-reuse": "staggered alone", "victim+staggered-reuse": "staggered+victim",
             "victim+parallel30": "parallel30+victim", "victim": "victim alone"}
    label = names.get(case, case)
    if _one_transfer(traffic):
        label = "1.125MB " + label
    if any(f.get("pg") == 4 for t in traffic for f in t.get("flows", [])):
        label += " own class"
    if kmin == 8000:
        label += " 8KB"
    if fabric.get("egress_arbitration", "fifo") != "input_fair":
        label += " fifo"
    return label


def _one_transfer(traffic: list[dict[str, Any]]) -> bool:
    """Whether the attacker sends one transfer that starts late (Fig. 4's testbed cases)."""
    return any(t.get("tenant") == "attacker" and t.get("start", "0ns") not in ("0ns", "0us", "0") for t in traffic)


def transfer_gbps(store: Store, flows: pl.DataFrame, run_id: str) -> dict[str, float]:
    """Per tenant, Gb/s of payload delivered while the attacker's transfer runs: from its
    start to its last flow's completion, on the meters' 1 us grid."""
    f = flows.filter((pl.col("run_id") == run_id) & (pl.col("tenant") == "attacker"))
    if not f.height:
        return {}
    lo = int(f["start_ns"].min() // 1000)
    hi = int((f["start_ns"] + f["fct_ns"]).max() // 1000) + 1
    bins = store.table("tenant_bins", params=False)
    b = bins.filter((pl.col("run_id") == run_id) & (pl.col("bin") >= lo) & (pl.col("bin") < hi))
    per = dict(b.group_by("tenant_name").agg(pl.col("bytes").sum()).iter_rows())
    return {name: n * 8 / ((hi - lo) * 1e-6) / 1e9 for name, n in per.items()}


def compare_staggered(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """Attacker and victim Gb/s per case beside Fig. 4's testbed values (their RNIC peaks at
    92 Gb/s of payload, ours at 95.4: 100 x 1000/1048). Only the input-fair single-transfer
    rows (the testbed) carry the paper's numbers; long-lived rows and rows marked fifo (a
    switch without fair arbitration) are ours alone."""
    shares = run_shares(store, runs)
    out = []
    for r in _ok_runs(runs):
        label = _staggered_label(r)
        if label.startswith("1.125MB"):
            g = transfer_gbps(store, flows, r["run_id"])
            a, v = g.get("attacker", 0.0), g.get("victim", 0.0)
        else:
            a, v = share_of(shares, r["run_id"], "attacker", "gbps"), share_of(shares, r["run_id"], "victim", "gbps")
        if not label.startswith("victim alone"):
            out.append(Comparison(label, "attacker Gb/s", a, PAPER_FIG4.get((label, "attacker Gb/s"), NAN)))
        if "victim" in label:
            metric = "victim Gb/s (< paper)" if label == "1.125MB staggered+victim" else "victim Gb/s"
            out.append(Comparison(label, metric, v, PAPER_FIG4.get((label, metric), NAN)))
    return sorted(out, key=lambda c: (c.group.endswith("fifo"), not c.group.startswith("1.125MB"), "8KB" in c.group,
                                      c.group, c.metric))


def staggered_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Fig. 4's layout: attacker and victim Gb/s of the testbed cases (one 1.125 MB transfer,
    input-fair switch) beside the paper's bars, and the long-lived repetition."""
    store = Store(sweep_dir)
    runs, flows = load_sweep(sweep_dir)
    rows = {(c.group, c.metric): c for c in compare_staggered(runs, flows, store)}
    cases = [("1.125MB staggered alone", "staggered\nalone"), ("1.125MB staggered+victim", "staggered\n+ victim"),
             ("1.125MB parallel30+victim", "parallel 30\n+ victim"), ("1.125MB staggered+victim 8KB", "staggered\nlow marking"),
             ("staggered+victim", "long-lived\nstaggered + victim"), ("parallel30+victim", "long-lived\nparallel + victim")]
    fig, ax = plt.subplots(figsize=(7.4, 4.0))
    x = np.arange(len(cases))
    for k, (metric, color, dx) in enumerate((("attacker Gb/s", "tab:red", -0.2), ("victim Gb/s", "tab:blue", 0.2))):
        ours = []
        for group, _ in cases:
            c = rows.get((group, metric)) or rows.get((group, "victim Gb/s (< paper)" if k else metric))
            ours.append(c.ours if c else np.nan)
        ax.bar(x + dx, ours, width=0.38, color=color, label=f"rdmalab {metric.split()[0]}")
    paper = {0: [(74, "a")], 1: [(60, "a"), (40, "v<")], 3: [(74, "a")]}
    for i, marks in paper.items():
        for val, kind in marks:
            ax.plot([x[i] + (-0.2 if kind == "a" else 0.2)], [val], "k_" if kind == "a" else "kv", ms=14 if kind == "a" else 7)
    ax.plot([], [], "k_", ms=14, label="paper, attacker (testbed)")
    ax.plot([], [], "kv", ms=7, label="paper, victim: less than 40")
    ax.set_xticks(x, [n for _, n in cases], fontsize=7)
    ax.set_ylabel("Gb/s of payload")
    ax.set_ylim(0, 100)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title("staggered-QP attack, DCQCN, input-fair switch, marking 200 KB (low: 8 KB)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, Path(out_dir) / "fig4_throughput")


def _left_member_gbps(flows: pl.DataFrame, run: dict[str, Any], lo_ps: int, hi_ps: int) -> float:
    """Attacker payload posted from the bottleneck's left side (hosts 0..7) in [lo, hi): what
    the ring sends across the bottleneck (chunks are 6 us long, so the window edges cost at
    most a chunk each)."""
    f = flows.filter((pl.col("run_id") == run["run_id"]) & (pl.col("tenant") == "attacker") & (pl.col("src") < 8)
                     & (pl.col("start_ns") >= lo_ps / 1000) & (pl.col("start_ns") < hi_ps / 1000))
    return float(f["size"].sum()) * 8 / ((hi_ps - lo_ps) / 1e12) / 1e9


def _victim_attacker_gbps(shares: pl.DataFrame, flows: pl.DataFrame, run: dict[str, Any],
                          case: str) -> tuple[float, float]:
    """The victim's and the attacker's Gb/s in an attack run. The shuffled overlay's attacker
    is counted by what its ring sends across the bottleneck in the last three quarters of
    the run (`_left_member_gbps`); every other attacker by its share."""
    v = share_of(shares, run["run_id"], "victim", "gbps")
    if "overlay" in case:
        stop = stop_ps(json.loads(run["scenario"]))
        return v, _left_member_gbps(flows, run, stop // 4, stop)
    return v, share_of(shares, run["run_id"], "attacker", "gbps")


#: BDP of the defense dumbbell (3 links of 1 us each way at 100 Gb/s): 75 KB.
DEFENSE_BDP = 75_000


def small_flow_tail(flows: pl.DataFrame, run_id: str, bdp: int = DEFENSE_BDP) -> tuple[float, float]:
    """p99 and p99.9 FCT slowdown of the run's flows smaller than the BDP."""
    s = flows.filter((pl.col("run_id") == run_id) & (pl.col("size") < bdp))["slowdown"].to_numpy()
    return percentile(s, 0.99), percentile(s, 0.999)


def compare_defense(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """Against the goals (theirs = the goal): victim share >= 0.45 under each attack with the
    defense; benign p99 slowdown of flows < BDP at most 1.2x the undefended run's. Rows of the
    input-fair switch end in ` input_fair`; the others are FIFO (the reference's switch)."""
    shares = run_shares(store, runs)
    out = []
    tails: dict[tuple[str, str, str], tuple[float, float]] = {}
    for r in _ok_runs(runs):
        case = case_name(_param(r, "traffic", []))
        cc, d = _param(r, "fabric.cc"), _param(r, "fabric.defense")
        arb = "" if _arbitration(r) == "fifo" else " input_fair"
        if case.startswith("benign"):
            tails[(cc, d, arb)] = small_flow_tail(flows, r["run_id"])
            continue
        v, a = _victim_attacker_gbps(shares, flows, r, case)
        share = v / (v + a) if v + a else NAN
        short = {"parallel16": "par16", "staggered-recreate": "recreate"}.get(case.split("+")[1], case.split("+")[1])
        out.append(Comparison(f"{cc} {short} {d}{arb}", "victim share", share, 0.45))
    for cc, arb in sorted({(k[0], k[2]) for k in tails}):
        if (cc, "none", arb) in tails and (cc, "tenant", arb) in tails:
            (p99n, p999n), (p99t, p999t) = tails[(cc, "none", arb)], tails[(cc, "tenant", arb)]
            out.append(Comparison(f"{cc} benign{arb}", "p99 <BDP vs none", p99t / p99n, 1.2))
            out.append(Comparison(f"{cc} benign{arb}", "p99.9 <BDP vs none", p999t / p999n, NAN))
            out.append(Comparison(f"{cc} benign none{arb}", "p99 <BDP", p99n, NAN))
            out.append(Comparison(f"{cc} benign tenant{arb}", "p99 <BDP", p99t, NAN))
    return sorted(out, key=lambda c: (c.group.endswith("input_fair"), c.group))


def attack_experiments() -> list[Experiment]:
    """The CC-attack paper's entries of `rdmalab repro`."""
    cite = "Snyder, Lebeck, Zhuo, RDMA Congestion Control: It's Only for the Compliant"
    return [
        Experiment(
            name="attack-parallel", title="Parallel-QP attack: attacker share vs QPs, per granularity (Fig. 3)",
            citation=cite + ", Fig. 3, §I, §IV-A", sweep="attack_parallel.toml", quick="attack_parallel_quick.toml",
            figures=["share"], by="traffic[1].qps", compare=compare_parallel, extra_figures=parallel_figure,
            theirs="testbed rows (input_fair): per_qp N/(N+1), the IB specification the paper emulates "
                   "with one address per QP; per_pair 1/2 (§V); CX-5 (per_destination_unsplit) 0.72, the "
                   "share the paper measured (§I), beside N=16; no CC 0.50 (Fig. 3's `16 No CC`). Rows "
                   "marked fifo: a switch without fair arbitration, closed forms only",
            needs_cc=["dcqcn", "none"]),
        Experiment(
            name="attack-staggered", title="Staggered-QP attack: throughput of attacker and victim (Fig. 4)",
            citation=cite + ", Fig. 4, §IV-A", sweep="attack_staggered.toml", quick="attack_staggered_quick.toml",
            figures=["share"], by="fabric", compare=compare_staggered, extra_figures=staggered_figure,
            theirs="the testbed's Gb/s beside our single 1.125 MB transfer on the input-fair switch: RNIC "
                   "maximum 92, staggered alone 74, with a victim 60 (victim < 40, no value given), low marking "
                   "= alone (74); long-lived and FIFO rows: ours only",
            needs_cc=["dcqcn"]),
        Experiment(
            name="attack-defense", title="The tenant defense: victim share under three attacks, benign tail",
            citation=cite + " (§V leaves the overlay attack open; the defense is ours, docs/attacks.md)",
            sweep="attack_defense.toml", quick="attack_defense_quick.toml",
            figures=["share", "slowdown"], by="fabric.defense", compare=compare_defense,
            theirs="the defense's goals: victim share >= 0.45 with the defense; benign p99 slowdown of flows "
                   "< BDP <= 1.2x without it",
            needs_cc=["dcqcn", "hpcc"]),
        Experiment(
            name="attack-table1", title="Table I: vulnerability per attack and enforcement, short-flow penalty",
            citation=cite + ", Table I", sweep="attack_table1.toml", quick="attack_table1_quick.toml",
            figures=["share"], by="fabric.granularity", compare=compare_table1,
            theirs="Table I (1 = vulnerable, 0 = secure; ours: attacker share, vulnerable above 0.55) beside "
                   "the testbed's rows (DCQCN, input_fair); short-flow penalty when benign p99 slowdown of "
                   "flows < BDP exceeds 1.2x per_qp's",
            needs_cc=["dcqcn", "hpcc"], report=table1_report),
        Experiment(
            name="attack-datacenter", title="Split attacks in a datacenter: victim FCT slowdown (Fig. 5)",
            citation=cite + ", Fig. 5, §I, §IV-B", sweep="attack_datacenter.toml",
            quick="attack_datacenter_quick.toml", figures=["slowdown"], by="traffic", compare=compare_datacenter,
            theirs="DCQCN, p99 slowdown of victim flows < BDP: about 20x without attack, over 80x split in "
                   "parallel, about 140x staggered (§IV-B); small-flow p99.9 7x larger under attack (§I); "
                   "HPCC: 'similar trends' (no values). Ours at load 0.9, chosen by the baseline alone "
                   "(the load whose no-attack p99 is nearest 20; docs/attacks.md)",
            needs_cc=["dcqcn", "hpcc"]),
        Experiment(
            name="attack-hpcc-enforcement", title="HPCC tail latency per CC enforcement (Fig. 6)",
            citation=cite + ", Fig. 6, §V", sweep="attack_hpcc_enforcement.toml",
            quick="attack_hpcc_enforcement_quick.toml", figures=["slowdown"], by="fabric.granularity",
            compare=compare_enforcement,
            theirs="p99.9 slowdown of flows of 20-110 KB: 5-10x per QP, 6-34x per src/dst pair; p99 'less "
                   "pronounced' (no values)",
            needs_cc=["hpcc"]),
    ]


# -- Fig. 5 and Fig. 6: the datacenter ------------------------------------------------------
#: BDP of the CC-attack paper's fat tree: 100 Gb/s hosts and its 13 us RTT (§IV-B) give 162.5 KB.
DC_BDP = 162_500
#: Fig. 5's p99 slowdown of victim flows < BDP with DCQCN (§IV-B: "about 20x ... over 80x ...
#: 140x"); with HPCC the paper reports only "similar trends".
PAPER_FIG5 = {"baseline": 20.0, "split-parallel": 80.0, "split-staggered": 140.0}
#: §I: the 99.9 % tail of small-flow FCTs "increases by 7 times" under attack (DCQCN).
PAPER_TAIL_GROWTH = 7.0
#: Fig. 6: p99.9 slowdown of flows of 20-110 KB, HPCC, per enforcement: (lowest, highest).
PAPER_FIG6 = {"per_qp": (5.0, 10.0), "per_pair": (6.0, 34.0)}
#: Size bins of Fig. 6's 20-110 KB range (the paper's own bins are not given).
FIG6_BINS = [(20_000, 40_000), (40_000, 70_000), (70_000, 110_000)]


def dc_case(run: dict[str, Any]) -> str:
    """`baseline`, `split-parallel` or `split-staggered` (Fig. 5's three experiments)."""
    name = case_name(_param(run, "traffic", []))
    return "split-staggered" if name.startswith("split-staggered") else ("baseline" if name == "benign" else name)


def victims(flows: pl.DataFrame, below: int = DC_BDP) -> pl.DataFrame:
    """Fig. 5's victims: the flows of tenant `default` (never split) below `below` bytes."""
    return flows.filter((pl.col("tenant") == "default") & (pl.col("size") < below))


def victim_tail(flows: pl.DataFrame, run_id: str, q: float, below: int = DC_BDP) -> float:
    """Slowdown percentile `q` of one run's victim flows (tenant `default`, never split) below `below` bytes."""
    f = victims(flows.filter(pl.col("run_id") == run_id), below)
    s = f["slowdown"].drop_nulls().to_numpy()
    return float(np.quantile(s, q)) if len(s) else NAN


def compare_datacenter(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """Fig. 5: p99 slowdown of victim flows < BDP per case and CC beside the paper's DCQCN
    values, and the growth of their p99.9 under attack beside §I's 7x."""
    out, base999 = [], {}
    ok = sorted(_ok_runs(runs), key=lambda r: (_cc(r), list(PAPER_FIG5).index(dc_case(r))))
    for r in ok:
        cc, case = _cc(r), dc_case(r)
        theirs = PAPER_FIG5[case] if cc == "dcqcn" else NAN
        out.append(Comparison(f"{cc} {case}", "victim p99 <BDP", victim_tail(flows, r["run_id"], 0.99), theirs))
        p999 = victim_tail(flows, r["run_id"], 0.999)
        if case == "baseline":
            base999[cc] = p999
        elif cc in base999:
            theirs = PAPER_TAIL_GROWTH if cc == "dcqcn" else NAN
            out.append(Comparison(f"{cc} {case}", "p99.9 / baseline", p999 / base999[cc], theirs))
    return out


def fig6_tails(flows: pl.DataFrame, run_id: str, q: float = 0.999) -> list[float]:
    """Slowdown percentile `q` of one run's flows in each of Fig. 6's 20-110 KB bins."""
    out = []
    for lo, hi in FIG6_BINS:
        s = flows.filter((pl.col("run_id") == run_id) & (pl.col("size") >= lo) & (pl.col("size") < hi))
        v = s["slowdown"].drop_nulls().to_numpy()
        out.append(float(np.quantile(v, q)) if len(v) else NAN)
    return out


def compare_enforcement(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """Fig. 6: the lowest and highest p99.9 slowdown over the 20-110 KB bins per enforcement
    beside the paper's range, and each bin's p99."""
    out = []
    for r in sorted(_ok_runs(runs), key=lambda r: list(PAPER_FIG6).index(r["fabric.granularity"])):
        g = r["fabric.granularity"]
        tails = fig6_tails(flows, r["run_id"])
        lo, hi = PAPER_FIG6[g]
        out.append(Comparison(f"hpcc {g}", "p99.9 20-110KB min", float(np.nanmin(tails)), lo))
        out.append(Comparison(f"hpcc {g}", "p99.9 20-110KB max", float(np.nanmax(tails)), hi))
        for (a, b), v in zip(FIG6_BINS, fig6_tails(flows, r["run_id"], 0.99)):
            out.append(Comparison(f"hpcc {g}", f"p99 {a // 1000}-{b // 1000}KB", v, NAN))
    return out


# -- Table I ------------------------------------------------------------------------------
#: The CC-attack paper's Table I: (attack, enforcement) -> vulnerable; and the short-flow penalty.
PAPER_TABLE1 = {
    ("parallel", "per_qp"): True, ("parallel", "per_destination_unsplit"): True, ("parallel", "per_pair"): False,
    ("staggered", "per_qp"): True, ("staggered", "per_destination_unsplit"): False,
    ("staggered", "per_pair"): False,
    ("overlay", "per_qp"): True, ("overlay", "per_destination_unsplit"): True, ("overlay", "per_pair"): True,
}
PAPER_PENALTY = {"per_qp": False, "per_destination_unsplit": True, "per_pair": True}
#: Our columns: (granularity, defense). per_sl is not in the paper's table (§II names it as an
#: option of the IB specification); the tenant defense is ours.
TABLE1_COLUMNS = [("per_qp", "none"), ("per_destination_unsplit", "none"), ("per_pair", "none"), ("per_sl", "none"),
                  ("per_qp", "tenant")]
TABLE1_NAMES = {"per_qp": "IB spec (per_qp)", "per_destination_unsplit": "CX-5", "per_pair": "per src/dst",
                "per_sl": "per SL"}


def table1_cells(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> dict[tuple[str, ...], float]:
    """(cc, arbitration, row, granularity, defense) -> attacker share (attack rows) or benign
    p99 of flows < BDP (row `penalty`)."""
    shares = run_shares(store, runs)
    cells = {}
    for r in _ok_runs(runs):
        case = case_name(_param(r, "traffic", []))
        g, d = _param(r, "fabric.granularity", "per_qp"), _param(r, "fabric.defense", "none")
        cc, arb = _param(r, "fabric.cc", "dcqcn"), _arbitration(r)
        if case.startswith("benign"):
            cells[(cc, arb, "penalty", g, d)] = small_flow_tail(flows, r["run_id"])[0]
            continue
        v, a = _victim_attacker_gbps(shares, flows, r, case)
        row = case.split("+")[1].split("-")[0].rstrip("0123456789")
        cells[(cc, arb, row, g, d)] = a / (a + v) if a + v else NAN
    return cells


def compare_table1(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list:
    """Attacker share per CC, switch arbitration, attack and enforcement (theirs: 1 = vulnerable
    in Table I, 0 = secure, on the testbed's input-fair DCQCN rows only), and benign p99 < BDP
    over per_qp's (theirs: 1.2 = the penalty threshold)."""
    cells = table1_cells(runs, flows, store)
    out = []
    for (cc, arb, row, g, d), x in sorted(cells.items()):
        if (g, d) not in TABLE1_COLUMNS:
            continue  # the tenant defense overrides the granularity: read at per_qp only
        short = {"per_destination_unsplit": "CX-5"}.get(g, g)
        col = short if d == "none" else f"{short}+{d}"
        where = f"{cc} {'fifo ' if arb != 'input_fair' else ''}"
        testbed = cc == "dcqcn" and arb == "input_fair" and d == "none"
        if row == "penalty":
            base = cells.get((cc, arb, "penalty", "per_qp", "none"), NAN)
            out.append(Comparison(f"{where}SF {col}", "p99 <BDP / per_qp", x / base, 1.2))
        else:
            theirs = float(PAPER_TABLE1[(row, g)]) if testbed and (row, g) in PAPER_TABLE1 else NAN
            out.append(Comparison(f"{where}{row} {col}", "attacker share", x, theirs))
    return out


def table1_report(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> str:
    """The paper's Table I, then ours per CC and switch arbitration (vulnerable: attacker share
    > 0.55; short-flow penalty: benign p99 slowdown of flows < BDP > 1.2x per_qp's)."""
    cells = table1_cells(runs, flows, store)
    head = f"{'':<18}" + "".join(f"{TABLE1_NAMES[g] if d == 'none' else 'tenant defense':>18}" for g, d in TABLE1_COLUMNS)
    out = ["The CC-attack paper's Table I (testbed: CX-5, DCQCN, SN2100)", head]
    for row in ("parallel", "staggered", "overlay"):
        out.append(f"{row:<18}" + "".join(
            f"{('Vulner.' if PAPER_TABLE1[(row, g)] else 'Secure') if (row, g) in PAPER_TABLE1 and d == 'none' else '-':>18}"
            for g, d in TABLE1_COLUMNS))
    out.append(f"{'SF penalty?':<18}" + "".join(
        f"{('Yes' if PAPER_PENALTY[g] else 'No') if g in PAPER_PENALTY and d == 'none' else '-':>18}"
        for g, d in TABLE1_COLUMNS))
    combos = sorted({(k[0], k[1]) for k in cells}, key=lambda c: (c[0], c[1] != "input_fair"))
    for cc, arb in combos:
        out += ["", f"Ours, {cc}, switch {arb}", head]
        for row in ("parallel", "staggered", "overlay"):
            out.append(f"{row:<18}" + "".join(
                f"{_verdict(cells.get((cc, arb, row, g, d))):>18}" for g, d in TABLE1_COLUMNS))
        base = cells.get((cc, arb, "penalty", "per_qp", "none"), NAN)
        out.append(f"{'SF penalty?':<18}" + "".join(
            f"{_penalty(cells.get((cc, arb, 'penalty', g, d)), base):>18}" for g, d in TABLE1_COLUMNS))
    return "\n".join(out)


def _verdict(share: float | None) -> str:
    if share is None or share != share:
        return "n/a"
    return f"{'Vulner.' if share > 0.55 else 'Secure'} ({share:.2f})"


def _penalty(p99: float | None, base: float) -> str:
    if p99 is None or p99 != p99 or base != base:
        return "n/a"
    return f"{'Yes' if p99 > 1.2 * base else 'No'} ({p99 / base:.2f}x)"


#: The CC-attack paper's entries, as `repro` collects them.
EXPERIMENTS = attack_experiments()
