"""A Messages API response (JSON or an SSE stream) -> an AssistantReply.

Both paths give the same reply for the same message: text blocks joined;
tool_use blocks as calls in order, ids kept, the ``input`` object as compact
JSON text (a streamed ``partial_json`` that is not a JSON object is kept as
sent, so core reports it as invalid arguments); thinking and redacted_thinking
blocks kept in ``provider_state["anthropic"]["thinking"]``; ``stop_reason``
normalised; usage with cache reads counted as cached input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from toolwire import ToolCall, Usage
from toolwire.adapters import AssistantReply, SSEEvent, StreamEvent, ToolCallAssembler, Transport
from toolwire.exceptions import StreamError
from toolwire_anthropic._encode import PROVIDER

__all__ = ["STOP_REASONS", "MessageStream", "decode_message", "finish_reason"]

#: Anthropic ``stop_reason`` -> toolwire's normalised finish reason.
STOP_REASONS: Mapping[str, str] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "other",
}

_THINKING_TYPES = ("thinking", "redacted_thinking")


def finish_reason(stop_reason: object) -> str:
    return STOP_REASONS.get(stop_reason, "other") if isinstance(stop_reason, str) else "other"


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(raw: Mapping[str, Any]) -> Usage:
    """``input_tokens`` here counts every input token (Anthropic's ``input_tokens``
    excludes the cached part), as OpenAI's ``prompt_tokens`` does."""
    fresh = _count(raw.get("input_tokens"))
    read = _count(raw.get("cache_read_input_tokens"))
    created = _count(raw.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=fresh + read + created,
        output_tokens=_count(raw.get("output_tokens")),
        cached_tokens=read,
    )


