"""An MCP server as an ordinary toolwire toolset.

Each MCP tool becomes a raw-schema tool: its ``inputSchema`` is the input schema, its
``outputSchema`` the output schema, its annotations its metadata (treated as untrusted,
with the spec's defaults), and its body a call to the server through the process's one
:class:`~toolwire_mcp.client._connection.Connection` to it. The toolset nests, takes a prefix,
hooks, availability and requirements like any other, so an installed policy's hooks see
MCP tools exactly as they see local ones: a call they reject never reaches the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs
import mcp_types as types

from toolwire import Structured, Tool, ToolEffect, ToolMetadata, Toolset, raw_tool
from toolwire.adapters import metadata_from_mcp_hints
from toolwire.exceptions import ToolDefinitionError, ToolwireError
from toolwire.media import Part
from toolwire_mcp._config import ServerSpec, spec_from_entry
from toolwire_mcp._content import (
    contents_output,
    result_output,
    result_text,
    structured_output,
)
from toolwire_mcp._names import local_names
from toolwire_mcp.client._connection import _EXITING, Connection, MCPCallError
from toolwire_mcp.client._listcache import Listing, load_listing, store_listing
from toolwire_mcp.client._loop import LOOP
from toolwire_mcp.client._registry import BEFORE_CLOSE, connection_for
from toolwire_mcp.client._tasks import task_support

__all__ = ["MCPToolError", "mcp_toolset", "metadata_for", "tools_from"]

logger = logging.getLogger("toolwire.mcp")
_REFRESHING: set[asyncio.Task[None]] = set()
#: The longest the process waits at exit for refreshes under way (a one-shot command's
#: first call started the server, whose own list then replaces the cached one).
_EXIT_WAIT = 3.0


def _finish_refreshes() -> None:
    """At exit: let the refreshes running on the loop thread finish (bounded), so the
    cache holds what the server said rather than what it was started from."""
    loop = LOOP.running()
    tasks = [t for t in _REFRESHING if not t.done() and t.get_loop() is loop]
    if loop is None or not tasks or not loop.is_running():
        return

    async def settle() -> None:
        await asyncio.wait(tasks, timeout=_EXIT_WAIT)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(settle(), loop).result(_EXIT_WAIT + 1)


BEFORE_CLOSE.append(_finish_refreshes)


class MCPToolError(ToolwireError, RuntimeError):
    """The MCP tool answered with ``isError``; the message is what it said."""

    #: The executor's error result says the message alone, not the class name: it is the
    #: server's own text (a gateway passes it on wrapped once, not twice).
    toolwire_plain = True


def metadata_for(
    annotations: types.ToolAnnotations | None,
    *,
    trust: bool,
    timeout: float,
    server: str | None = None,
) -> ToolMetadata:
    """ToolMetadata from MCP tool annotations, with the spec's defaults for what is missing.

    ``readOnlyHint`` (default false), ``destructiveHint`` (default true), ``idempotentHint``
    (default false), ``openWorldHint`` (default true): a tool without annotations is a
    destructive, non-idempotent tool that reaches the network, so approval gates it. With
    ``trust=False`` the annotations are ignored and every tool is treated so. ``server``
    (the name the configuration gives the server) becomes the metadata's ``source``,
    ``mcp:SERVER``: an organisation policy matches ``mcp:SERVER/*`` and trusts the
    annotations only of the servers it names.
    """
    a = annotations if trust else None
    made = metadata_from_mcp_hints(
        read_only=a.read_only_hint if a else None,
        destructive=a.destructive_hint if a else None,
        idempotent=a.idempotent_hint if a else None,
        open_world=a.open_world_hint if a else None,
        timeout=timeout + 5.0,  # the connection's own deadline answers first, and says why
        source=f"mcp:{server}" if server else None,
    )
    # The call's body is toolwire's own, and ends when cancelled (the SDK's courtesy
    # cancel to the server has a deadline of its own): no task per call to watch it.
    return attrs.evolve(made, honours_cancellation=True)


def _body(conn: Connection, mcp_name: str) -> Callable[..., Any]:
    async def call_mcp_tool(**arguments: Any) -> str | list[Part] | Structured[dict[str, Any]]:
        result = await conn.call(mcp_name, arguments)
        if result.is_error:
            text = result_text(result)
            raise MCPToolError(text or f"MCP tool `{mcp_name}` failed (no message)")
        if isinstance(result.structured_content, dict):
            # The model reads the server's text; the structured content (checked by the
            # SDK against the tool's output schema, when it has one) is the call's typed
            # output: a gateway serving the tool returns it as conforming structuredContent.
            return structured_output(result)
        return result_output(result)

    call_mcp_tool.__qualname__ = f"mcp:{conn.spec.name}:{mcp_name}"
    call_mcp_tool.toolwire_mcp_conn = conn  # type: ignore[attr-defined]  # mcp_server(toolset)
    return call_mcp_tool


def _long_running(metadata: ToolMetadata, task_only: bool, limit: float) -> ToolMetadata:
    """A tool the server runs only as a task is long-running by its own word: a gateway
    serving it answers its clients with a task too (see toolwire_mcp.gateway._served_tasks)."""
    return attrs.evolve(metadata, typical_duration=limit) if task_only else metadata


def tools_from(conn: Connection, listed: Sequence[types.Tool]) -> list[Any]:
    """The toolwire tools for a server's listed tools; a tool that cannot be used (a bad
    name, an invalid schema) is skipped with a warning, as a tool pack that fails is. A
    tool that must run as a task is called as one (see toolwire_mcp.client._tasks)."""
    spec = conn.spec
    usable = [t for t in listed if isinstance(t.name, str) and t.name]
    conn.task_tools = {t.name: mode for t in usable if (mode := task_support(t)) is not None}
    names = local_names(t.name for t in usable)
    tools = []
    for t in usable:
        description = t.description or t.title or ""
        try:
            tool = raw_tool(
                names[t.name],
                description,
                t.input_schema,
                _body(conn, t.name),
                metadata=_long_running(
                    metadata_for(
                        t.annotations,
                        trust=spec.annotations == "trust",
                        # The connection's own deadlines answer first (idle, then the whole).
                        timeout=spec.max_call_time,
                        server=spec.name,
                    ),
                    conn.task_tools.get(t.name) == "required",
                    spec.max_call_time,
                ),
                output_schema=t.output_schema,
            )
        except ToolDefinitionError as exc:
            logger.warning("MCP server `%s`: tool `%s` skipped: %s", spec.name, t.name, exc)
            continue
        tools.append(tool)
    return tools


#: The tool an MCP toolset adds when its server has resources: a resource link in a
#: result is not a dead end, and a policy decides each read as it decides any call.
READ_TOOL = "read_resource"
_MAX_LISTED = 25  # resources named in the read tool's description
_MAX_LINE = 200


@attrs.frozen
class _Unlisted:
    uri_template: str = "(the server's list could not be read)"
    name: str | None = None
    description: str | None = None


_UNLISTED = _Unlisted()


def _line(uri: str, name: str | None, description: str | None) -> str:
    text = f"- {uri}"
    if name and name != uri:
        text += f" ({name})"
    if description:
        text += f": {' '.join(description.split())}"
    return text[:_MAX_LINE]


def resource_tool(
    conn: Connection, resources: Sequence[Any], templates: Sequence[Any]
) -> Tool[Any, Any]:
    """The ``read_resource`` tool of a server with resources: reads one by URI."""
    server = conn.spec.name
    lines = [_line(str(r.uri), r.name, r.description) for r in resources[:_MAX_LISTED]]
    if len(resources) > _MAX_LISTED:
        lines.append(f"- ... and {len(resources) - _MAX_LISTED} more")
    lines += [_line(str(t.uri_template), t.name, t.description) for t in templates[:_MAX_LISTED]]
    listed = ("\nResources:\n" + "\n".join(lines)) if lines else ""
    description = (
        f"Read a resource of the MCP server `{server}` by its URI: one listed here, one a "
        f"tool result links to, or a template's URI with its parameters filled in.{listed}"
    )

    async def read_mcp_resource(uri: str) -> str | list[Part]:
        result = await conn.read(uri)
        box = RAW_READS.get()
        if box is not None:  # a gateway serving this read: it passes the contents on as given
            box[uri] = result
        return contents_output(result)

    read_mcp_resource.__qualname__ = f"mcp:{server}:{READ_TOOL}"
    # What marks it (a server's own tool may be called read_resource too): a gateway
    # finds the server's resources by it.
    read_mcp_resource.toolwire_mcp_reads = conn  # type: ignore[attr-defined]
    read_mcp_resource.toolwire_mcp_conn = conn  # type: ignore[attr-defined]
    return raw_tool(
        READ_TOOL,
        description,
        {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
            "required": ["uri"],
            "additionalProperties": False,
        },
        read_mcp_resource,
        # resources/read reads (the protocol has no side effect for it): not gated.
        metadata=ToolMetadata(
            effect=ToolEffect.READ_ONLY,
            idempotent=True,
            timeout=conn.spec.timeout + 5.0,
            honours_cancellation=True,
            source=f"mcp:{server}",
        ),
    )


#: Set by a gateway around a read it serves: the read tool leaves the server's own
#: contents there (the model gets text; the gateway's client gets what the server gave).
RAW_READS: contextvars.ContextVar[dict[str, types.ReadResourceResult] | None] = (
    contextvars.ContextVar("toolwire_mcp_raw_reads", default=None)
)
#: The connection behind each server name an MCP toolset was made for (the gateway finds
#: an upstream server's resources and prompts by the ``mcp:NAME`` source of its tools).
_BY_SERVER: dict[str, Connection] = {}


def connection_named(server: str) -> Connection | None:
    return _BY_SERVER.get(server)


def _with_resources(
    conn: Connection, tools: list[Any], resources: Sequence[Any] | None, templates: Sequence[Any]
) -> list[Any]:
    if resources is None:
        return tools
    if not resources and not templates:
        # The capability without a resource (the SDK's MCPServer always declares it):
        # a tool that can read nothing is only noise for the model.
        return tools
    if any(getattr(t, "name", None) == READ_TOOL for t in tools):
        logger.info(
            "MCP server `%s` has a tool named %s: its resources are read through it",
            conn.spec.name,
            READ_TOOL,
        )
        return tools
    return [*tools, resource_tool(conn, resources, templates)]


def listing_sync(conn: Connection) -> Listing:
    """What the server lists now: its tools, and its resources when it has them."""
    tools = tuple(conn.list_tools_sync())
    if "resources" not in conn.capabilities_sync():
        return Listing(tools, instructions=conn.instructions)
    resources = _or_none(conn.listing_sync, "resources")
    templates = _or_none(conn.listing_sync, "templates", quiet=True)
    return _listed(conn, tools, resources, templates)


async def listing(conn: Connection) -> Listing:
    tools = tuple(await conn.list_tools())
    if "resources" not in await conn.capabilities():
        return Listing(tools, instructions=conn.instructions)
    resources = await _or_none_async(conn.listing, "resources")
    templates = await _or_none_async(conn.listing, "templates", quiet=True)
    return _listed(conn, tools, resources, templates)


def _listed(
    conn: Connection,
    tools: tuple[types.Tool, ...],
    resources: list[Any] | None,
    templates: list[Any] | None,
) -> Listing:
    known, shown = _known(resources, templates)
    return Listing(tools, tuple(known), tuple(shown), conn.instructions)


def members_from(conn: Connection, listed: Listing) -> list[Any]:
    """A server's tools, and the read tool when it has resources."""
    _BY_SERVER[conn.spec.name] = conn
    tools = tools_from(conn, listed.tools)
    if listed.resources is None:
        return tools
    return _with_resources(conn, tools, listed.resources, listed.templates)


def members_sync(conn: Connection) -> list[Any]:
    return members_from(conn, listing_sync(conn))


async def members(conn: Connection) -> list[Any]:
    return members_from(conn, await listing(conn))


def _known(resources: list[Any] | None, templates: list[Any] | None) -> tuple[list[Any], list[Any]]:
    """What the read tool's description lists. A resource list that failed leaves the
    tool (the server has resources, and reads may work) with a note in place of the list;
    a template list that failed is no templates (many servers serve none)."""
    if resources is None:
        return [], [*(templates or []), _UNLISTED]
    return resources, templates or []


def _or_none(
    fetch: Callable[[str], list[Any]], what: str, *, quiet: bool = False
) -> list[Any] | None:
    """A listing the read tool's description shows; a server that fails it still has its
    resources readable (and the failure is logged)."""
    try:
        return fetch(what)
    except MCPCallError as exc:
        logger.log(logging.DEBUG if quiet else logging.WARNING, "%s", exc)
        return None


async def _or_none_async(
    fetch: Callable[[str], Any], what: str, *, quiet: bool = False
) -> list[Any] | None:
    try:
        return list(await fetch(what))
    except MCPCallError as exc:
        logger.log(logging.DEBUG if quiet else logging.WARNING, "%s", exc)
        return None


def mcp_toolset(
    name: str,
    server: ServerSpec | str | Sequence[str] | Mapping[str, Any],
    *,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    annotations: Literal["trust", "ignore"] | None = None,
    headers: Mapping[str, str] | None = None,
    bearer_token_env: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    cache: bool = False,
) -> Toolset:
    """A toolset of the MCP server's tools, named ``name``.

    ``server`` is a :class:`ServerSpec`, a Streamable HTTP URL (``"http://127.0.0.1:8000/mcp"``;
    ``headers``, ``bearer_token_env``), a stdio command as a list (``["uvx", "mcp-server-git"]``;
    ``env``, ``cwd``) or one ``mcpServers`` entry (``{"command": ..., "args": [...]}``).
    The server is connected now (or its existing connection reused) to list its tools; a
    ``list_changed`` notification refreshes them. Mount it under a prefix to keep two
    servers' names apart: ``app.add(mcp_toolset("git", ...), prefix="git_")``.

    ``cache=True``: take the tool list from the cache when it holds a fresh one for this
    server (see ``toolwire_mcp.client._listcache``), and start the server on its first call,
    not now; the list is read again each time the server connects, and cached.
    """
    spec = _spec(
        name, server, timeout, connect_timeout, annotations, headers, bearer_token_env, env, cwd
    )
    return made_toolset(spec, cache=cache)[0]


def made_toolset(spec: ServerSpec, *, cache: bool) -> tuple[Toolset, bool]:
    """The toolset of ``spec``'s server, and whether its tools came from the cache."""
    name = spec.name
    conn = connection_for(spec)
    toolset = Toolset(name, description=f"tools of the MCP server `{name}`")
    cached = load_listing(spec) if cache else None
    listed = cached if cached is not None else listing_sync(conn)
    toolset.reset(members_from(conn, listed))
    if cache and cached is None:
        store_listing(spec, listed)
    if listed.instructions:
        # What the server says about using its tools: for the application to show the
        # model (a system prompt); toolwire sends it nowhere by itself.
        toolset.description = listed.instructions

    def refresh() -> None:
        async def again() -> None:
            try:
                fresh = await listing(conn)
                toolset.reset(members_from(conn, fresh))
                if cache:
                    store_listing(spec, fresh)
            except Exception as exc:
                if not _EXITING[0]:  # at exit, a refresh cut short is no news
                    logger.warning("MCP server `%s`: refreshing its tools failed: %s", name, exc)
                return
            for listener in list(_RESET_LISTENERS):
                try:
                    listener()
                except Exception as exc:
                    logger.warning("a tools-changed listener failed: %r", exc)

        task = asyncio.get_running_loop().create_task(again())
        _REFRESHING.add(task)  # a running task needs a reference, or it may be collected
        task.add_done_callback(_REFRESHING.discard)

    conn.on_tools_changed(refresh)
    if cache:
        conn.refresh_on_connect = True  # a cached list is checked against the server's own
    return toolset, cached is not None


#: Called (on the loop that refreshed it) after an MCP toolset took a server's new tool
#: list: a gateway tells its own clients (tools/list_changed). Held weakly: a listener
#: lives as long as whatever holds it (a gateway's server).
_RESET_LISTENERS: weakref.WeakSet[Callable[[], None]] = weakref.WeakSet()


def on_toolsets_changed(listener: Callable[[], None]) -> None:
    """Call ``listener`` after any MCP toolset refreshed its tools (held weakly: keep a
    reference to it, and it goes away with its holder)."""
    _RESET_LISTENERS.add(listener)


def _spec(
    name: str,
    server: Any,
    timeout: float | None,
    connect_timeout: float | None,
    annotations: Any,
    headers: Mapping[str, str] | None,
    bearer_token_env: str | None,
    env: Mapping[str, str] | None,
    cwd: str | None,
) -> ServerSpec:
    extra: dict[str, Any] = {}
    if timeout is not None:
        extra["timeout"] = timeout
    if connect_timeout is not None:
        extra["connect_timeout"] = connect_timeout
    if annotations is not None:
        extra["annotations"] = annotations
    if isinstance(server, ServerSpec):
        return attrs.evolve(server, name=name, **extra) if extra or server.name != name else server
    if isinstance(server, str):
        return ServerSpec(
            name,
            url=server,
            headers=dict(headers or {}),
            bearer_token_env=bearer_token_env,
            **extra,
        )
    if isinstance(server, Mapping):
        spec = spec_from_entry(name, dict(server), "mcp_toolset()")
        if spec is None:
            raise ToolDefinitionError(f"MCP server `{name}` is disabled in its entry")
        return attrs.evolve(spec, **extra) if extra else spec
    if isinstance(server, Sequence) and server and all(isinstance(a, str) for a in server):
        return ServerSpec(
            name,
            command=server[0],
            args=tuple(server[1:]),
            env=dict(env or {}),
            cwd=cwd,
            **extra,
        )
    raise ToolDefinitionError(
        f"mcp_toolset({name!r}, ...): server must be a ServerSpec, a URL, a command list or "
        f"an mcpServers entry, got {type(server).__name__}"
    )
