"""Running a coroutine to its end from sync code, on an event loop kept for the next run.

``asyncio.run`` makes an event loop for each call and closes it after (a selector, a
self-pipe and their file descriptors, and a wait for the default executor's threads),
which costs more than a policy's decision does; more again in a thread that had none,
and some frameworks run each tool call in a new thread. A sync path that runs one call at
a time (a framework calling its tools synchronously) takes a loop from a small pool
instead and gives it back: a loop belongs to no thread while it is not running, so the
thread that takes it next runs it. Each run ends as ``asyncio.run`` ends one: tasks it
left behind are cancelled and waited for, and async generators it left open are closed,
so nothing of one call runs during the next.

A call that never waits for I/O or a timer (a policy deciding, a sync tool answering) is
run by :func:`run_until_stopped` without the loop's poll: the callbacks the loop has
ready are run in its order until it is stopped, and only a call that must wait is
handed to ``run_forever``. Each poll is a system call that lets go of the GIL, and in a
framework's fresh thread the thread that started it takes the GIL back each time.

A sync caller that hands its own work into the middle of a call (a bridge's framework
runs its tool between the decision and its end) may go further and step the call's
coroutine itself (:func:`step_inline`), in its own thread with the loop marked running
there, without a task: no task, no callback queued, no loop step, until the coroutine
waits for something (a future, a bare yield) or is about to run code that may ask for
its task (``await in_a_task()`` comes first there, tests/test_one_way.py checks it). It
is then carried on in a task of that loop (:func:`carry_on`), as if it had been one from
the start.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from typing import Any, TypeVar

__all__ = [
    "INTO_TASK",
    "Signal",
    "at_settle",
    "carry_on",
    "give_loop",
    "give_unused",
    "in_a_task",
    "needs_a_task",
    "pooled_loop",
    "run_on_pooled_loop",
    "run_until_stopped",
    "step_inline",
    "stop_when_done",
    "take_loop",
]

_T = TypeVar("_T")

#: Loops kept for the next run: as many as calls run at once from sync code, at most.
MAX_IDLE = 8

_idle: list[asyncio.AbstractEventLoop] = []
_lock = threading.Lock()

#: What else a run's end settles on its loop (``at_settle``): toolwire's deadline clock
#: disarms its timer when no deadline is left.
_SETTLERS: list[Callable[[asyncio.AbstractEventLoop], None]] = []


def at_settle(settle: Callable[[asyncio.AbstractEventLoop], None]) -> None:
    """Call ``settle(loop)`` at the end of every run on a pooled loop, once the run's
    tasks are cancelled and its async generators closed (a timer it no longer needs, to
    cancel: a pooled loop with a timer set must poll in every later run)."""
    _SETTLERS.append(settle)


def take_loop() -> asyncio.AbstractEventLoop:
    """An idle loop of the pool (a new one when none is idle), for the caller to run, and
    to hand back with :func:`give_loop`; no loop may be running in the caller's thread
    while it runs this one."""
    with _lock:
        loop = _idle.pop() if _idle else None
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
    return loop


def give_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Back to the pool, once what its runs left behind is cancelled and waited for (or
    closed, when the pool is full or the loop cannot be used again)."""
    _keep(loop, _settle(loop))


def give_unused(loop: asyncio.AbstractEventLoop) -> None:
    """:func:`give_loop` for a loop only marked running while coroutines were stepped
    inline (:func:`step_inline`, never run): with nothing queued on it (no callback, no
    timer, no async generator: a task made there would have queued its first step), it
    has nothing to settle, and goes back as it is."""
    if loop._ready or loop._scheduled or getattr(loop, "_asyncgens", None):  # type: ignore[attr-defined]
        give_loop(loop)
    else:
        _keep(loop, not loop.is_closed())


def _keep(loop: asyncio.AbstractEventLoop, reusable: bool) -> None:
    """Into the pool when it can be used again and the pool has room, else closed."""
    with _lock:
        keep = reusable and len(_idle) < MAX_IDLE
        if keep:
            _idle.append(loop)
    if not keep and not loop.is_running():
        loop.close()


