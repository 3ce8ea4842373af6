"""DRUM in the fabric (the DRUM paper, §II and §IV): comparisons and figures of the testbed
experiments, run on the host model of docs/drum-fabric.md.

Calibrated: `wqe_cost` (680 ns, Fig. 2a's slope). Everything else is a prediction; the
choices the paper leaves open are written in the sweep files and docs/drum-fabric.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl

from rdmalab import _core
from rdmalab.experiments.repro.base import Comparison, Experiment
from rdmalab.experiments.store import Store
from rdmalab.plots import log_axis, plt, save_figure

NAN = float("nan")
CITATION = ("Shen et al., Distributed and Optimal RDMA Resource Scheduling in Shared Data Center "
            "Networks")
#: Fig. 2a caption: foreground p80 at background batch 20 and 100, in µs.
FIG2A = {20: 19.8, 100: 74.3}
#: Fig. 8 (text): p80 of a 32 B WQE in µs by (mechanism, cc); SHARE only at cc = 20.
FIG8 = {("raw", 20): 7.1, ("share", 20): 7.2, ("drum", 20): 8.8, ("raw", 50): 26.5, ("raw", 100): 90.4,
        ("drum", 50): 14.5, ("drum", 100): 24.0}
#: "when cc = 100, DRUM completes the WQE 3.1x faster than RAW and 1.7x than SHARE".
FIG8_RAW_OVER_DRUM, FIG8_SHARE_OVER_DRUM = 3.1, 1.7


def drum_testbed(stop: str) -> str:
    """The head of a scenario on the paper's testbed: `stop_time = stop`, then 7 hosts on one
    switch, 40 Gb/s links of 1 µs, and a `[fabric]` table with 1 KB packets, last so that a
    caller can add keys to it. Nothing else in the text is in braces, so a `str.format`
    template can pass its own field as `stop`."""
    return f"""stop_time = "{stop}"
[topology]
kind = "star"
hosts = 7
rate = "40Gbps"
delay = "1us"
[fabric]
mtu = 1024
"""

def _cmp(group: str, metric: str, ours: float, theirs: float) -> Comparison:
    return Comparison(group, metric, float(ours), float(theirs))


def _apps(store: Store, runs: pl.DataFrame) -> pl.DataFrame:
    ok = runs.filter(pl.col("status") == "ok")
    return store.table("apps", ok)


def _value(df: pl.DataFrame, col: str, **eq: Any) -> float:
    for k, v in eq.items():
        df = df.filter(pl.col(k) == v)
    return float(df[col].mean()) if df.height else NAN


#: The link layers of drum-tc1/2/3: the testbed's InfiniBand QDR 4x (the DRUM paper's §IV)
#: first, then 40 Gb/s RoCE as the comparison; the label each printed row starts with.
LINKS = {"infiniband": "IB QDR", "roce": "RoCE 40G"}


def _links(runs: pl.DataFrame) -> list[tuple[str | None, str]]:
    """(link layer, row label) for each link layer the runs hold, the testbed's first; one
    unlabelled entry for a store from before the link layer was a sweep dimension."""
    if "fabric.link_layer" not in runs.columns:
        return [(None, "")]
    have = set(runs["fabric.link_layer"].drop_nulls().to_list())
    return [(k, v + " ") for k, v in LINKS.items() if k in have]


def _on_link(runs: pl.DataFrame, link: str | None) -> pl.DataFrame:
    if link is None or "fabric.link_layer" not in runs.columns:
        return runs
    return runs.filter(pl.col("fabric.link_layer") == link)


def _apps_on(store: Store, runs: pl.DataFrame, link: str | None) -> pl.DataFrame:
    """The apps table of the finished runs on link layer `link` (None: every run)."""
    ok = _on_link(runs.filter(pl.col("status") == "ok"), link)
    return _apps(store, ok).filter(pl.col("run_id").is_in(ok["run_id"].implode()))


def _per_link(runs: pl.DataFrame) -> list[tuple[str | None, str, Callable[[float], float]]]:
    """`_links` with a third member, `paper`: the paper's value `v` as given beside the
    testbed's link layer (the first), NaN beside the comparison's."""
    return [(link, ll, (lambda v: v) if k == 0 else (lambda v: NAN)) for k, (link, ll) in enumerate(_links(runs))]


def _sweep(sweep_dir: str | Path) -> tuple[Store, pl.DataFrame, str | None]:
    """A sweep's store, its runs, and the link layer its figures draw (the testbed's when the
    runs have it; None for a store without link layers)."""
    store = Store(sweep_dir)
    runs = store.runs()
    return store, runs, _links(runs)[0][0]


def _link_title(link: str | None) -> str:
    """The figures' title: the link layer they draw."""
    return "" if link is None else f"on {LINKS[link]} ({'the testbed' if link == 'infiniband' else 'comparison'})"


