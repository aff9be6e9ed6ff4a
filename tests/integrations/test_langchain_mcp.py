"""#41: MCP tools in LangChain (langchain-mcp-adapters, over the MCP SDK it pins) take their
effect from the server's annotations, believed only of a server the policy trusts. The
server is real: the official SDK's (2.x), a subprocess over stdio, run by the workspace's
Python (the adapters' environment has the 1.x SDK): a cross-version peer."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire_langchain")
adapters = pytest.importorskip("langchain_mcp_adapters.tools")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

import toolwire as tw  # noqa: E402
from toolwire.bridges import Governor  # noqa: E402
from toolwire_langchain import ToolwireMiddleware, mcp_sources  # noqa: E402
from toolwire_policy import Policy, PolicyPlugin, read_records  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "plugins" / "mcp" / "mcp_server.py"
PYTHON = ROOT / ".venv" / "bin" / "python"  # the workspace's: the MCP SDK 2.x

POLICY = """
deny_effects = ["destructive"]
trusted_mcp_servers = ["files"]

[audit]
path = "audit.jsonl"
"""


def _agent_run(
    tmp_path: Path,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    policy: str = POLICY,
    prefixed: bool = False,
) -> str:
    if not PYTHON.exists():
        pytest.skip("the workspace's Python runs the MCP server (uv sync first)")
    record = tmp_path / "reached.jsonl"
    connection: Any = {
        "transport": "stdio",
        "command": str(PYTHON),
        "args": [str(SERVER), "stdio"],
        "env": {**os.environ, "MCP_RECORD": str(record)},
    }
    found = asyncio.run(
        adapters.load_mcp_tools(
            None, connection=connection, server_name=server, tool_name_prefix=prefixed
        )
    )

    class OneCall(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "one-call"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            done = [m for m in messages if isinstance(m, ToolMessage)]
            if done:
                reply = AIMessage(content=str(done[-1].content))
            else:
                call = {"name": tool, "args": arguments, "id": "c1", "type": "tool_call"}
                reply = AIMessage(content="", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    (tmp_path / "policy.toml").write_text(policy)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "policy.toml")), "corp", kind="policy")
    source = mcp_sources({server: found}, prefixed=True) if prefixed else (lambda t: server)
    middleware = ToolwireMiddleware(
        governor=Governor("langchain", plugins=host), mcp_server_of=source
    )
    agent = create_agent(OneCall(), tools=found, middleware=[middleware])
    state = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}))  # the tools are async
    return str(state["messages"][-1].content)


def _reached(tmp_path: Path) -> list[str]:
    path = tmp_path / "reached.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["name"] for line in lines if line]


def _decided(tmp_path: Path) -> list[tuple[str, str, str]]:
    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    return [(r["tool"], r["decision"], r["effect"]) for r in records if r["event"] == "decision"]


def test_a_trusted_servers_hints_decide_and_an_unannotated_tool_is_destructive(
    tmp_path: Path,
) -> None:
    assert "hi" in _agent_run(tmp_path, "files", "echo", {"text": "hi"})
    assert "rejected" in _agent_run(tmp_path, "files", "delete_all", {})
    assert ["echo"] == _reached(tmp_path)  # delete_all never reached the server
    assert [
        ("echo", "allow", "read_only"),
        ("delete_all", "reject", "destructive"),
    ] == _decided(tmp_path)


def test_an_untrusted_or_unnamed_servers_hints_are_not_believed(tmp_path: Path) -> None:
    assert "rejected" in _agent_run(tmp_path, "strangers", "echo", {"text": "hi"})
    assert [] == _reached(tmp_path)
    assert [("echo", "reject", "destructive")] == _decided(tmp_path)


def test_a_prefixed_tool_is_named_as_its_server_names_it(tmp_path: Path) -> None:
    """The adapters' tool_name_prefix calls `echo` of `files` `files_echo`: a rule written
    for the server's tool (`mcp:files/echo`) still matches it, and its hints are read."""
    deny = POLICY.replace("[audit]", 'deny = ["mcp:files/echo"]\n\n[audit]')
    assert "rejected" in _agent_run(
        tmp_path, "files", "files_echo", {"text": "hi"}, policy=deny, prefixed=True
    )
    assert [] == _reached(tmp_path)
    assert "hi" in _agent_run(tmp_path, "files", "files_echo", {"text": "hi"}, prefixed=True)
    assert ["echo"] == _reached(tmp_path)


def test_mcp_sources_never_guesses_a_prefix() -> None:
    from langchain_core.tools import StructuredTool

    def status() -> str:
        """Status."""
        return ""

    plain = StructuredTool.from_function(status, name="git_status")
    assert mcp_sources({"git": [plain]})(plain) == ("git", "git_status")  # not `status`
    with pytest.raises(ValueError, match="no `files_` prefix"):
        mcp_sources({"files": [plain]}, prefixed=True)
    with pytest.raises(ValueError, match="server's name"):
        mcp_sources({"": [plain]})
    other = StructuredTool.from_function(status, name="git_status")
    assert mcp_sources({"git": [plain]})(other) is None  # known by identity, not by name