@contextlib.contextmanager
def pooled_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """:func:`take_loop` for the block, :func:`give_loop` after it."""
    loop = take_loop()
    try:
        yield loop
    finally:
        give_loop(loop)


def run_on_pooled_loop(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to its end on a loop of the pool."""
    with pooled_loop() as loop:
        task = loop.create_task(coro)
        try:
            while not task.done():  # a stop from elsewhere (a tool's) does not end the run
                run_until_stopped(loop, task)
        except BaseException:
            if not task.done():
                task.cancel()  # give_loop waits for it to end
            raise
        return task.result()


def stop_when_done(task: asyncio.Future[Any]) -> None:
    """A run's end stops its loop, unless it ended in SystemExit or KeyboardInterrupt:
    that went up through the loop's run already, and a stop left queued would end the
    loop's next run at once (asyncio's ``run_until_complete`` skips it the same way)."""
    if not task.cancelled() and isinstance(task.exception(), (SystemExit, KeyboardInterrupt)):
        return
    task.get_loop().stop()


def run_until_stopped(
    loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any] | None = None
) -> None:
    """``loop.run_forever()`` until something calls ``loop.stop()`` or ``task`` (when
    given) is done, with what is ready run first without polling: only when nothing is
    ready and the run has not ended (it waits for I/O or a timer) does asyncio's own
    ``run_forever`` take over. For a loop of the pool, not running; any other loop
    (uvloop's, a loop in debug mode) runs as ``run_forever`` runs it."""
    try:
        if (
            type(loop) is asyncio.SelectorEventLoop
            and not loop.get_debug()
            and _run_ready(loop, task)
        ):
            return
    except BaseException:
        # What the task ended in (KeyboardInterrupt, SystemExit) goes up from here: it is
        # the caller's now, not a "never retrieved" task's.
        if task is not None and task.done() and not task.cancelled():
            task.exception()
        raise
    if task is None:
        loop.run_forever()
        return
    if task.done():
        return
    # The task's end stops the loop (a callback of its own, only on this path: what never
    # waits ends without it, one loop step fewer).
    task.add_done_callback(stop_when_done)
    try:
        loop.run_forever()
    finally:
        task.remove_done_callback(stop_when_done)


def _run_ready(loop: Any, task: asyncio.Future[Any] | None) -> bool:
    """Run ``loop``'s ready callbacks in its order, marked running in this thread as
    ``run_forever`` marks it, until it is stopped or ``task`` is done (True) or it has
    nothing ready or a timer is set (False: it must poll). A timer is left to the loop,
    which runs due ones between its rounds of callbacks."""
    ready = loop._ready
    hooks = _mark_running(loop)
    try:
        if task is None:
            while ready and not loop._stopping and not loop._scheduled:
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
        else:
            while ready and not loop._stopping and not loop._scheduled:
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
                if task.done():
                    # What was ready when it ended runs in this run, as it did before a
                    # done callback that stops the loop (queued after them) ran.
                    for _ in range(len(ready)):
                        if loop._stopping:
                            break
                        handle = ready.popleft()
                        if not handle._cancelled:
                            handle._run()
                    break
        ended: bool = loop._stopping or (task is not None and task.done())
        loop._stopping = False
        return ended
    finally:
        _unmark(loop, hooks)


def _mark_running(loop: Any) -> Any:
    """Mark ``loop`` running in this thread as ``run_forever`` marks it (the thread's
    running loop, its async generator hooks): what this thread's async generator hooks
    were, for :func:`_unmark`."""
    hooks = sys.get_asyncgen_hooks()
    loop._thread_id = threading.get_ident()
    asyncio.events._set_running_loop(loop)
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook, finalizer=loop._asyncgen_finalizer_hook
    )
    return hooks


def _unmark(loop: Any, hooks: Any) -> None:
    loop._thread_id = None
    asyncio.events._set_running_loop(None)
    sys.set_asyncgen_hooks(*hooks)


# -- coroutines stepped inline -------------------------------------------------------------


