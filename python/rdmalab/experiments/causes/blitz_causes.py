"""Why our IB/DASR ratios are not the poster's 2.5-3.3x, by runs that each remove or add one
suspected cause (docs/blitz.md, "Why our ratios are not the poster's").

`python -m rdmalab.experiments.causes.blitz_causes [PART ...]` (quick: every run is
`blitz_incast_quick.toml`'s d = 16 scenario, one seed, 3 rounds 10 ms apart, 48 incast flows,
`repro/blitz_round.py::d16_scenario`) prints one row per run, the one change named in its row:

- `baseline` (IB CC under our set `rdmalab_v1`), `no_cc`, `fifo` (FIFO egress arbitration in
  place of input-fair), `timers` (`ccti_timer` 10 us, 200 us, 1 ms), `mark_every` (every
  eligible packet marked, 1 ms timer), `no_long_flow`, `nic` (DASR in the NIC), `serial`,
  `serial_no_long_flow`, `paced`, `deeper` (a table 4x deeper than `rdmalab_v1`'s, every
  packet marked, 1 ms timer) and `deeper_dasr` (serial and paced over it), `vl_4k` (every
  scheme with 4 KiB VL buffers, less than the credit round trip);
- `dasr_cc`: each DASR (serial, paced, in the NIC) with the fabric's IB CC on and off (the
  poster reads DASR as replacing the fabric's CC), and which reading the repro's headline uses;
- `rnr`: the incast's flows as SENDs on receive queues of one WQE per connection
  (`[rnic]`, docs/model/rnic.md "Receive queues and RNR NAKs"), reposted after 0, 9 and 10.5 ms,
  at two RNR timers, under IB CC and DASR in the NIC, then on one shared receive queue (SRQ)
  of 16, 8 and 4 WQEs reposted after 5 us: when RNR NAKs can idle the link;
- `processing`: the same SENDs with the aggregator's per-message processing
  (`[rnic] recv_processing`: one receive completion handled at a time, the WQE posted again
  when it is done), swept from RAMCloud's measured 2.35 us to 0.7 ms, on an SRQ of 16 and of 8
  WQEs and a queue of one per connection, under IB CC and DASR in the NIC, then the bound on
  the processing time from the baseline's own completions (`processing_bound_us`);
- `dasr_srq`: the baseline, serial, paced and DASR in the NIC with the incast's messages as SENDs
  (a serial sender's message, each paced piece) on an SRQ of 16, 8, 4, 3 and 2 WQEs reposted
  after 5 us (d = 16; d = 4: 3, 2 and 1), and the baseline's median and p99 over each
  (docs/blitz.md, "Serial grants over a short SRQ");
- `yardstick`: the fluid model the docs argue with (`repro/blitz_round.py`: `fair_share_fcts`,
  `serial_fcts`, `round_link_bound`) beside the runs it explains.

Columns (`repro/blitz_round.py::d16_round`): incast median and p99 FCT (us), p99/median, the round's
span over the link bound n·W/C (largest of the 3 rounds; 1 at best), an incast sender's NIC
credit stalls per round (us, mean of the 16), FECN marks, the highest CCT index sampled (any
QP). Under a second a run; about 10 s for all parts.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from rdmalab import Scenario
from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.repro.blitz_round import (INCAST_DPORT, NO_LONG_FLOW, d16_round, d16_scenario, d16_summary,
                                                   fair_share_fcts, message_time_us, round_link_bound, serial_fcts,
                                                   serial_gaps_us)
from rdmalab.results import percentile

#: A table 4x deeper than `rdmalab_v1`'s (entry i = shift 1, multiplier i: i/2 packet times
#: against i/8), every eligible packet marked, a 1 ms timer: a baseline that throttles below
#: the link (our construction, no published set).
DEEPER = {"cct": [f"1:{i}" for i in range(128)], "marking_rate": 0, "ccti_timer": "1ms"}
#: The fabric's IB CC off under DASR in the NIC: threshold level 0 ("none") marks nothing, so
#: the sender's rate is DASR's share alone (`dasr_fallback` takes only "dcqcn" or "ib").
IB_OFF = {"threshold_level": 0}

#: Each part's runs: row label -> (fabric.cc, cc_params[, stagger[, changes]]) for `d16_round`.
ROWS: dict[str, dict[str, tuple]] = {
    "baseline": {"IB CC (rdmalab_v1)": ("ib", {})},
    "no_cc": {'no CC (cc = "none")': ("none", {})},
    "fifo": {"IB CC, FIFO egress arbitration": ("ib", {}, "none", {"fabric.egress_arbitration": "fifo"})},
    "timers": {f"IB CC, ccti_timer {t}": ("ib", {"ccti_timer": t}) for t in ("10us", "200us", "1ms")},
    "mark_every": {"IB CC, every packet marked, ccti_timer 1ms": ("ib", {"marking_rate": 0, "ccti_timer": "1ms"})},
    "no_long_flow": {"IB CC, no long flow": ("ib", {}, "none", NO_LONG_FLOW)},
    "nic": {"DASR in the NIC": ("blitz", {"dasr_fallback": "ib"})},
    "serial": {"serial": ("ib", {}, "serial")},
    "serial_no_long_flow": {"serial, no long flow": ("ib", {}, "serial", NO_LONG_FLOW)},
    "paced": {"paced": ("ib", {}, "paced")},
    "deeper": {"IB CC, table 4x deeper, every packet marked, ccti_timer 1ms": ("ib", DEEPER)},
    "deeper_dasr": {"the same, serial": ("ib", DEEPER, "serial"), "the same, paced": ("ib", DEEPER, "paced")},
    "dasr_cc": {
        "serial, IB CC on (the headline's)": ("ib", {}, "serial"),
        'serial, IB CC off (cc = "none")': ("none", {}, "serial"),
        "paced, IB CC on (the headline's)": ("ib", {}, "paced"),
        'paced, IB CC off (cc = "none")': ("none", {}, "paced"),
        "DASR in the NIC over IB CC (the headline's)": ("blitz", {"dasr_fallback": "ib"}),
        "DASR in the NIC, IB CC off (threshold_level 0)": ("blitz", {"dasr_fallback": "ib"} | IB_OFF),
    },
    "vl_4k": {f"{name}, 4 KiB VL buffers": (cc, params, stagger, {"fabric.ib_vl_buffer": 4096})
              for name, (cc, params, stagger) in (("IB CC", ("ib", {}, "none")), ("serial", ("ib", {}, "serial")),
                                                  ("paced", ("ib", {}, "paced")),
                                                  ("DASR in the NIC", ("blitz", {"dasr_fallback": "ib"}, "none")))},
}

def _rnr(depth: int, delay: str, timer: int = 12, retry: int = 7) -> dict:
    """`d16_scenario`'s changes that make the incast's flows SENDs on receive queues."""
    return {"traffic[1].verb": "send", "rnic": {"recv_queue_depth": depth, "recv_repost_delay": delay,
                                                 "min_rnr_timer": timer, "rnr_retry": retry}}


def _srq(depth: int, delay: str, timer: int = 12) -> dict:
    """The same on one shared receive queue of `depth` WQEs at the aggregator."""
    return {"traffic[1].verb": "send", "rnic": {"srq_depth": depth, "recv_repost_delay": delay,
                                                 "min_rnr_timer": timer}}


#: The `rnr` part: one message per connection per round, rounds 10 ms apart, so a connection is
#: short of its one WQE only when the repost takes longer than a period less the round.
RNR_ROWS: dict[str, tuple] = {
    "write (the baseline)": ("ib", {}),
    "send, 1 WQE, reposted after 0": ("ib", {}, "none", _rnr(1, "0ns")),
    "send, 1 WQE, reposted after 9 ms": ("ib", {}, "none", _rnr(1, "9ms")),
    "send, 1 WQE, reposted after 10.5 ms, timer 12 (0.64 ms)": ("ib", {}, "none", _rnr(1, "10.5ms")),
    "send, 1 WQE, reposted after 10.5 ms, timer 1 (0.01 ms)": ("ib", {}, "none", _rnr(1, "10.5ms", 1)),
    "send, 1 WQE, reposted after 10.5 ms, rnr_retry 0": ("ib", {}, "none", _rnr(1, "10.5ms", 12, 0)),
    "DASR in the NIC, send, 1 WQE, reposted after 10.5 ms": ("blitz", {"dasr_fallback": "ib"}, "none",
                                                              _rnr(1, "10.5ms")),
    # A shared receive queue (SRQ) runs short within a round when it holds fewer WQEs than
    # senders. The repost delay, 5 us, is our choice of an application that reposts promptly.
    "SRQ of 16 WQEs, reposted after 5 us": ("ib", {}, "none", _srq(16, "5us")),
    "SRQ of 8 WQEs, reposted after 5 us, timer 12 (0.64 ms)": ("ib", {}, "none", _srq(8, "5us")),
    "SRQ of 8 WQEs, reposted after 5 us, timer 1 (0.01 ms)": ("ib", {}, "none", _srq(8, "5us", 1)),
    "SRQ of 4 WQEs, reposted after 5 us, timer 12 (0.64 ms)": ("ib", {}, "none", _srq(4, "5us")),
    "DASR in the NIC, SRQ of 8 WQEs, reposted after 5 us, timer 12": ("blitz", {"dasr_fallback": "ib"}, "none",
                                                                        _srq(8, "5us")),
}


def rnr() -> None:
    """`RNR_ROWS`: per run the RNR NAKs, the WRs they failed, the incast flows completed and
    `d16_round`'s columns over them."""
    print_rnr_rows(RNR_ROWS)


