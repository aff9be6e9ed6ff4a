"""toolwire-openai-agents beyond the matrix: what govern() refuses to leave ungoverned,
a tool whose schema cannot be checked, and a decided call the SDK never invokes."""

from __future__ import annotations

import asyncio
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


def test_hosted_tools_and_mcp_servers_are_refused_not_left_ungoverned() -> None:
    hosted = agents.Agent(name="a", tools=[note, agents.WebSearchTool()])
    with pytest.raises(tw.UsageError, match="WebSearchTool"):
        bridge.govern(hosted, governor=Governor("openai-agents", plugins=False))

    class Server:  # any MCP server the SDK would list tools from at run time
        name = "s"

    with_mcp = agents.Agent(name="a", tools=[note], mcp_servers=[Server()])  # type: ignore[list-item]
    with pytest.raises(tw.UsageError, match="MCP servers"):
        bridge.govern(with_mcp, governor=Governor("openai-agents", plugins=False))


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
