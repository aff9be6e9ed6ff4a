"""An MCP server's resources and prompts, from Python: :func:`mcp_server`.

The model reads resources through the ``read_resource`` tool an MCP toolset adds; an
application reads them, lists and renders prompts, and gets argument completions through
the handle, on the same shared connection the server's tools use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from toolwire import Session, Toolset
from toolwire.exceptions import UsageError
from toolwire_mcp._config import ServerSpec
from toolwire_mcp._content import block_text
from toolwire_mcp.client._connection import Connection
from toolwire_mcp.client._registry import connection_for
from toolwire_mcp.client._toolset import connection_named

__all__ = ["MCPServerHandle", "mcp_server"]


class MCPServerHandle:
    """One MCP server's resources, prompts and completions (sync and ``a``-prefixed async
    methods). Lists follow every page; each request has the server's call timeout."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def __repr__(self) -> str:
        return f"<MCPServerHandle {self._conn.spec.name!r}>"

    @property
    def name(self) -> str:
        return self._conn.spec.name

    @property
    def instructions(self) -> str | None:
        """What the server said about using it, at its last ``initialize``."""
        return self._conn.instructions

    def capabilities(self) -> frozenset[str]:
        """Of ``resources``, ``prompts``, ``completions``, ``logging``: what it offers."""
        return self._conn.capabilities_sync()

    def resources(self) -> list[types.Resource]:
        return self._conn.listing_sync("resources")

    def resource_templates(self) -> list[types.ResourceTemplate]:
        return self._conn.listing_sync("templates")

    def read_resource(self, uri: str) -> types.ReadResourceResult:
        return self._conn.read_sync(_text(uri, "uri"))

    def prompts(self) -> list[types.Prompt]:
        return self._conn.listing_sync("prompts")

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> types.GetPromptResult:
        return self._conn.prompt_sync(_text(name, "name"), _arguments(arguments))

    def prompt_session(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        session: Session | None = None,
    ) -> Session:
        """The prompt's messages added to ``session`` (a new one by default), ready for a
        model: text as it is; an image, audio or resource as a line that says what it is
        (until results carry media, #27)."""
        return prompt_into(self.get_prompt(name, arguments), session)

    async def aresources(self) -> list[types.Resource]:
        return await self._conn.listing("resources")

    async def aresource_templates(self) -> list[types.ResourceTemplate]:
        return await self._conn.listing("templates")

    async def aread_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._conn.read(_text(uri, "uri"))

    async def aprompts(self) -> list[types.Prompt]:
        return await self._conn.listing("prompts")

    async def aget_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> types.GetPromptResult:
        return await self._conn.prompt(_text(name, "name"), _arguments(arguments))

    async def acomplete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: str,
        value: str = "",
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Values the server suggests for ``argument`` of a prompt or resource template,
        given what was typed so far (``value``)."""
        result = await self._conn.complete(
            ref, {"name": argument, "value": value}, dict(context) if context else None
        )
        return list(result.completion.values)


def prompt_into(result: types.GetPromptResult, session: Session | None = None) -> Session:
    session = Session() if session is None else session
    for message in result.messages:
        text = block_text(message.content)
        if message.role == "assistant":
            session.add_assistant(text)
        else:
            session.add_user(text)
    return session


def mcp_server(server: Toolset | ServerSpec | str) -> MCPServerHandle:
    """The handle of an MCP server: a toolset :func:`mcp_toolset` made, a
    :class:`ServerSpec`, or the name of a server in use or configured (``mcpServers``)."""
    if isinstance(server, ServerSpec):
        return MCPServerHandle(connection_for(server))
    if isinstance(server, Toolset):
        for tool in server.tools():
            conn = getattr(tool.origin.fn, "toolwire_mcp_conn", None)
            if isinstance(conn, Connection):
                return MCPServerHandle(conn)
        raise UsageError(
            f"toolset `{server.name}` holds no MCP server's tool (mcp_toolset); pass the "
            f"server's name or its ServerSpec"
        )
    if isinstance(server, str):
        found = connection_named(server)
        if found is not None:
            return MCPServerHandle(found)
        from toolwire_mcp._config import load_config

        spec = load_config().get(server)
        if spec is not None:
            return MCPServerHandle(connection_for(spec))
        raise UsageError(f"no MCP server named `{server}` is in use or configured")
    raise UsageError(
        f"mcp_server() takes a toolset from mcp_toolset, a ServerSpec or a server's name, "
        f"got {type(server).__name__}"
    )


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _arguments(arguments: Mapping[str, str] | None) -> dict[str, str]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in arguments.items()
    ):
        raise UsageError("prompt arguments are a mapping of strings to strings")
    return dict(arguments)
