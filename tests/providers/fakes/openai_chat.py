"""Canned OpenAI Chat Completions responses and stream chunks (plain dicts).

Non-streaming: :func:`completion` (and the shortcuts :func:`text_completion`,
:func:`tool_calls_completion`). A tool call is given as a :class:`Call`.

Streaming: lists of ``chat.completion.chunk`` dicts; the fake sends each as a
``data:`` line and adds ``data: [DONE]``. Variants, each from wire-formats.md
section 1 and 5 or peers.md section 2C:

- :func:`text_stream`: role chunk, content pieces, finish chunk;
- :func:`tool_calls_stream`: ``id``/``type``/``name`` only on the first delta
  of each call, argument fragments cut at arbitrary points (``split``), calls
  on separate indexes, optionally interleaved;
- :func:`whole_calls_stream`: each call complete in one chunk (Ollama);
- :func:`shared_index_stream`: parallel calls that share index 0 but have
  different ids (Ollama #15457; langchain #34807);
- :func:`missing_index_stream`: deltas without ``index`` (Ollama < 0.4.7);
  **not** valid for the SDK's ``ChoiceDeltaToolCall``, on purpose;
- ``include_usage=True`` on any of them: a last chunk with ``choices: []`` and
  ``usage`` (``stream_options.include_usage``);
- ``finish_reason=None`` ends without a finish chunk (llama.cpp/vLLM) and
  ``finish_reason="stop"`` ends a tool turn with ``stop`` (litellm/Ollama);
- :func:`stream_error_event`: an ``error`` object in a ``data:`` event after
  HTTP 200 (OpenRouter); :data:`OPENROUTER_COMMENT`: an SSE comment line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CREATED",
    "OPENROUTER_COMMENT",
    "Call",
    "chunk",
    "completion",
    "missing_index_stream",
    "shared_index_stream",
    "split",
    "stream_error_event",
    "text_completion",
    "text_stream",
    "tool_call",
    "tool_calls_completion",
    "tool_calls_stream",
    "usage",
    "usage_chunk",
    "whole_calls_stream",
]

CREATED = 1_750_000_000
MODEL = "gpt-fake"
COMPLETION_ID = "chatcmpl-fake01"
OPENROUTER_COMMENT = b": OPENROUTER PROCESSING\n\n"


@dataclass(frozen=True)
class Call:
    """A tool call to put in a canned answer. ``arguments`` is sent verbatim."""

    name: str
    arguments: str
    id: str = ""

    @classmethod
    def of(cls, name: str, args: dict[str, Any] | str, id: str = "") -> Call:
        return cls(name, args if isinstance(args, str) else json.dumps(args), id)


def _ids(calls: Sequence[Call]) -> list[str]:
    return [c.id or f"call_fake{i}" for i, c in enumerate(calls)]


def split(text: str, size: int | Sequence[int]) -> list[str]:
    """Cut ``text`` into pieces of ``size`` characters (or the given sizes, the
    rest as a last piece). ``split(s, 1)`` is the worst case a parser can meet."""
    if isinstance(size, int):
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]
    pieces, start = [], 0
    for n in size:
        pieces.append(text[start : start + n])
        start += n
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def usage(prompt_tokens: int = 12, completion_tokens: int = 7) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def tool_call(call: Call, id: str) -> dict[str, Any]:
    return {
        "id": id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def completion(
    *,
    content: str | None = None,
    tool_calls: Sequence[Call] = (),
    finish_reason: str | None = None,
    model: str = MODEL,
    id: str = COMPLETION_ID,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice.

    ``finish_reason`` defaults to ``tool_calls`` when there are calls, else ``stop``.
    """
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": [],
    }
    if tool_calls:
        message["tool_calls"] = [
            tool_call(c, i) for c, i in zip(tool_calls, _ids(tool_calls), strict=True)
        ]
    return {
        "id": id,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": usage if usage is not None else _default_usage(),
    }


def _default_usage() -> dict[str, Any]:
    return usage()


def text_completion(text: str, **kwargs: Any) -> dict[str, Any]:
    return completion(content=text, **kwargs)


