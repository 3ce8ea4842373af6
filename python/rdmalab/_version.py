"""rdmalab's version and the commit it runs from: `rdmalab.__version__` reads
`"0.1.0+7f113c4"`, the package's version and the short commit.

The commit is read from git when the package runs from a git checkout (an editable
install: the sources the user runs), else the one baked into the engine when it was built
(an installed wheel), else `"unknown"`."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from rdmalab import _core

#: The package's version when no installed metadata says it (kept equal to pyproject.toml's).
BASE_VERSION = "0.1.0"


def package_version() -> str:
    """The version the package was installed as (pyproject.toml's `version`)."""
    # Lazy on purpose: importlib.metadata is slow to load, and only the version string needs it.
    from importlib import metadata

    try:
        return metadata.version("rdmalab")
    except metadata.PackageNotFoundError:
        return BASE_VERSION


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """The short commit of the running sources (see the module's doc)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
        if out.returncode == 0 and out.stdout.strip() and _tracked(here):
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return _core.build_commit()


def _tracked(here: Path) -> bool:
    """Whether this file is part of the checkout git found (not a wheel unpacked inside some
    other repository)."""
    out = subprocess.run(["git", "ls-files", "--error-unmatch", Path(__file__).name], cwd=here,
                         capture_output=True, timeout=5, check=False)
    return out.returncode == 0


def version() -> str:
    """`"<version>+<short commit>"` (a PEP 440 local version)."""
    return f"{package_version()}+{commit()}"
