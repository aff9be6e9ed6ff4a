"""Synthetic SSE byte streams of the fixture's 8 tool calls, per provider wire format, and
the floor's minimal stream assembler.

Each stream is what the provider's streaming endpoint sends for ``ASSISTANT_MESSAGE``: the
calls' argument text in ``FRAGMENT``-character deltas (Gemini sends whole calls), cut into
``CHUNK``-byte reads that ignore event boundaries (as socket reads do).

The floor is the least work that still yields the calls: split the bytes into events on
blank lines, ``json.loads`` every ``data:`` payload, append each argument fragment to a list
per call, join at the end. No validation of the shapes, no error mapping, no stream events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

FRAGMENT = 8  # characters of argument text per delta (a few tokens, like the real APIs)
CHUNK = 512  # bytes per socket read

FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini")

Call = tuple[str, str, str]  # (id, name, arguments)


def calls_of(message: dict[str, Any]) -> list[Call]:
    return [
        (tc["id"], tc["function"]["name"], tc["function"]["arguments"])
        for tc in message["tool_calls"]
    ]


def _pieces(text: str) -> list[str]:
    return [text[i : i + FRAGMENT] for i in range(0, len(text), FRAGMENT)]


def _sse(payload: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return head + "data: " + json.dumps(payload, separators=(",", ":")) + "\n\n"


def _openai_chat(calls: list[Call]) -> list[str]:
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-4.1"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": None})]
    for i, (cid, name, args) in enumerate(calls):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _pieces(args):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls"))
    out.append("data: [DONE]\n\n")
    return out


def _openai_responses(calls: list[Call]) -> list[str]:
    out = [
        _sse(
            {"type": "response.created", "response": {"id": "resp_bench", "status": "in_progress"}},
            "response.created",
        )
    ]
    items = []
    for i, (cid, name, args) in enumerate(calls):
        item_id = f"fc_{i}"
        item = {
            "type": "function_call",
            "id": item_id,
            "call_id": cid,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        out.append(
            _sse(
                {"type": "response.output_item.added", "output_index": i, "item": item},
                "response.output_item.added",
            )
        )
        for piece in _pieces(args):
            out.append(
                _sse(
                    {
                        "type": "response.function_call_arguments.delta",
                        "output_index": i,
                        "item_id": item_id,
                        "delta": piece,
                    },
                    "response.function_call_arguments.delta",
                )
            )
        out.append(
            _sse(
                {
                    "type": "response.function_call_arguments.done",
                    "output_index": i,
                    "item_id": item_id,
                    "arguments": args,
                },
                "response.function_call_arguments.done",
            )
        )
        done = {**item, "arguments": args, "status": "completed"}
        items.append(done)
        out.append(
            _sse(
                {"type": "response.output_item.done", "output_index": i, "item": done},
                "response.output_item.done",
            )
        )
    response = {
        "id": "resp_bench",
        "status": "completed",
        "model": "gpt-4.1",
        "output": items,
        "usage": {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20},
    }
    out.append(_sse({"type": "response.completed", "response": response}, "response.completed"))
    return out


def _anthropic(calls: list[Call]) -> list[str]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    out = [_sse(start, "message_start")]
    for i, (cid, name, args) in enumerate(calls):
        block = {"type": "tool_use", "id": cid, "name": name, "input": {}}
        out.append(
            _sse(
                {"type": "content_block_start", "index": i, "content_block": block},
                "content_block_start",
            )
        )
        for piece in _pieces(args):
            delta = {"type": "input_json_delta", "partial_json": piece}
            out.append(
                _sse(
                    {"type": "content_block_delta", "index": i, "delta": delta},
                    "content_block_delta",
                )
            )
        out.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 200},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def _gemini(calls: list[Call]) -> list[str]:
    # Gemini streams whole functionCall parts (no argument deltas); one call per chunk.
    out = []
    for i, (cid, name, args) in enumerate(calls):
        candidate: dict[str, Any] = {
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"id": cid, "name": name, "args": json.loads(args)}}],
            },
            "index": 0,
        }
        if i == len(calls) - 1:
            candidate["finishReason"] = "STOP"
        out.append(_sse({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}))
    return out


_BUILDERS: dict[str, Callable[[list[Call]], list[str]]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def stream_bytes(fmt: str, message: dict[str, Any]) -> bytes:
    return "".join(_BUILDERS[fmt](calls_of(message))).encode()


def chunks(data: bytes, size: int = CHUNK) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# -- the floor -----------------------------------------------------------------------------


def _events(parts: list[bytes]) -> list[Any]:
    """Minimal SSE: join reads, split on blank lines, json.loads each ``data:`` payload."""
    buf = b""
    out = []
    loads = json.loads
    for part in parts:
        buf += part
        *events, buf = buf.split(b"\n\n")
        for ev in events:
            for line in ev.split(b"\n"):
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    out.append(loads(line[6:]))
    return out


def floor_assemble(fmt: str, parts: list[bytes]) -> list[Call]:
    """The floor: the calls out of a stream of ``fmt`` with the least possible work."""
    ids: dict[Any, str] = {}
    names: dict[Any, str] = {}
    args: dict[Any, list[str]] = {}
    for p in _events(parts):
        if fmt == "openai-chat":
            for tc in p["choices"][0]["delta"].get("tool_calls") or ():
                i = tc["index"]
                if "id" in tc:
                    ids[i] = tc["id"]
                    names[i] = tc["function"]["name"]
                    args[i] = []
                args[i].append(tc["function"]["arguments"])
        elif fmt == "openai-responses":
            kind = p["type"]
            if kind == "response.output_item.added":
                i = p["output_index"]
                ids[i] = p["item"]["call_id"]
                names[i] = p["item"]["name"]
                args[i] = []
            elif kind == "response.function_call_arguments.delta":
                args[p["output_index"]].append(p["delta"])
        elif fmt == "anthropic":
            kind = p["type"]
            if kind == "content_block_delta":
                args[p["index"]].append(p["delta"]["partial_json"])
            elif kind == "content_block_start":
                i = p["index"]
                ids[i] = p["content_block"]["id"]
                names[i] = p["content_block"]["name"]
                args[i] = []
        else:  # gemini: whole calls, re-serialised as every adapter must
            for part in p["candidates"][0]["content"]["parts"]:
                fc = part["functionCall"]
                i = len(ids)
                ids[i] = fc["id"]
                names[i] = fc["name"]
                args[i] = [json.dumps(fc["args"], separators=(",", ":"))]
    return [(ids[i], names[i], "".join(args[i])) for i in ids]


# -- async twins of the fixture tools (executor scenario) -------------------------------------


def async_twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An ``async def`` with ``fn``'s name, signature, hints and docstring, returning ``fn(...)``.

    Every library builds its tool from the twin exactly as from a hand-written async tool.
    """
    import functools

    @functools.wraps(fn)
    async def twin(**kwargs: Any) -> Any:
        return fn(**kwargs)

    return twin
