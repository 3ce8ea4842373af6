"""The scenario reference (`docs/reference/scenario.md`) and the JSON Schema editors read
(`rdmalab/schema/scenario.schema.json`), both from the engine's schema of the scenario file
(`_core.scenario_schema()`), which is derived from the parser's own structs: every key the
parser accepts is in it, with its type, its allowed values and its doc comment.

A key's default is the schema's `default` (a serde default), else "required", else the
default its meaning states in words ("default 1", "absent: off"), where the builder resolves
it after parsing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rdmalab import _core
from rdmalab.docgen.markdown import cell

#: A whole scenario around the keys of one table: `probe({"key": value})`.
Probe = Callable[[dict[str, Any]], dict[str, Any]]

#: Where the package keeps the schema (shipped in the wheel, so editors can point at it).
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "scenario.schema.json"


def schema() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 7), as the engine derives it."""
    return json.loads(_core.scenario_schema())


def schema_text() -> str:
    """The schema as the shipped file holds it."""
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


@dataclass
class Key:
    """One key the parser accepts."""

    section: str
    name: str
    type: str
    default: str
    meaning: str
    values: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Section:
    """A table of the file (`[fabric]`, `[[traffic]]` with `kind = "poisson"`, ...)."""

    title: str
    meaning: str
    keys: list[Key] = field(default_factory=list)
    #: A table chosen by `kind`: the title of each kind's section.
    kinds: list[str] = field(default_factory=list)
    #: A whole scenario with the given keys in this table (the tests ask the parser which keys
    #: it takes there).
    probe: Probe | None = None


def _one_line(text: str) -> str:
    return " ".join((text or "").split())


