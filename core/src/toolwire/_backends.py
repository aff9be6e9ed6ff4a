"""Executor backends: where the body of a tool runs.

Everything that decides a call (policies, hooks, validation, approval, output
validation, result hooks, commit) stays in the executor, in the driver process.
A backend only runs the body: the executor hands it a :class:`BackendCall` (the
function, its keyword arguments, the timeout) and awaits the output. Without a
backend the body runs in-process (inline on the event loop, or in a thread for
``blocking=True`` tools).

A backend is chosen per executor (``Executor(backend=...)``: an instance or a
registered name), per process (``TOOLWIRE_BACKEND=NAME``) or on the command line
(``toolwire chat --backend NAME``). Backends are plugins: a distribution registers
one with the ``toolwire_register_backends`` hook under the ``toolwire.backends``
entry-point group (toolwire-ray registers ``ray``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from toolwire._exports import publish
from toolwire._tools import Tool

__all__ = ["BACKEND_ENV", "BackendCall", "ToolBackend"]

BACKEND_ENV = "TOOLWIRE_BACKEND"
"""The environment variable naming the process's default backend (empty: in-process)."""


@attrs.frozen
class BackendCall:
    """One attempt of a tool's body, as a backend runs it.

    ``fn(**kwargs)`` is the body (its result awaited when ``is_async``); ``kwargs``
    hold the validated input and the injected values. ``timeout`` (seconds, or None)
    bounds the attempt: past it the backend stops the body and raises
    :class:`~toolwire.exceptions.ToolTimeoutError`. ``options`` are the tool's
    options for this backend (``ToolMetadata.backend_options[name]``).
    """

    tool: Tool[Any, Any]
    fn: Callable[..., Any]
    kwargs: Mapping[str, Any]
    is_async: bool
    timeout: float | None
    call_id: str
    options: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        return self.tool.name


class ToolBackend(abc.ABC):
    """Runs tool bodies somewhere else than the executor's process.

    Subclasses set ``name`` and implement :meth:`run`. :meth:`accepts` says which
    tools it runs (by default every tool not marked ``local=True``: cheap tools stay
    in-process, so a round of many small calls does not pay a remote hop each).

    :meth:`run` returns the body's output. It raises the tool's own exception when
    the body raised (the executor reports it and retries it as for an in-process
    tool), :class:`~toolwire.exceptions.ToolTimeoutError` past the timeout, and
    :class:`~toolwire.exceptions.ToolBackendError` when the backend could not run
    the body (a dead worker, an input that cannot be sent). It must never run a body
    twice on its own: retries are the executor's, for idempotent tools only.
    """

    name: ClassVar[str] = ""

    def accepts(self, tool: Tool[Any, Any]) -> bool:
        """Whether this backend runs ``tool`` (False: it runs in-process)."""
        return not tool.metadata.local

    @abc.abstractmethod
    async def run(self, call: BackendCall) -> Any:
        """Run one attempt of the body and return its output."""

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release what the backend holds (an executor closes a backend it resolved by
        name only if it is not shared)."""


publish(globals())
