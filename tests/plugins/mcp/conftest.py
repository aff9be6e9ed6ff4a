"""Fixtures for toolwire-mcp: the test MCP server (the official SDK's own ``Server``) as a
real stdio subprocess and as a real Streamable HTTP server on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("toolwire_mcp")

from _mcp_support import SERVER

from toolwire_mcp import ServerSpec, close_all


@pytest.fixture(autouse=True)
def _close_connections() -> Iterator[None]:
    yield
    close_all()
    from toolwire_mcp.client._client_features import relay_sampling

    relay_sampling(False)  # a gateway built by the test turned it on


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """The file the server appends every tools/call it receives to."""
    return tmp_path / "calls.jsonl"


@pytest.fixture
def stdio_spec(record: Path) -> Callable[..., ServerSpec]:
    def make(name: str = "srv", *, timeout: float = 10.0, **env: str) -> ServerSpec:
        return ServerSpec(
            name,
            command=sys.executable,
            args=(SERVER, "stdio"),
            env={"MCP_RECORD": str(record), **env},
            timeout=timeout,
            connect_timeout=20.0,
        )

    return make


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(record: Path) -> Iterator[Callable[..., str]]:
    """Start the test server over Streamable HTTP; returns its URL."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> str:
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, SERVER, "http", str(port)],
            env={**os.environ, "MCP_RECORD": str(record), **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("the test MCP server exited on start")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the test MCP server did not listen within 30 s")

    yield start
    close_all()
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
