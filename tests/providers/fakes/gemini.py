"""Canned Gemini ``GenerateContentResponse`` objects (plain dicts, REST camelCase).

Parts: :func:`text_part`, :func:`function_call_part` (``id`` optional, as the
Developer API often omits it; ``thought_signature`` goes on the part, next to
``functionCall``), :func:`thought_part`. :func:`response` wraps parts in one
candidate. There is no tool-specific finish reason: a tool turn ends with
``STOP``.

Streaming (:func:`stream_chunks`): each SSE ``data:`` event is a whole
``GenerateContentResponse``; text may be split over chunks, each
``functionCall`` part arrives whole; ``finishReason`` and ``usageMetadata``
come on the last chunk. There is no ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .openai_chat import split

__all__ = [
    "candidate",
    "function_call_part",
    "response",
    "stream_chunks",
    "text_part",
    "thought_part",
    "usage_metadata",
]

MODEL_VERSION = "gemini-fake-001"
RESPONSE_ID = "fakeRespId01"
SIGNATURE = "c2lnbmF0dXJlLWZha2U="  # base64, as the API sends bytes


def text_part(text: str, *, thought_signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": text}
    if thought_signature is not None:
        part["thoughtSignature"] = thought_signature
    return part


def thought_part(text: str) -> dict[str, Any]:
    """A thought summary part (``includeThoughts``)."""
    return {"text": text, "thought": True}


def function_call_part(
    name: str,
    args: dict[str, Any],
    *,
    id: str | None = None,
    thought_signature: str | None = None,
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if id is not None:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if thought_signature is not None:
        part["thoughtSignature"] = thought_signature
    return part


def usage_metadata(
    prompt: int = 12, candidates: int = 7, thoughts: int | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    return meta


def candidate(
    parts: Sequence[dict[str, Any]], *, finish_reason: str | None = "STOP", index: int = 0
) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": index}
    if finish_reason is not None:
        cand["finishReason"] = finish_reason
    return cand


def response(
    parts: Sequence[dict[str, Any]],
    *,
    finish_reason: str | None = "STOP",
    usage: dict[str, Any] | None = None,
    model_version: str = MODEL_VERSION,
    response_id: str = RESPONSE_ID,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "candidates": [candidate(parts, finish_reason=finish_reason)],
        "modelVersion": model_version,
        "responseId": response_id,
    }
    out["usageMetadata"] = usage if usage is not None else usage_metadata()
    return out


def stream_chunks(
    parts: Sequence[dict[str, Any]],
    *,
    size: int | Sequence[int] = 5,
    finish_reason: str = "STOP",
    usage: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Split ``parts`` into stream chunks: text parts are cut into pieces of
    ``size`` (a signature stays on the first piece), other parts are sent whole.
    The last chunk carries ``finishReason`` and full ``usageMetadata``."""
    pieces: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part and not part.get("thought"):
            for i, piece in enumerate(split(part["text"], size)):
                new = {**part, "text": piece}
                if i:
                    new.pop("thoughtSignature", None)
                pieces.append(new)
        else:
            pieces.append(part)
    chunks: list[dict[str, Any]] = []
    for i, item in enumerate(pieces):
        last = i == len(pieces) - 1
        chunk = {
            "candidates": [candidate([item], finish_reason=finish_reason if last else None)],
            "modelVersion": MODEL_VERSION,
            "responseId": RESPONSE_ID,
            "usageMetadata": (usage or usage_metadata())
            if last
            else {"promptTokenCount": 12, "totalTokenCount": 12},
        }
        chunks.append(chunk)
    return chunks
