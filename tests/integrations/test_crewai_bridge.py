"""toolwire-crewai beyond the matrix: CrewAI runs a tool whose hook raised and lets a
later hook change the input in place, so the bridge refuses what it cannot stand behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

crewai = pytest.importorskip("crewai")
bridge = pytest.importorskip("toolwire_crewai")

# Only where CrewAI is installed (set earlier, they would reach every test of the worker).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from _matrix import ALICE, EFFECTS, Runs  # noqa: E402
from crewai.hooks.tool_hooks import (  # noqa: E402
    get_before_tool_call_hooks,
    register_before_tool_call_hook,
    unregister_before_tool_call_hook,
)

import toolwire as tw  # noqa: E402
from toolwire.bridges import Governor  # noqa: E402


@pytest.fixture
def row(tmp_path: Path) -> Any:
    from _row_crewai import CrewAIRow

    host = tw.PluginHost(autoload=False, disable_policies=False)
    made = CrewAIRow(host, Runs(), tmp_path)
    yield made
    made.close()


def test_a_hook_registered_after_the_policys_makes_it_refuse(row: Any) -> None:
    # A later hook may change the input in place after the decision: the call would run
    # with arguments the policy never saw.
    def sneaky(context: Any) -> None:
        context.tool_input["query"] = "something else"

    register_before_tool_call_hook(sneaky)
    try:
        seen = row.call("search", {"query": "tides"}, ALICE)
    finally:
        unregister_before_tool_call_hook(sneaky)
    assert seen.text is not None
    assert "could change the arguments it decided" in seen.text
    assert [] == row.runs.ran


def test_a_failure_inside_the_policys_hook_refuses_the_call(tmp_path: Path) -> None:
    # CrewAI swallows a hook's exception and runs the tool (fail open): the bridge's hook
    # never raises, and refuses instead.
    from _row_crewai import CrewAIRow

    def broken(context: Any) -> tw.Principal:
        raise RuntimeError("the principal mapping is broken")

    host = tw.PluginHost(autoload=False, disable_policies=False)
    made = CrewAIRow(host, Runs(), tmp_path)
    made.governance.principal_from = broken
    try:
        seen = made.call("search", {"query": "tides"}, ALICE)
    finally:
        made.close()
    assert seen.text is not None
    assert "could not decide it (RuntimeError)" in seen.text
    assert [] == made.runs.ran


def test_govern_again_replaces_its_hooks_and_remove_takes_them_away() -> None:
    before = len(get_before_tool_call_hooks())
    first = bridge.govern(governor=Governor("crewai", plugins=False))
    second = bridge.govern(governor=Governor("crewai", plugins=False))
    assert before + 1 == len(get_before_tool_call_hooks())
    second.remove()
    assert before == len(get_before_tool_call_hooks())
    del first


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [({"to": "bob@example.com", "body": "hi"}, True), ({"body": "x" * 100_000}, False)],
)
def test_an_approval_question_shows_every_argument_or_is_not_asked(
    arguments: dict[str, Any], shown: bool
) -> None:
    question = bridge.approval_question("send_mail", arguments, "requires approval")
    if not shown:
        assert question is None
        return
    assert question is not None
    assert '"to": "bob@example.com"' in question
    assert '"body": "hi"' in question


def test_effects_come_from_the_application_else_destructive() -> None:
    governor = Governor("crewai", plugins=False, effects=EFFECTS)
    assert tw.ToolEffect.READ_ONLY == governor.effect_of("search")
    assert tw.ToolEffect.DESTRUCTIVE == governor.effect_of("anything_else")


class _Audits:
    """A policy that allows every call and keeps the attempts it is told of."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.results: list[str] = []

    @tw.hookimpl
    def toolwire_tool_decision(self, call: Any, context: Any) -> None:
        return None

    @tw.hookimpl
    def toolwire_tool_result(self, call: Any, result: Any, context: Any) -> None:
        self.results.append(result.content)

    @tw.hookimpl
    def toolwire_audit(self, event: Any, context: Any) -> None:
        self.events.append(event.kind)


def _context(query: str, result: str | None = None) -> Any:
    from crewai.hooks.tool_hooks import ToolCallHookContext
    from crewai.tools import tool as crew_tool

    def search(query: str) -> str:
        """Search."""
        return f"found {query}"

    structured = crew_tool("search")(search).to_structured_tool()
    return ToolCallHookContext(
        tool_name="search", tool_input={"query": query}, tool=structured, tool_result=result
    )


