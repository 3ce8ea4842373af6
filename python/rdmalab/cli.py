"""rdmalab: packet-level simulation of lossless RDMA fabrics.

    rdmalab demo [--out DIR]               the built-in default scenario: summary + figure
    rdmalab run SCENARIO.toml [--out DIR]  a scenario file: summary, every table, figure
    rdmalab hpcc CONFIG                    drop-in for the ns-3 HPCC simulator's `third CONFIG`
    rdmalab sweep SWEEP.toml --out DIR     a grid of scenarios into a Parquet results store
    rdmalab plot DIR                       figures of a sweep (slowdown, CDF, queues, rates, PFC)
    rdmalab repro list | run NAME          paper experiments: sweep, figure, numbers beside the paper's
    rdmalab drum solve | bench             the DRUM resource-scheduling solver

`rdmalab COMMAND --help` explains each command's options.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _prepare_out(out: Path, force: bool) -> None:
    """Refuses to mix a new run's files with an old run's, unless asked to."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"--out {out}: folder is not empty (a previous run?); give --force to overwrite, "
                         "or another --out")
    out.mkdir(parents=True, exist_ok=True)


def _write_outputs(results, out: Path, title: str) -> None:
    """Every table the run produced, the reference's text files, and the slowdown figure."""
    from rdmalab.plots import slowdown_by_size

    written = [out / "fct.txt", out / "pfc.txt"]  # and messages/chunks with multipath traffic
    results.write_fct(written[0])
    results.write_pfc(written[1])
    for name, table in results.tables().items():
        path = out / f"{name}.parquet"
        table.write_parquet(path)
        written.append(path)
    if results.trace is not None:
        written.append(results.extra["trace_path"])
    figs = slowdown_by_size(results, out / "slowdown", title=title)
    print(f"\nwrote {', '.join(p.name for p in written)}, {figs[0].name} (+ .pdf) in {out}")


def cmd_demo(args: argparse.Namespace) -> int:
    from rdmalab import Scenario, run

    scenario = Scenario.default()
    print("rdmalab demo: k=4 fat tree (16 hosts, 100G), FB Hadoop sizes, 30% load, 5 ms of arrivals, no CC")
    out = Path(args.out)
    _prepare_out(out, force=True)  # the demo's folder is the demo's own
    results = run(scenario, progress=not args.quiet)
    print(results.summary())
    _write_outputs(results, out, "demo: k=4 fat tree, FB Hadoop, 30% load")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from rdmalab import run

    from rdmalab import Scenario
    from rdmalab.results import describe

    out = Path(args.out) if args.out else Path("out") / Path(args.scenario).stem
    _prepare_out(out, args.force)
    results = run(args.scenario, progress=not args.quiet, trace_path=out / "trace.parquet")
    print(results.summary())
    title = f"{Path(args.scenario).stem}: {describe(Scenario.from_toml(args.scenario), results)}"
    _write_outputs(results, out, title)
    return 130 if results.interrupted else 0


def cmd_hpcc(args: argparse.Namespace) -> int:
    from rdmalab import run_hpcc

    results, fct, pfc = run_hpcc(args.config, progress=not args.quiet)
    print(results.summary())
    extra = [str(p) for p in (results.extra.get("trace_path"), results.extra.get("qlen_path")) if p]
    print(f"\nwrote {', '.join([fct, pfc] + extra)}")
    return 130 if results.interrupted else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of:")
    p = sub.add_parser("demo", help="run the built-in default scenario",
                       description="A k=4 fat tree (16 hosts, 100 Gb/s), FB Hadoop flow sizes at 30 %% load "
                                   "for 5 ms, no congestion control: summary, tables and figure.")
    p.add_argument("--out", default="out/demo", help="output folder, overwritten (default out/demo)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("run", help="run a scenario TOML file",
                       description="Runs a scenario file (README, 'Scenario files'), prints the summary and "
                                   "writes fct.txt and pfc.txt (the ns-3 HPCC formats), flows/ports.parquet, "
                                   "queues.parquet and rates.parquet when sampled, and slowdown.png/.pdf.")
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--out", help="output folder (default out/<scenario file stem>/); must be empty or new")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder, replacing its files")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("hpcc", help="run an ns-3 HPCC simulator config (drop-in for `third CONFIG`)",
                       description="Reads the reference's config keys (paths relative to the current folder, "
                                   "as `third` does) and writes its FCT_OUTPUT_FILE and PFC_OUTPUT_FILE in its "
                                   "formats. Keys not implemented are errors naming key and line.")
    p.add_argument("config", help="the reference's config file (e.g. config.txt)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
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
