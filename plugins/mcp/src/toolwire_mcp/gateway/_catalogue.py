"""What a gateway serves beside its tools: the resources and prompts of the application
and of every upstream server it fronts (reads, templates, completions, subscriptions),
and the announcements to its clients when an upstream list or resource changes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import Any

import attrs
import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

from toolwire import HookContext, PluginHost, Toolset, resolve_turn
from toolwire_mcp.client._connection import Connection, MCPCallError
from toolwire_mcp.client._toolset import connection_named
from toolwire_mcp.gateway._served import _SERVING, Prompt, Resource

__all__ = ["RESOURCE_NOT_FOUND", "Announcer", "Catalogue", "Upstream", "connection_of"]

logger = logging.getLogger("toolwire.mcp.server")


class Announcer:
    """Tells a gateway's clients that its tools changed (an upstream server's list did):
    2026-07-28 clients listen on ``subscriptions/listen`` (the bus); earlier ones get
    ``notifications/tools/list_changed`` on their connection. Called from whatever loop
    refreshed the upstream toolset; it announces on the loop serving the clients."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.legacy: weakref.WeakSet[Any] = weakref.WeakSet()  # clients' connections
        self.tasks: set[asyncio.Task[None]] = set()

    def remember(self, ctx: Any) -> None:
        self.loop = asyncio.get_running_loop()
        session = getattr(ctx, "session", None)
        if session is not None and str(getattr(ctx, "protocol_version", "")) < "2026-07-28":
            with contextlib.suppress(TypeError):  # a connection that cannot be held weakly
                self.legacy.add(connection_of(session))

    def __call__(self) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return  # no client has come yet: the next tools/list is fresh anyway
        loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        task = asyncio.get_running_loop().create_task(self._announce())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _announce(self) -> None:
        with contextlib.suppress(Exception):
            await self.bus.publish(ToolsListChanged())
        for connection in list(self.legacy):
            with contextlib.suppress(Exception):
                await connection.send_tool_list_changed()


#: MCP's error code for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002
_MAX_COMPLETIONS = 100


@attrs.define
class Upstream:
    """An upstream MCP server the gateway fronts, as its clients see it: under the prefix
    its tools are mounted with; its resources readable when its read tool is served."""

    server: str
    conn: Connection
    prefix: str = ""
    read_tool: str | None = None


