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


@pytest.mark.parametrize("make", ["agent", "executor"])
def test_a_tool_that_cannot_run_is_refused_when_the_agent_or_executor_is_made(make: str) -> None:
    toolset = tw.Toolset("app", [Shout, Lookup])

    def build() -> object:
        if make == "agent":
            return tw.Agent(TestProvider(), toolset, plugins=False)
        return tw.Executor(tools=toolset, plugins=False)

    with pytest.raises(tw.UsageError) as caught:
        build()
    text = str(caught.value)
    assert "cannot run `lookup`" in text
    assert "`run(self)` method" in text
    assert "call.complete(output)" in text


def test_your_own_loop_still_answers_a_tool_without_implementation() -> None:
    session = tw.Session().add_user("go")
    turn = tw.resolve_turn(tw.Toolset("app", [Lookup]), plugins=False)
    reply = tw.adapters.AssistantReply("", (tw.ToolCall("c1", "lookup", '{"key": "k"}'),))
    out = tw.adapters.decode_reply(session, turn, reply)
    assert isinstance(out, tw.NeedsTools)
    out.round.commit([c.complete(f"value of {c.input.key}") for c in out.round.calls])
    assert "value of k" == session.messages[-1].results[0].content  # type: ignore[union-attr]
