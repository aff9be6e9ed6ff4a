"""Request side: tools, tool config and the Session as Gemini ``contents``.

The model's own turns are sent back as received: the raw ``parts`` of each
assistant turn (thought signatures, thought summaries, ``functionCall`` ids or
their absence) are kept in ``AssistantMessage.provider_state["gemini"]`` and
echoed verbatim. Only a turn without that state (written by hand, or by
another provider) is rebuilt from its text and calls.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from toolwire import (
    AssistantMessage,
    Session,
    SystemMessage,
    ToolCall,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from toolwire.adapters import ResolvedTool, ResolvedTurn, arguments_object
from toolwire.media import Audio, File, Image, MediaSupport
from toolwire.profiles import profile_for
from toolwire.schema import CompiledTool

__all__ = [
    "AFTER_MEDIA",
    "DUMMY_THOUGHT_SIGNATURE",
    "NESTED_MEDIA",
    "PROVIDER_KEY",
    "encode_contents",
    "function_declaration",
    "media_support",
    "stored_parts",
    "system_instruction",
    "tool_config",
]

logger = logging.getLogger("toolwire.gemini")

PROVIDER_KEY = "gemini"
"""The key of this adapter's data in ``AssistantMessage.provider_state``."""

DUMMY_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""Sent on the first ``functionCall`` of a model turn that has no stored signature (a turn
from another provider or written by hand): Gemini 3 rejects unsigned calls otherwise. This
is the value Google's thought-signature FAQ documents (as pydantic-ai does)."""


# -- tools --------------------------------------------------------------------------------


def function_declaration(tool: ResolvedTool, compiled: CompiledTool) -> dict[str, Any]:
    """One ``functionDeclarations`` entry: name, description, and the compiled schema in the
    field the compiler chose (``parameters`` or ``parametersJsonSchema``)."""
    decl: dict[str, Any] = {"name": tool.name}
    if tool.description:
        decl["description"] = tool.description
    schema = compiled.schema
    if compiled.target == "parameters":
        # Gemini rejects an empty properties map: a tool without arguments sends no schema.
        if schema.get("properties"):
            decl["parameters"] = schema
    else:
        decl["parametersJsonSchema"] = schema
    return decl


def tool_config(turn: ResolvedTurn) -> dict[str, Any]:
    """``toolConfig.functionCallingConfig`` for the turn's tool choice."""
    choice = turn.tool_choice
    config: dict[str, Any]
    if choice.kind == "none":
        config = {"mode": "NONE"}
    elif choice.kind == "required":
        config = {"mode": "ANY"}
    elif choice.kind == "specific":
        assert choice.name is not None
        config = {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    else:
        config = {"mode": "AUTO"}
    return {"functionCallingConfig": config}


# -- the session ----------------------------------------------------------------------------


def system_instruction(session: Session) -> dict[str, Any] | None:
    text = session.system_text()
    return {"parts": [{"text": text}]} if text else None


def stored_parts(message: AssistantMessage) -> list[dict[str, Any]] | None:
    """The raw parts kept for ``message``, when they still match its calls (else None)."""
    state = message.provider_state.get(PROVIDER_KEY)
    if not isinstance(state, Mapping):
        return None
    parts = state.get("parts")
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
    names = [c.get("name") for c in calls]
    if names != [c.name for c in message.tool_calls]:
        logger.debug("stored Gemini parts do not match the message's calls; rebuilding them")
        return None
    return parts


def _rebuilt_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"text": message.text})
    for i, call in enumerate(message.tool_calls):
        part: dict[str, Any] = {
            "functionCall": {"name": call.name, "args": _args_object(call), "id": call.id}
        }
        if i == 0:
            part["thoughtSignature"] = DUMMY_THOUGHT_SIGNATURE
        parts.append(part)
    return parts


def _args_object(call: ToolCall) -> dict[str, Any]:
    return arguments_object(call.arguments)


def _wire_ids(message: AssistantMessage, parts: list[dict[str, Any]] | None) -> list[str | None]:
    """The id the model used for each call (None when it sent none), in call order."""
    if parts is None:
        return [c.id for c in message.tool_calls]
    out: list[str | None] = []
    for p in parts:
        fc = p.get("functionCall")
        if isinstance(fc, dict):
            wire = fc.get("id")
            out.append(wire if isinstance(wire, str) and wire else None)
    return out


