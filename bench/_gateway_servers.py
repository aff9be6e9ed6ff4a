"""The processes the gateway load benchmark starts (``python -m bench._gateway_servers``):

- ``upstream PORT``: the official SDK's ``MCPServer`` over Streamable HTTP with two
  read-only tools, ``echo`` (returns at once) and ``wait10`` (returns after 10 ms). Called
  directly it is the floor; the gateways front it.
- ``null PORT UPSTREAM_URL``: the thinnest gateway the SDK allows: its low-level
  ``Server`` whose ``tools/call`` is passed as it is to one ``Client`` session upstream
  (no policy, no audit, no checks). What any gateway pays for the second hop.
- ``stdio``: the SDK's ``MCPServer`` over stdio with one tool, ``crash_echo``, for the
  soak (``bench.soak``) to kill while calls run and the gateway to start afresh.
- ``fastmcp PORT UPSTREAM_URL``: FastMCP's proxy (``fastmcp.server.create_proxy``), the
  peer gateway, fronting the upstream.
"""

from __future__ import annotations

import sys


def upstream(port: int) -> None:
    import anyio
    import mcp_types as types
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("upstream")
    read_only = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def echo(text: str) -> str:
        """Echo the text."""
        return f"echo: {text}"

    @server.tool(annotations=read_only)
    async def wait10(text: str) -> str:
        """Echo the text after 10 ms."""
        await anyio.sleep(0.01)
        return f"echo: {text}"

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def stdio_server() -> None:
    import anyio
    import mcp_types as types
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("crashy")
    read_only = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    async def crash_echo(text: str) -> str:
        """Echo the text after 20 ms."""
        await anyio.sleep(0.02)
        return f"echo: {text}"

    server.run("stdio")


def null_proxy(port: int, url: str) -> None:
    import contextlib
    from typing import Any

    import mcp_types as types
    import uvicorn
    from mcp import Client
    from mcp.server.lowlevel import Server

    held: dict[str, Any] = {}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=held["tools"])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await held["client"].call_tool(params.name, params.arguments or {})

    server = Server("null-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(host="127.0.0.1")
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> Any:
        async with Client(url) as client, inner(a):
            held["client"] = client
            held["tools"] = (await client.list_tools()).tools
            yield

    app.router.lifespan_context = lifespan
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def fastmcp_proxy(port: int, url: str) -> None:
    from fastmcp.server import create_proxy

    proxy = create_proxy(url, name="fastmcp-proxy")
    proxy.run(transport="http", host="127.0.0.1", port=port, log_level="warning", show_banner=False)


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(int(sys.argv[2]))
    elif sys.argv[1] == "stdio":
        stdio_server()
    elif sys.argv[1] == "null":
        null_proxy(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "fastmcp":
        fastmcp_proxy(int(sys.argv[2]), sys.argv[3])
    else:
        raise SystemExit(f"unknown server {sys.argv[1]!r}")
