"""The CC-attack paper's two open DCQCN differences, rerun with the one DCQCN mechanism the reference
simulator leaves out (the byte counter) and with the settings the paper leaves unstated.

`python -m rdmalab.experiments.causes.attack_dcqcn_causes [fig4] [fig5] [seeds] [where[:10ms]]
[knobs] [floor[:LOAD[:NICS[:MIN_RATE]]]] [dcqcn_paper] [by_start] [figure]`

DCQCN (Zhu et al., SIGCOMM 2015, §3.1) raises a sender's rate on two clocks after a cut:
the increase timer and a byte counter (an increase event every B bytes sent). The reference
simulator, and so our default, has only the timer. ConnectX NICs, the paper's testbed, run
both: their firmware's `RPG_BYTE_RESET` is 32,767 bytes by default, beside `RPG_TIME_RESET`
300 us (a `mlxconfig` query of the defaults). `[fabric.cc_params] byte_counter = 32767`
turns it on. Each part prints the case without it (our runs so far) and with it:

- `fig4`: the testbed dumbbell of `attack-staggered` (500 ns links, step marking at 200 KB,
  input-fair switch), the long-lived staggered attack (30 QPs, 37.5 KB every 3 us) and 30
  long-lived parallel QPs against a backlogged victim on one QP: 5 ms, Gb/s over
  [1.25, 5) ms; the same with the victim starting 1 or 7 us later; and 20 ms, Gb/s over
  [5, 20) ms (is a result a steady state or a transient?); and the 1.125 MB transfer at 1 ms,
  Gb/s over the transfer. Three DCQCNs: the reference's, the reference's with the byte
  counter, and every ConnectX default of the same query (`CONNECTX_PARAMS` below).
  Suspected: our victim keeps 3.1 Gb/s because a timer-only victim climbs back 300 us at a
  time between the cuts the attacker's queue causes.
- `fig5`: `attack-datacenter`'s own DCQCN runs (S1 fat tree, FB Hadoop at 0.9, the
  reference's DCQCN settings) with 1 ms of arrivals, victims' p99 slowdown (unsplit flows
  < 162.5 KB) without attack, split parallel and split staggered. Suspected: the staggered /
  parallel ratio (0.96 at this size; the paper 1.75) depends on how fast cut QPs recover,
  which the byte counter changes.
- `seeds`: `fig5`'s three cases under the reference DCQCN for seeds 1-5: how much one run's
  ratio moves by chance.
- `where` (`where:10ms` at full size): the two attacks' victims split by whether an attacker
  piece of their own sending host was alive during their life (their QP then shares the
  NIC's per-packet round robin with it), p99 of each part; then the same with every NIC
  sharing its turns by tenant (`nic_arbitration = "tenant"`), which removes the sender's
  part: a victim's QP gets half its NIC however many pieces share it.
- `knobs`: `fig5`'s three cases with one of the two settings the paper leaves unstated and
  `docs/attacks.md` had not varied: DCQCN's rate floor (the reference's `MIN_RATE` 1 Gb/s;
  ConnectX's 1 Mb/s) and the switch buffer (the reference's 32 MiB). Suspected: a parallel
  split of n pieces cannot be slowed below n times the floor, so with 1 Gb/s and tens of
  pieces per NIC it is as uncontrolled as the staggered one; a lower floor lets DCQCN
  control it. A smaller buffer makes PFC fire, whose pauses spread from the attacked queues.
  Beside them the reference code's other DCQCN, `run.py --cc dcqcn_paper` (`DCQCN_PAPER`).
- `floor` (full size: 10 ms of arrivals, 0.9): the three cases with ConnectX's 1 Mb/s floor,
  NIC turns per QP and by tenant, each attack's victims split as in `where`; `floor:0.7:qp`
  at another load, NIC turns per QP only; `floor:0.5:qp:1Gb/s` with the reference's floor.
- `dcqcn_paper` (full size): `dcqcn_paper`'s load chosen as the sweep's was, by the no-attack
  p99 alone (0.3-0.9, the one nearest the paper's 20), then its two attacks at that load.
- `figure` (full size): the ratio by start millisecond for four runs (the sweep's; ConnectX's
  floor at 0.9; each floor at 0.5) and the two attacks' tails at 0.5, drawn into
  `out/causes/attack_dcqcn_causes/fig5_ratio_by_start.png` (and `.pdf`), beside the store that
  keeps every run (`causes.base`), so a second drawing costs seconds; the first costs about 40
  minutes on two cores.
- `by_start` (full size): the sweep's own DCQCN runs, victims' p99 by the millisecond of the
  run they started in (the runs `figure` draws too).
  `floor` and `dcqcn_paper` print the same rows for their runs.
  Suspected: at 0.9 the attacked runs' backlog grows through the run until both attacks
  leave the same queues, so the whole run's p99 hides what happens before.
"""

