"""Response side: ``GenerateContentResponse`` (whole, or as stream chunks) -> AssistantReply.

One :class:`ReplyBuilder` serves both paths: a non-streaming response is one
chunk; a stream is many, each a whole ``GenerateContentResponse``. Quirks
handled here:

- ``functionCall.id`` is optional and may be reused across same-name parallel
  calls: a missing or repeated id is replaced by a deterministic one
  (``synthesize_call_id``); the model's own id (or its absence) stays in the
  stored parts and is what goes back in the ``functionResponse``;
- there is no tool-specific finish reason: ``STOP`` with calls is ``tool_calls``;
- thought summaries (``thought: true``) are not reply text; they and every
  ``thoughtSignature`` stay in the stored parts, exactly as received;
- "parallel calls off" cannot be sent to Gemini: extra calls are dropped here;
- ``promptFeedback.blockReason`` (no candidates) raises :class:`PromptBlockedError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolwire import ProviderError, Usage
from toolwire.adapters import AssistantReply, StreamEvent, ToolCallAssembler, synthesize_call_id
from toolwire.exceptions import StreamError
from toolwire_gemini._encode import PROVIDER_KEY
from toolwire_gemini._errors import PromptBlockedError

__all__ = ["FINISH_REASONS", "ReplyBuilder", "usage_of"]

#: Gemini ``finishReason`` -> toolwire's normalised finish reason (``STOP`` is ``tool_calls``
#: when the reply has calls). Anything not listed is ``other``.
FINISH_REASONS: Mapping[str, str] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "LANGUAGE": "other",
    "MALFORMED_FUNCTION_CALL": "other",
    "UNEXPECTED_TOOL_CALL": "other",
    "TOO_MANY_TOOL_CALLS": "other",
    "MISSING_THOUGHT_SIGNATURE": "other",
    "MALFORMED_RESPONSE": "other",
    "OTHER": "other",
    "FINISH_REASON_UNSPECIFIED": "other",
}


def _count(meta: Mapping[str, Any], key: str) -> int:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of(meta: object) -> Usage | None:
    """``usageMetadata`` -> Usage. Output counts thoughts too (as OpenAI's does);
    input counts the tool-use prompt too (both are billed as such)."""
    if not isinstance(meta, Mapping):
        return None
    thoughts = _count(meta, "thoughtsTokenCount")
    return Usage(
        input_tokens=_count(meta, "promptTokenCount") + _count(meta, "toolUsePromptTokenCount"),
        output_tokens=_count(meta, "candidatesTokenCount") + thoughts,
        cached_tokens=_count(meta, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _is_plain_text(part: Mapping[str, Any]) -> bool:
    return isinstance(part.get("text"), str) and set(part) <= {
        "text",
        "thought",
        "thoughtSignature",
    }


class ReplyBuilder:
    """Feed whole responses (:meth:`add`) and get stream events; :meth:`reply` at the end.

    ``stream=True`` merges text parts that arrive in consecutive chunks into one
    stored part (a part carrying a new ``thoughtSignature`` is kept apart, so
    every signature is stored exactly as received).
    """

    def __init__(
        self,
        provider: str,
        *,
        stream: bool,
        parallel_calls: bool | None,
        default_model: str | None,
    ) -> None:
        self.provider = provider
        self.stream = stream
        self.parallel_calls = parallel_calls
        self.model = default_model
        self.assembler = ToolCallAssembler(provider)
        self.parts: list[dict[str, Any]] = []
        self.finish: str | None = None
        self.finish_message: str | None = None
        self.usage: Usage | None = None
        self.dropped = 0
        self._ids: set[str] = set()
        self._chunk_start = 0  # index in self.parts where the current chunk's parts begin

    # -- feeding ----------------------------------------------------------------------

    def add(self, data: object) -> list[StreamEvent]:
        # Decoded JSON: every object is a dict (checked as such: an ABC check per field
        # costs more than the rest of a small event).
        if not isinstance(data, dict):
            raise TypeError(f"expected a JSON object, got a JSON {type(data).__name__}")
        self._chunk_start = len(self.parts)
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            raise PromptBlockedError.from_feedback(feedback, provider=self.provider)
        version = data.get("modelVersion")
        if isinstance(version, str) and version:
            self.model = version
        if data.get("usageMetadata") is not None:
            self.usage = usage_of(data["usageMetadata"]) or self.usage
        candidates = data.get("candidates")
        if candidates is None:
            return []
        if not isinstance(candidates, list):
            raise TypeError(f"candidates must be a list, got {type(candidates).__name__}")
        if not candidates:
            return []
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise TypeError(f"a candidate must be an object, got {type(candidate).__name__}")
        events: list[StreamEvent] = []
        content = candidate.get("content")
        if content is not None:
            if not isinstance(content, dict):
                raise TypeError(f"content must be an object, got {type(content).__name__}")
            parts = content.get("parts") or []
            if not isinstance(parts, list):
                raise TypeError(f"content.parts must be a list, got {type(parts).__name__}")
            for part in parts:
                if not isinstance(part, dict):
                    raise TypeError(f"a part must be an object, got {type(part).__name__}")
                events.extend(self._part(part))
        reason = candidate.get("finishReason")
        if reason is not None:
            if not isinstance(reason, str):
                raise TypeError(f"finishReason must be a string, got {type(reason).__name__}")
            self.finish = reason
        message = candidate.get("finishMessage")
        if isinstance(message, str) and message:
            self.finish_message = message
        return events

    def _part(self, part: dict[str, Any]) -> list[StreamEvent]:
        call = part.get("functionCall")
        if call is not None:
            return self._call(part, call)
        text = part.get("text")
        if text is not None and not isinstance(text, str):
            raise TypeError(f"a text part must hold a string, got {type(text).__name__}")
        self._store_text(part)
        if text and not part.get("thought"):
            return self.assembler.text(text)
        return []

    def _store_text(self, part: dict[str, Any]) -> None:
        previous = self.parts[-1] if self.parts else None
        if (
            self.stream
            and previous is not None
            and len(self.parts) - 1 < self._chunk_start  # only across chunks
            and _is_plain_text(part)
            and _is_plain_text(previous)
            and "thoughtSignature" not in part
            and bool(previous.get("thought")) == bool(part.get("thought"))
        ):
            previous["text"] = previous["text"] + part["text"]
            self._chunk_start = len(self.parts) - 1  # the merged part now belongs to this chunk
            return
        self.parts.append(dict(part))

    def _call(self, part: dict[str, Any], call: object) -> list[StreamEvent]:
        if not isinstance(call, dict):
            raise TypeError(f"functionCall must be an object, got {type(call).__name__}")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("a functionCall has no name")
        if self.parallel_calls is False and len(self.assembler):
            self.dropped += 1  # Gemini cannot be told "one call only": enforce it here
            return []
        args = call.get("args")
        arguments = (
            "{}" if args is None else json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        )
        position = len(self.assembler)
        wire_id = call.get("id")
        call_id = wire_id if isinstance(wire_id, str) and wire_id else None
        if call_id is None or call_id in self._ids:
            call_id = synthesize_call_id(name, arguments, position)
        self._ids.add(call_id)
        self.parts.append(dict(part))
        return self.assembler.fragment(position, id=call_id, name=name, arguments=arguments)

    # -- the result -------------------------------------------------------------------

    def reply(self) -> AssistantReply:
        calls = self.assembler.calls()
        if self.finish is None:
            if self.stream:
                raise StreamError(
                    "the stream ended without a finishReason; the reply is incomplete",
                    provider=self.provider,
                )
            finish = "tool_calls" if calls else "stop"
        elif self.finish == "STOP" and calls:
            finish = "tool_calls"
        else:
            finish = FINISH_REASONS.get(self.finish, "other")
        state: dict[str, Any] = {"parts": self.parts}
        if self.finish is not None and self.finish != "STOP":
            state["finish_reason"] = self.finish
        if self.finish_message:
            state["finish_message"] = self.finish_message
        if self.dropped:
            state["dropped_calls"] = self.dropped
        return AssistantReply(
            text=self.assembler.text_so_far,
            tool_calls=calls,
            finish_reason=finish,
            usage=self.usage,
            provider_state={PROVIDER_KEY: state},
            model=self.model,
        )


def no_candidates(provider: str, data: Mapping[str, Any]) -> ProviderError | None:
    """The error for a non-streaming response without a candidate (None when it has one)."""
    candidates = data.get("candidates")
    if isinstance(candidates, list) and candidates:
        return None
    return ProviderError(
        "malformed response: it has no candidates and no promptFeedback.blockReason",
        provider=provider,
    )
