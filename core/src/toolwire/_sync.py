"""Running a coroutine to its end from sync code, on an event loop kept for the next run.

``asyncio.run`` makes an event loop for each call and closes it after (a selector, a
self-pipe and their file descriptors, and a wait for the default executor's threads),
which costs more than a policy's decision does; more again in a thread that had none,
and some frameworks run each tool call in a new thread. A sync path that runs one call at
a time (a framework calling its tools synchronously) takes a loop from a small pool
instead and gives it back: a loop belongs to no thread while it is not running, so the
thread that takes it next runs it. Each run ends as ``asyncio.run`` ends one: tasks it
left behind are cancelled and waited for, so nothing of one call runs during the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["give_loop", "pooled_loop", "run_on_pooled_loop", "take_loop"]

_T = TypeVar("_T")

#: Loops kept for the next run: as many as calls run at once from sync code, at most.
MAX_IDLE = 8

_idle: list[asyncio.AbstractEventLoop] = []
_lock = threading.Lock()


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
        return loop.run_until_complete(coro)


def _settle(loop: asyncio.AbstractEventLoop) -> bool:
    """Cancel and wait for what the runs left behind; True when the loop can be used again."""
    try:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if left:
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        return not loop.is_closed() and not loop.is_running()
    except BaseException:
        return False