from __future__ import annotations

import copy
import functools
import itertools
import sys
from typing import Any

import numpy as np
import polars as pl

from rdmalab import Scenario, _core
from rdmalab.experiments.causes.base import Investigation, Run, figure_dir, run
from rdmalab.experiments.repro.attacks import dc_case, victims
from rdmalab.experiments.repro.base import HERE
from rdmalab.experiments.sweep import RunSpec, Sweep, set_path
from rdmalab.plots import plt, save_figure

#: ConnectX firmware default of RPG_BYTE_RESET (bytes).
CONNECTX_BYTES = 32_767
#: The other ConnectX firmware defaults of the same query, in our `cc_params` keys:
#: RPG_AI_RATE 5 and RPG_HAI_RATE 50 Mb/s, RPG_MIN_RATE 1 Mb/s, DCE_TCP_G 1019 (alpha keeps
#: 1019/1024 of itself: g = 5/1024). With them MIN_TIME_BETWEEN_CNPS 4 us (`cnp_interval`).
#: (RPG_TIME_RESET 300 us, RPG_THRESHOLD 1, DCE_TCP_RTT 1 us and RATE_REDUCE_MONITOR_PERIOD
#: 4 us are the reference's values already.)
CONNECTX_PARAMS = {"rate_ai": "5Mb/s", "rate_hai": "50Mb/s", "min_rate": "1Mb/s", "ewma_gain": 5 / 1024}

#: Fig. 5's sweep, whose DCQCN runs `fig5`, `seeds` and `where` change one thing at a time.
DC_SWEEP = HERE / "attack_datacenter.toml"


def fig4_scenario(case: str, byte_counter: int, connectx: bool = False, victim_start: str = "0ns",
                  stop: str = "5ms") -> Scenario:
    """`attack-staggered`'s testbed dumbbell: a backlogged victim on one QP against the long-lived
    staggered attack (`case` "staggered"), 30 long-lived parallel QPs ("parallel") or the one
    1.125 MB staggered transfer at 1 ms ("transfer"); step marking at 200 KB, input-fair switch."""
    sc = Scenario.dumbbell(2, delay="500ns").tenant("victim", [0, 2]).tenant("attacker", [1, 3])
    sc = sc.flow(0, 2, 10_000_000_000, start=victim_start, tenant="victim")
    if case == "parallel":
        sc = sc.parallel_qps(1, 3, 30, 225_000_000, tenant="attacker")
    else:
        one = case == "transfer"
        sc = sc.staggered_qps(1, 3, 30, 1_125_000 if one else 10_000_000_000, chunk=37_500, interval="3us",
                              policy="reuse", start="1ms" if one else "0ns", tenant="attacker")
    params: dict[str, Any] = {"byte_counter": byte_counter, **(CONNECTX_PARAMS if connectx else {})}
    extra = {"cnp_interval": "4us"} if connectx else {}
    return sc.with_fabric(cc="dcqcn", ecn_kmin=200_000, ecn_kmax=200_000, egress_arbitration="input_fair",
                          cc_params=params, **extra).with_stop_time(stop)


#: The width of a tenant meter's bin (1 us), in ps.
BIN_PS = 1_000_000


