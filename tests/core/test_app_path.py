"""The application developer's path (#12): installed packs in the Agent, @tool_input tools
that run, and a clear refusal for a tool that cannot."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import toolwire as tw
from toolwire import hookimpl
from toolwire.providers.test import TestProvider


@tw.tool_fn
def pack_echo(text: str) -> str:
    """Echo (from an installed pack)."""
    return f"pack: {text}"


class EchoPack:
    @hookimpl
    def toolwire_register_toolsets(self, register: Any) -> None:
        register(tw.Toolset("echo-pack", [pack_echo]))


def _host() -> tw.PluginHost:
    host = tw.PluginHost(autoload=False)
    host.register(EchoPack(), "echo")
    return host


@tw.tool_fn
def local(text: str) -> str:
    """A local tool."""
    return f"local: {text}"


def _calls(*names: str) -> TestProvider:
    return TestProvider(
        script=[
            {"tool_calls": [{"name": n, "arguments": {"text": "x"}} for n in names]},
            {"text": "ok"},
        ]
    )


def test_the_agent_runs_installed_tool_packs() -> None:
    # The reproducer: a pack's tool was "not recognized" by an Agent until the user found
    # get_host().assemble(toolset) in the plugin docs.
    session = tw.Session().add_user("go")
    agent = tw.Agent(_calls("pack_echo", "local"), tw.Toolset("app", [local]), plugins=_host())
    result = agent.run(session)
    assert "finished" == result.status
    results = session.messages[-2].results  # type: ignore[union-attr]
    assert ["pack: x", "local: x"] == [r.content for r in results]


def test_plugins_false_turns_packs_off_with_the_policies() -> None:
    session = tw.Session().add_user("go")
    agent = tw.Agent(_calls("pack_echo"), tw.Toolset("app", [local]), plugins=False)
    agent.run(session)
    [result] = session.messages[-2].results  # type: ignore[union-attr]
    assert result.is_error
    assert "pack_echo" in result.content


def test_assembling_twice_adds_nothing_and_reports_nothing() -> None:
    host = _host()
    once = host.assemble(tw.Toolset("app", [local]))
    twice = host.assemble(once)
    assert ["local", "pack_echo"] == sorted(t.name for t in twice.tools())
    assert () == host.failures


# -- @tool_input classes that run -------------------------------------------------------


@tw.tool_input
class Shout(BaseModel):
    """Shout a word."""

    word: str

    def run(self) -> str:
        return self.word.upper() + "!"


@tw.tool_input
class Whisper(BaseModel):
    """Whisper a word."""

    word: str

    async def run(self) -> str:
        return self.word.lower() + "..."


@tw.tool_input
class Lookup(BaseModel):
    """Look a key up (answered by the application itself)."""

    key: str


def test_a_tool_input_class_with_run_is_its_own_implementation() -> None:
    session = tw.Session().add_user("go")
    provider = TestProvider(
        script=[
            {
                "tool_calls": [
                    {"name": "shout", "arguments": {"word": "hey"}},
                    {"name": "whisper", "arguments": {"word": "HEY"}},
                ]
            },
            {"text": "ok"},
        ]
    )
    tw.Agent(provider, tw.Toolset("app", [Shout, Whisper]), plugins=False).run(session)
    results = session.messages[-2].results  # type: ignore[union-attr]
    assert ["HEY!", "hey..."] == [r.content for r in results]
    shout = tw.tool_of(Shout)
    assert "A!" == shout.call(shout.validate_python({"word": "a"}))


def test_a_tool_without_implementation_is_fine_when_a_hook_answers_its_calls() -> None:
    # #25.19: the Agent refused @tool_input tools without an implementation when it was
    # made, although a decision hook answering every call with Complete (the seed's own
    # pattern) means none ever runs. Only a call that reaches execution is refused.
    hooks = tw.HookSet()
    hooks.on(Lookup, lambda call: tw.Complete("from the cache"))
    provider = TestProvider(
        script=[
            {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"key": "k"}}]},
            {"text": "ok"},
        ]
    )
    session = tw.Session().add_user("go")
    agent = tw.Agent(provider, tw.Toolset("app", [Lookup]), hooks=[hooks], plugins=False)
    agent.run(session)
    [result] = session.messages[-2].results  # type: ignore[union-attr]
    assert "from the cache" == result.content


@pytest.mark.parametrize("make", ["agent", "executor"])
def test_a_call_that_reaches_execution_with_nothing_to_run_is_an_error_result(make: str) -> None:
    toolset = tw.Toolset("app", [Shout, Lookup])
    call = tw.ToolCall("c1", "lookup", '{"key": "k"}')
    if make == "executor":
        result = tw.Executor(tools=toolset, plugins=False).execute(call)
    else:
        provider = TestProvider(
            script=[
                {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"key": "k"}}]},
                {"text": "ok"},
            ]
        )
        session = tw.Session().add_user("go")
        tw.Agent(provider, toolset, plugins=False).run(session)
        [result] = session.messages[-2].results  # type: ignore[union-attr]
    assert result.is_error
    assert "tool `lookup` has no implementation" in result.content
    assert "call.complete(output)" in result.content


def test_your_own_loop_still_answers_a_tool_without_implementation() -> None:
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("app", [Lookup]), plugins=False)
    reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", "lookup", '{"key": "k"}'),))
    out = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(out, tw.NeedsTools)
    out.round.commit([c.complete(f"value of {c.input.key}") for c in out.round.calls])
    assert "value of k" == session.messages[-1].results[0].content  # type: ignore[union-attr]
