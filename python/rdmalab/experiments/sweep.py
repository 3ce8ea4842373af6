"""Sweep files: a base scenario plus a grid of values, expanded into runs.

A sweep file (TOML) looks like this::

    name = "incast-buffer"
    description = "incast FCT against switch buffer size"
    scenario = "incast.toml"         # a scenario file (relative to this file) ...
    seeds = [1, 2, 3]                # or a count: seeds = 3 means 1, 2, 3

    [base.fabric]                    # ... and/or an inline scenario, merged over it
    cc = "none"

    [grid]                           # dotted scenario paths -> values; every combination runs
    "fabric.buffer_mb" = [1, 2, 4]
    "traffic[0].size" = [100_000, 1_000_000]

    [zip]                            # optional: paths varied together (equal-length lists)
    "topology.kind" = ["star", "dumbbell"]

    [plot]                           # optional defaults for `rdmalab plot`
    by = "fabric.buffer_mb"

Every run is the base scenario with one value per grid path (and one seed); its id is a
hash of the fully expanded scenario, so the same scenario always has the same id.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9 and 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[no-redef]

from rdmalab import _core
from rdmalab.experiments.case_names import case_name
from rdmalab.scenario import PYTHON_SCENARIO, check_numbers

#: Top-level keys of a scenario (crates/rdmalab/src/scenario/mod.rs, `ScenarioSpec`).
SCENARIO_KEYS = ("seed", "stop_time", "topology", "traffic", "fabric", "tenants", "links", "events", "trace", "rnic",
                 "host", "app", "drum", "threads", "partition_map", "collective")
#: Top-level keys of a sweep file.
SWEEP_KEYS = ("name", "description", "scenario", "base", "grid", "zip", "seeds", "plot")
#: Keys of the optional [plot] table.
PLOT_KEYS = ("by", "kinds", "where", "title")
#: Figure kinds (see figures.py).
PLOT_KINDS = ("slowdown", "cdf", "queue", "rate", "pfc", "share")
#: Figure kinds drawn only when asked for (they need multipath messages): the data-partition and Virtuoso papers.
MP_PLOT_KINDS = ("mp_qps", "mp_chunk", "virtuoso_paths", "virtuoso_speedup", "virtuoso_overhead",
                 "virtuoso_chunk", "virtuoso_mice")
#: Phrases of the engine's parse errors (as opposed to errors building a valid scenario).
_PARSE_ERRORS = ("unknown field", "invalid type", "missing field", "unknown variant",
                 "invalid value", "invalid length", "duplicate field")
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


class SweepError(ValueError):
    """A bad sweep file; the message names the field."""


# -- dotted paths -------------------------------------------------------------------------
def parse_path(path: str) -> list[str | int]:
    """`"traffic[0].flows[2].size"` -> `["traffic", 0, "flows", 2, "size"]`."""
    if not isinstance(path, str) or not path:
        raise SweepError(f"grid: {path!r} is not a dotted scenario path")
    parts: list[str | int] = []
    for seg in path.split("."):
        m = _SEGMENT.match(seg)
        if not m:
            raise SweepError(f"grid.{path!r}: `{seg}` is not a valid path segment "
                             "(write names and indices like `traffic[0].load`)")
        parts.append(m.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return parts


def get_path(spec: dict[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted path of a scenario dict, or `default` when absent."""
    node: Any = spec
    for p in parse_path(path):
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return default
    return node


def set_path(spec: dict[str, Any], path: str, value: Any) -> None:
    """Sets a dotted path in place, creating missing tables; list indices must exist."""
    parts = parse_path(path)
    node: Any = spec
    for i, (p, nxt) in enumerate(zip(parts[:-1], parts[1:])):
        where = _path_str(parts[: i + 1])
        if isinstance(p, int):
            if not isinstance(node, list) or p >= len(node):
                n = len(node) if isinstance(node, list) else 0
                raise SweepError(f"grid.{path!r}: `{where}` does not exist (the base scenario has {n} entries)")
            node = node[p]
            continue
        if not isinstance(node, dict):
            raise SweepError(f"grid.{path!r}: `{where}` is inside a value that is not a table")
        if p not in node:
            if isinstance(nxt, int):
                raise SweepError(f"grid.{path!r}: `{where}` does not exist in the base scenario")
            node[p] = {}
        node = node[p]
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise SweepError(f"grid.{path!r}: `{_path_str(parts)}` does not exist in the base scenario")
    elif not isinstance(node, dict):
        raise SweepError(f"grid.{path!r}: `{_path_str(parts[:-1])}` is not a table")
    node[last] = value