def gbps(res: Run, lo_ps: int, hi_ps: int) -> dict[str, float]:
    """Each tenant's payload accepted in order in [lo, hi), Gb/s over the window: the bins
    that start inside it (as `Results.tenant_share`)."""
    b = res.tenant_bins
    b = b.filter((pl.col("bin") * BIN_PS >= lo_ps) & (pl.col("bin") * BIN_PS < hi_ps))
    per = dict(b.group_by("tenant_name").agg(pl.col("bytes").sum()).iter_rows())
    return {n: float(by) * 8 / ((hi_ps - lo_ps) / 1e12) / 1e9 for n, by in per.items()}


def fig4_cell(case: str, b: int, cx: bool, victim_start: str = "0ns", stop: str = "5ms") -> str:
    res = run(fig4_scenario(case, b, cx, victim_start, stop))
    end = int(_core.parse_time_ps(stop))
    if case == "transfer":  # its start to its last chunk's completion
        f = res.flows.filter(res.flows["tenant"] == "attacker")
        lo, hi = 1_000_000_000, int(1000 * (f["start_ns"] + f["fct_ns"]).max())
    else:
        lo, hi = (1_250_000_000 if stop == "5ms" else 5_000_000_000), end
    g = gbps(res, lo, hi)
    return f"{g.get('attacker', 0.0):.1f} / {g.get('victim', 0.0):.1f}"


def fig4() -> None:
    print("| attack (attacker / victim Gb/s) | DCQCN | 5 ms, over [1.25, 5) ms | victim 1 us later | "
          "victim 7 us later | 20 ms, over [5, 20) ms |")
    print("|---|---|---|---|---|---|")
    dcqcn = (("reference (timer only)", 0, False), (f"+ byte counter {CONNECTX_BYTES:,} B", CONNECTX_BYTES, False),
             ("ConnectX defaults (byte counter included)", CONNECTX_BYTES, True))
    for case, (label, b, cx) in itertools.product(("staggered", "parallel"), dcqcn):
        cells = [fig4_cell(case, b, cx), fig4_cell(case, b, cx, "1us"), fig4_cell(case, b, cx, "7us"),
                 fig4_cell(case, b, cx, stop="20ms")]
        name = "long-lived staggered, 30 QPs" if case == "staggered" else "30 parallel QPs"
        print(f"| {name} | {label} | " + " | ".join(cells) + " |", flush=True)
    for label, b, cx in dcqcn:
        print(f"| one 1.125 MB staggered transfer at 1 ms | {label} | {fig4_cell('transfer', b, cx)} | | | |",
              flush=True)


@functools.cache
def _dc_runs() -> tuple[RunSpec, ...]:
    return tuple(Sweep.from_file(DC_SWEEP).expand())


def dc_tables(case: str, arrivals: str = "1ms", load: float | None = None, **changes: Any) -> dict[str, pl.DataFrame]:
    """The output tables of the sweep's DCQCN run of `case` (`baseline`, `split-parallel`,
    `split-staggered`) with `arrivals` of traffic, at `load` (the sweep's when None), and
    `changes` (sweep paths with `__` for `.`, e.g. `fabric__nic_arbitration="tenant"`) applied."""
    spec = next(r for r in _dc_runs() if r.scenario["fabric"]["cc"] == "dcqcn" and dc_case(r.params) == case)
    scenario = copy.deepcopy(spec.scenario)
    for t in scenario["traffic"]:
        t["duration"] = arrivals
        if load is not None:
            t["load"] = load
    for path, value in changes.items():
        set_path(scenario, path.replace("__", "."), value)
    return run(scenario, spec.base_dir).tables


def dc_flows(case: str, arrivals: str = "1ms", load: float | None = None, **changes: Any) -> pl.DataFrame:
    """`dc_tables`' flow records."""
    return dc_tables(case, arrivals, load, **changes)["flows"]


#: Fig. 5's three experiments, in the paper's order.
CASES = ("baseline", "split-parallel", "split-staggered")


def victims_p99(flows: pl.DataFrame) -> float:
    return float(np.quantile(victims(flows)["slowdown"].drop_nulls().to_numpy(), 0.99))


