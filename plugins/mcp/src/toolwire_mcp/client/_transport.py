"""Opening the streams to an MCP server: stdio, Streamable HTTP or SSE, bounded."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from toolwire_mcp._config import ServerSpec
from toolwire_mcp.client._bounded_http import BoundedTransport
from toolwire_mcp.client._errors import MCPConnectError
from toolwire_mcp.client._stdio import StderrPipe, bounded_stdio_client

__all__ = ["open_transport"]


@contextlib.asynccontextmanager
async def open_transport(spec: ServerSpec, closing: asyncio.Event | None) -> AsyncIterator[Any]:
    """The streams to one MCP server, as its spec says: a stdio child process (its stderr
    to the server's logger, ``closing`` set when it exits), Streamable HTTP or SSE (its
    headers, bearer token and OAuth; every message read within 16 MiB)."""
    if spec.command is not None:
        # Only ``env`` over the SDK's short list of safe variables (PATH, HOME, ...):
        # this process's secrets (API keys) are not handed to every server it starts.
        params = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) or None,
            cwd=spec.cwd,
        )
        pipe = StderrPipe(spec.name)
        try:
            async with bounded_stdio_client(
                params,
                pipe.writer,
                name=spec.name,
                on_close=closing.set if closing is not None else None,
            ) as streams:
                yield streams
        finally:
            pipe.close()
        return
    assert spec.url is not None
    headers = dict(spec.headers)
    if spec.bearer_token_env:
        token = os.environ.get(spec.bearer_token_env)
        if not token:
            raise MCPConnectError(
                f"MCP server `{spec.name}`: the environment variable "
                f"{spec.bearer_token_env} (its bearer token) is not set"
            )
        headers["Authorization"] = f"Bearer {token}"
    auth = None
    if spec.auth is not None:
        from toolwire_mcp.client._oauth import auth_for

        auth = auth_for(spec)  # logs in when the server first answers 401
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        def bounded_client(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(
                headers=headers, timeout=timeout, auth=auth, transport=BoundedTransport()
            )

        # The legacy transport's own client; the same headers, token, deadlines and
        # message bound.
        async with sse_client(
            spec.url,
            headers=headers,
            timeout=spec.connect_timeout,
            sse_read_timeout=max(spec.max_call_time, 300.0),
            httpx_client_factory=bounded_client,
            auth=auth,
        ) as streams:
            yield streams
        return
    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(spec.connect_timeout, read=max(spec.timeout, 30.0)),
        auth=auth,
        transport=BoundedTransport(),  # every message read within 16 MiB
    )
    try:
        async with streamable_http_client(spec.url, http_client=http) as streams:
            yield streams
    finally:
        await http.aclose()
