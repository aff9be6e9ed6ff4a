"""The stdio transport to an MCP server, and the gateway's stdin, with a bound on every
message read.

The SDK's reader joins each chunk onto the line read so far and splits the whole again,
so a server that sends one 32 MiB line costs quadratic time and holds all of it before
any size check. This reader keeps the partial line in one buffer, scans only what is new
for the end of the line, and refuses a message past ``max_bytes`` while it is still
arriving: the server is stopped and the session sees the connection end, with the reason
logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MAX_STDERR_LINE",
    "MessageTooLargeError",
    "StderrPipe",
    "bounded_stdin",
    "bounded_stdio_client",
]

logger = logging.getLogger("toolwire.mcp")

#: The largest message read from a stdio server (one JSON-RPC line).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_EXIT_GRACE = 2.0  # seconds a server has to exit once its stdin is closed
_KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL of its process group


class MessageTooLargeError(ValueError):
    """A stdio server sent a message over the limit; the connection was closed."""


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.05)
    return process.returncode is not None


@contextlib.asynccontextmanager
async def bounded_stdio_client(
    params: StdioServerParameters,
    errlog: IO[str],
    *,
    name: str = "",
    max_bytes: int = MAX_MESSAGE_BYTES,
    on_close: Callable[[], None] | None = None,
) -> AsyncIterator[Any]:
    """Start the server and yield the (read, write) streams an ``mcp.Client`` takes.

    The server gets only ``params.env`` over the SDK's short list of safe variables;
    on exit its stdin is closed, then its process group is terminated if it lingers.
    ``on_close`` is called when the server's output ends (it exited, or was refused):
    the connection is over, whatever the session still thinks.
    """
    process = await anyio.open_process(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        scanned = 0  # the buffer holds no newline before this offset
        async with read_writer:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    while True:
                        end = buffer.find(b"\n", scanned)
                        if end < 0:
                            scanned = len(buffer)
                            if scanned > max_bytes:
                                await _refuse(read_writer, name, max_bytes)
                                return
                            break
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        scanned = 0
                        if len(line) > max_bytes:
                            await _refuse(read_writer, name, max_bytes)
                            return
                        if line.strip():
                            await read_writer.send(_parse(line))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                if on_close is not None:
                    on_close()

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session sees the end, not a request hanging

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                if process.stdin is not None:
                    with contextlib.suppress(Exception):
                        await process.stdin.aclose()
                if not await _exited(process, _EXIT_GRACE):
                    with contextlib.suppress(Exception):
                        await terminate_posix_process_tree(process, _KILL_GRACE)
                    await _exited(process, _KILL_GRACE)
                await read_stream.aclose()
                with anyio.move_on_after(_KILL_GRACE), contextlib.suppress(Exception):
                    await process.aclose()  # its pipes and transport, now it has exited
            tg.cancel_scope.cancel()


async def _refuse(writer: Any, name: str, max_bytes: int) -> None:
    error = MessageTooLargeError(
        f"MCP server `{name}` sent a message over {max_bytes:,} bytes; it was refused while "
        f"it arrived and the connection was closed"
    )
    logger.error("%s", error)
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        await writer.send(error)


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        logger.warning("an MCP server sent a line that is not a JSON-RPC message: %s", exc)
        return exc


# -- the gateway's side: this process's stdin, bounded -----------------------------------------


class _BoundedLines:
    """The lines of a binary file, each at most ``max_bytes``: what ``stdio_server`` reads.

    One buffer, only new bytes scanned for the end of the line; a line past the limit ends
    the input (logged), so the session sees its client gone rather than the gateway
    holding an unbounded line.
    """

    def __init__(self, raw: Any, max_bytes: int) -> None:
        self._raw = raw
        self._max = max_bytes

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        buffer = bytearray()
        scanned = 0
        while True:
            chunk = await self._raw.read(65536)
            if not chunk:
                if buffer.strip() and len(buffer) <= self._max:
                    yield buffer.decode("utf-8", "replace")
                return
            buffer += chunk
            while True:
                end = buffer.find(b"\n", scanned)
                if end < 0:
                    scanned = len(buffer)
                    if scanned > self._max:
                        self._refuse()
                        return
                    break
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                scanned = 0
                if len(line) > self._max:
                    self._refuse()
                    return
                if line.strip():
                    yield line.decode("utf-8", "replace")

    def _refuse(self) -> None:
        logger.error(
            "the MCP client sent a message over %s bytes on stdin; it was refused while it "
            "arrived and the connection was closed",
            f"{self._max:,}",
        )


@contextlib.asynccontextmanager
async def bounded_stdin(max_bytes: int = MAX_MESSAGE_BYTES) -> AsyncIterator[Any]:
    """This process's stdin as lines of at most ``max_bytes``, for ``stdio_server(stdin=)``.

    As the SDK's own transport does, fd 0 is pointed at the null device while serving (a
    tool or a child reads EOF, never the protocol) and put back on exit.
    """
    import os

    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    raw = anyio.wrap_file(os.fdopen(private, "rb", buffering=0, closefd=False))
    try:
        yield _BoundedLines(raw, max_bytes)
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)
        # Not closed: a worker thread may still be blocked reading it (the SDK keeps its
        # duplicate open for the same reason).


# -- stderr of stdio servers --------------------------------------------------------------

#: The longest line of a server's stderr (or log message) logged; the rest is cut.
MAX_STDERR_LINE = 8192


class StderrPipe:
    """A pipe for a stdio server's stderr; a thread logs what comes out, line by line."""

    def __init__(self, server: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._log = logging.getLogger(f"toolwire.mcp.{server}")
        threading.Thread(
            target=self._pump, name=f"toolwire-mcp-stderr-{server}", daemon=True
        ).start()

    def _pump(self) -> None:
        with self._reader:
            while True:
                line = self._reader.readline(MAX_STDERR_LINE)
                if not line:
                    return
                self._log.info("%s", line.decode("utf-8", "replace").rstrip())

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.close()
