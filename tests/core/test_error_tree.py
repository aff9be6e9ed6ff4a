"""Everything toolwire raises is under ToolwireError (STYLE 10)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import toolwire.exceptions as exc

CORE = Path(__file__).parents[2] / "core" / "src" / "toolwire"
# Raised where Python's protocols require the builtin itself.
ALLOWED = {
    ("_lazy.py", "AttributeError"),  # a module's __getattr__ must raise AttributeError
    ("_compile.py", "AttributeError"),  # CompileOptions.__getattr__ (the 0.1 field names)
    ("_otel.py", "ImportError"),  # the optional dependency is missing: names the install command
    ("schema_arg.py", "ValueError"),  # a pydantic validator's failure (pydantic wraps it)
}
# Not errors of the API: exiting the program, and invariants that cannot fail.
NOT_API = {"SystemExit", "AssertionError"}


def _raised_builtins() -> list[str]:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                continue
            func = node.exc.func
            name = func.id if isinstance(func, ast.Name) else None
            if (
                name
                and isinstance(getattr(builtins, name, None), type)
                and issubclass(getattr(builtins, name), BaseException)
                and (path.name, name) not in ALLOWED
                and name not in NOT_API
            ):
                found.append(f"{path.relative_to(CORE)}:{node.lineno} raises {name}")
    return found


def test_core_raises_no_bare_builtin_exception() -> None:
    assert [] == _raised_builtins()


def test_every_exception_is_a_toolwire_error() -> None:
    classes = [getattr(exc, n) for n in exc.__all__ if isinstance(getattr(exc, n), type)]
    assert [] == [c.__name__ for c in classes if not issubclass(c, exc.ToolwireError)]


def test_usage_error_is_both_type_and_value_error() -> None:
    assert issubclass(exc.UsageError, TypeError)
    assert issubclass(exc.UsageError, ValueError)


def test_the_tree_in_the_docstring_names_every_exception() -> None:
    import toolwire._errors as errors

    doc = errors.__doc__ or ""
    names = [n for n in exc.__all__ if isinstance(getattr(exc, n), type)]
    assert [] == [n for n in names if n not in doc]