def p99_row(label: str, v: list[float]) -> str:
    """A table row: the three cases' victims' p99 and staggered / parallel."""
    return f"| {label} | {v[0]:.1f} | {v[1]:.1f} | {v[2]:.1f} | {v[2] / v[1]:.2f} |"


def fig5() -> None:
    print("| byte counter | no attack | split, parallel | split, staggered | staggered / parallel |")
    print("|---|---|---|---|---|")
    for b in (0, CONNECTX_BYTES):
        v = [victims_p99(dc_flows(case, fabric__cc_params={"byte_counter": b})) for case in CASES]
        print(p99_row(f"{b:,} B" if b else "none (reference)", v), flush=True)


def seeds() -> None:
    """Fig. 5's ratio over seeds 1-5 (S1, 0.9, 1 ms of arrivals, reference DCQCN): how far
    does one run's staggered / parallel move by chance?"""
    print("| seed | no attack | split, parallel | split, staggered | staggered / parallel |")
    print("|---|---|---|---|---|")
    for seed in range(1, 6):
        print(p99_row(str(seed), [victims_p99(dc_flows(case, seed=seed)) for case in CASES]), flush=True)


def sender_classes(flows: pl.DataFrame) -> pl.DataFrame:
    """The victims (unsplit flows < 162.5 KB), each marked `shared` when an attacker piece of
    its own sending host was alive at some point of its life (start to completion): such a
    victim's QP shares its NIC's round robin with that piece."""
    f = flows.with_columns((pl.col("start_ns") + pl.col("fct_ns")).alias("end_ns"))
    pieces = {}
    for (src,), g in f.filter(pl.col("tenant") == "attacker").group_by("src"):
        pieces[src] = (g["start_ns"].to_numpy(), g["end_ns"].to_numpy())
    vic = victims(f)

    def shared(src: int, s: float, e: float) -> bool:
        if src not in pieces:
            return False
        a, b = pieces[src]
        return bool(np.any((a < e) & (b > s)))

    marks = [shared(src, s, e) for src, s, e in vic.select("src", "start_ns", "end_ns").iter_rows()]
    return vic.with_columns(pl.Series("shared", marks))


def where(arrivals: str = "1ms") -> None:
    """Where the victims' tail comes from: victims whose sending NIC also serves a live
    attacker piece, and the others, under each attack (reference DCQCN, seed 1); then the
    run that removes the sender's part: NICs that share their turns by tenant."""
    print(f"| NIC ({arrivals} of arrivals) | attack | all victims: p99 | with a piece at their sender: n, p99 | "
          "the others: n, p99, p99.9 |")
    print("|---|---|---|---|---|")
    for nic in ("qp", "tenant"):
        for case in CASES:
            v = sender_classes(dc_flows(case, arrivals, fabric__nic_arbitration=nic))
            a = v.filter(pl.col("shared"))["slowdown"].drop_nulls().to_numpy()
            b = v.filter(~pl.col("shared"))["slowdown"].drop_nulls().to_numpy()
            every = v["slowdown"].drop_nulls().to_numpy()
            part = f"{len(a)}, {np.quantile(a, 0.99):.1f}" if len(a) else "0, -"
            print(f"| {nic} | {case} | {np.quantile(every, 0.99):.1f} | {part} | {len(b)}, "
                  f"{np.quantile(b, 0.99):.1f}, {np.quantile(b, 0.999):.1f} |", flush=True)


#: The other DCQCN the reference's own `run.py` offers (`--cc dcqcn_paper`): the DCQCN paper's
#: timers instead of `--cc dcqcn`'s 1 / 4 / 300 us, everything else the same.
DCQCN_PAPER = {"alpha_resume_interval": "50us", "rate_decrease_interval": "50us", "rp_timer": "55us"}

