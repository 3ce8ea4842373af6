"""`rdmalab/_core.pyi` declares what the compiled `rdmalab._core` has: every public function
and class, each class's public methods. Nothing checks a stub against the binary otherwise,
so a binding added or renamed in crates/rdmalab-py without the stub fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from rdmalab import _core

STUB = Path(__file__).resolve().parents[2] / "python" / "rdmalab" / "_core.pyi"


def _stub() -> dict[str, set[str] | None]:
    """Top-level name -> its public methods (classes) or None (functions)."""
    out: dict[str, set[str] | None] = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = None
        elif isinstance(node, ast.ClassDef):
            out[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)
                              and not n.name.startswith("_")}
    return {k: v for k, v in out.items() if not k.startswith("_")}


def _binary() -> dict[str, set[str] | None]:
    out: dict[str, set[str] | None] = {}
    for name in dir(_core):
        obj = getattr(_core, name)
        if name.startswith("_") or not callable(obj):
            continue
        out[name] = {m for m in vars(obj) if not m.startswith("_")} if isinstance(obj, type) else None
    return out


def test_the_stub_declares_the_extension():
    assert _stub() == _binary()


def test_the_package_is_marked_typed():
    assert (STUB.parent / "py.typed").is_file()
