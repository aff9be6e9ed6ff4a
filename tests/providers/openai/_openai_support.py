"""Helpers for the toolwire-openai tests: one description per adapter, SDK-checked canning.

Everything enqueued through these helpers is parsed by the official SDK types
first (``fakes.validate.parse_*``), and :func:`validate_requests` checks every
request body the fake recorded against the SDK's request TypedDicts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fakes import Call, FakeOpenAI, openai_chat, openai_responses, validate

from toolwire._http import SSEDecoder
from toolwire._provider import StreamEvent
from toolwire._round import AssistantReply
from toolwire._turn import ResolvedTurn
from toolwire_openai import (
    OpenAIChatProvider,
    OpenAICompatibleProvider,
    OpenAIResponsesProvider,
    OpenRouterProvider,
)
from toolwire_openai._common import OpenAIBase

# -- canning, SDK-checked -------------------------------------------------------------


def enqueue_chat(fake: FakeOpenAI, completion: dict[str, Any], **kwargs: Any) -> None:
    validate.parse_openai_chat_completion(completion)
    fake.enqueue_chat(completion, **kwargs)


def enqueue_chat_stream(
    fake: FakeOpenAI, chunks: Sequence[dict[str, Any] | bytes], *, sdk_check: bool = True,
    **kwargs: Any,
) -> None:  # fmt: skip
    if sdk_check:
        for chunk in chunks:
            if isinstance(chunk, dict):
                validate.parse_openai_chat_chunk(chunk)
    fake.enqueue_chat_stream(chunks, **kwargs)


def enqueue_response(fake: FakeOpenAI, response: dict[str, Any], **kwargs: Any) -> None:
    validate.parse_openai_response(response)
    fake.enqueue_response(response, **kwargs)


def enqueue_response_stream(
    fake: FakeOpenAI, events: Sequence[dict[str, Any] | bytes], **kwargs: Any
) -> None:
    for event in events:
        if isinstance(event, dict):
            validate.parse_openai_response_event(event)
    fake.enqueue_response_stream(events, **kwargs)


# -- the adapters ---------------------------------------------------------------------


@dataclass(frozen=True)
class Adapter:
    name: str
    api: Literal["chat", "responses"]
    cls: type[OpenAIBase]
    keyed: bool = True

    def make(self, fake: FakeOpenAI, **options: Any) -> OpenAIBase:
        opts: dict[str, Any] = {"model": "gpt-fake", "base_url": fake.base_url}
        if self.keyed:
            opts["api_key"] = fake.default_api_key
        else:
            fake.api_key = None  # the local server takes no key
        opts.update(options)
        return self.cls(**opts)

    def enqueue_calls(
        self,
        fake: FakeOpenAI,
        *calls: Call,
        stream: bool,
        text: str | None = None,
        reasoning: bool = False,
    ) -> None:
        if self.api == "chat":
            if stream:
                chunks = openai_chat.tool_calls_stream(*calls, content=text, include_usage=True)
                enqueue_chat_stream(fake, chunks)
            else:
                enqueue_chat(fake, openai_chat.tool_calls_completion(*calls, content=text))
        elif stream:
            resp = openai_responses.tool_calls_response(*calls, text=text, reasoning=reasoning)
            enqueue_response_stream(fake, openai_responses.stream_events(resp["output"]))
        else:
            enqueue_response(
                fake, openai_responses.tool_calls_response(*calls, text=text, reasoning=reasoning)
            )

    def enqueue_text(self, fake: FakeOpenAI, text: str, *, stream: bool) -> None:
        if self.api == "chat":
            if stream:
                enqueue_chat_stream(fake, openai_chat.text_stream(text, include_usage=True))
            else:
                enqueue_chat(fake, openai_chat.text_completion(text))
        elif stream:
            items = [openai_responses.message_item(text)]
            enqueue_response_stream(fake, openai_responses.stream_events(items))
        else:
            enqueue_response(fake, openai_responses.text_response(text))

    def validate(self, body: Any) -> None:
        if self.api == "responses":
            validate.validate_openai_responses_request(body)
            return
        if self.name == "openrouter":
            # OpenRouter's own extensions are outside the openai SDK types.
            body = copy.deepcopy(body)
            body.pop("provider", None)
            body.pop("reasoning", None)  # OpenRouter's unified reasoning object
            for message in body.get("messages", []):
                message.pop("reasoning_details", None)
        validate.validate_openai_chat_request(body)


ADAPTERS = {
    "openai": Adapter("openai", "chat", OpenAIChatProvider),
    "openai-responses": Adapter("openai-responses", "responses", OpenAIResponsesProvider),
    "openrouter": Adapter("openrouter", "chat", OpenRouterProvider),
    "openai-compatible": Adapter(
        "openai-compatible", "chat", OpenAICompatibleProvider, keyed=False
    ),
}


def validate_requests(fake: FakeOpenAI, adapter: Adapter) -> list[dict[str, Any]]:
    """Check every recorded body against the SDK request types; return the bodies."""
    bodies = [r.json for r in fake.requests]
    for body in bodies:
        adapter.validate(body)
    return bodies


# -- decoding without HTTP (for the property tests) ----------------------------------


def sse_bytes(events: Iterable[dict[str, Any] | str], *, named: bool) -> bytes:
    out = []
    for event in events:
        if isinstance(event, str):
            out.append(f"data: {event}\n\n")
            continue
        text = json.dumps(event, separators=(",", ":"))
        name = f"event: {event['type']}\n" if named and "type" in event else ""
        out.append(f"{name}data: {text}\n\n")
    return "".join(out).encode()


def decode_stream_bytes(
    provider: OpenAIBase, turn: ResolvedTurn, chunks: Iterable[bytes]
) -> tuple[list[StreamEvent], AssistantReply]:
    """Run the adapter's stream decoder over raw SSE bytes, cut however the caller likes."""
    state = provider._stream_state()
    decoder = SSEDecoder()
    events: list[StreamEvent] = []
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            if state.done:
                break
            events.extend(provider._feed_safely(state, sse))
    for sse in decoder.finish():
        if not state.done:
            events.extend(provider._feed_safely(state, sse))
    completed = provider._finish_stream(state, turn)
    return events, completed.reply
