"""The incast round of docs/blitz.md: IB wire arithmetic and link bound, d = 16 runs, the fluid-model yardstick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from rdmalab import Scenario, run
from rdmalab.experiments.sweep import Sweep, set_path
from rdmalab.results import percentile

#: Incast flows carry dport 200 (`incast`, `incast_rounds`).
INCAST_DPORT = 200
#: FDR 4x's data rate: 4 lanes of 14.0625 Gb/s, 64b/66b coded (IBTA; `fabric/ib.rs`), 54.545 Gb/s.
FDR4X_BPS = 4 * 14.0625e9 * 64 / 66
#: InfiniBand wire bytes per data packet beyond its payload, LRH + BTH + ICRC + VCRC, and the RETH
#: of a WRITE's first packet (docs/model/infiniband.md, "InfiniBand link layer").
IB_DATA_HEADER, IB_RETH = 8 + 12 + 4 + 2, 16


def ib_message_wire_bytes(size: int, mtu: int = 2048) -> int:
    """Bytes one RDMA WRITE of `size` bytes puts on an InfiniBand wire at `mtu`."""
    return size + IB_DATA_HEADER * -(-size // mtu) + IB_RETH


def round_link_bound(flows: pl.DataFrame, period_ns: float, rate_bps: float = FDR4X_BPS,
                     mtu: int = 2048) -> pl.DataFrame:
    """The bound docs/blitz.md argues, per incast round of one run's `flows` (rounds `period_ns`
    apart, each start within a small jitter of its round's): whatever the schedule, the round's
    n messages cross the aggregator's link one byte at a time, so its last one cannot end
    before the round's first start plus n·W/C (W a message's wire bytes, C the link's data
    rate). One row per round: n, first start, last end,
    `span_us` (last end − first start), `bound_us` (n·W/C) and `over` = span/bound (≥ 1 always;
    near 1 for a baseline that keeps the link busy)."""
    inc = flows.filter(pl.col("dport") == INCAST_DPORT) if "dport" in flows.columns else flows
    first = inc["start_ns"].min()
    index = ((pl.col("start_ns") - first) / period_ns).round(0).cast(pl.Int64).alias("round")
    rounds = (inc.with_columns(index, (pl.col("start_ns") + pl.col("fct_ns")).alias("end_ns"))
              .group_by("round").agg(pl.len().alias("n"), pl.col("size").first().alias("size"),
                                     pl.col("start_ns").min().alias("first_ns"),
                                     pl.col("end_ns").max().alias("last_ns"))
              .sort("round"))
    wire = np.array([ib_message_wire_bytes(int(s), mtu) for s in rounds["size"]])
    bound_us = rounds["n"].to_numpy() * wire * 8 / rate_bps * 1e6
    return rounds.with_columns(span_us=(pl.col("last_ns") - pl.col("first_ns")) / 1e3, bound_us=pl.Series(bound_us)) \
        .with_columns(over=pl.col("span_us") / pl.col("bound_us"))


#: The d = 16 round (the quick file's, 3 rounds 10 ms apart, seed 1) under each
#: setting, by `[fabric]` and `[fabric.cc_params]` (no CC; our set; the Mellanox manager's set
#: with its table "mellanox_default" at timers 50 us to 1 ms, which the manager leaves open).
D16_SETTINGS: dict[str, tuple[str, dict]] = {
    "no CC": ("none", {}),
    "rdmalab_v1": ("ib", {}),
    **{f"mellanox_ccmgr, ccti_timer {t}": ("ib", {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": t})
       for t in ("50us", "200us", "1ms")},
}


def d16_scenario(cc: str, params: dict, stagger: str = "none", changes: dict | None = None, rounds: int = 3,
                 degree: int = 16) -> tuple[dict, list[int]]:
    """`blitz_incast_quick.toml`'s d = 16 (or `degree` = 4; 2 and 8 from `blitz_incast.toml`) baseline (IB, no stagger) with rounds
    every 10 ms, `rounds` of them, rate samples every 10 us, `fabric.cc` = `cc`, `cc_params` =
    `params`, the incast's `stagger`, then `changes` (sweep paths -> values; a `traffic[i]` set
    to None is removed: `NO_LONG_FLOW`). The scenario dict and the incast's senders."""
    # The quick sweep has d = 4 and 16; the full one (the same base) d = 2 and 8 as well.
    specs = (s for name in ("blitz_incast_quick.toml", "blitz_incast.toml")
             for s in Sweep.from_file(Path(__file__).with_name(name)).expand())
    spec = next((s for s in specs if len(s.scenario["traffic"][1]["senders"]) == degree
                 and s.params["fabric.cc"] == "ib" and s.params["traffic[1].stagger"] == "none"
                 and s.scenario.get("seed", 1) == 1), None)
    if spec is None:
        raise ValueError(f"no incast of degree {degree} in blitz-incast (2, 4, 8, 16)")
    sc = json.loads(json.dumps(spec.scenario))
    sc["traffic"][1].update(rounds=rounds, period="10ms", stagger=stagger)
    sc["stop_time"] = f"{1 + 10 * rounds}ms"
    sc["fabric"].update(cc=cc, cc_params=params, rate_sample_interval="10us")
    for path, value in (changes or {}).items():
        set_path(sc, path, value)
    sc["traffic"] = [t for t in sc["traffic"] if t is not None]
    return sc, list(spec.scenario["traffic"][1]["senders"])


