"""toolwire-mcp as an installed plugin: configured servers in every application, the
organisation's policy in front of them, and the ``toolwire`` command, in real subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _mcp_support import SERVER, calls_in


@pytest.fixture
def here(tmp_path: Path) -> Path:
    work = tmp_path / "project"
    work.mkdir()
    return work


def _configure(here: Path, record: Path, **servers: Any) -> Path:
    # The user's own config (a project's ./.toolwire/mcp.json starts nothing untrusted).
    path = here.parent / "config" / "toolwire" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def _server(record: Path, **env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [SERVER, "stdio"],
        "env": {"MCP_RECORD": str(record), **env},
        "timeout": 20,
    }


def _run(here: Path, *args: str, **switches: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.pop("PYTHONPATH", None)
    env["XDG_CONFIG_HOME"] = str(here.parent / "config")
    env.update(switches)
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        cwd=here,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _policy(here: Path, text: str) -> Path:
    path = here.parent / "config" / "toolwire" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_configured_servers_appear_in_every_application(here: Path, record: Path) -> None:
    _configure(here, record, srv=_server(record))
    done = _run(here, "tools", "--json")
    assert 0 == done.returncode, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert {"srv_echo", "srv_add", "srv_files_read"} <= set(names)


def test_plugins_lists_each_server_with_its_status_and_tool_count(here: Path, record: Path) -> None:
    _configure(
        here,
        record,
        srv=_server(record),
        broken={"command": "/nonexistent/server", "connectTimeout": 5},
    )
    done = _run(here, "plugins", "--json")
    assert 0 == done.returncode, done.stderr
    by_name = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}
    line = by_name["mcp"]["plugin_status"]
    assert line.startswith("srv ok (23 tools, stdio); broken failed (stdio): could not connect")


def test_a_malformed_entry_skips_that_server_naming_the_file_and_key(
    here: Path, record: Path
) -> None:
    # #25.12: one typo in one server's entry used to remove every configured server.
    path = _configure(here, record, srv=_server(record), x={"command": "a", "args": "b"})
    done = _run(here, "plugins", "--json")
    by_name = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}
    assert "loaded" == by_name["mcp"]["status"]
    assert f"x skipped: {path}: mcpServers.x.args must be a list" in by_name["mcp"]["plugin_status"]
    tools = _run(here, "tools", "--json")
    assert "mcpServers.x.args must be a list of strings" in tools.stderr
    assert "srv_echo" in [t["name"] for t in json.loads(tools.stdout)["tools"]]


def test_the_policy_stops_an_mcp_call_before_it_reaches_the_server(
    here: Path, record: Path
) -> None:
    pytest.importorskip("toolwire_policy", reason="needs the toolwire-policy plugin installed")
    _configure(here, record, srv=_server(record))
    _policy(here, 'deny = ["srv_delete_all"]\n')
    done = _run(here, "call", "srv_delete_all", "{}", "--approve")
    assert 1 == done.returncode
    assert "rejected by toolwire: tool `srv_delete_all` is not available" in done.stdout
    assert calls_in(record) == []
    allowed = _run(here, "call", "srv_echo", '{"text": "hi"}')
    assert 0 == allowed.returncode, allowed.stdout + allowed.stderr
    assert "srv_echo: hi" not in allowed.stdout  # the prefix is toolwire's, not the server's
    assert "echo: hi" in allowed.stdout
    assert [c["name"] for c in calls_in(record)] == ["echo"]


def test_an_unannotated_mcp_tool_needs_approval(here: Path, record: Path) -> None:
    _configure(here, record, srv=_server(record))
    denied = _run(here, "call", "srv_delete_all", "{}")
    assert 1 == denied.returncode
    assert "`srv_delete_all` is destructive" in denied.stdout
    assert calls_in(record) == []
    approved = _run(here, "call", "srv_delete_all", "{}", "--approve")
    assert 0 == approved.returncode, approved.stdout
    assert [c["name"] for c in calls_in(record)] == ["delete_all"]


def test_the_agent_loop_calls_mcp_tools_with_the_offline_provider(here: Path, record: Path) -> None:
    _configure(here, record, srv=_server(record))
    done = _run(here, "chat", "srv echo 'hello there'")
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "> srv_echo" in done.stdout
    assert "echo: hello there" in done.stdout
    assert [c["name"] for c in calls_in(record)] == ["echo"]


def test_servers_whose_names_mangle_alike_lose_only_the_colliding_tools(
    here: Path, record: Path
) -> None:
    # #25.12: one server's tool name colliding with another's after mangling removed every
    # configured server.
    _configure(here, record, **{"a.b": _server(record), "a_b": _server(record)})
    done = _run(here, "tools", "--json")
    assert 0 == done.returncode, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert 1 == names.count("a_b_echo")  # one server's, the other's left out
    assert "is `a_b_echo` once mounted, as a tool of server `a.b` is: left out" in done.stderr


def test_toolwire_call_shows_an_mcp_servers_progress(here: Path, record: Path) -> None:
    _configure(here, record, srv=_server(record))
    done = _run(here, "call", "srv_slow", '{"seconds": 0.4, "every": 0.2}')
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "worked" in done.stdout
    assert "[srv] slow: 1/2 step 1\n[srv] slow: 2/2 step 2\n" in done.stderr


def test_a_policy_decides_reads_of_an_mcp_servers_resources(here: Path, record: Path) -> None:
    pytest.importorskip("toolwire_policy", reason="needs the toolwire-policy plugin installed")
    _configure(here, record, srv=_server(record, MCP_RESOURCES="1"))
    _policy(here, 'deny = ["srv_read_resource"]\n')
    done = _run(here, "call", "srv_read_resource", '{"uri": "note://readme"}')
    assert 1 == done.returncode
    assert "not available" in done.stdout
    assert [] == calls_in(record)


# -- start-up: cached tool lists, servers started together --------------------------------


def _counted(record: Path, starts: Path, **env: str) -> dict[str, Any]:
    """A server that appends a line to ``starts`` each time it is started."""
    script = f'echo start >> "{starts}"; exec "{sys.executable}" "{SERVER}" stdio'
    return {
        "command": "sh",
        "args": ["-c", script],
        "env": {"MCP_RECORD": str(record), **env},
        "timeout": 20,
    }


def _starts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _cache_entries(here: Path) -> list[Path]:
    return sorted((here.parent / "cache" / "toolwire" / "mcp-tools").glob("*.json"))


def _cached_run(here: Path, *args: str, **switches: str) -> subprocess.CompletedProcess[str]:
    return _run(here, *args, XDG_CACHE_HOME=str(here.parent / "cache"), **switches)


def test_a_cached_tool_list_starts_no_server_until_a_call(here: Path, record: Path) -> None:
    starts = here.parent / "starts"
    # The server takes a moment to list its tools: the one-shot call below is over before
    # the list it reads at connect arrives, and the process waits for it at exit.
    _configure(here, record, srv=_counted(record, starts, MCP_LIST_DELAY="0.5"))
    first = _cached_run(here, "tools", "--json")
    assert 0 == first.returncode, first.stderr
    names = sorted(t["name"] for t in json.loads(first.stdout)["tools"])
    assert 1 == _starts(starts)
    (entry,) = _cache_entries(here)
    assert 0o600 == stat.S_IMODE(entry.stat().st_mode)
    assert 0o700 == stat.S_IMODE(entry.parent.stat().st_mode)

    # Listing again, and the plugin's status, start nothing.
    again = _cached_run(here, "tools", "--json")
    assert names == sorted(t["name"] for t in json.loads(again.stdout)["tools"])
    status = _cached_run(here, "plugins", "--json")
    line = {p["name"]: p for p in json.loads(status.stdout)["plugins"]}["mcp"]["plugin_status"]
    assert "srv ok (23 tools, stdio); tools from the cache; starts on first use" == line
    assert 1 == _starts(starts)

    # The first call starts it; the server's own list is read again and cached.
    written = json.loads(entry.read_text())["written"]
    called = _cached_run(here, "call", "srv_echo", '{"text": "hi"}')
    assert 0 == called.returncode, called.stdout + called.stderr
    assert "echo: hi" in called.stdout
    assert 2 == _starts(starts)
    assert json.loads(entry.read_text())["written"] > written

    # Off: every start lists afresh.
    _cached_run(here, "tools", "--json", TOOLWIRE_MCP_CACHE="0")
    assert 3 == _starts(starts)


def test_an_upgraded_or_damaged_cache_entry_lists_afresh(here: Path, record: Path) -> None:
    starts = here.parent / "starts"
    server = here.parent / "server.py"  # the installed server: it records each start
    server.write_text(
        "import runpy, sys\n"
        f"open({str(starts)!r}, 'a').write('start\\n')\n"
        f"sys.argv[0] = {SERVER!r}\n"
        f"runpy.run_path({SERVER!r}, run_name='__main__')\n"
    )
    entry = {"command": sys.executable, "args": [str(server), "stdio"], "timeout": 20}
    _configure(here, record, srv={**entry, "env": {"MCP_RECORD": str(record)}})
    _cached_run(here, "tools", "--json")
    assert 1 == _starts(starts)
    # The command's files are part of the key: an upgraded server lists afresh...
    server.write_text(server.read_text() + "\n# 2.0\n")
    _cached_run(here, "tools", "--json")
    assert 2 == _starts(starts)
    # ...and only the new entry is used, not the old one.
    _cached_run(here, "tools", "--json")
    assert 2 == _starts(starts)
    # A damaged entry is a miss, removed and written again.
    for damaged in _cache_entries(here):
        damaged.write_text('{"format": "toolwire.mcp-tools/1", "written": 1e18, "tools": [')
    done = _cached_run(here, "tools", "--json")
    assert 0 == done.returncode, done.stderr
    assert "srv_echo" in done.stdout
    assert 3 == _starts(starts)
    whole = []  # the entry in use is written again; the old version's stays as it was
    for entry in _cache_entries(here):
        with contextlib.suppress(ValueError):
            whole.append(json.loads(entry.read_text())["server"])
    assert ["srv"] == whole


def test_servers_are_started_together(here: Path, record: Path) -> None:
    # Each server waits until all four have been started before it starts; one at a time,
    # the first would wait past its connect timeout and fail.
    gate = here.parent / "gate"
    gate.mkdir()
    servers = {}
    for name in ("a", "b", "c", "d"):
        wait = (
            f'touch "{gate}/{name}"; i=0; while [ "$(ls "{gate}" | wc -l)" -lt 4 ] '
            f"&& [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; "
            f'exec "{sys.executable}" "{SERVER}" stdio'
        )
        servers[name] = {
            "command": "sh",
            "args": ["-c", wait],
            "env": {"MCP_RECORD": str(record)},
            "connectTimeout": 12,
        }
    _configure(here, record, **servers)
    done = _cached_run(here, "plugins", "--json")
    line = {p["name"]: p for p in json.loads(done.stdout)["plugins"]}["mcp"]["plugin_status"]
    assert "a ok (23 tools, stdio); b ok (23 tools, stdio); c ok (23 tools, stdio); d ok" in line


def test_a_cache_entry_others_can_write_is_not_used(here: Path, record: Path) -> None:
    # Reproducer: a cached list says what each tool is (its annotations decide approval);
    # an entry another user could write is ignored and the server is listed afresh.
    starts = here.parent / "starts"
    _configure(here, record, srv=_counted(record, starts))
    _cached_run(here, "tools", "--json")
    (entry,) = _cache_entries(here)
    entry.chmod(0o666)
    done = _cached_run(here, "tools", "--json")
    assert 0 == done.returncode, done.stderr
    assert 2 == _starts(starts)
    assert "its cached tool list is not used" in done.stderr
    assert "open to others" in done.stderr


def test_no_server_starts_once_the_process_is_exiting(record: Path, tmp_path: Path) -> None:
    # Reproducer (CI): a one-shot command's refresh of a cached list, still running at
    # exit, found its connection closed by close_all and started the server again.
    from toolwire_mcp import ServerSpec
    from toolwire_mcp.client._connection import _EXITING, Connection, MCPConnectError

    starts = tmp_path / "starts"
    entry = _counted(record, starts)
    conn = Connection(ServerSpec("late", command=entry["command"], args=entry["args"]))
    _EXITING[0] = True
    try:
        with pytest.raises(MCPConnectError, match="the process is exiting"):
            conn.list_tools_sync()
    finally:
        _EXITING[0] = False
    assert 0 == _starts(starts)


def test_toolwire_call_follows_a_task_and_shows_its_status(here: Path, record: Path) -> None:
    # #44: a tool a 2025-11-25 server runs only as a task (server-everything's
    # simulate-research-query was left out): called, each status printed as it comes.
    tasks = str(Path(SERVER).with_name("tasks_server.py"))
    _configure(
        here,
        record,
        jobs={"command": sys.executable, "args": [tasks, "stdio"], "protocol": "legacy",
              "env": {"MCP_RECORD": str(record)}, "timeout": 20},
    )  # fmt: skip
    done = _run(here, "call", "jobs_research", '{"topic": "owls"}', "--approve")
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "report on owls" in done.stdout
    assert ": working: Gathering sources" in done.stderr
    assert "[jobs] research: " in done.stderr
