"""Figures of a run, for papers and notebooks.

Every `*_figure` / plotting function draws into the axes it is given (`ax=`) or into a new
figure, and returns the matplotlib `Figure` (a notebook shows it). The `slowdown_by_size*`
functions also write PNG and PDF files, byte-reproducible (no creation date in the PDF).

The slowdown layout is the HPCC paper's (Li et al., SIGCOMM 2019, figures 11-13): flows sorted
by size into buckets of equal flow count, the buckets evenly spaced on the x axis and labelled
with their largest size, so that the many small flows get as much room as the few large ones.
The flow count of each bucket is on the top axis; a percentile backed by fewer than
`MIN_TAIL_FLOWS` flows at or above it is drawn hollow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

import matplotlib

if not hasattr(sys, "ps1") and "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # scripts and the CLI draw to files; notebooks keep their backend
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib import ticker  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rdmalab.results import Results, describe, percentile, port_label  # noqa: E402,F401 (re-exported)

#: Percentiles of the slowdown figure: (column name, fraction).
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
#: A percentile point needs this many flows at or above it to be drawn filled: p99 of a
#: bucket of 200 flows rests on 2 flows, and is drawn hollow.
MIN_TAIL_FLOWS = 5
#: Fixed metadata, so that rerunning a figure gives the same bytes.
_METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None, "Producer": None}}


# -- FCT slowdown against flow size -------------------------------------------------------------
def size_label(size: float) -> str:
    """`1.2K`, `10K`, `1M`: a flow size as the HPCC paper labels its buckets (10^3 steps)."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if size >= scale:
            v = size / scale
            return f"{v:.3g}{unit}"
    return f"{int(size)}"


def bucket_edges(flows: Sequence[pl.DataFrame], buckets: int = 20) -> np.ndarray:
    """Size thresholds splitting the pooled flows of `flows` into `buckets` of equal flow
    count (by percentile of the flow count): bucket i holds sizes in (edge[i], edge[i+1]]."""
    sizes = np.sort(np.concatenate([_completed(f)["size"].to_numpy() for f in flows] or [np.zeros(0)]))
    if len(sizes) == 0:
        return np.zeros(0)
    cuts = np.linspace(0, len(sizes), buckets + 1).astype(int)[1:]
    uppers = np.unique(sizes[np.maximum(cuts - 1, 0)])  # equal sizes never straddle two buckets
    return np.concatenate([[-1], uppers]).astype(float)


def slowdown_buckets(flows: pl.DataFrame, edges: np.ndarray | None = None,
                     buckets: int = 20) -> tuple[list[float], list[list[float]], list[int]]:
    """Per size bucket (`edges` from `bucket_edges`, default this table's own): the largest
    size, the p50/p95/p99 slowdown and the flow count."""
    flows = _completed(flows)
    edges = bucket_edges([flows], buckets) if edges is None else edges
    sizes, slow = flows["size"].to_numpy(), flows["slowdown"].to_numpy()
    which = np.searchsorted(edges, sizes, side="left") - 1  # (edge[i], edge[i+1]] -> i
    sel = [slow[which == i] for i in range(len(edges) - 1)]
    cols = [[percentile(s, p) for s in sel] for _, p in PERCENTILES]
    return [float(e) for e in edges[1:]], cols, [len(s) for s in sel]


def slowdown_figure(results: dict[str, Results | pl.DataFrame] | Results | pl.DataFrame, title: str = "",
                    ax: Any = None, percentiles: Sequence[str] = ("p50", "p95", "p99"), buckets: int = 20,
                    reference: dict[str, pl.DataFrame] | None = None) -> Figure:
    """FCT slowdown against flow size in the HPCC paper's layout (module doc), one panel per
    percentile (`ax`: one Axes per percentile, or one Axes for a single percentile), one line
    per run. `reference` adds curves drawn dashed (e.g. the ns-3 reference's flows)."""
    frames = _frames(results)
    refs = {k: _completed(v) for k, v in (reference or {}).items()}
    fig, axes = _axes(ax, len(percentiles), figsize=(4.4 * len(percentiles), 3.9))
    edges = bucket_edges(list(frames.values()) + list(refs.values()), buckets)
    if len(edges) < 2:
        return fig
    x = np.arange(len(edges) - 1)
    counts = np.zeros(len(x), dtype=int)
    for style, group in (("-", frames), ("--", refs)):
        for label, flows in group.items():
            _, cols, n = slowdown_buckets(flows, edges)
            if style == "-":
                counts += np.array(n)
            for a, name in zip(axes, percentiles):
                k = [p for p, _ in PERCENTILES].index(name)
                _plot_percentile(a, x, cols[k], n, PERCENTILES[k][1], style, label)
    for a, name in zip(axes, percentiles):
        _slowdown_axes(a, edges, counts.tolist(), name)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def _plot_percentile(ax: Any, x: np.ndarray, ys: list[float], n: list[int], p: float, style: str,
                     label: str) -> None:
    """One curve; points resting on fewer than MIN_TAIL_FLOWS flows are hollow."""
    ys_arr = np.array(ys, dtype=float)
    line = ax.plot(x, ys_arr, style, lw=1.2, label=label)[0]
    backed = np.array([c * (1 - p) >= MIN_TAIL_FLOWS for c in n])
    color = line.get_color()
    ax.plot(x[backed], ys_arr[backed], "o", ms=3.5, color=color)
    ax.plot(x[~backed], ys_arr[~backed], "o", ms=3.5, mfc="none", color=color)