#: `knobs`: each change beside the sweep's own setting (the first row).
KNOBS = (
    ("the sweep's (floor 1 Gb/s, 32 MiB)", {}),
    ("DCQCN floor 100 Mb/s", {"fabric__cc_params": {"min_rate": "100Mb/s"}}),
    ("DCQCN floor 1 Mb/s (ConnectX)", {"fabric__cc_params": {"min_rate": "1Mb/s"}}),
    ("`dcqcn_paper` timers (alpha 50 us, decrease 50 us, increase 55 us)", {"fabric__cc_params": DCQCN_PAPER}),
    ("switch buffer 8 MiB", {"fabric__buffer_mb": 8.0}),
    ("switch buffer 2 MiB", {"fabric__buffer_mb": 2.0}),
    ("switch buffer 256 MiB (no PFC)", {"fabric__buffer_mb": 256.0}),
    ("floor 1 Mb/s and 256 MiB (no PFC)", {"fabric__cc_params": {"min_rate": "1Mb/s"}, "fabric__buffer_mb": 256.0}),
)


def knobs() -> None:
    print("| change (S1, 90 %, 1 ms of arrivals) | no attack | split, parallel | split, staggered | "
          "staggered / parallel | PAUSE frames sent (parallel / staggered) |")
    print("|---|---|---|---|---|---|")
    for label, changes in KNOBS:
        tables = [dc_tables(case, **changes) for case in CASES]
        v = [victims_p99(t["flows"]) for t in tables]
        pauses = [int((t["pfc"]["pause"] > 0).sum()) if t["pfc"].height else 0 for t in tables]
        print(p99_row(label, v) + f" {pauses[1]:,} / {pauses[2]:,} |", flush=True)


def split_row(label: str, flows: list[pl.DataFrame]) -> str:
    """A full-size row: victims' p99 per case, the ratio, and the victims away from the
    attacker's sender (`sender_classes`) under each attack: count and p99."""
    v = [victims_p99(f) for f in flows]
    away = [sender_classes(f).filter(~pl.col("shared"))["slowdown"].drop_nulls().to_numpy() for f in flows[1:]]
    a, b = (np.quantile(x, 0.99) for x in away)
    return (f"| {label} | {v[0]:.1f} | {v[1]:.0f} | {v[2]:.0f} | {v[2] / v[1]:.2f} | "
            f"{len(away[0]):,} / {len(away[1]):,}, {a:.1f} / {b:.1f} ({b / a:.2f}) |")


