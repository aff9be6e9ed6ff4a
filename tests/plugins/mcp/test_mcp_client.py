"""toolwire-mcp against the official SDK's server, in real subprocesses and real sockets."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from _mcp_support import SERVER, calls_in

import toolwire as tw
from toolwire_mcp import (
    ConfigError,
    MCPConnectError,
    ServerSpec,
    close_all,
    connected,
    load_config,
    mcp_toolset,
    metadata_for,
)

LONG = "a.very.long.tool.name." + "x" * 80


def _run(toolset: tw.Toolset, name: str, arguments: dict[str, Any]) -> tw.ToolResult:
    executor = tw.Executor(tools=toolset, plugins=False, approval=lambda request: tw.Allow())
    return executor.execute(tw.ToolCall("c1", name, json.dumps(arguments)))


def _wait(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# -- listing: names, schemas, metadata ------------------------------------------------------


def test_a_stdio_server_is_a_toolset_with_provider_safe_names(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    names = [t.name for t in ts.tools()]
    assert names[:9] == [
        "echo",
        "add",
        "bad_sum",
        "fail",
        "delete_all",
        "media",
        "media_file",
        "hang",
        "die",
    ]
    # Dots become `_`; the second name that would meet gets a hash of its exact MCP name.
    assert "files_read" in names
    clash = [n for n in names if n.startswith("files_read_")]
    assert len(clash) == 1
    assert len(clash[0]) == len("files_read_") + 8
    long = [n for n in names if n.startswith("a_very_long")]
    assert len(long) == 1
    assert len(long[0]) <= 64
    for name in names:
        assert tw.adapters.wire_name(name) == name


def test_calls_go_back_to_the_exact_mcp_name(stdio_spec: Any, record: Path) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    names = [t.name for t in ts.tools()]
    clash = next(n for n in names if n.startswith("files_read_"))
    long = next(n for n in names if n.startswith("a_very_long"))
    for name in ("files_read", clash, long):
        assert not _run(ts, name, {}).is_error
    assert [c["name"] for c in calls_in(record)] == ["files.read", "files_read", LONG]


def test_schemas_and_annotations_become_the_tool_definition(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    echo = ts.from_name("echo")
    tool = next(t for t in ts.tools() if t.name == "echo")
    add = next(t for t in ts.tools() if t.name == "add")
    assert echo is not None
    assert tool.input_schema["required"] == ["text"]
    assert tool.metadata.effect is tw.ToolEffect.READ_ONLY
    assert tool.metadata.capabilities == frozenset()  # openWorldHint false
    assert add.output_schema == {
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    }
    bare = next(t for t in ts.tools() if t.name == "delete_all")
    assert bare.metadata.effect is tw.ToolEffect.DESTRUCTIVE
    assert bare.metadata.idempotent is False
    assert bare.metadata.capabilities == frozenset({tw.Capability.NETWORK})


def test_annotations_can_be_ignored_per_server(stdio_spec: Any) -> None:
    spec = stdio_spec()
    ts = mcp_toolset("srv", spec, annotations="ignore")
    assert {t.metadata.effect for t in ts.tools()} == {tw.ToolEffect.DESTRUCTIVE}


def test_metadata_defaults_follow_the_spec() -> None:
    from mcp_types import ToolAnnotations

    none = metadata_for(None, trust=True, timeout=10)
    assert (none.effect, none.idempotent) == (tw.ToolEffect.DESTRUCTIVE, False)
    soft = metadata_for(
        ToolAnnotations(destructive_hint=False, idempotent_hint=True), trust=True, timeout=10
    )
    assert (soft.effect, soft.idempotent) == (tw.ToolEffect.MUTATING, True)
    lying = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    assert metadata_for(lying, trust=False, timeout=10).effect is tw.ToolEffect.DESTRUCTIVE
    # The call's body is toolwire's own and ends when cancelled: run in the caller's task,
    # with the connection's deadline first and the executor's 5 s later as a backstop.
    assert (True, 15.0) == (none.honours_cancellation, none.timeout)


# -- calls: results, errors, faults -----------------------------------------------------------


def test_results_and_error_results(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    assert _run(ts, "echo", {"text": "hi"}).content == "echo: hi"
    assert json.loads(_run(ts, "add", {"a": 2, "b": 3}).content) == {"sum": 5}
    failed = _run(ts, "fail", {})
    assert failed.is_error
    assert "the disk is on fire" in failed.content
    media = _run(ts, "media", {})
    assert media.content == (
        "a picture:\n\n[image: image/png, 5 bytes]\n\n"
        "[resource: readme <file:///r.md> (text/markdown)]\n\n"
        "[file: file:///notes.txt, text/plain, 9 bytes]\nthe notes"
    )
    # The media is carried as parts, for a model that can see it (#27).
    assert [type(p).__name__ for p in media.parts] == ["Text", "Image", "ResourceLink", "File"]
    assert media.parts[3].text() == "the notes"


def test_invalid_arguments_never_reach_the_server(stdio_spec: Any, record: Path) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    result = _run(ts, "echo", {"text": 5})
    assert result.is_error
    assert calls_in(record) == []


def test_structured_content_that_breaks_its_schema_is_an_error_result(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    result = _run(ts, "bad_sum", {})
    assert result.is_error
    assert "'many' is not of type 'integer'" in result.content


def test_a_hanging_tool_times_out_and_the_connection_stays(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec(timeout=1.0))
    started = time.monotonic()
    result = _run(ts, "hang", {})
    assert result.is_error
    assert "did not answer the call to `hang` within 1 s" in result.content
    assert time.monotonic() - started < 10
    assert _run(ts, "echo", {"text": "still here"}).content == "echo: still here"


def test_a_server_that_dies_mid_call_gives_an_error_and_reconnects(
    stdio_spec: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    ts = mcp_toolset("srv", stdio_spec())
    result = _run(ts, "die", {})
    assert result.is_error
    assert "reconnected on the next call" in result.content
    assert _run(ts, "echo", {"text": "again"}).content == "echo: again"
    # The server's stderr went to its logger.
    assert _wait(lambda: "dying now" in caplog.text)


def test_a_server_that_never_answers_initialize_fails_in_time() -> None:
    spec = ServerSpec("mute", command=sys.executable, args=(SERVER, "silent"), connect_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(MCPConnectError, match=r"did not start and answer `initialize` within 1 s"):
        mcp_toolset("mute", spec)
    assert time.monotonic() - started < 15


def test_a_command_that_does_not_exist_is_a_clear_error() -> None:
    spec = ServerSpec("nope", command="/nonexistent/mcp-server", connect_timeout=5.0)
    with pytest.raises(MCPConnectError, match="could not connect to MCP server `nope`"):
        mcp_toolset("nope", spec)


def test_500_tools_over_several_pages(stdio_spec: Any) -> None:
    ts = mcp_toolset("big", stdio_spec(MCP_EXTRA_TOOLS="500", MCP_PAGE_SIZE="37"))
    names = [t.name for t in ts.tools()]
    assert len(names) == 523
    assert names[-1] == "extra_499"


def test_the_same_tool_name_on_two_servers_under_prefixes(stdio_spec: Any, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    one = mcp_toolset("one", stdio_spec())
    two = mcp_toolset("two", stdio_spec("two", MCP_RECORD=str(other)))
    app = tw.Toolset("app").add(one, prefix="one_").add(two, prefix="two_")
    assert _run(app, "two_echo", {"text": "x"}).content == "echo: x"
    assert [c["name"] for c in calls_in(other)] == ["echo"]


def test_one_connection_per_server_is_shared(stdio_spec: Any, tmp_path: Path) -> None:
    from toolwire_mcp.client._registry import connection_for

    spec = stdio_spec()
    first = mcp_toolset("srv", spec)
    second = mcp_toolset("srv", spec)
    assert _run(first, "echo", {"text": "a"}).content == "echo: a"
    assert _run(second, "echo", {"text": "b"}).content == "echo: b"
    assert connection_for(spec).connects == 1


def test_list_changed_refreshes_the_toolset(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    assert "grown" not in [t.name for t in ts.tools()]
    assert _run(ts, "grow", {}).content == "grown"
    assert _wait(lambda: "grown" in [t.name for t in ts.tools()])


def test_closing_ends_the_server_process(stdio_spec: Any, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    mcp_toolset("srv", stdio_spec(MCP_PIDFILE=str(pidfile)))
    pid = int(pidfile.read_text())
    assert _alive(pid)
    close_all()
    assert _wait(lambda: not _alive(pid))


def test_no_server_outlives_the_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = (
        "import sys; from toolwire_mcp import ServerSpec, mcp_toolset;"
        f"spec = ServerSpec('s', command=sys.executable, args=({SERVER!r}, 'stdio'),"
        f" env={{'MCP_PIDFILE': {str(pidfile)!r}}});"
        "print(len(mcp_toolset('s', spec)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert int(out.stdout) > 10
    pid = int(pidfile.read_text())
    assert _wait(lambda: not _alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


# -- connected(): the caller's own loop -------------------------------------------------------


def _aexecutor(ts: tw.Toolset) -> tw.Executor:
    return tw.Executor(tools=ts, plugins=False, approval=lambda request: tw.Allow())


def test_connected_serves_calls_on_the_callers_loop_and_closes_at_the_end(
    stdio_spec: Any, tmp_path: Path
) -> None:
    from toolwire_mcp.client._registry import connection_for

    pidfile = tmp_path / "pid"
    spec = stdio_spec(MCP_PIDFILE=str(pidfile))
    ts = mcp_toolset("srv", spec)
    listed_by = int(pidfile.read_text())  # the loop thread's connection listed the tools
    conn = connection_for(spec)
    executor = _aexecutor(ts)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        async with connected():
            assert not conn.is_open  # one connection per server: the loop thread's is closed
            result = await executor.aexecute(tw.ToolCall("c1", "echo", '{"text": "a"}'))
            assert result.content == "echo: a"
            local = conn._local
            assert local is not None
            assert local._runner is not None
            assert local._runner.get_loop() is loop  # opened here, not on the loop thread
            # A blocking call from another thread hops to this loop: the same connection.
            other = await asyncio.to_thread(conn.call_sync, "echo", {"text": "b"})
            assert other.content[0].text == "echo: b"  # type: ignore[union-attr]
            assert local.connects == 1
            assert not conn.is_open
            return int(pidfile.read_text())

    served_by = asyncio.run(main())
    assert served_by != listed_by
    assert _wait(lambda: not _alive(served_by))  # the block's end closed its server
    assert not _alive(listed_by)
    assert conn._local is None
    assert _run(ts, "echo", {"text": "c"}).content == "echo: c"  # the loop thread again
    assert conn.is_open


def test_connected_blocks_nest_and_name_their_servers(stdio_spec: Any) -> None:
    from toolwire_mcp.client._registry import connection_for

    spec = stdio_spec()
    ts = mcp_toolset("srv", spec)
    conn = connection_for(spec)
    executor = _aexecutor(ts)

    async def main() -> None:
        with pytest.raises(tw.UsageError, match=r"no MCP server named 'no-such'; known: .*srv"):
            async with connected("no-such"):
                pass
        async with connected("srv"):
            outer = conn._local
            async with connected():  # the same loop: the outer block keeps it
                assert conn._local is outer
                result = await executor.aexecute(tw.ToolCall("c1", "echo", '{"text": "x"}'))
                assert result.content == "echo: x"
            assert conn._local is outer

            def elsewhere() -> None:
                async def held() -> None:
                    async with connected("srv"):
                        pass

                asyncio.run(held())

            with pytest.raises(tw.UsageError, match="held by a connected"):
                await asyncio.to_thread(elsewhere)
            # A blocking call on this loop's own thread cannot wait for this loop: the loop
            # thread serves it.
            assert [t.name for t in conn.list_tools_sync()][:1] == ["echo"]
        assert conn._local is None

    asyncio.run(main())


def test_list_changed_inside_a_connected_block_refreshes_the_toolset(stdio_spec: Any) -> None:
    ts = mcp_toolset("srv", stdio_spec())
    executor = _aexecutor(ts)

    async def main() -> None:
        async with connected():
            result = await executor.aexecute(tw.ToolCall("c1", "grow", "{}"))
            assert result.content == "grown"
            for _ in range(300):
                if "grown" in [t.name for t in ts.tools()]:
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("list_changed did not refresh the toolset")

    asyncio.run(main())


# -- Streamable HTTP ---------------------------------------------------------------------------


def test_a_streamable_http_server(http_server: Any) -> None:
    url = http_server()
    ts = mcp_toolset("web", url)
    assert _run(ts, "echo", {"text": "over http"}).content == "echo: over http"


def test_a_bearer_token_from_the_environment(
    http_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = http_server(MCP_REQUIRE_TOKEN="s3cret-token")
    monkeypatch.setenv("WEB_TOKEN", "s3cret-token")
    ts = mcp_toolset("web", url, bearer_token_env="WEB_TOKEN")
    assert _run(ts, "echo", {"text": "authorised"}).content == "echo: authorised"


def test_a_missing_or_wrong_token_is_an_error_that_never_shows_it(
    http_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = http_server(MCP_REQUIRE_TOKEN="s3cret-token")
    monkeypatch.delenv("WEB_TOKEN2", raising=False)
    with pytest.raises(MCPConnectError, match=r"WEB_TOKEN2 .* is not set"):
        mcp_toolset("web2", url, bearer_token_env="WEB_TOKEN2", connect_timeout=10)
    monkeypatch.setenv("WEB_TOKEN3", "wrong-token-value")
    with pytest.raises(MCPConnectError) as info:
        mcp_toolset("web3", url, bearer_token_env="WEB_TOKEN3", connect_timeout=10)
    assert "wrong-token-value" not in str(info.value)
    spec = ServerSpec("h", url=url, headers={"X-Key": "hidden-value"})
    assert "hidden-value" not in repr(spec)


# -- configuration -------------------------------------------------------------------------


def _config(tmp_path: Path, servers: Any, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(
        json.dumps({"mcpServers": servers}) if not isinstance(servers, str) else servers
    )
    return path


def test_the_mcp_servers_file(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        {
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}},
            "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}, "timeout": 5},
            "off": {"command": "x", "disabled": True},
        },
    )
    specs = load_config([path])
    assert list(specs) == ["git", "web"]
    assert specs["git"].args == ("mcp-server-git",)
    assert specs["web"].transport == "http"
    assert specs["web"].timeout == 5.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"other": 1}', "no `mcpServers` object"),
        ('{"mcpServers": []}', "mcpServers must be an object"),
        ('{"mcpServers": {"a": 5}}', "mcpServers.a must be an object, got int"),
        ('{"mcpServers": {"a": {}}}', "exactly one of `command`"),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}', "exactly one of"),
        (
            '{"mcpServers": {"a": {"command": "x", "args": "y"}}}',
            "mcpServers.a.args must be a list",
        ),
        ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "mcpServers.a.env must be"),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "must start with http"),
        ('{"mcpServers": {"a": {"command": "x", "timeout": 0}}}', "mcpServers.a.timeout must be"),
        ('{"mcpServers": {"a": {"command": "x", "comand": "y"}}}', "unknown key `comand`"),
        ('{"mcpServers": {"a": {"command": "x", "type": "sse"}}}', "mcpServers.a.type must be"),
    ],
)
def test_a_malformed_config_names_the_file_and_the_key(
    tmp_path: Path, content: str, message: str
) -> None:
    path = _config(tmp_path, content)
    with pytest.raises(ConfigError, match=message) as info:
        load_config([path])
    assert str(path) in str(info.value)


def test_a_later_file_replaces_a_server_of_the_same_name(tmp_path: Path) -> None:
    a = _config(tmp_path, {"s": {"command": "a"}, "t": {"command": "t"}}, "a.json")
    b = _config(tmp_path, {"s": {"command": "b"}}, "b.json")
    specs = load_config([a, tmp_path / "missing.json", b])
    assert (specs["s"].command, specs["t"].command) == ("b", "t")


def test_a_stdio_server_gets_only_its_env_not_our_secrets(
    stdio_spec: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ours-not-theirs")
    ts = mcp_toolset("srv", stdio_spec(GIVEN="yes"))
    assert _run(ts, "getenv", {"name": "OPENAI_API_KEY"}).content == "<unset>"
    assert _run(ts, "getenv", {"name": "GIVEN"}).content == "yes"
    assert _run(ts, "getenv", {"name": "PATH"}).content != "<unset>"


def test_a_server_that_died_while_idle_is_reconnected_before_the_next_call(
    stdio_spec: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    import toolwire_mcp.client._connection as connection

    monkeypatch.setattr(connection, "_IDLE_CHECK", 0.2)
    pidfile = tmp_path / "pid"
    ts = mcp_toolset("srv", stdio_spec(MCP_PIDFILE=str(pidfile)))
    assert _run(ts, "echo", {"text": "a"}).content == "echo: a"
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    time.sleep(0.5)  # idle, and the server is gone
    assert _run(ts, "echo", {"text": "b"}).content == "echo: b"  # no error in between


def test_a_message_over_the_limit_is_refused_while_it_arrives(stdio_spec: Any) -> None:
    # Attack (#25.12): a 32 MiB answer was read whole before the size cap (the SDK's stdio
    # reader rebuilt the line on every chunk: quadratic time, all of it in memory).
    import tracemalloc

    from toolwire_mcp.client._stdio import MAX_MESSAGE_BYTES

    ts = mcp_toolset("srv", stdio_spec())
    tracemalloc.start()
    try:
        result = _run(ts, "huge", {"mib": 32})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.is_error
    assert peak < MAX_MESSAGE_BYTES + (8 << 20)  # the limit and a chunk, not 32 MiB
    # The connection was closed, and the next call starts the server again.
    assert "echo: hi" == _run(ts, "echo", {"text": "hi"}).content


def test_an_oversized_answer_over_http_is_cut_without_being_read_whole(
    http_server: Callable[..., str],
) -> None:
    # The same attack over Streamable HTTP: the answer (an SSE event, or a JSON body) was
    # read whole by httpx and the SDK, whatever its size.
    import tracemalloc

    from toolwire_mcp.client._bounded_http import MAX_MESSAGE

    ts = mcp_toolset("big", http_server(), timeout=60)
    tracemalloc.start()
    try:
        result = _run(ts, "huge", {"mib": 40})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.is_error
    assert peak < 3 * MAX_MESSAGE  # the limit (and its parts being joined), not 40 MiB
    assert "echo: hi" == _run(ts, "echo", {"text": "hi"}).content


async def test_the_http_bound_cuts_a_long_event_and_a_long_body() -> None:
    from toolwire_mcp.client._bounded_http import BoundedTransport, MessageTooLarge

    def serve(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/events":
            ok = b"data: " + b"x" * 60 + b"\n\n"
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream"},
                stream=_Chunks([ok, ok, ok, b"data: " + b"y" * 200]),  # the last: too long
            )
        if request.url.path == "/announced":
            return httpx2.Response(200, headers={"content-length": "500"}, content=b"z" * 500)
        return httpx2.Response(200, stream=_Chunks([b"{" + b"a" * 150]))

    bounded = BoundedTransport(limit=100, inner=httpx2.MockTransport(serve))
    async with httpx2.AsyncClient(transport=bounded) as http:
        got: list[bytes] = []

        async def read_events() -> None:
            async with http.stream("GET", "http://mcp.test/events") as events:
                async for chunk in events.aiter_raw():
                    got.append(chunk)

        with pytest.raises(MessageTooLarge, match="over 100 bytes"):
            await read_events()
        assert b"".join(got).count(b"\n\n") == 3  # the events within the limit went through
        with pytest.raises(MessageTooLarge, match="announced a 500-byte message"):
            await http.get("http://mcp.test/announced")
        with pytest.raises(MessageTooLarge):
            await http.get("http://mcp.test/body")


async def test_the_http_bound_counts_a_compressed_message_as_it_decodes() -> None:
    # Attack (#40.3): compressed bodies were decoded by the client after the transport's
    # count, so a small zstd or gzip body could grow past the limit in one step.
    import gzip
    import tracemalloc
    import zlib

    from toolwire_mcp.client._bounded_http import BoundedTransport, MessageTooLarge

    seen: list[str] = []
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join([*(z.compress(bytes(1 << 20)) for _ in range(64)), z.flush()])  # 64 MiB

    def serve(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers["accept-encoding"])
        if request.url.path == "/zstd":
            headers = {"content-encoding": "zstd", "content-type": "application/json"}
            return httpx2.Response(200, headers=headers, stream=_Chunks([b"(a zstd frame)"]))
        if request.url.path == "/ok":
            body = gzip.compress(b'{"jsonrpc": "2.0"}')
            return httpx2.Response(200, headers={"content-encoding": "gzip"}, content=body)
        return httpx2.Response(200, headers={"content-encoding": "gzip"}, stream=_Chunks([bomb]))

    bounded = BoundedTransport(limit=1 << 20, inner=httpx2.MockTransport(serve))
    async with httpx2.AsyncClient(transport=bounded) as http:
        assert b'{"jsonrpc": "2.0"}' == (await http.get("http://mcp.test/ok")).content
        with pytest.raises(httpx2.DecodingError, match="encoded as zstd, which was not asked"):
            await http.get("http://mcp.test/zstd")
        tracemalloc.start()
        try:
            with pytest.raises(MessageTooLarge, match="over 1,048,576 bytes"):
                await http.get("http://mcp.test/bomb")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (["gzip, deflate"] * 3, True) == (seen, peak < 8 << 20)


class _Chunks(httpx2.AsyncByteStream):
    """A response body arriving in these parts."""

    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    async def __aiter__(self) -> Any:
        for part in self._parts:
            yield part


def test_an_idle_2026_server_is_not_restarted_and_a_long_call_is_not_killed(
    stdio_spec: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # #26: before a call the connection pinged a server idle for 5 s; a 2026-07-28 server
    # (the SDK 2.x, as this one) answers "Method not found", and the client tore the
    # connection down and restarted the process, killing a call in flight.
    import concurrent.futures

    from toolwire_mcp.client import _connection

    monkeypatch.setattr(_connection, "_IDLE_CHECK", 0.3)
    ts = mcp_toolset("srv", stdio_spec())
    first = _run(ts, "pid", {}).content
    time.sleep(0.6)  # idle past the check: the next call pings first
    assert first == _run(ts, "pid", {}).content  # the same process: not restarted
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        long = pool.submit(_run, ts, "nap", {"seconds": 1.5})
        time.sleep(0.6)  # the long call has run past the idle check
        short = pool.submit(_run, ts, "pid", {})
        assert (first, "rested") == (short.result(30).content, long.result(30).content)


# -- answering a server's elicitation (#26) -------------------------------------------------

GATED = '''
import toolwire as tw


@tw.tool_fn(effect="destructive")
def wipe(target: str) -> str:
    """Wipe a target."""
    return f"wiped {target}"


tools = tw.Toolset("gated", [wipe])
'''


def test_a_toolwire_client_answers_a_toolwire_gateways_approval_question(
    tmp_path: Path,
) -> None:
    # #26: toolwire -> toolwire denied every mutating call, whatever the client approved:
    # the client declined every elicitation. The client's own decision now answers the
    # gateway's question about the call it is making; the application's form handler
    # is not asked (the user was asked once, by the client's approver).
    from toolwire_mcp import ElicitationRequest, ServerSpec, set_elicitation_handler

    (tmp_path / "gated_app.py").write_text(GATED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(PYTHONPATH=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    spec = ServerSpec(
        "gw",
        command=sys.executable,
        args=("-m", "toolwire", "mcp", "serve", "--app", "gated_app:tools"),
        env=env,
        cwd=str(tmp_path),
        connect_timeout=60.0,
    )
    forms: list[ElicitationRequest] = []
    set_elicitation_handler(lambda request: forms.append(request) or False)
    ts = mcp_toolset("gw", spec)
    try:
        approved = _run(ts, "wipe", {"target": "db"})
        denied = tw.Executor(tools=ts, plugins=False, approval=lambda r: tw.Deny("no")).execute(
            tw.ToolCall("c2", "wipe", json.dumps({"target": "db"}))
        )
    finally:
        set_elicitation_handler(None)
    assert (False, "wiped db") == (approved.is_error, approved.content)
    assert denied.is_error
    assert "no" in denied.content
    assert [] == forms


async def test_an_elicitation_answer_takes_the_schemas_defaults() -> None:
    from toolwire_mcp import ElicitationRequest, set_elicitation_handler
    from toolwire_mcp.client._elicit import answer

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "ada"},
            "count": {"type": "integer", "default": 3},
            "ok": {"type": "boolean"},
        },
    }
    request = ElicitationRequest("srv", "Fill this in", schema=schema)
    outcomes = []
    for handler in (lambda r: True, lambda r: {"ok": True, "extra": 1}, lambda r: None):
        set_elicitation_handler(handler)
        outcomes.append(await answer(request))

    async def broken(r: ElicitationRequest) -> Any:
        raise RuntimeError("the terminal is gone")

    set_elicitation_handler(broken)
    outcomes.append(await answer(request))
    set_elicitation_handler(lambda r: 42)
    outcomes.append(await answer(request))
    set_elicitation_handler(None)
    outcomes.append(await answer(request))
    assert [
        ("accept", {"name": "ada", "count": 3}),
        ("accept", {"name": "ada", "count": 3, "ok": True}),
        ("decline", None),
        ("cancel", None),
        ("decline", None),
        ("decline", None),
    ] == outcomes
    with pytest.raises(TypeError, match="must be callable"):
        set_elicitation_handler("yes")  # type: ignore[arg-type]


def test_a_servers_log_messages_reach_its_logger(
    stdio_spec: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # #26: server log notifications go to the `toolwire.mcp.<server>` logger.
    ts = mcp_toolset("srv", stdio_spec())
    with caplog.at_level(logging.INFO, logger="toolwire.mcp.srv"):
        assert "warned" == _run(ts, "warn", {}).content
        assert _wait(lambda: "[disk] the disk is almost full" in caplog.text)
    [record] = [r for r in caplog.records if r.getMessage().startswith("[disk]")]
    assert ("toolwire.mcp.srv", logging.WARNING) == (record.name, record.levelno)


def test_a_servers_instructions_are_the_toolsets_description(stdio_spec: Any) -> None:
    # #26: server `instructions` available to the application (for its system prompt).
    ts = mcp_toolset("srv", stdio_spec())
    assert "Echo with `echo`; `add` adds two integers." == ts.description


# -- progress: the idle deadline, the application's handler (#26) ----------------------------


def test_progress_keeps_a_long_call_alive_and_reaches_the_application(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    from toolwire_mcp import ProgressEvent, set_progress_handler

    seen: list[ProgressEvent] = []
    set_progress_handler(seen.append)
    try:
        ts = mcp_toolset("prog", stdio_spec("prog", timeout=1.0))
        # 2 s of work, a progress notification every 0.2 s: past the 1 s idle deadline.
        worked = _run(ts, "slow", {"seconds": 2, "every": 0.2})
        silent = _run(ts, "nap", {"seconds": 2})  # the same 2 s in silence
    finally:
        set_progress_handler(None)
    assert (False, "worked") == (worked.is_error, worked.content)
    assert silent.is_error
    assert "did not answer the call to `nap` within 1 s" in silent.content
    assert [(i + 1, 10) for i in range(10)] == [(e.progress, e.total) for e in seen]
    assert ("prog", "slow", "step 10") == (seen[-1].server, seen[-1].tool, seen[-1].message)


def test_a_call_that_reports_progress_still_ends_at_max_call_time(
    stdio_spec: Callable[..., ServerSpec],
) -> None:
    import attrs

    spec = attrs.evolve(stdio_spec("bounded", timeout=1.0), max_call_time=1.5)
    result = _run(mcp_toolset("bounded", spec), "slow", {"seconds": 5, "every": 0.2})
    assert result.is_error
    assert "did not finish the call to `slow` within 1.5 s (max_call_time)" in result.content


def test_a_failing_progress_handler_is_not_the_calls_failure(
    stdio_spec: Callable[..., ServerSpec], caplog: pytest.LogCaptureFixture
) -> None:
    from toolwire_mcp import set_progress_handler

    def broken(event: Any) -> None:
        raise RuntimeError("the screen is gone")

    set_progress_handler(broken)
    try:
        result = _run(mcp_toolset("p2", stdio_spec("p2")), "slow", {"seconds": 0.4, "every": 0.2})
    finally:
        set_progress_handler(None)
    assert (False, "worked") == (result.is_error, result.content)
    assert "the progress handler failed" in caplog.text
    with pytest.raises(TypeError, match="must be callable"):
        set_progress_handler("print")  # type: ignore[arg-type]


def test_max_call_time_is_configurable_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "maxCallTime": 30}}}))
    assert 30.0 == load_config([path])["s"].max_call_time
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "maxCallTime": "1h"}}}))
    with pytest.raises(ConfigError, match="maxCallTime must be a positive number"):
        load_config([path])


def test_media_blocks_that_fail_their_checks_are_lines_saying_why() -> None:
    import mcp_types as types

    from toolwire_mcp._content import result_output

    jpeg_as_png = base64.b64encode(b"\xff\xd8\xff\xe0 a jpeg").decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="look:"),
            types.ImageContent(type="image", data="@@not base64@@", mime_type="image/png"),
            types.ImageContent(type="image", data=jpeg_as_png, mime_type="image/png"),
            types.AudioContent(type="audio", data="aGk=", mime_type="text/plain"),
            types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        ]
    )
    parts = result_output(result)
    assert isinstance(parts, list)
    texts = [getattr(p, "text", None) for p in parts]
    assert texts[0] == "look:"
    assert "base64 data is malformed" in texts[1]
    assert "declared image/png, but its bytes are image/jpeg" in texts[2]
    assert "text/plain is not an audio/* type" in texts[3]
    assert type(parts[4]).__name__ == "Image"  # the one good block is kept


def test_an_elicitation_answer_that_does_not_fit_the_form_is_not_sent(
    stdio_spec: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # #44: an answer lacking a required field went to the server, which refused it
    # (-32602) and failed the call. It is checked first: the server is told no, and the
    # application is told which field.
    from toolwire_mcp import set_elicitation_handler

    ts = mcp_toolset("srv", stdio_spec())
    said = []
    try:
        for given in ({}, {"colour": 5}, {"colour": "teal"}):
            set_elicitation_handler(lambda request, given=given: given)
            said.append(_run(ts, "ask_user", {}).content)
    finally:
        set_elicitation_handler(None)
    assert ["decline: None", "decline: None", "accept: {'colour': 'teal'}"] == said
    problems = [r.getMessage() for r in caplog.records if "does not fit its form" in r.getMessage()]
    assert 2 == len(problems)
    assert "`colour` is required and has no default" in problems[0]
    assert "`colour` must be a string, not int" in problems[1]


@pytest.mark.parametrize(
    ("content", "schema", "problem"),
    [
        ({}, {"properties": {"a": {"type": "string"}}, "required": ["a"]}, "`a` is required"),
        ({"a": "x"}, {"properties": {"a": {"type": "string", "enum": ["y"]}}}, "one of y"),
        (
            {"a": "x"},
            {"properties": {"a": {"type": "string", "oneOf": [{"const": "y", "title": "Y"}]}}},
            "one of y",
        ),
        ({"a": "x"}, {"properties": {"a": {"type": "string", "minLength": 2}}}, "at least 2"),
        ({"a": 1.5}, {"properties": {"a": {"type": "integer"}}}, "an integer"),
        ({"a": True}, {"properties": {"a": {"type": "number"}}}, "a number"),
        ({"a": 11}, {"properties": {"a": {"type": "number", "maximum": 10}}}, "at most 10"),
        ({"a": "yes"}, {"properties": {"a": {"type": "boolean"}}}, "true or false"),
        (
            {"a": ["r", "q"]},
            {"properties": {"a": {"type": "array", "items": {"enum": ["r", "g"]}}}},
            "may hold only r, g, not 'q'",
        ),
        (
            {"a": ["r"]},
            {
                "properties": {
                    "a": {"type": "array", "items": {"anyOf": [{"const": "r"}]}, "minItems": 2}
                }
            },
            "a size of at least 2",
        ),
        ({"a": "r"}, {"properties": {"a": {"type": "array"}}}, "must be a list"),
        # What fits, and schemas a server got wrong: nothing to check against, nothing said.
        ({"a": ["r"]}, {"properties": {"a": {"type": "array", "items": {"enum": ["r"]}}}}, None),
        ({"a": 2}, {"properties": {"a": {"type": "integer", "minimum": 1}}}, None),
        ({"a": 2.0}, {"properties": {"a": {"type": "integer"}}}, None),
        ({"a": 1}, {"properties": "nonsense", "required": "a"}, None),
        ({"a": 1}, {"properties": {"a": {"type": "mystery"}}}, None),
        ({"a": "x"}, {"properties": {"a": {"type": "string", "minLength": "2"}}}, None),
    ],
)
def test_an_answer_is_checked_against_the_form_subset(
    content: dict[str, Any], schema: dict[str, Any], problem: str | None
) -> None:
    from toolwire_mcp.client._elicit import answer_problem

    found = answer_problem(content, schema)
    assert (found is None) == (problem is None), found
    if problem is not None:
        assert problem in str(found)
