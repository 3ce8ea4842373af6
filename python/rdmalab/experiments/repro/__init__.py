"""Paper experiments: each a sweep file, a figure recipe and the published numbers to compare.

    rdmalab repro list
    rdmalab repro run hpcc-fb-hadoop [--quick] [--out DIR] [--workers N | --ray [ADDR]]

Add an experiment by shipping its sweep TOML in this folder and registering an
`Experiment` below; `compare` turns the stored results into rows of (ours, theirs).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from rdmalab.experiments.attacks import attack_experiments as _attack_experiments
from rdmalab.experiments.store import Store, load_sweep
from rdmalab.results import SIZE_BUCKETS, percentile

HERE = Path(__file__).resolve().parent


@dataclass
class Comparison:
    """One number of ours beside the paper's (or a reference simulator's)."""

    group: str
    metric: str
    ours: float
    theirs: float

    def row(self) -> str:
        ratio = self.ours / self.theirs if self.theirs else float("nan")
        return f"{self.group:<22}{self.metric:<22}{self.ours:>10.3f}{self.theirs:>10.3f}{ratio:>8.2f}"


@dataclass
class Experiment:
    """A registered paper experiment."""

    name: str
    title: str
    citation: str
    sweep: str
    quick: str | None
    figures: list[str]
    by: str
    #: (runs, flows, store) -> rows; runs and flows as `load_sweep` gives them, the store for other tables.
    compare: Callable[[pl.DataFrame, pl.DataFrame, Store], list[Comparison]]
    theirs: str
    needs_cc: list[str] = field(default_factory=list)
    #: (runs, flows, store) -> text printed after the comparison rows (e.g. a table of verdicts).
    report: Callable[[pl.DataFrame, pl.DataFrame, Store], str] | None = None
    #: (sweep folder, figure folder) -> files: a figure the generic kinds do not draw.
    extra_figures: Callable[[Path, Path], list[Path]] | None = None

    def sweep_path(self, quick: bool = False) -> Path:
        """The sweep file shipped with the package."""
        name = self.quick if quick and self.quick else self.sweep
        return Path(str(resources.files(__package__).joinpath(name)))


# -- HPCC paper: FCT slowdown of DCQCN and HPCC -------------------------------------------
_REF_BUCKETS = {"all": "all", "<100KB": "lt100KB", "100KB-1MB": "100KB-1MB", ">=1MB": "ge1MB"}


def hpcc_reference() -> dict[tuple[str, str], dict[str, float]]:
    """(cc, bucket) -> p50/p95/p99 of the reference simulator's S1 runs."""
    path = HERE / "data" / "hpcc_reference_s1.csv"
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {(r["cc"], r["bucket"]): {p: float(r[p]) for p in ("p50", "p95", "p99")} for r in rows}


def compare_hpcc(runs: pl.DataFrame, flows: pl.DataFrame, store: Store | None = None) -> list[Comparison]:
    """Our p50/p95/p99 slowdown per CC and size bucket beside the reference's."""
    ref = hpcc_reference()
    out = []
    for cc in ("dcqcn", "hpcc"):
        f = flows.filter(pl.col("fabric.cc") == cc) if "fabric.cc" in flows.columns else flows.clear()
        sizes, slow = f["size"].to_numpy(), f["slowdown"].to_numpy()
        for name, lo, hi in SIZE_BUCKETS:
            sel = slow[(sizes >= lo) & (sizes < hi)]
            theirs = ref[(cc, _REF_BUCKETS[name])]
            for p in ("p50", "p95", "p99"):
                ours = percentile(sel, float(p[1:]) / 100)
                out.append(Comparison(f"{cc} {name}", f"{p} slowdown", ours, theirs[p]))
    return out


def hpcc_reference_flows() -> pl.DataFrame:
    """Every S1 flow of the reference simulator's runs: cc, size, slowdown (from its FCT
    files, shared/reference/hpcc/S1_{dcqcn,hpcc}_fct.txt, normal flows only)."""
    return pl.read_parquet(HERE / "data" / "hpcc_reference_s1_flows.parquet")


