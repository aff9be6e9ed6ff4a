"""Fixtures for the toolwire-policy tests: sample tools, calls, and policy files in tmp dirs."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolwire import Tool, ToolCall, TypedCall, tool_fn
from toolwire_policy import Policy


@tool_fn
def read_notes(path: str) -> str:
    """Read a note."""
    return f"notes of {path}"


@tool_fn(effect="mutating")
def write_notes(path: str, content: str) -> str:
    """Write a note."""
    return "ok"


@tool_fn(effect="destructive")
def drop_table(name: str) -> str:
    """Drop a table."""
    return "dropped"


@tool_fn
def http_get(url: str, headers: dict[str, str] | None = None, tags: list[str] | None = None) -> str:
    """Fetch a URL."""
    return "body"


TOOLS: dict[str, Tool[Any, Any]] = {
    t.name: t for t in (read_notes, write_notes, drop_table, http_get)
}


def make_call(
    tool: Tool[Any, Any], arguments: dict[str, Any], call_id: str = "c1"
) -> TypedCall[Any]:
    """A decoded call, as the round would hand it to the hooks."""
    text = json.dumps(arguments)
    return TypedCall(ToolCall(call_id, tool.name, text), tool, tool.validate_json(text))


PolicyFactory = Callable[[str], Policy]


@pytest.fixture
def policy_file(tmp_path: Path) -> Callable[[str], Path]:
    """``policy_file(toml)``: write a policy file (dedented) and return its path."""

    def write(text: str) -> Path:
        path = tmp_path / "policy.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def make_policy(policy_file: Callable[[str], Path]) -> PolicyFactory:
    """``make_policy(toml)``: a Policy loaded from a file holding ``toml``."""

    def make(text: str) -> Policy:
        return Policy.from_file(policy_file(text))

    return make


@pytest.fixture
def fresh_plugin_module() -> Iterator[None]:
    """Let a test import ``toolwire_policy.plugin`` anew; put the old one back afterwards."""
    import toolwire_policy

    name = "toolwire_policy.plugin"
    saved = sys.modules.pop(name, None)
    had_attr = hasattr(toolwire_policy, "plugin")
    saved_attr = getattr(toolwire_policy, "plugin", None)
    yield
    sys.modules.pop(name, None)
    if saved is not None:
        sys.modules[name] = saved
    if had_attr:
        setattr(toolwire_policy, "plugin", saved_attr)
    elif hasattr(toolwire_policy, "plugin"):
        delattr(toolwire_policy, "plugin")


@pytest.fixture
def tools() -> dict[str, Tool[Any, Any]]:
    """Sample tools by name: read_notes (read_only), write_notes (mutating),
    drop_table (destructive), http_get (read_only, nested arguments)."""
    return TOOLS


@pytest.fixture
def call_of() -> Callable[..., TypedCall[Any]]:
    """``call_of(tool_or_name, arguments, call_id="c1")``: a decoded call."""

    def build(
        tool: Tool[Any, Any] | str, arguments: dict[str, Any], call_id: str = "c1"
    ) -> TypedCall[Any]:
        return make_call(TOOLS[tool] if isinstance(tool, str) else tool, arguments, call_id)

    return build
