"""What docs/reference/python-api.md documents: the Python API's public functions, classes and
methods. The page itself is rendered from their docstrings by mkdocstrings when the site is
built (its `::: rdmalab.Scenario` lines), so it cannot fall behind the code; this module lists
what it must show, for the tests: every member has a docstring, and the built page has a
section for each."""

from __future__ import annotations

import inspect
from typing import Any

import rdmalab
from rdmalab import chakra, results, scenario

#: What the page documents, in order: (its name on the page, object).
OBJECTS: list[tuple[str, Any]] = [
    ("rdmalab.run", rdmalab.run),
    ("rdmalab.run_hpcc", rdmalab.run_hpcc),
    ("rdmalab.Scenario", scenario.Scenario),
    ("rdmalab.Results", results.Results),
    ("rdmalab.chakra.export", chakra.export),
    ("rdmalab.chakra.ChakraExport", chakra.ChakraExport),
]


def doc(obj: Any) -> str:
    """The docstring of a function, class or property, cleaned of its indentation."""
    return inspect.cleandoc((obj.fget if isinstance(obj, property) else obj).__doc__ or "")


def public_members(cls: type) -> list[tuple[str, Any]]:
    """The class's public methods and properties, in source order: its own, then those it
    inherits from the package's classes (`Results` from `summary.RunOutcome`)."""
    out, seen = [], set()
    for klass in cls.__mro__:
        if klass is cls or klass.__module__.split(".")[0] == "rdmalab":
            for name, member in vars(klass).items():
                if name not in seen:
                    seen.add(name)
                    out.append((name, member))
    members, out = out, []
    for name, member in members:
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            out.append((name, member))
    return out


def entries() -> list[tuple[str, Any]]:
    """Every (full name, object) the page shows: the objects, then each class's members."""
    out = []
    for name, obj in OBJECTS:
        out.append((name, obj))
        if inspect.isclass(obj):
            out += [(f"{name}.{n}", m) for n, m in public_members(obj)]
    return out


def undocumented() -> list[str]:
    """Public functions, classes and methods of the page without a docstring."""
    return [name for name, obj in entries() if not doc(obj)]
