"""Every code block of README.md and the documentation site's pages (docs/**/*.md) runs as written.

A block's language tag says what happens to it:

- `python`: run as a script (a fresh interpreter, in a scratch folder holding a copy of
  `examples/`), after the blocks before it on the same page: later blocks use earlier names.
- `toml`: parsed; a complete scenario (it has `[topology]`) is built by the engine, a sweep
  (it has `[base]` or `scenario`) expanded; a first line `# NAME.toml: ...` also writes it to
  NAME.toml in the scratch folder, for the `sh` blocks after it.
- `sh`: every line that starts with `rdmalab` or `python` runs in that folder (`make` and
  `cargo` lines are the build this test runs in, not repeated).
- `text` (output, layouts, formulas, usage synopses with placeholders) and `rust` (fragments
  of the engine's API, compiled by its own tests) are not run. A block without a tag fails
  this test: say what it is.

Benchmark commands (minutes each) are `text` blocks on docs/performance.md.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from rdmalab import _core

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
RUN = {"python", "toml", "sh"}
NOT_RUN = {"text", "rust"}
BIN = Path(sys.executable).parent


def name(page: Path) -> str:
    """The page's path from the repository's root (docs/howto/tasks.md)."""
    return str(page.relative_to(REPO))


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line, language, text) of every fenced block of `page`."""
    out, lines, i = [], page.read_text().split("\n"), 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if m:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append((i + 1, m.group(1), "\n".join(lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return out


def test_every_block_says_what_it_is():
    untagged = [f"{name(p)}:{line}" for p in PAGES for line, lang, _ in blocks(p) if lang not in RUN | NOT_RUN]
    assert not untagged, f"blocks without a known language tag: {untagged}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: name(p))
def test_blocks_run_as_written(page, tmp_path):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", MPLBACKEND="Agg")
    script = []
    for line, lang, text in blocks(page):
        where = f"{name(page)}:{line}"
        if lang == "python":
            # The page's python blocks run in one interpreter, in order: later ones use
            # earlier names. Each announces itself, so a failure names its block.
            script += [f"print('@@ {where}', flush=True)", text]
        elif lang == "toml":
            check_toml(text, where, tmp_path)
        elif lang == "sh":
            for cmd in text.splitlines():
                if re.match(r"^(rdmalab|python3?|\.venv/bin/python) ", cmd):
                    r = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                                       timeout=300)
                    assert r.returncode == 0, f"{where}: `{cmd}`: {r.stderr[-3000:]}"
    if script:
        r = subprocess.run([sys.executable, "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
        block = ([ln for ln in r.stdout.splitlines() if ln.startswith("@@ ")] or ["@@ ?"])[-1][3:]
        assert r.returncode == 0, f"{block}: {r.stderr[-3000:]}"


def check_toml(text: str, where: str, folder: Path) -> None:
    spec = tomllib.loads(text)
    named = re.match(r"^# (\S+\.toml):", text)
    if named:
        (folder / named.group(1)).write_text(text)
    if "topology" in spec:
        _core.Simulation.from_toml(text, str(folder / "block.toml"))
    elif "base" in spec or "scenario" in spec:
        from rdmalab.experiments.sweep import Sweep
        path = folder / "block_sweep.toml"
        path.write_text(text)
        assert Sweep.from_file(path).expand(), where
