"""Canned OpenAI Responses API objects and SSE event sequences (plain dicts).

Output items: :func:`message_item`, :func:`function_call_item` (``id`` is the
item id ``fc_...``, ``call_id`` pairs the call with its output),
:func:`reasoning_item` (with ``encrypted_content``). :func:`response` wraps
them in a ``response`` object.

:func:`stream_events` turns a list of output items into the event sequence
the API streams (named SSE, ``event:`` equal to the event's ``type``, no
``[DONE]``): ``response.created``, ``response.in_progress``, then per item
``response.output_item.added``, its deltas and ``.done`` events,
``response.output_item.done``, and finally ``response.completed``. Every
event carries an increasing ``sequence_number``. Argument deltas carry
``item_id`` (the ``fc_`` id), never ``call_id``, as the real API does.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from .openai_chat import CREATED, Call, split

__all__ = [
    "error_event",
    "function_call_item",
    "message_item",
    "reasoning_item",
    "response",
    "stream_events",
    "text_response",
    "tool_calls_response",
    "usage",
]

MODEL = "gpt-fake"
RESPONSE_ID = "resp_fake01"


def message_item(text: str, *, id: str = "msg_fake01") -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def function_call_item(
    call: Call,
    *,
    call_id: str | None = None,
    id: str | None = None,
    index: int = 0,
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": id or f"fc_fake{index}",
        "call_id": call_id or call.id or f"call_fake{index}",
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }


def reasoning_item(
    *,
    summary: Sequence[str] = (),
    encrypted_content: str | None = "gAAAAABfake-encrypted-reasoning==",
    id: str = "rs_fake01",
) -> dict[str, Any]:
    """A reasoning item; with ``include=["reasoning.encrypted_content"]`` it
    carries ``encrypted_content``, which must be sent back unchanged."""
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": id,
        "summary": [{"type": "summary_text", "text": s} for s in summary],
    }
    if encrypted_content is not None:
        item["encrypted_content"] = encrypted_content
    return item


def usage(
    input_tokens: int = 12, output_tokens: int = 7, reasoning_tokens: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def response(
    output: Sequence[dict[str, Any]],
    *,
    status: str = "completed",
    id: str = RESPONSE_ID,
    model: str = MODEL,
    tools: Sequence[dict[str, Any]] = (),
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    previous_response_id: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": list(output),
        "parallel_tool_calls": parallel_tool_calls,
        "previous_response_id": previous_response_id,
        "reasoning": {"effort": None, "summary": None},
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": tool_choice,
        "tools": list(tools),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage if usage is not None else _default_usage(),
        "metadata": {},
    }


def _default_usage() -> dict[str, Any]:
    return usage()


def text_response(text: str, **kwargs: Any) -> dict[str, Any]:
    return response([message_item(text)], **kwargs)


def tool_calls_response(
    *calls: Call, text: str | None = None, reasoning: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """Optional reasoning item, optional message, then one function_call per call."""
    items: list[dict[str, Any]] = []
    if reasoning:
        items.append(reasoning_item(summary=["Looking up the weather."]))
    if text is not None:
        items.append(message_item(text))
    items.extend(function_call_item(c, index=i) for i, c in enumerate(calls))
    return response(items, **kwargs)


def error_event(
    message: str = "The server had an error while processing your request.",
    code: str | None = "server_error",
    sequence_number: int = 0,
) -> dict[str, Any]:
    """An ``error`` event in the stream."""
    return {
        "type": "error",
        "code": code,
        "message": message,
        "param": None,
        "sequence_number": sequence_number,
    }


def stream_events(
    output: Sequence[dict[str, Any]],
    *,
    size: int | Sequence[int] = 5,
    final_status: str = "completed",
    **response_kwargs: Any,
) -> list[dict[str, Any]]:
    """The SSE event sequence that streams ``output`` (a list of items).

    ``final_status`` is ``completed``, ``incomplete`` or ``failed``; the last
    event is ``response.<final_status>``.
    """
    events: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        event["sequence_number"] = len(events)
        events.append(event)

    in_progress = response([], status="in_progress", usage=None, **response_kwargs)
    in_progress["usage"] = None
    emit({"type": "response.created", "response": copy.deepcopy(in_progress)})
    emit({"type": "response.in_progress", "response": copy.deepcopy(in_progress)})

    for output_index, item in enumerate(output):
        kind = item["type"]
        if kind == "message":
            added = {**item, "status": "in_progress", "content": []}
        elif kind == "function_call":
            added = {**item, "status": "in_progress", "arguments": ""}
        else:
            added = copy.deepcopy(item)
        emit({"type": "response.output_item.added", "output_index": output_index, "item": added})
        if kind == "message":
            for content_index, part in enumerate(item["content"]):
                empty = {**part, "text": ""}
                base = {"item_id": item["id"], "output_index": output_index}
                emit(
                    {
                        "type": "response.content_part.added",
                        **base,
                        "content_index": content_index,
                        "part": empty,
                    }
                )
                for piece in split(part["text"], size):
                    emit(
                        {
                            "type": "response.output_text.delta",
                            **base,
                            "content_index": content_index,
                            "delta": piece,
                            "logprobs": [],
                        }
                    )
                emit(
                    {
                        "type": "response.output_text.done",
                        **base,
                        "content_index": content_index,
                        "text": part["text"],
                        "logprobs": [],
                    }
                )
                emit(
                    {
                        "type": "response.content_part.done",
                        **base,
                        "content_index": content_index,
                        "part": part,
                    }
                )
        elif kind == "function_call":
            for piece in split(item["arguments"], size):
                emit(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": output_index,
                        "delta": piece,
                    }
                )
            emit(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": output_index,
                    "arguments": item["arguments"],
                }
            )
        emit({"type": "response.output_item.done", "output_index": output_index, "item": item})

    final = response(output, status=final_status, **response_kwargs)
    emit({"type": f"response.{final_status}", "response": final})
    return events