def _function_response(
    name: str, wire_id: str | None, content: str, is_error: bool
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "name": name,
        "response": {"error" if is_error else "output": content},
    }
    if wire_id is not None:
        response["id"] = wire_id
    return {"functionResponse": response}


#: Inline data Gemini takes in a request: images, audio, PDFs and plain text.
_INLINE_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
_INLINE_AUDIO = frozenset(
    {"audio/wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"}
)
_INLINE_FILES = frozenset({"application/pdf", "text/plain"})

#: Gemini 3 models take images and PDFs inside ``functionResponse.parts``; other inline
#: media (audio, text) goes after the round's function responses, in the same content.
NESTED_MEDIA = MediaSupport(
    "Gemini 3",
    image=_INLINE_IMAGES,
    audio=_INLINE_AUDIO,
    file=_INLINE_FILES,
    where="inside functionResponse.parts (images, PDF); after the responses (audio, text)",
)
#: Earlier models: every inline part after the round's function responses.
AFTER_MEDIA = attrs.evolve(
    NESTED_MEDIA, api="Gemini 2", where="after the round's functionResponse parts"
)
_NESTABLE = _INLINE_IMAGES | {"application/pdf"}


def media_support(model: str) -> MediaSupport:
    """What a Gemini model is sent for tool-result media: its profile's ``result_media``
    (``nested``: inside ``functionResponse.parts``; ``after``: after the responses)."""
    nested = profile_for("gemini", model).result_media == "nested"
    return NESTED_MEDIA if nested else AFTER_MEDIA


def _inline(part: Image | Audio | File) -> dict[str, Any]:
    blob: dict[str, Any] = {"mimeType": part.media_type, "data": part.base64()}
    return {"inlineData": blob}


def _rich_response(
    r: ToolResult, wire_id: str | None, support: MediaSupport, after: list[dict[str, Any]]
) -> dict[str, Any]:
    """A result with media: its text as the response, the media nested or in ``after``."""
    parts, is_error = r.model_parts()
    texts: list[str] = []
    nested: list[dict[str, Any]] = []
    for p in parts:
        if not isinstance(p, (Image, Audio, File)) or not support.sends(p):
            texts.append(support.as_text(p))
            continue
        if support is NESTED_MEDIA and p.media_type in _NESTABLE:
            blob = _inline(p)["inlineData"]
            blob["displayName"] = p.name or f"part{len(nested) + 1}"
            nested.append({"inlineData": blob})
            texts.append(p.label(f"attached as {blob['displayName']}"))
        else:
            after.append(
                {"text": f"Media from the result of tool call {r.call_id} ({r.tool_name}):"}
            )
            after.append(_inline(p))
            texts.append(p.label("sent after the function responses"))
    out = _function_response(r.tool_name, wire_id, "\n\n".join(texts), is_error)
    if nested:
        out["functionResponse"]["parts"] = nested
    return out


def encode_contents(
    messages: Sequence[Any], media: MediaSupport = AFTER_MEDIA
) -> list[dict[str, Any]]:
    """``contents`` for the session's messages (system messages go to systemInstruction).

    Each round's results are one ``user`` content with one ``functionResponse``
    part per call, in call order, carrying the id the model gave the call (none
    when it gave none, so the API pairs them by position as it does itself).
    Media a result carries goes as ``media`` says (:func:`media_support`).
    """
    contents: list[dict[str, Any]] = []
    wire_ids: list[str | None] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, UserMessage):
            contents.append({"role": "user", "parts": [{"text": message.text}]})
        elif isinstance(message, AssistantMessage):
            stored = stored_parts(message)
            parts = stored if stored is not None else _rebuilt_parts(message)
            wire_ids = _wire_ids(message, stored)
            if parts:
                contents.append({"role": "model", "parts": parts})
        elif isinstance(message, ToolResultsMessage):
            after: list[dict[str, Any]] = []
            parts = [
                _rich_response(r, wire_ids[i] if i < len(wire_ids) else r.call_id, media, after)
                if r.rich
                else _function_response(
                    r.tool_name, wire_ids[i] if i < len(wire_ids) else r.call_id, *r.for_model()
                )
                for i, r in enumerate(message.results)
            ]
            contents.append({"role": "user", "parts": parts + after})
    return contents
