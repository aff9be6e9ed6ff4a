"""Docstring parsing: summaries and parameter descriptions (Google, NumPy, Sphinx), and
attribute docstrings of a model's fields."""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import textwrap

from toolwire._exports import publish


class Docstring:
    """A parsed docstring: the description and the per-parameter descriptions."""

    __slots__ = ("description", "params", "returns")

    def __init__(self, description: str, params: dict[str, str], returns: str | None) -> None:
        self.description = description
        self.params = params
        self.returns = returns

    def __repr__(self) -> str:
        return f"Docstring(description={self.description!r}, params={self.params!r})"


_GOOGLE_PARAM_HEADERS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
    }
)
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_PARAM = re.compile(r"^\*{0,2}(\w+)\s*(?::\s*(.*))?$")
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")


def _summary(lines: list[str]) -> str:
    # The description: each line trimmed, empty lines dropped, joined with "\n".
    return "\n".join(stripped for line in lines if (stripped := line.strip()))


def _collect_indented(lines: list[str], start: int, base_indent: int) -> tuple[list[str], int]:
    """Lines after ``start`` indented deeper than ``base_indent`` (blank lines kept inside)."""
    out: list[str] = []
    i = start
    while i < len(lines):
        line = lines[i]
        if line.strip() and (len(line) - len(line.lstrip())) <= base_indent:
            break
        out.append(line)
        i += 1
    while out and not out[-1].strip():
        out.pop()
    return out, i


def _join(first: str, rest: list[str]) -> str:
    parts = [first.strip()] if first.strip() else []
    parts.extend(r.strip() for r in rest if r.strip())
    return " ".join(parts)


def parse_docstring(doc: str | None) -> Docstring:
    """Parse a Google, NumPy or Sphinx style docstring.

    Returns the description (the text before the first section, each line
    trimmed, empty lines dropped) and a mapping from parameter name to its
    description. Unknown or malformed sections are left out of the description,
    never raised on.
    """
    if not doc:
        return Docstring("", {}, None)
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    returns: str | None = None
    desc_lines: list[str] = []
    in_description = True
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        # NumPy: a header line followed by a dashed underline.
        if i + 1 < n and stripped and _NUMPY_UNDERLINE.match(lines[i + 1]):
            in_description = False
            header = stripped.lower()
            body, i = _numpy_section(lines, i + 2)
            if header in ("parameters", "other parameters", "keyword arguments"):
                params.update(_numpy_params(body))
            elif header in ("returns", "yields"):
                returns = _summary(body) or returns
            continue
        # Sphinx: ":param name: text" fields.
        m = _SPHINX_FIELD.match(stripped)
        if m and m.group(1) in (
            "param",
            "parameter",
            "arg",
            "argument",
            "key",
            "keyword",
            "returns",
            "return",
            "type",
            "rtype",
            "raises",
            "raise",
        ):
            in_description = False
            kind, arg, text = m.group(1), (m.group(2) or "").strip(), m.group(3)
            rest, i = _collect_indented(lines, i + 1, len(line) - len(line.lstrip()))
            value = _join(text, rest)
            if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and arg:
                params[arg.split()[-1]] = value
            elif kind in ("returns", "return"):
                returns = value
            continue
        # Google: "Args:" then indented "name (type): text".
        m = _GOOGLE_SECTION.match(stripped)
        if m and line == line.lstrip() and (i + 1 >= n or lines[i + 1].startswith((" ", "\t"))):
            in_description = False
            header = m.group(1).strip().lower()
            body, i = _collect_indented(lines, i + 1, 0)
            if header in _GOOGLE_PARAM_HEADERS:
                params.update(_google_params(body))
            elif header in ("returns", "return", "yields"):
                returns = _summary(body) or returns
            continue
        if in_description:
            desc_lines.append(line)
        i += 1
    return Docstring(_summary(desc_lines), params, returns)


def _google_params(body: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    nonblank = [b for b in body if b.strip()]
    if not nonblank:
        return out
    indent = min(len(b) - len(b.lstrip()) for b in nonblank)
    i = 0
    while i < len(body):
        line = body[i]
        if not line.strip() or (len(line) - len(line.lstrip())) != indent:
            i += 1
            continue
        m = _GOOGLE_PARAM.match(line.strip())
        rest, i = _collect_indented(body, i + 1, indent)
        if m:
            out[m.group(1)] = _join(m.group(3), rest)
    return out


def _numpy_section(lines: list[str], start: int) -> tuple[list[str], int]:
    out: list[str] = []
    i = start
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and _NUMPY_UNDERLINE.match(lines[i + 1]):
            break
        out.append(lines[i])
        i += 1
    return out, i


def _numpy_params(body: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(body):
        line = body[i]
        if not line.strip() or line.startswith((" ", "\t")):
            i += 1
            continue
        rest, i = _collect_indented(body, i + 1, 0)
        for name_part in line.split(":", 1)[0].split(","):
            m = _NUMPY_PARAM.match(name_part.strip())
            if m:
                out[m.group(1)] = _join("", rest)
    return out


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Docstrings written under class attributes (``x: int`` then ``\"\"\"text\"\"\"``).

    Read once from the class source; a class without source (built at run time)
    gives an empty mapping.
    """
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return {}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            body = node.body
            for a, b in itertools.pairwise(body):
                if (
                    isinstance(a, ast.AnnAssign)
                    and isinstance(a.target, ast.Name)
                    and isinstance(b, ast.Expr)
                    and isinstance(b.value, ast.Constant)
                    and isinstance(b.value.value, str)
                ):
                    out[a.target.id] = inspect.cleandoc(b.value.value)
            break
    return out


publish(globals())
