"""An MCP server as an ordinary toolwire toolset.

Each MCP tool becomes a raw-schema tool: its ``inputSchema`` is the input schema, its
``outputSchema`` the output schema, its annotations its metadata (treated as untrusted,
with the spec's defaults), and its body a call to the server through the process's one
:class:`~toolwire_mcp._connection.Connection` to it. The toolset nests, takes a prefix,
hooks, availability and requirements like any other, so an installed policy's hooks see
MCP tools exactly as they see local ones: a call they reject never reaches the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs
import mcp_types as types

from toolwire import Capability, ToolEffect, ToolMetadata, Toolset, raw_tool
from toolwire.exceptions import ToolDefinitionError, ToolwireError
from toolwire_mcp._config import ServerSpec, spec_from_entry
from toolwire_mcp._connection import Connection, connection_for
from toolwire_mcp._content import result_text
from toolwire_mcp._names import local_names

__all__ = ["MCPToolError", "mcp_toolset", "metadata_for", "tools_from"]

logger = logging.getLogger("toolwire.mcp")
_REFRESHING: set[asyncio.Task[None]] = set()


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

    def hint(value: bool | None, default: bool) -> bool:
        return default if value is None else bool(value)

    read_only = hint(a.read_only_hint if a else None, False)
    destructive = hint(a.destructive_hint if a else None, True)
    idempotent = hint(a.idempotent_hint if a else None, False)
    open_world = hint(a.open_world_hint if a else None, True)
    if read_only:
        effect = ToolEffect.READ_ONLY
    elif destructive:
        effect = ToolEffect.DESTRUCTIVE
    else:
        effect = ToolEffect.MUTATING
    return ToolMetadata(
        effect=effect,
        idempotent=read_only or idempotent,
        capabilities=frozenset({Capability.NETWORK}) if open_world else frozenset(),
        timeout=timeout + 5.0,  # the connection's own deadline answers first, and says why
        source=f"mcp:{server}" if server else None,
    )


def _body(conn: Connection, mcp_name: str, structured: bool = False) -> Callable[..., Any]:
    async def call_mcp_tool(**arguments: Any) -> str:
        result = await conn.call(mcp_name, arguments)
        if result.is_error:
            text = result_text(result)
            raise MCPToolError(text or f"MCP tool `{mcp_name}` failed (no message)")
        if structured and isinstance(result.structured_content, dict):
            # The tool has an output schema: its output is the structured content the SDK
            # checked against it (the text blocks are a rendering of it), so a gateway
            # serving it returns conforming structuredContent.
            return json.dumps(result.structured_content, ensure_ascii=False)
        return result_text(result)

    call_mcp_tool.__qualname__ = f"mcp:{conn.spec.name}:{mcp_name}"
    return call_mcp_tool


def _task_required(tool: types.Tool) -> bool:
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def tools_from(conn: Connection, listed: Sequence[types.Tool]) -> list[Any]:
    """The toolwire tools for a server's listed tools; a tool that cannot be used (a bad
    name, an invalid schema) is skipped with a warning, as a tool pack that fails is."""
    spec = conn.spec
    usable = [t for t in listed if isinstance(t.name, str) and t.name]
    required = [t.name for t in usable if _task_required(t)]
    if required:
        # A call without a task would fail every time: not offered (tasks: see docs/mcp.md).
        logger.warning(
            "MCP server `%s`: tools that must run as tasks are not offered: %s",
            spec.name,
            ", ".join(required),
        )
        usable = [t for t in usable if not _task_required(t)]
    names = local_names(t.name for t in usable)
    tools = []
    for t in usable:
        description = t.description or t.title or ""
        try:
            tool = raw_tool(
                names[t.name],
                description,
                t.input_schema,
                _body(conn, t.name, structured=bool(t.output_schema)),
                metadata=metadata_for(
                    t.annotations,
                    trust=spec.annotations == "trust",
                    timeout=spec.timeout,
                    server=spec.name,
                ),
                output_schema=t.output_schema,
            )
        except ToolDefinitionError as exc:
            logger.warning("MCP server `%s`: tool `%s` skipped: %s", spec.name, t.name, exc)
            continue
        tools.append(tool)
    return tools


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
) -> Toolset:
    """A toolset of the MCP server's tools, named ``name``.

    ``server`` is a :class:`ServerSpec`, a Streamable HTTP URL (``"http://127.0.0.1:8000/mcp"``;
    ``headers``, ``bearer_token_env``), a stdio command as a list (``["uvx", "mcp-server-git"]``;
    ``env``, ``cwd``) or one ``mcpServers`` entry (``{"command": ..., "args": [...]}``).
    The server is connected now (or its existing connection reused) to list its tools; a
    ``list_changed`` notification refreshes them. Mount it under a prefix to keep two
    servers' names apart: ``app.add(mcp_toolset("git", ...), prefix="git_")``.
    """
    spec = _spec(
        name, server, timeout, connect_timeout, annotations, headers, bearer_token_env, env, cwd
    )
    conn = connection_for(spec)
    toolset = Toolset(name, description=f"tools of the MCP server `{name}`")
    toolset.reset(tools_from(conn, conn.list_tools_sync()))
    if conn.instructions:
        # What the server says about using its tools: for the application to show the
        # model (a system prompt); toolwire sends it nowhere by itself.
        toolset.description = conn.instructions

    def refresh() -> None:
        async def again() -> None:
            try:
                toolset.reset(tools_from(conn, await conn.list_tools()))
            except Exception as exc:
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
    return toolset


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
