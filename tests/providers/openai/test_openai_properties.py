"""Property tests: any fragmentation of a valid stream decodes like the whole reply;
garbage never escapes as anything but a typed ProviderError."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from _openai_support import decode_stream_bytes, sse_bytes
from fakes import Call, openai_chat, openai_responses
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._http import SSEEvent
from toolwire_openai import OpenAIChatProvider, OpenAICompatibleProvider, OpenAIResponsesProvider
from toolwire_openai._common import OpenAIBase

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def providers() -> Iterator[dict[str, OpenAIBase]]:
    made: dict[str, OpenAIBase] = {
        "chat": OpenAIChatProvider(
            "m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1"
        ),
        "compatible": OpenAICompatibleProvider("m", base_url="http://127.0.0.1:9/v1"),
        "responses": OpenAIResponsesProvider(
            "m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1"
        ),
    }
    yield made
    for p in made.values():
        p.close()


@pytest.fixture(scope="module")
def turn() -> tw.adapters.ResolvedTurn:
    @tw.tool_fn
    def lookup(key: str, n: int = 1) -> str:
        """Look up.

        Args:
            key: The key.
            n: How many.
        """
        return key

    return tw.resolve_turn(tw.Toolset("t", [lookup]))


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))
args_objects = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.recursive(json_scalars, lambda c: st.lists(c, max_size=3), max_leaves=6),
    max_size=4,
)
calls_st = st.lists(
    st.tuples(st.sampled_from(["lookup", "other_tool", "x"]), args_objects),
    max_size=4,
).map(
    lambda cs: [
        Call(name, json.dumps(args, ensure_ascii=False), id=f"call_{i}")
        for i, (name, args) in enumerate(cs)
    ]
)
text_st = st.text(max_size=40)
sizes_st = st.lists(st.integers(1, 7), min_size=1, max_size=12)


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points:
        out.append(data[last:p])
        last = p
    out.append(data[last:])
    return out


@SETTINGS
@given(
    calls=calls_st,
    text=text_st,
    sizes=sizes_st,
    interleave=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=20),
)
def test_chat_fragmentations_decode_like_the_whole_reply(
    providers: dict[str, OpenAIBase],
    turn: tw.adapters.ResolvedTurn,
    calls: list[Call],
    text: str,
    sizes: list[int],
    interleave: bool,
    cuts: list[int],
) -> None:
    provider = providers["chat"]
    whole = provider._finish_reply(
        turn, provider.decode(openai_chat.completion(content=text or None, tool_calls=calls))
    )
    if calls:
        chunks = openai_chat.tool_calls_stream(
            *calls, size=sizes, interleave=interleave, content=text, include_usage=True
        )
    else:
        chunks = openai_chat.text_stream(text, size=sizes, include_usage=True)
    data = sse_bytes([*chunks, "[DONE]"], named=False)
    _, streamed = decode_stream_bytes(provider, turn, _cut(data, cuts))
    assert whole == streamed


@SETTINGS
@given(calls=calls_st.filter(bool), sizes=sizes_st)
def test_shared_index_streams_decode_like_the_whole_reply(
    providers: dict[str, OpenAIBase],
    turn: tw.adapters.ResolvedTurn,
    calls: list[Call],
    sizes: list[int],
) -> None:
    provider = providers["compatible"]
    whole = provider.decode(openai_chat.completion(tool_calls=calls))
    chunks = openai_chat.shared_index_stream(*calls, size=sizes, include_usage=True)
    _, streamed = decode_stream_bytes(provider, turn, [sse_bytes([*chunks, "[DONE]"], named=False)])
    assert whole.tool_calls == streamed.tool_calls


@SETTINGS
@given(
    calls=calls_st,
    text=st.one_of(st.none(), text_st.filter(bool)),
    reasoning=st.booleans(),
    sizes=sizes_st,
    empty_snapshot=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=20),
)
def test_responses_fragmentations_decode_like_the_whole_reply(
    providers: dict[str, OpenAIBase],
    turn: tw.adapters.ResolvedTurn,
    calls: list[Call],
    text: str | None,
    reasoning: bool,
    sizes: list[int],
    empty_snapshot: bool,
    cuts: list[int],
) -> None:
    provider = providers["responses"]
    resp = openai_responses.tool_calls_response(*calls, text=text, reasoning=reasoning)
    whole = provider._finish_reply(turn, provider.decode(resp))
    events = openai_responses.stream_events(resp["output"], size=sizes)
    if empty_snapshot:
        events[-1]["response"]["output"] = []
    _, streamed = decode_stream_bytes(provider, turn, _cut(sse_bytes(events, named=True), cuts))
    assert (whole.text, whole.tool_calls, whole.finish_reason, whole.usage) == (
        streamed.text,
        streamed.tool_calls,
        streamed.finish_reason,
        streamed.usage,
    )


# -- garbage -------------------------------------------------------------------------

json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(
    ["choices", "delta", "tool_calls", "index", "id", "function", "name", "arguments",
     "content", "refusal", "finish_reason", "usage", "error", "type", "item", "item_id",
     "output_index", "output", "response", "status", "call_id", "message", "[DONE]"]
)  # fmt: skip
shaped = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(keys, c, max_size=5),
    max_leaves=20,
)
event_types = st.sampled_from(
    ["message", "error", "response.output_item.added", "response.function_call_arguments.delta",
     "response.function_call_arguments.done", "response.output_item.done",
     "response.output_text.delta", "response.completed", "response.failed"]
)  # fmt: skip


def _run(provider: OpenAIBase, turn: tw.adapters.ResolvedTurn, events: list[SSEEvent]) -> None:
    state = provider._stream_state()
    try:
        for event in events:
            if not state.done:
                provider._feed_safely(state, event)
        provider._finish_stream(state, turn)
    except tw.ProviderError:
        pass


@SETTINGS
@given(
    name=st.sampled_from(["chat", "compatible", "responses"]),
    payloads=st.lists(st.tuples(event_types, shaped | json_values), max_size=8),
)
def test_garbage_events_raise_only_provider_errors(
    providers: dict[str, OpenAIBase],
    turn: tw.adapters.ResolvedTurn,
    name: str,
    payloads: list[tuple[str, Any]],
) -> None:
    events = []
    for event_type, payload in payloads:
        if isinstance(payload, dict) and name == "responses" and "type" not in payload:
            payload = {"type": event_type, **payload}
        events.append(SSEEvent(event_type, json.dumps(payload)))
    _run(providers[name], turn, events)


@SETTINGS
@given(name=st.sampled_from(["chat", "compatible", "responses"]), data=st.binary(max_size=300))
def test_garbage_bytes_raise_only_provider_errors(
    providers: dict[str, OpenAIBase], turn: tw.adapters.ResolvedTurn, name: str, data: bytes
) -> None:
    with contextlib.suppress(tw.ProviderError):
        decode_stream_bytes(providers[name], turn, [data])


@SETTINGS
@given(
    name=st.sampled_from(["chat", "compatible", "responses"]), body=st.dictionaries(keys, shaped)
)
def test_garbage_response_bodies_raise_only_provider_errors(
    providers: dict[str, OpenAIBase],
    turn: tw.adapters.ResolvedTurn,
    name: str,
    body: dict[str, Any],
) -> None:
    provider = providers[name]
    with contextlib.suppress(tw.ProviderError):
        provider._finish_reply(turn, provider._decode_safely(body))
