"""The process's connections: one per server, shared (``connection_for``); blocks that
serve them from the caller's event loop (``connected()``); all of them closed at exit."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from toolwire.exceptions import UsageError
from toolwire_mcp._config import ServerSpec
from toolwire_mcp.client._connection import _EXITING, Connection
from toolwire_mcp.client._loop import LOOP

__all__ = ["BEFORE_CLOSE", "close_all", "connected", "connection_for"]

logger = logging.getLogger("toolwire.mcp")

_CONNECTIONS: dict[tuple[Any, ...], Connection] = {}

_REGISTRY_LOCK = threading.Lock()


def connection_for(spec: ServerSpec) -> Connection:
    """The process's connection to ``spec``'s server (one per server, shared)."""
    key = spec.identity()
    with _REGISTRY_LOCK:
        conn = _CONNECTIONS.get(key)
        if conn is None:
            conn = _CONNECTIONS[key] = Connection(spec)
        return conn


def close_all() -> None:
    """Close every connection (registered with atexit: no stdio server outlives us)."""
    with _REGISTRY_LOCK:
        conns = list(_CONNECTIONS.values())
    for conn in conns:
        conn.close()


@contextlib.asynccontextmanager
async def connected(*servers: str) -> AsyncIterator[None]:
    """Serve MCP servers from the running event loop for the block, as the SDK's own
    ``async with Client(...)`` does: a call made on this loop goes straight to the
    connection, with no hop to the loop thread (the hop costs about 0.1 ms per call).

    ``servers`` names the servers (``mcp_toolset`` names, config keys); by default, every
    server this process has a connection to. Each one's connection on the loop thread is
    closed on entry (one connection per server), the server is connected here on first
    use, and the block's end closes it; later calls go back to the loop thread. Calls
    from other threads or loops during the block hop to this loop, so it must keep
    running; a blocking call made on this loop's own thread (``list_tools_sync``, a sync
    ``Executor.execute``) is served by the loop thread instead. Blocks nest on one loop;
    a server cannot be held by two loops' blocks at once (UsageError).
    """
    loop = asyncio.get_running_loop()
    with _REGISTRY_LOCK:
        known = list(_CONNECTIONS.values())
    if servers:
        names = {conn.spec.name for conn in known}
        missing = [s for s in servers if s not in names]
        if missing:
            raise UsageError(
                f"connected(): no MCP server named {', '.join(map(repr, missing))}; "
                f"known: {', '.join(sorted(names)) or 'none'}"
            )
        known = [conn for conn in known if conn.spec.name in servers]
    bound: list[Connection] = []
    try:
        with _REGISTRY_LOCK:  # two loops entering blocks at once: one holds each server
            for conn in known:
                held = conn._local
                if held is not None:
                    if held._home is loop:
                        continue  # an enclosing block on this loop holds it, and closes it
                    raise UsageError(
                        f"MCP server `{conn.spec.name}` is held by a connected() block on "
                        f"another event loop"
                    )
                local = Connection(conn.spec)
                local._home = loop
                local._listeners = conn._listeners  # list_changed reaches the same toolsets
                local.task_tools = conn.task_tools  # the listing says which run as tasks
                local.refresh_on_connect = conn.refresh_on_connect
                conn._local = local
                bound.append(conn)
        for conn in bound:
            if conn.is_open:
                await asyncio.wrap_future(LOOP.submit(conn._stop()))
        yield
    finally:
        for conn in bound:
            mine, conn._local = conn._local, None
            if mine is not None:
                mine._retired = True
                await mine._stop()
                if mine._clock is not None:
                    mine._clock.close()


#: Called at exit, after no connection may open and before the open ones close: work
#: that needs them for a moment more (a toolset's refresh of its cached tool list).
BEFORE_CLOSE: list[Callable[[], None]] = []


def _at_exit() -> None:
    _EXITING[0] = True
    for finish in BEFORE_CLOSE:
        try:
            finish()
        except Exception:  # exit goes on: the connections must close
            logger.debug("an exit step failed", exc_info=True)
    close_all()


atexit.register(_at_exit)
