"""Why ConWeave's NICs see packets out of order at high load (docs/lb-conweave.md,
"ConWeave at high load").

`python -m rdmalab.experiments.causes.conweave_causes [50] [80[:DURATION[:SCHEMES]]] [variants[:LOAD[:DURATION[:ROWS]]]]
[buffer[:MB[:DURATION[:LOAD]]]] [pfc_pause[:LOSS[:DURATION[:SCHEMES[:PAUSE]]]]]` runs the
`lb-conweave` base scenario (`lb_conweave.toml`: 128 hosts, 2:1 leaf-spine, DCQCN, lossless,
go-back-N) at that *network* load (the artifact's count: half of it on each NIC), for
`DURATION` of arrivals instead of 0.1 s (the 2-core machine), flows that start in the first
`WARMUP` dropped, and prints per scheme (ECMP, ConWeave) the avg / p99 slowdown, the
packets that reached a NIC out of order, NACKs, packets resent, and for ConWeave the
out-of-order packets by the cause the destination ToR saw (`reorder_ooo_<cause>`,
`fabric/lb/conweave/causes.rs`; `untracked` = the NICs' count minus the causes' sum: flows
the ToR's table did not follow, or packets lost) and the gaps opened by each cause, drops (of
them released packets the buffer refused, `reorder_release_drops`) and PFC pauses. `variants` runs ConWeave
at one load (80 by default) with one setting changed per row. `buffer` runs ECMP and ConWeave
with a small switch buffer (2 MB, 0.1 s, 50 % by default), and ConWeave with its held packets
admitted to the buffer only when released, as the artifact holds them outside its MMU.
`pfc_pause` runs the schemes lossless on links that lose 1e-3 of their packets (PFC frames
included), with PAUSE frames held until RESUME (the reference's) and with 802.1Qbb's pause time
and refreshes (`[fabric.pfc_pause]`).
"""

from __future__ import annotations

import copy
import functools
import sys
from typing import Any

import numpy as np
import polars as pl

from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.repro.base import HERE
from rdmalab.experiments.sweep import Sweep, set_path

SWEEP = HERE / "lb_conweave.toml"
#: Arrivals simulated (the sweep's are 0.1 s) and the start of the flows counted.
DURATION = "10ms"
WARMUP_NS = 1_000_000.0
CAUSES = ("deadline", "unheld", "epoch_held", "moved", "other", "unseen_start")

#: ConWeave with one setting changed (label, sweep paths -> value).
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("as in lb-conweave", {}),
    ("reorder queues per port 24 -> 1024 (the ns-3 artifact has no limit)", {"fabric.lb.conweave_queues": 1024}),
    ("flow table 2^16 -> 2^20 entries", {"fabric.lb.conweave_table": 1 << 20}),
    ("CNP on an out-of-order arrival (the artifact's NIC, rdma-hw.cc)", {"fabric.cnp_on_ooo": True}),
    ("NACK interval 500 us -> 4 us (the artifact's NIC, rdma-hw.cc)", {"fabric.nack_interval": "4us"}),
    ("the artifact's NIC: CNP on out-of-order and a 4 us NACK interval",
     {"fabric.cnp_on_ooo": True, "fabric.nack_interval": "4us"}),
    ("held packets outside the buffer, admitted on release (the ns-3 artifact)",
     {"fabric.lb.conweave_admit_on_release": True}),
    ("flow table 2^16 -> 2^18 entries", {"fabric.lb.conweave_table": 1 << 18}),
    # The tables became exact; the direct one is what the rows above ran with.
    ("the direct-mapped flow table (the earlier one)", {"fabric.lb.conweave_table_kind": "direct"}),
]


@functools.cache
def base_scenario() -> tuple[dict[str, Any], str]:
    """lb-conweave's lossless ECMP run (its scenario and base folder)."""
    for spec in Sweep.from_file(SWEEP).expand():
        f = spec.scenario["fabric"]
        if f.get("path_selection") == "ecmp" and f.get("loss_recovery", "go_back_n") == "go_back_n":
            return spec.scenario, spec.base_dir
    raise LookupError(f"no lossless ECMP run in {SWEEP.name}")


def measure(scheme: str, network_load: int, changes: dict[str, Any], duration: str = DURATION) -> dict[str, float]:
    """One run: slowdown (avg, p99) of the flows started after the warm-up, the counters."""
    scenario, base = base_scenario()
    scenario = copy.deepcopy(scenario)
    set_path(scenario, "fabric.path_selection", scheme)
    set_path(scenario, "traffic[0].load", network_load / 200)
    set_path(scenario, "traffic[0].duration", duration)
    for path, value in changes.items():
        set_path(scenario, path, value)
    out = run(scenario, base)
    done = out.flows.filter((pl.col("status") == "completed") & (pl.col("start_ns") >= WARMUP_NS))
    s = done["slowdown"].to_numpy()
    c = out.counters
    started = out.flows.filter(pl.col("start_ns") >= WARMUP_NS).height
    r = {"avg": float(s.mean()), "p99": float(np.percentile(s, 99)), "flows": len(s), "started": started,
         "wall": out.wall_s,
         "ooo": c["ooo_packets"], "nacks": c["nacks"], "retx": c["retx_packets"], "drops": c["drops"],
         "release_drops": c.get("reorder_release_drops", 0), "pauses": c["pauses"]}
    for k in CAUSES:
        r[k] = c.get(f"reorder_ooo_{k}", 0)
        r["gaps_" + k] = c.get(f"reorder_gaps_{k}", 0)
    r["untracked"] = r["ooo"] - sum(r[k] for k in CAUSES)
    for k in ("reorder_held", "reorder_timeouts", "reorder_unheld", "lb_reroutes", "lb_untracked"):
        r[k] = c.get(k, 0)
    return r


