"""The one bounded fetch (``toolwire.adapters``): bodies counted as they decompress,
encodings not asked for refused unread, one deadline for the whole exchange (#40.3).

Bombs are served over real sockets on 127.0.0.1; what the reader holds is measured.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
from _servers import Reply, ScriptedServer

from toolwire.adapters import Inflater, afetch_bounded
from toolwire.exceptions import FetchError

MIB = 1024 * 1024


def gzip_bomb(mib: int) -> bytes:
    """``mib`` MiB of zeros, gzip-compressed (about a thousandth of the size)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    return b"".join([*(z.compress(zeros) for _ in range(mib)), z.flush()])


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def _fetch(url: str, limit: int = MIB, timeout: float = 10.0) -> object:
    return asyncio.run(afetch_bounded("GET", url, limit=limit, timeout=timeout))


# -- Inflater ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("", lambda b: b),
        ("identity", lambda b: b),
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda b: zlib.compress(b)[2:-4]),  # without its zlib header
        ("GZIP", gzip.compress),
    ],
)
def test_the_inflater_decodes_a_step_at_a_time(encoding: str, encode: object) -> None:
    body = bytes(range(256)) * 2000  # 512,000 bytes
    raw = encode(body)  # type: ignore[operator]
    inflater = Inflater(encoding)
    pieces = [p for at in range(0, len(raw), 7000) for p in inflater.feed(raw[at : at + 7000])]
    pieces += list(inflater.finish())
    assert (body, True) == (b"".join(pieces), all(len(p) <= 64 * 1024 for p in pieces))


@pytest.mark.parametrize("encoding", ["zstd", "br", "compress", "gzip, gzip", "gzip, br"])
def test_an_encoding_not_asked_for_is_refused(encoding: str) -> None:
    with pytest.raises(FetchError, match="which was not asked for") as info:
        Inflater(encoding, what="the keys")
    assert ("encoding", True) == (info.value.reason, str(info.value).startswith("the keys"))


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_data_that_is_not_what_it_says_is_an_error(encoding: str) -> None:
    with pytest.raises(FetchError, match="not valid gzip or deflate data") as info:
        list(Inflater(encoding).feed(b"this is not compressed at all"))
    assert "data" == info.value.reason


def test_a_bomb_fed_at_once_comes_out_a_step_at_a_time() -> None:
    bomb = gzip_bomb(64)
    first = next(Inflater("gzip").feed(bomb))
    assert 64 * 1024 == len(first)  # not 64 MiB: the reader stops asking when it has enough


# -- afetch_bounded over real sockets ------------------------------------------------------


def test_a_gzip_bomb_is_refused_as_it_grows(server: ScriptedServer) -> None:
    bomb = gzip_bomb(256)  # 256 MiB as it decompresses, ~250 KB on the wire
    server.script(Reply(200, bomb, {"content-encoding": "gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="over the limit of 1,048,576 bytes") as info:
            _fetch(server.url + "/keys")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ("too_large", True) == (info.value.reason, peak < 16 * MIB)
    assert "gzip, deflate" == server.requests[0].headers["accept-encoding"]


def test_a_zstd_body_is_refused_unread(server: ScriptedServer) -> None:
    # Attack (#40.3): the JWKS fetch and media.afetch accepted zstd: a 16 KB body grew the
    # process by 0.7-1 GiB before the size limit was seen.
    zstandard = pytest.importorskip("zstandard")
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(512 * MIB))
    server.script(Reply(200, bomb, {"content-encoding": "zstd"}))
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match="encoded as zstd, which was not asked for"):
            _fetch(server.url + "/keys")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MIB


def test_a_declared_length_over_the_limit_is_refused_unread(server: ScriptedServer) -> None:
    server.script(Reply(200, b"x" * 5000))
    with pytest.raises(FetchError, match="is 5,000 bytes, over the limit of 1,000"):
        _fetch(server.url, limit=1000)


def test_a_body_within_the_limit_is_returned_with_its_status(server: ScriptedServer) -> None:
    server.script(
        Reply(200, gzip.compress(b'{"keys": []}'), {"content-encoding": "gzip"}),
        Reply(302, b"", {"location": "http://169.254.169.254/"}),
    )
    got = _fetch(server.url)
    assert (200, b'{"keys": []}') == (got.status, got.body)  # type: ignore[attr-defined]
    moved = _fetch(server.url)
    assert (302, 2) == (moved.status, len(server.requests))  # type: ignore[attr-defined]


def test_the_whole_exchange_has_one_deadline(server: ScriptedServer) -> None:
    # A server that trickles its body: each read is quick, the whole is not.
    server.script(Reply(200, chunks=[b"x"] * 50, chunk_pause=0.1))
    with pytest.raises(FetchError, match=r"did not come within 0\.5 s") as info:
        _fetch(server.url, timeout=0.5)
    assert "timeout" == info.value.reason


def test_a_connection_that_fails_is_a_fetch_error() -> None:
    with pytest.raises(FetchError, match="could not be fetched: ConnectError") as info:
        _fetch("http://127.0.0.1:9/")
    assert "connection" == info.value.reason


# -- media.afetch reads through it ---------------------------------------------------------


def test_media_afetch_refuses_a_zstd_image_unread(server: ScriptedServer) -> None:
    # Attack (#40.3): media.afetch accepted zstd (any encoding httpx decodes).
    import httpx

    import toolwire as tw
    from toolwire.media import MediaError, afetch

    zstandard = pytest.importorskip("zstandard")
    port = int(server.url.rsplit(":", 1)[1])

    class ToLocal(httpx.AsyncHTTPTransport):
        """The https URL the application allowed, served by the local server."""

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=port)
            return await super().handle_async_request(request)

    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(256 * MIB))
    server.script(
        Reply(200, bomb, {"content-encoding": "zstd"}),
        Reply(200, gzip_bomb(256), {"content-encoding": "gzip"}),
    )

    async def fetch() -> object:
        async with httpx.AsyncClient(transport=ToLocal()) as client:
            part = tw.Image("https://cdn.example.com/chart.png")
            return await afetch(part, allow_hosts=["cdn.example.com"], client=client)

    tracemalloc.start()
    try:
        with pytest.raises(MediaError, match="encoded as zstd, which was not asked for"):
            asyncio.run(fetch())
        with pytest.raises(MediaError, match=r"over the .* media limit"):
            asyncio.run(fetch())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * MIB  # the media limit (20 MiB by default) plus a step