class Signal:
    """What a coroutine stepped inline yields to tell the one stepping it something
    (``await signal``); what that one sends back in is the await's value. A task never
    sees one: a coroutine awaits one only while :func:`needs_a_task`."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self)

    def __repr__(self) -> str:
        return f"<{self._what}>"


#: Awaited by :func:`in_a_task`: the coroutine goes on in a task.
INTO_TASK = Signal("into a task")


class _Nothing:
    __slots__ = ()

    def __await__(self) -> Generator[Any, Any, None]:
        return
        yield  # (a generator that ends at once)


_NOTHING = _Nothing()


def needs_a_task() -> bool:
    """True in a coroutine stepped inline (a loop marked running in this thread, no task
    running): :func:`in_a_task` goes on in a task then."""
    loop = asyncio.events._get_running_loop()
    return loop is not None and asyncio.current_task(loop) is None


def in_a_task() -> Awaitable[None]:
    """``await in_a_task()`` before code that may ask for its task (``asyncio.timeout``,
    ``asyncio.current_task``, an awaitable a plugin or a callback gave): a coroutine
    stepped inline goes on in a task of its loop from here; anywhere else, nothing (no
    coroutine made: it is on every timed attempt's path)."""
    return INTO_TASK if needs_a_task() else _NOTHING


def step_inline(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any],
    context: contextvars.Context,
    value: Any = None,
    error: BaseException | None = None,
) -> Any:
    """One step of ``coro`` in this thread: ``value`` sent into it (or ``error`` thrown),
    in ``context``, with ``loop`` marked running here (no loop may be running in this
    thread, nor ``loop`` anywhere). Returns what it yielded; raises StopIteration with
    its result when it ended, or what it raised."""
    hooks = _mark_running(loop)
    try:
        if error is None:
            return context.run(coro.send, value)
        return context.run(coro.throw, error)
    finally:
        _unmark(loop, hooks)


class carry_on(Coroutine[Any, Any, _T]):
    """The rest of a coroutine stepped inline, for a task to run (``loop.create_task(
    carry_on(coro, yielded), context=...)``): what it last yielded (a future it waits
    for, None for a bare yield) goes to the task first (:data:`INTO_TASK`: nothing, it
    goes on at once), and from then on every value and exception the task sends reaches
    ``coro``, a cancellation before the task's first step too (a generator would drop
    one thrown before it started)."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, _T], yielded: Any) -> None:
        self._coro = coro
        self._first: Any = _NOT_YET if yielded is INTO_TASK else yielded

    def send(self, value: Any) -> Any:
        first = self._first
        if first is not _SENT:
            self._first = _SENT
            if first is not _NOT_YET:
                return first  # for the task to wait on, as the coroutine did
        return self._coro.send(value)

    def throw(self, *exc: Any) -> Any:
        self._first = _SENT
        return self._coro.throw(*exc)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, Any, _T]:
        return self  # type: ignore[return-value]  # (its own steps: send, throw)

    def __next__(self) -> Any:
        return self.send(None)

    def __repr__(self) -> str:
        return f"<carry_on {self._coro!r}>"


_NOT_YET, _SENT = object(), object()


def _settle(loop: asyncio.AbstractEventLoop) -> bool:
    """Cancel and wait for what the runs left behind; True when the loop can be used again."""
    try:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if left:
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        gens = getattr(loop, "_asyncgens", None)
        if gens:  # async generators left open: closed as asyncio.run closes them
            open_gens = list(gens)
            gens.clear()
            loop.run_until_complete(_close_all(open_gens))
        for settle in _SETTLERS:
            settle(loop)
        timers = getattr(loop, "_scheduled", None)
        if timers and all(t.cancelled() for t in timers):
            # Only cancelled timers left: dropped now (the loop drops them in its own
            # time), so the next run need not poll.
            timers.clear()
            loop._timer_cancelled_count = 0  # type: ignore[attr-defined]
        return not loop.is_closed() and not loop.is_running()
    except BaseException:
        return False


async def _close_all(gens: list[Any]) -> None:
    await asyncio.gather(*[g.aclose() for g in gens], return_exceptions=True)
