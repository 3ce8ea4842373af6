"""`rdmalab sweep`, `rdmalab plot`, `rdmalab repro`.

    rdmalab sweep SWEEP.toml --out DIR [--workers N | --ray [ADDRESS]] [--resume] [--only PATH=VALUE] [--dry-run]
    rdmalab plot DIR [--kind slowdown,cdf,queue,rate,pfc,share] [--by PATH] [--where PATH=VALUE] [--out DIR]
    rdmalab repro list
    rdmalab repro run NAME [--quick] [--out DIR] [--workers N | --ray [ADDRESS]] [--resume] [--only PATH=VALUE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rdmalab.experiments.sweep import Sweep


def register(sub) -> None:  # noqa: ANN001
    """Adds the experiment subcommands to the `rdmalab` parser."""
    p = sub.add_parser("sweep", help="run a sweep file (a grid of scenarios) into a results folder")
    p.add_argument("sweep", help="sweep TOML file")
    p.add_argument("--out", required=True, help="results folder (Parquet store)")
    _executor_args(p)
    p.add_argument("--dry-run", action="store_true", help="list the runs without running them")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("plot", help="figures of a sweep's results (PNG + PDF)")
    p.add_argument("dir", help="a sweep's results folder")
    p.add_argument("--kind", default="all",
                   help="comma-separated: slowdown,cdf,queue,rate,pfc,share (default: the sweep's [plot] kinds, else all)")
    p.add_argument("--by", help="the parameter to compare along (default: the sweep's [plot] by)")
    p.add_argument("--where", action="append", default=[], metavar="PATH=VALUE",
                   help="only runs with this parameter value (repeatable)")
    p.add_argument("--out", help="figure folder (default DIR/figures)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("repro", help="paper experiments: list, or run one with its figure and numbers")
    rsub = p.add_subparsers(dest="repro_command", required=True, metavar="COMMAND", help="one of:")
    r = rsub.add_parser("list", help="the registered experiments")
    r.set_defaults(func=cmd_repro_list)
    r = rsub.add_parser("run", help="run an experiment: sweep, figures, comparison with the paper")
    r.add_argument("name", help="the experiment's name (see `rdmalab repro list`)")
    r.add_argument("--quick", action="store_true", help="the scaled-down variant (each experiment's own, `rdmalab repro list` names it; seconds to minutes)")
    r.add_argument("--out", help="results folder (default out/repro/NAME[-quick])")
    _executor_args(r)
    r.set_defaults(func=cmd_repro_run)


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, help="local worker processes (default: one per core, divided by the "
                                               "runs' `threads`)")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="run on Ray: a local instance, or the cluster at ADDRESS (needs rdmalab[ray])")
    p.add_argument("--resume", action="store_true", help="continue a sweep in --out, skipping finished runs")
    p.add_argument("--retry-failed", action="store_true", help="with --resume, rerun the runs that failed")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--only", action="append", default=[], metavar="PATH=VALUE",
                   help="run only the runs with this swept value (repeatable; e.g. "
                        "fabric.path_selection=conweave); --resume in the same --out adds the rest later")


def _executor(args: argparse.Namespace) -> Any:
    # Lazy on purpose: the executors' workers load polars (the results), which `rdmalab run`,
    # `hpcc` and `--help` do not all need.
    from rdmalab.experiments.executors import LocalExecutor, RayExecutor

    if args.ray is not None:
        if args.workers:
            raise ValueError("give --workers or --ray, not both")
        return RayExecutor(address=args.ray or None)
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    return LocalExecutor(args.workers)


def _run(sweep: Any, out: str, args: argparse.Namespace) -> Any:
    # Lazy on purpose: the sweep driver loads polars and tqdm, which the other commands do not all need.
    from rdmalab.experiments.driver import run_sweep

    executor = _executor(args)
    try:
        report = run_sweep(sweep, out, executor, resume=args.resume, retry_failed=args.retry_failed,
                           progress=not args.quiet, only=_where(args.only, "--only") or None)
    finally:
        if hasattr(executor, "close"):
            executor.close()
    print(report.table())
    return report


def cmd_sweep(args: argparse.Namespace) -> int:
    sweep = Sweep.from_file(args.sweep)
    if args.dry_run:
        only = _where(args.only, "--only")
        runs = sweep.select(only) if only else sweep.expand()
        for r in runs:
            print(f"{r.run_id}  {r.label()}")
        print(f"{len(runs)} runs")
        return 0
    report = _run(sweep, args.out, args)
    return interrupted_status(report) or (1 if report.failed else 0)


def interrupted_status(report: Any) -> int:
    """130 when Ctrl-C stopped the sweep, 143 (128 + SIGTERM) when SIGTERM did, else 0."""
    if not report.interrupted:
        return 0
    return 143 if report.interrupted_by == "SIGTERM" else 130


def _where(items: list[str], flag: str = "--where") -> dict[str, Any]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"{flag} {item!r}: write PATH=VALUE")
        k, v = item.split("=", 1)
        try:
            value = json.loads(v)
        except json.JSONDecodeError:
            value = v
        if k in out:
            # One value per path: a second would silently replace the first.
            raise ValueError(f"{flag} {k} given twice ({out[k]!r} and {value!r}): give one value per path")
        out[k] = value
    return out


def cmd_plot(args: argparse.Namespace) -> int:
    # Lazy on purpose: figures load matplotlib, which `rdmalab --help` and the other commands do not need
    # (and the store polars).
    from rdmalab.experiments.figures import KINDS, plot_sweep
    from rdmalab.experiments.store import Store

    kinds = None if args.kind == "all" else [k.strip() for k in args.kind.split(",") if k.strip()]
    if not (Path(args.dir) / "sweep.json").is_file():
        raise ValueError(f"{args.dir}: not a sweep's output folder (no sweep.json); give the --out of `rdmalab sweep`")
    made = plot_sweep(args.dir, kinds, by=args.by, where=_where(args.where) or None, out_dir=args.out,
                      skip_missing=kinds is None)
    wanted = kinds or (Store(args.dir).manifest().get("plot") or {}).get("kinds") or list(KINDS)
    for kind, paths in made.items():
        print(f"{kind:<9} {paths[0]} (+ .pdf)")
    skipped = [k for k in wanted if k not in made]
    if skipped:
        print(f"skipped (no data in this sweep): {', '.join(skipped)}")
    return 0


def cmd_repro_list(args: argparse.Namespace) -> int:
    # Lazy on purpose: the experiments' modules load matplotlib (their figures).
    from rdmalab.experiments.repro import REGISTRY

    for exp in REGISTRY.values():
        print(f"{exp.name:<20} {exp.title}")
        print(f"{'':<20} {exp.citation}")
        if exp.solve is not None:
            print(f"{'':<20} no sweep: solves instances")
            continue
        print(f"{'':<20} sweep {exp.sweep_path().name}" + (f", quick {exp.quick}" if exp.quick else "")
              + (f"; needs CC {', '.join(exp.needs_cc)}" if exp.needs_cc else ""))
    return 0


def cmd_repro_run(args: argparse.Namespace) -> int:
    # Lazy on purpose: figures load matplotlib, which `rdmalab --help` and the other commands do not need.
    from rdmalab.experiments import repro
    from rdmalab.experiments.figures import plot_sweep

    exp = repro.get(args.name)
    out = args.out or f"out/repro/{exp.name}{'-quick' if args.quick else ''}"
    if exp.solve is not None:
        rows = exp.solve(Path(out), args.quick)
        print("\n".join(repro.rows_table(exp, rows)))
        print(f"figures in {Path(out) / 'figures'}")
        return 0
    sweep = Sweep.from_file(exp.sweep_path(args.quick))
    report = _run(sweep, out, args)
    if report.ok + report.skipped == 0:
        print("no run succeeded: nothing to plot or compare", file=sys.stderr)
        return interrupted_status(report) or 1
    # An experiment with only its own figures draws none of the generic kinds.
    generic = plot_sweep(out, exp.figures, by=exp.by) if exp.figures else {}
    for kind, paths in generic.items():
        print(f"figure {kind:<9} {paths[0]} (+ .pdf)")
    if exp.extra_figures is not None:
        paths = exp.extra_figures(Path(out), Path(out) / "figures")
        print(f"figure {'(own)':<9} {paths[0]} (+ .pdf)")
    print()
    print(repro.comparison_table(exp, out))
    if args.quick:
        theirs = "its own closed forms" if exp.theirs_from_runs else "the full experiment's"
        print(f"\n(quick variant: a scaled-down scenario; the numbers beside ours are {theirs})")
    return interrupted_status(report)
