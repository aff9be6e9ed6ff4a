"""The agent loop with the scripted test provider: rounds, limits, stop conditions, events."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire as tw
from toolwire.providers.test import TestProvider


@tw.tool_fn
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 20C"


@tw.tool_fn(effect="destructive")
def drop(table: str) -> str:
    """Drop a table."""
    return f"dropped {table}"


def call(name: str, id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": id, "arguments": arguments}


def toolset() -> tw.Toolset:
    return tw.Toolset("app", [lookup, drop])


def two_rounds_then_text() -> TestProvider:
    return TestProvider(
        script=[
            {"tool_calls": [call("lookup", "a", city="Oslo"), call("lookup", "b", city="Rome")]},
            {"tool_calls": [call("lookup", "c", city="Kyiv")]},
            {"text": "Oslo 20C, Rome 20C, Kyiv 20C."},
        ]
    )


def test_the_loop_runs_rounds_until_the_model_answers(session: tw.Session) -> None:
    result = tw.run_agent(two_rounds_then_text(), toolset(), session, "weather?")
    assert ("finished", "Oslo 20C, Rome 20C, Kyiv 20C.", 2) == (
        result.status,
        result.text,
        result.rounds,
    )
    kinds = [type(m).__name__ for m in session]
    assert [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultsMessage",
        "AssistantMessage",
        "ToolResultsMessage",
        "AssistantMessage",
    ] == kinds
    results = session.messages[3]
    assert isinstance(results, tw.ToolResultsMessage)
    assert ["Oslo: 20C", "Rome: 20C"] == [r.content for r in results.results]


def test_going_past_max_rounds_raises_and_commits_nothing_of_that_reply(
    session: tw.Session,
) -> None:
    agent = tw.Agent(two_rounds_then_text(), toolset(), max_rounds=1)
    with pytest.raises(
        tw.RoundLimitError,
        match=r"reached max_rounds=1: after 1 tool round\(s\) the model asked for tools again "
        r"\(`lookup`\)",
    ):
        agent.run(session, "weather?")
    assert isinstance(session.last, tw.ToolResultsMessage)
    assert 4 == len(session)


def test_max_rounds_defaults_to_twenty(session: tw.Session) -> None:
    script = [{"tool_calls": [call("lookup", f"c{i}", city="X")]} for i in range(21)]
    with pytest.raises(tw.RoundLimitError, match="max_rounds=20"):
        tw.run_agent(TestProvider(script=script), toolset(), session, "loop")


def test_stop_when_ends_the_loop_after_a_round(session: tw.Session) -> None:
    seen: list[tuple[str, ...]] = []

    def stop(results: tuple[tw.ToolResult, ...]) -> bool:
        seen.append(tuple(r.call_id for r in results))
        return True

    result = tw.run_agent(two_rounds_then_text(), toolset(), session, "weather?", stop_when=stop)
    assert ("stopped", 1, [("a", "b")]) == (result.status, result.rounds, seen)
    assert isinstance(session.last, tw.ToolResultsMessage)


def test_stream_yields_an_event_per_step(session: tw.Session) -> None:
    provider = TestProvider(
        script=[{"tool_calls": [call("lookup", "a", city="Oslo")]}, {"text": "done"}]
    )
    events = list(tw.Agent(provider, toolset()).stream(session, "weather?"))
    assert [
        "ToolCallStarted",
        "ToolCallDelta",
        "ReplyCompleted",
        "ToolCallDecided",
        "ToolResultReady",
        "RoundCommitted",
        "TextDelta",
        "ReplyCompleted",
        "AgentFinished",
    ] == [type(e).__name__ for e in events]
    decided = events[3]
    assert isinstance(decided, tw.ToolCallDecided)
    assert (1, "a", "run") == (decided.round, decided.call.id, decided.outcome)
    ready = events[4]
    assert isinstance(ready, tw.ToolResultReady)
    assert "Oslo: 20C" == ready.result.content
    finished = events[-1]
    assert isinstance(finished, tw.AgentFinished)
    assert "done" == finished.result.text


def test_run_passes_events_to_on_event_without_provider_events(session: tw.Session) -> None:
    events: list[Any] = []
    tw.run_agent(two_rounds_then_text(), toolset(), session, "weather?", on_event=events.append)
    assert "ToolCallDecided" == type(events[0]).__name__
    assert not any(
        isinstance(e, (tw.adapters.TextDelta, tw.adapters.ReplyCompleted)) for e in events
    )


def test_hook_decisions_and_issues_are_reported(session: tw.Session) -> None:
    hooks = tw.HookSet()
    hooks.on(drop, lambda c: tw.Reject("read-only session"))
    provider = TestProvider(
        script=[
            {"tool_calls": [call("drop", "a", table="users"), call("ghost", "b")]},
            {"text": "ok"},
        ]
    )
    events: list[Any] = []
    tw.run_agent(provider, toolset(), session, "drop it", hooks=[hooks], on_event=events.append)
    decided = [e for e in events if isinstance(e, tw.ToolCallDecided)]
    assert [("a", "rejected", "read-only session"), ("b", "invalid", decided[1].reason)] == [
        (d.call.id, d.outcome, d.reason) for d in decided
    ]
    assert "tool `ghost` is not recognized in this toolset or round" == decided[1].reason


def test_a_rejection_names_the_hook_that_rejected(session: tw.Session) -> None:
    hooks = tw.HookSet("app-rules")
    hooks.on(drop, lambda c: tw.Reject("read-only session"), name="read-only")
    provider = TestProvider(
        script=[
            {"tool_calls": [call("drop", "a", table="users"), call("lookup", "b")]},
            {"text": ""},
        ]
    )
    events: list[Any] = []
    tw.run_agent(provider, toolset(), session, "drop it", hooks=[hooks], on_event=events.append)
    decided = [e for e in events if isinstance(e, tw.ToolCallDecided)]
    assert [("rejected", "read-only"), ("invalid", "")] == [(d.outcome, d.source) for d in decided]


def test_an_answered_call_names_the_hook_that_answered(session: tw.Session) -> None:
    hooks = tw.HookSet("app-rules")
    hooks.on(drop, lambda c: tw.Complete("dropped (dry run)"), name="dry-run")
    provider = TestProvider(
        script=[{"tool_calls": [call("drop", "a", table="users")]}, {"text": "done"}]
    )
    events: list[Any] = []
    tw.run_agent(provider, toolset(), session, "drop it", hooks=[hooks], on_event=events.append)
    decided = [e for e in events if isinstance(e, tw.ToolCallDecided)]
    assert [("handled", "dry-run")] == [(d.outcome, d.source) for d in decided]


def test_a_forced_tool_round_goes_back_to_optional(session: tw.Session) -> None:
    provider = TestProvider(
        script=[{"tool_calls": [call("lookup", "a", city="Oslo")]}, {"text": "Oslo is warm."}]
    )
    turn = tw.Turn(requirement=tw.Requirement.specific("lookup"))
    result = tw.run_agent(provider, toolset(), session, "weather?", turn=turn)
    assert "finished" == result.status
    kinds = [t.requirement.kind for _, t in provider.requests]
    assert ["specific", "optional"] == kinds


def test_follow_up_can_keep_the_requirement(session: tw.Session) -> None:
    provider = TestProvider(
        script=[
            {"tool_calls": [call("lookup", "a", city="Oslo")]},
            {"tool_calls": [call("lookup", "b", city="Rome")]},
        ]
    )
    turn = tw.Turn(requirement=tw.Requirement.at_least_one())
    agent = tw.Agent(provider, toolset(), turn=turn, follow_up=turn, max_rounds=1)
    with pytest.raises(tw.RoundLimitError):
        agent.run(session, "weather?")
    assert ["at_least_one", "at_least_one"] == [t.requirement.kind for _, t in provider.requests]


def test_a_deferred_approval_pauses_the_loop_and_it_resumes(session: tw.Session) -> None:
    provider = TestProvider(
        script=[{"tool_calls": [call("drop", "a", table="users")]}, {"text": "dropped."}]
    )
    executor = tw.Executor(approval=lambda r: tw.Defer(), approval_gate="destructive_only")
    agent = tw.Agent(provider, toolset(), executor=executor)
    result = agent.run(session, "drop users")
    assert "approval_pending" == result.status
    assert result.pending is not None
    assert 2 == len(session)

    executor.resume(result.pending, [result.pending.pending[0].allow()])
    result = agent.run(session)
    assert ("finished", "dropped.") == (result.status, result.text)
    tool_results = session.messages[3]
    assert isinstance(tool_results, tw.ToolResultsMessage)
    assert "dropped users" == tool_results.results[0].content


def test_usage_is_summed_over_requests(session: tw.Session) -> None:
    usage = tw.Usage(input_tokens=10, output_tokens=2)
    provider = TestProvider(
        script=[
            tw.adapters.AssistantReply(
                "", (tw.ToolCall("a", "lookup", '{"city":"Oslo"}'),), "tool_calls", usage
            ),
            tw.adapters.AssistantReply("done", (), "stop", usage),
        ]
    )
    result = tw.run_agent(provider, toolset(), session, "weather?")
    assert (20, 4) == (result.usage.input_tokens, result.usage.output_tokens)


def test_the_heuristic_test_provider_works_with_the_loop(session: tw.Session) -> None:
    result = tw.run_agent(TestProvider(), toolset(), session, "lookup 'Oslo'")
    assert "finished" == result.status
    assert "lookup returned: Oslo: 20C" in result.text


async def test_arun_agent_runs_the_same_loop(session: tw.Session) -> None:
    result = await tw.arun_agent(two_rounds_then_text(), toolset(), session, "weather?")
    assert ("finished", 2) == (result.status, result.rounds)


async def test_astream_yields_provider_and_loop_events(session: tw.Session) -> None:
    provider = TestProvider(
        script=[{"tool_calls": [call("lookup", "a", city="Oslo")]}, {"text": "done"}]
    )
    events = [e async for e in tw.Agent(provider, toolset()).astream(session, "weather?")]
    assert "AgentFinished" == type(events[-1]).__name__
    assert any(isinstance(e, tw.adapters.ToolCallStarted) for e in events)
    assert any(isinstance(e, tw.RoundCommitted) for e in events)


async def test_arun_awaits_an_async_on_event(session: tw.Session) -> None:
    seen: list[str] = []

    async def on_event(event: Any) -> None:
        seen.append(type(event).__name__)

    await tw.Agent(two_rounds_then_text(), toolset()).arun(session, "weather?", on_event=on_event)
    assert "AgentFinished" == seen[-1]


def test_the_agent_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="provider must be a toolwire Provider, got str"):
        tw.Agent("openai", toolset())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rounds must be an int >= 0, got -1"):
        tw.Agent(TestProvider(), toolset(), max_rounds=-1)
