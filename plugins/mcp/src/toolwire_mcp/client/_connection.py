"""One connection per MCP server per process, on a background event loop.

The SDK's client is anyio-based: a connection's context must be entered and left in one
task. Each :class:`Connection` keeps its ``Client`` open in a task of its own on one
process-wide loop thread; tool calls from any thread or event loop are submitted to it
(``call`` for async callers, ``call_sync`` for the rest). So a connection outlives the
event loop of the code that first used it, and is reused by every toolset for the
same server.

Inside ``async with connected():`` the connections are opened on the block's own event
loop instead, as the SDK's ``Client`` is: calls from that loop go straight to the
connection with no hop between threads (calls from other threads hop to that loop), and
the block's end closes them. Outside such a block the loop thread serves them.

Lifecycle: connect on first use; a connection that dies (the server exits, the socket
drops) is dropped and opened again on the next use; ``close`` (and process exit) closes
it, which for a stdio server ends its process. Each wait has a deadline: start-up and
``initialize`` (``connect_timeout``), each ``tools/list`` page and each call (``timeout``).
A stdio server's stderr goes to the ``toolwire.mcp.<server>`` logger, a line at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import json
import logging
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client, MCPError
from mcp.client.subscriptions import ListenNotSupportedError, ResourceUpdated
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import ValidationError

from toolwire_mcp._config import ServerSpec
from toolwire_mcp.client._client_features import answer_sampling, offers_sampling, roots
from toolwire_mcp.client._elicit import ElicitationRequest, answer, approval_asked
from toolwire_mcp.client._errors import MCPCallError, MCPConnectError, _describe
from toolwire_mcp.client._inflight import Call, IdleClock
from toolwire_mcp.client._loop import LOOP, LinkOnLoop, on_this_loop
from toolwire_mcp.client._progress import CALL_ASKER, CALL_PROGRESS
from toolwire_mcp.client._stdio import MAX_STDERR_LINE
from toolwire_mcp.client._tasks import WATCH, TasksExtension, call_tool
from toolwire_mcp.client._transport import open_transport

__all__ = ["RESOURCE_LISTENERS", "Connection", "MCPCallError", "MCPConnectError"]

logger = logging.getLogger("toolwire.mcp")

_T = TypeVar("_T")
Relay = Callable[[float, float | None, str | None], Awaitable[None]]
#: A gateway's link to the client whose call it is: ``ask(message, schema)``,
#: ``sample(params)`` and its ``plugins`` (see _server._ClientLink).
Asker = Any
_MAX_PAGES = 200  # tools/list pages; a server that pages forever is a broken server
_MAX_TOOLS = 10_000
_CLOSE_TIMEOUT = 5.0
_IDLE_CHECK = 5.0  # seconds without a call after which the next call pings first
_PING_TIMEOUT = 5.0
_NO_PING_SINCE = "2026-07-28"  # the protocol version that removed ping
_MAX_INSTRUCTIONS = 16_000  # characters of a server's instructions kept
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


#: Set once the process exits: no connection opens after that.
_EXITING = [False]
#: Told ``(server, uri)`` when a server says a subscribed resource changed (a gateway
#: passes it on to its own subscribers). Held weakly: as long as their owner holds them.
RESOURCE_LISTENERS: weakref.WeakSet[Callable[[str, str], None]] = weakref.WeakSet()


# -- one connection -----------------------------------------------------------------------


class Connection:
    """A lazily opened, shared connection to one MCP server (see the module docstring)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._listeners: list[Callable[[], None]] = []
        self._last_used = time.monotonic()
        self._in_flight = 0  # calls sent and not answered: no ping while there are any
        #: The calls in flight, by (tool, canonical arguments): a toolwire gateway's
        #: approval question about one of them is answered yes (see _on_elicit).
        self._calls: dict[object, tuple[str, dict[str, Any]]] = {}
        #: The resources subscribed to (a 2026-07-28 server's listen filter), and the
        #: task reading the listen stream.
        self._watched: set[str] = set()
        self._listener: asyncio.Task[None] | None = None
        self._roots: tuple[types.Root, ...] = ()
        #: For calls a gateway makes for its client: how to ask that client (see _on_elicit).
        self._askers: dict[object, Asker] = {}
        #: The server's ``instructions`` from its last ``initialize`` (None: it gave none).
        self.instructions: str | None = None
        self.connects = 0
        #: Tell the tools-changed listeners on each connect: a toolset made from a cached
        #: tool list reads the server's own list as soon as the server is up.
        self.refresh_on_connect = False
        #: The tools the server's listing says must run as tasks (2025-11-25
        #: ``execution.taskSupport``), by name: ``required``/``optional``; set by tools_from.
        self.task_tools: dict[str, str] = {}
        # Set by connected(): the connection opened on the block's loop (``_home``), which
        # serves every call while the block lasts; ``_retired`` once the block has ended.
        self._local: Connection | None = None
        self._home: asyncio.AbstractEventLoop | None = None
        self._retired = False
        #: The deadlines of the calls in flight (made on the first call, on its loop).
        self._clock: IdleClock | None = None

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<Connection to MCP server {self.spec.name!r} ({self.spec.transport}, {state})>"

    @property
    def is_open(self) -> bool:
        return self._client is not None and self._runner is not None and not self._runner.done()

    def on_tools_changed(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (on the connection's loop thread) after ``list_changed``."""
        self._listeners.append(listener)

    # -- opening ---------------------------------------------------------------------------

    def _tools_changed(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                logger.exception("MCP server `%s`: a list_changed listener failed", self.spec.name)

    async def _on_message(self, message: Any) -> None:
        # Handshake-era servers send notifications/tools/list_changed on the session.
        if isinstance(message, types.ToolListChangedNotification) or (
            getattr(message, "method", None) == "notifications/tools/list_changed"
        ):
            self._tools_changed()
        elif isinstance(message, types.ResourceUpdatedNotification):
            client = self._client
            if client is not None and _modern(client):
                return  # the listen stream's, which _listen reports: not twice
            self._resource_updated(str(message.params.uri))

    def _resource_updated(self, uri: str) -> None:
        for listener in list(RESOURCE_LISTENERS):
            try:
                listener(self.spec.name, uri)
            except Exception:
                logger.exception("MCP server `%s`: a resource listener failed", self.spec.name)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message, to the ``toolwire.mcp.<server>`` logger (as its stderr).
        The server's own logger name goes in the text, not in the logger's name: Python
        keeps every logger it ever made, and the server chooses the names."""
        level = _LOG_LEVELS.get(str(params.level), logging.INFO)
        data = params.data
        text = data if isinstance(data, str) else json.dumps(data, default=str)
        if params.logger:
            text = f"[{str(params.logger)[:64]}] {text}"
        logging.getLogger(f"toolwire.mcp.{self.spec.name}").log(level, "%s", text[:MAX_STDERR_LINE])

    async def _on_elicit(self, context: Any, params: Any) -> types.ElicitResult:
        """A server's ``elicitation/create``: answered by the application's handler
        (:func:`toolwire_mcp.set_elicitation_handler`), declined without one.

        One question is answered here: a toolwire gateway's approval of a call this
        client is making now, with those very arguments. The call runs here only after
        this application decided it runs (its approver, its policies), so that decision
        is the answer: the user is not asked twice. Saying yes to the server about its
        own tool grants it nothing it could not do anyway."""
        asked = approval_asked(
            getattr(params, "message", None),
            getattr(params, "requested_schema", None),
            getattr(params, "meta", None) or getattr(context, "meta", None),
        )
        if asked is not None and self._in_flight_call(*asked):
            return types.ElicitResult(action="accept", content={"approve": True})
        asker = self._asker()
        if asker is not None:
            # A gateway serving a client's call: the question is that client's to answer.
            try:
                action, content = await asker.ask(
                    str(getattr(params, "message", "")),
                    dict(getattr(params, "requested_schema", None) or {}),
                )
            except MCPCallError as exc:
                logger.info("MCP server `%s` asked; not passed on: %s", self.spec.name, exc)
                return types.ElicitResult(action="decline")
            if action not in ("accept", "decline", "cancel"):
                action, content = "cancel", None
            return types.ElicitResult(action=action, content=content)
        mode = getattr(params, "mode", "form")
        request = ElicitationRequest(
            self.spec.name,
            str(getattr(params, "message", "")),
            "url" if mode == "url" else "form",
            dict(getattr(params, "requested_schema", None) or {}),
            getattr(params, "url", None),
        )
        action, content = await answer(request)
        return types.ElicitResult(action=action, content=content)

    async def _on_sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        # The application's provider when it enabled sampling; else, in a gateway, the
        # model of the client whose call it is (as a question is passed on).
        return await answer_sampling(self.spec.name, params, self._asker())

    async def _on_roots(self, context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=list(self._roots))

    def _asker(self) -> Asker | None:
        """Who answers a question asked now: the gateway's client whose call it is. A
        question returned in a call's result (2026-07-28) is asked in that call's own
        context; one sent over the back-channel is not, and is passed on only when one
        client's calls are all that is in flight (never to a client it may not be for)."""
        mine = CALL_ASKER_NOW.get()
        if mine is not None:
            return mine
        askers = set(self._askers.values())
        if len(askers) == 1 and len(self._askers) == self._in_flight:
            return next(iter(askers))
        return None

    def _in_flight_call(self, tool: str, arguments: Any) -> bool:
        """Whether this connection is calling ``tool`` with ``arguments`` now."""
        if not isinstance(arguments, dict):
            return False
        asked = _canonical(arguments)
        return any(
            name == tool and _canonical(given) == asked for name, given in self._calls.values()
        )

    async def _listen(self, client: Client) -> None:
        """2026-07-28 servers announce changes on a subscriptions/listen stream instead:
        tool-list changes, and updates of the resources subscribed to (``_watched``; a
        new subscription restarts the stream with it)."""
        try:
            async with client.listen(
                tools_list_changed=True, resource_subscriptions=sorted(self._watched)
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ResourceUpdated):
                        self._resource_updated(event.uri)
                    else:
                        self._tools_changed()
        except ListenNotSupportedError:
            return  # an older protocol: _on_message gets the notifications
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.debug("MCP server `%s`: no list_changed stream: %s", self.spec.name, exc)

    async def _run(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        try:
            # Sampling and roots are offered only when the application set them up
            # (a capability declared is a promise to answer).
            offered: dict[str, Any] = {}
            if offers_sampling(self.spec.name):
                offered["sampling_callback"] = self._on_sample
            # This server's own roots (its spec's), else the process's: read once a
            # connection, so a relative path means what it meant when it was opened.
            self._roots = roots(self.spec)
            if self._roots:
                offered["list_roots_callback"] = self._on_roots
            client = Client(
                open_transport(self.spec, closing),  # closing: this connection's own
                mode=self.spec.protocol,
                read_timeout_seconds=self.spec.timeout,
                message_handler=self._on_message,
                elicitation_callback=self._on_elicit,
                logging_callback=self._on_log,
                # A call a 2026-07-28 server answers with a task is followed to its result.
                extensions=[TasksExtension()],
                log_level="info",  # 2026-07-28 servers log only to requests that opt in
                **offered,
            )
            async with client:
                if not ready.done():
                    ready.set_result(client)
                self._listener = asyncio.create_task(self._listen(client))
                try:
                    await closing.wait()
                finally:
                    listener, self._listener = self._listener, None
                    listener.cancel()
                    with contextlib.suppress(BaseException):
                        await listener
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(MCPConnectError(f"MCP server `{self.spec.name}`: cancelled"))
            raise
        except BaseException as exc:  # anyio groups, OSError from spawning, MCPError, ...
            if not ready.done():
                ready.set_exception(exc)
            else:
                logger.warning(
                    "MCP server `%s`: the connection ended: %s", self.spec.name, _describe(exc)
                )

    async def _ensure(self) -> Client:
        client = self._client
        if client is not None and self.is_open:
            return client  # the common case: no lock, no await
        if self._retired:
            raise MCPCallError(
                f"MCP server `{self.spec.name}`: its connected() block has ended; "
                f"the next call is served by the loop thread"
            )
        if _EXITING[0]:
            # The process is ending (close_all at exit): a late request (a refresh of the
            # tool list, say) must not start a server nobody will stop.
            raise MCPConnectError(f"MCP server `{self.spec.name}`: the process is exiting")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.is_open:
                assert self._client is not None
                return self._client
            self._client = None
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            closing = asyncio.Event()
            self._closing = closing
            self._runner = loop.create_task(self._run(ready, closing))
            name = self.spec.name
            try:
                client = await asyncio.wait_for(asyncio.shield(ready), self.spec.connect_timeout)
            except TimeoutError:
                await self._stop()
                raise MCPConnectError(
                    f"MCP server `{name}` did not start and answer `initialize` within "
                    f"{self.spec.connect_timeout:g} s"
                ) from None
            except MCPConnectError:
                raise
            except Exception as exc:
                raise MCPConnectError(
                    f"could not connect to MCP server `{name}`: {_describe(exc)}"
                ) from None
            self._client = client
            self.connects += 1
            try:
                found = client.instructions
            except Exception:  # a session that cannot say: no instructions
                found = None
            self.instructions = found[:_MAX_INSTRUCTIONS] if isinstance(found, str) else None
            if self.refresh_on_connect:
                self._tools_changed()
            return client

    async def _stop(self) -> None:
        runner, closing = self._runner, self._closing
        self._client = None
        if closing is not None:
            closing.set()
        if runner is not None and not runner.done():
            try:
                await asyncio.wait_for(asyncio.shield(runner), _CLOSE_TIMEOUT)
            except (TimeoutError, Exception):
                runner.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(runner, _CLOSE_TIMEOUT)

    # -- requests (on the loop thread) -------------------------------------------------------

    async def _list_tools(self) -> list[types.Tool]:
        return await self._paged(
            "tools/list",
            lambda client, cursor: client.list_tools(cursor=cursor, cache_mode="refresh"),
            "tools",
        )

    async def _paged(
        self,
        method: str,
        fetch: Callable[[Client, str | None], Awaitable[Any]],
        field: str,
    ) -> list[Any]:
        """Every item of a paged list (``tools/list``, ``resources/list``, ...), following
        ``nextCursor``: each page within the call timeout, at most ``_MAX_PAGES`` pages
        and ``_MAX_TOOLS`` items, a repeated cursor refused."""
        client = await self._ensure()
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        server = self.spec.name
        for _ in range(_MAX_PAGES):
            page: Any = await self._request(method, fetch(client, cursor))
            items.extend(getattr(page, field, None) or ())
            if len(items) > _MAX_TOOLS:
                raise MCPCallError(
                    f"MCP server `{server}` lists over {_MAX_TOOLS} items in {method}"
                )
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                raise MCPCallError(
                    f"MCP server `{server}` returned the {method} cursor {cursor!r} twice"
                )
            seen.add(cursor)
        raise MCPCallError(f"MCP server `{server}` answers {method} over {_MAX_PAGES} pages")

    async def _request(self, method: str, sending: Awaitable[_T]) -> _T:
        """One request to the server within the call timeout; every failure an
        :class:`MCPCallError` that says which server and what."""
        server = self.spec.name
        try:
            return await asyncio.wait_for(sending, self.spec.timeout)
        except TimeoutError:
            raise MCPCallError(
                f"MCP server `{server}` did not answer {method} within {self.spec.timeout:g} s"
            ) from None
        except MCPError as exc:
            raise MCPCallError(
                f"MCP server `{server}` refused {method}: {exc.error.message}"
            ) from None
        except Exception as exc:
            await self._stop()
            raise MCPCallError(
                f"MCP server `{server}`: {method} failed: {_describe(exc)}"
            ) from None

    def _has(self, client: Client, capability: str) -> bool:
        """Whether the server declared ``capability`` (``resources``, ``prompts``, ...)."""
        try:
            caps = client.server_capabilities
        except Exception:
            return False
        return getattr(caps, capability, None) is not None

    async def _capabilities(self) -> frozenset[str]:
        client = await self._ensure()
        return frozenset(
            c for c in ("resources", "prompts", "completions", "logging") if self._has(client, c)
        )

    async def _list(self, what: str) -> list[Any]:
        client = await self._ensure()
        capability = "prompts" if what == "prompts" else "resources"
        if not self._has(client, capability):
            return []
        if what == "resources":
            return await self._paged(
                "resources/list",
                lambda c, cursor: c.list_resources(cursor=cursor, cache_mode="refresh"),
                "resources",
            )
        if what == "templates":
            return await self._paged(
                "resources/templates/list",
                lambda c, cursor: c.list_resource_templates(cursor=cursor, cache_mode="refresh"),
                "resource_templates",
            )
        return await self._paged(
            "prompts/list",
            lambda c, cursor: c.list_prompts(cursor=cursor, cache_mode="refresh"),
            "prompts",
        )

    async def _read(self, uri: str) -> types.ReadResourceResult:
        client = await self._ensure()
        self._last_used = time.monotonic()
        return await self._request(
            f"resources/read of {uri!r}", client.read_resource(uri, cache_mode="refresh")
        )

    async def _prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        client = await self._ensure()
        self._last_used = time.monotonic()
        return await self._request(f"prompts/get of `{name}`", client.get_prompt(name, arguments))

    async def _complete(
        self, ref: Any, argument: dict[str, str], context: dict[str, str] | None
    ) -> types.CompleteResult:
        client = await self._ensure()
        if not self._has(client, "completions"):
            return types.CompleteResult(completion=types.Completion(values=[]))
        return await self._request("completion/complete", client.complete(ref, argument, context))

    async def _subscribe(self, uri: str, on: bool) -> None:
        client = await self._ensure()
        if _modern(client):
            # 2026-07-28: a subscription is part of the listen stream's filter.
            changed = (uri not in self._watched) if on else (uri in self._watched)
            if on:
                self._watched.add(uri)
            else:
                self._watched.discard(uri)
            listener = self._listener
            if changed and listener is not None:
                listener.cancel()
                with contextlib.suppress(BaseException):
                    await listener
                self._listener = asyncio.create_task(self._listen(client))
            return
        with warnings.catch_warnings():  # deprecated from 2026-07-28 on, still served
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = client.subscribe_resource(uri) if on else client.unsubscribe_resource(uri)
        await self._request("resources/subscribe" if on else "resources/unsubscribe", sending)

    def _busy(self) -> bool:
        return self._in_flight > 0

    async def _fresh(self) -> Client:
        """The open client, checked with a ping first when it has been idle a while: a
        server that died while nobody used it is reconnected before a call is sent to it,
        instead of the call failing.

        Any answer means alive: servers on protocol 2026-07-28 removed ``ping`` and answer
        "Method not found". Only no answer (the connection closed, or silence past the
        ping's deadline) counts as dead, and no ping is sent while a call is in flight (a
        long call is not a dead server)."""
        client = await self._ensure()
        if self._in_flight or time.monotonic() - self._last_used < _IDLE_CHECK:
            return client
        if _modern(client):
            # No ping in this protocol: a server that died ended its connection (a stdio
            # server's exit closes the stream, and _ensure reconnected above).
            return client
        try:
            await asyncio.wait_for(client.send_ping(), min(self.spec.timeout, _PING_TIMEOUT))
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:
                self._last_used = time.monotonic()
                return client  # it answered (an error, "Method not found"): alive
            await self._stop()
            client = await self._ensure()
        except Exception:
            if self._busy():  # a call started meanwhile: the server is in use
                return client
            await self._stop()
            client = await self._ensure()
        return client

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        relay: Relay | None = None,
        asker: Asker | None = None,
    ) -> types.CallToolResult:
        client = await self._fresh()
        call = Call(self, name, relay)
        self._last_used = time.monotonic()
        self._in_flight += 1
        # Kept as they are: compared (canonically) only when an approval question comes.
        self._calls[call] = (name, arguments)
        if asker is None:
            try:
                return await self._send(client, call, arguments)
            finally:
                del self._calls[call]
                self._in_flight -= 1
                self._last_used = time.monotonic()
        self._askers[call] = asker
        try:
            with _asking(asker):
                return await self._send(client, call, arguments)
        finally:
            del self._calls[call]
            del self._askers[call]
            self._in_flight -= 1
            self._last_used = time.monotonic()

    async def _send(
        self, client: Client, call: Call, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        name = call.name
        server = self.spec.name
        clock = self._clock
        if clock is None or clock.loop is not call.loop:
            clock = self._clock = IdleClock(call.loop)
        clock.add(call)
        # A task's status reaches the caller as progress, and moves the deadline on too.
        watched = WATCH.set(call)
        # A progress token on every call (the SDK adds one with the callback); the idle
        # deadline, moved on by each progress notification, and the overall limit are the
        # connection's clock's (see toolwire_mcp.client._inflight).
        try:
            try:
                result = await call_tool(
                    client,
                    name,
                    arguments,
                    self.spec.max_call_time,
                    call.on_progress,
                    self.task_tools.get(name),
                )
            except BaseException as exc:
                if call.cuts and _the_cuts_doing(exc, call.withdraw()):
                    raise call.late() from None
                raise
            finally:
                clock.remove(call)  # (no await since it answered: no cut comes between)
            if call.cuts:  # cut as it answered (or the SDK took the cancellation): late
                call.withdraw()
                raise call.late()
            self._last_used = time.monotonic()
            return result
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise MCPCallError(
                    f"MCP server `{server}` did not finish the call to `{name}` within "
                    f"{self.spec.max_call_time:g} s (max_call_time)"
                ) from None
            if exc.code == types.CONNECTION_CLOSED:
                await self._stop()
                raise MCPCallError(
                    f"MCP server `{server}` closed the connection during the call to `{name}`; "
                    f"it is reconnected on the next call"
                ) from None
            raise MCPCallError(
                f"MCP server `{server}` refused the call to `{name}`: {exc.error.message}"
            ) from None
        except MCPCallError:
            raise  # a deadline above: it says so already
        except ValidationError as exc:  # an answer (a result, a task) no version allows
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"][-2:]) or "the result"
            raise MCPCallError(
                f"MCP server `{server}` answered the call to `{name}` with a malformed "
                f"result: {where}: {problem['msg']}"
            ) from None
        except RuntimeError as exc:
            # The SDK checks structuredContent against the tool's outputSchema and raises this.
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MCPCallError(f"MCP server `{server}`, tool `{name}`: {first}") from None
        except Exception as exc:
            await self._stop()
            raise MCPCallError(
                f"MCP server `{server}` failed during the call to `{name}` ({_describe(exc)}); "
                f"it is reconnected on the next call"
            ) from None
        finally:
            WATCH.reset(watched)

    # -- the API for any thread or loop --------------------------------------------------------

    def _submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        return LOOP.submit(coro)

    async def _routed(self, op: Callable[[Connection], Coroutine[Any, Any, _T]]) -> _T:
        """``op`` on the connection that serves async callers now: the connected() block's
        (directly when called from its loop), else the loop thread's."""
        local = self._local
        if local is None:
            return await asyncio.wrap_future(LOOP.submit(op(self)))
        home = local._home
        assert home is not None
        if home is asyncio.get_running_loop():
            return await op(local)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(op(local), home))

    def _routed_sync(
        self, op: Callable[[Connection], Coroutine[Any, Any, _T]], deadline: float
    ) -> _T:
        local = self._local
        if local is not None and _running_loop() is not local._home:
            assert local._home is not None
            return _result(asyncio.run_coroutine_threadsafe(op(local), local._home), deadline)
        # No block, or a blocking call on the block's own loop (waiting there for that loop
        # would never end): the loop thread serves it, on a connection of its own.
        return _result(LOOP.submit(op(self)), deadline)

    def list_tools_sync(self) -> list[types.Tool]:
        """Every tool the server lists, following ``nextCursor``."""
        return self._routed_sync(_list_op, self._deadline(pages=True))

    async def list_tools(self) -> list[types.Tool]:
        return await self._routed(_list_op)

    def call_sync(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return self._routed_sync(
            lambda conn: conn._call(name, arguments), self._deadline(call=True)
        )

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        # Read here: the call may go on to another loop.
        relay, asker = CALL_PROGRESS.get(), CALL_ASKER.get()
        local = self._local  # inline, not _routed: this is every tool call's path
        if local is not None and local._home is asyncio.get_running_loop():
            return await local._call(name, arguments, relay, asker)
        # Served from another loop: the gateway's relay and link belong to this one, and
        # are called back here.
        relay = on_this_loop(relay)
        asker = LinkOnLoop(asker) if asker is not None else None
        return await self._routed(lambda conn: conn._call(name, arguments, relay, asker))

    # resources, prompts, completion: the same routing as calls.

    async def capabilities(self) -> frozenset[str]:
        """What the server offers beyond tools: ``resources``, ``prompts``,
        ``completions``, ``logging``."""
        return await self._routed(lambda conn: conn._capabilities())

    def capabilities_sync(self) -> frozenset[str]:
        return self._routed_sync(lambda conn: conn._capabilities(), self._deadline())

    async def listing(self, what: str) -> list[Any]:
        """``resources``, ``templates`` or ``prompts``: every one the server lists ([]
        when it declared no such capability)."""
        return await self._routed(lambda conn: conn._list(what))

    def listing_sync(self, what: str) -> list[Any]:
        return self._routed_sync(lambda conn: conn._list(what), self._deadline(pages=True))

    async def read(self, uri: str) -> types.ReadResourceResult:
        return await self._routed(lambda conn: conn._read(uri))

    def read_sync(self, uri: str) -> types.ReadResourceResult:
        return self._routed_sync(lambda conn: conn._read(uri), self._deadline())

    async def prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        return await self._routed(lambda conn: conn._prompt(name, arguments))

    def prompt_sync(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        return self._routed_sync(lambda conn: conn._prompt(name, arguments), self._deadline())

    async def complete(
        self, ref: Any, argument: dict[str, str], context: dict[str, str] | None = None
    ) -> types.CompleteResult:
        return await self._routed(lambda conn: conn._complete(ref, argument, context))

    async def subscribe(self, uri: str, on: bool = True) -> None:
        await self._routed(lambda conn: conn._subscribe(uri, on))

    def close(self) -> None:
        """Close the connection (a stdio server's process ends); the next use reopens it."""
        if LOOP.running() is None:
            return
        with contextlib.suppress(Exception):
            self._submit(self._stop()).result(_CLOSE_TIMEOUT * 2 + 1)

    def _deadline(self, *, pages: bool = False, call: bool = False) -> float:
        per = (self.spec.max_call_time if call else self.spec.timeout) + 1.0
        return self.spec.connect_timeout + (per * _MAX_PAGES if pages else per) + _CLOSE_TIMEOUT


#: The asker of the call this task is sending (see Connection._asker).
CALL_ASKER_NOW: contextvars.ContextVar[Asker | None] = contextvars.ContextVar(
    "toolwire_mcp_asker_now", default=None
)


@contextlib.contextmanager
def _asking(asker: Asker | None) -> Iterator[None]:
    token = CALL_ASKER_NOW.set(asker)
    try:
        yield
    finally:
        CALL_ASKER_NOW.reset(token)


def _the_cuts_doing(exc: BaseException, left: int) -> bool:
    """Whether what a call cut at its deadline raised is the cut's doing: its cancellation
    when nobody else cancelled the task too (``left``), or an error the SDK made of it (a
    KeyboardInterrupt stays one)."""
    if isinstance(exc, asyncio.CancelledError):
        return left == 0
    return isinstance(exc, Exception)


def _canonical(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


def _modern(client: Client) -> bool:
    """Whether the protocol the server agreed on has no ``ping`` (2026-07-28 and later)."""
    try:
        version = client.protocol_version
    except Exception:
        return False
    return isinstance(version, str) and version >= _NO_PING_SINCE


def _list_op(conn: Connection) -> Coroutine[Any, Any, list[types.Tool]]:
    return conn._list_tools()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _result(future: concurrent.futures.Future[_T], deadline: float) -> _T:
    try:
        return future.result(deadline)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise MCPCallError("the MCP connection did not answer in time") from None
