"""A scripted HTTP server on 127.0.0.1 for transport and provider tests.

Each test scripts the replies in order (:class:`Reply`), makes real requests over
real sockets, then checks what the server received (:attr:`ScriptedServer.requests`)::

    with ScriptedServer() as server:
        server.script(json_reply(429, {...}, headers={"retry-after": "2"}), json_reply(200, {}))
        ...
        assert 2 == len(server.requests)

Streaming replies are sent with chunked transfer encoding, one TCP write per chunk
(Nagle off, a short pause between writes), so a chunk boundary can fall anywhere,
including inside a multi-byte UTF-8 character. ``abort=True`` drops the connection
before the final empty chunk, as a server that dies mid-stream would.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = ["Recorded", "Reply", "ScriptedServer", "json_reply", "sse_reply"]


@attrs.frozen
class Reply:
    """One scripted reply.

    ``body`` is sent with a content-length; ``chunks`` (when given) are streamed
    with chunked encoding instead. ``delay`` is slept before the status line.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    chunks: Sequence[bytes] | None = None
    chunk_pause: float = 0.01
    delay: float = 0.0
    abort: bool = False


@attrs.frozen
class Recorded:
    """A request the server received; ``headers`` keys are lower-cased."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def json_reply(status: int, payload: object, headers: Mapping[str, str] | None = None) -> Reply:
    """A reply with a JSON body."""
    return Reply(
        status=status,
        body=json.dumps(payload).encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )


def sse_reply(
    chunks: Sequence[bytes], *, abort: bool = False, pause: float = 0.01, status: int = 200
) -> Reply:
    """A ``text/event-stream`` reply sent as the given chunks."""
    return Reply(
        status=status,
        headers={"content-type": "text/event-stream"},
        chunks=list(chunks),
        chunk_pause=pause,
        abort=abort,
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        reply = owner._take(
            Recorded(
                method=self.command,
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        try:
            self._send(reply)
        except OSError:
            # The client gave up (a timeout test) or the server is stopping.
            self.close_connection = True

    def _send(self, reply: Reply) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.chunks is None:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for chunk in reply.chunks:
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if reply.chunk_pause:
                time.sleep(reply.chunk_pause)
        if reply.abort:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # joined on close, so no socket outlives the test
    block_on_close = True
    owner: ScriptedServer

    def __init__(self, owner: ScriptedServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up is expected in timeout and abort tests

    def drop_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class ScriptedServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 that replies from a script."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one (an empty queue gives a 599)."""
        with self._lock:
            self._replies.extend(replies)

    def _take(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return Reply(status=599, body=b"no scripted reply left for this request")

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.drop_connections()
        self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def split_every(data: bytes, size: int) -> Iterator[bytes]:
    """``data`` in pieces of ``size`` bytes."""
    for start in range(0, len(data), size):
        yield data[start : start + size]