def test_a_call_decided_in_crewais_thread_runs_with_no_loop_and_is_recorded() -> None:
    import asyncio

    policy = _Audits()
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    governance = bridge.govern(governor=Governor("crewai", plugins=host, effects=EFFECTS))
    try:
        called = _context("tides")
        assert governance.before(called) is None  # allowed: CrewAI runs the tool now
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()  # and no loop of toolwire's runs while it does
        called.tool_result = "found tides"
        assert governance.after(called) is None  # as it was: nothing redacted
        assert ["found tides"] == policy.results
        # CrewAI's async paths call the hooks with a loop running: decided all the same.

        async def in_a_loop() -> tuple[Any, Any]:
            inside = _context("rain")
            allowed = governance.before(inside)
            inside.tool_result = "found rain"
            return allowed, governance.after(inside)

        assert (None, None) == asyncio.run(in_a_loop())
        assert ["found tides", "found rain"] == policy.results
    finally:
        governance.remove()


def test_a_decided_call_crewai_never_reports_is_cancelled_not_held() -> None:
    policy = _Audits()
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    governance = bridge.govern(governor=Governor("crewai", plugins=host, effects=EFFECTS), hold=0.0)
    try:
        assert governance.before(_context("never reported")) is None
        assert [] == policy.events
        assert governance.before(_context("the next call")) is None  # past hold: swept
        assert ["cancelled"] == policy.events
    finally:
        governance.remove()
    assert ["cancelled", "cancelled"] == policy.events  # removed: nothing left open


SERVER = """
from mcp.server.fastmcp import FastMCP

server = FastMCP("files")


@server.tool()
def wipe(path: str) -> str:
    open(MARK, "a").write("wiped " + path + "\\n")
    return "wiped " + path


@server.tool()
def peek(path: str) -> str:
    return "peeked " + path


server.run()
"""


def test_a_crews_mcp_tool_is_decided_as_its_servers_tool(tmp_path: Path) -> None:
    # CrewAI's own MCP tools (an agent's `mcps=`), against a real MCP server over stdio:
    # a rule written for the server's tools (`mcp:SERVER/wipe`) refuses its tool, which
    # CrewAI calls by a prefixed name; the server's other tool runs.
    import sys

    from _row_crewai import OneCall
    from crewai import Agent, Crew, Task
    from crewai.mcp import MCPServerStdio

    from toolwire_policy import Policy, PolicyPlugin, read_records

    mark = tmp_path / "mark.txt"
    script = tmp_path / "files_server.py"
    script.write_text(f"MARK = {str(mark)!r}\n" + SERVER)
    server = MCPServerStdio(command=sys.executable, args=[str(script)])
    names: dict[str, str] = {}

    class Picks(OneCall):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            prompt = " ".join(str(m.get("content")) for m in messages)
            # The name CrewAI gave the server's tool (prefixed, shortened with a hash):
            # the one whose arguments the server titled after it.
            blocks = prompt.split("Tool Name: ")[1:]
            found = [b.split()[0] for b in blocks if f'"{self.suffix}Schema"' in b]
            assert len(found) == 1, prompt
            self.tool_name = found[0]
            names[self.suffix] = self.tool_name
            return super().call(messages, *args, **kwargs)

        suffix: str = ""

    agent_tools = Agent(role="r", goal="g", backstory="b", mcps=[server]).get_mcp_tools([server])
    servers = {bridge.crewai_mcp_server(t) for t in agent_tools}
    (named,) = servers  # one server, named
    assert named is not None
    policy = Policy.from_text(
        f'deny = ["mcp:{named}/wipe"]\n[audit]\npath = "{tmp_path / "audit.jsonl"}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(policy), "corp", kind="policy")

    def kickoff(suffix: str) -> str:
        governance = bridge.govern(governor=Governor("crewai", plugins=host))
        try:
            llm = Picks(model="picks", suffix=suffix, arguments={"path": "/data"})
            agent = Agent(role="r", goal="g", backstory="b", llm=llm, mcps=[server])
            task = Task(description="go", expected_output="what it said", agent=agent)
            return str(Crew(agents=[agent], tasks=[task], verbose=False).kickoff().raw)
        finally:
            governance.remove()

    said = kickoff("wipe")
    assert "rejected" in said, said
    assert not mark.exists()  # the server's tool never ran
    assert "peeked /data" in kickoff("peek")
    records = [r for _, _, r in read_records(tmp_path / "audit.jsonl") if r]
    decided = [(r["tool"], r.get("decision")) for r in records if r["event"] == "decision"]
    assert [(names["wipe"], "reject"), (names["peek"], "allow")] == decided, decided
