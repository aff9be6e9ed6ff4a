"""Helpers for the toolwire-gemini tests: SDK-checked canning and request validation.

Everything enqueued through these helpers is parsed by google-genai's
``GenerateContentResponse`` first (``fakes.validate.parse_gemini_response``),
and :func:`validate_requests` checks every recorded request body against the
SDK's request models.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from fakes import FakeGemini, validate

from toolwire._http import SSEDecoder
from toolwire._provider import StreamEvent
from toolwire._round import AssistantReply
from toolwire._turn import ResolvedTurn
from toolwire_gemini import GeminiProvider


def enqueue_generate(fake: FakeGemini, response: dict[str, Any], **kwargs: Any) -> None:
    validate.parse_gemini_response(response)
    fake.enqueue_generate(response, **kwargs)


def enqueue_stream(
    fake: FakeGemini, chunks: Sequence[dict[str, Any] | bytes], **kwargs: Any
) -> None:
    for chunk in chunks:
        if isinstance(chunk, dict) and "error" not in chunk:
            validate.parse_gemini_response(chunk)
    fake.enqueue_generate_stream(chunks, **kwargs)


def validate_requests(fake: FakeGemini) -> list[dict[str, Any]]:
    """Check every recorded body against google-genai's types; return the bodies."""
    bodies = [r.json for r in fake.requests]
    for body in bodies:
        validate.validate_gemini_request(body)
    return bodies


def sse_bytes(chunks: Iterable[dict[str, Any] | str]) -> bytes:
    out = []
    for chunk in chunks:
        text = chunk if isinstance(chunk, str) else json.dumps(chunk, separators=(",", ":"))
        out.append(f"data: {text}\r\n\r\n")
    return "".join(out).encode()


def decode_stream_bytes(
    provider: GeminiProvider, turn: ResolvedTurn, chunks: Iterable[bytes]
) -> tuple[list[StreamEvent], AssistantReply]:
    """Run the adapter's stream decoding over raw SSE bytes, cut however the caller likes."""
    builder = provider._builder(turn, stream=True)
    decoder = SSEDecoder()
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            events.extend(provider._feed(builder, sse))
    for sse in decoder.finish():
        events.extend(provider._feed(builder, sse))
    return events, provider._completed(builder).reply
