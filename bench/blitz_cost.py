#!/usr/bin/env python3
"""What a full `blitz-incast` costs, and on what (docs/benchmarks.md, "What a full
blitz-incast costs"; issue 42).

Runs one period (100 ms, the full sweep's) of the full sweep's d = 16 scenario under IB CC
(`blitz_round.d16_scenario` with the full file's period and rate-sample interval, one round,
stopped 1 ms after the period), then the same without the long flow and without the incast,
each once on the sequential engine through `examples/event_profile.rs` (built with the
`event-profile` feature), and prints per variant: the events by kind, data packets, packet
hops, the wall time and events per second; then the full sweep's cost extrapolated from it
(every run is 9.906 s of simulated time: the long flow's part scales with it; 4 schemes x 4
degrees x 3 seeds = 48 runs per set).

    cargo build --release -p rdmalab --features event-profile --example event_profile
    .venv/bin/python bench/blitz_cost.py --bin $CARGO_TARGET_DIR/release/examples/event_profile
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from rdmalab import Scenario
from rdmalab.experiments.repro.blitz_round import NO_LONG_FLOW, d16_scenario

#: The full sweep (`blitz_incast.toml`): simulated seconds per run, runs per set.
FULL_STOP_S, FULL_RUNS = 9.906, 4 * 4 * 3
PERIOD_S = 0.1


def scenario(changes: dict) -> dict:
    """One full-length period of the d = 16 round under IB CC, with `changes`."""
    sc, _ = d16_scenario("ib", {}, rounds=1, changes={"traffic[1].period": "100ms"} | changes)
    sc["fabric"]["rate_sample_interval"] = "1ms"
    sc["stop_time"] = "101ms"
    return sc


VARIANTS = {
    "d = 16 round + long flow (the full sweep's)": {},
    "no long flow": NO_LONG_FLOW,
    "no incast (the long flow alone)": {"traffic[1]": None},
}


def profile(binary: str, sc: dict, tmp: Path) -> dict:
    path = tmp / "s.toml"
    Scenario(sc).to_toml(path)
    out = subprocess.run([binary, str(path)], check=True, capture_output=True, text=True).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("JSON "))[5:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="examples/event_profile built with --features event-profile")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: profile(args.bin, scenario(ch), Path(tmp)) for name, ch in VARIANTS.items()}
    kinds = sorted({k for r in rows.values() for k in r["by_kind"]})
    print("| variant (101 ms) | events | " + " | ".join(kinds) + " | data packets | packet hops | wall s | Mevents/s |")
    print("|---" * (len(kinds) + 6) + "|")
    for name, r in rows.items():
        by = " | ".join(str(r["by_kind"].get(k, 0)) for k in kinds)
        print(f"| {name} | {r['events']} | {by} | {r['data_packets_sent']} | {r['packet_hops']} | "
              f"{r['wall_s']:.2f} | {r['events'] / r['wall_s'] / 1e6:.1f} |")
    full = rows["d = 16 round + long flow (the full sweep's)"]
    alone = rows["no incast (the long flow alone)"]
    print(f"- the long flow alone is {alone['events'] / full['events']:.1%} of the period's events and "
          f"{alone['wall_s'] / full['wall_s']:.1%} of its wall time")
    per_run = full["wall_s"] * FULL_STOP_S / (PERIOD_S + 0.001)
    print(f"- extrapolated: one full run ({FULL_STOP_S} s simulated) ~ {per_run:.0f} s, "
          f"{full['events'] * FULL_STOP_S / (PERIOD_S + 0.001) / 1e6:.0f} M events; "
          f"{FULL_RUNS} runs per set ~ {per_run * FULL_RUNS / 3600:.2f} CPU-hours at this machine's load")


if __name__ == "__main__":
    main()
