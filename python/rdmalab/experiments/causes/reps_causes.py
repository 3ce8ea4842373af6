"""Which setting puts REPS behind oblivious spraying on `uec-vs-roce`'s permutations, when on
the REPS paper's own setup (`reps-nscc-permutation`, docs/reps-paper.md) it is ahead.

`python -m rdmalab.experiments.causes.reps_causes [settings[:SIZE]] [acks[:SIZE]]` runs the full
`reps-nscc-permutation` scenario (128 hosts, 400 Gb/s, NSCC, the artifact's settings) with
oblivious spraying and with REPS, first as shipped and then with one setting moved at a time
to the value `uec-vs-roce` runs (docs/uec-vs-roce.md), and last with all of them moved
together; SIZE (bytes per flow, default the sweep's 8 MiB) scales the flows. Each row prints
both sprayings' p50 and p99 FCT, REPS's p99 over OPS's, and the trims of each. `acks` runs
the shipped scenario with one ACK every 1, 2, 4, 8 and 16 packets.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.repro import uec_vs_roce_sweep as uec
from rdmalab.experiments.repro.base import HERE
from rdmalab.experiments.sweep import RunSpec, Sweep, set_path

SWEEP = HERE / "reps_nscc_perm.toml"


#: uec-vs-roce's 1:1 permutation under UET with REPS and trimming: the scenario whose
#: settings the rows move to.
_UEC_W = next(w for w in uec.workloads(False) if w.name == "perm-1to1")
_UEC_V = next(v for v in uec.VARIANTS if v.name == "uet-reps-trim")
UEC_TABLES = uec.scenario_tables(_UEC_V, _UEC_W)
#: UET's ACK coalescing and entropy count where a scenario leaves them unset, as uec-vs-roce
#: does (docs/uet.md's defaults).
UET_DEFAULTS = {"ack_every": 4, "entropies": 256}


def _marking_at(rate: str) -> dict[str, Any]:
    """uec-vs-roce's NSCC marking (from its target queue on) on its permutation fabric at `rate`."""
    w = dataclasses.replace(_UEC_W, topology={**_UEC_W.topology, "host_rate": rate})
    return {f"fabric.{k}": v for k, v in uec.nscc_marking(w).items()}


#: uec-vs-roce's value of each setting that differs, as sweep paths -> value.
UEC = {
    "ack": {"fabric.uet.ack_every": UET_DEFAULTS["ack_every"]},
    "entropies": {"fabric.uet.entropies": UET_DEFAULTS["entropies"]},
    "marking": _marking_at("400Gbps"),
    "mtu": {"fabric.mtu": UEC_TABLES["fabric"]["mtu"]},
    "rate": {"topology.host_rate": _UEC_W.topology["host_rate"], "topology.fabric_rate": _UEC_W.topology["fabric_rate"]},
}
#: Every setting at uec-vs-roce's value: its 1:1 fabric's rate, MTU, ACKs, entropies, its
#: marking at NSCC's target, its trimming threshold (one path BDP) and its RTO (htsim's
#: driver's rule over that threshold).
ALL = {**UEC["ack"], **UEC["entropies"], **UEC["mtu"], **UEC["rate"], **_marking_at(_UEC_W.topology["host_rate"]),
       "fabric.trimming.threshold_kb": UEC_TABLES["fabric"]["trimming"]["threshold_kb"],
       "fabric.uet.rto": UEC_TABLES["fabric"]["uet"]["rto"]}

ROWS: list[tuple[str, dict[str, Any]]] = [
    ("as in reps-nscc-permutation", {}),
    ("ACK every 4 packets, not every packet", UEC["ack"]),
    ("256 entropy values, not 65,535", UEC["entropies"]),
    ("ECN from NSCC's target on (300 KB), not from 25 to 76 packets", UEC["marking"]),
    ("1 KiB packets, not 4 KiB", UEC["mtu"]),
    ("100 Gb/s links, not 400", UEC["rate"]),
    ("all of uec-vs-roce's settings (100 Gb/s, 1 KiB, ACK/4, 256 EVs, ECN at 75 KB, trim at 100 KB, RTO auto)", ALL),
    ("all of uec-vs-roce's settings but an ACK for every packet", {**ALL, "fabric.uet.ack_every": 1}),
]


@functools.cache
def _specs() -> dict[str, RunSpec]:
    return {s.scenario["fabric"]["path_selection"]: s for s in Sweep.from_file(SWEEP).expand()}


def measure(selection: str, changes: dict[str, Any], size: int | None) -> dict[str, float]:
    """p50/p99 FCT (us), flows completed and trims of one spraying with `changes`."""
    spec = _specs()[selection]
    scenario = copy.deepcopy(spec.scenario)
    for path, value in changes.items():
        set_path(scenario, path, value)
    if size:
        scenario["traffic"][0]["size"] = size
    out = run(scenario, spec.base_dir)
    done = out.flows.filter(pl.col("status") == "completed")
    fct = done["fct_ns"].to_numpy() / 1e3
    return {"p50": float(np.percentile(fct, 50)), "p99": float(np.percentile(fct, 99)),
            "done": done.height, "flows": out.flows.height, "trims": out.counters.get("trims", 0),
            "wall": out.wall_s}


def settings(size: str = "") -> None:
    """The rows: OPS and REPS as shipped, one setting moved at a time, then all together."""
    n = int(size) if size else None
    for label, changes in ROWS:
        ops, reps = measure("ev_spray", changes, n), measure("reps", changes, n)
        print(f"| {label} | {ops['p50']:,.1f} / {ops['p99']:,.1f} | {reps['p50']:,.1f} / {reps['p99']:,.1f} | "
              f"{reps['p99'] / ops['p99']:.3f} | {ops['trims']:,} / {reps['trims']:,} | "
              f"{ops['done'] + reps['done']}/{ops['flows'] + reps['flows']} | {ops['wall'] + reps['wall']:.0f} |",
              flush=True)


def acks(size: str = "") -> None:
    """The rows of ACK coalescing alone: one ACK every 1, 2, 4, 8 and 16 packets (the
    paper's own sweep of the receiver's ACK threshold, run here under NSCC)."""
    n = int(size) if size else None
    for every in (1, 2, 4, 8, 16):
        changes = {"fabric.uet.ack_every": every}
        ops, reps = measure("ev_spray", changes, n), measure("reps", changes, n)
        print(f"| ACK every {every} packets | {ops['p50']:,.1f} / {ops['p99']:,.1f} | {reps['p50']:,.1f} / "
              f"{reps['p99']:,.1f} | {reps['p99'] / ops['p99']:.3f} | {ops['trims']:,} / {reps['trims']:,} | "
              f"{ops['done'] + reps['done']}/{ops['flows'] + reps['flows']} | {ops['wall'] + reps['wall']:.0f} |",
              flush=True)


INVESTIGATION = Investigation(
    "reps_causes", {"settings": settings, "acks": acks}, ["settings", "acks"],
    header="| change | OPS p50 / p99 us | REPS p50 / p99 us | REPS p99 / OPS p99 | trims OPS / REPS | flows done | "
           "wall s |\n|---|---:|---:|---:|---:|---:|---:|")

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
