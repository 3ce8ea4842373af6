"""Writes a generated docs page, or with `--check` only says whether it is up to date: the
shared end of `perf_page.py` and `repro_page.py`."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(page: Path, text: str, argv: list[str], regenerate: str) -> int:
    """Writes `text` to `page`; with `--check` in `argv` writes nothing and returns 1 (after
    naming `regenerate`, the command that rewrites it) when the page differs from `text`."""
    if "--check" not in argv:
        page.write_text(text)
        return 0
    if page.read_text() != text:
        print(f"{page} is out of date: run {regenerate}", file=sys.stderr)
        return 1
    return 0
