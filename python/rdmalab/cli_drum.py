"""The parser of `rdmalab drum ...` (`rdmalab.drum.cli` runs the subcommands). Kept apart
so that building the command line loads neither the solver nor numpy: `rdmalab hpcc` and
`rdmalab run` pay nothing for the `drum` subcommands they do not use."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

PAPER_SCALES = "100x50,1000x500,10000x5000"


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    """The subcommand `name` of `rdmalab.drum.cli`, imported when it runs."""

    def run(args: argparse.Namespace) -> int:
        from rdmalab.drum import cli  # lazy: the solver loads numpy, which other commands do without

        return getattr(cli, name)(args)

    run.__name__ = name
    return run


def register(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("drum", help="DRUM resource-scheduling solver")
    dsub = p.add_subparsers(dest="drum_command", required=True, metavar="COMMAND", help="one of:")

    s = dsub.add_parser("solve", help="solve a paper-style instance; print and plot convergence")
    s.add_argument("--hosts", type=int, default=100, help="hosts n of the instance (default 100)")
    s.add_argument("--apps", type=int, default=50, help="applications m of the instance (default 50)")
    s.add_argument("--k", type=int, default=20, help="active applications per host, top-k rule (default 20)")
    s.add_argument("--seed", type=int, default=1, help="seed of the random instance (default 1)")
    s.add_argument("--alpha", type=float, default=0.5, help="alpha of the alpha-fair utility U, in (0, 1) (default 0.5)")
    s.add_argument("--beta", type=float, default=1.0, help="weight beta of the CQ-polling penalty (default 1.0)")
    s.add_argument("--rho", type=float, default=0.3, help="ADMM penalty rho (default 0.3)")
    s.add_argument("--tol", type=float, default=1e-9, help="ADMM absolute and relative tolerance (default 1e-9)")
    s.add_argument("--max-iter", type=int, default=10000, help="ADMM iteration limit (default 10000)")
    s.add_argument("--adaptive-rho", action="store_true", help="adapt rho to balance the residuals")
    s.add_argument("--method", choices=["admm", "dd", "both"], default="both",
                   help="ADMM, the dual-decomposition baseline, or both (default)")
    s.add_argument("--dd-iterations", type=int, default=60, help="dual-decomposition iterations (paper: 60)")
    s.add_argument("--out", type=Path, default=Path("out/drum"), help="output folder (default out/drum)")
    s.add_argument("--no-figure", action="store_true", help="print the table only, draw no figure")
    s.set_defaults(func=_handler("cmd_solve"))

    b = dsub.add_parser("bench", help="time ADMM iterations at the paper's scales")
    b.add_argument("--scales", default=PAPER_SCALES, help=f"comma-separated NxM (default {PAPER_SCALES})")
    b.add_argument("--k", type=int, default=20, help="active applications per host (default 20)")
    b.add_argument("--alpha", type=float, default=0.5, help="alpha of the alpha-fair utility U, in (0, 1) (default 0.5)")
    b.add_argument("--beta", type=float, default=1.0, help="weight beta of the CQ-polling penalty (default 1.0)")
    b.add_argument("--iterations", type=int, default=20, help="timed iterations per scale")
    b.add_argument("--seed", type=int, default=1, help="seed of the random instances (default 1)")
    b.add_argument("--out", type=Path, default=Path("out/drum/bench.json"),
                   help="JSON file of the timings (default out/drum/bench.json)")
    b.set_defaults(func=_handler("cmd_bench"))

    one = dsub.add_parser("bench-one", help="one scale of `bench` in this process (what `bench` runs in a "
                                           "fresh process per scale, so that peak memory is that scale's)")
    one.add_argument("n", type=int, help="hosts")
    one.add_argument("m", type=int, help="applications")
    one.add_argument("k", type=int, help="active applications per host")
    one.add_argument("alpha", type=float, help="alpha of the alpha-fair utility")
    one.add_argument("beta", type=float, help="weight beta of the CQ-polling penalty")
    one.add_argument("iterations", type=int, help="timed iterations")
    one.add_argument("seed", type=int, help="seed of the instance")
    one.set_defaults(func=_handler("cmd_bench_one"))