def hpcc_reference_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """The slowdown figure with the reference simulator's S1 curves dashed beside ours. Our
    flows are the reference's flow for flow only in the full sweep (S1's flow file); a quick
    run is drawn alone, titled so."""
    from rdmalab.experiments.figures import _groups, default_by
    from rdmalab.plots import slowdown_by_size_frames

    store = Store(sweep_dir)
    ours = _groups(store, "flows", "fabric.cc", None) if default_by(store) else {}
    full = store.manifest().get("name") == "hpcc-fb-hadoop"
    ref = hpcc_reference_flows()
    reference = {f"ns-3 {cc}": ref.filter(pl.col("cc") == cc) for cc in ours} if full else None
    title = ("S1 (320-host fat tree, FB Hadoop 30 %): rdmalab solid, ns-3 reference dashed" if full
             else "quick variant (k=4 fat tree): no reference curve at this scale")
    return slowdown_by_size_frames({f"rdmalab {k}": v for k, v in ours.items()},
                                   Path(out_dir) / "slowdown_vs_reference", title, reference=reference)


# -- DCQCN paper: convergence of N flows on one bottleneck --------------------------------
BOTTLENECK_GBPS = 40.0
#: Header bytes of a data packet without INT (`SimConfig::header_bytes`; DCQCN carries no INT).
DATA_HEADER_BYTES = 48


def payload_fraction(scenario: dict) -> float:
    """The share of a link's bits that are payload when it carries full data packets."""
    mtu = scenario.get("fabric", {}).get("mtu", 1000)
    return mtu / (mtu + DATA_HEADER_BYTES)


def convergence_figure(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Each flow's throughput over time, one panel per N, with the fair share of theory
    (40 x 1000/1048 / N Gb/s of payload) dashed."""
    from rdmalab.experiments.figures import _first_runs, _panels, default_by

    store = Store(sweep_dir)
    groups = _first_runs(store, "rates", default_by(store), None)
    scenario = json.loads(store.runs()["scenario"][0]) if store.runs().height else {}

    def draw(ax, df: pl.DataFrame) -> None:  # noqa: ANN001
        flows = sorted(set(df["flow"].to_list()))
        for f in flows:
            d = df.filter(pl.col("flow") == f).sort("time_ps")
            ax.step(d["time_ps"].to_numpy() / 1e6, d["throughput_gbps"].to_numpy(), where="pre", lw=1,
                    label=f"flow {f}")
        fair = BOTTLENECK_GBPS * payload_fraction(scenario) / len(flows)
        ax.axhline(fair, color="k", ls="--", lw=1, label=f"fair share {fair:.1f} Gb/s (theory)")
        ax.set_ylabel("throughput (Gb/s)")
        ax.set_ylim(bottom=0)

    return _panels(store, groups, draw, Path(out_dir) / "convergence_vs_fair_share",
                   "DCQCN flows on one 40 Gb/s bottleneck against the fair share")


def converged_throughputs(rates: pl.DataFrame) -> np.ndarray:
    """Each flow's mean throughput (Gb/s) over the second half of the window in which every
    flow of the run is active: where a converged algorithm should hold the fair share.

    A flow's last sample covers the interval in which it completed (it was not sending for
    all of it), so it is left out. Empty when the flows never overlap.
    """
    flows = [d.sort("time_ps").head(d.height - 1) for d in rates.partition_by("flow")]
    flows = [d for d in flows if d.height]
    if not flows:
        return np.array([])
    start = max(d["time_ps"].min() for d in flows)
    end = min(d["time_ps"].max() for d in flows)
    if end <= start:
        return np.array([])
    mid = start + (end - start) // 2
    t = pl.col("time_ps")
    return np.array([d.filter((t > mid) & (t <= end))["throughput_gbps"].mean() for d in flows])


def jain(x: np.ndarray) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes everything."""
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if len(x) and x.any() else float("nan")


