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
    "toolwire.approvals",
    "toolwire.cli.extend",  # what a distribution's own commands use
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


def _packages() -> set[str]:
    """The import names of every distribution but core (``toolwire_mcp``, ...)."""
    found = set()
    for folder in ("providers", "plugins", "integrations"):
        for src in ROOT.glob(f"{folder}/*/src/*/__init__.py"):
            found.add(src.parent.name)
    return found


def reaches_up(source: Path, packages: set[str]) -> list[tuple[int, str]]:
    """Where ``source`` imports one of ``packages``: an import statement, or a call that
    imports a module named by a string (``importlib.import_module("toolwire_mcp")``)."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    out = [(line, m) for line, m in imported_modules(source) if m.split(".")[0] in packages]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            arg = node.args[0]
            name = arg.value if isinstance(arg, ast.Constant) else None
            if isinstance(name, str) and name.split(".")[0] in packages:
                out.append((node.lineno, name))
    return out


def test_core_imports_no_other_distribution() -> None:
    """Core never reaches up into a plugin: a distribution adds its commands through
    the hook ``toolwire_cli_commands`` (the command line imported toolwire_mcp by name)."""
    packages = _packages()
    assert {"toolwire_mcp", "toolwire_policy", "toolwire_openai"} <= packages
    up = [
        f"{src.relative_to(ROOT)}:{line} imports {module}"
        for src in sorted((ROOT / "core" / "src").rglob("*.py"))
        for line, module in reaches_up(src, packages)
    ]
    assert [] == up


def test_the_reach_up_check_sees_both_ways(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import importlib\nimport toolwire_mcp.gateway._server\n"
        "m = importlib.import_module('toolwire_mcp')\n"
    )
    assert [(2, "toolwire_mcp.gateway._server"), (3, "toolwire_mcp")] == reaches_up(
        bad, {"toolwire_mcp"}
    )


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from toolwire._http import Transport\nimport toolwire.adapters\n")
    assert [(1, "toolwire._http"), (2, "toolwire.adapters")] == imported_modules(bad)


def _bench_graph(root: Path) -> dict[str, set[str]]:
    """bench's modules and the bench modules each imports (at the top or in a function)."""
    graph: dict[str, set[str]] = {}
    for src in sorted(root.rglob("*.py")):
        rel = src.relative_to(root.parent).with_suffix("")
        name = ".".join(p for p in rel.parts if p != "__init__")
        found = set()
        for _, module in imported_modules(src):
            if module == "bench" or module.startswith("bench."):
                found.add(module)
        tree = ast.parse(src.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # `from bench import _mcp`: the module named
            if isinstance(node, ast.ImportFrom) and node.module == "bench":
                found.update(f"bench.{a.name}" for a in node.names)
        graph[name] = {m for m in found if m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt) :]
                if min(cycle) == cycle[0] and [*cycle, nxt] not in found:  # each once
                    found.append([*cycle, nxt])
            elif nxt in graph:
                walk(nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_the_benchmarks_import_no_module_in_a_circle() -> None:
    # #46: bench/_mcp.py and bench/scenarios.py imported each other.
    assert [] == _cycles(_bench_graph(ROOT / "bench"))


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text("from bench.b import X\n")
    (tmp_path / "bench" / "b.py").write_text("def f():\n    from bench import a\n")
    (tmp_path / "bench" / "c.py").write_text("import bench.a\n")
    assert [["bench.a", "bench.b", "bench.a"]] == _cycles(_bench_graph(tmp_path / "bench"))


#: The most lines a module of the project's code may have: past it, a module does more than
#: one job (the plugin host had grown to 1,318, and was split by job).
MAX_MODULE_LINES = 900


def long_modules(paths: list[Path], limit: int = MAX_MODULE_LINES) -> list[str]:
    """The modules of ``paths`` over ``limit`` lines, each with its count."""
    out = []
    for path in paths:
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > limit:
            out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {count}")
    return out


def test_no_module_is_over_900_lines() -> None:
    code = [
        *ROOT.glob("core/src/**/*.py"),
        *ROOT.glob("providers/*/src/**/*.py"),
        *ROOT.glob("plugins/*/src/**/*.py"),
        *ROOT.glob("integrations/*/src/**/*.py"),
        *ROOT.glob("bench/**/*.py"),
        *ROOT.glob("tools/*.py"),
    ]
    assert len(code) > 100
    assert [] == long_modules(sorted(code))


def test_the_length_check_sees_a_long_module(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * 901)
    (tmp_path / "short.py").write_text("x = 1\n" * 900)
    assert [f"{long}: 901"] == long_modules(sorted(tmp_path.glob("*.py")))
