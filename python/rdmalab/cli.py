"""rdmalab: packet-level simulation of lossless RDMA fabrics.

    rdmalab demo [--out DIR]               the built-in default scenario: summary + figure
    rdmalab run SCENARIO.toml [--out DIR]  a scenario file: summary, every table, figure
    rdmalab hpcc CONFIG                    drop-in for the ns-3 HPCC simulator's `third CONFIG`
    rdmalab sweep SWEEP.toml --out DIR     a grid of scenarios into a Parquet results store
    rdmalab plot DIR                       figures of a sweep (slowdown, CDF, queues, rates, PFC, shares)
    rdmalab repro list | run NAME          paper experiments: sweep, figure, numbers beside the paper's
    rdmalab drum solve | bench             the DRUM resource-scheduling solver
    rdmalab chakra export SCENARIO.toml --out PREFIX   a scenario's workload as Chakra traces

`rdmalab COMMAND --help` explains each command's options.

Exit status of `run` and `hpcc`: 0 the run ended normally (finished or at its stop time);
2 bad input; 3 a PFC deadlock was found (its cycle is printed last); 4 the run stalled (no
progress possible; the cause is printed last); 5 the run failed an internal check; 6 some flows
failed (a WR exhausted `retry_cnt` or `rnr_retry`; their count is printed last, their status is
in the flows table); 130 Ctrl-C.
Whatever the status, `run` writes the summary and every table measured up to that moment, and
when the run did not end normally (3, 4, 5, 130) `failure.json`: what happened, where and when.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from rdmalab import Scenario, run
from rdmalab._version import version
from rdmalab import chakra, hpcc_batch
from rdmalab.runner import detect_hpcc_dialect, hpcc_files, run_with_option
from rdmalab import cli_drum
from rdmalab.experiments import cli as experiments_cli
from rdmalab.failure import RunFailed, failure_record, write_failure


def _prepare_out(out: Path, force: bool) -> None:
    """Refuses to mix a new run's files with an old run's, unless asked to."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ValueError(f"--out {out}: folder is not empty (a previous run?); give --force to overwrite, "
                         "or another --out")
    out.mkdir(parents=True, exist_ok=True)


def _write_outputs(results, out: Path, title: str, summary: str, failure: dict | None = None,
                   figures: bool = True) -> None:
    """The summary, every table the run produced, the reference's text files, the failure
    record of a run that did not end normally, and (with `figures`) the figures of what the
    run has (`run_figures`)."""
    written = [out / "summary.txt", out / "fct.txt", out / "pfc.txt"]  # and messages/chunks with multipath
    # Less the events line: its count depends on the parallel engine's cut and its rate on the
    # wall clock, and the file is the same bytes for any thread count.
    written[0].write_text("\n".join(line for line in summary.splitlines() if not line.startswith("events ")) + "\n")
    if failure is not None:
        written.append(out / "failure.json")
        write_failure(failure, written[-1])
    results.write_fct(written[1])
    results.write_pfc(written[2])
    for name, table in results.tables().items():
        path = out / f"{name}.parquet"
        table.write_parquet(path)
        written.append(path)
    if results.trace is not None:
        written.append(results.extra["trace_path"])
    drawn_paths, notes = run_figures(results, out, title) if figures else ([], [])
    drawn = f", {', '.join(p.name for p in drawn_paths)} (each + .pdf)" if drawn_paths else ""
    run_json = out / "run.json"
    run_json.write_text(json.dumps(run_record(results, title), indent=1) + "\n")
    written.append(run_json)
    print(f"\nwrote {', '.join(p.name for p in written)}{drawn} in {out}")
    for note in notes:
        print(f"no {note}")


def run_record(results, title: str) -> dict:
    """`run.json`: what produced the run (rdmalab's version and commit) and how it ended."""
    return {"rdmalab_version": version(), "title": title, "stop_reason": results.stop_reason}


