"""The code's comments and docstrings name no tracker number, work period or internal label
for a paper, as the documentation pages do not (`test_docs_site.py`): a newcomer reads them
too, and cannot resolve a tracker's numbers or the names of work periods. The patterns are `forbidden_words.py`'s.

Scanned: the comments of `crates/**/*.rs` (line and block comments, doc comments included),
the comments and docstrings of `python/**/*.py`, `bench/**/*.py` and `tests/**/*.py`, and
the comments of the TOML files under `python/` and `bench/`, of `Makefile` and of `.ci/run`.
String literals are code, not comments: the sample lines that test a grep (such as
`test_docs_site.py`'s) are strings and are not scanned, nor is `name#0` in a format string.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from forbidden_words import matches

REPO = Path(__file__).resolve().parents[2]


def rust_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment of a Rust source, strings and char literals skipped."""
    out: list[tuple[int, str]] = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i:end]))
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        elif m := re.compile(r'b?r(#*)"').match(text, i):
            if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                i += 1  # an identifier ending in r or br
                continue
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            line += text.count("\n", i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + 1
        elif c == "'":
            m = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'").match(text, i)
            i = m.end() if m else i + 1  # a char literal, or a lifetime's quote
        else:
            i += 1
    return out


def python_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every string that stands as a statement (docstrings,
    the `#:` notes' neighbours) of a Python source."""
    out = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
           if t.type == tokenize.COMMENT]
    lines = text.split("\n")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out += [(k, lines[k - 1]) for k in range(node.lineno, node.end_lineno + 1)]
    return out


def hash_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of the `#` comments of a TOML file, a Makefile or a shell script: a `#` at
    a line's start or after a blank, outside quotes."""
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        bare = re.sub(r'"(?:\\.|[^"\\])*"|\'[^\']*\'', lambda m: " " * len(m.group(0)), line)
        m = re.search(r"(?:^|\s)(#.*)", bare)
        if m:
            out.append((number, line[m.start(1):]))
    return out


def sources() -> list[Path]:
    files = [*REPO.glob("crates/**/*.rs"), *REPO.glob("python/**/*.py"), *REPO.glob("bench/**/*.py"),
             *REPO.glob("tests/**/*.py"), *REPO.glob("tests/**/*.rs"), *REPO.glob("python/**/*.toml"),
             *REPO.glob("bench/**/*.toml"), REPO / "Makefile", REPO / ".ci" / "run"]
    return sorted(p for p in set(files) if p.is_file() and "target" not in p.relative_to(REPO).parts)


def comments(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".rs":
        return rust_comments(text)
    if path.suffix == ".py":
        return python_comments(text)
    return hash_comments(text)


def hits(path: Path, root: Path = REPO) -> list[str]:
    return [f"{path.relative_to(root)}:{line}: `{words}`: {why}"
            for line, text in comments(path) for words, why in matches(text)]


def test_comments_name_no_internal_process():
    files = sources()
    assert any(p.name == "lib.rs" for p in files) and any(p.name == "scenario.py" for p in files)
    found = [h for path in files for h in hits(path)]
    assert not found, f"{len(found)} hits:\n" + "\n".join(found)


def test_the_scan_finds_what_it_should(tmp_path):
    rs = tmp_path / "a.rs"
    rs.write_text('//! as issue 12 said\n#[derive(Debug)]\nstruct A; // see stop 62\n'
                  'fn f(x: &str) -> String { format!("{}#0 issue 7", x) } /* seed 003\'s rule */\n'
                  "fn g<'a>(c: char) -> bool { c == '\"' } // this session\n"
                  'const R: &str = r#"issue 9 "quoted" // not a comment"#; /// #12\n')
    assert [h.split(": ")[0] for h in hits(rs, tmp_path)] == ["a.rs:1", "a.rs:3", "a.rs:4", "a.rs:5", "a.rs:6"]
    py = tmp_path / "b.py"
    py.write_text('"""Module: issue 12."""\nX = "issue 13 in a string is code"  # on this branch\n'
                  'def f():\n    """Seeds 004\'s\n    rule."""\n    return f"{X}#0"\n')
    assert [h.split(": ")[0] for h in hits(py, tmp_path)] == ["b.py:2", "b.py:1", "b.py:4"]
    toml = tmp_path / "c.toml"
    toml.write_text('# issue 28 §3\nname = "a #1 in a string, issue 5"\nx = 1  # stop 69\n')
    assert [h.split(": ")[0] for h in hits(toml, tmp_path)] == ["c.toml:1", "c.toml:3"]
