"""Why Virtuoso's rows of the full `lb-host-vs-switch` collapse under IRN, by runs that each
move one thing (docs/load-balancing.md, "Virtuoso collapses under IRN at full size").

`python -m rdmalab.experiments.causes.virtuoso_irn_causes [0.25] [0.35] [lossless]` takes the
sweep's own symmetric IRN run of Virtuoso at that host load (`lb_host_vs_switch.toml`, 128
hosts, 10 ms of arrivals; `lossless`: its lossless run with the failed link at 0.35), changes
one setting per row and prints drops, timeouts and the slowdown of the messages below one BDP
that start after the first millisecond (the sweep's own statistics), beside ECMP's run of the
same case. Each run takes 2-9 minutes.
"""

from __future__ import annotations

import copy
import functools
import sys
from typing import Any

import polars as pl

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.repro.base import HERE
from rdmalab.experiments.repro.host_vs_switch import WARMUP_NS, message_slowdown, slowdown_stats
from rdmalab.experiments.repro.load_balancing import BDP_BYTES
from rdmalab.experiments.sweep import RunSpec, Sweep, set_path

SWEEP = HERE / "lb_host_vs_switch.toml"

#: IRN's in-flight cap per QP for the "one BDP per connection" row: an eighth of the 104 KB
#: the engine takes by default (the topology's largest base RTT at 100 Gb/s), for 8 QPs.
EIGHTH_BDP = 13_000

#: (which run, label, settings changed in the scenario as sweep paths); a run is a host
#: load (the symmetric IRN run) or "lossless" (the failed-link lossless run at 0.35).
ROWS: list[tuple[float | str, str, dict[str, Any]]] = [
    (0.25, "as in the sweep (8 KiB probes)", {}),
    (0.25, "IRN's in-flight cap at 1/8 BDP per QP (one BDP per connection)", {"fabric.irn": {"bdp": EIGHTH_BDP}}),
    (0.25, 'no probe (weights = "equal", the same eight-way split)', {"traffic[0].weights": "equal"}),
    (0.25, "1 KiB probes", {"traffic[0].probe_size": 1024}),
    (0.35, "as in the sweep", {}),
    (0.35, "no probe", {"traffic[0].weights": "equal"}),
    (0.35, "probe, CC per destination", {"fabric.granularity": "per_destination"}),
    (0.35, "no probe, CC per destination", {"traffic[0].weights": "equal", "fabric.granularity": "per_destination"}),
    (0.35, "no probe, IRN's timeouts x10 (1 ms and 3.2 ms)",
     {"traffic[0].weights": "equal", "fabric.irn": {"rto_low": "1ms", "rto_high": "3200us"}}),
    ("lossless", "failed link, lossless, as in the sweep", {}),
    ("lossless", "failed link, lossless, no probe", {"traffic[0].weights": "equal"}),
    ("lossless", "failed link, lossless, 7 QPs on 7 addresses (one per spine left)",
     {"topology.ips_per_host": 7, "traffic[0].qps": 7}),
]


def _load(scenario: dict[str, Any]) -> float:
    t = scenario["traffic"][0]
    return float(t.get("load", t.get("workload", {}).get("load", float("nan"))))


@functools.cache
def _sweep_runs() -> tuple[RunSpec, ...]:
    return tuple(Sweep.from_file(SWEEP).expand())


def sweep_run(split: str | None, which: float | str) -> RunSpec:
    """The sweep's run of Virtuoso (`split = "virtuoso"`) or ECMP (`None`): the symmetric IRN
    run at host load `which`, or (`"lossless"`) the lossless run with the failed link at 0.35."""
    lossless = which == "lossless"
    load = 0.35 if lossless else which
    for spec in _sweep_runs():
        s = spec.scenario
        t = s["traffic"][0]
        if s.get("links") or bool(s.get("events")) != lossless or _load(s) != load:
            continue
        if (s["fabric"].get("loss_recovery") == "irn") == lossless:
            continue
        if split and t.get("split") == split or not split and s["fabric"].get("path_selection") == "ecmp":
            return spec
    raise LookupError(f"no run with split {split} for {which} in {SWEEP.name}")


def measure(spec: RunSpec, changes: dict[str, Any]) -> dict[str, float]:
    """Drops, timeouts and the avg / p99 slowdown below one BDP after the warm-up."""
    scenario = copy.deepcopy(spec.scenario)
    for path, value in changes.items():
        set_path(scenario, path, value)
    out = run(scenario, spec.base_dir)
    if out.messages.height:
        done = out.messages.filter(pl.col("fct_ns").is_not_nan()).with_columns(message_slowdown())
    else:
        done = out.flows.filter(pl.col("status") == "completed")
    small = done.filter((pl.col("start_ns") >= WARMUP_NS) & (pl.col("size") < BDP_BYTES))
    st = slowdown_stats(small["slowdown"].to_numpy())
    c = out.counters
    return {"drops": c["drops"], "timeouts": c["timeouts"], "p99": st["p99"], "avg": st["avg"], "wall": out.wall_s}


def rows_of(w: float | str) -> None:
    """The rows of one run of the sweep (a host load, or "lossless"), ECMP's last."""
    virtuoso = sweep_run("virtuoso", w)
    rows = [(label, virtuoso, ch) for key, label, ch in ROWS if key == w]
    rows.append(("ECMP's row, for reference", sweep_run(None, w), {}))
    for label, spec, changes in rows:
        r = measure(spec, changes)
        print(f"| {w} | {label} | {r['drops']:,} | {r['timeouts']:,} | {r['p99']:,.1f} ({r['avg']:.2f}) "
              f"| {r['wall']:.0f} |", flush=True)


#: One part per run of the sweep, all under one table's header.
INVESTIGATION = Investigation(
    "virtuoso_irn_causes", {str(w): functools.partial(rows_of, w) for w in (0.25, 0.35, "lossless")},
    ["0.25", "0.35", "lossless"],
    header="| run | change | drops | timeouts | p99 <BDP (avg) | wall s |\n|---|---|---|---|---|---|")

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