def run_figures(results, out: Path, title: str) -> tuple[list[Path], list[str]]:
    """The figures of one run that its data supports: the FCT slowdown when flows completed,
    queue lengths, link utilisation and flow rates when sampled, PFC pauses when a port was
    paused, completion by step with collectives. Returns the PNG paths and, for each figure
    left out, why."""
    # Lazy on purpose: matplotlib only for the commands that draw (not `--help`, `hpcc`, `sweep`).
    from rdmalab import plots

    made, notes = [], []
    if results.completed.height:
        made.append(plots.slowdown_by_size(results, out / "slowdown", title=title)[0])
    else:
        notes.append("slowdown figure: no flow completed (applications and multipath messages have their own tables)")
    drawn = (("queues", plots.queue_lengths, results.queue_samples), ("links", plots.link_utilisation, results.links),
             ("rates", plots.flow_rates, results.rates), ("pfc", plots.pfc_timeline, results.pfc))
    for name, draw, table in drawn:
        if table.height:
            fig = draw(results)
            ax = fig.axes[0]
            ax.set_title(f"{title}: {ax.get_title()}", fontsize=9)
            fig.tight_layout()
            made.append(plots.save_figure(fig, out / name)[0])
    if not results.pfc.height:
        notes.append("pfc figure: no port was paused")
    if results.collective_steps.height:  # completion by step of each collective
        fig = plots.collective_steps(results)
        ax = fig.axes[0]
        ax.set_title(f"{title}: {ax.get_title()}", fontsize=9)
        fig.tight_layout()
        made.append(plots.save_figure(fig, out / "collectives")[0])
    return made, notes


#: Exit statuses (see the module doc).
EXIT_BAD_INPUT, EXIT_DEADLOCK, EXIT_STALLED, EXIT_FAILED, EXIT_FLOWS_FAILED, EXIT_INTERRUPTED = 2, 3, 4, 5, 6, 130
#: SIGTERM's conventional status (128 + 15): a run stopped by it keeps what it measured.
EXIT_TERMINATED = 143

