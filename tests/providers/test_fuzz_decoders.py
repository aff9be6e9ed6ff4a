"""Fuzz every provider decoder, JSON bodies and SSE streams (#11, the fuzz job).

The inputs are the fakes' valid replies (text, parallel tool calls, reasoning)
mutated at random: any value swapped for any JSON value, keys dropped, strings
given lone surrogates, events dropped, duplicated or reordered, the bytes cut,
spliced with garbage and split anywhere. Whatever comes in:

- the decoder answers with a reply or raises a typed ``ProviderError``
  (``StreamError`` inside a stream), never anything else;
- a reply decodes into a round (or a finished turn) without raising anything
  but a ``ToolwireError``, a round with every call answered commits, and the
  session then saves, loads and renders the next request as strict JSON (no
  NaN, no lone surrogate): a session never holds what cannot be sent again.

By default each test draws a few dozen inputs; ``.ci/run``'s fuzz step sets
``TOOLWIRE_FUZZ=1`` for at least 2,000 per decoder and format.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakes import Call, anthropic_messages, gemini, openai_chat, openai_responses
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._http import SSEDecoder
from toolwire.adapters import HttpProvider, ResolvedTurn, decode_reply
from toolwire.exceptions import ProviderError, ToolwireError
from toolwire_anthropic import AnthropicProvider
from toolwire_gemini import GeminiProvider
from toolwire_openai import OpenAIChatProvider, OpenAIResponsesProvider

EXAMPLES = 2000 if os.environ.get("TOOLWIRE_FUZZ") == "1" else 40
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("TOOLWIRE_FUZZ") != "1",  # the fuzz job explores at random
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
BASE = "http://127.0.0.1:9"  # never contacted

W = Call.of("get_weather", {"city": "Paris", "days": 2}, id="call_w")
T = Call.of("get_time", {"zone": "UTC"}, id="call_t")


@tw.tool_fn
def get_weather(city: str, days: int = 1) -> str:
    """Weather."""
    return city


@tw.tool_fn
def get_time(zone: str) -> str:
    """Time."""
    return zone


@functools.cache
def _turn() -> tw.adapters.ResolvedTurn:
    # Made on first use, not at import: resolving a turn reads the default plugin host.
    return tw.resolve_turn(tw.Toolset("app", [get_weather, get_time]), plugins=False)


# -- the valid replies each decoder is fuzzed from -------------------------------------------


def _openai_json() -> list[Any]:
    return [
        openai_chat.text_completion("Hello there"),
        openai_chat.tool_calls_completion(W, T, content="Checking."),
    ]


def _openai_sse() -> list[tuple[list[Any], bool]]:
    return [
        (openai_chat.tool_calls_stream(W, T, content="Checking.", include_usage=True), False),
        (openai_chat.text_stream("Hello there", include_usage=True), False),
    ]


def _responses_json() -> list[Any]:
    return [
        openai_responses.text_response("Hello there"),
        openai_responses.tool_calls_response(W, T, text="Checking.", reasoning=True),
    ]


def _responses_sse() -> list[tuple[list[Any], bool]]:
    out = openai_responses.tool_calls_response(W, T, text="Checking.", reasoning=True)["output"]
    return [(openai_responses.stream_events(out, size=3), True)]


def _anthropic_json() -> list[Any]:
    calls = (("get_weather", {"city": "Paris"}), ("get_time", {"zone": "UTC"}))
    return [
        anthropic_messages.text_message("Hello there"),
        anthropic_messages.tool_use_message(*calls, text="Checking.", thinking="Hmm."),
    ]


def _anthropic_sse() -> list[tuple[list[Any], bool]]:
    message = _anthropic_json()[1]
    return [(anthropic_messages.stream_events(message["content"], size=3), True)]


def _gemini_parts() -> list[Any]:
    return [
        gemini.text_part("Checking.", thought_signature="c2lnbmF0dXJl"),
        gemini.function_call_part("get_weather", {"city": "Paris"}),
        gemini.function_call_part("get_time", {"zone": "UTC"}),
    ]


def _gemini_json() -> list[Any]:
    return [gemini.response([gemini.text_part("Hello there")]), gemini.response(_gemini_parts())]


def _gemini_sse() -> list[tuple[list[Any], bool]]:
    return [(gemini.stream_chunks(_gemini_parts(), size=3), False)]


ADAPTERS: dict[str, tuple[Callable[[], HttpProvider[Any]], Any, Any]] = {
    "openai": (
        lambda: OpenAIChatProvider("m", api_key="k", base_url=BASE),
        _openai_json,
        _openai_sse,
    ),
    "openai-responses": (
        lambda: OpenAIResponsesProvider("o4-mini", api_key="k", base_url=BASE),
        _responses_json,
        _responses_sse,
    ),
    "anthropic": (
        lambda: AnthropicProvider("m", api_key="k", base_url=BASE),
        _anthropic_json,
        _anthropic_sse,
    ),
    "gemini": (lambda: GeminiProvider("m", api_key="k", base_url=BASE), _gemini_json, _gemini_sse),
}


@pytest.fixture(scope="module")
def providers() -> Iterator[dict[str, HttpProvider[Any]]]:
    made = {name: make() for name, (make, _, _) in ADAPTERS.items()}
    yield made
    for p in made.values():
        p.close()


# -- mutations ---------------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(codec=None, categories=None, exclude_categories=()), max_size=12
) | st.sampled_from(["\ud800", "a\udfffb", "\x00", "", "{", "[]", "null", "NaN", "1e400"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=8,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*here, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*here, i)))
    return out


def _mutate(data: st.DataObject, value: Any) -> Any:
    """A copy of ``value`` with a few random changes at random places."""
    value = copy.deepcopy(value)
    for _ in range(data.draw(st.integers(0, 4), label="mutations")):
        paths = _paths(value)
        path = data.draw(st.sampled_from(paths), label="where")
        how = data.draw(st.sampled_from(["replace", "drop", "text"]), label="how")
        if not path:
            if how == "replace":
                value = data.draw(_JSON, label="root")
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if how == "drop" and isinstance(parent, dict):
            del parent[key]
        elif how == "text" and isinstance(parent[key], str):
            parent[key] = parent[key] + data.draw(_TEXT, label="suffix")
        else:
            parent[key] = data.draw(_JSON, label="value")
    return value


def _sse(events: list[Any], named: bool) -> bytes:
    out = []
    for event in events:
        if isinstance(event, bytes):
            out.append(event)
            continue
        text = json.dumps(event, ensure_ascii=False)  # NaN and lone surrogates pass here
        name = event.get("type") if named and isinstance(event, dict) else None
        head = f"event: {name}\n" if isinstance(name, str) and "\n" not in name else ""
        out.append(f"{head}data: {text}\n\n".encode("utf-8", "surrogatepass"))
    return b"".join(out)


# -- what must hold of any reply -----------------------------------------------------------------


def _check_reply(
    provider: HttpProvider[Any], turn: ResolvedTurn, reply: tw.adapters.AssistantReply
) -> None:
    session = tw.Session("You are terse.").add_user("Weather in Paris, and the time?")
    try:
        outcome = decode_reply(session, turn, reply, enforce_requirement=False)
    except ToolwireError:
        return
    if isinstance(outcome, tw.NeedsTools):
        outcome.round.commit([c.complete("ok") for c in outcome.round.calls])
    saved = session.to_json()
    again = tw.Session.from_json(saved)
    assert again.to_json() == saved
    body = provider._build_request(again.add_user("and tomorrow?"), turn, stream=False)
    json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")  # strict: no surrogate


@pytest.mark.parametrize("name", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_json_bodies(
    providers: dict[str, HttpProvider[Any]], name: str, data: st.DataObject
) -> None:
    provider = providers[name]
    base = data.draw(st.sampled_from(ADAPTERS[name][1]()), label="reply")
    body = _mutate(data, base)
    try:
        reply = provider._decode_body(body, _turn())
    except ProviderError:
        return
    _check_reply(provider, _turn(), reply)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
@FUZZ
@given(data=st.data())
def test_sse_streams(
    providers: dict[str, HttpProvider[Any]], name: str, data: st.DataObject
) -> None:
    provider = providers[name]
    events, named = data.draw(st.sampled_from(ADAPTERS[name][2]()), label="stream")
    events = list(events)
    shape = data.draw(
        st.sampled_from(["mutate", "drop", "repeat", "swap", "garbage"]), label="shape"
    )
    if shape == "mutate" and events:
        i = data.draw(st.integers(0, len(events) - 1), label="event")
        events[i] = _mutate(data, events[i])
    elif shape == "drop" and events:
        del events[data.draw(st.integers(0, len(events) - 1), label="dropped")]
    elif shape == "repeat" and events:
        i = data.draw(st.integers(0, len(events) - 1), label="repeated")
        events.insert(i, copy.deepcopy(events[i]))
    elif shape == "swap" and len(events) > 1:
        i = data.draw(st.integers(0, len(events) - 2), label="swapped")
        events[i], events[i + 1] = events[i + 1], events[i]
    elif shape == "garbage":
        i = data.draw(st.integers(0, len(events)), label="at")
        events.insert(i, data.draw(st.binary(max_size=40), label="garbage"))
    raw = _sse(events, named)
    cut = data.draw(st.integers(0, len(raw)) | st.just(len(raw)), label="cut")
    raw = raw[:cut]
    sizes = data.draw(st.lists(st.integers(1, 64), max_size=20), label="chunks")
    chunks, at = [], 0
    for size in sizes:
        chunks.append(raw[at : at + size])
        at += size
    chunks.append(raw[at:])
    state = provider._new_stream(_turn())
    decoder = SSEDecoder()
    try:
        for chunk in chunks:
            for event in decoder.feed(chunk):
                if not provider._stream_done(state):
                    provider._feed(state, event)
        for event in decoder.finish():
            if not provider._stream_done(state):
                provider._feed(state, event)
        completed = provider._finish_stream(state, _turn())
    except ProviderError:
        return
    _check_reply(provider, _turn(), completed.reply)