def _slowdown_axes(ax: Any, edges: np.ndarray, counts: list[int], name: str) -> None:
    x = np.arange(len(edges) - 1)
    ax.set_xticks(x, [size_label(e) for e in edges[1:]], rotation=90, fontsize=7)
    ax.set_xlabel("flow size (bytes, largest of the bucket)")
    ax.set_ylabel(f"{name} FCT slowdown")
    log_axis(ax, "y")
    ax.grid(True, which="both", alpha=0.3)
    if counts:
        top = ax.secondary_xaxis("top")
        top.set_xticks(x, [str(c) for c in counts], rotation=90, fontsize=6)
        top.set_xlabel("flows per bucket, all runs (hollow: < %d above the percentile)" % MIN_TAIL_FLOWS, fontsize=7)


def slowdown_by_size(results: dict[str, Results] | Results, out: str | Path, title: str = "") -> list[Path]:
    """`slowdown_figure` written as PNG and PDF; returns their paths. A lone `Results` is
    labelled by its flow count."""
    return save_figure(slowdown_figure(results, title), out)


def slowdown_by_size_frames(frames: dict[str, pl.DataFrame], out: str | Path, title: str = "",
                            reference: dict[str, pl.DataFrame] | None = None) -> list[Path]:
    """`slowdown_by_size` for flow tables (any DataFrame with `size` and `slowdown`), one
    line per label. Writes PNG and PDF; returns their paths."""
    return save_figure(slowdown_figure(frames, title, reference=reference), out)


# -- over time: queues, links, PFC, rates ---------------------------------------------------------
def queue_lengths(res: Results, ports: Sequence[str] | None = None, top: int = 4, ax: Any = None) -> Figure:
    """Queue length (KB) over time (µs) of switch ports named as figure legends name them
    (`sw8:2→h1:0`) or by `link`, default the `top` busiest. Needs `queue_sample_interval`."""
    q = res.queue_samples
    _need(q, "queue samples: set fabric.queue_sample_interval")
    fig, (a,) = _axes(ax, 1)
    if not ports and q["bytes"].max():  # only ports that queued anything (all idle: the top ones still)
        q = q.filter((pl.col("bytes").max() > 0).over("port_id"))
    for pid in _pick_ports(q, ports, "bytes", top):
        d = q.filter(pl.col("port_id") == pid).sort("time_ps")
        a.plot(d["time_ps"].to_numpy() / 1e6, d["bytes"].to_numpy() / 1e3, lw=1, label=port_label(d.row(0, named=True)))
    a.set_ylim(bottom=0)
    return _finish(fig, a, "queue length (KB)", "switch queue length")


def link_utilisation(res: Results, links: Sequence[str] | None = None, top: int = 4, ax: Any = None) -> Figure:
    """Utilisation (of the port's rate) over time (µs) per direction of the named links
    (default: the `top` busiest directions). Needs `fabric.link_sample_interval`."""
    lk = res.links
    _need(lk, "link samples: set fabric.link_sample_interval")
    fig, (a,) = _axes(ax, 1)
    for pid in _pick_ports(lk, links, "bytes", top, how="sum"):
        d = lk.filter(pl.col("port_id") == pid).sort("time_ps")
        a.step(*interval_steps(d["time_ps"].to_numpy() / 1e6, d["utilization"].to_numpy()), where="pre", lw=1,
               label=port_label(d.row(0, named=True)))
    a.set_ylim(0, 1.05)
    return _finish(fig, a, "utilisation", "link utilisation")


