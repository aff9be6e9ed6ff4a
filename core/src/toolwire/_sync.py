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
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = [
    "at_settle",
    "give_loop",
    "pooled_loop",
    "run_on_pooled_loop",
    "run_until_stopped",
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
    reusable = _settle(loop)
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
    hooks = sys.get_asyncgen_hooks()
    loop._thread_id = threading.get_ident()
    asyncio.events._set_running_loop(loop)
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook, finalizer=loop._asyncgen_finalizer_hook
    )
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
        loop._thread_id = None
        asyncio.events._set_running_loop(None)
        sys.set_asyncgen_hooks(*hooks)


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
