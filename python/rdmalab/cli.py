"""The `rdmalab` command line.

    rdmalab demo [--out DIR]             the built-in default scenario: summary + figure
    rdmalab run SCENARIO.toml --out DIR  a scenario file
    rdmalab hpcc CONFIG                  drop-in for the ns-3 HPCC simulator's `third CONFIG`
    rdmalab drum ...                     the DRUM resource-scheduling solver

Exit status of `run` and `hpcc`: 0 the run ended normally (finished or at its stop time);
2 bad input; 3 a PFC deadlock was found (its cycle is printed last); 4 the run stalled (no
progress possible; the cause is printed last); 5 the run failed an internal check; 130 Ctrl-C.
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
    if results.paths.height:
        results.paths.write_parquet(out / "paths.parquet")
    host = []
    for name in ("wqes", "apps", "drum"):  # closed-loop applications (docs/drum-fabric.md)
        table = getattr(results, name)
        if table.height:
            table.write_parquet(out / f"{name}.parquet")
            host.append(str(out / f"{name}.parquet"))
    figs = slowdown_by_size(results, out / "slowdown", title=title)
    mp = f", {out / 'messages.parquet'}, {out / 'chunks.parquet'}" if results.messages.height else ""
    mp += "".join(f", {p}" for p in host)
    print(f"\nwrote {out / 'fct.txt'}, {out / 'pfc.txt'}, {out / 'flows.parquet'}{mp}, {figs[0]} (+ .pdf)")


#: Exit statuses (see the module doc).
EXIT_BAD_INPUT, EXIT_DEADLOCK, EXIT_STALLED, EXIT_FAILED, EXIT_INTERRUPTED = 2, 3, 4, 5, 130


def run_status(results) -> int:
    """Prints the run's last line when it did not end normally, and returns its exit status."""
    if results.interrupted:
        return EXIT_INTERRUPTED
    if results.counters.get("deadlocks", 0) > 0:
        d = results.deadlock.row(0, named=True)
        hops = ", ".join(f"({n}, {p}, {q})" for n, p, q in results.cycle())
        print(f"rdmalab: PFC deadlock formed at {d['formed_ns'] / 1e3:.3f} us: cycle of (node, port, priority) "
              f"{hops}")
        return EXIT_DEADLOCK
    if results.stop_reason == "stalled":
        print(f"rdmalab: stalled: {results.stall_cause or 'no progress possible'}")
        return EXIT_STALLED
    return 0


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
    return run_status(results)


def cmd_hpcc(args: argparse.Namespace) -> int:
    from rdmalab import run_hpcc

    results, fct, pfc = run_hpcc(args.config, progress=not args.quiet)
    print(results.summary())
    print(f"\nwrote {fct} and {pfc}")
    return run_status(results)


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
    p = sub.add_parser("hpcc", help="run an ns-3 HPCC simulator config (drop-in for `third CONFIG`)",
                       description="Runs an ns-3 HPCC simulator config like the reference's `third CONFIG`: "
                       "paths relative to the current directory, FCT_OUTPUT_FILE and PFC_OUTPUT_FILE "
                       "written at the end. Like the reference, existing output files are overwritten; "
                       "rdmalab warns before the run when they exist.")
    p.add_argument("config")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_hpcc)
    from rdmalab.drum import cli as drum_cli
    from rdmalab.experiments import cli as experiments_cli

    drum_cli.register(sub)
    experiments_cli.register(sub)
    return parser


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Warnings on the command line: one `rdmalab: warning:` line each, no source location."""
    print(f"rdmalab: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _print_warning
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError) as e:
        print(f"rdmalab: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RuntimeError as e:
        print(f"rdmalab: run failed: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
