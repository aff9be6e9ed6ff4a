"""The full tool loop through every adapter over real HTTP, sync and async, streaming or not.

resolve_turn -> run_turn (NeedsTools) -> commit -> run_turn (Finished); every
request body is checked against the openai SDK's request types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _openai_support import Adapter, validate_requests
from fakes import Call, FakeOpenAI

import toolwire as tw
from toolwire_openai._common import OpenAIBase


def _results(round_: tw.ToolRound) -> list[tw.ToolResult]:
    out = []
    for typed in round_.calls:
        tool = round_.turn.lookup(typed.call.name)
        assert tool is not None
        assert tool.fn is not None
        out.append(typed.call.complete(tool, tool.fn(**dict(typed.input))))
    return out


def _check_loop_requests(
    adapter: Adapter, bodies: list[dict[str, Any]], first: tw.ToolRound
) -> None:
    second = bodies[1]
    if adapter.api == "chat":
        messages = second["messages"]
        assert ["system", "user", "assistant", "tool", "tool"] == [m["role"] for m in messages]
        assert [c.id for c in first.tool_calls] == [c["id"] for c in messages[2]["tool_calls"]]
        assert [c.id for c in first.tool_calls] == [m["tool_call_id"] for m in messages[3:]]
        assert "sunny in Paris for 1 days" == messages[3]["content"]
    else:
        items = second["input"]
        kinds = [i.get("type", i.get("role")) for i in items]
        assert [
            "system",
            "user",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ] == kinds
        assert "gAAAAABfake-encrypted-reasoning==" == items[2]["encrypted_content"]
        assert [c.id for c in first.tool_calls] == [i["call_id"] for i in items[3:5]]
        assert [c.id for c in first.tool_calls] == [i["call_id"] for i in items[5:]]


CALLS = (
    Call.of("get_weather", {"city": "Paris"}, id="call_w"),
    Call.of("get_time", {"zone": "Europe/Paris"}, id="call_t"),
)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_full_tool_loop_sync(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = make()
    adapter.enqueue_calls(fake_openai, *CALLS, stream=stream, reasoning=True)
    adapter.enqueue_text(fake_openai, "Sunny, and it is noon.", stream=stream)
    events: list[tw.adapters.StreamEvent] = []

    first = tw.run_turn(
        provider,
        session,
        tw.resolve_turn(toolset),
        stream=stream,
        on_event=events.append if stream else None,
    )
    assert isinstance(first, tw.NeedsTools)
    assert ["call_w", "call_t"] == [c.call.id for c in first.round.calls]
    first.round.commit(_results(first.round))
    second = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    assert 5 == len(session)
    _check_loop_requests(adapter, validate_requests(fake_openai, adapter), first.round)
    if stream:
        started = [e for e in events if isinstance(e, tw.adapters.ToolCallStarted)]
        assert [("call_w", "get_weather"), ("call_t", "get_time")] == [
            (e.id, e.name) for e in started
        ]
    if adapter.keyed:
        fake_openai.assert_key_confined()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_full_tool_loop_async(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    amake: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = amake()
    adapter.enqueue_calls(fake_openai, *CALLS, stream=stream, reasoning=True)
    adapter.enqueue_text(fake_openai, "Sunny, and it is noon.", stream=stream)
    seen: list[tw.adapters.StreamEvent] = []

    async def on_event(event: tw.adapters.StreamEvent) -> None:
        seen.append(event)

    first = await tw.arun_turn(
        provider,
        session,
        tw.resolve_turn(toolset),
        stream=stream,
        on_event=on_event if stream else None,
    )
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))
    second = await tw.arun_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    if stream:
        assert isinstance(seen[-1], tw.adapters.ReplyCompleted)
    _check_loop_requests(adapter, validate_requests(fake_openai, adapter), first.round)


def test_results_are_sent_in_assistant_order_whatever_the_commit_order(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = make()
    adapter.enqueue_calls(fake_openai, *CALLS, stream=False)
    adapter.enqueue_text(fake_openai, "ok", stream=False)
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(list(reversed(_results(first.round))))
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    body = validate_requests(fake_openai, adapter)[1]
    if adapter.api == "chat":
        ids = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    else:
        ids = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    assert ["call_w", "call_t"] == ids


@pytest.mark.parametrize(
    ("requirement", "expected_chat", "expected_responses"),
    [
        (tw.Requirement.optional(), "auto", "auto"),
        (tw.Requirement.at_least_one(), "required", "required"),
        (
            tw.Requirement.specific("get_time"),
            {"type": "function", "function": {"name": "get_time"}},
            {"type": "function", "name": "get_time"},
        ),
    ],
    ids=["optional", "at_least_one", "specific"],
)
@pytest.mark.parametrize("parallel", [None, False, True])
def test_requirement_becomes_tool_choice_and_parallel_flag_is_sent(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    requirement: tw.Requirement,
    expected_chat: Any,
    expected_responses: Any,
    parallel: bool | None,
) -> None:
    provider = make()
    adapter.enqueue_calls(fake_openai, CALLS[1], stream=False)
    turn = tw.resolve_turn(toolset, requirement=requirement, parallel_calls=parallel)
    tw.run_turn(provider, session, turn)
    body = validate_requests(fake_openai, adapter)[0]
    expected = expected_chat if adapter.api == "chat" else expected_responses
    assert expected == body["tool_choice"]
    assert parallel == body.get("parallel_tool_calls")


def test_no_tools_sends_no_tool_fields(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase]
) -> None:
    provider = make()
    adapter.enqueue_text(fake_openai, "hi", stream=False)
    session = tw.Session().add_user("hi")
    turn = tw.resolve_turn(tw.Toolset("empty", []), parallel_calls=True)
    outcome = tw.run_turn(provider, session, turn)
    assert isinstance(outcome, tw.Finished)
    body = validate_requests(fake_openai, adapter)[0]
    assert set() == {"tools", "tool_choice", "parallel_tool_calls"} & set(body)


def test_tool_choice_none_is_sent_when_tools_are_offered_but_none_may_be_called(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], adapter: Adapter
) -> None:
    # A turn resolves to "none" only without tools; render it directly for the mapping.
    provider = make()
    choice = type(provider).tool_choice(tw.adapters.ToolChoice("none"))  # type: ignore[attr-defined]
    assert "none" == choice


# -- strict mode and rendering -------------------------------------------------------------


def test_strict_is_sent_explicitly_on_only_when_lossless(
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    get_weather: tw.Tool[Any, str],
    lossy: tw.Tool[Any, Any],
) -> None:
    provider = make()
    tools = provider.render_tools(tw.resolve_turn(tw.Toolset("t", [get_weather, lossy])))
    fns = [t["function"] if adapter.api == "chat" else t for t in tools]
    if adapter.name == "openai-compatible":
        assert [False, False] == ["strict" in f for f in fns]
    elif adapter.name == "openrouter":
        assert [False, False] == [f["strict"] for f in fns]  # upstreams may not honour it
    else:
        assert [True, False] == [f["strict"] for f in fns]
        assert ["city", "days"] == fns[0]["parameters"]["required"]


def test_strict_can_be_forced_on(
    adapter: Adapter, make: Callable[..., OpenAIBase], lossy: tw.Tool[Any, Any]
) -> None:
    provider = make(strict=True)
    (tool,) = provider.render_tools(tw.resolve_turn(tw.Toolset("t", [lossy])))
    fn = tool["function"] if adapter.api == "chat" else tool
    assert fn["strict"] is True
    assert fn["parameters"]["additionalProperties"] is False


def test_rendered_tools_are_cached_per_tool_and_keyed_by_description(
    make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    provider = make()
    turn = tw.resolve_turn(toolset)
    first = provider._wire_tools(turn)
    again = provider._wire_tools(tw.resolve_turn(toolset))
    assert all(a is b for a, b in zip(first, again, strict=True))
    overridden = provider._wire_tools(
        tw.resolve_turn(toolset, description_overrides={"get_time": "What time is it?"})
    )
    assert first[0] is overridden[0]
    assert first[1] is not overridden[1]
    assert "What time is it?" in str(overridden[1])
    # render_tools hands out copies: mutating them leaves the cache alone.
    provider.render_tools(turn)[0].clear()
    assert first[0] == provider.render_tools(turn)[0]


def test_an_unchanged_turn_renders_from_the_list_made_for_it(
    make: Callable[..., OpenAIBase], toolset: tw.Toolset
) -> None:
    # S1 re-render: the toolset hands back the same resolved tools for an unchanged turn,
    # so the adapter answers with the list it built for them, not tool by tool.
    provider = make()
    first = provider._wire_tools(tw.resolve_turn(toolset))
    assert first is provider._wire_tools(tw.resolve_turn(toolset))
    # A turn that changed (an override, another tool set) gets its own list ...
    overridden = provider._wire_tools(
        tw.resolve_turn(toolset, description_overrides={"get_time": "What time is it?"})
    )
    assert overridden is not first
    toolset.add(tw.tool_fn(lambda: "x", name="extra", description="Extra."))
    grown = provider._wire_tools(tw.resolve_turn(toolset))
    names = [t["function"]["name"] if "function" in t else t["name"] for t in grown]
    assert ["get_weather", "get_time", "extra"] == names
    # ... and so does another wire configuration on the same adapter.
    provider._send_strict = not provider._send_strict
    assert provider._wire_tools(tw.resolve_turn(toolset)) is not grown


def test_strict_nulls_are_removed_before_validation_and_the_raw_text_is_sent_back(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = make(strict=True)
    raw = '{"city": "Paris", "days": null}'
    adapter.enqueue_calls(fake_openai, Call("get_weather", raw, id="call_w"), stream=False)
    adapter.enqueue_text(fake_openai, "ok", stream=False)
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    call = first.round.expect_one()
    assert '{"city":"Paris"}' == call.call.arguments
    assert {"city": "Paris", "days": 1} == dict(call.input)
    first.round.commit(_results(first.round))
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    body = validate_requests(fake_openai, adapter)[1]
    if adapter.api == "chat":
        sent = body["messages"][2]["tool_calls"][0]["function"]["arguments"]
    else:
        sent = next(i for i in body["input"] if i.get("type") == "function_call")["arguments"]
    assert raw == sent


def test_session_survives_json_round_trip_between_requests(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = make()
    adapter.enqueue_calls(fake_openai, *CALLS, stream=False, reasoning=True)
    adapter.enqueue_text(fake_openai, "ok", stream=False)
    adapter.enqueue_text(fake_openai, "ok", stream=False)
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))
    resumed = tw.Session.from_json(session.to_json())
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    tw.run_turn(provider, resumed, tw.resolve_turn(toolset))
    bodies = validate_requests(fake_openai, adapter)
    assert bodies[1] == bodies[2]