def print_rnr_rows(table: dict[str, tuple]) -> None:
    """One row per run of `table` (label -> `d16_scenario`'s arguments): RNR NAKs, WRs failed,
    incast flows done, median, p99, p99/median, span over the link bound."""
    print("| run (d = 16, quick) | RNR NAKs | WRs failed | incast flows done | median µs | p99 µs | p99/median "
          "| span/bound |\n|---|---|---|---|---|---|---|---|")
    for label, (cc, params, *rest) in table.items():
        sc, senders = d16_scenario(cc, params, *rest)
        res = run(Scenario(sc))
        r = d16_summary(res, senders, 3)
        print(f"| {label} | {res.counters.get('rnr_naks', 0)} | {res.counters.get('rnr_retry_exceeded', 0)} | "
              f"{r['flows']} | {r['median_us']:.1f} | {r['p99_us']:.1f} | {r['p99_over_median']:.2f} | "
              f"{r['span_over_bound']:.2f} |", flush=True)


#: The `dasr_srq` part's schemes: (`fabric.cc`, cc_params, stagger) of the baseline and of each
#: DASR, all the incast's messages SENDs on one SRQ at the aggregator.
DASR_SRQ_SCHEMES: dict[str, tuple] = {
    "baseline (IB CC, no stagger)": ("ib", {}, "none"),
    "serial": ("ib", {}, "serial"),
    "paced": ("ib", {}, "paced"),
    "DASR in the NIC": ("blitz", {"dasr_fallback": "ib"}, "none"),
}
#: Its SRQ depths per degree: at d = 16 as deep as the incast, then half, a quarter, and the two
#: depths below where serial's gain passes the poster's; at d = 8 as deep, half, a quarter and
#: one; at d = 4 and 2 every depth shorter than it; below d = 16 without paced (its pieces, a
#: WQE each, complete no message within the run on an SRQ that short). The part runs 16 and 4
#: unless told (`dasr_srq:8+2`).
DASR_SRQ_DEPTHS = {16: (16, 8, 4, 3, 2), 8: (8, 4, 2, 1), 4: (3, 2, 1), 2: (1,)}