#: Every command's exit statuses, by command (docs/reference/cli.md is generated from this).
EXIT_STATUS: dict[str, list[tuple[int, str]]] = {
    "every command": [
        (0, "success"),
        (EXIT_BAD_INPUT, "bad input: a wrong option, or a file or value refused (the message names the file, "
                         "line and field)"),
        (EXIT_FAILED, "the run failed an internal check"),
    ],
    "`run`, `hpcc`": [
        (0, "the run ended normally: every flow finished, or the stop time was reached"),
        (EXIT_DEADLOCK, "a PFC deadlock was found (its cycle is printed last)"),
        (EXIT_STALLED, "the run stalled: no progress was possible (the cause is printed last)"),
        (EXIT_FLOWS_FAILED, "some flows were given up: a WR exhausted `retry_cnt` or `rnr_retry` (their count is "
                            "printed last; their status is in the flows table)"),
        (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
        (EXIT_TERMINATED, "stopped by SIGTERM (a batch scheduler's time limit, `kill`); the outputs are written as "
                          "after Ctrl-C"),
    ],
    "`sweep`": [
        (1, "at least one run failed (its error is in the runs table)"),
        (EXIT_INTERRUPTED, "interrupted (Ctrl-C); `--resume` continues"),
        (EXIT_TERMINATED, "stopped by SIGTERM (a batch scheduler's time limit, `kill`): as after Ctrl-C, the "
                          "finished runs stay stored and `--resume` continues"),
    ],
    "`repro run`": [
        (1, "no run succeeded"),
        (EXIT_INTERRUPTED, "interrupted (Ctrl-C); `--resume` continues"),
        (EXIT_TERMINATED, "stopped by SIGTERM; `--resume` continues"),
    ],
}


def run_status(results) -> int:
    """Prints the run's last line when it did not end normally, and returns its exit status."""
    if results.interrupted:
        return EXIT_TERMINATED if results.extra.get("interrupted_by") == "SIGTERM" else EXIT_INTERRUPTED
    if results.counters.get("deadlocks", 0) > 0:
        d = results.deadlock_rows()[0]
        hops = ", ".join(f"({n}, {p}, {q})" for n, p, q in results.cycle())
        print(f"rdmalab: PFC deadlock formed at {d['formed_ns'] / 1e3:.3f} us: cycle of (node, port, priority) "
              f"{hops}")
        return EXIT_DEADLOCK
    if results.stop_reason == "stalled":
        print(f"rdmalab: stalled: {results.stall_cause or 'no progress possible'}")
        return EXIT_STALLED
    failed = results.counters.get("flows_failed", 0)
    if failed:
        print(f"rdmalab: {failed} flow(s) failed: a WR exhausted its retry limit (retry_cnt or rnr_retry); "
              "the status column of flows says which")
        return EXIT_FLOWS_FAILED
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    scenario = Scenario.default()
    print("rdmalab demo: k=4 fat tree (16 hosts, 100G), FB Hadoop sizes, 30% load, 5 ms of arrivals, no CC")
    out = Path(args.out)
    _prepare_out(out, force=True)  # the demo's folder is the demo's own
    results = run(scenario, progress=not args.quiet)
    summary = results.summary()
    print(summary)
    _write_outputs(results, out, "demo: k=4 fat tree, FB Hadoop, 30% load", summary)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path("out") / Path(args.scenario).stem
    _prepare_out(out, args.force)
    try:
        results = run_with_option(args.scenario, not args.quiet, out / "trace.parquet", args.threads, "--threads")
        failed, failure = None, failure_record(results)
    except RunFailed as e:  # keeps what it measured: the summary, every table, the record
        results, failed, failure = e.results, e, e.record
    summary = results.summary() + (f"\nfailed            {failed}" if failed else "")
    print(summary)
    print(f"engine: {results.extra['engine']}{_thread_use(results.extra.get('parallel'))}")
    if "cc_settings" in results.extra:
        print(f"cc: {results.extra['cc_settings']}")
    # Lazy on purpose: the results module loads polars, which `rdmalab hpcc` does without.
    from rdmalab.results import describe

    title = f"{Path(args.scenario).stem}: {describe(Scenario.from_toml(args.scenario), results)}"
    _write_outputs(results, out, title, summary, failure, figures=not args.no_figures)
    if failed is not None:
        print(f"rdmalab: run failed: {failed}", file=sys.stderr)
        return EXIT_FAILED
    return run_status(results)


def _thread_use(stats: dict | None) -> str:
    """Where a parallel run's threads spent it (the figures `bench/threads.py` reads): windows,
    events per partition, CPU seconds used and seconds waited at barriers per thread."""
    if stats is None:
        return ""
    cpu = ", ".join(f"{c:.2f}" for c in stats["cpu_s"])
    wait = ", ".join(f"{w:.2f}" for w in stats["wait_s"])
    return (f"; {stats['windows']:,} windows, events per partition {stats['events_per_partition']}, "
            f"CPU s per thread [{cpu}], s waited at barriers [{wait}]")


def cmd_hpcc_folder(args: argparse.Namespace) -> int:
    configs = hpcc_batch.find_configs(args.config, args.pattern)
    if not configs:
        raise ValueError(f"{args.config}: no file matching `{args.pattern}` under this folder")
    print(f"{len(configs)} configs under {args.config}, on {args.executor}")
    rows = hpcc_batch.run_folder(configs, dialect=args.dialect, executor=args.executor, workers=args.workers,
                                 address=args.ray_address, progress=not args.quiet)
    for r in rows:
        print(hpcc_batch.status_line(r))
    ok = [r for r in rows if r["status"] == "ok"]
    mean = sum(r["wall_s"] for r in ok) / len(ok) if ok else 0.0
    print(f"\n{len(ok)} of {len(rows)} ran; {mean:.2f} s per config on average")
    if rows.interrupted_by is not None:
        print(f"rdmalab: interrupted ({rows.interrupted_by}): the configs that were running wrote what they "
              "measured; the others did not start")
        return EXIT_TERMINATED if rows.interrupted_by == "SIGTERM" else EXIT_INTERRUPTED
    return 0 if len(ok) == len(rows) else EXIT_FAILED


def cmd_hpcc(args: argparse.Namespace) -> int:
    if Path(args.config).is_dir():
        return cmd_hpcc_folder(args)
    dialect = args.dialect
    if dialect is None:
        dialect, why = detect_hpcc_dialect(args.config)
        if why is None and (args.topology or args.workload):
            dialect = "simai"  # only the simai dialect takes them
            print("dialect: simai (--topology/--workload, SimAI's -n and -w; no key of another dialect)")
        else:
            print(f"dialect: {dialect} (detected: {why[0]} on line {why[1]})" if why
                  else f"dialect: {dialect} (no key of another dialect)")
    else:
        print(f"dialect: {dialect} (--dialect)")
    # The summary and the reference's files, no table built (and no polars loaded) unless the
    # run has a block that reads one.
    results, fct, pfc = hpcc_files(args.config, progress=not args.quiet, threads=args.threads, dialect=dialect,
                                   topology=args.topology, workload=args.workload, threads_option="--threads")
    print(results.summary())
    extra = [str(p) for p in (results.extra.get("trace_path"), results.extra.get("qlen_path"),
                              results.extra.get("end_to_end_path")) if p]
    print(f"\nwrote {', '.join([fct, pfc] + extra)}")
    return run_status(results)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _threads(text: str) -> int | str:
    if text == "auto":
        return "auto"
    try:
        return _positive_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a thread count of at least 1 or 'auto', got {text!r}") from None


def _threads_option(p: argparse.ArgumentParser, default: str | None) -> None:
    auto = ("'auto': the machine's cores, capped by the partitions, where that is expected to be faster than one "
            "thread (else one), or the sequential engine for a scenario the parallel one refuses")
    if default == "auto":
        said = f"default {auto}"
    else:
        said = f"default: the sequential engine with the reference's event order; {auto}"
    p.add_argument("--threads", type=_threads, metavar="N", default=default,
                   help="the parallel engine: up to N partitions, one thread each, results identical for "
                        f"every N ({said})")


class _VersionAction(argparse.Action):
    """`--version`: the version and commit (`rdmalab.__version__`), read only when asked."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        print(f"rdmalab {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, help="print the version and commit, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of:")
    p = sub.add_parser("demo", help="run the built-in default scenario",
                       description="A k=4 fat tree (16 hosts, 100 Gb/s), FB Hadoop flow sizes at 30 % load "
                                   "for 5 ms, no congestion control: summary, tables and figure.")
    p.add_argument("--out", default="out/demo", help="output folder, overwritten (default out/demo)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("run", help="run a scenario TOML file",
                       description="Runs a scenario file (docs/howto/scenario-files.md), prints the summary (also into "
                                   "summary.txt) and writes fct.txt and pfc.txt (the ns-3 HPCC formats), flows/ports/pfc.parquet, "
                                   "queues/rates/links.parquet when sampled, trace.parquet with [trace], "
                                   "classes.parquet with [[fabric.classes]], messages/chunks.parquet with "
                                   "multipath traffic (paths.parquet with Virtuoso), wqes/apps/drum.parquet "
                                   "with [[app]], deadlock.parquet when one was found, each other mechanism's table "
                                   "when it has rows (docs/reference/outputs.md lists them all), "
                                   "failure.json when the run did not end normally, run.json (the rdmalab version and commit, and how the run ended), "
                                   "and the figures (PNG + PDF) of what the run has: slowdown when flows "
                                   "completed; queues, links and rates when sampled; pfc when a port was "
                                   "paused.")
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--out", help="output folder (default out/<scenario file stem>/); must be empty or new")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out folder, replacing its files")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-figures", action="store_true",
                   help="write the summary, tables and files but draw no figure (drawing loads matplotlib: "
                        "a second or more of CPU)")
    _threads_option(p, "auto")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("hpcc", help="run an ns-3 HPCC simulator config (drop-in for `third CONFIG`)",
                       description="Reads the reference's config keys (paths relative to the current folder, "
                                   "as `third` does) and writes its FCT_OUTPUT_FILE and PFC_OUTPUT_FILE in its "
                                   "formats. Keys not implemented are errors naming key and line. Like the "
                                   "reference, existing output files are overwritten; rdmalab warns before "
                                   "the run when they exist.")
    p.add_argument("config", help="the reference's config file (e.g. config.txt), or a folder: every config "
                                  "under it (--pattern), each run in its own folder, in parallel")
    p.add_argument("--dialect", choices=["reference", "m4", "conweave", "simai"], default=None,
                   help="the simulator the files are written for: the reference, m4's ns-3 on Unison, "
                        "SimAI's ns-3 backend or the ConWeave artifact's ns-3 (docs/hpcc-dialects.md). Default: "
                        "detected from the config's keys, and printed")
    p.add_argument("-n", "--topology", default=None,
                   help="simai dialect: SimAI's topology file (its -n), e.g. what gen_Topo_Template.py writes")
    p.add_argument("-w", "--workload", default=None,
                   help="simai dialect: the SimAI/AICB workload file (its -w); one iteration runs")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--pattern", default=hpcc_batch.DEFAULT_PATTERN,
                   help="with a folder: the config files' names (default %(default)s)")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="with a folder: local processes (default) or Ray")
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="with a folder: local processes (default: one per core)")
    p.add_argument("--ray-address", default=None, help="with --executor ray: the cluster (default: a local Ray)")
    _threads_option(p, None)
    p.set_defaults(func=cmd_hpcc)
    cli_drum.register(sub)
    experiments_cli.register(sub)
    chakra.register(sub)
    return parser


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Warnings on the command line: one `rdmalab: warning:` line each, no source location."""
    print(f"rdmalab: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
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