def _path_str(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


# -- run ids ------------------------------------------------------------------------------
def canonical_json(spec: dict[str, Any]) -> str:
    """The scenario as canonical JSON: sorted keys, no spaces."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def run_id(spec: dict[str, Any]) -> str:
    """A stable id of a fully expanded scenario (seed included): 16 hex digits of its sha256."""
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]


# -- the sweep ----------------------------------------------------------------------------
@dataclass
class RunSpec:
    """One run of a sweep: its id, the grid values that made it, the scenario to simulate."""

    run_id: str
    params: dict[str, Any]
    scenario: dict[str, Any]
    base_dir: str

    def label(self) -> str:
        """A short label: `cc=dcqcn seed=1` (the last segment of each path)."""
        return " ".join(f"{k.split('.')[-1]}={short_value(v)}" for k, v in self.params.items())

    def task(self) -> dict[str, Any]:
        """What a worker needs, as plain data (picklable and Ray-serializable)."""
        return {"run_id": self.run_id, "scenario": self.scenario, "base_dir": self.base_dir}


def _same_value(have: Any, want: Any) -> bool:
    """`--only`'s match: equal values, or a command-line text equal to the value's label."""
    return have == want or (isinstance(want, str) and short_value(have) == want)


def short_value(v: Any) -> str:
    """A parameter value in a run's label; a list of traffic entries by its kinds
    (`victim+parallel30`), not its JSON."""
    if isinstance(v, list) and v and all(isinstance(t, dict) and "kind" in t for t in v):
        return case_name(v)
    return v if isinstance(v, str) else json.dumps(v)


@dataclass
class Sweep:
    """A validated sweep definition."""

    name: str
    base: dict[str, Any]
    base_dir: str
    grid: dict[str, list[Any]] = field(default_factory=dict)
    zip: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    description: str = ""
    plot: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    #: The inline `[base]` table as written, and whether a `scenario` file is merged under it:
    #: where a base field's mistake was written (`base.…` or `scenario.…`).
    inline: dict[str, Any] = field(default_factory=dict, repr=False)
    from_file: bool = False

    @classmethod
    def from_file(cls, path: str | Path) -> "Sweep":
        """Reads and validates a sweep TOML file."""
        path = Path(path)
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise SweepError(f"{path}: not valid TOML: {e}") from None
        return cls.from_dict(doc, base_dir=path.parent, source=str(path))

    @classmethod
    def from_dict(cls, doc: dict[str, Any], base_dir: str | Path = ".", source: str | None = None) -> "Sweep":
        """Builds a sweep from the parsed TOML structure; raises `SweepError` naming the field."""
        where = f"{source}: " if source else ""
        try:
            return _build(doc, Path(base_dir).resolve(), source)
        except SweepError as e:
            raise SweepError(where + str(e)) from None

    # -- expansion ----------------------------------------------------------------------
    def dimensions(self) -> list[str]:
        """The paths that vary between runs, in order (grid, zip, then `seed`)."""
        dims = list(self.grid) + list(self.zip)
        return dims if "seed" in dims else dims + ["seed"]

    def expand(self) -> list[RunSpec]:
        """Every run of the sweep (grid product x zip x seeds), in a stable order."""
        runs: list[RunSpec] = []
        for values in self._combinations():
            spec = copy.deepcopy(self.base)
            for path, v in values.items():
                set_path(spec, path, copy.deepcopy(v))
            runs.append(RunSpec(run_id(spec), values, spec, self.base_dir))
        return runs

    def select(self, only: dict[str, Any]) -> list[RunSpec]:
        """The runs whose swept values match every `PATH: VALUE` of `only` (a value written on
        the command line matches its TOML value, or that value's text). Raises `SweepError`
        naming the path when it is not swept, or the values it takes when none matches."""
        runs = self.expand()
        dims = self.dimensions()
        for path, want in only.items():
            if path not in dims:
                raise SweepError(f"--only {path}: not a swept path of {self.name} (swept: {', '.join(dims)})")
            taken = list(dict.fromkeys(short_value(r.params.get(path)) for r in runs))
            runs = [r for r in runs if _same_value(r.params.get(path), want)]
            if not runs:
                raise SweepError(f"--only {path}={short_value(want)}: no run of {self.name} has it "
                                 f"({path} takes {', '.join(taken)})")
        return runs

    def _combinations(self):
        grid_keys = list(self.grid)
        zip_rows = list(zip(*self.zip.values())) if self.zip else [()]
        seeds = self.seeds or [self.base.get("seed", 1)]
        for combo in itertools.product(*self.grid.values()):
            for zrow in zip_rows:
                for seed in seeds:
                    values = dict(zip(grid_keys, combo))
                    values.update(zip(self.zip, zrow))
                    values.setdefault("seed", seed)
                    yield values


def _build(doc: dict[str, Any], base_dir: Path, source: str | None) -> Sweep:
    unknown = [k for k in doc if k not in SWEEP_KEYS]
    if unknown:
        raise SweepError(f"unknown field `{unknown[0]}` (known: {', '.join(SWEEP_KEYS)})")
    name = _typed(doc, "name", str, Path(source).stem if source else "sweep")
    description = _typed(doc, "description", str, "")
    base, scenario_dir = _base_scenario(doc, base_dir)
    grid = _value_lists(doc, "grid")
    zipped = _value_lists(doc, "zip", distinct=False)
    _check_zip_lengths(zipped)
    seeds = _seeds(doc)
    _check_overlaps(grid, zipped, seeds)
    base.setdefault("seed", 1)
    inline = doc.get("base") if isinstance(doc.get("base"), dict) else {}
    sweep = Sweep(name=name, base=base, base_dir=str(scenario_dir), grid=grid, zip=zipped, seeds=seeds,
                  description=description, plot=_plot_table(doc), source=source, inline=inline,
                  from_file="scenario" in doc)
    by = sweep.plot.get("by")
    if by and by not in sweep.dimensions():
        raise SweepError(f"plot.by: {by!r} is not a varied parameter (varied: {', '.join(sweep.dimensions())})")
    validate(sweep, inline, from_file=sweep.from_file)
    return sweep


def _typed(doc: dict[str, Any], key: str, kind: type, default: Any, prefix: str = "") -> Any:
    """`doc[key]` (or `default`), which must be of type `kind`."""
    v = doc.get(key, default)
    if not isinstance(v, kind):
        raise SweepError(f"field `{prefix}{key}` must be a {kind.__name__}, not {type(v).__name__} ({v!r})")
    return v


def _base_scenario(doc: dict[str, Any], base_dir: Path) -> tuple[dict[str, Any], Path]:
    """The base scenario: the `scenario` file with the inline `[base]` merged over it."""
    spec: dict[str, Any] = {}
    scenario_dir = base_dir
    if "scenario" in doc:
        rel = _typed(doc, "scenario", str, "")
        path = (base_dir / rel).resolve()
        try:
            with open(path, "rb") as f:
                spec = tomllib.load(f)
        except OSError as e:
            raise SweepError(f"field `scenario`: cannot read {path}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise SweepError(f"field `scenario`: {path} is not valid TOML: {e}") from None
        scenario_dir = path.parent
    inline = _typed(doc, "base", dict, {})
    if not spec and not inline:
        raise SweepError("give the base scenario: `scenario = \"FILE.toml\"` and/or a `[base]` table")
    for k in inline:
        if k not in SCENARIO_KEYS:
            raise SweepError(f"unknown field `base.{k}` (a scenario has: {', '.join(SCENARIO_KEYS)})")
    return _merge(spec, inline), scenario_dir


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`b` deep-merged over `a` (tables merge; other values, lists included, replace)."""
    out = copy.deepcopy(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def _value_lists(doc: dict[str, Any], table: str, distinct: bool = True) -> dict[str, list[Any]]:
    """`[grid]` or `[zip]`: dotted paths to non-empty lists of values, distinct in a grid (in
    a zip a row is one run: its rows must differ, a value may repeat down one path).

    Leaving the table out is fine (a sweep of seeds alone, or of `[zip]` alone), but a table
    that is there and empty is a mistake (values forgotten, or written under another table
    by a misplaced header), not a request for one run: it is refused.
    """
    raw = _typed(doc, table, dict, {})
    if table in doc and not raw:
        raise SweepError(f"`{table}` is an empty table: give at least one \"path\" = [values], or leave "
                         f"[{table}] out to run the base scenario once per seed")
    out: dict[str, list[Any]] = {}
    for path, values in raw.items():
        if isinstance(values, dict):
            raise SweepError(f"{table}.{path}: write the dotted path as one quoted key, "
                             f"e.g. \"{path}.{next(iter(values), 'key')}\" = [...]")
        if not isinstance(values, list):
            raise SweepError(f"{table}.{path!r} must be a list of values, not {type(values).__name__} ({values!r})")
        if not values:
            raise SweepError(f"{table}.{path!r} is an empty list: give at least one value")
        parts = parse_path(path)
        if parts[0] not in SCENARIO_KEYS:
            raise SweepError(f"{table}.{path!r}: unknown field `{parts[0]}` "
                             f"(a scenario has: {', '.join(SCENARIO_KEYS)})")
        seen = [canonical_json({"v": v}) for v in values]
        if distinct and len(set(seen)) != len(seen):
            raise SweepError(f"{table}.{path!r} lists the same value twice")
        out[path] = values
    return out


def _check_zip_lengths(zipped: dict[str, list[Any]]) -> None:
    lengths = {k: len(v) for k, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise SweepError("zip: all lists must have the same length, got "
                         + ", ".join(f"{k!r}: {n}" for k, n in lengths.items()))
    rows = [canonical_json(dict(zip(zipped, row))) for row in zip(*zipped.values())]
    if len(set(rows)) != len(rows):
        raise SweepError("zip: two rows give the same values (a row is one run)")


def _seeds(doc: dict[str, Any]) -> list[int]:
    if "seeds" not in doc:
        return []
    s = doc["seeds"]
    if isinstance(s, bool) or not isinstance(s, (int, list)):
        raise SweepError(f"field `seeds` must be a count or a list of integers, not {s!r}")
    if isinstance(s, int):
        if s < 1:
            raise SweepError(f"field `seeds` must be at least 1, got {s}")
        return list(range(1, s + 1))
    if not s:
        raise SweepError("field `seeds` is an empty list: give at least one seed")
    bad = [x for x in s if isinstance(x, bool) or not isinstance(x, int) or x < 0]
    if bad:
        raise SweepError(f"field `seeds` must hold non-negative integers, got {bad[0]!r}")
    if len(set(s)) != len(s):
        raise SweepError("field `seeds` lists the same seed twice")
    return list(s)


def _check_overlaps(grid: dict[str, list[Any]], zipped: dict[str, list[Any]], seeds: list[int]) -> None:
    both = set(grid) & set(zipped)
    if both:
        raise SweepError(f"grid and zip both set {sorted(both)[0]!r}")
    if seeds and ("seed" in grid or "seed" in zipped):
        raise SweepError("give seeds either as `seeds` or as a grid path `seed`, not both")
    paths = sorted(list(grid) + list(zipped))
    for a, b in zip(paths, paths[1:]):
        if b.startswith(a + ".") or b.startswith(a + "["):
            raise SweepError(f"grid: {a!r} contains {b!r}; vary one or the other")


def _plot_table(doc: dict[str, Any]) -> dict[str, Any]:
    plot = _typed(doc, "plot", dict, {})
    for k in plot:
        if k not in PLOT_KEYS:
            raise SweepError(f"unknown field `plot.{k}` (known: {', '.join(PLOT_KEYS)})")
    _typed(plot, "by", str, "", "plot.")
    _typed(plot, "title", str, "", "plot.")
    _typed(plot, "where", dict, {}, "plot.")
    kinds = _typed(plot, "kinds", list, [], "plot.")
    bad = [k for k in kinds if k not in PLOT_KINDS + MP_PLOT_KINDS]
    if bad:
        known = ", ".join(PLOT_KINDS + MP_PLOT_KINDS)
        raise SweepError(f"plot.kinds: unknown figure kind {bad[0]!r} (known: {known})")
    return plot


# -- validation against the engine ---------------------------------------------------------
def validate(sweep: Sweep, inline: dict[str, Any] | None = None, from_file: bool = False) -> None:
    """Checks the base scenario and every grid value with the engine's parser.

    Field errors (unknown fields, wrong types) are the sweep file's fault and raise
    `SweepError` naming the field: by its full path in the base scenario
    (`base.topology.colour`, or `scenario.topology.colour` when the sweep names a
    `scenario` file and the field is not in its inline table `inline`), or by the grid path
    and value. Errors that only appear when a scenario is built (an unknown host, a CC not
    available) are left to the run, which records them.
    """
    _probe(sweep.base, lambda field: _base_field(field, inline or {}, from_file))
    for table in (sweep.grid, sweep.zip):
        for path, values in table.items():
            for i, v in enumerate(values):
                spec = copy.deepcopy(sweep.base)
                set_path(spec, path, copy.deepcopy(v))
                what = f"grid.{path!r}[{i}] = {json.dumps(v)}"
                # A table value: say where inside it the mistake is.
                _probe(spec,
                       lambda field, what=what, path=path: what + (f" ({field})" if field not in ("", path) else ""))


def check_base(sweep: Sweep) -> None:
    """Builds the base scenario once, as a run's worker builds its scenario (`check_numbers`,
    then the engine's `Simulation.from_json`: every check the engine makes before it runs),
    before any run starts. A mistake there that every run repeats (the same field and message
    in each run's scenario: no grid, zip or seed value changes it) is the sweep file's, and
    raises `SweepError` naming the file and the field's full path (`base.fabric.buffer_mb`).
    A mistake that some run's values avoid or change is left to the runs, which record it."""
    error = _build_error(sweep.base, sweep.base_dir)
    m = re.match(rf"^{re.escape(PYTHON_SCENARIO)}(?::\d+)?: field `([^`]+)`: (.*)$", error or "", re.S)
    if m is None:
        return
    # Building stops at the first mistake, so a run's scenario that a grid value fixes (or
    # breaks otherwise) fails differently or not at all; looking stops at the first such run.
    if any(_build_error(r.scenario, r.base_dir) != error for r in sweep.expand()):
        return
    where = f"{sweep.source}: " if sweep.source else ""
    raise SweepError(f"{where}{_base_field(m.group(1), sweep.inline, sweep.from_file)}: {m.group(2)} "
                     "(every run's scenario has it; no run was started)")


def _build_error(spec: dict[str, Any], base_dir: str) -> str | None:
    """The engine's input error for scenario `spec`, or None when it builds."""
    try:
        check_numbers(spec)
        _core.Simulation.from_json(json.dumps(spec), base_dir)
    except (ValueError, OSError, RuntimeError) as e:  # what a run would record as its error
        return str(e)
    return None


def _base_field(field: str, inline: dict[str, Any], from_file: bool) -> str:
    """Where a field of the base scenario was written: the inline `[base]` or the file."""
    if not field:
        return "base scenario"
    try:
        inline_has_it = get_path(inline, field) is not None
    except SweepError:  # not a path we can follow; the inline table is the likelier source
        inline_has_it = True
    return f"scenario.{field}" if from_file and not inline_has_it else f"base.{field}"


def _probe(spec: dict[str, Any], name: Callable[[str], str]) -> None:
    """Parses `spec` with the engine; a field error raises `SweepError` under `name(path)`,
    `path` being the dotted path of the offending field within the scenario, which the
    engine's message names (`<python scenario>: field `topology.colour`: ...`). Only the
    parse runs (`check_scenario_fields`): building every grid value's scenario (drawing its
    workload, laying out its fabric) cost tens of seconds on the larger sweeps and can only
    raise the errors left to the run."""
    try:
        _core.check_scenario_fields(json.dumps(spec))
    except ValueError as e:
        msg = str(e)
        if any(p in msg for p in _PARSE_ERRORS):
            m = re.match(r"^<python scenario>(?::\d+)?: (?:field `([^`]*)`: )?(.*?)(?: at line \d+ column \d+)?$",
                         msg, re.S)
            path, detail = (m.group(1) or "", m.group(2)) if m else ("", msg)
            raise SweepError(f"{name(path)}: {detail}") from None
    except (OSError, RuntimeError):
        pass