def dasr_srq_rows(depth: int, degree: int = 16) -> dict[str, tuple]:
    """The `dasr_srq` runs on an SRQ of `depth` WQEs reposted after 5 us (the `rnr` part's):
    label -> `d16_scenario`'s arguments. A serial or paced application's messages (a paced
    piece each) are SENDs too, each taking a WQE."""
    return {f"{name}, SRQ of {depth}": (cc, params, stagger, _srq(depth, "5us"))
            for name, (cc, params, stagger) in DASR_SRQ_SCHEMES.items() if degree == 16 or stagger != "paced"}


def dasr_srq_table(degree: int = 16, depths: tuple[int, ...] | None = None) -> list[dict]:
    """One row per scheme and depth at `degree`: RNR NAKs, flows done, median, p99, span over the
    link bound, and the baseline's median and p99 over the scheme's (the poster's 2.5-3.3x is
    this gain)."""
    out = []
    for depth in depths or DASR_SRQ_DEPTHS[degree]:
        base = None
        for label, (cc, params, *rest) in dasr_srq_rows(depth, degree).items():
            sc, senders = d16_scenario(cc, params, *rest, degree=degree)
            res = run(Scenario(sc))
            r = d16_summary(res, senders, 3) | {"run": label, "depth": depth,
                                                 "rnr_naks": res.counters.get("rnr_naks", 0)}
            base = base or r
            r["gain_median"] = base["median_us"] / r["median_us"]
            r["gain_p99"] = base["p99_us"] / r["p99_us"]
            out.append(r)
    return out


