"""A server's progress on a call: to the application, and through a gateway.

Every call asks for progress (a progress token). Each notification resets the call's
idle deadline (a long job that reports progress is not killed at ``timeout``; the call
is still bounded by ``max_call_time``), goes to the application's handler
(:func:`set_progress_handler`; the CLI prints it) and, when a toolwire gateway is
serving the call, on to the gateway's own client as progress of its call.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Union

import attrs

from toolwire_mcp.client._slot import Slot

__all__ = ["ProgressEvent", "progress_handler", "set_progress_handler"]

logger = logging.getLogger("toolwire.mcp")


@attrs.frozen
class ProgressEvent:
    """One progress notification: ``progress`` of ``total`` (None: unknown), with the
    server's ``message``, for the call of ``tool`` on ``server``."""

    server: str
    tool: str
    progress: float
    total: float | None = None
    message: str | None = None


ProgressHandler = Callable[[ProgressEvent], Union[Awaitable[None], None]]
"""``handler(event)``: sync or async; what it raises is logged, never the call's failure."""

_HANDLER: Slot[ProgressHandler] = Slot("progress handler")

#: Where a gateway serving the current call passes an upstream server's progress on.
CALL_PROGRESS: contextvars.ContextVar[
    Callable[[float, float | None, str | None], Awaitable[None]] | None
] = contextvars.ContextVar("toolwire_mcp_call_progress", default=None)

#: How a gateway serving the current call asks its own client what an upstream server
#: asks: a link with ``ask(message, schema) -> (action, content)`` (elicitation),
#: ``sample(params) -> CreateMessageResult`` (sampling) and the gateway's ``plugins``.
CALL_ASKER: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "toolwire_mcp_call_asker", default=None
)

_MAX_MESSAGE = 1000


def set_progress_handler(handler: ProgressHandler | None) -> None:
    """Tell ``handler`` of every MCP server's progress on a call (None: tell nobody)."""
    _HANDLER.set(handler)


def progress_handler() -> ProgressHandler | None:
    return _HANDLER.get()


async def report(
    event: ProgressEvent,
    relay: Callable[[float, float | None, str | None], Awaitable[None]] | None,
) -> None:
    """``event`` to the application's handler and to the gateway's client (``relay``)."""
    if event.message is not None and len(event.message) > _MAX_MESSAGE:
        event = attrs.evolve(event, message=event.message[:_MAX_MESSAGE])
    handler = _HANDLER.get()
    if handler is not None:
        try:
            out: Any = handler(event)
            if inspect.isawaitable(out):
                await out
        except Exception as exc:
            logger.warning("the progress handler failed: %r", exc)
    if relay is not None:
        try:
            await relay(event.progress, event.total, event.message)
        except Exception as exc:  # the gateway's client is gone: not the call's failure
            logger.debug("progress not passed on: %r", exc)
