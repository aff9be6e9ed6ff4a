"""A scriptable HTTP server on 127.0.0.1 for provider-adapter tests.

The server is a stdlib ``ThreadingHTTPServer`` speaking HTTP/1.1 with
keep-alive, so it serves httpx (sync and async), httpx2 and the official SDKs
alike: every connection gets its own thread and nothing depends on the
client's event loop.

Tests *enqueue* responses; each request pops the next one in FIFO order. When
the queue is empty the server falls back to a default response if one is set,
and otherwise answers ``418`` and records the request in ``unexpected`` (the
pytest fixtures turn that into a test error at teardown). Every request is
recorded, whatever happened to it.

Response kinds:

- :class:`JSONResponse`: a JSON body, with status and headers;
- :class:`RawResponse`: any bytes (an HTML 502 page from a proxy, say);
- :class:`SSEResponse`: ``text/event-stream`` sent with chunked transfer
  encoding, one chunk per element, flushed as it goes, with an optional delay
  between chunks and an optional abrupt drop of the connection after N chunks
  (the terminating zero-length chunk is never sent, so the client sees a
  truncated body);
- :class:`CloseConnection`: close the socket without sending a response.

Every kind takes ``delay``: seconds to wait before the status line, for
testing client timeouts. Waits are interruptible: ``reset()`` and ``close()``
wake every sleeping handler, so a test that timed out does not hold the
server up.

A response may also be a callable that receives the :class:`RecordedRequest`
and returns one of the kinds above.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "CloseConnection",
    "FakeServer",
    "JSONResponse",
    "RawResponse",
    "RecordedRequest",
    "Response",
    "Responder",
    "SSEResponse",
    "encode_sse",
    "rechunk",
]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it.

    ``headers`` has lower-cased names (the last value wins for a repeated
    header; ``raw_headers`` keeps every pair). ``json`` is the parsed body, or
    ``None`` when the body is empty or not JSON (``body`` keeps the bytes).
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw_headers: tuple[tuple[str, str], ...]
    body: bytes
    json: Any

    @property
    def url(self) -> str:
        """The path with its query string, as sent."""
        if not self.query:
            return self.path
        pairs = "&".join(f"{k}={v}" for k, vs in self.query.items() for v in vs)
        return f"{self.path}?{pairs}"

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class JSONResponse:
    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RawResponse:
    body: bytes
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "text/plain; charset=utf-8"
    delay: float = 0.0


@dataclass(frozen=True)
class SSEResponse:
    """A streamed ``text/event-stream`` body.

    ``chunks`` are written one by one as HTTP chunks, each flushed at once.
    ``chunk_delay`` sleeps between chunks. ``drop_after=N`` sends the first N
    chunks and then closes the connection without the terminating chunk.
    ``events`` keeps the decoded events the chunks were made from, when they
    were made from events (the Gemini fake uses it to answer a stream request
    without ``alt=sse`` with a JSON array, as the real API does).
    """

    chunks: tuple[bytes, ...]
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after: int | None = None
    events: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class CloseConnection:
    """Read the request, then close the socket without answering."""

    delay: float = 0.0


Response = Union[JSONResponse, RawResponse, SSEResponse, CloseConnection]
Responder = Union[Response, Callable[[RecordedRequest], Response]]


def encode_sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event: an optional ``event:`` line, ``data:`` lines, a blank line.

    ``data`` is JSON-encoded unless it is already a ``str``. Multi-line strings
    become several ``data:`` lines, as the SSE spec requires.
    """
    text = (
        data
        if isinstance(data, str)
        else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    )
    lines = [f"event: {event}"] if event is not None else []
    lines.extend(f"data: {line}" for line in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def rechunk(chunks: Iterable[bytes], size: int) -> tuple[bytes, ...]:
    """Join ``chunks`` and cut the bytes every ``size`` bytes.

    Use it to split SSE events (and UTF-8 characters) across network chunks,
    the way a proxy or a slow link would.
    """
    if size < 1:
        raise ValueError(f"rechunk size must be at least 1, got {size!r}")
    data = b"".join(chunks)
    return tuple(data[i : i + size] for i in range(0, len(data), size))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up mid-reply is what the timeout and cancel tests do: not
        # printed (socketserver would print its traceback mid-run); anything else is.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        fake = self.server.fake
        body = self._read_body()
        split = urlsplit(self.path)
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            raw_headers=tuple((k.lower(), v) for k, v in self.headers.items()),
            body=body,
            json=parsed,
        )
        response = fake._dispatch(request)
        try:
            self._send(response, fake)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, response: Response, fake: FakeServer) -> None:
        if response.delay and not fake._sleep(response.delay):
            self.close_connection = True
            return
        if isinstance(response, CloseConnection):
            self.close_connection = True
            return
        if isinstance(response, SSEResponse):
            self._send_sse(response, fake)
            return
        if isinstance(response, JSONResponse):
            payload = json.dumps(response.body, ensure_ascii=False).encode()
            content_type = "application/json"
        else:
            payload = response.body
            content_type = response.content_type
        self.send_response(response.status)
        headers = {
            "content-type": content_type,
            **{k.lower(): v for k, v in response.headers.items()},
        }
        headers["content-length"] = str(len(payload))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_sse(self, response: SSEResponse, fake: FakeServer) -> None:
        self.send_response(response.status)
        headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            **{k.lower(): v for k, v in response.headers.items()},
        }
        headers["transfer-encoding"] = "chunked"
        headers.pop("content-length", None)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        for index, chunk in enumerate(response.chunks):
            if response.drop_after is not None and index >= response.drop_after:
                self.close_connection = True
                return
            if index and response.chunk_delay and not fake._sleep(response.chunk_delay):
                self.close_connection = True
                return
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        if response.drop_after is not None:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeServer:
    """The scriptable server core. Provider fakes subclass it.

    Subclasses may override :meth:`_preflight` to answer a request before the
    queue is consulted (unknown route, bad credentials) and :meth:`_adapt` to
    adjust the popped response to the request.
    """

    #: Status used when nothing is enqueued: not a provider status, so an
    #: adapter does not retry it and the test setup mistake stands out.
    NOTHING_ENQUEUED_STATUS = 418

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Responder] = deque()
        self._default: Responder | None = None
        self._requests: list[RecordedRequest] = []
        self._unexpected: list[RecordedRequest] = []
        self._wake = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------

    def start(self) -> FakeServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}@{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._httpd is None:
            return
        self._wake.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``, with no path."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL a client of this fake is configured with."""
        return self.root_url

    # -- scripting -------------------------------------------------------

    def enqueue(self, *responses: Responder) -> None:
        """Append responses; each request pops the next one."""
        with self._lock:
            self._queue.extend(responses)

    def set_default(self, response: Responder | None) -> None:
        """Answer with ``response`` whenever the queue is empty (``None`` unsets)."""
        with self._lock:
            self._default = response

    def reset(self) -> None:
        """Forget queued responses, the default and recorded requests; wake sleepers."""
        with self._lock:
            self._queue.clear()
            self._default = None
            self._requests.clear()
            self._unexpected.clear()
            wake, self._wake = self._wake, threading.Event()
        wake.set()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received since the last reset, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise AssertionError(f"{type(self).__name__} has received no request")
            return self._requests[-1]

    @property
    def unexpected(self) -> list[RecordedRequest]:
        """Requests that found nothing enqueued and no default."""
        with self._lock:
            return list(self._unexpected)

    @property
    def pending(self) -> int:
        """How many enqueued responses no request has taken yet."""
        with self._lock:
            return len(self._queue)

    def assert_all_consumed(self) -> None:
        """Fail if a request found nothing enqueued, or a response was never requested."""
        problems = []
        for req in self.unexpected:
            problems.append(f"{req.method} {req.url} arrived with nothing enqueued")
        if self.pending:
            problems.append(f"{self.pending} enqueued response(s) were never requested")
        if problems:
            raise AssertionError(f"{type(self).__name__}: " + "; ".join(problems))

    def assert_secret_confined(self, secret: str, allowed_headers: Sequence[str]) -> None:
        """Fail if ``secret`` appears in any request outside ``allowed_headers``.

        Checks the path, the query, every other header and the body of every
        recorded request.
        """
        allowed = {h.lower() for h in allowed_headers}
        leaks = []
        for number, req in enumerate(self.requests):
            where = f"request #{number} {req.method} {req.path}"
            if secret in req.path:
                leaks.append(f"{where}: in the path")
            if any(secret in k or secret in v for k, vs in req.query.items() for v in vs):
                leaks.append(f"{where}: in the query string")
            for name, value in req.raw_headers:
                if secret in value and name not in allowed:
                    leaks.append(f"{where}: in header {name!r}")
            if secret.encode() in req.body:
                leaks.append(f"{where}: in the body")
        if leaks:
            raise AssertionError(
                f"API key found outside the allowed headers {sorted(allowed)}: " + "; ".join(leaks)
            )

    # -- internals -------------------------------------------------------

    def _sleep(self, seconds: float) -> bool:
        """Sleep; return False if woken early by reset() or close()."""
        wake = self._wake
        return not wake.wait(seconds)

    def _preflight(self, request: RecordedRequest) -> Response | None:
        return None

    def _adapt(self, request: RecordedRequest, response: Response) -> Response:
        return response

    def _nothing_enqueued(self, request: RecordedRequest) -> Response:
        message = (
            f"toolwire fake server: nothing enqueued for {request.method} {request.url} "
            "(enqueue a response before making the request)"
        )
        return JSONResponse({"error": {"message": message}}, status=self.NOTHING_ENQUEUED_STATUS)

    def _dispatch(self, request: RecordedRequest) -> Response:
        with self._lock:
            self._requests.append(request)
        early = self._preflight(request)
        if early is not None:
            return early
        with self._lock:
            if self._queue:
                item: Responder | None = self._queue.popleft()
            else:
                item = self._default
                if item is None:
                    self._unexpected.append(request)
        if item is None:
            return self._nothing_enqueued(request)
        response = item(request) if callable(item) else item
        return self._adapt(request, response)


def match_route(path: str, routes: Sequence[re.Pattern[str]]) -> re.Match[str] | None:
    for route in routes:
        found = route.fullmatch(path)
        if found is not None:
            return found
    return None
