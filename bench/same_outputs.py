#!/usr/bin/env python3
"""Whether two `rdmalab run` output folders hold the same outputs: every file of either, byte
for byte, except what a run's wall clock writes into it (the PDF's creation date). Used to
show that a change to set-up, tables or files left a scenario's outputs as they were:

    rdmalab run bench/scenarios/fat_tree_100k.toml --threads 1 --quiet --out /tmp/old   # old build
    rdmalab run bench/scenarios/fat_tree_100k.toml --threads 1 --quiet --out /tmp/new   # new build
    python3 bench/same_outputs.py /tmp/old /tmp/new

Prints one line per file (its size and whether it matches) and exits 1 when any differs or
is missing on one side.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

#: Bytes that carry the moment a file was written, not what the run produced.
CLOCK = {".pdf": re.compile(rb"/CreationDate \(D:[^)]*\)")}


def digest(path: Path) -> str:
    """SHA-256 of the file's bytes, less its clock stamps (read in blocks: tables of a
    million-host run are hundreds of megabytes)."""
    h = hashlib.sha256()
    clock = CLOCK.get(path.suffix)
    if clock is not None:
        h.update(clock.sub(b"", path.read_bytes()))
        return h.hexdigest()
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    args = ap.parse_args()
    names = sorted({p.name for d in (args.old, args.new) for p in d.iterdir() if p.is_file()})
    bad = []
    for name in names:
        a, b = args.old / name, args.new / name
        if not (a.is_file() and b.is_file()):
            bad.append(name)
            print(f"{name}: only in {args.old if a.is_file() else args.new}")
            continue
        same = digest(a) == digest(b)
        print(f"{name}: {a.stat().st_size:,} bytes, {'same' if same else 'DIFFERS'}")
        if not same:
            bad.append(name)
    print(f"{len(names) - len(bad)} of {len(names)} files the same" + (f"; differ: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