def dasr_srq(degrees: str = "16+4") -> None:
    """The lead of docs/blitz.md: every DASR's incast as SENDs over a short SRQ, beside
    the unstaggered baseline's on the same SRQ, at each of `degrees` (joined by +: 16, 8, 4, 2)."""
    wanted = [int(d) for d in degrees.split("+")]
    if unknown := [d for d in wanted if d not in DASR_SRQ_DEPTHS]:
        raise ValueError(f"dasr_srq: degree {unknown[0]} has no depths (known: {sorted(DASR_SRQ_DEPTHS)})")
    print("| run (quick) | RNR NAKs | incast flows done | median µs | p99 µs | span/bound "
          "| baseline ÷ run, median | baseline ÷ run, p99 |\n|---|---|---|---|---|---|---|---|")
    for degree in wanted:
        for r in dasr_srq_table(degree):
            print(f"| d = {degree}, {r['run']} | {r['rnr_naks']} | {r['flows']} | {r['median_us']:.1f} | "
                  f"{r['p99_us']:.1f} | {r['span_over_bound']:.2f} | {r['gain_median']:.2f} | {r['gain_p99']:.2f} |",
                  flush=True)


#: The responder's per-message processing (`[rnic] recv_processing`), swept. 2.35 us is
#: RAMCloud's measured handling of one request by its InfiniBand transport under load (1.1 us at
#: best; RAMCloud wiki, "Infiniband transport performance"); one message's link time (W/C,
#: 38.6 us) is an aggregator that consumes 256 KiB no faster than the link brings it (ours);
#: 0.5 and 0.7 ms bracket the bound at which the quick round's 16 completions, handled one at
#: a time, are not all handled before the next round 10 ms on: 16·T ≈ 10 ms − the round.
PROCESSING_US = {"2.35 us (RAMCloud, under load)": 2.35, "W/C (38.6 us, ours)": message_time_us(),
                 "0.5 ms": 500.0, "0.7 ms": 700.0}


