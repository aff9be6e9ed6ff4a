"""The loop thread: one background event loop that holds every connection opened outside
a ``connected()`` block, and a callable's calls sent back to the loop it was made on."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LOOP", "LinkOnLoop", "LoopThread", "on_this_loop"]

_T = TypeVar("_T")


class LoopThread:
    """A background event loop on a daemon thread, started on first use (and again if it
    was closed); ``submit`` runs a coroutine there from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="toolwire-mcp", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop())

    def running(self) -> asyncio.AbstractEventLoop | None:
        return self._loop


LOOP = LoopThread()


_F = TypeVar("_F", bound=Callable[..., Any])


def on_this_loop(fn: _F | None) -> _F | None:
    """``fn``, run on the current loop whichever loop awaits it."""
    if fn is None:
        return None
    home = asyncio.get_running_loop()

    async def hop(*args: Any) -> Any:
        if asyncio.get_running_loop() is home:
            return await fn(*args)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(*args), home))

    return hop  # type: ignore[return-value]


class LinkOnLoop:
    """A gateway's link to its client (``ask``, ``sample``, ``plugins``), its methods run
    on the loop it was made on whichever loop calls them."""

    def __init__(self, link: Any) -> None:
        self._link = link
        self.plugins = getattr(link, "plugins", None)
        self.ask = on_this_loop(link.ask)
        self.sample = on_this_loop(link.sample)
