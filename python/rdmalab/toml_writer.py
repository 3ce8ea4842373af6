"""TOML text of a scenario or sweep: the plain-data subset they use (tables, arrays of
tables, strings, integers, floats, booleans, arrays), written so that a TOML reader gives
back exactly the same data (round trip tested in tests/python/test_notebooks.py)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def dumps(doc: dict[str, Any]) -> str:
    """`doc` as TOML: scalars and arrays first, then sub-tables (`[a.b]`) and arrays of
    tables (`[[a]]`); tables inside arrays of tables are written inline."""
    lines: list[str] = []
    _table(doc, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def _table(doc: dict[str, Any], path: list[str], lines: list[str]) -> None:
    simple = {k: v for k, v in doc.items() if not isinstance(v, dict) and not _is_table_array(v)}
    for k, v in simple.items():
        lines.append(f"{_key(k)} = {value(v)}")
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{'.'.join(map(_key, path + [k]))}]"]
            _table(v, path + [k], lines)
        elif _is_table_array(v):
            for item in v:
                lines += ["", f"[[{'.'.join(map(_key, path + [k]))}]]"]
                for ik, iv in item.items():
                    lines.append(f"{_key(ik)} = {value(iv)}")


def value(v: Any) -> str:
    """One TOML value, inline."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)  # shortest text that reads back to the same double
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON's escapes are TOML basic-string escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + " }"
    if v is None:
        raise ValueError("TOML has no null: leave the field out instead")
    raise TypeError(f"cannot write {type(v).__name__} as TOML")
