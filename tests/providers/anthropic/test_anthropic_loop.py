"""The full tool loop over real HTTP (sync, async, JSON, SSE) and the request encoding.

resolve_turn -> run_turn (NeedsTools) -> commit -> run_turn (Finished); every
request body is checked against the anthropic SDK's request types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _anthropic_support import Make, enqueue, enqueue_message, enqueue_stream, validate_requests
from fakes import FakeAnthropic, anthropic_messages

import toolwire as tw
from toolwire.schema import compile_tool
from toolwire_anthropic._schema import COMPILER

M = anthropic_messages
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

TWO_CALLS = M.tool_use_message(
    ("get_weather", {"city": "Paris"}), ("get_time", {"zone": "Europe/Paris"}), text="Checking."
)


def _results(round_: tw.ToolRound) -> list[tw.ToolResult]:
    out = []
    for typed in round_.calls:
        tool = round_.turn.lookup(typed.call.name)
        assert tool is not None
        assert tool.fn is not None
        out.append(typed.call.complete(tool, tool.fn(**dict(typed.input))))
    return out


def _check_second_request(body: dict[str, Any]) -> None:
    assert "You are terse." == body["system"]
    messages = body["messages"]
    assert ["user", "assistant", "user"] == [m["role"] for m in messages]
    assert [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_fake0", "name": "get_weather",
         "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_fake1", "name": "get_time",
         "input": {"zone": "Europe/Paris"}},
    ] == messages[1]["content"]  # fmt: skip
    # All parallel results in ONE user message, in the assistant's order.
    assert [
        {"type": "tool_result", "tool_use_id": "toolu_fake0",
         "content": "sunny in Paris for 1 days"},
        {"type": "tool_result", "tool_use_id": "toolu_fake1", "content": "12:00 in Europe/Paris"},
    ] == messages[2]["content"]  # fmt: skip


# toolwire's pinned version, and the one the anthropic SDK 2.x sends: the same requests
# are valid under both.
VERSIONS = pytest.mark.parametrize("version", [None, "2026-10-21"], ids=["pinned", "sdk-2.x"])


@VERSIONS
@STREAM
def test_full_tool_loop_sync(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
    version: str | None,
) -> None:
    provider = make(anthropic_version=version) if version else make()
    enqueue(fake_anthropic, TWO_CALLS, stream=stream)
    enqueue(fake_anthropic, M.text_message("Sunny, and it is noon."), stream=stream)
    events: list[tw.adapters.StreamEvent] = []

    first = tw.run_turn(
        provider, session, tw.resolve_turn(toolset), stream=stream,
        on_event=events.append if stream else None,
    )  # fmt: skip
    assert isinstance(first, tw.NeedsTools)
    assert ["toolu_fake0", "toolu_fake1"] == [c.call.id for c in first.round.calls]
    assert '{"city":"Paris"}' == first.round.calls[0].call.arguments
    assert "tool_calls" == first.round.reply.finish_reason
    first.round.commit(_results(first.round))
    second = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    assert "stop" == second.reply.finish_reason
    assert 5 == len(session)
    bodies = validate_requests(fake_anthropic)
    assert [stream, stream] == [b.get("stream", False) for b in bodies]
    _check_second_request(bodies[1])
    if stream:
        started = [e for e in events if isinstance(e, tw.adapters.ToolCallStarted)]
        assert [(0, "toolu_fake0", "get_weather"), (1, "toolu_fake1", "get_time")] == [
            (e.index, e.id, e.name) for e in started
        ]
        assert "Checking." == "".join(
            e.text for e in events if isinstance(e, tw.adapters.TextDelta)
        )
        assert isinstance(events[-1], tw.adapters.ReplyCompleted)
    for request in fake_anthropic.requests:
        assert (version or "2023-06-01") == request.header("anthropic-version")
        assert "/v1/messages" == request.path
    fake_anthropic.assert_key_confined()


def test_the_pinned_version_differs_from_the_sdks_on_purpose() -> None:
    # If this starts failing, the SDK moved again: re-read what the new version changes
    # before deciding whether toolwire follows (docs: toolwire_anthropic.AnthropicProvider).
    from anthropic._constants import ANTHROPIC_API_VERSION

    from toolwire_anthropic import AnthropicProvider

    assert ("2023-06-01", "2026-10-21") == (AnthropicProvider.api_version, ANTHROPIC_API_VERSION)


@STREAM
async def test_full_tool_loop_async(
    fake_anthropic: FakeAnthropic,
    amake: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = amake()
    enqueue(fake_anthropic, TWO_CALLS, stream=stream)
    enqueue(fake_anthropic, M.text_message("Sunny, and it is noon."), stream=stream)
    seen: list[tw.adapters.StreamEvent] = []

    async def on_event(event: tw.adapters.StreamEvent) -> None:
        seen.append(event)

    first = await tw.arun_turn(
        provider, session, tw.resolve_turn(toolset), stream=stream,
        on_event=on_event if stream else None,
    )  # fmt: skip
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))
    second = await tw.arun_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    if stream:
        assert isinstance(seen[-1], tw.adapters.ReplyCompleted)
    _check_second_request(validate_requests(fake_anthropic)[1])


def test_streamed_and_json_replies_decode_identically(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = make()
    message = M.tool_use_message(
        ("get_weather", {"city": "Zürich", "days": 2}), text="Let me see.", thinking="Hmm."
    )
    enqueue(fake_anthropic, message, stream=False)
    enqueue(fake_anthropic, message, stream=True)
    turn = tw.resolve_turn(toolset)
    plain = provider.generate(session, turn)
    events = list(provider.stream(session, turn))
    streamed = events[-1]
    assert isinstance(streamed, tw.adapters.ReplyCompleted)
    assert plain == streamed.reply
    assert '{"city":"Zürich","days":2}' == plain.tool_calls[0].arguments


def test_results_are_sent_in_assistant_order_with_is_error(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = make()
    enqueue_message(fake_anthropic, TWO_CALLS)
    enqueue_message(fake_anthropic, M.text_message("ok"))
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    weather, time_ = first.round.calls
    first.round.commit([time_.error("ConnectionError"), weather.complete("15 degrees")])
    session.add_user("And tomorrow?")
    tw.run_turn(provider, session, tw.resolve_turn(toolset))

    last = validate_requests(fake_anthropic)[1]["messages"][-1]
    assert {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_fake0", "content": "15 degrees"},
            {"type": "tool_result", "tool_use_id": "toolu_fake1", "content": "ConnectionError",
             "is_error": True},
            {"type": "text", "text": "And tomorrow?"},
        ],
    } == last  # fmt: skip


def test_rejected_bad_calls_are_answered_in_the_same_user_message(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = make()
    enqueue_message(
        fake_anthropic,
        M.tool_use_message(("nope", {"x": 1}), ("get_weather", {"town": "Paris"})),
    )
    enqueue_message(fake_anthropic, M.text_message("sorry"))
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    assert 2 == len(first.round.issues)
    first.round.commit([])
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    results = validate_requests(fake_anthropic)[1]["messages"][2]["content"]
    assert ["toolu_fake0", "toolu_fake1"] == [r["tool_use_id"] for r in results]
    assert [True, True] == [r["is_error"] for r in results]
    assert results[0]["content"].startswith("The call was rejected and did not run: ")


def test_thinking_blocks_round_trip_through_session_json(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = make(max_tokens=4096, thinking=2048)
    blocks = [
        M.thinking_block("Paris weather needs a tool.", signature="sig-abc=="),
        M.redacted_thinking_block("redacted-data=="),
        M.tool_use_block("get_weather", {"city": "Paris"}, id="toolu_w"),
    ]
    enqueue_stream(fake_anthropic, M.stream_events(blocks))
    enqueue_message(fake_anthropic, M.text_message("Sunny."))
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))

    restored = tw.Session.from_json(session.to_json())
    assert restored == session
    tw.run_turn(provider, restored, tw.resolve_turn(toolset))

    first_body, second_body = validate_requests(fake_anthropic)
    assert {"type": "enabled", "budget_tokens": 2048} == first_body["thinking"]
    assert [
        {"type": "thinking", "thinking": "Paris weather needs a tool.", "signature": "sig-abc=="},
        {"type": "redacted_thinking", "data": "redacted-data=="},
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Paris"}},
    ] == second_body["messages"][1]["content"]


@pytest.mark.parametrize(
    ("requirement", "parallel", "expected"),
    [
        (tw.Requirement.optional(), None, None),
        (tw.Requirement.optional(), False, {"type": "auto", "disable_parallel_tool_use": True}),
        (tw.Requirement.at_least_one(), None, {"type": "any"}),
        (tw.Requirement.at_least_one(), True, {"type": "any"}),
        (tw.Requirement.specific("get_time"), None, {"type": "tool", "name": "get_time"}),
        (
            tw.Requirement.specific("get_time"),
            False,
            {"type": "tool", "name": "get_time", "disable_parallel_tool_use": True},
        ),
    ],
)
def test_requirement_becomes_tool_choice(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    requirement: tw.Requirement,
    parallel: bool | None,
    expected: dict[str, Any] | None,
) -> None:
    enqueue_message(fake_anthropic, M.tool_use_message(("get_time", {"zone": "UTC"})))
    turn = tw.resolve_turn(toolset, requirement=requirement, parallel_calls=parallel)
    tw.run_turn(make(), session, turn)
    body = validate_requests(fake_anthropic)[0]
    assert expected == body.get("tool_choice")


def test_forced_choice_with_thinking_is_sent_as_auto_and_checked_after_decoding(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    enqueue_message(fake_anthropic, M.text_message("No tools for you."))
    turn = tw.resolve_turn(toolset, requirement=tw.Requirement.specific("get_time"))
    with pytest.raises(tw.exceptions.RequirementNotMetError):
        tw.run_turn(make(thinking=1024), session, turn)
    assert "tool_choice" not in validate_requests(fake_anthropic)[0]  # the default: auto
    assert 2 == len(session)


def test_tools_are_rendered_through_the_compiler_and_cached(
    make: Make, toolset: tw.Toolset, get_weather: tw.Tool[Any, str]
) -> None:
    provider = make()
    turn = tw.resolve_turn(toolset)
    rendered = provider.render_tools(turn)
    assert {
        "name": "get_weather",
        "description": "Get the weather.",
        "input_schema": compile_tool(get_weather, COMPILER).schema,
    } == rendered[0]
    assert "object" == rendered[0]["input_schema"]["type"]
    rendered[0]["name"] = "mutated"
    assert "get_weather" == provider.render_tools(turn)[0]["name"]
    body = provider._body(tw.Session().add_user("x"), turn, stream=False)
    again = provider._body(tw.Session().add_user("y"), turn, stream=False)
    assert body["tools"][0] is again["tools"][0]  # the request path shares the cache
    public = provider.build_body(tw.Session().add_user("z"), turn, stream=False)
    public["tools"][-1]["cache_control"] = {"type": "ephemeral"}  # callers may change it
    assert "cache_control" not in provider._body(tw.Session(), turn, stream=False)["tools"][-1]
    other = tw.resolve_turn(toolset, description_overrides={"get_weather": "Weather, now."})
    assert "Weather, now." == provider.render_tools(other)[0]["description"]


def test_no_tools_sends_no_tool_fields(
    fake_anthropic: FakeAnthropic, make: Make, session: tw.Session
) -> None:
    enqueue_message(fake_anthropic, M.text_message("hi"))
    tw.run_turn(make(), session, tw.resolve_turn(tw.Toolset("empty", [])))
    body = validate_requests(fake_anthropic)[0]
    assert "tools" not in body
    assert "tool_choice" not in body
    assert 4096 == body["max_tokens"]


def test_history_tools_are_sent_with_choice_none_when_the_turn_offers_none(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    provider = make(max_tokens=100)
    enqueue_message(fake_anthropic, M.tool_use_message(("get_time", {"zone": "UTC"})))
    enqueue_message(fake_anthropic, M.text_message("noon"))
    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))
    none = tw.resolve_turn(toolset, availability=tw.Availability.only())
    tw.run_turn(provider, session, none)
    body = validate_requests(fake_anthropic)[1]
    assert ["get_time"] == [t["name"] for t in body["tools"]]
    assert {"type": "none"} == body["tool_choice"]
    assert 100 == body["max_tokens"]


def test_consecutive_same_role_messages_are_merged_and_empty_text_dropped(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset
) -> None:
    session = tw.Session("One.").add_user("a").add_user("").add_user("b")
    session.add_system("Two.").add_assistant("c").add_assistant("d")
    enqueue_message(fake_anthropic, M.text_message("e"))
    tw.run_turn(make(), session, tw.resolve_turn(toolset))
    body = validate_requests(fake_anthropic)[0]
    assert "One.\n\nTwo." == body["system"]
    assert [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant",
         "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
    ] == body["messages"]  # fmt: skip


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("refusal", "refusal"),
        ("pause_turn", "other"),
        ("model_context_window_exceeded", "length"),
    ],
)
@STREAM
def test_stop_reason_is_normalised(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stop_reason: str,
    expected: str,
    stream: bool,
) -> None:
    enqueue(fake_anthropic, M.text_message("x", stop_reason=stop_reason), stream=stream)
    outcome = tw.run_turn(make(), session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(outcome, tw.Finished)
    assert expected == outcome.reply.finish_reason


@STREAM
def test_usage_counts_cache_reads_and_writes_as_input(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    usage = {**M.usage(10, 5), "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}
    enqueue(fake_anthropic, M.text_message("x", usage=usage), stream=stream)
    outcome = tw.run_turn(make(), session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(outcome, tw.Finished)
    assert tw.Usage(input_tokens=130, output_tokens=5, cached_tokens=100) == outcome.message.usage
    assert "claude-fake" == outcome.message.model


def test_empty_tool_input_streams_as_an_empty_object(
    fake_anthropic: FakeAnthropic, make: Make, session: tw.Session
) -> None:
    @tw.tool_fn
    def ping() -> str:
        """Ping."""
        return "pong"

    enqueue(fake_anthropic, M.tool_use_message(("ping", {})), stream=True)
    outcome = tw.run_turn(make(), session, tw.resolve_turn(tw.Toolset("t", [ping])), stream=True)
    assert isinstance(outcome, tw.NeedsTools)
    assert "{}" == outcome.round.calls[0].call.arguments
    assert {} == json.loads(outcome.round.calls[0].call.arguments)


def test_extra_body_is_sent_and_the_adapter_keys_win(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    enqueue_message(fake_anthropic, M.text_message("x"))
    provider = make(extra_body={"stop_sequences": ["END"], "model": "ignored"})
    tw.run_turn(provider, session, tw.resolve_turn(toolset))
    body = validate_requests(fake_anthropic)[0]
    assert ["END"] == body["stop_sequences"]
    assert "claude-fake" == body["model"]
