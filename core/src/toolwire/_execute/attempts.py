"""One attempt at running a tool: which failures are transient, retry-after, the
timeout that cannot be outlasted by a tool swallowing cancellation.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolwire._errors import (
    ProviderError,
    ToolTimeoutError,
)
from toolwire._exports import publish
from toolwire._sync import at_settle, in_a_task

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
    """One timed attempt: the task running it, when it must end, and whether it was cut."""

    __slots__ = ("at", "done", "fired", "task")

    def __init__(self, task: asyncio.Task[Any] | None, at: float) -> None:
        self.task = task
        self.at = at
        self.fired = False
        self.done = False

    def expire(self) -> None:
        """The deadline passed: cut the attempt."""
        self.fired = True
        if self.task is not None:
            _cut(self.task)

    def clear(self) -> None:
        self.task = None


# A job's first attempt under a batch's shared deadline (``_Job.timing``): not shared, under
# way (or about to start), over (ended in time, or failed), cut by the deadline.
_UNSHARED, _SHARED, _OVER, _CUT = 0, 1, 2, 3


class _Shared(_Deadline):
    """One deadline for the first attempts of a batch of calls with the same timeout,
    started together (the executor's parallel batch): one heap entry and one clock read
    per batch instead of per call. ``members`` are (holder, task) pairs; a holder's
    ``timing`` says whether its first attempt is still under this deadline (``_SHARED``);
    expiry cuts those (``_CUT``) and cancels their tasks."""

    __slots__ = ("members",)

    def __init__(self, at: float) -> None:
        super().__init__(None, at)
        self.members: list[tuple[Any, asyncio.Task[Any]]] = []

    def expire(self) -> None:
        self.fired = True
        for holder, task in self.members:
            if holder.timing == _SHARED:
                holder.timing = _CUT
                _cut(task)
        self.members = []

    def clear(self) -> None:
        self.members = []


class _Deadlines:
    """Every timed attempt on one event loop under one loop timer, armed for the earliest
    deadline (a batch of calls with the same timeout arms it once, not once per call).

    Finished attempts leave the heap lazily: from the top as they end, and in a sweep when
    stale entries outnumber the live ones. The timer stays armed when the heap empties
    (the next batch's deadlines are later: it needs no new timer); firing with nothing
    due, it does nothing. It holds no reference to the loop (the loop keys it weakly).
    """

    __slots__ = ("armed_at", "handle", "heap", "live")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, _Deadline]] = []
        # Weakly: a handle refers to its loop, and the loop must not outlive its users
        # through this map's values (the loop's own schedule keeps the handle alive).
        self.handle: weakref.ref[asyncio.TimerHandle] | None = None
        self.armed_at = math.inf
        self.live = 0

    def add(self, loop: asyncio.AbstractEventLoop, entry: _Deadline) -> None:
        heapq.heappush(self.heap, (entry.at, next(_ORDER), entry))
        self.live += 1
        if entry.at < self.armed_at:
            self._arm(loop, entry.at)

    def end(self, entry: _Deadline) -> None:
        if entry.done:
            return
        entry.done = True
        entry.clear()  # a finished entry left in the heap holds nothing (nor the loop)
        self.live -= 1
        heap = self.heap
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        if len(heap) > 2 * self.live + 64:
            heap[:] = [item for item in heap if not item[2].done]
            heapq.heapify(heap)

    def _arm(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        armed = self.handle() if self.handle is not None else None
        if armed is not None:
            armed.cancel()
        self.armed_at = at
        self.handle = weakref.ref(loop.call_at(at, self._fire, loop))

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self.handle = None
        self.armed_at = math.inf
        now = loop.time()
        heap = self.heap
        while heap and (heap[0][2].done or heap[0][0] <= now):
            _, _, entry = heapq.heappop(heap)
            if not entry.done:
                entry.done = True
                self.live -= 1
                entry.expire()
        if heap:  # the next deadline (the loop may run a timer a hair early: re-armed)
            self._arm(loop, heap[0][0])


_ORDER = itertools.count()
_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Deadlines] = (
    weakref.WeakKeyDictionary()
)


def _disarm_idle(loop: asyncio.AbstractEventLoop) -> None:
    """A pooled loop's run ended (toolwire._sync): with no deadline left, its clock's
    timer goes (the next run on it need not poll, and nothing of this run fires then)."""
    clock = _CLOCKS.get(loop)
    if clock is None or clock.live:
        return
    armed = clock.handle() if clock.handle is not None else None
    if armed is not None:
        armed.cancel()
    clock.handle = None
    clock.armed_at = math.inf
    clock.heap.clear()  # every entry in it is done


at_settle(_disarm_idle)


_LAST = threading.local()  # this thread's last loop (weakly) and its deadlines


def _deadlines(loop: asyncio.AbstractEventLoop) -> _Deadlines:
    last = getattr(_LAST, "pair", None)
    if last is not None and last[0]() is loop:
        return last[1]  # type: ignore[no-any-return]
    clock = _CLOCKS.get(loop)
    if clock is None:
        clock = _CLOCKS[loop] = _Deadlines()
    _LAST.pair = (weakref.ref(loop), clock)
    return clock


#: Seconds a cut attempt has to end after its cancellation before the executor stops
#: waiting for it (a tool that swallows its cancellation keeps running, unwaited).
ABANDON_GRACE = 0.1

#: An attempt's task -> what to call (with the task) when its deadline cut it: the
#: executor's batch, which checks ABANDON_GRACE later whether that attempt has ended (a
#: retry that follows it is no stuck tool). The executor registers the tasks it runs calls
#: in, and removes each when it ends.
_ON_STUCK: dict[asyncio.Task[Any], Callable[[asyncio.Task[Any]], None]] = {}


def _cut(task: asyncio.Task[Any]) -> None:
    task.cancel()
    cut = _ON_STUCK.get(task)
    if cut is not None:
        cut(task)


async def _with_timeout(aw: Awaitable[Any], seconds: float) -> Any:
    """Await ``aw``, cancelling it after ``seconds``; expiry raises _ToolTimeout.

    The deadline joins the loop's shared timer (see _Deadlines): cheaper than a timer
    per attempt or ``asyncio.timeout``, which the executor would pay on every call. A
    cancellation from outside still propagates as CancelledError.
    """
    await in_a_task()  # a call a bridge steps inline: its deadline needs its task
    task = _current_task()
    loop = task.get_loop()
    clock = _deadlines(loop)
    deadline = _Deadline(task, loop.time() + seconds)
    clock.add(loop, deadline)
    try:
        out = await aw
    except asyncio.CancelledError:
        _raise_if_cut(deadline.fired, seconds)
        raise
    finally:
        clock.end(deadline)
    _refuse_if_cut(deadline.fired, seconds)
    return out


def _raise_if_cut(cut: bool, seconds: float) -> None:
    """In the handler of an attempt's CancelledError (in the attempt's task): a timeout if
    its deadline cut it and nobody else cancelled too; else the caller re-raises."""
    if cut and _uncancel(_current_task()):
        raise _ToolTimeout(seconds) from None


def _refuse_if_cut(cut: bool, seconds: float) -> None:
    """After an attempt answered (in its task): a tool that swallowed its deadline's
    cancellation and answered late still timed out (its late output is dropped)."""
    if cut:
        _uncancel(_current_task())
        raise _ToolTimeout(seconds)


def _current_task() -> asyncio.Task[Any]:
    task = asyncio.current_task()
    assert task is not None
    return task


def _uncancel(task: asyncio.Task[Any]) -> bool:
    """Withdraw the deadline's cancel; True unless someone else cancelled too."""
    return task.uncancel() == 0


publish(globals())
