"""The `rdmalab` command line."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    from rdmalab.drum import cli as drum_cli

    drum_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
