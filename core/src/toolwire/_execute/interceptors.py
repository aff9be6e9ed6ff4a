"""Interceptors: the request they see, the protocol, the built-in logging, rate-limit and
timeout interceptors, and the check that an interceptor has the right shape.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import types
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs

from toolwire._calls import (
    ToolResult,
    TypedCall,
)
from toolwire._errors import (
    UsageError,
)
from toolwire._execute.attempts import _with_timeout
from toolwire._exports import publish
from toolwire._hooks import HookContext
from toolwire._metadata import ToolMetadata
from toolwire._tools import Tool

if TYPE_CHECKING:
    pass


@attrs.frozen
class ToolRequest:
    """What an interceptor receives for one attempt at running a call.

    - ``call``: the TypedCall about to run (``call.input`` is the validated,
      possibly hook-edited or approver-modified input; ``call.call`` the raw
      model call, whose id and argument text the result keeps);
    - ``attempt``: 1 for the first attempt, 2 for the first retry, ...;
    - ``context``: the round's HookContext (app, session, provider, user
      mapping), or None for a bare ``execute``;
    - ``approved``: the fingerprint an approver approved, or None when no
      approval applied. If the input run differs from it, the tool is not run.

    ``tool``, ``input``, ``name``, ``id`` and ``metadata`` are shortcuts;
    ``with_input(value)`` gives a request with another input.
    """

    call: TypedCall[Any]
    attempt: int = 1
    context: HookContext | None = None
    approved: str | None = None

    @property
    def tool(self) -> Tool[Any, Any]:
        return self.call.tool

    @property
    def input(self) -> Any:
        return self.call.input

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def metadata(self) -> ToolMetadata:
        return self.call.tool.metadata

    def with_input(self, value: Any) -> ToolRequest:
        return attrs.evolve(self, call=self.call.with_input(value))


Next = Callable[[ToolRequest], Awaitable[ToolResult]]


class Interceptor(Protocol):
    """Wraps every attempt at running a tool: ``result = await next(request)``.

    An interceptor may look at or edit the request (``request.with_input``),
    return its own ToolResult without calling ``next``, call ``next`` more than
    once, or let the tool's exception propagate (the executor turns it into an
    error result, or retries it). A plain function ``f(request, next)``
    (sync or async) works too; the first interceptor given is the outermost.
    """

    def __call__(
        self, request: ToolRequest, next: Next, /
    ) -> Awaitable[ToolResult] | ToolResult: ...


def _link(icpt: Callable[..., Any], inner: Next) -> Next:
    """``icpt`` around ``inner``: one link of an executor's interceptor chain."""

    async def run(request: ToolRequest) -> ToolResult:
        out = icpt(request, inner)
        if hasattr(out, "__await__"):
            out = await out
        if not isinstance(out, ToolResult):
            raise UsageError(
                f"interceptor {icpt!r} returned {type(out).__name__}; expected a ToolResult "
                f"(return `await next(request)` or your own result)"
            )
        return out

    return run


#: Interceptor functions found callable as ``f(request, next)`` (an executor made per
#: request, as the MCP gateway makes one, checks the same function each time).
_CHECKED: weakref.WeakSet[Any] = weakref.WeakSet()


def _checked_interceptor(icpt: Any, position: int) -> Interceptor:
    """``icpt`` if it can be called as ``icpt(request, next)``; a UsageError otherwise.

    Checked when the executor is built, so a misconfigured interceptor fails the
    application's set-up instead of every tool call (where the model would see it).
    """
    if type(icpt) is types.FunctionType and icpt in _CHECKED:
        return cast(Interceptor, icpt)
    if not callable(icpt):
        raise UsageError(
            f"interceptors[{position}] must be callable as f(request, next), "
            f"got {type(icpt).__name__}"
        )
    try:
        signature = inspect.signature(icpt)
    except (TypeError, ValueError):  # no signature to read (some builtins): trust it
        return cast(Interceptor, icpt)
    try:
        signature.bind(None, None)
    except TypeError as exc:
        name = getattr(icpt, "__qualname__", type(icpt).__qualname__)
        raise UsageError(
            f"interceptors[{position}] ({name}) must take two positional arguments "
            f"(request, next), but its signature is {signature}: {exc}"
        ) from None
    if type(icpt) is types.FunctionType:
        _CHECKED.add(icpt)
    return cast(Interceptor, icpt)


class LoggingInterceptor:
    """Logs each attempt (tool, call id, attempt, duration, outcome) to ``toolwire.execute``."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logger or logging.getLogger("toolwire.execute")
        self.level = level
        self.clock = clock

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        log = self.logger
        if not log.isEnabledFor(self.level):
            return await next(request)
        start = self.clock()
        log.log(
            self.level,
            "tool=%s call=%s attempt=%d start",
            request.name,
            request.id,
            request.attempt,
        )
        try:
            result = await next(request)
        except Exception as exc:
            log.log(
                self.level,
                "tool=%s call=%s attempt=%d raised %s after %.1f ms",
                request.name,
                request.id,
                request.attempt,
                type(exc).__name__,
                (self.clock() - start) * 1000,
            )
            raise
        log.log(
            self.level,
            "tool=%s call=%s attempt=%d %s after %.1f ms",
            request.name,
            request.id,
            request.attempt,
            "error" if result.is_error else "ok",
            (self.clock() - start) * 1000,
        )
        return result


class RateLimitInterceptor:
    """A token bucket: ``rate`` calls per second with bursts of ``burst``.

    ``per_tool=True`` (the default) keeps one bucket per tool name, otherwise
    one for every tool. A call that finds the bucket empty waits (through the
    injectable ``sleep``) for its token rather than failing.
    """

    def __init__(
        self,
        rate: float,
        *,
        burst: int = 1,
        per_tool: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not rate > 0:
            raise UsageError(f"rate must be > 0 calls per second, got {rate!r}")
        if burst < 1:
            raise UsageError(f"burst must be >= 1, got {burst!r}")
        self.rate = float(rate)
        self.burst = burst
        self.per_tool = per_tool
        self.clock = clock
        self.sleep = sleep
        self._buckets: dict[str, list[float]] = {}

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        key = request.name if self.per_tool else ""
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = [float(self.burst), now]
        tokens = min(float(self.burst), bucket[0] + (now - bucket[1]) * self.rate) - 1.0
        bucket[0], bucket[1] = tokens, now
        if tokens < 0:
            # The token is reserved now (the balance goes negative), so concurrent
            # callers queue up in order instead of racing for the same refill.
            await self.sleep(-tokens / self.rate)
        return await next(request)


class TimeoutInterceptor:
    """A deadline around everything inside it (later interceptors, the tool), per attempt.

    The tool's own ``metadata.timeout`` is always applied by the executor;
    this adds a cap for every tool (e.g. a request-wide deadline).
    """

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise UsageError(f"timeout must be > 0 seconds, got {seconds!r}")
        self.seconds = float(seconds)

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        return cast("ToolResult", await _with_timeout(next(request), self.seconds))


publish(globals())