class _Walker:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.defs = root.get("definitions", {})
        self.sections: list[Section] = []
        self.seen: dict[int, str] = {}

    def deref(self, s: dict[str, Any]) -> dict[str, Any]:
        """`s` with a `$ref` (or a one-item `allOf` wrapping one) replaced by its target, and a
        `null` alternative (an optional key) dropped; the outer description is kept."""
        desc = s.get("description")
        while True:
            if "$ref" in s:
                s = {**self.defs[s["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in s.items() if k != "$ref"}}
            elif "allOf" in s and len(s["allOf"]) == 1:
                s = {**s["allOf"][0], **{k: v for k, v in s.items() if k != "allOf"}}
            elif "anyOf" in s and any(x.get("type") == "null" for x in s["anyOf"]):
                rest = [x for x in s["anyOf"] if x.get("type") != "null"]
                base = {k: v for k, v in s.items() if k != "anyOf"}
                s = {**rest[0], **base} if len(rest) == 1 else {**base, "anyOf": rest}
            elif isinstance(s.get("type"), list) and "null" in s["type"]:
                types = [t for t in s["type"] if t != "null"]
                s = {**s, "type": types[0] if len(types) == 1 else types}
            else:
                break
        if desc:
            s = {**s, "description": desc}
        return s

    def type_of(self, s: dict[str, Any]) -> str:
        s = self.deref(s)
        if "const" in s:
            return json.dumps(s["const"])
        if "enum" in s or (s.get("oneOf") and all("const" in x for x in s["oneOf"])):
            return "string"
        for alt in ("anyOf", "oneOf"):
            if alt in s:
                return " or ".join(dict.fromkeys(self.type_of(x) for x in s[alt]))
        t = s.get("type")
        if t == "array":
            return f"array of {self.type_of(s.get('items', {}))}"
        if t == "object":
            return "table"
        if t == "integer":
            lo, hi = s.get("minimum"), s.get("maximum")
            return "integer" + (f" ≥ {lo}" if lo not in (None, 0) and hi is None else "") + \
                (f" {lo}..{hi}" if hi is not None else "")
        if isinstance(t, list):
            return " or ".join(t)
        return t or "any"

    def values_of(self, s: dict[str, Any]) -> list[tuple[str, str]]:
        s = self.deref(s)
        if "enum" in s:
            return [(str(v), "") for v in s["enum"]]
        alts = s.get("oneOf") or s.get("anyOf") or []
        return [(str(x["const"]), _one_line(x.get("description", "")).rstrip(".")) for x in alts if "const" in x]

    @staticmethod
    def default_of(s: dict[str, Any], required: bool) -> str:
        if "default" in s:
            return "`" + json.dumps(s["default"], ensure_ascii=False).replace("|", "\\|") + "`"
        if required:
            return "required"
        return default_in_words(s.get("description", ""))

    @staticmethod
    def is_tagged(s: dict[str, Any]) -> bool:
        return bool(s.get("oneOf")) and all("properties" in x and "kind" in x["properties"] for x in s["oneOf"])

    def table(self, s: dict[str, Any], title: str, meaning: str, probe: Probe) -> None:
        """Adds the section of object schema `s` and, after it, its sub-tables."""
        sec = Section(title, _one_line(meaning), probe=probe)
        self.sections.append(sec)
        later: list[tuple[dict[str, Any], str, str, Probe]] = []
        required = set(s.get("required", []))
        path = "" if title == "Top level" else re.sub(r"^\[+|\]+.*$", "", title)
        for name, raw in s.get("properties", {}).items():
            p = self.deref(raw)
            desc = raw.get("description") or p.get("description", "")
            sub = f"{path}.{name}" if path else name
            items = self.deref(p["items"]) if p.get("type") == "array" and isinstance(p.get("items"), dict) else None
            sub_schema, sub_title, how = None, "", ""
            if p.get("type") == "object" and "properties" in p:
                sub_schema, sub_title, how = p, f"[{sub}]", "table"
            elif self.is_tagged(p):
                sub_schema, sub_title, how = p, f"[{sub}]", "table"
            elif items is not None and ("properties" in items or self.is_tagged(items)):
                sub_schema, sub_title, how = items, f"[[{sub}]]", "array of tables"
            if sub_schema is not None:
                ident = id(sub_schema.get("properties") or sub_schema.get("oneOf"))
                if ident in self.seen:  # the same table as one listed already (or an enclosing one)
                    sub_title = self.seen[ident]
                else:
                    self.seen[ident] = sub_title
                    later.append((sub_schema, sub_title, desc, _nest(probe, name, how == "array of tables")))
                typ = f"{how} [`{sub_title}`](#{anchor(sub_title)})"
                typ += ", by `kind`" if self.is_tagged(sub_schema) else ""
            else:
                typ = self.type_of(p)
            default = self.default_of({**p, **raw}, name in required)
            if not default and sub_schema is not None:  # a table or list of them left out
                default = "none" if how == "array of tables" else "absent: each key at its default"
            if name == "kind" and "const" in p and not desc:  # the tag of a table chosen by `kind`
                desc = meaning
            sec.keys.append(Key(title, name, typ, default, _one_line(desc), self.values_of(p)))
        for sub_schema, sub_title, desc, sub_probe in later:
            if self.is_tagged(sub_schema):
                kinds = Section(sub_title, _one_line(desc or sub_schema.get("description", "")), probe=sub_probe)
                self.sections.append(kinds)
                for variant in sub_schema["oneOf"]:
                    kinds.kinds.append(f'{sub_title} kind = "{variant["properties"]["kind"].get("const")}"')
                for variant in sub_schema["oneOf"]:
                    kind = variant["properties"]["kind"].get("const")
                    self.table(variant, f'{sub_title} kind = "{kind}"', variant.get("description", ""),
                               _with_kind(sub_probe, kind))
            else:
                self.table(sub_schema, sub_title, desc or sub_schema.get("description", ""), sub_probe)


def _nest(outer: Probe, name: str, array: bool) -> Probe:
    return lambda inner: outer({name: [inner] if array else inner})


def _with_kind(outer: Probe, kind: str) -> Probe:
    return lambda inner: outer({"kind": kind, **inner})


def _root(inner: dict[str, Any]) -> dict[str, Any]:
    return {"topology": {"kind": "star", "hosts": 2}, **inner}


def default_in_words(description: str) -> str:
    """The default a key's meaning states (`(default 1)`, `default: ...`, `absent: ...`), or ""."""
    d = _one_line(description)
    m = re.search(r"\((required\b[^;)]*)", d)
    if m:
        return m.group(1)
    for pat, fmt in ((r"(`[^`]+`) \(default[,)]", "{}"),
                     (r"\((\w+), default\)", "`{}`"),
                     (r"\((?:the )?default:? ((?:[^()]|\([^()]*\))*)\)", "{}"),
                     (r"\((?:[^()]*?[;,] )?default:? ((?:[^()]|\([^()]*\))*)\)", "{}"),
                     (r"\b[Dd]efault:? ([^.;]+)", "{}"),
                     (r"\(absent(?::| =|,)? ((?:[^()]|\([^()]*\))*)\)", "absent: {}"),
                     (r"\b[Aa]bsent(?::| =|,)? ([^.;)]+)", "absent: {}")):
        m = re.search(pat, d)
        if m:
            return fmt.format(m.group(1).strip(" ,"))
    return ""


def anchor(title: str) -> str:
    """The anchor a Markdown renderer (GitHub, Python-Markdown's toc) gives a heading."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title.lower()).strip())


def sections(root: dict[str, Any] | None = None) -> list[Section]:
    """Every table of the scenario file with its keys, top level first."""
    w = _Walker(root or schema())
    w.table(w.root, "Top level", "Keys outside any table.", _root)
    return w.sections


def keys(root: dict[str, Any] | None = None) -> list[Key]:
    """Every key the parser accepts."""
    return [k for s in sections(root) for k in s.keys]


def render() -> str:
    """docs/reference/scenario.md."""
    secs = sections()
    n = sum(len(s.keys) for s in secs)
    out = [
        "# Scenario file reference",
        "",
        "<!-- Generated by `make reference` (python -m rdmalab.docgen) from the parser's own "
        "definitions: edit the doc comments in crates/rdmalab/src/scenario/, not this page. -->",
        "",
        f"Every key a scenario file accepts: {n} keys in {len(secs)} tables. Each row gives the key's "
        "type, its default (\"required\" when it has none) and its meaning, with the unit and "
        "the allowed values. Quantities with units are strings in ns-3's spelling: times such as "
        "`\"1us\"`, `\"500ns\"`, `\"2ms\"`; rates such as `\"100Gbps\"`; sizes such as `\"64KiB\"`. "
        "A key the parser does not know, a wrong type or a bad unit is an error naming the file, "
        "the line and the key.",
        "",
        "## Editor support",
        "",
        "The same definitions are shipped as a JSON Schema (draft 7) inside the package, at "
        "`rdmalab/schema/scenario.schema.json`; this prints its path:",
        "",
        "```text",
        "python -c \"import rdmalab.docgen.scenario_ref as s; print(s.SCHEMA_PATH)\"",
        "```",
        "",
        "Editors that use taplo (Even Better TOML in VS Code, taplo's language server) validate a "
        "scenario file and complete its keys when its first line names the schema:",
        "",
        "```text",
        "#:schema /path/to/site-packages/rdmalab/schema/scenario.schema.json",
        "seed = 1",
        "```",
        "",
        "## Tables",
        "",
    ]
    for s in secs:
        out.append(f"- [`{s.title}`](#{anchor(s.title)})" if s.title != "Top level" else "- [Top level](#top-level)")
    for s in secs:
        out += ["", f"## {s.title}", ""]
        if s.meaning:
            out += [s.meaning, ""]
        if s.kinds:
            out += ["Its `kind` chooses one of these, each with its own keys:", ""]
            out += [f"- [`{k.split(' kind = ')[1]}`](#{anchor(k)})" for k in s.kinds]
            continue
        out += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for k in s.keys:
            meaning = k.meaning
            if k.values and not k.type.startswith("\""):
                vals = "; ".join(f"`{v}`" + (f": {d}" if d else "") for v, d in k.values)
                meaning = f"{meaning} Values: {vals}." if meaning else f"Values: {vals}."
            out.append(f"| `{k.name}` | {cell(k.type)} | {cell(k.default)} | {cell(meaning)} |")
    return "\n".join(out) + "\n"
