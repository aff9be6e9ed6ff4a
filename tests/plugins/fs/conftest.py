"""Fixtures for the toolwire-fs tests: a root with a sibling directory outside it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolwire import Toolset
from toolwire_fs import fs_toolset


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the root, holding a secret the tools must never reach."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret\n")
    return d


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    d = tmp_path / "root"
    d.mkdir()
    return d


@pytest.fixture
def fs(root: Path) -> Toolset:
    return fs_toolset(root, allow_delete=True)


Run = Callable[..., Any]


def call_tool(toolset: Toolset, name: str, /, **arguments: Any) -> Any:
    """Validate the arguments as the model would send them (JSON), then run the tool."""
    tool = toolset.get(name)
    assert tool is not None, name
    return tool.call(tool.validate_json(json.dumps(arguments)))


@pytest.fixture
def run(fs: Toolset) -> Run:
    """``run("read_file", path="a.txt")``: call a tool of the ``fs`` fixture's toolset."""

    def run(name: str, /, **arguments: Any) -> Any:
        return call_tool(fs, name, **arguments)

    return run
