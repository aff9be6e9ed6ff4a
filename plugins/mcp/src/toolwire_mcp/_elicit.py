"""Answering a server's elicitation (``elicitation/create``): what the application says.

An MCP server may ask the client's user for input in the middle of a call (a form, or a
URL to open), as toolwire's own gateway asks for approval. The application answers
through one handler, :func:`set_elicitation_handler`; with none (the default, and what
a non-interactive run should keep) every request is declined, so nothing is given to a
server that nobody was asked about.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Union

import attrs

from toolwire.adapters import review_arguments, terminal_text
from toolwire_mcp._slot import Slot

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "elicitation_handler",
    "set_elicitation_handler",
]

logger = logging.getLogger("toolwire.mcp")

# -- a toolwire gateway's approval question, as it asks it and as its clients read it ------

#: The ``_meta`` key a toolwire gateway puts on an approval question, with the call it
#: is about (``{"tool": name, "arguments": {...}}``). Protocol 2026-07-28 carries no
#: ``_meta`` on a question returned in a result: the question's text says it too.
APPROVAL_META = "io.toolwire/approval"

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Run the tool call with the arguments shown",
        }
    },
    "required": ["approve"],
}

_QUESTION = re.compile(
    r"Allow the (?:mutating|destructive|read_only) tool `([^`\n]+)` to run with these "
    r"arguments\?\n(.*)",
    re.DOTALL,
)


def approval_question(effect: str, tool: str, arguments_json: str) -> str | None:
    """The approval question: every argument in full, as
    :func:`toolwire.adapters.review_arguments` shows them to a person; None when they are
    too long to show in full (the call is then not asked about)."""
    shown = review_arguments(arguments_json)
    if shown is None:
        return None
    name = terminal_text(tool, multiline=False)
    return f"Allow the {effect} tool `{name}` to run with these arguments?\n{shown}"


def approval_asked(message: Any, schema: Any, meta: Any) -> tuple[str, Any] | None:
    """``(tool, arguments)`` when a request is a toolwire gateway's approval question: from
    its ``_meta`` when there is one, else from its text (with the approval form)."""
    asked = meta.get(APPROVAL_META) if isinstance(meta, Mapping) else None
    if isinstance(asked, Mapping):
        tool = asked.get("tool")
        return (tool, asked.get("arguments")) if isinstance(tool, str) else None
    if schema != APPROVE_SCHEMA or not isinstance(message, str):
        return None
    match = _QUESTION.fullmatch(message)
    if match is None:
        return None
    try:
        return match.group(1), json.loads(match.group(2))
    except ValueError:
        return None


@attrs.frozen
class ElicitationRequest:
    """One question from a server: ``message`` to show; in form mode the answer's JSON
    ``schema`` (a flat object of strings, numbers, booleans and enums), in URL mode the
    ``url`` to open (the answer is only consent)."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: Mapping[str, Any] = attrs.field(factory=dict)
    url: str | None = None

    def defaults(self) -> dict[str, Any]:
        """The schema's default values, by field (SEP-1034): what a form starts with."""
        props = self.schema.get("properties") if isinstance(self.schema, Mapping) else None
        if not isinstance(props, Mapping):
            return {}
        return {
            name: spec["default"]
            for name, spec in props.items()
            if isinstance(spec, Mapping) and "default" in spec
        }


ElicitationAnswer = Union[Mapping[str, Any], bool, None]
"""A form's content (accepted; omitted fields take their defaults), True (accepted with
the defaults, or consent in URL mode), False or None (declined)."""

ElicitationHandler = Callable[
    [ElicitationRequest], Union[ElicitationAnswer, Awaitable[ElicitationAnswer]]
]
"""``handler(request)``: sync or async; raising cancels the request."""

_HANDLER: Slot[ElicitationHandler] = Slot("elicitation handler")


def set_elicitation_handler(handler: ElicitationHandler | None) -> None:
    """Answer every MCP server's elicitation with ``handler`` (None: decline them all)."""
    _HANDLER.set(handler)


def elicitation_handler() -> ElicitationHandler | None:
    """The handler in force (None: every request is declined)."""
    return _HANDLER.get()


async def answer(request: ElicitationRequest) -> tuple[str, dict[str, Any] | None]:
    """``(action, content)`` for the SDK: ``accept``, ``decline`` or ``cancel``."""
    handler = _HANDLER.get()
    if handler is None:
        logger.info("MCP server `%s` asked for input; no handler is set: declined", request.server)
        return "decline", None
    try:
        out: Any = handler(request)  # outside input: checked below
        if inspect.isawaitable(out):
            out = await out
    except Exception as exc:
        logger.warning(
            "the elicitation handler failed on a request from `%s`: %r", request.server, exc
        )
        return "cancel", None
    if out is None or out is False:
        return "decline", None
    if request.mode == "url":
        return ("accept", None) if out is True else ("decline", None)
    content = request.defaults()
    if isinstance(out, Mapping):
        content.update(out)
    elif out is not True:
        logger.warning(
            "the elicitation handler returned %s; expected a mapping, True, False or None: "
            "declined",
            type(out).__name__,
        )
        return "decline", None
    props = request.schema.get("properties")
    if isinstance(props, Mapping):
        content = {k: v for k, v in content.items() if k in props}
    return "accept", content