def row(label: str, r: dict[str, float]) -> str:
    causes = " | ".join(f"{r[k]:,} ({r['gaps_' + k]:,})" for k in CAUSES)
    return (f"| {label} | {r['avg']:.2f} | {r['p99']:.1f} | {r['ooo']:,} | {r['nacks']:,} | {r['retx']:,} | "
            f"{causes} | {r['untracked']:,} | {r['reorder_timeouts']:,} | {r['reorder_unheld']:,} | "
            f"{r['lb_reroutes']:,} | {r['drops']:,} ({r['release_drops']:,}) | {r['pauses']:,} | {r['wall']:.0f} |")


def at_load(network_load: str, duration: str = DURATION, schemes: str = "ecmp+conweave") -> None:
    """ECMP and ConWeave (or `schemes`, joined by +) at one network load (percent), for
    `duration` of arrivals."""
    for scheme in schemes.split("+"):
        label = f"{network_load} % | {scheme}" + (f" ({duration})" if duration != DURATION else "")
        print(row(label, measure(scheme, int(network_load), {}, duration)), flush=True)


def variants(network_load: str = "80", duration: str = DURATION, rows: str = "") -> None:
    """ConWeave at one load with one setting changed per row (`rows`: indices into
    `VARIANTS` joined by +, all by default), for `duration` of arrivals."""
    picked = [VARIANTS[int(i)] for i in rows.split("+")] if rows else VARIANTS
    for label, changes in picked:
        tag = f" ({duration})" if duration != DURATION else ""
        print(row(f"{network_load} % | conweave{tag}: {label}", measure("conweave", int(network_load), changes, duration)),
              flush=True)


#: The rows of `buffer`: lb-conweave-buffer's smallest buffer, where lossless ConWeave fell
#: behind ECMP (docs/lb-conweave.md), with the suspected cause removed in the last row.
BUFFER_ROWS: list[tuple[str, str, dict[str, Any]]] = [
    ("ecmp", "ecmp", {}),
    ("conweave", "conweave", {}),
    ("conweave: held packets outside the buffer, admitted on release (the ns-3 artifact)", "conweave",
     {"fabric.lb.conweave_admit_on_release": True}),
]


def at_buffer(mb: str = "2", duration: str = "100ms", network_load: str = "50") -> None:
    """ECMP, ConWeave, and ConWeave with held packets admitted on release, lossless, with a
    switch buffer of `mb` MB (lb-conweave-buffer's setting), `duration` of arrivals at
    `network_load` percent."""
    for label, scheme, changes in BUFFER_ROWS:
        r = measure(scheme, int(network_load), {"fabric.buffer_mb": int(mb), **changes}, duration)
        print(row(f"{network_load} % | {mb} MB, {duration} | {label}", r), flush=True)


def with_pause_time(loss: str = "1e-3", duration: str = DURATION, schemes: str = "ecmp+conweave",
                    pause: str = "held+timed") -> None:
    """Each scheme lossless with every link losing `loss` of its packets (lb-conweave-loss's
    setting, PFC frames included), its PAUSE frames held until their RESUME (`held`: the
    reference's model, in which lb-conweave-loss's ECMP row at 1e-3 stalled) and/or carrying
    802.1Qbb's pause time with refreshes (`timed`: `[fabric.pfc_pause]` at its defaults),
    `duration` of arrivals at 50 %."""
    for scheme in schemes.split("+"):
        for kind in pause.split("+"):
            changes: dict[str, Any] = {"fabric.error_rate": float(loss)}
            if kind == "timed":
                changes["fabric.pfc_pause"] = {}
            elif kind != "held":
                raise ValueError(f"pfc_pause: `{kind}` is neither held nor timed")
            r = measure(scheme, 50, changes, duration)
            label = f"50 % | {scheme}, loss {loss}, {duration}, PAUSE {kind}, {r['flows']:,} of {r['started']:,} flows done"
            print(row(label, r), flush=True)


HEADER = ("| load | scheme | avg | p99 | out of order at NICs | NACKs | resent | "
          + " | ".join(f"{k} (gaps)" for k in CAUSES)
          + " | no cause (untracked flows, losses) | queues released by deadline | unheld | reroutes "
          + "| drops (at release) | PFC pauses | wall s |\n"
          + "|---" * (14 + len(CAUSES)) + "|")

INVESTIGATION = Investigation(
    "conweave_causes", {"50": functools.partial(at_load, "50"), "80": functools.partial(at_load, "80"),
                        "variants": variants, "buffer": at_buffer, "pfc_pause": with_pause_time},
    ["50", "80"], header=HEADER)

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
