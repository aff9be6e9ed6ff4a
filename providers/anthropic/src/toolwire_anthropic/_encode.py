"""Session and turn -> a Messages API request body.

Rules the API enforces, and how they are met here:

- one top-level ``system`` string (every system message, joined);
- roles alternate: consecutive messages of the same role are merged into one;
- every ``tool_use`` is answered in the *next* user message, whose content
  starts with one ``tool_result`` per call, in the assistant's order; user text
  that follows a round goes after the results in that same message;
- text blocks must not be empty (empty text is left out);
- thinking and redacted_thinking blocks are echoed unchanged, signatures
  included, before the text and tool_use blocks of their assistant turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolwire import (
    AssistantMessage,
    Session,
    SystemMessage,
    Tool,
    ToolCall,
    ToolResultsMessage,
    UserMessage,
)
from toolwire.adapters import ResolvedTurn, arguments_object, cached_wire
from toolwire.media import COMMON_IMAGES, File, Image, MediaSupport, Part
from toolwire.schema import compile_tool
from toolwire_anthropic._schema import COMPILER

__all__ = ["MEDIA", "PROVIDER", "encode_messages", "render_tool", "thinking_blocks", "tool_choice"]

PROVIDER = "anthropic"
_WIRE_CACHE = "toolwire_anthropic.wire"


def render_tool(tool: Tool[Any, Any], description: str) -> dict[str, Any]:
    """``{name, description, input_schema}``, cached on the tool (its own description).

    The cached dict is shared: callers that hand it out must copy it.
    """

    def build() -> dict[str, Any]:
        wire: dict[str, Any] = {"name": tool.name}
        if description:
            wire["description"] = description
        wire["input_schema"] = compile_tool(tool, COMPILER).schema
        return wire

    return cached_wire(tool, description, _WIRE_CACHE, build, compiler=COMPILER)


def tool_choice(turn: ResolvedTurn, *, thinking: bool) -> dict[str, Any] | None:
    """The ``tool_choice`` for the turn, or None when the API default (auto) is meant.

    With extended thinking the API refuses a forced choice (``any``/``tool``:
    "Thinking may not be enabled when tool_choice forces tool use"), so it is
    sent as ``auto`` and core checks the requirement after decoding.
    """
    choice = turn.tool_choice
    if choice.kind == "none":
        return {"type": "none"}
    if choice.kind == "required" and not thinking:
        out: dict[str, Any] = {"type": "any"}
    elif choice.kind == "specific" and not thinking:
        out = {"type": "tool", "name": choice.name}
    else:
        out = {"type": "auto"}
    if turn.parallel is False:
        out["disable_parallel_tool_use"] = True
    elif out == {"type": "auto"}:
        return None
    return out


def thinking_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """The thinking / redacted_thinking blocks this adapter stored on an assistant message."""
    state = message.provider_state.get(PROVIDER)
    if not isinstance(state, Mapping):
        return []
    blocks = state.get("thinking")
    if not isinstance(blocks, list):
        return []
    return [dict(b) for b in blocks if isinstance(b, Mapping)]


def _input_object(call: ToolCall) -> dict[str, Any]:
    """The ``input`` object of a tool_use block, from the call's argument text.

    Text that is not a JSON object (a bad call the round answered with a
    rejection) is sent as ``{}``: the API only accepts an object, and the
    rejection result carries the explanation.
    """
    return arguments_object(call.arguments)


def _assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    content = thinking_blocks(message)
    if message.text:
        content.append({"type": "text", "text": message.text})
    content.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _input_object(c)}
        for c in message.tool_calls
    )
    return content


#: What a ``tool_result`` takes besides text: images (base64 or a URL the API fetches),
#: PDF documents (base64 or URL) and plain-text documents; no audio.
MEDIA = MediaSupport(
    "Anthropic Messages",
    image=COMMON_IMAGES,
    file=frozenset({"application/pdf", "text/plain"}),
    urls=frozenset({"image", "file"}),
)


def _media_block(part: Part) -> dict[str, Any]:
    """A part as a ``tool_result`` content block (text, image or document)."""
    if not MEDIA.sends(part):
        return {"type": "text", "text": MEDIA.as_text(part)}
    assert isinstance(part, (Image, File))  # sends() is true for these alone here
    source: dict[str, Any]
    if part.data is None:
        source = {"type": "url", "url": part.url}
    elif part.media_type == "text/plain":
        text = part.data.decode("utf-8", "replace")
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.base64()}
    block: dict[str, Any] = {"type": part.kind if part.kind == "image" else "document"}
    block["source"] = source
    if isinstance(part, File) and part.name:
        block["title"] = part.name
    return block


def _results_content(message: ToolResultsMessage) -> list[dict[str, Any]]:
    out = []
    for r in message.results:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": r.call_id}
        if r.rich:
            parts, is_error = r.model_parts()
            blocks = [_media_block(p) for p in parts]
            block["content"] = [b for b in blocks if b["type"] != "text" or b["text"]]
        else:
            text, is_error = r.for_model()
            if text:
                block["content"] = text
        if is_error:
            block["is_error"] = True
        out.append(block)
    return out


def encode_messages(session: Session | Iterable[Any]) -> list[dict[str, Any]]:
    """The ``messages`` array: roles alternate, results first in their user message."""
    out: list[dict[str, Any]] = []
    for message in session:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, AssistantMessage):
            role, content = "assistant", _assistant_content(message)
        elif isinstance(message, ToolResultsMessage):
            role, content = "user", _results_content(message)
        elif isinstance(message, UserMessage):
            role = "user"
            content = [{"type": "text", "text": message.text}] if message.text else []
        else:  # pragma: no cover - Session only holds the four kinds
            raise TypeError(f"cannot encode {type(message).__name__} for {PROVIDER}")
        if not content:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return out


def history_tools(turn: ResolvedTurn, messages: Iterable[Any]) -> list[Tool[Any, Any]]:
    """Tools called earlier in the session, for a turn that offers none.

    The API wants the definitions of tools whose ``tool_use`` blocks are in the
    history (litellm #5747); they are sent with ``tool_choice: none``.
    """
    seen: dict[str, Tool[Any, Any]] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name not in seen:
                    tool = turn.toolset.get(call.name)
                    if tool is not None:
                        seen[call.name] = tool
    return list(seen.values())
