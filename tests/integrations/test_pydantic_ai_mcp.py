"""#41: a framework's MCP tools take their effect from the server's annotations, believed
only of the servers the policy trusts. pydantic-ai's MCPToolset, against a real MCP server
(the official SDK's, a subprocess over stdio), under toolwire-policy through the bridge."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire_pydantic_ai")
pytest.importorskip("fastmcp")

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolwire as tw
from toolwire.bridges import Governor
from toolwire_policy import Policy, PolicyPlugin, read_records, verify_log
from toolwire_pydantic_ai import ToolwirePolicy

SERVER = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "mcp_server.py"

POLICY = """
deny_effects = ["destructive"]
trusted_mcp_servers = ["files"]

[audit]
path = "audit.jsonl"
"""


def _run(tmp_path: Path, server_id: str, tool: str, arguments: dict[str, Any]) -> str:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [
            p
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        if returned:
            return ModelResponse(parts=[TextPart(str(returned[-1].content))])
        return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id="c1")])

    env = {**os.environ, "MCP_RECORD": str(tmp_path / "reached.jsonl")}
    transport = StdioTransport(command=sys.executable, args=[str(SERVER), "stdio"], env=env)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    host.register(PolicyPlugin(Policy.from_file(policy)), "corp", kind="policy")
    governor = Governor("pydantic-ai", plugins=host)
    agent = Agent(
        FunctionModel(model),
        toolsets=[MCPToolset(transport, id=server_id)],
        capabilities=[ToolwirePolicy(governor=governor)],
    )
    return str(agent.run_sync("go").output)


def _reached(tmp_path: Path) -> list[str]:
    path = tmp_path / "reached.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["name"] for line in path.read_text().splitlines() if line]


def test_a_trusted_servers_read_only_tool_runs_and_its_unannotated_tool_is_destructive(
    tmp_path: Path,
) -> None:
    assert "echo: hi" in _run(tmp_path, "files", "echo", {"text": "hi"})
    refused = _run(tmp_path, "files", "delete_all", {})
    assert "rejected" in refused  # unannotated: destructive by the spec's defaults
    assert ["echo"] == _reached(tmp_path)  # delete_all never reached the server
    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    decided = [(r["tool"], r["decision"], r["effect"]) for r in records if r["event"] == "decision"]
    assert [("echo", "allow", "read_only"), ("delete_all", "reject", "destructive")] == decided
    assert verify_log(tmp_path / "audit.jsonl").ok


def test_an_untrusted_servers_hints_are_not_believed(tmp_path: Path) -> None:
    refused = _run(tmp_path, "strangers", "echo", {"text": "hi"})
    assert "rejected" in refused  # it says read-only; its server is not trusted
    assert [] == _reached(tmp_path)
    [decision] = [
        r for _, _, r in read_records(tmp_path / "audit.jsonl") if r and r["event"] == "decision"
    ]
    assert ("destructive", "read_only") == (decision["effect"], decision["claimed_effect"])
