"""One attempt at running a tool: which failures are transient, retry-after, the
timeout that cannot be outlasted by a tool swallowing cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from toolwire._errors import (
    ProviderError,
    ToolTimeoutError,
)
from toolwire._exports import publish

if TYPE_CHECKING:
    pass


_TRANSIENT_STATUS = frozenset({408, 425, 429})


def is_transient(exc: BaseException) -> bool:
    """The default retry classifier: is this failure worth another attempt?

    The rule, in order:

    1. a ``transient`` flag set on the exception object itself decides (an adapter marks
       a permanent quota error so);
    2. a ProviderError with an HTTP ``status`` is decided by the status, not its class:
       408, 425, 429 and every 5xx are transient, every other status is not
       (``ProviderError(status=503)`` is retried, ``ServerError(status=400)`` is not);
    3. otherwise the class's ``transient`` attribute decides (rate limit, overload,
       server error, connection, timeout: yes; a total deadline passed: no);
    4. any other TimeoutError or ConnectionError is transient; everything else is not.
    """
    if isinstance(exc, _NotRetryable):
        return False
    own = getattr(exc, "__dict__", {}).get("transient")
    if isinstance(own, bool):
        return own
    status = getattr(exc, "status", None) if isinstance(exc, ProviderError) else None
    if isinstance(status, int) and not isinstance(status, bool):
        return status in _TRANSIENT_STATUS or 500 <= status <= 599
    flag = getattr(exc, "transient", None)
    if isinstance(flag, bool):
        return flag
    if isinstance(exc, ProviderError):
        return False
    return isinstance(exc, (TimeoutError, ConnectionError))


def _retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


class _NotRetryable(Exception):
    """Failures the executor itself detects inside an attempt: never retried."""

    kind = "error"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class _OutputMismatch(_NotRetryable):
    kind = "invalid_output"


class _ApprovalMismatch(_NotRetryable):
    kind = "approval_mismatch"


class _ToolTimeout(ToolTimeoutError):
    """An attempt ran past its timeout (raised by the executor, not the tool)."""


class _Deadline:
    """The timer of one timed attempt: on expiry it cancels the task running the attempt."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def __call__(self) -> None:
        self.fired = True
        self.task.cancel()


async def _with_timeout(aw: Awaitable[Any], seconds: float) -> Any:
    """Await ``aw``, cancelling it after ``seconds``; expiry raises _ToolTimeout.

    One loop timer per attempt (cheaper than ``asyncio.timeout``, which the
    executor would otherwise pay on every call). A cancellation from outside
    still propagates as CancelledError.
    """
    task = asyncio.current_task()
    assert task is not None
    deadline = _Deadline(task)
    handle = asyncio.get_running_loop().call_later(seconds, deadline)
    try:
        out = await aw
    except asyncio.CancelledError:
        if deadline.fired and _uncancel(task):
            raise _ToolTimeout(seconds) from None
        raise
    finally:
        handle.cancel()
    if deadline.fired:
        # The tool swallowed the cancellation and answered late: it is still a timeout,
        # and its late output is dropped.
        _uncancel(task)
        raise _ToolTimeout(seconds)
    return out


def _uncancel(task: asyncio.Task[Any]) -> bool:
    """Withdraw the deadline's cancel; True unless someone else cancelled too."""
    return task.uncancel() == 0


publish(globals())