def _compact(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if not isinstance(value, dict):
        return arguments
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _state(thinking: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {PROVIDER: {"thinking": [dict(b) for b in thinking]}} if thinking else {}


def _thinking_block(block: Mapping[str, Any]) -> dict[str, Any]:
    if block["type"] == "thinking":
        thinking, signature = block["thinking"], block["signature"]
        if not isinstance(thinking, str) or not isinstance(signature, str):
            raise TypeError("a thinking block needs string `thinking` and `signature`")
        return {"type": "thinking", "thinking": thinking, "signature": signature}
    data = block["data"]
    if not isinstance(data, str):
        raise TypeError("a redacted_thinking block needs a string `data`")
    return {"type": "redacted_thinking", "data": data}


def decode_message(data: Mapping[str, Any]) -> AssistantReply:
    """A non-streaming ``Message`` -> reply (KeyError/TypeError on a malformed one)."""
    content = data["content"]
    if not isinstance(content, list):
        raise TypeError(f"`content` must be a list, got {type(content).__name__}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            text = block["text"]
            if not isinstance(text, str):
                raise TypeError("a text block needs a string `text`")
            texts.append(text)
        elif kind == "tool_use":
            id, name, input = block["id"], block["name"], block["input"]
            if not isinstance(id, str) or not isinstance(name, str):
                raise TypeError("a tool_use block needs string `id` and `name`")
            arguments = json.dumps(input, ensure_ascii=False, separators=(",", ":"))
            calls.append(ToolCall(id, name, arguments))
        elif kind in _THINKING_TYPES:
            thinking.append(_thinking_block(block))
        # Other blocks (server tools, citations...) are not toolwire's to run.
    usage = data.get("usage")
    model = data.get("model")
    return AssistantReply(
        text="".join(texts),
        tool_calls=tuple(calls),
        finish_reason=finish_reason(data.get("stop_reason")),
        usage=_usage(usage) if isinstance(usage, Mapping) else None,
        provider_state=_state(thinking),
        model=model if isinstance(model, str) else None,
    )


class _Block:
    __slots__ = ("data", "kind", "open")

    def __init__(self, kind: str, data: dict[str, Any]) -> None:
        self.kind = kind
        self.data = data
        self.open = True


class MessageStream:
    """Decodes one request's SSE events; :meth:`finish` builds the reply.

    ``done`` turns true at ``message_stop``. A stream that ends before it
    is a StreamError. ``error`` events become typed errors (``overloaded_error``
    -> OverloadedError, and so on) through the transport's error mapper.
    """

    __slots__ = (
        "_assembler",
        "_blocks",
        "_model",
        "_raw_usage",
        "_started",
        "_stop_reason",
        "_transport",
        "done",
    )

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._assembler = ToolCallAssembler(PROVIDER)
        self._blocks: dict[int, _Block] = {}
        self._started = False
        self._model: str | None = None
        self._raw_usage: dict[str, Any] = {}
        self._stop_reason: object = None
        self.done = False

    def _fail(self, what: str) -> StreamError:
        return StreamError(f"malformed stream event: {what}", provider=PROVIDER)

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        try:
            data = event.json()
        except (ValueError, RecursionError):
            raise self._fail(f"`{event.event}` data is not JSON") from None
        if not isinstance(data, dict):
            raise self._fail(f"`{event.event}` data is a JSON {type(data).__name__}, not an object")
        kind = data.get("type", event.event)
        if kind == "error":
            raise self._transport.error_from_payload(data, default=StreamError)
        if kind == "ping":
            return []
        if kind == "message_start":
            return self._message_start(data)
        if not self._started and kind in (
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ):
            raise self._fail(f"`{kind}` before `message_start`")
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_delta":
            return self._block_delta(data)
        if kind == "content_block_stop":
            self._block(data).open = False
            return []
        if kind == "message_delta":
            delta = data["delta"]
            if not isinstance(delta, dict):
                raise TypeError("message_delta.delta must be an object")
            if "stop_reason" in delta:
                self._stop_reason = delta["stop_reason"]
            self._merge_usage(data.get("usage"))
            return []
        if kind == "message_stop":
            self.done = True
            return []
        return []  # unknown events are skipped, as the API's versioning policy asks

    def _message_start(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        if self._started:
            raise self._fail("a second `message_start`")
        message = data["message"]
        if not isinstance(message, dict):
            raise TypeError("message_start.message must be an object")
        self._started = True
        model = message.get("model")
        self._model = model if isinstance(model, str) else None
        self._merge_usage(message.get("usage"))
        return []

    def _merge_usage(self, usage: object) -> None:
        """message_delta usage is cumulative: later non-null counts replace earlier ones."""
        if isinstance(usage, dict):
            for key, value in usage.items():
                if value is not None:
                    self._raw_usage[key] = value

    def _index(self, data: Mapping[str, Any]) -> int:
        index = data["index"]
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"`index` must be an integer, got {type(index).__name__}")
        return index

    def _block(self, data: Mapping[str, Any]) -> _Block:
        index = self._index(data)
        block = self._blocks.get(index)
        if block is None:
            raise self._fail(f"`{data.get('type')}` for block {index}, which never started")
        if not block.open:
            raise self._fail(f"`{data.get('type')}` for block {index}, which already stopped")
        return block

    def _block_start(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        index = self._index(data)
        if index in self._blocks:
            raise self._fail(f"block {index} started twice")
        block = data["content_block"]
        if not isinstance(block, dict):
            raise TypeError("content_block must be an object")
        kind = block["type"]
        if kind == "text":
            self._blocks[index] = _Block(kind, {})
            text = block.get("text") or ""
            if not isinstance(text, str):
                raise TypeError("a text block needs a string `text`")
            return self._assembler.text(text)
        if kind == "tool_use":
            id, name = block["id"], block["name"]
            if not isinstance(id, str) or not isinstance(name, str) or not name:
                raise TypeError("a tool_use block needs string `id` and `name`")
            initial = block.get("input")
            self._blocks[index] = _Block(kind, {"input": initial, "json": []})
            return self._assembler.fragment(index, id=id, name=name)
        if kind in _THINKING_TYPES:
            self._blocks[index] = _Block(kind, _thinking_block(block))
            return []
        self._blocks[index] = _Block(kind, {})
        return []

    def _block_delta(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        block = self._block(data)
        delta = data["delta"]
        if not isinstance(delta, dict):
            raise TypeError("content_block_delta.delta must be an object")
        kind = delta["type"]
        if kind == "text_delta" and block.kind == "text":
            text = delta["text"]
            if not isinstance(text, str):
                raise TypeError("text_delta.text must be a string")
            return self._assembler.text(text)
        if kind == "input_json_delta" and block.kind == "tool_use":
            partial = delta["partial_json"]
            if not isinstance(partial, str):
                raise TypeError("input_json_delta.partial_json must be a string")
            block.data["json"].append(partial)
            return self._assembler.fragment(self._index(data), arguments=partial)
        if kind == "thinking_delta" and block.kind == "thinking":
            text = delta["thinking"]
            if not isinstance(text, str):
                raise TypeError("thinking_delta.thinking must be a string")
            block.data["thinking"] += text
            return []
        if kind == "signature_delta" and block.kind == "thinking":
            signature = delta["signature"]
            if not isinstance(signature, str):
                raise TypeError("signature_delta.signature must be a string")
            block.data["signature"] += signature
            return []
        if kind in ("text_delta", "input_json_delta", "thinking_delta", "signature_delta"):
            raise self._fail(f"`{kind}` for a `{block.kind}` block")
        return []  # citations_delta and deltas of blocks toolwire does not run

    def finish(self) -> AssistantReply:
        if not self.done:
            raise StreamError(
                "the stream ended without `message_stop`; the reply is incomplete and "
                "nothing was committed",
                provider=PROVIDER,
            )
        calls = []
        tool_blocks = [b for b in self._blocks.values() if b.kind == "tool_use"]
        for call, block in zip(self._assembler.calls(), tool_blocks, strict=True):
            arguments = "".join(block.data["json"])
            if not arguments:
                # The SDK keeps content_block_start's input when no fragment came.
                initial = block.data["input"]
                arguments = json.dumps(
                    initial if isinstance(initial, dict) else {},
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
            calls.append(ToolCall(call.id, call.name, _compact(arguments)))
        thinking = [b.data for b in self._blocks.values() if b.kind in _THINKING_TYPES]
        return AssistantReply(
            text=self._assembler.text_so_far,
            tool_calls=tuple(calls),
            finish_reason=finish_reason(self._stop_reason),
            usage=_usage(self._raw_usage) if self._raw_usage else None,
            provider_state=_state(thinking),
            model=self._model,
        )
