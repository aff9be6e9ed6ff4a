"""The workspace's structure: distributions other than core use core's public modules only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DISTRIBUTIONS = sorted(
    p.parent
    for p in [*ROOT.glob("providers/*/pyproject.toml"), *ROOT.glob("plugins/*/pyproject.toml")]
)
PUBLIC = {
    "toolwire",
    "toolwire.adapters",
    "toolwire.schema",
    "toolwire.media",
    "toolwire.profiles",
    "toolwire.exceptions",
    "toolwire.hookspecs",
}


def imported_modules(source: Path) -> list[tuple[int, str]]:
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
    return out


def test_there_are_distributions_to_check() -> None:
    assert {"openai", "anthropic", "gemini", "fs", "policy"} <= {d.name for d in DISTRIBUTIONS}


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=[d.name for d in DISTRIBUTIONS])
def test_distribution_imports_only_public_core_modules(dist: Path) -> None:
    private = [
        f"{src.relative_to(ROOT)}:{line} imports {module}"
        for src in sorted((dist / "src").rglob("*.py"))
        for line, module in imported_modules(src)
        if module.split(".")[0] == "toolwire" and module not in PUBLIC
    ]
    assert [] == private


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from toolwire._http import Transport\nimport toolwire.adapters\n")
    assert [(1, "toolwire._http"), (2, "toolwire.adapters")] == imported_modules(bad)
