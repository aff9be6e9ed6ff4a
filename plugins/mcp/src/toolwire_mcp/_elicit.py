"""Answering a server's elicitation (``elicitation/create``): what the application says.

An MCP server may ask the client's user for input in the middle of a call (a form, or a
URL to open), as toolwire's own gateway asks for approval. The application answers
through one handler, :func:`set_elicitation_handler`; with none (the default, and what
a non-interactive run should keep) every request is declined, so nothing is given to a
server that nobody was asked about.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Union

import attrs

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "elicitation_handler",
    "set_elicitation_handler",
]

logger = logging.getLogger("toolwire.mcp")


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

_LOCK = threading.Lock()
_HANDLER: list[ElicitationHandler | None] = [None]


def set_elicitation_handler(handler: ElicitationHandler | None) -> None:
    """Answer every MCP server's elicitation with ``handler`` (None: decline them all)."""
    if handler is not None and not callable(handler):
        raise TypeError(f"the elicitation handler must be callable, got {type(handler).__name__}")
    with _LOCK:
        _HANDLER[0] = handler


def elicitation_handler() -> ElicitationHandler | None:
    """The handler in force (None: every request is declined)."""
    return _HANDLER[0]


async def answer(request: ElicitationRequest) -> tuple[str, dict[str, Any] | None]:
    """``(action, content)`` for the SDK: ``accept``, ``decline`` or ``cancel``."""
    handler = _HANDLER[0]
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
