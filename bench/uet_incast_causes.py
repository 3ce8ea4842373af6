#!/usr/bin/env python3
"""What makes UET's incasts in `uec-vs-roce` lose time: the sweep's own incast runs, each
again with one setting changed, and what each delivers, trims and times out.

    python3 bench/uet_incast_causes.py [--workloads incast-128,incast-1024] [--quick]

The scenarios are the sweep's (`uec_vs_roce_sweep.runs`, seed 1, one thread); a row marked
`as swept` is the run `rdmalab repro run uec-vs-roce` makes. The changes, one at a time:

- `rto 1ms`, `rto 10ms`: UET's retransmission timeout (`fabric.uet.rto`, 100 us in the
  sweep: the constant htsim's UEC sender starts from) longer than the queueing delay the
  incast builds. htsim's own driver sets it from the queue instead (15 us plus six times a
  full queue's drain time), which on the sweep's 32 MiB shared buffer is milliseconds.
- `header in data class`: trimmed headers queued in the data packets' class (3) instead of
  the strict-priority class 0, so that they wait behind the data and take buffer.

The printed table is markdown: workload, variant, change, flows done, delivered / offered
payload, span over the receiver link's bound (when every flow finished), trims, resent
packets, NACKs, timeouts, drops, how the run ended and its wall seconds.
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any, Callable

import rdmalab
from rdmalab import Scenario
from rdmalab.experiments.repro import uec_vs_roce_sweep as sweep

DEFAULT = "incast-128,incast-1024"
VARIANTS = ("uet-ops-trim", "uet-ops", "uet-rccc-ops-trim")


def _rto(value: str) -> Callable[[dict[str, Any]], bool]:
    def change(t: dict[str, Any]) -> bool:
        t["fabric"]["uet"] = {**t["fabric"].get("uet", {}), "rto": value}
        return True
    return change


def _data_class(t: dict[str, Any]) -> bool:
    if "trimming" not in t["fabric"]:
        return False  # nothing is trimmed: the change does not apply
    t["fabric"]["trimming"] = {**t["fabric"]["trimming"], "class": 3}
    return True


#: (label, the change to a run's tables; False: it does not apply to that run).
CHANGES: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = (
    ("as swept", lambda t: True),
    ("rto 1ms", _rto("1ms")),
    ("rto 10ms", _rto("10ms")),
    ("header in data class", _data_class),
)


def row(v: sweep.Variant, w: sweep.Workload, label: str, tables: dict[str, Any]) -> str:
    t0 = time.time()
    res = rdmalab.run(Scenario(tables), progress=False, threads=1)
    c = res.counters
    senders, size = w.incast
    offered = senders * size
    done = c["flows_completed"] == c["flows_total"]
    ratio = f"{c['last_completion_ps'] / 1e6 / w.incast_bound_us():.3f}" if done else ""
    return (f"| {w.name} | {v.name} | {label} | {c['flows_completed']}/{c['flows_total']} | "
            f"{c['payload_bytes_delivered'] / offered:.4f} | {ratio} | {c.get('trims', 0):,} | "
            f"{c['retx_packets']:,} | {c['nacks']:,} | {c['timeouts']:,} | {c['drops']:,} | "
            f"{res.stop_reason} | {time.time() - t0:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=DEFAULT, help=f"comma-separated (default {DEFAULT})")
    ap.add_argument("--quick", action="store_true", help="the quick sweep's incasts (incast-8,16,32)")
    ap.add_argument("--changes", default=",".join(lbl for lbl, _ in CHANGES),
                    help="comma-separated labels of the changes to run")
    a = ap.parse_args()
    names, wanted = a.workloads.split(","), a.changes.split(",")
    print("| workload | variant | change | flows done | delivered / offered | span / bound | trims | retx | "
          "NACKs | timeouts | drops | end | wall s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for v, w in sweep.runs(a.quick):
        if w.incast is None or v.name not in VARIANTS or (w.name not in names and not a.quick):
            continue
        base = {k: x for k, x in sweep.scenario_tables(v, w).items() if x}
        base["seed"] = 1
        for label, change in CHANGES:
            tables = copy.deepcopy(base)
            if label in wanted and change(tables):
                print(row(v, w, label, tables), flush=True)


if __name__ == "__main__":
    main()