def tool_calls_completion(
    *calls: Call, content: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    return completion(content=content, tool_calls=calls, **kwargs)


# -- streaming -------------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    choices: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    model: str = MODEL,
    id: str = COMPLETION_ID,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; pass ``choices=[]`` for the usage chunk."""
    if choices is None:
        choices = [
            {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}
        ]
    out: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
        "choices": choices,
    }
    if usage is not None:
        out["usage"] = usage
    return out


def usage_chunk(prompt_tokens: int = 12, completion_tokens: int = 7) -> dict[str, Any]:
    """The last chunk under ``stream_options.include_usage``: no choices, usage set."""
    return chunk(choices=[], usage=usage(prompt_tokens, completion_tokens))


def _role_chunk() -> dict[str, Any]:
    return chunk({"role": "assistant", "content": None, "refusal": None})


def _finish(
    chunks: list[dict[str, Any]], finish_reason: str | None, include_usage: bool
) -> list[dict[str, Any]]:
    if finish_reason is not None:
        chunks.append(chunk({}, finish_reason=finish_reason))
    if include_usage:
        chunks.append(usage_chunk())
    return chunks


def text_stream(
    text: str,
    *,
    size: int | Sequence[int] = 4,
    finish_reason: str | None = "stop",
    include_usage: bool = False,
) -> list[dict[str, Any]]:
    chunks = [_role_chunk()]
    chunks.extend(chunk({"content": piece}) for piece in split(text, size))
    return _finish(chunks, finish_reason, include_usage)


def tool_calls_stream(
    *calls: Call,
    size: int | Sequence[int] = 5,
    interleave: bool = False,
    content: str | None = None,
    finish_reason: str | None = "tool_calls",
    include_usage: bool = False,
) -> list[dict[str, Any]]:
    """Calls on indexes 0..n-1; the first delta of each carries id, type, name
    and ``arguments: ""``, the next ones only ``index`` and an argument fragment.

    ``interleave=True`` sends the fragments of all calls round-robin (the
    interleaved stream of wire-formats.md section 1); otherwise call by call.
    """
    chunks = [_role_chunk()]
    if content:
        chunks.extend(chunk({"content": piece}) for piece in split(content, 4))
    ids = _ids(calls)
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(calls, ids, strict=True)):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas = [first]
        deltas.extend(
            {"index": index, "function": {"arguments": frag}}
            for frag in split(call.arguments, size)
        )
        per_call.append(deltas)
    if interleave:
        longest = max((len(d) for d in per_call), default=0)
        ordered = [d[i] for i in range(longest) for d in per_call if i < len(d)]
    else:
        ordered = [d for deltas in per_call for d in deltas]
    chunks.extend(chunk({"tool_calls": [d]}) for d in ordered)
    return _finish(chunks, finish_reason, include_usage)


def whole_calls_stream(
    *calls: Call,
    finish_reason: str | None = "tool_calls",
    include_usage: bool = False,
    same_chunk: bool = False,
) -> list[dict[str, Any]]:
    """Each call complete (id, name, full arguments) in one delta, as Ollama
    streams them; ``same_chunk=True`` puts all of them in a single chunk."""
    deltas = [
        {"index": i, **tool_call(c, call_id)}
        for i, (c, call_id) in enumerate(zip(calls, _ids(calls), strict=True))
    ]
    chunks = [_role_chunk()]
    if same_chunk:
        chunks.append(chunk({"tool_calls": deltas}))
    else:
        chunks.extend(chunk({"tool_calls": [d]}) for d in deltas)
    return _finish(chunks, finish_reason, include_usage)


def shared_index_stream(
    *calls: Call,
    size: int | Sequence[int] = 5,
    finish_reason: str | None = "tool_calls",
    include_usage: bool = False,
) -> list[dict[str, Any]]:
    """Parallel calls that all use ``index: 0`` and differ only by ``id`` (a
    known server quirk). A parser keyed on index alone concatenates them; one
    that starts a new call on a new id gets them right."""
    chunks = [_role_chunk()]
    for call, call_id in zip(calls, _ids(calls), strict=True):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks.extend(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]})
            for frag in split(call.arguments, size)
        )
    return _finish(chunks, finish_reason, include_usage)


def missing_index_stream(
    *calls: Call, finish_reason: str | None = "tool_calls"
) -> list[dict[str, Any]]:
    """Whole calls with no ``index`` key (Ollama before 0.4.7). The openai SDK
    types reject this; a tolerant adapter should not."""
    chunks = [_role_chunk()]
    for call, call_id in zip(calls, _ids(calls), strict=True):
        chunks.append(chunk({"tool_calls": [tool_call(call, call_id)]}))
    return _finish(chunks, finish_reason, False)


def stream_error_event(message: str = "Provider returned error", code: int = 502) -> dict[str, Any]:
    """An error inside the stream after HTTP 200 (OpenRouter's mid-stream error)."""
    return {
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "error": {"message": message, "code": code},
        "choices": [
            {"index": 0, "delta": {"content": ""}, "finish_reason": "error", "logprobs": None}
        ],
    }
