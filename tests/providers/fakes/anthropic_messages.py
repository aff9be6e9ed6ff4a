"""Canned Anthropic Messages responses and SSE event sequences (plain dicts).

Content blocks: :func:`text_block`, :func:`tool_use_block` (``input`` is an
object), :func:`thinking_block` (with its ``signature``),
:func:`redacted_thinking_block`. :func:`message` wraps them; ``stop_reason``
defaults to ``tool_use`` when a tool_use block is present, else ``end_turn``.

:func:`stream_events` turns content blocks into the named-SSE sequence:
``message_start``, an optional ``ping``, per block ``content_block_start``
(tool_use starts with ``input: {}``), its deltas (``text_delta``,
``input_json_delta`` with ``partial_json`` fragments, the first one empty as
the API sends it, ``thinking_delta`` then one ``signature_delta``),
``content_block_stop``, then ``message_delta`` (stop_reason, output usage) and
``message_stop``. :func:`error_event` and :func:`ping_event` can be spliced in
anywhere.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from .openai_chat import split

__all__ = [
    "error_event",
    "message",
    "ping_event",
    "redacted_thinking_block",
    "stream_events",
    "text_block",
    "text_message",
    "thinking_block",
    "tool_use_block",
    "tool_use_message",
    "usage",
]

MODEL = "claude-fake"
MESSAGE_ID = "msg_fake01"


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "citations": None}


def tool_use_block(name: str, input: dict[str, Any], id: str = "toolu_fake0") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def thinking_block(
    thinking: str, signature: str = "EqQBCkYIBxgCKkDfake-signature=="
) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_thinking_block(data: str = "EmwKAhgBEgy3fake-redacted") -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


def usage(input_tokens: int = 12, output_tokens: int = 7) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


def message(
    content: Sequence[dict[str, Any]],
    *,
    stop_reason: str | None = None,
    id: str = MESSAGE_ID,
    model: str = MODEL,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if stop_reason is None:
        has_tool = any(block["type"] == "tool_use" for block in content)
        stop_reason = "tool_use" if has_tool else "end_turn"
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else _default_usage(),
    }


def _default_usage() -> dict[str, Any]:
    return usage()


def text_message(text: str, **kwargs: Any) -> dict[str, Any]:
    return message([text_block(text)], **kwargs)


def tool_use_message(
    *calls: tuple[str, dict[str, Any]],
    text: str | None = None,
    thinking: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Optional thinking block, optional text, then one tool_use per ``(name, input)``."""
    blocks: list[dict[str, Any]] = []
    if thinking is not None:
        blocks.append(thinking_block(thinking))
    if text is not None:
        blocks.append(text_block(text))
    blocks.extend(
        tool_use_block(name, args, id=f"toolu_fake{i}") for i, (name, args) in enumerate(calls)
    )
    return message(blocks, **kwargs)


def ping_event() -> dict[str, Any]:
    return {"type": "ping"}


def error_event(
    type: str = "overloaded_error",
    message: str = "Overloaded",
) -> dict[str, Any]:
    """An ``error`` event, as sent inside a stream after HTTP 200."""
    return {"type": "error", "error": {"type": type, "message": message}}


def stream_events(
    content: Sequence[dict[str, Any]],
    *,
    size: int | Sequence[int] = 5,
    stop_reason: str | None = None,
    ping: bool = True,
    empty_first_fragment: bool = True,
    **message_kwargs: Any,
) -> list[dict[str, Any]]:
    """The event sequence that streams a message with these content blocks."""
    final = message(content, stop_reason=stop_reason, **message_kwargs)
    start = copy.deepcopy(final)
    start.update(content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = {**final["usage"], "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    if ping:
        events.append(ping_event())
    for index, block in enumerate(content):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {**block, "text": ""}
        elif kind == "tool_use":
            opening = {**block, "input": {}}
        elif kind == "thinking":
            opening = {**block, "thinking": "", "signature": ""}
        else:
            opening = copy.deepcopy(block)
        events.append({"type": "content_block_start", "index": index, "content_block": opening})
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            deltas = [{"type": "text_delta", "text": p} for p in split(block["text"], size)]
        elif kind == "tool_use":
            text = json.dumps(block["input"]) if block["input"] else ""
            fragments = split(text, size) if text else []
            if empty_first_fragment:
                fragments.insert(0, "")
            deltas = [{"type": "input_json_delta", "partial_json": f} for f in fragments]
        elif kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in split(block["thinking"], size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": final["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events
