"""One way to do each dangerous thing (DESIGN.md, principle 8): each job has one function,
and these tests fail when code in any distribution does the job another way.

A fix made in one place is a fix everywhere only while nothing else does the same job:
the patterns below came back in new code after they were fixed (#40).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[1]
SOURCES = sorted(
    p
    for top in ("core", "providers", "plugins")
    for p in (ROOT / top).rglob("src/**/*.py")
    if ".venv" not in p.parts
)


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source text of ``node`` (ast.get_source_segment splits the file on every call)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if first == last:
        return lines[first][start:end].decode("utf-8")
    parts = [lines[first][start:], *lines[first + 1 : last], lines[last][:end]]
    return b"".join(parts).decode("utf-8")


def _calls(path: Path) -> Iterator[tuple[ast.Call, str, str]]:
    """(the call, its callee's dotted text, the text of its arguments) for each call."""
    raw = path.read_bytes()
    lines = raw.splitlines(keepends=True)
    for node in ast.walk(ast.parse(raw, filename=str(path))):
        if isinstance(node, ast.Call):
            callee = _segment(lines, node.func)
            args = " ".join(_segment(lines, a) for a in [*node.args, *node.keywords])
            yield node, callee, args


def _where(path: Path, node: ast.AST) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{shown}:{getattr(node, 'lineno', 0)}"


def test_there_are_sources_to_check() -> None:
    names = {p.name for p in SOURCES}
    assert {"_policy.py", "_audit.py", "_config.py"} <= names


# -- an allow-list matches mounted names only ----------------------------------------------

#: What compiles or matches a glob of tool names.
_GLOB_CALLS = ("_globs", "_matches", "fnmatch.fnmatch", "fnmatch.fnmatchcase", "fnmatch.filter")


def allow_lists_built_another_way(paths: list[Path]) -> list[str]:
    """Calls that compile or match an allow-list's globs other than through
    ``toolwire_policy._policy.AllowList`` (whose ``admits`` takes mounted names only)."""
    found = []
    for path in paths:
        for node, callee, args in _calls(path):
            if callee.split(".")[-1] in {c.split(".")[-1] for c in _GLOB_CALLS} and (
                "allow" in args.lower()
            ):
                found.append(f"{_where(path, node)}: {callee}({args})")
    return [f for f in found if "AllowList" not in f and "cls(_globs(globs))" not in f]


def test_every_allow_list_matches_mounted_names_only() -> None:
    assert [] == allow_lists_built_another_way(SOURCES)


def test_the_allow_list_check_sees_a_glob_built_another_way(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "rx = _globs(rule.allow)\nok = _matches(self._allow, names)\nfine = _globs(deny)\n"
    )
    assert [
        "bad.py:1: _globs(rule.allow)",
        "bad.py:2: _matches(self._allow names)",
    ] == allow_lists_built_another_way([bad])
