"""Every read from a remote MCP server has a size limit.

The client's HTTP transport wraps httpx's: a JSON response may be at most
``MAX_MESSAGE`` bytes, and on an SSE stream (which may stay open for hours) each event
may (the bytes between two blank lines). Past it the response is cut with an error that
says so, before the SDK parses anything: a server cannot make the client buffer an
endless message. Only identity, gzip and deflate are asked for, and the body is decoded
here by toolwire's one bounded reader (:class:`toolwire.adapters.Inflater`), a step at a
time, so a compressed body counts as it decodes; a body encoded otherwise (zstd, br) is
refused unread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2

from toolwire.adapters import ACCEPT_ENCODING, Inflater
from toolwire.exceptions import FetchError

__all__ = ["MAX_MESSAGE", "BoundedTransport", "MessageTooLarge"]

#: The largest message read from an MCP server: as the stdio transport's.
MAX_MESSAGE = 16 << 20


class MessageTooLarge(httpx2.ReadError):
    """A server sent a message past the limit: the response was cut."""


class _Bounded(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, limit: int, events: bool, url: str, inflater: Inflater) -> None:
        self._inner = inner
        self._limit = limit
        self._events = events
        self._url = url
        self._inflater = inflater

    async def _decoded(self) -> AsyncIterator[bytes]:
        try:
            async for raw in self._inner:
                for piece in self._inflater.feed(raw):
                    yield piece
            for piece in self._inflater.finish():
                yield piece
        except FetchError as exc:
            raise httpx2.DecodingError(str(exc), request=None) from None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        run = 0  # bytes since the last event boundary (or in all, for a plain body)
        tail = b""
        async for chunk in self._decoded():
            if self._events:
                seen = tail + chunk
                cut = max(seen.rfind(b"\n\n"), seen.rfind(b"\r\n\r\n"))
                run = len(seen) - cut - 2 if cut >= 0 else run + len(chunk)
                tail = seen[-3:]
            else:
                run += len(chunk)
            if run > self._limit:
                raise MessageTooLarge(
                    f"the MCP server at {self._url} sent a message over {self._limit:,} bytes; "
                    f"it was cut",
                    request=None,
                )
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """httpx's transport, each response read within the limit (see the module docstring)."""

    def __init__(self, limit: int = MAX_MESSAGE, inner: httpx2.AsyncBaseTransport | None = None):
        self._inner = inner or httpx2.AsyncHTTPTransport()
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "")
        length = response.headers.get("content-length")
        encoding = response.headers.get("content-encoding", "")
        try:
            inflater = Inflater(encoding, what=f"the MCP server at {request.url}'s answer")
        except FetchError as exc:
            await response.aclose()
            raise httpx2.DecodingError(str(exc), request=request) from None
        if encoding:  # decoded here: the client must not decode it again
            del response.headers["content-encoding"]
            if length is not None:
                del response.headers["content-length"]
                length = None
        if length is not None and length.isdigit() and int(length) > self._limit:
            await response.aclose()
            raise MessageTooLarge(
                f"the MCP server at {request.url} announced a {int(length):,}-byte message; "
                f"at most {self._limit:,} is read",
                request=request,
            )
        response.stream = _Bounded(
            response.stream, self._limit, "text/event-stream" in kind, str(request.url), inflater
        )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