def _processing(depth: int, us: float, shared: bool = True) -> dict:
    """`d16_scenario`'s changes: SENDs on an SRQ of `depth` WQEs (or `depth` per connection),
    reposted at once after each completion is handled, `us` of processing each."""
    key = "srq_depth" if shared else "recv_queue_depth"
    return {"traffic[1].verb": "send", "rnic": {key: depth, "recv_processing": f"{round(us * 1000)}ns"}}


def _processing_rows() -> dict[str, tuple]:
    """The `processing` part's runs: an SRQ as deep as the incast (16) and one half as deep (8),
    a queue of one per connection, each at the swept times, and DASR in the NIC over the runs
    that lose link time."""
    ib, nic = ("ib", {}, "none"), ("blitz", {"dasr_fallback": "ib"}, "none")
    out: dict[str, tuple] = {"write (the baseline)": ("ib", {})}
    for depth in (16, 8):
        out[f"SRQ of {depth}, no processing"] = (*ib, _processing(depth, 0.0))
        for name, us in PROCESSING_US.items():
            out[f"SRQ of {depth}, processing {name}"] = (*ib, _processing(depth, us))
    for name in ("2.35 us (RAMCloud, under load)", "0.7 ms"):
        out[f"1 WQE per connection, processing {name}"] = (*ib, _processing(1, PROCESSING_US[name], shared=False))
    out["DASR in the NIC, SRQ of 16, processing 0.7 ms"] = (*nic, _processing(16, 700.0))
    out["DASR in the NIC, SRQ of 8, processing W/C"] = (*nic, _processing(8, message_time_us()))
    out["DASR in the NIC, SRQ of 8, processing 2.35 us"] = (*nic, _processing(8, 2.35))
    return out


def processing_bound_us(flows: pl.DataFrame) -> float:
    """The least per-message processing T that leaves a sender's WQE (one per connection, or
    one of an SRQ as deep as the round) not yet back when its next round's message starts:
    each round's completions (start + FCT of the WRITE baseline's incast `flows`), in order of
    end, are handled at h = max(end, previous h) + T, and the k-th handled must precede the
    next round's k-th start (bisection to 0.1 us)."""
    f = flows.with_columns(((pl.col("start_ns") - 1e6) / 10e6).round(0).cast(pl.Int64).alias("round"))
    rounds = [g.sort("start_ns") for _, g in f.group_by("round", maintain_order=True)]

    def refuses(t_us: float) -> bool:
        for now, nxt in zip(rounds, rounds[1:]):
            ends = np.sort((now["start_ns"] + now["fct_ns"]).to_numpy() / 1e3)
            handled = 0.0
            for end, start in zip(ends, nxt["start_ns"].to_numpy() / 1e3):
                handled = max(end, handled) + t_us
                if handled > start:
                    return True
        return False

    lo, hi = 0.0, 10_000.0
    while hi - lo > 0.1:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if refuses(mid) else (mid, hi)
    return hi


def processing() -> None:
    """The receiver's per-message processing as a loss mechanism: the
    incast's flows as SENDs, each completion handled one at a time by the aggregator."""
    print_rnr_rows(_processing_rows())
    sc, _ = d16_scenario("ib", {})
    flows = run(Scenario(sc)).flows.filter(pl.col("dport") == INCAST_DPORT)
    print(f"- the bound on T from the baseline's own completions (`processing_bound_us`): "
          f"{processing_bound_us(flows):.1f} us")


HEADER = ("| part | run (d = 16, quick) | median µs | p99 µs | p99/median | span/bound | credit stall µs "
          "| FECN marks | highest CCTI |\n|---|---|---|---|---|---|---|---|---|")


def rows(part: str) -> pl.DataFrame:
    """The part's runs as `d16_round`'s table (runs kept in the script's store under `main`)."""
    return d16_round(ROWS[part], runner=run)