def compare_convergence(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    """Per N, from the per-QP rate samples: the lowest and highest flow throughput once all
    N flows run (`converged_throughputs`) against the fair share of the bottleneck's payload
    capacity, and Jain's fairness index of the N throughputs against 1."""
    rates = store.table("rates", params=False)
    if "flow" not in rates.columns:
        return []
    out = []
    for r in runs.filter(pl.col("status") == "ok").iter_rows(named=True):
        x = converged_throughputs(rates.filter(pl.col("run_id") == r["run_id"]))
        if len(x) == 0:
            continue
        n = len(x)
        fair = BOTTLENECK_GBPS * payload_fraction(json.loads(r["scenario"])) / n
        out.append(Comparison(f"N={n}", "slowest flow Gb/s", float(x.min()), fair))
        out.append(Comparison(f"N={n}", "fastest flow Gb/s", float(x.max()), fair))
        out.append(Comparison(f"N={n}", "Jain fairness", jain(x), 1.0))
    return sorted(out, key=lambda c: (int(c.group[2:]), c.metric))


# -- Seed 001: multipath by data partition ----------------------------------------------
_MP_THEIRS = ("Wang et al.'s ns-3 numbers as printed in §IV (ms; topology 3's 1-QP value is topology 1's "
              "plus the 'about 200000 ns' the text gives). Quick variants shrink every size by 4 and our "
              "times are scaled back by 4. 'msg / bg throughput' is the message's throughput over the median "
              "background flow's in the same run, against one share per QP (theory, not the paper)")


def _mp_experiment(topo: int, figs: str, what: str) -> Experiment:
    from rdmalab.experiments.repro import multipath

    return Experiment(
        name=f"mp-partition-topo{topo}",
        title=f"Multipath by data partition, topology {topo} ({figs}): {what}",
        citation="Wang et al., RDMA Load Balancing via Data Partition (seed 001), §IV",
        sweep=f"mp_partition_topo{topo}.toml", quick=f"mp_partition_topo{topo}_quick.toml",
        figures=["mp_qps", "mp_chunk"], by="traffic[0].qps", compare=multipath.compare(topo),
        theirs=_MP_THEIRS, needs_cc=["dcqcn"],
    )

# -- Blitz (seed 004): DASR and IOFD ---------------------------------------------------------
from rdmalab.experiments.repro import blitz as _blitz  # noqa: E402

_BLITZ_CITATION = ("Xue et al., Fast Congestion Control in RDMA-based Datacenter Networks, SIGCOMM 2018 "
                   "poster (seed 004)")
_BLITZ_ASSUMPTIONS = ("InfiniBand CC -> DCQCN (reference defaults); the testbed's DASR was application-level "
                      "staggering (section 3), ours is in the NIC; 20-host star (20 nodes on a 36-port SX6025) at "
                      "56 Gb/s, 1 us links, 32 MB buffer; rounds every 5 ms, not 100 ms; 256 KiB per sender; "
                      "U(0, 100 us) jitter")

BLITZ_EXPERIMENTS = [
    Experiment(
        name="blitz-incast",
        title="Blitz DASR vs DCQCN: incast FCT by degree beside a long flow (Fig. 1a)",
        citation=_BLITZ_CITATION,
        sweep="blitz_incast.toml", quick="blitz_incast_quick.toml",
        figures=["cdf"], by="fabric.cc", compare=_blitz.compare_incast,
        theirs="the poster's testbed: DCQCN/DASR median and p99 ratios 2.5-3.3x over degrees (midpoint shown), "
               "InfiniBand p99 about 1.2x its median, long-flow throughput within 0.5 %. Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["dcqcn", "blitz"], extra_figures=_blitz.incast_figure,
    ),
    Experiment(
        name="blitz-incast-cdf",
        title="Blitz DASR vs DCQCN: incast FCT distribution at degree 16 (Fig. 1b)",
        citation=_BLITZ_CITATION,
        sweep="blitz_incast_cdf.toml", quick="blitz_incast_cdf_quick.toml",
        figures=["cdf"], by="fabric.cc", compare=_blitz.compare_incast_cdf,
        theirs="the poster's Fig. 1b gives curves only; beside the median, its 2.5-3.3x (midpoint). Assumptions: "
               + _BLITZ_ASSUMPTIONS,
        needs_cc=["dcqcn", "blitz"],
    ),
    Experiment(
        name="blitz-ecn",
        title="Blitz (DASR + IOFD) vs DCQCN: ECN marks, pauses and p99 slowdown under web search + incast",
        citation=_BLITZ_CITATION,
        sweep="blitz_fabric.toml", quick="blitz_fabric_quick.toml",
        figures=["slowdown", "pfc"], by="fabric.cc", compare=_blitz.compare_ecn,
        theirs="the poster's section 2 end: about 4x fewer ECN marks 'for typical workloads' (workload, fabric and "
               "scale unstated). Ours: k=8 fat tree and a 2:1 leaf-spine at 100 Gb/s, web search at 30 and 50 % "
               "load plus a 16->1 incast of 64 KB per sender every 1 ms; DCQCN runs carry IOFD with "
               "max_deflections = 0, identical to IOFD off (the sweep's TIMELY runs serve blitz-scale)",
        needs_cc=["dcqcn", "timely", "blitz"],
    ),
    Experiment(
        name="blitz-scale",
        title="Blitz vs DCQCN and TIMELY at scale: p99 slowdown and throughput",
        citation=_BLITZ_CITATION + "; numbers from its longer version (not in our seeds, unverified)",
        sweep="blitz_fabric.toml", quick="blitz_fabric_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.cc", compare=_blitz.compare_scale,
        theirs="the longer version's simulation (unverified): 4.8x lower p99 and 58 % more throughput than "
               "TIMELY/DCQCN; its workload is not ours (same sweep as blitz-ecn). Throughput: payload delivered per "
               "simulated second over the whole run",
        needs_cc=["dcqcn", "timely", "blitz"],
    ),
    Experiment(
        name="blitz-iofd",
        title="IOFD: ECMP-colliding long flows on a leaf-spine, deflection off and on (ours)",
        citation=_BLITZ_CITATION + " (section 2: in-order flow deflection; no number in the poster)",
        sweep="blitz_iofd.toml", quick="blitz_iofd_quick.toml",
        figures=["slowdown", "cdf"], by="fabric.iofd.max_deflections", compare=_blitz.compare_iofd,
        theirs="no paper number: slowdown 1 is a collision-free path, 0 NACKs is IOFD's in-order promise",
        needs_cc=["dcqcn"],
    ),
]

REGISTRY: dict[str, Experiment] = {e.name: e for e in [
    Experiment(
        name="hpcc-fb-hadoop",
        title="HPCC vs DCQCN: FCT slowdown by flow size, fat tree, FB Hadoop, 30% load",
        citation="Li et al., HPCC: High Precision Congestion Control, SIGCOMM 2019 (the FB Hadoop "
                 "30%-load FCT-slowdown comparison)",
        sweep="hpcc_fb_hadoop.toml", quick="hpcc_fb_hadoop_quick.toml",
        figures=["slowdown", "cdf", "pfc"], by="fabric.cc", compare=compare_hpcc,
        theirs="the reference ns-3 HPCC simulator on the same topology and flows (its S1 runs, "
               "data/hpcc_reference_s1.csv), not numbers read off the paper's figure",
        needs_cc=["dcqcn", "hpcc"], extra_figures=hpcc_reference_figure,
    ),
    Experiment(
        name="dcqcn-convergence",
        title="DCQCN: N flows converging on one 40 Gb/s bottleneck",
        citation="Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM 2015",
        sweep="dcqcn_convergence.toml", quick="dcqcn_convergence_quick.toml",
        figures=["rate", "queue", "cdf"], by="traffic[0].senders", compare=compare_convergence,
        theirs="fair-share theory, not the paper's measurements: the paper reports DCQCN converging "
               "to a fair share, i.e. 40/N Gb/s of wire rate each, here in payload (40 x 1000/1048 / N "
               "Gb/s), and a Jain index of 1. Ours: each flow's mean throughput over the second half "
               "of the window in which all N flows send, from the per-QP rate samples",
        needs_cc=["dcqcn"], extra_figures=convergence_figure,
    ),
    _mp_experiment(1, "Figs. 7, 10", "leaf-spine 5x4 hosts, 5 spines, 10 MiB from host 0 to 19"),
    _mp_experiment(2, "Figs. 8, 11", "full mesh of 5 switches x 4 hosts"),
    _mp_experiment(3, "Figs. 9, 12", "leaf-spine 8x16 hosts, 4 spines"),
    *BLITZ_EXPERIMENTS,
]}
REGISTRY.update({e.name: e for e in _attack_experiments(Experiment)})


_VIRTUOSO_THEIRS = ("closed forms, not the paper's measurements (Tian et al. print no values for Figs. 5-8): "
                    "FCT = 8 x size x 1048/1000 / (N x 1 Gb/s), speed-up = N, WRs = N (+1 notice for a "
                    "large SEND; 1 below small_message)")


def _virtuoso_experiment(name: str, title: str, figs: str, compare: Callable) -> Experiment:
    stem = name.replace("-", "_")
    return Experiment(
        name=name, title=title, citation=f"Tian et al., Virtuoso (seed 003), {figs}",
        sweep=f"{stem}.toml", quick=f"{stem}_quick.toml", figures=[stem.replace("virtuoso_sizes", "virtuoso_speedup")],
        by="traffic[0].qps", compare=compare, theirs=_VIRTUOSO_THEIRS,
    )


def _virtuoso_entries() -> list[Experiment]:
    from rdmalab.experiments.repro import virtuoso

    return [
        _virtuoso_experiment("virtuoso-paths", "Virtuoso: FCT of one WRITE vs paths, 1 Gb/s core links",
                             "§4.3, Fig. 5", virtuoso.compare_paths),
        _virtuoso_experiment("virtuoso-sizes", "Virtuoso: speed-up FCT(1)/FCT(N) by message size",
                             "§4.3, Fig. 6", virtuoso.compare_sizes),
        _virtuoso_experiment("virtuoso-overhead", "Virtuoso: WRs and CQEs per message (Fig. 8 proxy)",
                             "§4.6, Fig. 8", virtuoso.compare_overhead),
        Experiment(
            name="virtuoso-chunk", title="Virtuoso: largest WR per path vs paths, lossy fabric",
            citation="Tian et al., Virtuoso (seed 003), §3.5, Table 2", sweep="virtuoso_chunk.toml",
            quick="virtuoso_chunk_quick.toml", figures=["virtuoso_chunk"], by="traffic[0].qps",
            compare=virtuoso.compare_chunk,
            theirs="Table 2 of the paper (bytes, shown in KB); buffer_mb fitted once to its 1-path row; "
                   "'vs bound': our ToR's shared-ingress bound for the fitted buffer"),
        Experiment(
            name="virtuoso-mice", title="Virtuoso: 256 KB mice beside an elephant on path 0 or split",
            citation="Tian et al., Virtuoso (seed 003), §4.4, Fig. 7", sweep="virtuoso_mice.toml",
            quick="virtuoso_mice_quick.toml", figures=["virtuoso_mice"], by="traffic[0].qps",
            compare=virtuoso.compare_mice,
            theirs="a mouse alone on its 1 Gb/s link (8 x 262144 x 1048/1000 / 1 Gb/s); 'vs PFC model': "
                   "the PFC backlog of the fitted buffer, then the link shared with the elephant; the paper "
                   "prints no values, only that mice are faster with the elephant split"),
    ]


REGISTRY.update({e.name: e for e in _virtuoso_entries()})


def _drum_entries() -> list[Experiment]:
    from rdmalab.experiments.repro import drum_fabric as d

    def exp(name: str, title: str, figs: str, theirs: str, key: str, by: str = "host.mechanism") -> Experiment:
        stem = name.replace("-", "_")
        return Experiment(
            name=name, title=title, citation=f"{d.CITATION}, {figs}", sweep=f"{stem}.toml",
            quick=f"{stem}_quick.toml", figures=[], by=by, compare=getattr(d, f"compare_{key}"),
            theirs=theirs, extra_figures=getattr(d, f"figure_{key}"))

    return [
        exp("drum-fig2a", "DRUM Fig. 2a: a batch-posting neighbour delays a 1 KB WQE (RAW); DRUM rows: Fig. 6",
            "§II-A, Fig. 2a", "the caption's 19.8 and 74.3 us (text: 20 -> 78 us, 3.9x); wqe_cost is calibrated "
            "on this slope, the rest is a prediction", "fig2a"),
        exp("drum-fig2b", "DRUM Fig. 2b: throughput vs CQ polling rate, wr_num 1/5/10 (RAW)", "§II-C, Fig. 2b",
            "the figure's shape, not its values (none printed): throughput linear in the polling rate "
            "(x2 polls -> x2) and in wr_num (x10) until a budget binds", "fig2b", by="app[0].wr_num"),
        exp("drum-fig2c", "DRUM Fig. 2c: aggregate throughput vs connections, QP-cache knee; one QP flat",
            "§II-D, Fig. 2c", "the knee at 20 connections (no throughput values printed); UD flat. Miss "
            "penalty 1 us is our choice, so the level past the knee is a prediction", "fig2c"),
        exp("drum-tc1", "DRUM test case 1 (Fig. 8): 32 B WQE p80 vs cc, RAW / SHARE / DRUM", "§IV-C, Fig. 8",
            "the text's p80 values (SHARE given only at cc = 20) and ratios at cc = 100; the background "
            "workload is our choice (drum_tc1.toml)", "tc1"),
        exp("drum-tc2", "DRUM test case 2 (Figs. 9, 7): 1 MB of 32 B WQEs, and 1 GB of 1 MB WQEs, vs cc",
            "§IV-C, Figs. 7 and 9", "the text's 53.1 / 82.8 / 62.9 ms at cc = 20 and its ratios at cc = 100; "
            "Fig. 7: DRUM's 1 GB 'unaffected by the background' (1.0 x its time alone at line rate). The "
            "foreground's batch size is our choice; unfinished transfers are projected from their WQE rate", "tc2"),
        exp("drum-tc3", "DRUM test case 3 (Figs. 10-11): KV store throughput and latency vs clients",
            "§IV-C, Figs. 10-11", "above 300 connections: DRUM 1.8x SHARE's throughput, SHARE 67.3 % more "
            "latency, DRUM 'mostly' under 18 us (no number: nan); the last rows are ours only, as "
            "'Gb/s per connection | mean batch latency us'. Client behaviour is our choice (drum_tc3.toml)", "tc3"),
    ]


REGISTRY.update({e.name: e for e in _drum_entries()})


def get(name: str) -> Experiment:
    """The experiment called `name`; ValueError listing the known ones otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment `{name}` (known: {', '.join(REGISTRY)})")
    return REGISTRY[name]


def comparison_table(exp: Experiment, sweep_dir: str | Path) -> str:
    """Our numbers beside theirs, as printed by `rdmalab repro run`."""
    runs, flows = load_sweep(sweep_dir)
    flows = flows.filter(pl.col("run_id").is_in(runs.filter(pl.col("status") == "ok")["run_id"].implode()))
    # Runs of long flows may complete none and still have numbers (e.g. tenant shares).
    ok = runs.filter(pl.col("status") == "ok").height if runs.height else 0
    rows = exp.compare(runs, flows, Store(sweep_dir)) if ok else []
    head = f"{'':<22}{'metric':<22}{'ours':>10}{'theirs':>10}{'ratio':>8}"
    lines = [f"{exp.title}", f"  paper:  {exp.citation}", f"  theirs: {exp.theirs}", "", head, "-" * len(head)]
    lines += [c.row() for c in rows] or ["(no successful runs to compare)"]
    if exp.report is not None and ok:
        lines += ["", exp.report(runs, flows, Store(sweep_dir))]
    return "\n".join(lines)
