"""The documentation site: it builds in strict mode, its generated pages are up to date, and
its pages name no internal process.

- `mkdocs build --strict` fails on a broken link or anchor and on a page left out of the
  navigation (`mkdocs.yml`'s `validation`);
- docs/performance.md and docs/reproductions.md are what their generators write, and the
  reproduction table has a row for every `rdmalab repro` experiment;
- README, the other top-level pages (ARCHITECTURE.md, ...) and the pages of docs/
  (CHANGELOG.md excepted, which records history) hold no tracker number, work-period name or
  internal label for a paper: readers outside cannot resolve them (`forbidden_words.py`; the
  code's comments are checked in `test_source_words.py`).
"""

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rdmalab.experiments.sweep import Sweep

from forbidden_words import FORBIDDEN

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
#: README.md and every other top-level page but the change log, then the pages of docs/.
PAGES = sorted(p for p in REPO.glob("*.md") if p.name != "CHANGELOG.md") + sorted((REPO / "docs").rglob("*.md"))


def hits(page: Path) -> list[str]:
    out = []
    for number, line in enumerate(page.read_text().split("\n"), 1):
        for pattern, why in FORBIDDEN.items():
            for m in re.finditer(pattern, line):
                out.append(f"{page.relative_to(REPO)}:{number}: `{m.group(0)}`: {why}")
    return out


def test_pages_name_no_internal_process():
    assert REPO / "ARCHITECTURE.md" in PAGES and REPO / "CHANGELOG.md" not in PAGES
    found = [h for page in PAGES for h in hits(page)]
    assert not found, f"{len(found)} hits:\n" + "\n".join(found[:60])


def test_the_grep_finds_what_it_should(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("as issue 41 said\nsee #12\nthis session\nstop 69\nseed 003's rule\nrun on this branch\n"
                    "their seed-001 meaning\n"
                    "fine: `[[links]]`, sw8:0, a#1b, the seeds 1-3, seed-1, stop_time, step 3\n")
    assert len(hits_of(page)) == 7


def hits_of(page: Path) -> list[str]:
    out = []
    for line in page.read_text().split("\n"):
        out += [m.group(0) for p in FORBIDDEN for m in re.finditer(p, line)]
    return out


def test_generated_pages_are_up_to_date():
    for script in ("bench/perf_page.py", "bench/repro_page.py", "bench/uec_page.py"):
        r = subprocess.run([sys.executable, script, "--check"], cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 0, f"{script}: {r.stderr}"


def test_every_repro_experiment_has_a_row():
    from rdmalab.experiments.repro import REGISTRY

    page = (REPO / "docs" / "reproductions.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", page, re.M))
    assert set(REGISTRY) <= rows, f"no row for {sorted(set(REGISTRY) - rows)}"


def test_performance_page_is_short():
    assert len((REPO / "docs" / "performance.md").read_text().split("\n")) < 300


def test_readme_is_short():
    assert len((REPO / "README.md").read_text().split("\n")) <= 200


def test_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e .[docs])")
    r = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO,
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert r.returncode == 0, r.stderr[-5000:]
    check_python_api_page((tmp_path / "site" / "reference" / "python-api" / "index.html").read_text())


def words(text: str) -> str:
    return " ".join(re.findall(r"[A-Za-z0-9]+", text))


def check_python_api_page(page: str) -> None:
    """The Python API page is rendered from the docstrings as the site is built (mkdocstrings),
    so it cannot be stale; what can go wrong is a member it leaves out (no docstring, a filter)
    or a docstring it does not show. Every public function, class and method has its section,
    and each section opens with the first words of that member's docstring as they are now."""
    from rdmalab.docgen import api_ref

    text = words(html.unescape(re.sub(r"<[^>]+>", " ", page)))
    missing = [name for name, _ in api_ref.entries() if f'id="{name}"' not in page]
    assert not missing, f"members without a section on the Python API page: {missing}"
    unshown = []
    for name, obj in api_ref.entries():
        first = words(api_ref.doc(obj).split("\n\n")[0].split("(")[0].split("[")[0])
        first = " ".join(first.split()[:6])
        if first not in text:
            unshown.append(f"{name}: {first!r}")
    assert not unshown, f"docstrings the Python API page does not show: {unshown}"


def test_the_sweep_tutorial_file_is_a_valid_sweep():
    # The tutorial's sweep file is the one a reader copies first: it must parse and expand to
    # the runs the tutorial says (three loads, two seeds).
    text = (REPO / "docs" / "tutorials" / "sweep.md").read_text()
    block = text.split("```toml", 1)[1].split("```", 1)[0]
    s = Sweep.from_dict(tomllib.loads(block))
    assert s.name == "fat-tree-load" and len(s.expand()) == 6
