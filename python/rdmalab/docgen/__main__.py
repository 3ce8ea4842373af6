"""`python -m rdmalab.docgen [--check]`: writes the generated reference pages (see the package's
doc); with `--check`, writes nothing and exits 1 when one is out of date."""

import sys

from rdmalab.docgen import stale, write


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        old = stale()
        for p in old:
            print(f"{p}: out of date; run `make reference`", file=sys.stderr)
        return 1 if old else 0
    if argv:
        print("usage: python -m rdmalab.docgen [--check]", file=sys.stderr)
        return 2
    for p in write():
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
