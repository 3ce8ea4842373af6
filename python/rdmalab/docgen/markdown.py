"""Markdown helpers of the generated pages."""

from __future__ import annotations


def cell(text: str) -> str:
    """`text` as one table cell: on one line, `|` escaped, and `<`, `>`, `&` outside code spans
    written as entities (so that `out/<stem>/` is not read as an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)