def _pause_bounds(time_ps: np.ndarray, pause: np.ndarray, end_ps: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (ps) of each paused span of one port, from its PAUSE/RESUME frames in time
    order: a span runs from a PAUSE to the RESUME that ends it (or `end_ps`); repeated PAUSEs
    and a RESUME with nothing paused change nothing. The spans are sorted and disjoint."""
    t, on = np.asarray(time_ps, dtype=np.int64), np.asarray(pause).astype(bool)
    keep = np.ones(len(on), dtype=bool)
    keep[1:] = on[1:] != on[:-1]
    t, on = t[keep], on[keep]
    if len(on) and not on[0]:
        t, on = t[1:], on[1:]
    starts, ends = t[on], t[~on]
    if len(ends) < len(starts):
        ends = np.append(ends, end_ps)
    return starts, ends


def pause_spans(time_ps: np.ndarray, pause: np.ndarray, end_ps: int,
                max_spans: int = 5000) -> list[tuple[float, float]]:
    """(start µs, length µs) of each paused span of one port (`_pause_bounds`). Above
    `max_spans` spans, spans separated by less than 1/`max_spans` of the drawn time are
    joined, so that millions of pauses come back in bounded memory."""
    starts, ends = _pause_bounds(time_ps, pause, end_ps)
    if len(starts) > max_spans:
        wide = np.nonzero(starts[1:] - ends[:-1] > (end_ps - starts[0]) / max_spans)[0]
        starts = starts[np.concatenate(([0], wide + 1))]
        ends = ends[np.concatenate((wide, [len(ends) - 1]))]
    return list(zip((starts / 1e6).tolist(), ((ends - starts) / 1e6).tolist()))


def paused_share(starts: np.ndarray, ends: np.ndarray, end_ps: int, slices: int) -> np.ndarray:
    """The share of each of `slices` equal slices of [0, `end_ps`) that the sorted, disjoint
    spans [`starts`, `ends`) cover (exact: the paused time before each slice edge, differenced)."""
    edges = np.linspace(0.0, float(end_ps), slices + 1)
    s, e = starts.astype(np.float64), ends.astype(np.float64)
    before = np.concatenate(([0.0], np.cumsum(e - s)))  # paused time before span k starts
    k = np.searchsorted(s, edges, side="right") - 1  # the last span starting at or before each edge
    inside = np.clip(edges - s[np.maximum(k, 0)], 0.0, (e - s)[np.maximum(k, 0)]) if len(s) else edges * 0
    paused = np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0.0)
    return np.diff(paused) / np.diff(edges)


#: Time slices of the PFC timeline: about one per pixel of its axes at the CLI's 150 dpi.
PFC_SLICES = 1200
#: Port names on the PFC timeline's axis at most (more would overlap at its height).
PFC_LABELS = 40


def pfc_timeline(res: Results, ax: Any = None, slices: int = PFC_SLICES) -> Figure:
    """When each port was paused: one row per port that received a PAUSE (ports in the order
    of their first one), the run cut into `slices` equal time slices, each coloured by the
    share of it the port spent paused (from each PAUSE to the RESUME that ended it, or the end
    of the run; white: not paused at all). Drawn as one image, so that a run with tens of
    thousands of pauses costs what a run with one does; the colour scale starts at a visible
    shade, so that a pause far shorter than a slice still shows."""
    pfc = res.pfc
    _need(pfc, "PFC frames: this run paused nothing")
    fig, (a,) = _axes(ax, 1)
    end = max(int(res.counters["end_time_ps"]), 1)
    names, rows = [], []
    for _, d in pfc.sort("time_ps").group_by(["port_id"], maintain_order=True):
        starts, ends = _pause_bounds(d["time_ps"].to_numpy(), d["pause"].to_numpy(), end)
        rows.append(paused_share(starts, ends, end, slices))
        names.append(port_label(d.row(0, named=True)))
    cmap = matplotlib.colors.ListedColormap(matplotlib.colormaps["Blues"](np.linspace(0.35, 1.0, 256)))
    cmap.set_under("white")
    image = a.imshow(np.vstack(rows), aspect="auto", interpolation="nearest", origin="lower", cmap=cmap,
                     vmin=1e-9, vmax=1.0, extent=(0.0, end / 1e6, -0.5, len(rows) - 0.5))
    fig.colorbar(image, ax=a, pad=0.01, fraction=0.04).set_label("share of the slice paused", fontsize=7)
    every = -(-len(names) // PFC_LABELS)  # a label on every row up to PFC_LABELS rows, then every k-th
    a.set_yticks(range(0, len(names), every), names[::every], fontsize=7)
    return _finish(fig, a, "paused port (receiver of PAUSE)", "PFC pauses", legend=False)


def flow_rates(res: Results, flows: Sequence[int] | None = None, top: int = 8, metric: str = "throughput",
               ax: Any = None) -> Figure:
    """Per-flow throughput (or CC rate) in Gb/s over time (µs), the named `flows` or the
    `top` that moved most. Needs `fabric.rate_sample_interval`."""
    col = {"throughput": "throughput_gbps", "rate": "rate_gbps"}[metric]
    r = res.rates
    _need(r, "rate samples: set fabric.rate_sample_interval")
    fig, (a,) = _axes(ax, 1)
    if flows is None:
        tot = r.group_by("flow").agg(pl.col("throughput_gbps").sum()).sort(["throughput_gbps", "flow"],
                                                                          descending=[True, False])
        flows = sorted(tot["flow"].head(top).to_list())
    for f in flows:
        d = r.filter(pl.col("flow") == f).sort("time_ps")
        if d.height:
            a.step(*interval_steps(d["time_ps"].to_numpy() / 1e6, d[col].to_numpy()), where="pre", lw=1,
                   label=f"flow {f} (h{d['src'][0]}→h{d['dst'][0]})")
    a.set_ylim(bottom=0)
    return _finish(fig, a, f"{metric} (Gb/s)", f"per-flow {metric}")


def collective_steps(res: Results, names: Sequence[str] | None = None, top: int = 8, ax: Any = None) -> Figure:
    """Completion by step of each collective iteration (`res.collective_steps`), the named
    ones or the first `top`: for step k of the schedule, the time since the iteration's start
    when its first rank and its last rank received that step's data, the band between them
    being how far the ranks drift apart. Needs `[[collective]]`."""
    steps, colls = res.collective_steps, res.collectives
    _need(steps, "collective steps: the scenario has no [[collective]]")
    fig, (a,) = _axes(ax, 1)
    wanted = list(names) if names else colls["name"].head(top).to_list()
    for name, start in colls.filter(pl.col("name").is_in(wanted)).select("name", "start_ns").iter_rows():
        d = steps.filter(pl.col("name") == name).sort("step")
        k = d["step"].to_numpy()
        first, last = ((d[c].to_numpy() - start) / 1e3 for c in ("first_ns", "last_ns"))
        # A marker per step where there are few, so that a one-step all-to-all shows.
        line, = a.plot(k, last, lw=1, marker="o" if len(k) <= 40 else None, ms=3, label=f"{name} (last rank)")
        a.fill_between(k, first, last, color=line.get_color(), alpha=0.25, lw=0)
    a.set_ylim(bottom=0)
    fig = _finish(fig, a, "completion since start (µs)", "completion by step (band: first to last rank)")
    a.set_xlabel("step")  # _finish names the x axis time; here it counts steps
    return fig


def chakra_critical_path(nodes: pl.DataFrame) -> list[int]:
    """The rows of `res.chakra` (one trace set's) on its critical path, last first: from the
    node that ends last, each node's `waited_on` (the dependency done last) at its rank,
    until a node that waited on none."""
    if nodes.height == 0:
        return []
    nodes = nodes.with_row_index("_i")
    at = nodes.filter(pl.col("end_ns") == pl.col("end_ns").max()).row(0, named=True)
    path = [at["_i"]]
    while at["waited_on"] == at["waited_on"]:  # NaN: waited on nothing
        at = nodes.filter((pl.col("rank") == at["rank"]) & (pl.col("node_id") == int(at["waited_on"]))).row(0, named=True)
        path.append(at["_i"])
    return path


def chakra_timeline(res: Results, job: int = 0, ax: Any = None) -> Figure:
    """A Chakra trace set's nodes per rank over time (`res.chakra`): compute and communication
    as bars on each rank's line, the critical path (`chakra_critical_path`) outlined. Needs
    `kind = "chakra"` traffic."""
    nodes = res.mechanisms.get("chakra", pl.DataFrame())
    _need(nodes, "Chakra trace nodes: the scenario has no kind = \"chakra\" traffic")
    nodes = nodes.filter(pl.col("job") == job)
    fig, (a,) = _axes(ax, 1)
    critical = set(chakra_critical_path(nodes))
    colours = {"compute": "tab:orange", "collective": "tab:blue", "send": "tab:green", "recv": "tab:cyan"}
    for i, row in enumerate(nodes.iter_rows(named=True)):
        if row["end_ns"] != row["end_ns"]:
            continue  # not done
        a.broken_barh([(row["start_ns"] / 1e3, max(row["end_ns"] - row["start_ns"], 0.0) / 1e3)],
                      (row["rank"] - 0.4, 0.8), facecolors=colours.get(row["kind"], "grey"), alpha=0.7,
                      edgecolors="black" if i in critical else "none", linewidth=1.5 if i in critical else 0)
    for kind, colour in colours.items():
        if kind in set(nodes["kind"]):
            a.bar(0, 0, color=colour, alpha=0.7, label=kind)
    a.set_yticks(sorted(set(nodes["rank"])))
    return _finish(fig, a, "rank", "trace nodes per rank (outlined: the critical path)")


# -- helpers ----------------------------------------------------------------------------------------
def plain_number(x: float) -> str:
    """A tick value as a reader writes it: `2.75`, `40`, `1,000`, `0.005` (never `2.75×10⁰`)."""
    if x >= 1000 and float(x).is_integer():
        return f"{int(x):,}"
    return np.format_float_positional(float(x), precision=3, unique=True, fractional=False, trim="-")


class PlainLogFormatter(ticker.LogFormatterSciNotation):
    """matplotlib's choice of which log ticks to label (every decade; minor ticks too when
    the axis spans less than a few decades), each label a plain number."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain_number(x) if super().__call__(x, pos) else ""


def log_axis(ax: Any, axis: str = "y", base: float = 10) -> None:
    """Puts `ax`'s `axis` ("x" or "y") on a log scale labelled with plain numbers."""
    getattr(ax, f"set_{axis}scale")("log", base=base)
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(PlainLogFormatter(base=base))
    target.set_minor_formatter(PlainLogFormatter(base=base, labelOnlyBase=False))


def interval_steps(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Samples that each cover the interval ending at their time, as `step(where="pre")`
    draws them: the first one gets its interval's start too (one interval earlier), so that
    its value is drawn over its interval, not as a lone vertical edge."""
    if len(t) < 2:
        return t, y
    return np.concatenate([[max(t[0] - (t[1] - t[0]), 0.0)], t]), np.concatenate([[y[0]], y])


def _completed(flows: pl.DataFrame) -> pl.DataFrame:
    return flows.filter(pl.col("status") == "completed") if "status" in flows.columns else flows


def _frames(results: Any) -> dict[str, pl.DataFrame]:
    if isinstance(results, Results):
        return {f"{results.counters['flows_completed']:,} flows": results.completed}
    if isinstance(results, pl.DataFrame):
        return {f"{results.height:,} flows": _completed(results)}
    return {k: (v.completed if isinstance(v, Results) else _completed(v)) for k, v in results.items()}


def _axes(ax: Any, n: int, figsize: tuple[float, float] = (9, 3.6)) -> tuple[Figure, list[Any]]:
    """The axes to draw into: `ax` (one Axes or a sequence of `n`) or a new figure's."""
    if ax is None:
        fig = Figure(figsize=figsize)
        axes = fig.subplots(1, n, squeeze=False)[0]
        return fig, list(axes)
    axes = list(ax) if isinstance(ax, (list, tuple, np.ndarray)) else [ax]
    if len(axes) != n:
        raise ValueError(f"ax: expected {n} Axes, got {len(axes)}")
    return axes[0].figure, axes


def _need(df: pl.DataFrame, what: str) -> None:
    if df.height == 0:
        raise ValueError(f"no {what}")


def _pick_ports(df: pl.DataFrame, wanted: Sequence[str] | None, col: str, top: int, how: str = "max") -> list[int]:
    """Port ids named in `wanted` (figure names `sw8:2→h1:0` or link names), else the top."""
    if wanted:
        rows = df.select("port_id", "node", "node_kind", "port", "link").unique().iter_rows(named=True)
        ids = [r["port_id"] for r in rows if r["link"] in wanted or port_label(r) in wanted]
        if not ids:
            raise ValueError(f"none of {list(wanted)} is a port or link of this run")
        return sorted(ids)
    agg = pl.col(col).max() if how == "max" else pl.col(col).sum()
    ranked = df.group_by("port_id").agg(agg).sort([col, "port_id"], descending=[True, False])
    return ranked["port_id"].head(top).to_list()


def _finish(fig: Figure, ax: Any, ylabel: str, title: str, legend: bool = True) -> Figure:
    ax.set_xlabel("time (µs)")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best", ncol=2)
    if not ax.get_title():
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def save_figure(fig: Any, out: str | Path, dpi: int = 150) -> list[Path]:
    """Writes `out`.png (at `dpi`) and `out`.pdf with fixed metadata, so that drawing the same
    figure again gives the same bytes; closes the figure. Every figure rdmalab writes goes
    through here."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".png"), out.with_suffix(".pdf")]
    for p in paths:
        fig.savefig(p, dpi=dpi, metadata=_METADATA[p.suffix[1:]])
    if plt.fignum_exists(getattr(fig, "number", -1)):
        plt.close(fig)
    return paths
