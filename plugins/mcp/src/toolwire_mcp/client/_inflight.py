"""A tool call in flight on a connection, and the clock that holds calls to their deadlines.

Each call has two: the idle deadline (``timeout`` seconds without a word from the
server; every progress notification and task status moves it on) and the overall limit
(``max_call_time``), which nothing moves. One loop timer per connection serves every
call in flight: armed for the earliest deadline when a new call's is earlier, left
alone when a call ends or its deadline moves on (firing early, it cuts only what is due
and re-arms for the earliest left). Back-to-back calls arm it once per ``timeout``, not
once per call, and a call costs no cancel scope: the clock cancels a late call's task,
the call withdraws that cancellation (``Task.uncancel``) and says which deadline passed.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from toolwire_mcp.client._errors import MCPCallError
from toolwire_mcp.client._progress import ProgressEvent, report
from toolwire_mcp.client._tasks import CANCEL_WAIT

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Relay = Callable[[float, float | None, str | None], Awaitable[None]]

__all__ = ["RECUT", "Call", "IdleClock"]

#: Seconds after which a late call that has not ended is cancelled again (the SDK may
#: have taken the first cancellation for its own): past the wait a cut call's courtesy
#: cancellation of its server's task has (shielded from the first cut, not from this).
RECUT = CANCEL_WAIT + 1.0


class Call:
    """One tool call in flight: the task it runs in, its deadlines (loop time), whether
    the clock cut it and how often. It is the call's task watch too (``alive``,
    ``progress``: see toolwire_mcp.client._tasks)."""

    __slots__ = ("at", "conn", "cuts", "end", "heard", "loop", "name", "relay", "started", "task")

    def __init__(self, conn: Any, name: str, relay: Relay | None) -> None:
        self.conn = conn
        self.name = name
        self.relay = relay
        task = asyncio.current_task()
        if task is None:  # a loop's callback, not a task: nothing to cut at a deadline
            raise RuntimeError("an MCP call runs in an asyncio task")
        self.task = task
        self.loop = task.get_loop()
        spec = conn.spec
        self.started = self.heard = now = self.loop.time()
        self.end = now + spec.max_call_time
        self.at = min(now + spec.timeout, self.end)
        self.cuts = 0

    def alive(self) -> None:
        """The server said something about this call: the idle deadline moves on."""
        self.heard = now = self.loop.time()
        self.conn._last_used = time.monotonic()
        self.at = min(now + self.conn.spec.timeout, self.end)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.alive()
        event = ProgressEvent(self.conn.spec.name, self.name, progress, total, message)
        await report(event, self.relay)

    def progress(self, n: float, said: str) -> Awaitable[None]:
        return self.on_progress(n, None, said)

    def cut(self, now: float) -> None:
        """A deadline passed: cancel the call's task (and again ``RECUT`` later, if it is
        still in flight then)."""
        self.cuts += 1
        self.at = now + RECUT
        self.task.cancel()

    def withdraw(self) -> int:
        """Withdraw the clock's cancellations of this call's task; what is left is
        somebody else's (0: nobody else cancelled it)."""
        left = 0
        for _ in range(self.cuts):
            left = self.task.uncancel()
        return left

    def late(self) -> MCPCallError:
        """What the call's caller is told when a deadline cut it."""
        spec = self.conn.spec
        server, name = spec.name, self.name
        if self.loop.time() >= self.end:
            return MCPCallError(
                f"MCP server `{server}` did not finish the call to `{name}` within "
                f"{spec.max_call_time:g} s (max_call_time)"
            )
        return MCPCallError(
            f"MCP server `{server}` did not answer the call to `{name}` within "
            f"{spec.timeout:g} s" + (" of its last progress" if self.heard > self.started else "")
        )


class IdleClock:
    """The deadlines of one connection's calls in flight, on one event loop, under one
    loop timer (see the module docstring)."""

    __slots__ = ("calls", "handle", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: set[Call] = set()
        self.handle: asyncio.TimerHandle | None = None

    def add(self, call: Call) -> None:
        self.calls.add(call)
        if self.handle is None or call.at < self.handle.when():
            self._arm(call.at)

    def remove(self, call: Call) -> None:
        self.calls.discard(call)

    def close(self) -> None:
        """The connection is over (a ``connected()`` block ended): with no call left in
        flight, its timer goes, so nothing of it stays on the block's loop."""
        if not self.calls and self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _arm(self, at: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.handle = self.loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self.handle = None
        now = self.loop.time()
        for call in [call for call in self.calls if call.at <= now]:
            call.cut(now)
        if self.calls:  # the next deadline (the loop may run a timer a hair early)
            self._arm(min(call.at for call in self.calls))