def print_rows(part: str) -> None:
    for r in rows(part).iter_rows(named=True):
        print(f"| {part} | {r['setting']} | {r['median_us']:.1f} | {r['p99_us']:.1f} | {r['p99_over_median']:.2f} | "
              f"{r['span_over_bound']:.2f} | {r['stall_us']:.0f} | {r['fecn_marks']} | {r['max_ccti']} |", flush=True)


def _incast(part: str, label: str) -> pl.DataFrame:
    """The incast flows of one run of `ROWS`, in the order of its senders' list per round."""
    cc, params, *rest = ROWS[part][label]
    sc, _ = d16_scenario(cc, params, *rest)
    flows = run(Scenario(sc)).flows.filter(pl.col("dport") == INCAST_DPORT)
    return flows.with_columns(((pl.col("start_ns") - 1e6) / 10e6).round(0).cast(pl.Int64).alias("round")) \
        .sort("round", "src")


def _modelled(flows: pl.DataFrame, model) -> np.ndarray:  # noqa: ANN001
    """`model(starts_us, round_start_us)` over each round of `flows`, concatenated."""
    out = []
    for (r,), f in flows.group_by("round", maintain_order=True):
        out.append(model(f["start_ns"].to_numpy() / 1e3, 1_000.0 + 10_000.0 * r))
    return np.concatenate(out)


def _spread(d: np.ndarray) -> str:
    return f"{d.min():+.3f} to {d.max():+.3f} us"


