"""The one bounded fetch: every outbound HTTP request toolwire makes reads its body here
(DESIGN.md, principle 8; ``tests/test_one_way.py`` fails when code reads one another way).

- Only ``identity``, ``gzip`` and ``deflate`` are asked for (:data:`ACCEPT_ENCODING`), and a
  body encoded otherwise is refused unread: zstd and brotli can grow a few kilobytes into
  gigabytes in one step, before any size check could see it.
- The raw bytes are decoded here, never more than :data:`STEP` bytes at a time
  (:class:`Inflater`), so a size limit counts the body as it is decompressed.
- :func:`afetch_bounded` gives a whole exchange one deadline and a size limit.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from toolwire._errors import FetchError
from toolwire._exports import publish

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "STEP",
    "Fetched",
    "Inflater",
    "afetch_bounded",
    "aiter_body",
    "aread_body",
    "iter_body",
    "read_body",
]

#: The ``Accept-Encoding`` of every request: encodings whose output can be bounded.
ACCEPT_ENCODING = "gzip, deflate"
#: The most decoded bytes produced from a body at one time.
STEP = 64 * 1024

_GZIP = frozenset({"gzip", "x-gzip"})


def _encodings(content_encoding: str) -> list[str]:
    return [
        e.strip().lower()
        for e in content_encoding.split(",")
        if e.strip() and e.strip().lower() != "identity"
    ]


class Inflater:
    """Decodes a body's raw bytes as its ``Content-Encoding`` says, at most :data:`STEP`
    bytes at a time: a caller that counts what it is given counts the body as it is
    decompressed, and never holds more than one step past its limit.

    ``FetchError`` for an encoding that was not asked for (anything but identity, gzip
    and deflate; more than one encoding) and for data that is not what it says."""

    __slots__ = ("_d", "_raw_deflate", "_what")

    def __init__(self, content_encoding: str = "", *, what: str = "the response") -> None:
        self._what = what
        found = _encodings(content_encoding)
        self._raw_deflate = False
        self._d: Any = None
        if not found:
            return
        if len(found) > 1 or (found[0] not in _GZIP and found[0] != "deflate"):
            raise FetchError(
                f"{what} is encoded as {', '.join(found)}, which was not asked for (only "
                f"gzip and deflate are accepted)",
                reason="encoding",
            )
        gzip = found[0] in _GZIP
        self._d = zlib.decompressobj(31 if gzip else 15)
        self._raw_deflate = not gzip  # may still turn out to be deflate without a header

    def feed(self, raw: bytes) -> Iterator[bytes]:
        """The decoded bytes of the next raw chunk, a step at a time."""
        d = self._d
        if d is None:
            for at in range(0, len(raw), STEP):
                yield raw[at : at + STEP]
            return
        data = raw
        while True:
            try:
                out = d.decompress(data, STEP)
            except zlib.error:
                if self._raw_deflate:  # the first step failed: no header
                    # deflate sent without its zlib header, as some servers do
                    self._raw_deflate = False
                    d = self._d = zlib.decompressobj(-15)
                    continue
                raise FetchError(
                    f"{self._what} is not valid gzip or deflate data", reason="data"
                ) from None
            self._raw_deflate = False
            if out:
                yield out
            data = d.unconsumed_tail
            if not data and len(out) < STEP:
                return

    def finish(self) -> Iterator[bytes]:
        """What the decoder still holds once the raw body has ended."""
        if self._d is None:
            return
        while True:
            out = self._d.flush(STEP)
            if not out:
                return
            yield out


def _loaded(response: httpx.Response) -> bytes | None:
    """The body of a response that was read already (decoded: a test's mock transport),
    or None for a streamed one."""
    import httpx

    try:
        return response.content
    except httpx.ResponseNotRead:
        return None


def _open(response: httpx.Response, limit: int | None, what: str) -> Inflater:
    """The response's inflater, after a declared length over ``limit`` is refused."""
    if _loaded(response) is not None:
        return Inflater(what=what)  # httpx decoded it already
    encoding = response.headers.get("content-encoding", "")
    length = response.headers.get("content-length")
    if (
        limit is not None
        and not _encodings(encoding)
        and length is not None
        and length.isdigit()
        and int(length) > limit
    ):
        raise FetchError(
            f"{what} is {int(length):,} bytes, over the limit of {limit:,}", reason="too_large"
        )
    return Inflater(encoding, what=what)


def _past(deadline: float | None, what: str) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise FetchError(f"{what} was not read before its deadline", reason="deadline")


def _raw(response: httpx.Response) -> Iterator[bytes]:
    loaded = _loaded(response)
    if loaded is not None:
        yield loaded
        return
    yield from response.iter_raw()


async def _araw(response: httpx.Response) -> AsyncIterator[bytes]:
    loaded = _loaded(response)
    if loaded is not None:
        yield loaded
        return
    async for raw in response.aiter_raw():
        yield raw


def iter_body(
    response: httpx.Response, *, what: str = "the response", deadline: float | None = None
) -> Iterator[bytes]:
    """A streamed response's body, decoded a step at a time (for a stream read without a
    total limit, such as server-sent events: its reader bounds each event)."""
    inflater = _open(response, None, what)
    for raw in _raw(response):
        _past(deadline, what)
        yield from inflater.feed(raw)
    yield from inflater.finish()


async def aiter_body(
    response: httpx.Response, *, what: str = "the response", deadline: float | None = None
) -> AsyncIterator[bytes]:
    """Async :func:`iter_body`."""
    inflater = _open(response, None, what)
    async for raw in _araw(response):
        _past(deadline, what)
        for piece in inflater.feed(raw):
            yield piece
    for piece in inflater.finish():
        yield piece


class _Collect:
    __slots__ = ("cut", "limit", "parts", "size", "truncated", "what")

    def __init__(self, limit: int, cut: bool, what: str) -> None:
        self.limit, self.cut, self.what = limit, cut, what
        self.parts: list[bytes] = []
        self.size = 0
        self.truncated = False

    def take(self, piece: bytes) -> bool:
        """Keep ``piece``; True when reading should stop (the limit reached, cut)."""
        self.size += len(piece)
        if self.size > self.limit:
            if not self.cut:
                raise FetchError(
                    f"{self.what} is over the limit of {self.limit:,} bytes", reason="too_large"
                )
            self.parts.append(piece[: len(piece) - (self.size - self.limit)])
            self.truncated = True
            return True
        self.parts.append(piece)
        return False


def read_body(
    response: httpx.Response,
    limit: int,
    *,
    cut: bool = False,
    what: str = "the response",
    deadline: float | None = None,
) -> tuple[bytes, bool]:
    """(the body of a streamed response, decoded, and whether it was cut): at most
    ``limit`` bytes decoded, past which ``FetchError`` (or, with ``cut``, the first
    ``limit`` bytes and True). ``deadline`` is a ``time.monotonic()`` time."""
    inflater = _open(response, None if cut else limit, what)
    got = _Collect(limit, cut, what)
    for raw in _raw(response):
        _past(deadline, what)
        if any(got.take(p) for p in inflater.feed(raw)):
            return b"".join(got.parts), True
    if any(got.take(p) for p in inflater.finish()):
        return b"".join(got.parts), True
    return b"".join(got.parts), False


async def aread_body(
    response: httpx.Response,
    limit: int,
    *,
    cut: bool = False,
    what: str = "the response",
    deadline: float | None = None,
) -> tuple[bytes, bool]:
    """Async :func:`read_body`."""
    inflater = _open(response, None if cut else limit, what)
    got = _Collect(limit, cut, what)
    async for raw in _araw(response):
        _past(deadline, what)
        if any(got.take(p) for p in inflater.feed(raw)):
            return b"".join(got.parts), True
    if any(got.take(p) for p in inflater.finish()):
        return b"".join(got.parts), True
    return b"".join(got.parts), False


@attrs.frozen
class Fetched:
    """What :func:`afetch_bounded` read: the status, the headers and the decoded body."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str


async def afetch_bounded(
    method: str,
    url: str,
    *,
    limit: int,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
    content: bytes | None = None,
    what: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Fetched:
    """One request and its whole answer, bounded: never a redirect followed, the body at
    most ``limit`` bytes as it is decompressed (identity, gzip or deflate only), the whole
    exchange within ``timeout`` seconds, no proxy or netrc from the environment.

    ``FetchError`` when it cannot be made or read within those bounds; any status is
    returned (the caller says what it accepts). ``transport`` is for tests."""
    import anyio
    import httpx

    from toolwire._sync import in_a_task

    await in_a_task()  # its deadline needs its task
    shown = what or f"the answer of {url}"
    sent = {**(headers or {}), "Accept-Encoding": ACCEPT_ENCODING}
    try:
        with anyio.fail_after(timeout):
            async with (
                httpx.AsyncClient(
                    follow_redirects=False, timeout=timeout, trust_env=False, transport=transport
                ) as client,
                client.stream(method, url, headers=sent, data=data, content=content) as response,
            ):
                body, _ = await aread_body(response, limit, what=shown)
                return Fetched(response.status_code, dict(response.headers), body, url)
    except TimeoutError:
        raise FetchError(f"{shown} did not come within {timeout:g} s", reason="timeout") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"{shown} could not be fetched: {type(exc).__name__}: {exc}") from None


publish(globals())
