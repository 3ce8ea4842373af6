"""Why our Fig. 8 (the Virtuoso paper) shows no extra cycles for small messages, by the run that moves
the one setting suspected (docs/virtuoso.md, "CPU cost model").

`python -m rdmalab.experiments.causes.virtuoso_overhead_causes` takes `virtuoso-overhead`'s own
full runs of the 100 KB message (three verbs, 1-10 paths) and reruns each with
`small_message` at 64 KiB instead of our default 512 KiB (the probe's minimum; the paper gives
no value). Below `small_message` a message is one WR on one path (§3.4), so with our default
the 100 KB message never meets the paths; below the message size it is split like a large one.
Prints the predicted k cycles per message (`figures.virtuoso.cpu_cycles`) and per MB, with
the WRs / CQEs counted. Under a second.
"""

from __future__ import annotations

import copy
import sys

from rdmalab.experiments import repro
from rdmalab.experiments.causes.base import Investigation, run
from rdmalab.experiments.figures.virtuoso import cpu_cycles
from rdmalab.experiments.sweep import Sweep

#: The message of Fig. 8's smallest size, and the two thresholds compared.
SMALL_SIZE = 100_000
THRESHOLDS = (524_288, 65_536)


def cycles_table() -> list[tuple[str, int, int, float, int, int]]:
    """(verb, paths, small_message, k cycles, WRs, CQEs) for every 100 KB run of the sweep."""
    runs = Sweep.from_file(repro.get("virtuoso-overhead").sweep_path(quick=False)).expand()
    out = []
    for r in runs:
        traffic = r.scenario["traffic"][0]
        if traffic["messages"][0]["size"] != SMALL_SIZE:
            continue
        for threshold in THRESHOLDS:
            scenario = copy.deepcopy(r.scenario)
            scenario["traffic"][0]["small_message"] = threshold
            m = run(scenario, r.base_dir).messages.row(0, named=True)
            cycles = cpu_cycles(m["wrs"], m["cqes"])
            out.append((traffic["messages"][0]["verb"], traffic["qps"], threshold, cycles / 1e3, m["wrs"], m["cqes"]))
    return out


def table() -> None:
    rows = cycles_table()
    paths = sorted({r[1] for r in rows})
    print("| 100 KB message, small_message | " + " | ".join(f"{n} paths" for n in paths) + " |")
    print("|---|" + "---|" * len(paths))
    for verb in ("read", "send", "write"):
        for threshold in THRESHOLDS:
            cells = {r[1]: r for r in rows if r[0] == verb and r[2] == threshold}
            line = " | ".join(f"{cells[n][3]:.1f} ({cells[n][4]}/{cells[n][5]})" for n in paths)
            print(f"| {verb}, {threshold // 1024} KiB | {line} |")
    print(f"(k cycles per message, WRs/CQEs; per MB multiply by {1e6 / SMALL_SIZE:g})")


INVESTIGATION = Investigation("virtuoso_overhead_causes", {"table": table}, ["table"])

if __name__ == "__main__":
    sys.exit(INVESTIGATION.main())
