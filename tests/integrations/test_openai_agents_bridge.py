"""toolwire-openai-agents beyond the matrix: what govern() refuses to leave ungoverned,
a tool whose schema cannot be checked, and a decided call the SDK never invokes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import toolwire as tw

agents = pytest.importorskip("agents")
bridge = pytest.importorskip("toolwire_openai_agents")

from toolwire.bridges import Governor  # noqa: E402


@agents.function_tool
def note(text: str) -> str:
    """Write a note."""
    return text


def test_hosted_tools_are_refused_not_left_ungoverned() -> None:
    hosted = agents.Agent(name="a", tools=[note, agents.WebSearchTool()])
    with pytest.raises(tw.UsageError, match="WebSearchTool"):
        bridge.govern(hosted, governor=Governor("openai-agents", plugins=False))


SERVER = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "mcp_server.py"


def _mcp_run(tmp_path: Path, server: str, tool: str, arguments: dict[str, Any]) -> str:
    from agents import RunConfig, Runner
    from agents.mcp import MCPServerStdio
    from agents.testing.model import ScriptedModel, assistant_message, function_call

    from toolwire_policy import Policy, PolicyPlugin

    (tmp_path / "policy.toml").write_text(
        'deny_effects = ["destructive"]\ntrusted_mcp_servers = ["files"]\n'
        '[audit]\npath = "audit.jsonl"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "policy.toml")), "corp", kind="policy")
    env = {**os.environ, "MCP_RECORD": str(tmp_path / "reached.jsonl")}
    params: Any = {"command": sys.executable, "args": [str(SERVER), "stdio"], "env": env}

    async def run() -> str:
        async with MCPServerStdio(params=params, name=server) as mcp:
            agent = agents.Agent(name="a", mcp_servers=[mcp])
            governed = bridge.govern(agent, governor=Governor("openai-agents", plugins=host))
            model = ScriptedModel(
                [[function_call(tool, arguments, call_id="c1")], [assistant_message("done")]]
            )
            result = await Runner.run(
                governed.clone(model=model), "go", run_config=RunConfig(tracing_disabled=True)
            )
            outputs = [
                str(i.output) for i in result.new_items if type(i).__name__ == "ToolCallOutputItem"
            ]
            return " ".join(outputs)

    return asyncio.run(run())


def _decided(tmp_path: Path) -> list[tuple[str, str, str]]:
    from toolwire_policy import read_records

    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    return [(r["tool"], r["decision"], r["effect"]) for r in records if r["event"] == "decision"]


def _reached(tmp_path: Path) -> list[str]:
    path = tmp_path / "reached.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["name"] for line in lines if line]


def test_an_agents_mcp_servers_are_governed_by_their_hints_under_the_trust_rules(
    tmp_path: Path,
) -> None:
    # A real MCP server (the official SDK's, over stdio), as the SDK lists its tools each
    # turn: they were refused before, as tools nothing could govern.
    pytest.importorskip("toolwire_policy")
    assert "echo: hi" in _mcp_run(tmp_path, "files", "echo", {"text": "hi"})
    assert "rejected" in _mcp_run(tmp_path, "files", "delete_all", {})
    assert "rejected" in _mcp_run(tmp_path, "strangers", "echo", {"text": "hi"})
    assert ["echo"] == _reached(tmp_path)  # what was refused never reached the server
    assert [
        ("echo", "allow", "read_only"),
        ("delete_all", "reject", "destructive"),
        ("echo", "reject", "destructive"),  # an untrusted server's hint is not believed
    ] == _decided(tmp_path)


def test_govern_leaves_the_agent_given_unchanged_and_governs_once() -> None:
    agent = agents.Agent(name="a", tools=[note])
    governed = bridge.govern(agent, governor=Governor("openai-agents", plugins=False))
    assert agent.tools[0] is note
    assert governed.tools[0] is not note
    again = bridge.govern(governed, governor=Governor("openai-agents", plugins=False))
    assert again.tools[0] is governed.tools[0]  # not wrapped twice


def test_a_tool_whose_schema_cannot_be_checked_is_refused() -> None:
    odd = agents.FunctionTool(
        name="odd",
        description="odd",
        params_json_schema={"type": "no-such-type"},
        on_invoke_tool=lambda ctx, text: pytest.fail("ran"),  # type: ignore[arg-type,return-value]
    )
    governed = bridge.govern(
        agents.Agent(name="a", tools=[odd]), governor=Governor("openai-agents", plugins=False)
    )
    [tool] = governed.tools
    ctx = agents.tool_context.ToolContext(
        context=None, tool_name="odd", tool_call_id="c1", tool_arguments="{}"
    )
    out = asyncio.run(tool.on_invoke_tool(ctx, "{}"))
    assert out.startswith("The call was rejected and did not run: its schema cannot be checked")


def test_a_decided_call_the_sdk_never_invokes_is_cancelled_and_audited(tmp_path: Any) -> None:
    from toolwire_policy import Policy, PolicyPlugin, read_records

    (tmp_path / "p.toml").write_text('[audit]\npath = "audit.jsonl"\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    governed = bridge.govern(
        agents.Agent(name="a", tools=[note]),
        governor=Governor("openai-agents", plugins=host, effects={"note": "read_only"}),
        hold=0.2,
    )
    [tool] = governed.tools

    async def asked_and_dropped() -> bool:
        ctx = agents.RunContextWrapper(context=None)
        answer = await tool.needs_approval(ctx, {"text": "x"}, "c1")  # type: ignore[operator]
        await asyncio.sleep(0.6)  # the SDK never invokes it (a guardrail stopped it)
        return bool(answer)

    assert asyncio.run(asked_and_dropped()) is False
    events = [(r["event"], r["call_id"]) for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    assert ("decision", "c1") in events
    assert ("cancelled", "c1") in events