def by_start(flows: pl.DataFrame) -> np.ndarray:
    """Victims' p99 slowdown by the millisecond of the run in which they started."""
    v = victims(flows).with_columns((pl.col("start_ns") // 1_000_000).alias("ms"))
    return v.group_by("ms").agg(pl.col("slowdown").quantile(0.99)).sort("ms")["slowdown"].to_numpy()


def start_rows(label: str, flows: list[pl.DataFrame]) -> str:
    """Rows of `by_start` for the three cases and the attacks' ratio."""
    base, par, stag = (by_start(f) for f in flows)
    cells = [(base, "no attack", "{:.1f}"), (par, "parallel", "{:.0f}"), (stag, "staggered", "{:.0f}"),
             (stag / par, "staggered / parallel", "{:.2f}")]
    return "\n".join(f"| {label}, {name} | " + " | ".join(fmt.format(x) for x in row) + " |"
                     for row, name, fmt in cells)


START_HEADER = ("| victims' p99 by the ms they started in | " + " | ".join(f"{m}-{m + 1}" for m in range(10))
                + " |\n|---|" + "---|" * 10)


FULL_HEADER = ("| DCQCN, NIC turns, load | no attack | split, parallel | split, staggered | staggered / parallel | "
               "victims away from the attacker's sender: n, p99 parallel / staggered |\n|---|---|---|---|---|---|")


def floor(load: str = "0.9", nics: str = "qp,tenant", min_rate: str = "1Mb/s") -> None:
    """The three cases with DCQCN's floor at `min_rate` (ConnectX's 1 Mb/s unless given) at full
    size, at `load`, for each NIC arbitration in `nics` (`floor`, `floor:0.5:qp`, or
    `floor:0.5:qp:1Gb/s` for the reference's floor)."""
    print(FULL_HEADER)
    rows = []
    for nic in nics.split(","):
        flows = [dc_flows(c, "10ms", float(load), fabric__cc_params={"min_rate": min_rate},
                          fabric__nic_arbitration=nic) for c in CASES]
        rows.append((f"`dcqcn`, floor {min_rate}, {nic}, {load}", flows))
        print(split_row(*rows[-1]), flush=True)
    print(START_HEADER)
    for label, flows in rows:
        print(start_rows(label, flows), flush=True)


def dcqcn_paper() -> None:
    base = {}
    for load in (0.3, 0.5, 0.6, 0.7, 0.8, 0.9):
        base[load] = dc_flows("baseline", "10ms", load, fabric__cc_params=DCQCN_PAPER)
        print(f"`dcqcn_paper`, no attack, load {load}: victims' p99 {victims_p99(base[load]):.1f}", flush=True)
    load = min(base, key=lambda x: abs(victims_p99(base[x]) - 20.0))
    flows = [base[load]] + [dc_flows(c, "10ms", load, fabric__cc_params=DCQCN_PAPER) for c in CASES[1:]]
    print(FULL_HEADER)
    print(split_row(f"`dcqcn_paper`, qp, {load}", flows), flush=True)
    print(START_HEADER)
    print(start_rows(f"`dcqcn_paper`, {load}", flows), flush=True)


#: `figure`'s runs: (label, load, DCQCN floor).
FIGURE_RUNS = (
    ("the sweep: floor 1 Gb/s, 0.9", 0.9, "1Gb/s"),
    ("floor 1 Mb/s, 0.9", 0.9, "1Mb/s"),
    ("floor 1 Gb/s, 0.5", 0.5, "1Gb/s"),
    ("floor 1 Mb/s, 0.5", 0.5, "1Mb/s"),
)


def kept_flows(case: str, load: float, min_rate: str) -> pl.DataFrame:
    """A full-size run's flow records (kept in the store under `main`, so that `figure` and
    `by_start` make each run once)."""
    return dc_flows(case, "10ms", load, fabric__cc_params={"min_rate": min_rate})


def sweep_by_start() -> None:
    """The sweep's own full-size DCQCN runs, victims' p99 by the ms they started in (kept for
    `figure`, which draws the same runs)."""
    _, load, floor_rate = FIGURE_RUNS[0]
    flows = [kept_flows(c, load, floor_rate) for c in CASES]
    print(START_HEADER)
    print(start_rows("`dcqcn` (the sweep), 0.9", flows), flush=True)


def figure() -> None:
    """Left: staggered / parallel of the victims' p99 by the ms they started in, four runs, the
    paper's whole-run 1.75 beside them. Right: the two attacks' tails at 0.5 by start ms."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    ms = np.arange(10) + 0.5
    for label, load, floor_rate in FIGURE_RUNS:
        par, stag = (by_start(kept_flows(c, load, floor_rate)) for c in CASES[1:])
        left.plot(ms, stag / par, marker="o", ms=3, label=label)
        if load == 0.5:
            style = "-" if floor_rate == "1Mb/s" else ":"
            right.plot(ms, par, style, color="tab:blue", label=f"parallel, {label}")
            right.plot(ms, stag, style, color="tab:red", label=f"staggered, {label}")
    left.axhline(1.75, color="k", lw=1, ls="--", label="paper, whole run (140 / 80)")
    left.axhline(1.0, color="0.6", lw=0.8)
    left.set_ylabel("victims' p99: staggered / parallel")
    right.set_ylabel("victims' p99 FCT slowdown")
    for ax in (left, right):
        ax.set_xlabel("ms of the run in which the victim started")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 5, DCQCN, S1 fat tree, 10 ms of FB Hadoop: the rate floor and saturation", fontsize=9)
    fig.tight_layout()
    for path in save_figure(fig, figure_dir("attack_dcqcn_causes") / "fig5_ratio_by_start"):
        print(path)


#: The parts by the name given on the command line (`where` and `floor` take arguments after
#: a colon: `where:10ms`, `floor:LOAD[:NICS[:MIN_RATE]]`).
INVESTIGATION = Investigation("attack_dcqcn_causes", {
    "fig4": fig4, "fig5": fig5, "seeds": seeds, "where": where, "knobs": knobs, "floor": floor,
    "dcqcn_paper": dcqcn_paper, "by_start": sweep_by_start, "figure": figure}, ["fig4", "fig5"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