#: `d16_scenario`'s change that removes the long flow (traffic[0], host 19 -> 0).
NO_LONG_FLOW = {"traffic[0]": None}


def d16_summary(res, senders: list[int], rounds: int) -> dict:  # noqa: ANN001 (Results or a causes Run)
    """One row of `d16_round` from a run's results (`rdmalab.Results` or a causes `Run`: the
    tables `flows`, `ports`, `rates`, the counters)."""
    inc = res.flows.filter(pl.col("dport") == INCAST_DPORT)
    fct = inc["fct_ns"].to_numpy() / 1e3
    stalls = res.ports.filter((pl.col("node_kind") == "host") & pl.col("node").is_in(senders))["credit_stall_ps"]
    return {"flows": len(fct), "median_us": float(np.median(fct)),
            "p99_us": percentile(fct, 0.99), "p99_over_median": percentile(fct, 0.99) / float(np.median(fct)),
            "span_over_bound": float(round_link_bound(inc, 10e6)["over"].max()),
            "stall_us": float(stalls.sum()) / 1e6 / len(senders) / rounds,
            "fecn_marks": res.counters.get("fecn_marks", 0),
            "max_ccti": int(res.rates["ccti"].max() or 0) if res.rates.height else 0,
            "printed": getattr(res, "extra", {}).get("cc_settings", "")}


def d16_round(settings: dict[str, tuple] = D16_SETTINGS, rounds: int = 3, degree: int = 16,
              runner: Callable | None = None) -> pl.DataFrame:
    """Runs `d16_scenario` once per setting, a setting being (`fabric.cc`, `fabric.cc_params`
    and, when given, the incast's `stagger` and further `changes`): incast median and p99 FCT
    (us), p99/median, the round's span over the link bound n·W/C (`round_link_bound`, the
    largest of the rounds: the link time the round took, 1 at best), the credit stalls of an
    incast sender's NIC per round (us, mean of the senders), FECN marks, the highest CCT index
    sampled (any QP, the long flow included), and the settings line the run printed (empty
    when `runner` keeps no such line). `runner` makes a run from a `Scenario` (default
    `rdmalab.run`; the causes scripts pass their `run`, which keeps runs in their store)."""
    rows = []
    for name, (cc, params, *rest) in settings.items():
        sc, senders = d16_scenario(cc, params, *rest, rounds=rounds, degree=degree)
        res = runner(Scenario(sc)) if runner else run(Scenario(sc), progress=False)
        rows.append({"setting": name, **d16_summary(res, senders, rounds)})
    return pl.DataFrame(rows)


