"""Shared fixtures: two small tools and a toolset holding them (fresh for every test).

Property tests run with no per-example deadline (a loaded CI machine made one fail on
time alone) and derandomized, so a run is the same run every time; the fuzz job
(``TOOLWIRE_FUZZ=1``) is where random exploration happens.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from pydantic import BaseModel, Field

import toolwire as tw

settings.register_profile("toolwire", deadline=None, derandomize=True)
settings.load_profile("toolwire")


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_policy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests run with no policy file from the machine (``~/.config/toolwire``) or the
    repository (its example ``toolwire-policy.toml``): a working directory and a config
    home of their own. A test that wants a policy says so (TOOLWIRE_POLICY, a file)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        # The CLI's conversation log and history, and toolwire-mcp's tool-list cache:
        # never the machine's.
        mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        for name in ("TOOLWIRE_POLICY", "TOOLWIRE_CONFIG", "TOOLWIRE_LOGS_PATH"):
            mp.delenv(name, raising=False)
        for name in ("TOOLWIRE_PROVIDER", "TOOLWIRE_MODEL", "TOOLWIRE_MCP_CACHE"):
            mp.delenv(name, raising=False)
        yield


@pytest.fixture(autouse=True)
def _no_leftover_profiles() -> Iterator[None]:
    """A model profile a test registers is gone after it (the registry is the process's)."""
    yield
    from toolwire import _profiles

    if _profiles._REGISTERED:
        _profiles._reset_for_tests()


@pytest.fixture
def weather() -> tw.Tool[BaseModel, str]:
    @tw.tool_fn
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather.

        Args:
            city: The city name.
            days: How many days.
        """
        return f"sunny in {city} for {days} days"

    return get_weather


@pytest.fixture
def search() -> type[BaseModel]:
    @tw.tool_input(name="search_docs", output=list[str])
    class SearchDocs(BaseModel):
        """Search the docs."""

        query: str = Field(description="What to look for.")
        limit: int = 3

    return SearchDocs


@pytest.fixture
def toolset(weather: tw.Tool[BaseModel, str], search: type[BaseModel]) -> tw.Toolset:
    return tw.Toolset("app", [weather, search])


@pytest.fixture
def session() -> tw.Session:
    return tw.Session("You are terse.", id="s1")


def pytest_collection_finish(session: pytest.Session) -> None:
    """No test module makes the default plugin host at import: it would be made before the
    tests' own working directory and config home are set, and load the repository's
    example policy for the whole process."""
    import sys

    host = sys.modules.get("toolwire._plugins.host")
    made = getattr(host, "_DEFAULT", None)
    assert made is None, "a test module made the default plugin host at import"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1, persistence off, for the session (each test uses
    keys of its own)."""
    pytest.importorskip("redis")
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing under CI (.ci/run installs it from Debian)")
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    where = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(where), "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server (Debian's) on 127.0.0.1 for the session, in a cluster of
    its own (``bench._postgres``), with the database ``toolwire`` (each test uses a
    database of its own through :func:`fresh_database`)."""
    pytest.importorskip("psycopg")
    from _by_path import load

    # The benchmark's own helper, by its path (``bench`` here is tests/bench).
    helper = load("toolwire_bench_postgres", Path("bench/_postgres.py"))
    available, postgres = helper.available, helper.postgres
    if not available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is missing under CI (.ci/run installs it from Debian)")
        pytest.skip("PostgreSQL (initdb, pg_ctl) is not installed")
    with postgres() as url:
        yield url


@pytest.fixture
def fresh_database(postgres_url: str, request: pytest.FixtureRequest) -> str:
    """A database of this test's own on the session's PostgreSQL server."""
    import psycopg

    name = "t_" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:20]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + "/" + name
