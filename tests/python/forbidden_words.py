"""What a reader outside the project cannot resolve: tracker numbers, work periods and
internal labels for papers. One list for the documentation pages (`test_docs_site.py`) and
for the comments and docstrings of the code (`test_source_words.py`)."""

import re

#: Pattern -> what to write instead.
FORBIDDEN = {
    r"\b[Ii]ssues? \d+": "a tracker number: say what the thing is",
    r"(?<![\w`/&])#\d+\b": "a tracker number: say what the thing is",
    r"\b[Ss]essions?\b": "a work period: say what was measured, and when (commit, date)",
    r"\b[Ss]tops? \d+\b": "a work period: name the commit",
    r"\b[Tt]his (?:stop|branch|round)\b": "a work period: name the commit",
    r"\b[Ss]eeds?[- ]0\d\d\b": "an internal label: name the paper by its title (glossary.md)",
}

_COMPILED = [(re.compile(p), why) for p, why in FORBIDDEN.items()]


def matches(text: str) -> list[tuple[str, str]]:
    """(the words found, why they are forbidden) for each match in `text`."""
    return [(m.group(0), why) for rx, why in _COMPILED for m in rx.finditer(text)]