def d16_sensitivity() -> dict[str, tuple[str, dict]]:
    """One key at a time around the Mellanox manager's set with a 49-unit (50.2 us) timer: the
    timer over LLNL's sweep (2-8192 units of 1.024 us), the threshold level and marking rate
    over LLNL's values, each named table; then the harshest corner of LLNL's sweep (every
    eligible packet marked, the longest timer) with each of its four tables."""
    base = {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": 49}
    out: dict[str, tuple[str, dict]] = {"mellanox_ccmgr, timer 49": ("ib", base)}
    for units in (2, 8, 32, 128, 512, 2048, 8192):
        out[f"timer {units}"] = ("ib", base | {"ccti_timer": units})
    for level in (0, 1, 5, 9, 12):
        out[f"threshold_level {level}"] = ("ib", base | {"threshold_level": level})
    for rate in (0, 2, 8, 32, 80):
        out[f"marking_rate {rate}"] = ("ib", base | {"marking_rate": rate})
    for table in ("rdmalab_v1", "mellanox_llnl", "simula_optimal", "simula_llnl"):
        out[f"cct {table}"] = ("ib", base | {"cct": table})
    for table in ("mellanox_default", "mellanox_llnl", "simula_optimal", "simula_llnl"):  # LLNL's harshest corner
        out[f"marking_rate 0, timer 8192, cct {table}"] = ("ib", base | {"marking_rate": 0, "ccti_timer": 8192,
                                                                          "cct": table})
    return out


def d16_dasr_over_harshest() -> dict[str, tuple]:
    """The harshest corner of LLNL's sweep with the Mellanox table (every eligible packet
    marked, a 8192-unit timer) under the baseline and each DASR reading, the fabric's CC on."""
    harsh = {"ib_cc_preset": "mellanox_ccmgr", "ccti_timer": 8192, "marking_rate": 0}
    return {"IB CC": ("ib", harsh), "serial": ("ib", harsh, "serial"), "paced": ("ib", harsh, "paced"),
            "DASR in the NIC": ("blitz", harsh | {"dasr_fallback": "ib"})}


def d16_round_table(settings: dict[str, tuple] = D16_SETTINGS, rounds: int = 3, degree: int = 16) -> str:
    """`d16_round` as the Markdown table docs/blitz.md shows (quick: one seed, `rounds` rounds)."""
    lines = [f"| setting (d = {degree}, quick) | median µs | p99 µs | p99/median | span/bound | credit stall µs "
             "| FECN marks | highest CCTI |", "|---|---|---|---|---|---|---|---|"]
    for r in d16_round(settings, rounds, degree).iter_rows(named=True):
        lines.append(f"| {r['setting']} | {r['median_us']:.0f} | {r['p99_us']:.0f} | {r['p99_over_median']:.2f} | "
                     f"{r['span_over_bound']:.2f} | {r['stall_us']:.0f} | {r['fecn_marks']} | {r['max_ccti']} |")
    return "\n".join(lines)


# -- The fluid-model yardstick of docs/blitz.md ("Why our ratios are not the poster's") --------

#: The testbed's one-way link delay (`blitz_incast*.toml`: 1 us links, two hops sender -> aggregator).
LINK_DELAY_US = 1.0
#: Wire bytes of a grant (64 B WRITE: `ib_message_wire_bytes(64)`) and of an ACK (LRH, BTH, AETH,
#: ICRC, VCRC), the small messages a serial round adds.
GRANT_WIRE_BYTES, ACK_WIRE_BYTES = ib_message_wire_bytes(64), 8 + 12 + 4 + 4 + 2


def message_time_us(size: int = 262_144, rate_bps: float = FDR4X_BPS, mtu: int = 2048) -> float:
    """T = W/C: the time one message's wire bytes take on the aggregator's link (us)."""
    return ib_message_wire_bytes(size, mtu) * 8 / rate_bps * 1e6


def fair_share_fcts(starts_us: np.ndarray, work_us: float, long_flows: int = 0) -> np.ndarray:
    """Processor sharing on one link (a fluid model): flow i arrives at `starts_us[i]` with
    `work_us` of link time to do, `long_flows` flows that never end are there throughout, and
    every flow present gets an equal share. The FCTs (us, each from its own start), the rates
    recomputed at every start and end. Closed forms: n simultaneous starts end together after
    (n + long_flows)·work; two flows t apart (t < work) both take 2·work − t."""
    starts = np.asarray(starts_us, dtype=float)
    order = np.argsort(starts, kind="stable")
    left = np.full(len(starts), float(work_us))
    end = np.full(len(starts), np.nan)
    now, nxt, active = (starts[order[0]] if len(starts) else 0.0), 0, []
    while nxt < len(order) or active:
        while nxt < len(order) and starts[order[nxt]] <= now:
            active.append(order[nxt])
            nxt += 1
        if not active:
            now = starts[order[nxt]]
            continue
        share = 1.0 / (len(active) + long_flows)
        t_done = now + min(left[i] for i in active) / share
        t_next = starts[order[nxt]] if nxt < len(order) else np.inf
        t = min(t_done, t_next)
        for i in active:
            left[i] -= (t - now) * share
        now = t
        for i in [i for i in active if left[i] <= 1e-9 * work_us]:
            end[i] = now
            active.remove(i)
    return end - starts


def serial_fcts(starts_us: np.ndarray, round_us: float, work_us: float, grant_us: float, tail_us: float,
                ack_us: float) -> np.ndarray:
    """The serial reading as `workload/serial_incast.rs` runs it, with no other traffic: the
    aggregator sends grant 1 at the round's start `round_us` and grant k+1 when message k has
    arrived whole; a grant takes `grant_us` to reach its sender, which posts its message at the
    later of the grant's arrival and its own start; the message arrives whole `work_us + tail_us`
    after its post (W/C on the link, then the last packet's trip); its sender completes an
    ACK's trip (`ack_us`) later. Senders in list order; FCTs (us) from each flow's own start.
    Closed form: with every start at the round's start, the k-th completes after
    k·(grant + work + tail) + ack, so the median of n is (n+1)/2·(grant + work + tail) + ack."""
    out, arrived = [], float(round_us)
    for s in np.asarray(starts_us, dtype=float):
        arrived = max(arrived + grant_us, s) + work_us + tail_us
        out.append(arrived + ack_us - s)
    return np.array(out)


def serial_gaps_us(rate_bps: float = FDR4X_BPS, delay_us: float = LINK_DELAY_US, mtu: int = 2048) -> dict[str, float]:
    """`serial_fcts`' trips on the testbed's star (two hops of `delay_us`, store and forward):
    a grant's (two links' serialisation and delay), a message's tail (the last packet's
    serialisation at the switch and two delays) and an ACK's."""
    ser = lambda b: b * 8 / rate_bps * 1e6  # noqa: E731
    return {"grant_us": 2 * (delay_us + ser(GRANT_WIRE_BYTES)),
            "tail_us": 2 * delay_us + ser(mtu + IB_DATA_HEADER),
            "ack_us": 2 * (delay_us + ser(ACK_WIRE_BYTES))}
