"""Chakra execution traces written from a scenario's workload (docs/chakra.md, "Writing traces").

    >>> from rdmalab import chakra
    >>> out = chakra.export("examples/simai.toml", "traces/simai")   # traces/simai.<rank>.et
    >>> out.traffic                     # the [[traffic]] entry that runs them again
    >>> res = rdmalab.run(out.replay(Scenario.from_toml("examples/simai.toml")))

    rdmalab chakra export SCENARIO.toml --out PREFIX

The writer is the engine's (`formats::chakra::write`, `write_simai`); this module only hands it
the scenario and reads back what it wrote.
"""

from __future__ import annotations

import argparse
import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9 and 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[no-redef]

from rdmalab import _core
from rdmalab.scenario import Scenario


@dataclass
class ChakraExport:
    """What `export` wrote."""

    files: list[Path]        #: the trace files, rank 0 first
    hosts: list[int]         #: the host of each rank
    traffic: dict[str, Any]  #: the `[[traffic]] kind = "chakra"` entry that runs them
    traffic_toml: str        #: the same entry as TOML
    notes: list[str] = field(default_factory=list)  #: what the traces round (compute to whole microseconds)

    def replay(self, scenario: Scenario) -> Scenario:
        """`scenario` with its workload (`[[collective]]` list and SimAI traffic) replaced by
        the traces: the same run, read back through the Chakra reader."""
        new = copy.deepcopy(scenario)
        new.spec.pop("collective", None)
        new.spec["traffic"] = [t for t in new.spec.get("traffic", []) if t.get("kind") != "simai"] + [
            dict(self.traffic)]
        new.source = None
        return new


def export(scenario: Scenario | str | Path, prefix: str | Path) -> ChakraExport:
    """Writes the workload of `scenario` (a `Scenario` or a TOML file) as the Chakra traces
    `<prefix>.<rank>.et`: its `[[collective]]` list (rank i on the i-th host any collective
    names, in host order; each iteration a collective node after the one before, a `start` as
    compute before the first) or its SimAI workload (SimAI rank i as rank i, one iteration in
    SimAI's order). The entry names the traces by their absolute prefix. Errors name the
    scenario's file and field."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.from_toml(Path(scenario))
    # Absolute, so that the entry runs from any scenario file's folder.
    prefix = Path(prefix).resolve()
    prefix.parent.mkdir(parents=True, exist_ok=True)
    text = scenario.toml_source()
    if text is not None and scenario.path is not None:
        raw = _core.chakra_export(text, str(scenario.path), str(prefix))
    else:
        raw = _core.chakra_export(scenario.to_json(), scenario.base_dir(), str(prefix), json=True)
    entry = tomllib.loads(raw["traffic"])["traffic"][0]
    return ChakraExport([Path(f) for f in raw["files"]], list(raw["hosts"]), entry, raw["traffic"],
                        list(raw["notes"]))


def cmd_export(args: argparse.Namespace) -> int:
    out = export(Path(args.scenario), args.out)
    print(f"wrote {len(out.files)} trace file(s): {args.out}.0.et .. {args.out}.{len(out.files) - 1}.et")
    for note in out.notes:
        print(f"note: {note}")
    print("\nrun them with:\n\n" + out.traffic_toml)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """`rdmalab chakra export`."""
    p = sub.add_parser("chakra", help="write a scenario's workload as Chakra execution traces",
                       description="Chakra execution traces (docs/chakra.md).")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB", help="one of:")
    e = verbs.add_parser("export", help="write a scenario's [[collective]] list or SimAI workload as traces",
                         description="Writes the workload of a scenario file (its [[collective]] list, or its "
                                     "[[traffic]] kind = \"simai\") as Chakra execution traces, one per rank: "
                                     "PREFIX.0.et, PREFIX.1.et, ... Prints the [[traffic]] kind = \"chakra\" "
                                     "entry that runs them again on the same hosts with the same algorithms, "
                                     "chunk and channels.")
    e.add_argument("scenario", help="scenario TOML file")
    e.add_argument("--out", required=True, help="the traces' prefix (PREFIX.<rank>.et; folders are created)")
    e.set_defaults(func=cmd_export)
