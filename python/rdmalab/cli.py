"""The `rdmalab` command line.

    rdmalab demo [--out DIR]             the built-in default scenario: summary + figure
    rdmalab run SCENARIO.toml --out DIR  a scenario file
    rdmalab hpcc CONFIG                  drop-in for the ns-3 HPCC simulator's `third CONFIG`
    rdmalab drum ...                     the DRUM resource-scheduling solver
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _write_outputs(results, out: Path, title: str) -> None:
    from rdmalab.plots import slowdown_by_size

    out.mkdir(parents=True, exist_ok=True)
    results.write_fct(out / "fct.txt")
    results.write_pfc(out / "pfc.txt")
    results.flows.write_parquet(out / "flows.parquet")
    results.ports.write_parquet(out / "ports.parquet")
    results.messages.write_parquet(out / "messages.parquet")
    results.chunks.write_parquet(out / "chunks.parquet")
    figs = slowdown_by_size(results, out / "slowdown", title=title)
    mp = f", {out / 'messages.parquet'}, {out / 'chunks.parquet'}" if results.messages.height else ""
    print(f"\nwrote {out / 'fct.txt'}, {out / 'pfc.txt'}, {out / 'flows.parquet'}{mp}, {figs[0]} (+ .pdf)")


def cmd_demo(args: argparse.Namespace) -> int:
    from rdmalab import Scenario, run

    scenario = Scenario.default()
    print("rdmalab demo: k=4 fat tree (16 hosts, 100G), FB Hadoop sizes, 30% load, 5 ms of arrivals, no CC")
    results = run(scenario, progress=not args.quiet)
    print(results.summary())
    _write_outputs(results, Path(args.out), "demo: k=4 fat tree, FB Hadoop, 30% load")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from rdmalab import run

    results = run(args.scenario, progress=not args.quiet)
    print(results.summary())
    _write_outputs(results, Path(args.out), Path(args.scenario).stem)
    return 130 if results.interrupted else 0


def cmd_hpcc(args: argparse.Namespace) -> int:
    from rdmalab import run_hpcc

    results, fct, pfc = run_hpcc(args.config, progress=not args.quiet)
    print(results.summary())
    print(f"\nwrote {fct} and {pfc}")
    return 130 if results.interrupted else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run the built-in default scenario")
    p.add_argument("--out", default="out/demo", help="output folder (default out/demo)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("run", help="run a scenario TOML file")
    p.add_argument("scenario")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("hpcc", help="run an ns-3 HPCC simulator config (drop-in for `third CONFIG`)")
    p.add_argument("config")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_hpcc)
    from rdmalab.drum import cli as drum_cli
    from rdmalab.experiments import cli as experiments_cli

    drum_cli.register(sub)
    experiments_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as e:
        print(f"rdmalab: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"rdmalab: run failed: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