# -- Fig. 2a ------------------------------------------------------------------------------
def fig2a_points(store: Store, runs: pl.DataFrame, link: str | None = None) -> dict[str, dict[int, float]]:
    """mechanism -> {background batch: foreground p80 in µs}, on link layer `link` (None: every run)."""
    fg = _apps_on(store, runs, link).filter(pl.col("name") == "fg")
    out: dict[str, dict[int, float]] = {}
    for mech, batch, p80 in fg.select("host.mechanism", "app[1].wr_num", "p80_ct_ns").iter_rows():
        out.setdefault(str(mech), {})[int(batch)] = p80 / 1e3
    return out


def compare_fig2a(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        pts = fig2a_points(store, runs, link)
        raw, drum = pts.get("raw", {}), pts.get("drum", {})
        rows += [_cmp(ll + "RAW", f"fg p80 us, batch {b}", raw.get(b, NAN), paper(FIG2A[b])) for b in (20, 100)]
        lo, hi = raw.get(20, NAN), raw.get(100, NAN)
        rows.append(_cmp(ll + "RAW", "slope us/WQE", (hi - lo) / 80, paper((FIG2A[100] - FIG2A[20]) / 80)))
        rows.append(_cmp(ll + "RAW", "p80(100)/p80(20)", hi / lo, paper(FIG2A[100] / FIG2A[20])))
        rows.append(_cmp(ll + "RAW", "p80(100)/p80(20) text", hi / lo, paper(78.0 / 20.0)))
        rows += [_cmp(ll + "DRUM (Fig. 6)", f"fg p80 us, batch {b}", drum.get(b, NAN), NAN) for b in (20, 100)]
        rows.append(_cmp(ll + "DRUM (Fig. 6)", "p80(100)/p80(20)", drum.get(100, NAN) / drum.get(20, NAN), paper(1.0)))
    return rows


def figure_fig2a(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = fig2a_points(store, runs, link)
    fig, ax = _axes(_link_title(link))
    for mech, style in (("raw", "-o"), ("drum", "-s")):
        if mech in pts:
            b = sorted(pts[mech])
            ax.plot(b, [pts[mech][x] for x in b], style, label=f"ours, {mech.upper()}")
    ax.plot(list(FIG2A), list(FIG2A.values()), "k^", label="paper (Fig. 2a caption)")
    ax.set_xlabel("background batch size (WQEs)")
    ax.set_ylabel("foreground 1 KB WQE p80 completion (µs)")
    return _legend_and_save(fig, out_dir, "drum_fig2a")


# -- Fig. 2b ------------------------------------------------------------------------------
def fig2b_points(store: Store, runs: pl.DataFrame, link: str | None = None) -> dict[int, dict[float, float]]:
    """wr_num -> {polling rate in polls/µs: throughput in Gb/s}, on link layer `link` (None: every run)."""
    a = _apps_on(store, runs, link)
    out: dict[int, dict[float, float]] = {}
    for pc, wr, gbps in a.select("host.poll_cost", "app[0].wr_num", "gbps").iter_rows():
        rate = 1e6 / _core.parse_time_ps(str(pc))
        out.setdefault(int(wr), {})[rate] = gbps
    return out


def compare_fig2b(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        pts = fig2b_points(store, runs, link)
        for wr in sorted(pts):
            r = sorted(pts[wr])
            if len(r) >= 2:
                rows.append(_cmp(f"{ll}wr_num {wr}", "thpt x2 polling (slow)", pts[wr][r[1]] / pts[wr][r[0]],
                                 paper(r[1] / r[0])))
            rows.append(_cmp(f"{ll}wr_num {wr}", "Gb/s at 1 poll/us", pts[wr].get(1.0, NAN), NAN))
        if 1 in pts and 10 in pts:
            slow = min(pts[1])
            rows.append(_cmp(f"{ll}slowest polling", "thpt wr10 / wr1", pts[10][slow] / pts[1][slow], paper(10.0)))
    return rows


def figure_fig2b(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = fig2b_points(store, runs, link)
    fig, ax = _axes(_link_title(link))
    for wr in sorted(pts):
        r = sorted(pts[wr])
        ax.plot(r, [pts[wr][x] for x in r], "-o", label=f"wr_num = {wr}")
    log_axis(ax, "x")
    log_axis(ax, "y")
    ax.set_xlabel("CQ polling rate (polls/µs)")
    ax.set_ylabel("throughput (Gb/s)")
    return _legend_and_save(fig, out_dir, "drum_fig2b")


# -- Fig. 2c ------------------------------------------------------------------------------
def fig2c_points(store: Store, runs: pl.DataFrame, link: str | None = None) -> dict[str, dict[int, float]]:
    """transport -> {connections: aggregate payload Gb/s delivered over the run}, on link
    layer `link` (None: every run)."""
    ok = _on_link(runs.filter(pl.col("status") == "ok"), link)
    out: dict[str, dict[int, float]] = {}
    for tr, n, b, t in ok.select("app[0].transport", "app[0].count", "payload_bytes_delivered", "end_time_ps") \
            .iter_rows():
        out.setdefault(str(tr), {})[int(n)] = b * 8 / (t / 1e12) / 1e9
    return out


def compare_fig2c(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        pts = fig2c_points(store, runs, link)
        for tr in ("rc", "uc"):
            line = pts.get(tr, {})
            if line:
                top = max(line.values())
                knee = max((n for n, g in line.items() if g >= 0.95 * top), default=NAN)
                rows.append(_cmp(ll + tr.upper(), "knee: last n at 95 %", knee, paper(20)))
                past = [g for n, g in line.items() if n > 20]
                rows.append(_cmp(ll + tr.upper(), "Gb/s past the knee", max(past) if past else NAN, NAN))
                rows.append(_cmp(ll + tr.upper(), "Gb/s at the knee", line.get(20, NAN), NAN))
        ud = pts.get("ud", {})
        if ud:
            ns = sorted(ud)
            rows.append(_cmp(ll + "UD", "thpt max n / min n", ud[ns[-1]] / ud[ns[0]], paper(1.0)))
            rows.append(_cmp(ll + "UD", "Gb/s at max n", ud[ns[-1]], NAN))
    return rows


def figure_fig2c(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = fig2c_points(store, runs, link)
    fig, ax = _axes(_link_title(link))
    for tr, style in (("rc", "-o"), ("uc", "--s"), ("ud", "-^")):
        if tr in pts:
            n = sorted(pts[tr])
            ax.plot(n, [pts[tr][x] for x in n], style, label=f"{tr.upper()}: one QP per connection")
    ax.axvline(20, color="grey", ls=":", label="cache entries (input)")
    ax.set_xlabel("concurrent connections")
    ax.set_ylabel("aggregate throughput (Gb/s)")
    return _legend_and_save(fig, out_dir, "drum_fig2c")


# -- Test case 1 (Fig. 8) -----------------------------------------------------------------
#: The background variants of drum_tc1.toml: the main choice first, then the sensitivities.
TC1_VARIANTS = {"bg": "KV, uniform [32 B, 1 MB], no think", "bg_log": "log-uniform sizes"}


def tc1_points(store: Store, runs: pl.DataFrame, bg: str = "bg", by: str = "host.mechanism",
               link: str | None = None) -> dict[tuple[str, int], float]:
    """(mechanism, cc) -> foreground p80 in µs (cc counts the foreground), for the
    background variant `bg` (`by` names the column that tells the runs apart). A WQE still
    waiting when the run stopped counts with the time it had waited (a lower bound), so that
    a starved foreground's few early completions do not make a small p80. `link`: only the
    runs on that link layer."""
    ok = _on_link(runs.filter(pl.col("status") == "ok"), link)
    if "app[1].name" in ok.columns:
        ok = ok.filter(pl.col("app[1].name") == bg)
    ends = dict(ok.select("run_id", "end_time_ps").iter_rows())
    wq = store.table("wqes", ok).filter((pl.col("name") == "fg") & pl.col("run_id").is_in(ok["run_id"].implode()))
    out = {}
    for (rid, m, n), d in wq.group_by("run_id", by, "app[1].count"):
        ct = d["ct_ns"].to_numpy()
        waited = ends[rid] / 1e3 - d["posted_ns"].to_numpy()
        ct = np.sort(np.where(np.isnan(ct), waited, ct))
        out[(str(m), int(n) + 1)] = float(ct[min(int(len(ct) * 0.8), len(ct) - 1)]) / 1e3
    return out


def compare_tc1(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        for bg, label in TC1_VARIANTS.items():
            pts = tc1_points(store, runs, bg, link=link)
            if not pts:
                continue
            group = ll + ("" if bg == "bg" else "[log] ")
            rows += [_cmp(f"{group}{m.upper()}", f"p80 us, cc {cc}", pts.get((m, cc), NAN),
                          paper(FIG8.get((m, cc), NAN)))
                     for m in ("raw", "share", "drum") for cc in (20, 50, 100)]
            d = pts.get(("drum", 100), NAN)
            rows.append(_cmp(f"{group}cc 100", "RAW / DRUM (text)", pts.get(("raw", 100), NAN) / d,
                             paper(FIG8_RAW_OVER_DRUM)))
            rows.append(_cmp(f"{group}cc 100", "SHARE / DRUM", pts.get(("share", 100), NAN) / d,
                             paper(FIG8_SHARE_OVER_DRUM)))
    return rows


def figure_tc1(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    return _bars(tc1_points(store, runs, link=link), FIG8, "32 B WQE p80 completion (µs)", out_dir, "drum_tc1",
                 _link_title(link))


def compare_tc1_inband(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        pts = tc1_points(store, runs, by="drum.control", link=link)
        rows += [_cmp(f"{ll}DRUM {c}", f"p80 us, cc {cc}", pts.get((c, cc), NAN), paper(FIG8.get(("drum", cc), NAN)))
                 for c in ("local", "in_band") for cc in (20, 50, 100)]
        for cc in (20, 50, 100):
            rows.append(_cmp(f"{ll}in_band / local", f"p80, cc {cc}",
                             pts.get(("in_band", cc), NAN) / pts.get(("local", cc), NAN), NAN))
    return rows


def figure_tc1_inband(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = tc1_points(store, runs, by="drum.control", link=link)
    fig, ax = _axes(_link_title(link))
    for c, style in (("local", "-o"), ("in_band", "-s")):
        ccs = sorted(n for m, n in pts if m == c)
        ax.plot(ccs, [pts[c, n] for n in ccs], style, label=f"ours, DRUM {c}")
    ax.plot([20, 50, 100], [FIG8["drum", n] for n in (20, 50, 100)], "k^", label="paper (text), DRUM")
    ax.set_xlabel("concurrent connections cc")
    ax.set_ylabel("32 B WQE p80 completion (µs)")
    return _legend_and_save(fig, out_dir, "drum_tc1_inband")


# -- Test case 2 (Fig. 9) -----------------------------------------------------------------
#: Fig. 9 (text): ms to send 1 MB of 32 B WQEs at cc = 20; ratios at cc = 100.
FIG9 = {("raw", 20): 53.1, ("share", 20): 82.8, ("drum", 20): 62.9}
FIG9_RAW_OVER_DRUM, FIG9_SHARE_OVER_DRUM = 3.75, 1.4

#: Fig. 7's foreground, made smaller so that runs end (the paper: 1 GB): 16 MB in 1 MB WQEs;
#: alone it takes its 16 MB of 1 KB packets (48 B of headers each) at 40 Gb/s.
FG_BIG_BYTES = 16 * 1048576
FG_BIG_ALONE_MS = FG_BIG_BYTES * 8 * (1024 + 48) / 1024 / 40e9 * 1e3


def _fg_big_alone_ms(link: str | None) -> float:
    """Fig. 7's 16 MB alone at line rate on `link`: RoCE as above; InfiniBand QDR 4x at its
    32 Gb/s data rate with 26 B of LRH, BTH, ICRC and VCRC per 1 KB packet and a 16 B RETH on
    each 1 MB message's first packet (docs/model/infiniband.md, "InfiniBand link layer")."""
    if link != "infiniband":
        return FG_BIG_ALONE_MS
    wire = FG_BIG_BYTES * (1024 + 26) / 1024 + 16 * (FG_BIG_BYTES // 1048576)
    return wire * 8 / 32e9 * 1e3


def tc2_points(store: Store, runs: pl.DataFrame, name: str = "fg",
               link: str | None = None) -> dict[tuple[str, int], tuple[float, bool]]:
    """(mechanism, cc) -> (ms, finished) for the foreground `name` (fg: 1 MB of 32 B WQEs;
    fg16m: 16 MB of 1 MB WQEs): the measured time to its last CQE when it finished, else
    the time it ran until the run stopped, a lower bound (nothing is projected). `link`: only
    the runs on that link layer."""
    ok = _on_link(runs.filter(pl.col("status") == "ok"), link)
    fg = _apps(store, ok).filter((pl.col("name") == name) & pl.col("run_id").is_in(ok["run_id"].implode()))
    ends = dict(ok.select("run_id", "end_time_ps").iter_rows())
    out = {}
    for rid, m, n, first, done in fg.select("run_id", "host.mechanism", "app[1].count", "first_post_ns",
                                            "done_ns").iter_rows():
        finished = done == done
        ms = ((done if finished else ends[rid] / 1e3) - first) / 1e6
        out[(str(m), int(n) + 1)] = (ms, finished)
    return out


def _bound(label: str, v: tuple[float, bool] | None) -> str:
    return label if v is None or v[1] else f"{label} (unfinished: >=)"


def compare_tc2(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        rows += _compare_tc2_on(store, runs, link, ll, paper)
    return rows


def _compare_tc2_on(store: Store, runs: pl.DataFrame, link: str | None, ll: str,
                    paper: Callable[[float], float]) -> list[Comparison]:
    """drum-tc2's rows on one link layer (`ll` starts each group, `paper` as `_per_link`'s)."""
    pts = tc2_points(store, runs, link=link)
    get = lambda m, cc: pts.get((m, cc), (NAN, True))[0]  # noqa: E731
    rows = [_cmp(ll + m.upper(), _bound(f"1 MB ms, cc {cc}", pts.get((m, cc))), get(m, cc),
                 paper(FIG9.get((m, cc), NAN)))
            for m in ("raw", "share", "drum") for cc in (20, 50, 100)]
    d = pts.get(("drum", 100))
    for m, theirs in (("raw", FIG9_RAW_OVER_DRUM), ("share", FIG9_SHARE_OVER_DRUM)):
        o = pts.get((m, 100))
        label = f"{m.upper()} / DRUM"
        if d is not None and not d[1]:
            label += " (DRUM unfinished)"
        elif o is not None and not o[1]:
            label += " (>=)"
        rows.append(_cmp(ll + "cc 100", label, get(m, 100) / get("drum", 100), paper(theirs)))
    g = tc2_points(store, runs, "fg16m", link=link)
    alone = _fg_big_alone_ms(link)
    for m in ("raw", "share", "drum"):
        for cc in (20, 100):
            v = g.get((m, cc))
            rows.append(_cmp(f"{ll}Fig. 7 {m.upper()}", _bound(f"16 MB / alone, cc {cc}", v),
                             (v[0] if v else NAN) / alone, paper(1.0 if m == "drum" else NAN)))
    return rows


def figure_tc2(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = {k: v[0] for k, v in tc2_points(store, runs, link=link).items()}
    return _bars(pts, FIG9, "1 MB of 32 B WQEs: completion (ms; unfinished: run length)", out_dir, "drum_tc2",
                 _link_title(link))


# -- Test case 3 (Figs. 10-11) --------------------------------------------------------------
#: "larger than 300 connections": DRUM throughput 1.8x SHARE's; SHARE latency 67.3 % above DRUM's.
FIG10_DRUM_OVER_SHARE, FIG11_SHARE_OVER_DRUM = 1.8, 1.673
#: "most of the requests within extremely low latency less than 18 us".
FIG11_LOW_US = 18.0


def tc3_points(store: Store, runs: pl.DataFrame,
               link: str | None = None) -> dict[tuple[str, int], tuple[float, float, float]]:
    """(mechanism, connections) -> (mean Gb/s per connection, mean batch latency µs,
    fraction of batches under 18 µs), on link layer `link` (None: every run)."""
    ok = _on_link(runs.filter(pl.col("status") == "ok"), link)
    apps = store.table("apps", ok)
    wqes = store.table("wqes", ok).filter(~pl.col("ct_ns").is_nan())
    out = {}
    for run_id, mech in ok.select("run_id", "host.mechanism").iter_rows():
        a = apps.filter(pl.col("run_id") == run_id)
        # wr_num = 1: every WQE row is one batch.
        ct = wqes.filter(pl.col("run_id") == run_id)["ct_ns"].to_numpy() / 1e3
        out[(str(mech), a.height)] = (float(a["gbps"].mean()), float(ct.mean()) if len(ct) else NAN,
                                      float((ct < FIG11_LOW_US).mean()) if len(ct) else NAN)
    return out


def compare_tc3(runs: pl.DataFrame, flows: pl.DataFrame, store: Store) -> list[Comparison]:
    rows = []
    for link, ll, paper in _per_link(runs):
        pts = tc3_points(store, runs, link)
        for n in sorted({n for _, n in pts if n >= 300}):
            d, s = pts.get(("drum", n)), pts.get(("share", n))
            if d and s:
                rows.append(_cmp(f"{ll}N = {n}", "thpt DRUM / SHARE", d[0] / s[0], paper(FIG10_DRUM_OVER_SHARE)))
                rows.append(_cmp(f"{ll}N = {n}", "latency SHARE / DRUM", s[1] / d[1], paper(FIG11_SHARE_OVER_DRUM)))
                rows.append(_cmp(f"{ll}N = {n}", "DRUM share < 18 us", d[2], NAN))
        for (m, n), v in sorted(pts.items()):  # ours only: the paper prints neither
            rows.append(_cmp(f"{ll}{m.upper()} N = {n}", "Gb/s per conn", v[0], NAN))
            rows.append(_cmp(f"{ll}{m.upper()} N = {n}", "mean latency us", v[1], NAN))
    return rows


def figure_tc3(sweep_dir: str | Path, out_dir: str | Path) -> list[Path]:
    store, runs, link = _sweep(sweep_dir)
    pts = tc3_points(store, runs, link)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for m in ("raw", "share", "drum"):
        ns = sorted(n for mm, n in pts if mm == m)
        a1.plot(ns, [pts[m, n][0] for n in ns], "-o", label=m.upper())
        a2.plot(ns, [pts[m, n][1] for n in ns], "-o", label=m.upper())
    fig.suptitle(_link_title(link))
    a1.set_ylabel("average throughput per connection (Gb/s)")
    a2.set_ylabel("average batch latency (µs)")
    log_axis(a2, "y")
    for a in (a1, a2):
        a.set_xlabel("client connections")
        a.grid(True, alpha=0.3)
        a.legend()
    return save_figure(fig, Path(out_dir) / "drum_tc3", dpi=120)


# -- drawing --------------------------------------------------------------------------------
def _bars(pts: dict[tuple[str, int], float], paper: dict[tuple[str, int], float], ylabel: str,
          out_dir: str | Path, stem: str, title: str = "") -> list[Path]:
    fig, ax = _axes(title)
    ccs = sorted({cc for _, cc in pts})
    for k, m in enumerate(("raw", "share", "drum")):
        x = np.arange(len(ccs)) + (k - 1) * 0.27
        ax.bar(x, [pts.get((m, c), NAN) for c in ccs], width=0.25, label=f"ours, {m.upper()}")
        ax.plot(x, [paper.get((m, c), NAN) for c in ccs], "k_", markersize=14, mew=2)
    ax.plot([], [], "k_", markersize=14, mew=2, label="paper (text)")
    ax.set_xticks(np.arange(len(ccs)), [str(c) for c in ccs])
    ax.set_xlabel("concurrent connections cc")
    ax.set_ylabel(ylabel)
    return _legend_and_save(fig, out_dir, stem)


def _axes(title: str) -> tuple[Any, Any]:
    """One 6 x 4 in axes, titled `title`."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.set_title(title)
    return fig, ax


def _legend_and_save(fig: Any, out_dir: str | Path, stem: str) -> list[Path]:
    """Grid and legend on the figure's one axes, then `out_dir`/`stem`.png and .pdf."""
    ax = fig.axes[0]
    ax.grid(True, alpha=0.3)
    ax.legend()
    return save_figure(fig, Path(out_dir) / stem, dpi=120)


# -- the experiments ------------------------------------------------------------------------
#: Which reading of the paper's `a` and which slot rule the repros run (docs/drum-fabric.md
#: §6.7, §6.11), and the send queues' limits, printed with each experiment.
READING = (". DRUM runs read a as CQEs per WQE ([drum] a = \"cqe_per_wqe\", the paper's words; "
           "\"batch_size\" is the reading its Fig. 6 numbers need), send queues of max_send_wr 16351 "
           "WQEs, shared QPs released onto below shared_window 64 KiB, dedicated QPs held by the top-k "
           "rule ([drum] select = \"smallest_a\"; \"least_served\" hands them on by service, §6.11)")
#: How drum-tc1/2/3 name their link layers, printed with them.
LINK_NOTE = (". Each row starts with its link layer: IB QDR (InfiniBand QDR 4x, 32 Gb/s of data, the "
             "testbed's, the DRUM paper's §IV; the paper's numbers stand beside these rows) or RoCE 40G (40 Gb/s "
             "RoCE, a comparison: no paper numbers). The figure draws the IB QDR runs")


def _experiment(name: str, title: str, figs: str, theirs: str, key: str, by: str = "host.mechanism") -> Experiment:
    """Experiment `name`, compared by `compare_KEY` and drawn by `figure_KEY` of this module."""
    stem = name.replace("-", "_")
    return Experiment(
        name=name, title=title, citation=f"{CITATION}, {figs}", sweep=f"{stem}.toml",
        quick=f"{stem}_quick.toml", figures=[], by=by, compare=globals()[f"compare_{key}"],
        theirs=theirs + READING, extra_figures=globals()[f"figure_{key}"])


EXPERIMENTS = [
    _experiment("drum-fig2a", "DRUM Fig. 2a: a batch-posting neighbour delays a 1 KB WQE (RAW); DRUM rows: Fig. 6",
        "§II-A, Fig. 2a", "the caption's 19.8 and 74.3 us (text: 20 -> 78 us, 3.9x); wqe_cost is calibrated "
        "on this slope, the rest is a prediction" + LINK_NOTE, "fig2a"),
    _experiment("drum-fig2b", "DRUM Fig. 2b: throughput vs CQ polling rate, wr_num 1/5/10 (RAW)", "§II-C, Fig. 2b",
        "the figure's shape, not its values (none printed): throughput linear in the polling rate "
        "(x2 polls -> x2) and in wr_num (x10) until a budget binds" + LINK_NOTE, "fig2b", by="app[0].wr_num"),
    _experiment("drum-fig2c", "DRUM Fig. 2c: aggregate throughput vs connections, RC / UC / UD queue pairs",
        "§II-D, Fig. 2c", "RC and UC drop past 20 connections, UD flat (no throughput values printed). "
        "The knee's position is our input qp_cache_entries = 20; the miss penalty 1 us is our choice, so "
        "the level past the knee is a prediction; UD's flat line follows from its one context per NIC" + LINK_NOTE,
        "fig2c", by="app[0].transport"),
    _experiment("drum-tc1", "DRUM test case 1 (Fig. 8): 32 B WQE p80 vs cc, RAW / SHARE / DRUM", "§IV-C, Fig. 8",
        "the text's p80 values (SHARE given only at cc = 20) and ratios at cc = 100. Our choices where "
        "the paper is silent: the cc - 1 other connections are KV clients, one WQE (wr_num 1) of a size "
        "uniform in [32 B, 1 MB] each, no think time, written from host 0 to the server (host 6); "
        "rows in [brackets] move one choice: log-uniform sizes" + LINK_NOTE, "tc1"),
    _experiment("drum-tc1-inband", "DRUM test case 1 with control = in_band (the agents coordinate through "
        "the fabric) beside control = local", "§IV-A, §IV-C, Fig. 8",
        "the text's DRUM p80 values; in_band / local has no paper number (the paper's testbed runs its "
        "coordination, it does not isolate it)" + LINK_NOTE, "tc1_inband", by="drum.control"),
    _experiment("drum-tc2", "DRUM test case 2 (Figs. 9, 7): 1 MB of 32 B WQEs, and 16 MB of 1 MB WQEs, vs cc",
        "§IV-C, Figs. 7 and 9", "the text's 53.1 / 82.8 / 62.9 ms at cc = 20 and its ratios at cc = 100; "
        "Fig. 7: DRUM's foreground 'unaffected by the background' (1.0 x its time alone at line rate), "
        "with 16 MB instead of the paper's 1 GB so that runs end. The foreground's batch size is our "
        "choice; a transfer unfinished when the run stops is printed as the time it ran (>=, a lower "
        "bound), never projected" + LINK_NOTE, "tc2"),
    _experiment("drum-tc3", "DRUM test case 3 (Figs. 10-11): KV store throughput and latency vs clients",
        "§IV-C, Figs. 10-11", "above 300 connections: DRUM 1.8x SHARE's throughput, SHARE 67.3 % more "
        "latency, DRUM 'mostly' under 18 us (no number: nan); the last rows are ours only (Gb/s per "
        "connection and mean batch latency; the paper prints neither). Client behaviour is our choice "
        "(drum_tc3.toml)" + LINK_NOTE, "tc3"),
]
