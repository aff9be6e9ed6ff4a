"""Shared by toolwire-mcp's tests: where the test server is, and what it recorded."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    """Until a server accepts connections on 127.0.0.1:``port`` (or ``timeout`` passes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


@contextlib.contextmanager
def task_statuses(said: list[str]) -> Iterator[None]:
    """Within the block, each status of a task toolwire's client follows is appended to
    ``said`` (as the connection's progress would report it)."""
    from toolwire_mcp.client._tasks import WATCH, TaskWatch

    async def progress(n: float, message: str) -> None:
        said.append(message)

    token = WATCH.set(TaskWatch(lambda: None, progress))
    try:
        yield
    finally:
        WATCH.reset(token)


def calls_in(path: Path) -> list[dict[str, Any]]:
    """Every tools/call the test server received, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env.update(extra)
    return env


def write_policy(tmp_path: Path, text: str) -> Path:
    """The organisation's policy file where ``_env(tmp_path)`` points a gateway; returns
    its directory (a relative audit path lands there)."""
    config = tmp_path / "config" / "toolwire"
    config.mkdir(parents=True)
    (config / "policy.toml").write_text(text)
    return config


_Gateway = tuple[subprocess.Popen[bytes], str, IO[bytes]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_http_gateway(
    tmp_path: Path,
    env: dict[str, str],
    extra: tuple[str, ...] = (),
    port: int | None = None,
    host: str = "127.0.0.1",
) -> _Gateway:
    """``toolwire mcp serve --transport http`` in a subprocess, once it accepts connections:
    the process, its URL and its log file."""
    port = port or free_port()
    log = (tmp_path / "gateway.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolwire",
            "mcp",
            "serve",
            "--transport",
            "http",
            "--port",
            str(port),
            "--host",
            host,
            *(["--token-env", "GW_TOKEN"] if "GW_TOKEN" in env else []),
            *extra,
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError((tmp_path / "gateway.log").read_text())
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://{host}:{port}/mcp", log


def _stop_http_gateway(gateway: _Gateway) -> int:
    """SIGTERM, then SIGKILL after 15 s; the exit status."""
    proc, _, log = gateway
    proc.terminate()
    try:
        code = proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait(15)
    log.close()
    return code
