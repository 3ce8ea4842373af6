#!/usr/bin/env python3
"""What a full `blitz-incast` costs, and on what: a full run is some 326 M events, nearly all
of them the long flow's (332,000 data packets a period at 10 events each; the incast adds 0.6 %).

Runs one period (100 ms, the full sweep's) of the full sweep's d = 16 scenario under IB CC
(`blitz_round.d16_scenario` with the full file's period and rate-sample interval, one round,
stopped 1 ms after the period), then the same without the long flow and without the incast,
each once on the sequential engine through `examples/event_profile.rs` (built with the
`event-profile` feature), and prints per variant: the events by kind, data packets, packet
hops, the wall time and events per second; then the full sweep's cost extrapolated from it
(every run is 9.906 s of simulated time: the long flow's part scales with it; 4 schemes x 4
degrees x 3 seeds = 48 runs per set).

    cargo build --release -p rdmalab --features event-profile --example event_profile
    .venv/bin/python bench/blitz_cost.py --bin ${CARGO_TARGET_DIR:-target}/release/examples/event_profile
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import tempfile
from pathlib import Path

from rdmalab import Scenario
from rdmalab.experiments.repro.blitz_round import NO_LONG_FLOW, d16_scenario

#: The full sweep (`blitz_incast.toml`): simulated seconds per run, runs per set.
FULL_STOP_S, FULL_RUNS = 9.906, 4 * 4 * 3
PERIOD_S = 0.1


def scenario(changes: dict, periods: int = 1) -> dict:
    """`periods` full-length periods of the d = 16 round under IB CC, with `changes`."""
    sc, _ = d16_scenario("ib", {}, rounds=periods, changes={"traffic[1].period": "100ms"} | changes)
    sc["fabric"]["rate_sample_interval"] = "1ms"
    sc["stop_time"] = f"{100 * periods + 1}ms"
    return sc


#: label -> (changes, periods)
VARIANTS = {
    "d = 16 round + long flow (the full sweep's)": ({}, 1),
    "no long flow": (NO_LONG_FLOW, 1),
    "no incast (the long flow alone)": ({"traffic[1]": None}, 1),
    "d = 16 + long flow, 10 periods": ({}, 10),
}


def profile(binary: str, sc: dict, tmp: Path) -> dict:
    path = tmp / "s.toml"
    Scenario(sc).to_toml(path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, str(path)], check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = json.loads(next(line for line in out.splitlines() if line.startswith("JSON "))[5:])
    # The child's CPU (user + system), setup and results included: what a busy machine does
    # not inflate, unlike the wall time.
    r["cpu_s"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="examples/event_profile built with --features event-profile")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: profile(args.bin, scenario(ch, n), Path(tmp)) for name, (ch, n) in VARIANTS.items()}
    kinds = sorted({k for r in rows.values() for k in r["by_kind"]})
    print("| variant | events | " + " | ".join(kinds) + " | data packets | packet hops | run s (wall) | CPU s "
          "| Mevents per CPU s |")
    print("|---" * (len(kinds) + 7) + "|")
    for name, r in rows.items():
        by = " | ".join(str(r["by_kind"].get(k, 0)) for k in kinds)
        print(f"| {name} | {r['events']} | {by} | {r['data_packets_sent']} | {r['packet_hops']} | "
              f"{r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['events'] / r['cpu_s'] / 1e6:.1f} |")
    full = rows["d = 16 round + long flow (the full sweep's)"]
    alone = rows["no incast (the long flow alone)"]
    ten = rows["d = 16 + long flow, 10 periods"]
    print(f"- the long flow alone is {alone['events'] / full['events']:.1%} of the period's events; "
          f"{full['packet_hops'] / full['data_packets_sent']:.1f} packet hops and "
          f"{full['events'] / full['data_packets_sent']:.1f} events per data packet")
    sim_s = FULL_STOP_S / (10 * PERIOD_S + 0.001)
    print(f"- one full run ({FULL_STOP_S} s simulated), from the 10 periods: {ten['events'] * sim_s / 1e6:.0f} M events, "
          f"{ten['cpu_s'] * sim_s:.0f} CPU s; {FULL_RUNS} runs per set: {ten['cpu_s'] * sim_s * FULL_RUNS / 3600:.2f} "
          f"CPU-hours")


if __name__ == "__main__":
    main()