class Catalogue:
    """The resources and prompts a gateway serves: the application's own, then those of
    every upstream server with a tool in the gateway's ``tools/list`` (a server a policy
    hides is hidden whole). Upstream resources keep their URIs (a link in a result must
    still resolve); upstream prompts are named with the server's tool prefix."""

    def __init__(
        self,
        resources: list[Resource],
        prompts: list[Prompt],
        tools: Toolset,
        plugins: PluginHost,
        context: HookContext,
        announcer: Announcer,
    ) -> None:
        self._announcer = announcer
        # A bound method is made anew at each access: keep one, for the weak registry.
        self.updated = self._updated
        self.own_static = {r.uri: r for r in resources if not r.is_template}
        self.own_templates = [r for r in resources if r.is_template]
        self.own_prompts = {p.name: p for p in prompts}
        self._tools, self._plugins, self._context = tools, plugins, context
        self._uri_owner: dict[str, str] = {}  # upstream resource URI -> server
        self._templates: list[tuple[Any, str]] = []  # (UriTemplate, server)
        self._prompt_owner: dict[str, tuple[str, str]] = {}  # name -> (server, its name)
        self._subscribed: dict[str, weakref.WeakSet[Any]] = {}
        if resources:
            _SERVING.add(self)

    def own_updated(self, uri: str) -> bool:
        """One of the application's own resources changed (:func:`resource_updated`):
        its subscribers here are told, on the loop serving them. False when ``uri`` is
        not this gateway's own."""
        if uri not in self.own_static and self.own_resource(uri) is None:
            return False
        loop = self._announcer.loop  # None: no client has come, so none listens
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._announce_update, None, uri)
        return True

    def upstreams(self) -> dict[str, Upstream]:
        turn = resolve_turn(
            self._tools,
            hooks=self._plugins.hook_sets(),
            context=self._context,
            plugins=self._plugins,
        )
        found: dict[str, Upstream] = {}
        for rt in turn.tools:
            source = rt.tool.metadata.source or ""
            if not source.startswith("mcp:"):
                continue
            server = source[4:]
            conn = connection_named(server)
            if conn is None:
                continue
            up = found.setdefault(server, Upstream(server, conn))
            own = rt.tool.origin.name  # as the server named it, before any prefix
            prefix = rt.name[: -len(own)] if rt.name.endswith(own) else ""
            if len(prefix) > len(up.prefix):
                up.prefix = prefix
            if getattr(rt.tool.origin.fn, "toolwire_mcp_reads", None) is conn:
                up.read_tool = rt.name
        return found

    async def _each(self, what: str, only_readable: bool) -> list[tuple[Upstream, Any]]:
        out: list[tuple[Upstream, Any]] = []
        for up in self.upstreams().values():
            if only_readable and up.read_tool is None:
                continue
            try:
                items = await up.conn.listing(what)
            except MCPCallError as exc:  # one server failing leaves the others listed
                logger.warning("%s", exc)
                continue
            out.extend((up, item) for item in items)
        return out

    async def resources(self) -> list[types.Resource]:
        listed = [r.listed() for r in self.own_static.values()]
        seen = set(self.own_static)
        owners: dict[str, str] = {}
        for up, item in await self._each("resources", True):
            uri = str(item.uri)
            if uri in seen:
                continue
            seen.add(uri)
            owners[uri] = up.server
            listed.append(item.model_copy(update={"name": _named(up.prefix, item.name)}))
        self._uri_owner = owners
        return listed

    async def templates(self) -> list[types.ResourceTemplate]:
        listed = [r.listed_template() for r in self.own_templates]
        kept: list[tuple[Any, str]] = []
        for up, item in await self._each("templates", True):
            try:
                kept.append((_parse_template(str(item.uri_template)), up.server))
            except ValueError:
                continue  # a template we cannot match cannot route a read
            listed.append(item.model_copy(update={"name": _named(up.prefix, item.name)}))
        self._templates = kept
        return listed

    def own_resource(self, uri: str) -> tuple[Resource, dict[str, Any]] | None:
        static = self.own_static.get(uri)
        if static is not None:
            return static, {}
        for r in self.own_templates:
            parts = r.match(uri)
            if parts is not None:
                return r, parts
        return None

    async def upstream_of(self, uri: str) -> Upstream | None:
        ups = self.upstreams()
        for attempt in range(2):
            server = self._uri_owner.get(uri)
            if server is None:
                server = next((s for t, s in self._templates if t.match(uri) is not None), None)
            if server is not None and server in ups:
                return ups[server]
            if attempt == 0:  # not seen yet: list again, once
                await self.resources()
                await self.templates()
        return None

    async def prompts(self) -> list[types.Prompt]:
        listed = [p.listed() for p in self.own_prompts.values()]
        owners: dict[str, tuple[str, str]] = {}
        for up, item in await self._each("prompts", False):
            name = _named(up.prefix, item.name)
            if name in self.own_prompts or name in owners:
                continue
            owners[name] = (up.server, item.name)
            listed.append(item.model_copy(update={"name": name}))
        self._prompt_owner = owners
        return listed

    async def upstream_prompt(self, name: str) -> tuple[Upstream, str] | None:
        if name not in self._prompt_owner:
            await self.prompts()
        found = self._prompt_owner.get(name)
        ups = self.upstreams()
        if found is None or found[0] not in ups:
            return None
        return ups[found[0]], found[1]

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref, argument = params.ref, params.argument
        typed = str(argument.value or "")
        context = dict(params.context.arguments or {}) if params.context else None
        if isinstance(ref, types.PromptReference):
            own = self.own_prompts.get(ref.name)
            if own is not None:
                values = [v for v in own.choices.get(argument.name, ()) if v.startswith(typed)]
                return _completion(values)
            found = await self.upstream_prompt(ref.name)
            if found is not None:
                up, original = found
                with contextlib.suppress(MCPCallError):
                    return await up.conn.complete(
                        types.PromptReference(type="ref/prompt", name=original),
                        {"name": argument.name, "value": typed},
                        context,
                    )
        elif isinstance(ref, types.ResourceTemplateReference):
            uri = str(ref.uri)
            if not any(r.uri == uri for r in self.own_templates):
                if not self._templates:
                    await self.templates()
                owner = next(
                    (s for t, s in self._templates if str(getattr(t, "template", "")) == uri),
                    None,
                )
                ups = self.upstreams()
                if owner in ups:
                    with contextlib.suppress(MCPCallError):
                        return await ups[owner].conn.complete(
                            ref, {"name": argument.name, "value": typed}, context
                        )
        return _completion([])

    async def subscribe(self, ctx: Any, uri: str, on: bool) -> None:
        """Remember (or forget) the client's interest in ``uri``; an upstream server's
        resource is subscribed to (or not) upstream while anyone here wants it."""
        try:
            connection = connection_of(ctx.session)
        except AttributeError:
            connection = None
        watchers = self._subscribed.setdefault(uri, weakref.WeakSet())
        with contextlib.suppress(TypeError):
            if on and connection is not None:
                watchers.add(connection)
            elif connection is not None:
                watchers.discard(connection)
        if uri in self.own_static or self.own_resource(uri) is not None:
            return
        up = await self.upstream_of(uri)
        if up is None:
            if on:
                raise MCPError(RESOURCE_NOT_FOUND, f"no resource {uri!r}")
            return
        if not on and watchers:
            return  # another client still wants it
        try:
            await up.conn.subscribe(uri, on)
        except MCPCallError as exc:
            logger.info("%s", exc)  # a server that cannot subscribe: nothing to relay

    def _updated(self, server: str, uri: str) -> None:
        """An upstream server's resource changed: tell this gateway's subscribers (on the
        loop serving them), if the server is one this gateway fronts."""
        loop = self._announcer.loop
        if uri not in self._subscribed or loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._announce_update, server, uri)

    def _announce_update(self, server: str | None, uri: str) -> None:
        """Tell ``uri``'s subscribers (``server``: the upstream it came from, which must
        still be one this gateway fronts; None: the application's own, published to the
        listen streams whatever the legacy subscriptions, as the bus delivers it only to
        the streams that asked for ``uri``)."""
        if server is not None and (not self._subscribed.get(uri) or server not in self.upstreams()):
            return

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self._announcer.bus.publish(ResourceUpdated(uri))
            for connection in list(self._subscribed.get(uri, ())):
                with contextlib.suppress(Exception):
                    await connection.send_resource_updated(uri)

        task = asyncio.get_running_loop().create_task(send())
        self._announcer.tasks.add(task)
        task.add_done_callback(self._announcer.tasks.discard)


def _parse_template(text: str) -> Any:
    from mcp.shared.uri_template import UriTemplate

    return UriTemplate.parse(text)


def _named(prefix: str, name: str) -> str:
    return name if not prefix or name.startswith(prefix) else f"{prefix}{name}"


def _completion(values: list[str]) -> types.CompleteResult:
    return types.CompleteResult(
        completion=types.Completion(
            values=values[:_MAX_COMPLETIONS],
            total=len(values),
            has_more=len(values) > _MAX_COMPLETIONS,
        )
    )


def connection_of(session: Any) -> Any:
    """The client connection a (per-request) session belongs to: where a level set by
    ``logging/setLevel`` lives."""
    return getattr(session, "_connection", session)
