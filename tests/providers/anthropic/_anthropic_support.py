"""Helpers for the toolwire-anthropic tests: SDK-checked canning and request validation.

Everything enqueued through these helpers is parsed by the official ``anthropic``
SDK types first (``fakes.validate.parse_anthropic_*``), and
:func:`validate_requests` checks every recorded request body against the SDK's
``MessageCreateParams`` TypedDicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from fakes import FakeAnthropic, anthropic_messages, validate

from toolwire._http import SSEDecoder
from toolwire._provider import ReplyCompleted, StreamEvent
from toolwire._round import AssistantReply
from toolwire_anthropic import AnthropicProvider

Make = Callable[..., AnthropicProvider]
"""The type of the ``make`` / ``amake`` fixtures."""


def enqueue_message(fake: FakeAnthropic, message: dict[str, Any], **kwargs: Any) -> None:
    validate.parse_anthropic_message(message)
    fake.enqueue_message(message, **kwargs)


def enqueue_stream(
    fake: FakeAnthropic, events: Sequence[dict[str, Any] | bytes], **kwargs: Any
) -> None:
    for event in events:
        if isinstance(event, dict):
            validate.parse_anthropic_event(event)
    fake.enqueue_message_stream(events, **kwargs)


def enqueue(fake: FakeAnthropic, message: dict[str, Any], *, stream: bool, **kw: Any) -> None:
    """``message`` as a JSON answer, or as the SSE stream of its content blocks."""
    if stream:
        events = anthropic_messages.stream_events(
            message["content"], stop_reason=message["stop_reason"], usage=message["usage"]
        )
        enqueue_stream(fake, events, **kw)
    else:
        enqueue_message(fake, message, **kw)


def validate_requests(fake: FakeAnthropic) -> list[dict[str, Any]]:
    """Check every recorded body against the SDK request types; return the bodies."""
    bodies = [r.json for r in fake.requests]
    for body in bodies:
        validate.validate_anthropic_request(body)
    return bodies


# -- decoding without HTTP (for the property tests) ----------------------------------


def sse_bytes(events: Iterable[dict[str, Any]]) -> bytes:
    out = []
    for event in events:
        text = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        out.append(f"event: {event.get('type', 'message')}\ndata: {text}\n\n")
    return "".join(out).encode()


def decode_stream_bytes(
    provider: AnthropicProvider, chunks: Iterable[bytes]
) -> tuple[list[StreamEvent], AssistantReply]:
    """Run the adapter's stream decoder over raw SSE bytes, cut however the caller likes."""
    state = provider._stream_state()
    decoder = SSEDecoder()
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            if not state.done:
                events.extend(provider._feed(state, sse))
    for sse in decoder.finish():
        if not state.done:
            events.extend(provider._feed(state, sse))
    reply = state.finish()
    events.append(ReplyCompleted(reply))
    return events, reply
