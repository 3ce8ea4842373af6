"""The reference pages generated from the code (`make reference`, `python -m rdmalab.docgen`):
docs/reference/scenario.md, hpcc-keys.md, cli.md, outputs.md, and the JSON Schema of scenario
files shipped in the package (rdmalab/schema/scenario.schema.json). The Python API page
(docs/reference/python-api.md) is not written here: mkdocstrings renders it from the docstrings
when the site is built (`api_ref` lists what it must show).

`python -m rdmalab.docgen --check` writes nothing and fails when a committed page differs from
what the code generates now (a test runs the same check)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from rdmalab.docgen import cli_ref, hpcc_ref, outputs_ref, scenario_ref

#: The repository's root (the generator runs from a checkout).
ROOT = Path(__file__).resolve().parents[3]

#: Each generated file, relative to the root, and what makes its text.
PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/scenario.md": scenario_ref.render,
    "docs/reference/hpcc-keys.md": lambda: hpcc_ref.render(ROOT),
    "docs/reference/cli.md": cli_ref.render,
    "docs/reference/outputs.md": outputs_ref.render,
    "python/rdmalab/schema/scenario.schema.json": scenario_ref.schema_text,
}


def stale(pages: dict[str, Callable[[], str]] | None = None) -> list[str]:
    """The generated files whose committed text differs from what the code generates now."""
    return [p for p, make in (pages or PAGES).items()
            if not (ROOT / p).is_file() or (ROOT / p).read_text() != make()]


def write() -> list[str]:
    """Writes every generated file; returns those that changed."""
    changed = []
    for p, make in PAGES.items():
        text, path = make(), ROOT / p
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(p)
    return changed