def yardstick(draws: str = "400") -> None:
    """The fluid model (docs/blitz.md): the link bound, the caps it puts on any DASR's gain, fair
    sharing with and without the long flow and the serial schedule, each beside its run
    (over the run's own starts) and, for fair sharing, over `draws` rounds drawn U(0, 100 us)
    (numpy, seed 1)."""
    n, t = 16, message_time_us()
    bound = n * t
    print(f"yardstick (d = {n}, quick): W/C = {t:.2f} us per message, n·W/C = {bound:.1f} us")
    base = rows("baseline").row(0, named=True)
    print(f"- any schedule: last end >= first start + n·W/C, so p99 >= {bound:.1f} - 100 = {bound - 100:.1f} us; "
          f"against the baseline's p99 {base['p99_us']:.1f}: ratio <= {base['p99_us'] / (bound - 100):.2f}; "
          f"median (serialising, k-th done at k·W/C): ratio <= 2n/(n+1) = {2 * n / (n + 1):.2f} "
          f"(d = 4: {8 / 5:.2f})")
    for part, label, longs in (("baseline", "IB CC (rdmalab_v1)", 1), ("no_long_flow", "IB CC, no long flow", 0)):
        inc = _incast(part, label)
        model = _modelled(inc, lambda s, _r: fair_share_fcts(s, t, longs))
        meas = inc["fct_ns"].to_numpy() / 1e3
        print(f"- fair sharing, {longs} long flow: model over the run's starts median {np.median(model):.1f} / "
              f"p99 {percentile(model, 0.99):.1f} us; measured ({label}) {np.median(meas):.1f} / "
              f"{percentile(meas, 0.99):.1f}; measured - model per flow {_spread(meas - model)}")
        rng = np.random.default_rng(1)
        drawn = np.concatenate([fair_share_fcts(rng.uniform(0, 100, n), t, longs) for _ in range(int(draws))])
        print(f"  over {draws} drawn rounds: median {np.median(drawn):.1f} / p99 {percentile(drawn, 0.99):.1f} us")
    # blitz-incast-roce's star (56 Gb/s): a 1000-byte payload travels in 1048 bytes, so a
    # message's link time is its payload at 56 x 1000/1048 = 53.4 Gb/s (docs/experiments.md).
    roce_t = (262_144 + -(-262_144 // 1000) * 48) * 8 / 56e9 * 1e6
    rng = np.random.default_rng(1)
    drawn = np.concatenate([fair_share_fcts(rng.uniform(0, 100, n), roce_t, 1) for _ in range(int(draws))])
    print(f"- fair sharing on RoCE at 56 Gb/s (W/C = {roce_t:.2f} us), 1 long flow, over {draws} drawn rounds: "
          f"median {np.median(drawn):.1f} / p99 {percentile(drawn, 0.99):.1f} us")
    g = serial_gaps_us()
    inc = _incast("serial_no_long_flow", "serial, no long flow")
    model = _modelled(inc, lambda s, r: serial_fcts(s, r, t, **g))
    meas = inc["fct_ns"].to_numpy() / 1e3
    closed = (n + 1) / 2 * (t + g["grant_us"] + g["tail_us"]) + g["ack_us"]
    print(f"- serial, no long flow: (n+1)/2·(W/C + grant {g['grant_us']:.2f} + tail {g['tail_us']:.2f}) + ack "
          f"{g['ack_us']:.2f} = {closed:.1f} us with every start at the round's; model over the run's starts "
          f"median {np.median(model):.1f} / p99 {percentile(model, 0.99):.1f}; measured {np.median(meas):.1f} / "
          f"{percentile(meas, 0.99):.1f}; measured - model per flow {_spread(meas - model)}")
    # With the long flow and no CC to slow it, input-fair arbitration gives it half the link
    # while a message is on it: each message takes 2·W/C.
    inc = _incast("dasr_cc", 'serial, IB CC off (cc = "none")')
    model = _modelled(inc, lambda s, r: serial_fcts(s, r, 2 * t, **g))
    meas = inc["fct_ns"].to_numpy() / 1e3
    closed = (n + 1) / 2 * (2 * t + g["grant_us"] + g["tail_us"]) + g["ack_us"]
    print(f"- serial beside the long flow, IB CC off (each message at C/2: 2·W/C): closed form {closed:.1f} us; "
          f"model over the run's starts median {np.median(model):.1f} / p99 {percentile(model, 0.99):.1f}; "
          f"measured {np.median(meas):.1f} / {percentile(meas, 0.99):.1f}; measured - model per flow "
          f"{_spread(meas - model)}")
    for part, label in (("baseline", "IB CC (rdmalab_v1)"), ("serial", "serial")):
        inc = _incast(part, label)
        span = round_link_bound(inc, 10e6)
        print(f"- {label}: round span / n·W/C = {', '.join(f'{o:.3f}' for o in span['over'])}")


def long_flow(part: str, label: str) -> tuple[int, float]:
    """The long flow's highest CCT index sampled over the run, and its mean delivered
    throughput (Gb/s) over the first ms of each round (rate samples every 10 us)."""
    cc, params, *rest = ROWS[part][label]
    sc, _ = d16_scenario(cc, params, *rest)
    rates = run(Scenario(sc)).rates.filter(pl.col("flow") == 0)  # traffic[0], the long flow
    into = (pl.col("time_ps").cast(pl.Int64) - 1_000_000_000) % 10_000_000_000
    first_ms = rates.filter((pl.col("time_ps") > 1_000_000_000) & (into > 0) & (into <= 1_000_000_000))
    return int(rates["ccti"].max() or 0), float(first_ms["throughput_gbps"].mean())


def dasr_cc() -> None:
    """`ROWS["dasr_cc"]`, then the long flow under each: what the fabric's CC does to it."""
    print_rows("dasr_cc")
    for label in ROWS["dasr_cc"]:
        ccti, gbps = long_flow("dasr_cc", label)
        print(f"- {label}: the long flow's highest CCTI {ccti}, {gbps:.1f} Gb/s over each round's first ms")


PARTS = {p: (lambda p=p: print_rows(p)) for p in ROWS}
PARTS["dasr_cc"] = dasr_cc
PARTS["rnr"] = rnr
PARTS["processing"] = processing
PARTS["dasr_srq"] = dasr_srq
PARTS["yardstick"] = yardstick

INVESTIGATION = Investigation("blitz_causes", PARTS, list(PARTS), header=HEADER)

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
