"""toolwire-adk beyond the matrix: a pack's tool on a Runner without the plugin, a failure
inside the plugin, a person who says no, and a question too long to show."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")
bridge = pytest.importorskip("toolwire_adk")

from _matrix import ALICE, Runs  # noqa: E402

import toolwire as tw  # noqa: E402


@pytest.fixture
def row(tmp_path: Path) -> Any:
    from _row_adk import AdkRow

    return AdkRow(tw.PluginHost(autoload=False, disable_policies=False), Runs(), tmp_path)


def test_a_pack_tool_on_a_runner_without_the_plugin_refuses(tmp_path: Path) -> None:
    from toolwire.bridges import Governor

    @tw.tool_fn(effect="destructive")
    def wipe(target: str) -> str:
        """Wipe a target."""
        raise AssertionError("ran without a decision")

    [tool] = bridge.tools([wipe], governor=Governor("google-adk", plugins=False))

    class Context:
        function_call_id = "c1"

    out = asyncio.run(tool.run_async(args={"target": "db"}, tool_context=Context()))
    assert "no ToolwirePlugin on this Runner decided it" in out["error"]


def test_a_failure_inside_the_plugin_refuses_the_call(row: Any) -> None:
    def broken(context: Any) -> tw.Principal:
        raise RuntimeError("the principal mapping is broken")

    original = bridge.ToolwirePlugin.__init__

    def with_broken(self: Any, **kwargs: Any) -> None:
        original(self, **kwargs)
        self.principal_from = broken

    bridge.ToolwirePlugin.__init__ = with_broken  # type: ignore[method-assign]
    try:
        seen = row.call("search", {"query": "tides"}, ALICE)
    finally:
        bridge.ToolwirePlugin.__init__ = original  # type: ignore[method-assign]
    assert seen.text is not None
    assert "could not decide it (RuntimeError)" in seen.text
    assert [] == row.runs.ran


def test_a_person_who_says_no_refuses_the_call(tmp_path: Path) -> None:
    from toolwire_policy import Policy, PolicyPlugin

    (tmp_path / "p.toml").write_text('approve = ["send_mail"]\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    from _row_adk import CONFIRM, AdkRow
    from google.genai import types

    row = AdkRow(host, Runs(), tmp_path)
    seen = row.call("send_mail", {"to": "bob@example.com"}, ALICE)
    runner, principal, session, ask = seen.paused
    assert '"to": "bob@example.com"' in ask.args["toolConfirmation"]["hint"]
    no = types.FunctionResponse(name=CONFIRM, id=ask.id, response={"confirmed": False})
    after = row._drive(
        runner,
        principal,
        session,
        types.Content(role="user", parts=[types.Part(function_response=no)]),
    )
    assert after.text is not None
    assert "a person did not approve it" in after.text
    assert [] == row.runs.ran


@pytest.mark.parametrize(
    ("arguments", "asked"), [({"to": "a"}, True), ({"to": "x" * 100_000}, False)]
)
def test_a_confirmation_shows_every_argument_or_is_not_asked(
    arguments: dict[str, Any], asked: bool
) -> None:
    hint = bridge.approval_question("send_mail", arguments, "requires approval")
    assert (hint is not None) == asked


def test_an_mcp_tools_annotations_are_believed_only_of_a_trusted_server(tmp_path: Path) -> None:
    # ADK's own McpTool (over the MCP SDK it pins), as its McpToolset makes one for each
    # tool a server lists: the decision needs no session, so none is opened.
    pytest.importorskip("google.adk.tools.mcp_tool.mcp_tool", exc_type=ImportError)
    from google.adk.tools.mcp_tool.mcp_session_manager import (
        MCPSessionManager,
        StdioConnectionParams,
    )
    from google.adk.tools.mcp_tool.mcp_tool import McpTool
    from mcp import StdioServerParameters
    from mcp.types import Tool, ToolAnnotations

    from toolwire_policy import Policy, PolicyPlugin, read_records

    (tmp_path / "p.toml").write_text(
        'deny_effects = ["destructive"]\ntrusted_mcp_servers = ["files"]\n'
        '[audit]\npath = "audit.jsonl"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    manager = MCPSessionManager(
        StdioConnectionParams(server_params=StdioServerParameters(command="false"))
    )
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}

    def mcp_tool(name: str, annotations: Any) -> Any:
        described = Tool(name=name, description=name, inputSchema=schema, annotations=annotations)
        return McpTool(mcp_tool=described, mcp_session_manager=manager)

    echo = mcp_tool("echo", ToolAnnotations(readOnlyHint=True))
    wipe = mcp_tool("wipe", None)  # says nothing: destructive, by the spec's defaults

    class Context:
        def __init__(self, call_id: str) -> None:
            self.function_call_id = call_id
            self.state: dict[str, Any] = {}

    def decide(server: str | None, tool: Any, call_id: str) -> Any:
        from toolwire.bridges import Governor

        plugin = bridge.ToolwirePlugin(
            governor=Governor("google-adk", plugins=host),
            mcp_server_of=lambda tool: server,
        )
        context = Context(call_id)
        out = asyncio.run(
            plugin.before_tool_callback(tool=tool, tool_args={"text": "hi"}, tool_context=context)
        )
        if out is None:  # allowed: ADK runs it; its result is recorded
            asyncio.run(
                plugin.after_tool_callback(
                    tool=tool, tool_args={"text": "hi"}, tool_context=context, result={"r": "hi"}
                )
            )
        return out

    assert decide("files", echo, "c1") is None  # trusted, says read-only: runs
    assert "rejected" in str(decide("files", wipe, "c2"))
    assert "rejected" in str(decide("strangers", echo, "c3"))  # not trusted: not believed
    assert "rejected" in str(decide(None, echo, "c4"))  # unnamed: not trusted either
    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    decided = [(r["tool"], r["effect"]) for r in records if r["event"] == "decision"]
    assert [
        ("echo", "read_only"),
        ("wipe", "destructive"),
        ("echo", "destructive"),
        ("echo", "destructive"),
    ] == decided
    # A toolset's tool_name_prefix renames a copy (`files_echo`): a rule written for the
    # server's tool (`mcp:files/echo`) still matches it.
    import copy

    prefixed = copy.copy(echo)
    prefixed.name = "files_echo"
    (tmp_path / "p.toml").write_text('deny = ["mcp:files/echo"]\ntrusted_mcp_servers = ["files"]\n')
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp2", kind="policy")
    assert "rejected" in str(decide("files", prefixed, "c5"))


@pytest.mark.parametrize("answer", ["approve", "deny", "not yet"])
def test_a_call_waiting_for_the_named_approvers_pauses_until_they_answer(
    tmp_path: Path, answer: str
) -> None:
    """#43: a call the policy files in the approval queue pauses with ADK's own tool
    confirmation naming the request; confirmed once they answered, it is decided again."""
    from _row_adk import CONFIRM, AdkRow
    from google.genai import types

    from toolwire.approvals import ApprovalQueue
    from toolwire_policy import Policy, PolicyPlugin

    queue_path = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        'approve = ["send_mail"]\n[approvals]\napprovers = ["group:finance"]\n'
        f'queue = "{queue_path}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    row = AdkRow(host, Runs(), tmp_path)
    seen = row.call("send_mail", {"to": "bob@example.com"}, ALICE)
    runner, principal, session, ask = seen.paused
    confirmation = ask.args["toolConfirmation"]
    request_id = confirmation["payload"][bridge.QUEUE_KEY]
    assert f"as approval request {request_id}" in confirmation["hint"]
    assert [] == row.runs.ran
    if answer != "not yet":
        ApprovalQueue(queue_path).answer(
            request_id, approve=answer == "approve", by=tw.Principal("fran", groups={"finance"}),
            reason="checked",
        )  # fmt: skip
    yes = types.FunctionResponse(name=CONFIRM, id=ask.id, response={"confirmed": True})
    after = row._drive(
        runner,
        principal,
        session,
        types.Content(role="user", parts=[types.Part(function_response=yes)]),
    )
    assert after.paused is None
    assert after.text is not None
    if answer == "approve":
        assert "sent to bob@example.com" in after.text
        assert [("send_mail", {"to": "bob@example.com"})] == row.runs.ran  # once
    elif answer == "deny":
        assert "fran denied it: checked" in after.text
        assert [] == row.runs.ran
    else:  # confirmed before they answered: the model reads where it waits
        assert f"as approval request {request_id}" in after.text
        assert [] == row.runs.ran
