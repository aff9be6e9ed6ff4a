"""Toolsets served over MCP, checked with the official SDK's own ``Client``: in process,
over stdio (``toolwire mcp serve`` as a subprocess) and over Streamable HTTP."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from _mcp_support import (
    SERVER,
    _env,
    _start_http_gateway,
    _stop_http_gateway,
    calls_in,
    write_policy,
)
from mcp import Client, StdioServerParameters
from pydantic import BaseModel

import toolwire as tw
from toolwire.exceptions import UsageError
from toolwire_mcp import build_server


class Total(BaseModel):
    total: int


@tw.tool_fn
def add(a: int, b: int) -> Total:
    """Add two integers."""
    return Total(total=a + b)


@tw.tool_fn(effect="destructive")
def wipe(target: str) -> str:
    """Wipe a target."""
    return f"wiped {target}"


@tw.tool_fn
def secret_lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


APP = tw.Toolset("app", [add, wipe, secret_lookup])


def _host() -> tw.PluginHost:
    return tw.PluginHost(autoload=False)


def _in_process(server: Any, fn: Any) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await fn(client)

    return anyio.run(main)


def test_tools_list_maps_metadata_to_annotations_and_output_schemas() -> None:
    server = build_server(APP, host=_host())

    async def listed(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in _in_process(server, listed)}
    assert set(tools) == {"add", "wipe", "secret_lookup"}
    assert tools["add"].annotations.read_only_hint is True
    assert tools["wipe"].annotations.destructive_hint is True
    assert tools["add"].output_schema["properties"]["total"]["type"] == "integer"
    assert tools["add"].input_schema["required"] == ["a", "b"]


def test_calls_run_through_the_executor_with_structured_content() -> None:
    server = build_server(APP, host=_host())

    async def call(client: Client) -> Any:
        return await client.call_tool("add", {"a": 2, "b": 40})

    result = _in_process(server, call)
    assert not result.is_error
    assert result.structured_content == {"total": 42}


def test_invalid_arguments_and_unknown_tools_are_tool_errors() -> None:
    server = build_server(APP, host=_host())

    async def calls(client: Client) -> Any:
        bad = await client.session.call_tool("add", {"a": "x"})
        unknown = await client.session.call_tool("nope", {})
        return bad, unknown

    bad, unknown = _in_process(server, calls)
    assert bad.is_error
    assert unknown.is_error
    assert "unknown tool `nope`" in unknown.content[0].text


def test_destructive_tools_are_denied_unless_approved() -> None:
    async def call(client: Client) -> Any:
        return await client.call_tool("wipe", {"target": "db"})

    denied = _in_process(build_server(APP, host=_host()), call)
    assert denied.is_error
    assert "`wipe` is destructive" in denied.content[0].text
    approved = _in_process(build_server(APP, host=_host(), approve=True), call)
    assert approved.content[0].text == "wiped db"


def test_hooks_hide_tools_and_reject_calls() -> None:
    hooks = tw.HookSet()
    hooks.hide("secret_lookup", lambda tool, context: False)
    app = tw.Toolset("app", [add, secret_lookup], hooks=hooks)

    async def both(client: Client) -> Any:
        listed = [t.name for t in (await client.list_tools()).tools]
        called = await client.session.call_tool("secret_lookup", {"key": "k"})
        return listed, called

    listed, called = _in_process(build_server(app, host=_host()), both)
    assert listed == ["add"]
    assert called.is_error


# -- toolwire mcp serve, as the SDK's client sees it ---------------------------------------------


def _gateway_config(tmp_path: Path, record: Path, **env: str) -> Path:
    path = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": [SERVER, "stdio"],
        "env": {"MCP_RECORD": str(record), **env},
    }
    path.write_text(json.dumps({"mcpServers": {"inner": server}}))
    return path


def test_toolwire_mcp_serve_over_stdio_fronts_a_configured_server(
    tmp_path: Path, record: Path
) -> None:
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolwire", "mcp", "serve"], env=env, cwd=str(tmp_path)
    )

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            echoed = await client.call_tool("inner_echo", {"text": "through"})
            wiped = await client.call_tool("inner_delete_all", {})
            return names, echoed, wiped

    names, echoed, wiped = anyio.run(main)
    assert "inner_echo" in names
    assert echoed.content[0].text == "echo: through"
    # Unannotated: destructive; the gateway was not started with --approve.
    assert wiped.is_error
    assert [c["name"] for c in calls_in(record)] == ["echo"]


def test_the_stdio_gateway_refuses_a_message_over_the_limit_while_it_arrives(
    tmp_path: Path, record: Path
) -> None:
    # Reproducer: a 32 MiB line with no end on the gateway's stdin. The gateway reads at
    # most 16 MiB of it, says why on stderr and ends the session; it never holds the rest.
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    gateway = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "mcp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(tmp_path),
    )
    assert gateway.stdin is not None
    chunk = b"x" * (1024 * 1024)
    try:
        for _ in range(32):
            gateway.stdin.write(chunk)
            gateway.stdin.flush()
    except BrokenPipeError:
        pass  # the gateway stopped reading: refused while it arrived
    _, err = gateway.communicate(timeout=60)
    assert gateway.returncode is not None
    assert b"over 16,777,216 bytes on stdin" in err


def test_the_stdio_gateway_still_reads_a_message_split_across_reads(
    tmp_path: Path, record: Path
) -> None:
    # A line longer than one read (64 KiB) arrives in pieces and is served whole.
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolwire", "mcp", "serve"], env=env, cwd=str(tmp_path)
    )
    text = "y" * 300_000

    async def main() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("inner_echo", {"text": text})

    echoed = anyio.run(main)
    assert echoed.content[0].text == f"echo: {text}"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_stdio_gateway_serves_its_upstream_servers_from_its_own_loop_and_leaves_none(
    tmp_path: Path, record: Path
) -> None:
    # The upstream server that answers proxied calls is the one connected() opened on the
    # gateway's serving loop (the one that listed its tools at assembly was closed), and
    # no upstream process outlives the gateway.
    pidfile = tmp_path / "upstream.pid"
    config = _gateway_config(tmp_path, record, MCP_PIDFILE=str(pidfile))
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolwire", "mcp", "serve"], env=env, cwd=str(tmp_path)
    )

    async def main() -> tuple[int, int, str]:
        async with Client(params, read_timeout_seconds=60) as client:
            listed_by = int(pidfile.read_text())
            echoed = await client.call_tool("inner_echo", {"text": "here"})
            return listed_by, int(pidfile.read_text()), echoed.content[0].text

    listed_by, served_by, text = anyio.run(main)
    assert text == "echo: here"
    assert served_by != listed_by
    assert _gone(listed_by)
    deadline = time.monotonic() + 15
    while not _gone(served_by) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(served_by)


@pytest.fixture
def gateway(tmp_path: Path, record: Path) -> Iterator[str]:
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config), GW_TOKEN="gw-secret")
    started = _start_http_gateway(tmp_path, env)
    yield started[1]
    _stop_http_gateway(started)


def test_a_stopped_http_gateway_closes_its_upstream_servers_first(
    tmp_path: Path, record: Path
) -> None:
    # SIGTERM: uvicorn shuts down, the upstream connections close (a stdio server's process
    # is ended and reaped), then the process ends by the signal as before.
    pidfile = tmp_path / "upstream.pid"
    config = _gateway_config(tmp_path, record, MCP_PIDFILE=str(pidfile))
    started = _start_http_gateway(tmp_path, _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config)))
    url = started[1]
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> Any:
        async with Client(streamable_http_client(url)) as client:
            return await client.call_tool("inner_echo", {"text": "up"})

    try:
        assert anyio.run(call).content[0].text == "echo: up"
        upstream = int(pidfile.read_text())
        assert not _gone(upstream)
    finally:
        code = _stop_http_gateway(started)
    assert code == -signal.SIGTERM
    assert _gone(upstream)  # at once: not left to notice its stdin closing on its own


def test_toolwire_mcp_serve_over_http_with_a_bearer_token(gateway: str) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def call(token: str) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(gateway, http_client=http)) as client:
            return await client.call_tool("inner_echo", {"text": "web"})

    assert anyio.run(call, "gw-secret").content[0].text == "echo: web"
    with pytest.raises(Exception):  # noqa: B017 - how the SDK reports a 401 is its own
        anyio.run(call, "wrong")
    import httpx

    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx.post(gateway, json={}, headers=headers, timeout=30)
        assert refused.status_code == 401
        # #26: the scheme is named (the Inspector assumed OAuth without it)
        assert 'Bearer realm="toolwire-mcp"' == refused.headers["www-authenticate"]
    # #26: the scheme is case-insensitive (RFC 7235)
    lower = httpx.post(
        gateway,
        json={"jsonrpc": "2.0", "id": 1, "method": "nope"},
        headers={"Authorization": "bearer gw-secret", "Accept": "application/json"},
        timeout=30,
    )
    assert 401 != lower.status_code


def test_the_http_gateway_refuses_oversized_requests(gateway: str) -> None:
    import httpx

    body = b"x" * (2 << 20)
    response = httpx.post(
        gateway,
        content=body,
        headers={"Authorization": "Bearer gw-secret", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 413


def test_each_call_is_decided_once_by_each_policy() -> None:
    seen: list[str] = []

    class Counting:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any) -> None:
            seen.append(call.id)

    host = _host()
    host.register(Counting(), "counting", kind="policy")
    server = build_server(tw.Toolset("app", [add]), host=host)

    async def call(client: Client) -> Any:
        return await client.call_tool("add", {"a": 1, "b": 2})

    assert not _in_process(server, call).is_error
    assert len(seen) == 1


# -- approval through MCP elicitation ------------------------------------------------------


def _asking(answer: Any, asked: list[Any]) -> Any:
    async def on_elicit(context: Any, params: Any) -> Any:
        import mcp_types

        asked.append(params)
        if isinstance(answer, BaseException):
            raise answer
        if answer == "hang":
            await anyio.sleep(30)
        action, content = answer
        return mcp_types.ElicitResult(action=action, content=content)

    return on_elicit


def _call_with(server: Any, on_elicit: Any, mode: str = "auto") -> Any:
    async def main() -> Any:
        async with Client(server, elicitation_callback=on_elicit, mode=mode) as client:
            return await client.call_tool("wipe", {"target": "db"})

    return anyio.run(main)


# "auto": the 2026-07-28 protocol, no back-channel: the question comes back as an
# InputRequiredResult and the client calls again with the answer. "legacy": the
# initialize handshake, with a back-channel: the server asks mid-call and waits.
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


@MODES
def test_a_destructive_call_runs_when_the_user_approves_through_the_client(mode: str) -> None:
    asked: list[Any] = []
    result = _call_with(
        build_server(APP, host=_host()), _asking(("accept", {"approve": True}), asked), mode
    )
    assert (False, "wiped db") == (result.is_error, result.content[0].text)
    [params] = asked
    assert "destructive tool `wipe`" in params.message
    assert '"target": "db"' in params.message
    assert ["approve"] == params.requested_schema["required"]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (("accept", {"approve": False}), "declined"),
        (("decline", None), "declined"),
        (("cancel", None), "cancelled"),
    ],
)
@MODES
def test_anything_but_a_yes_denies_the_call(answer: Any, said: str, mode: str) -> None:
    result = _call_with(build_server(APP, host=_host()), _asking(answer, []), mode)
    assert result.is_error
    assert f"the user {said} `wipe`" in result.content[0].text


def test_an_unanswered_approval_request_times_out_as_a_denial() -> None:
    server = build_server(APP, host=_host(), elicit_timeout=0.3)
    result = _call_with(server, _asking("hang", []), "legacy")
    assert result.is_error
    assert "no answer to the approval request for `wipe` within 0.3 s" in result.content[0].text


def test_no_elicit_and_a_policy_rejection_are_not_asked_about() -> None:
    asked: list[Any] = []
    result = _call_with(
        build_server(APP, host=_host(), elicit=False), _asking(("accept", {"approve": True}), asked)
    )
    assert result.is_error
    assert [] == asked

    class NoWipes:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
            return tw.Reject("wiping is off") if call.name == "wipe" else None

    host = _host()
    host.register(NoWipes(), "corp", kind="policy")
    result = _call_with(build_server(APP, host=host), _asking(("accept", {"approve": True}), asked))
    assert result.is_error
    assert "wiping is off" in result.content[0].text
    assert [] == asked  # the policy decided first: the user is never asked


def test_elicit_timeout_must_be_positive() -> None:
    with pytest.raises(tw.UsageError, match="elicit_timeout must be a positive number"):
        build_server(APP, host=_host(), elicit_timeout=0)


def test_an_answer_is_bound_to_the_call_it_was_asked_for() -> None:
    # request_state travels through the client: a yes for one call must not run another.
    import mcp_types

    yes = mcp_types.ElicitResult(action="accept", content={"approve": True})

    async def main() -> Any:
        server = build_server(APP, host=_host())
        # The callback only advertises elicitation: the test answers by hand.
        async with Client(server, mode="auto", elicitation_callback=_asking("hang", [])) as client:
            first = await client.session.call_tool(
                "wipe", {"target": "scratch"}, allow_input_required=True
            )
            assert isinstance(first, mcp_types.InputRequiredResult)
            [key] = first.input_requests

            async def answer(target: str, state: str | None) -> Any:
                return await client.session.call_tool(
                    "wipe",
                    {"target": target},
                    input_responses={key: yes},
                    request_state=state,
                    allow_input_required=True,
                )

            swapped = await answer("production", first.request_state)
            forged = await answer("scratch", "0" * 64)
            honest = await answer("scratch", first.request_state)
            return swapped, forged, honest

    swapped, forged, honest = anyio.run(main)
    assert isinstance(swapped, mcp_types.InputRequiredResult)  # asked again, nothing ran
    assert isinstance(forged, mcp_types.InputRequiredResult)
    assert "wiped scratch" == honest.content[0].text


# -- the gateway serves exactly what it lists (#25.4, #25.5) ---------------------------------


def test_a_tool_that_is_off_or_hidden_is_refused_like_an_unknown_one() -> None:
    # Attack (#25.4): tools/call ran a tool registered off=True (toolwire-fs's write_file,
    # toolwire-http's http_request in a stock install), and --approve approved it.
    app = tw.Toolset("app", [add])
    app.add(tw.Toolset("extra", [wipe]), off=True)

    class HideLookups:
        @tw.hookimpl
        def toolwire_tool_availability(self, tool: Any) -> Any:
            return False if tool.name == "secret_lookup" else None

    app.add(tw.Toolset("more", [secret_lookup]))
    host = _host()
    host.register(HideLookups(), "corp", kind="policy")
    server = build_server(app, host=host, approve=True)

    async def calls(client: Client) -> Any:
        listed = [t.name for t in (await client.list_tools()).tools]
        off = await client.session.call_tool("wipe", {"target": "db"})
        hidden = await client.session.call_tool("secret_lookup", {"key": "k"})
        return listed, off, hidden

    listed, off, hidden = _in_process(server, calls)
    assert ["add"] == listed
    assert [(True, "unknown tool `wipe`"), (True, "unknown tool `secret_lookup`")] == [
        (r.is_error, r.content[0].text) for r in (off, hidden)
    ]


def test_the_approval_question_shows_every_argument_sorted() -> None:
    # Attack (#25.5): the question cut the arguments at 2,000 characters, and a long
    # `body` sent first pushed `to=attacker@...` out of view.
    @tw.tool_fn(effect="destructive")
    def send_mail(body: str, to: str) -> str:
        """Send a mail."""
        return "sent"

    asked: list[Any] = []
    server = build_server(tw.Toolset("app", [send_mail]), host=_host())

    async def main(body: str) -> Any:
        on_elicit = _asking(("accept", {"approve": True}), asked)
        async with Client(server, elicitation_callback=on_elicit, mode="legacy") as client:
            return await client.call_tool("send_mail", {"body": body, "to": "attacker@evil"})

    result = anyio.run(main, "x" * 5000)
    assert not result.is_error
    [params] = asked
    assert '"to": "attacker@evil"' in params.message
    assert params.message.index('"body"') < params.message.index('"to"')
    assert "x" * 5000 in params.message  # whole, not a prefix
    refused = anyio.run(main, "y" * 20_000)
    assert refused.is_error
    assert "too long to show in full for approval" in refused.content[0].text
    assert 1 == len(asked)  # never asked with a part of the arguments


def test_sync_policy_hooks_are_named_for_a_server_to_warn_about() -> None:
    # #25 (known limits): a sync policy hook stalls every client's calls while it runs;
    # `toolwire mcp serve` warns at start.
    from toolwire_mcp.gateway._server import _warn_sync_policies

    class SyncPolicy:
        @tw.hookimpl
        def toolwire_tool_decision(self, call: Any) -> Any:
            return None

    class AsyncPolicy:
        @tw.hookimpl
        async def toolwire_tool_decision(self, call: Any) -> Any:
            return None

    host = _host()
    host.register(SyncPolicy(), "slowcorp", kind="policy")
    host.register(AsyncPolicy(), "fastcorp", kind="policy")
    assert ("slowcorp:toolwire_tool_decision",) == host.sync_policy_hooks()
    records: list[str] = []
    import logging

    class Grab(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    grab = Grab()
    logging.getLogger("toolwire.mcp.server").addHandler(grab)
    try:
        _warn_sync_policies(host)
    finally:
        logging.getLogger("toolwire.mcp.server").removeHandler(grab)
    assert ["slowcorp:toolwire_tool_decision are sync"] == [
        r[len("policy hooks ") : r.index(": while")] for r in records
    ]


def test_the_first_party_policies_are_not_warned_about(tmp_path: Path) -> None:
    # #45: toolwire-policy's and toolwire-cedar's sync hooks only compute (a shared store
    # and a person are asked off the loop): a warning no user could act on is not given.
    import subprocess
    import sys

    pytest.importorskip("toolwire_policy")
    pytest.importorskip("toolwire_cedar")
    (tmp_path / "p.toml").write_text('deny = ["nothing"]\n')
    (tmp_path / "c.cedar").write_text("permit(principal, action, resource);")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        TOOLWIRE_POLICY=str(tmp_path / "p.toml"),
        TOOLWIRE_CEDAR_POLICY=str(tmp_path / "c.cedar"),
        TOOLWIRE_AUTOLOAD_PLUGINS="0",
    )
    served = subprocess.run(
        [sys.executable, "-m", "toolwire", "mcp", "serve", "--transport", "stdio"],
        cwd=tmp_path, env=env, input="", capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert "active:" in served.stderr, served.stderr  # both policies are in force
    assert "are sync" not in served.stderr


def test_the_gateway_passes_an_upstream_tools_structured_content_and_errors_through(
    record: Path,
) -> None:
    # #26: the gateway advertised outputSchema and returned no structuredContent for an
    # upstream tool whose text is not exactly its JSON (an MCPServer tool returning int),
    # which the SDK client, the Inspector and pydantic-ai refuse; upstream errors were
    # wrapped twice ("tool `x` failed: MCPToolError: ..."); serverInfo.version was empty;
    # a tool whose execution.taskSupport is "required" was offered and every call failed.
    from toolwire_mcp import ServerSpec, mcp_toolset

    spec = ServerSpec(
        "inner", command=sys.executable, args=(SERVER, "stdio"), env={"MCP_RECORD": str(record)}
    )
    upstream = mcp_toolset("inner", spec)
    server = build_server(upstream, host=_host(), approve=True)

    async def calls(client: Client) -> Any:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        typed = await client.call_tool("typed", {})
        failed = await client.call_tool("fail", {})
        return client.server_info, listed, typed, failed

    info, listed, typed, failed = _in_process(server, calls)
    assert (False, {"result": 5}) == (typed.is_error, typed.structured_content)
    assert listed["typed"].output_schema["properties"]["result"]["type"] == "integer"
    assert (True, "tool `fail` failed: the disk is on fire") == (
        failed.is_error,
        failed.content[0].text,
    )
    assert info.version
    assert info.version[0].isdigit()


def test_a_tool_that_must_run_as_a_task_is_offered_and_known_as_one() -> None:
    # #26 hid a tool whose execution.taskSupport is "required" (every call without a task
    # failed); #44 calls it as a task (test_mcp_tasks.py), so it is offered.
    import mcp_types as types

    from toolwire_mcp import ServerSpec
    from toolwire_mcp.client._toolset import tools_from

    class Conn:
        spec = ServerSpec("jobs", command="unused")

        def __init__(self) -> None:
            self.task_tools: dict[str, str] = {}

    obj = {"type": "object", "properties": {}}
    listed = [
        types.Tool(name="quick", input_schema=obj),
        types.Tool(
            name="batch", input_schema=obj, execution=types.ToolExecution(task_support="required")
        ),
        types.Tool(
            name="either", input_schema=obj, execution=types.ToolExecution(task_support="optional")
        ),
    ]
    conn = Conn()
    made = tools_from(conn, listed)  # type: ignore[arg-type]
    assert ["quick", "batch", "either"] == [t.name for t in made]
    assert {"batch": "required", "either": "optional"} == conn.task_tools


def test_a_configured_server_whose_tools_carry_its_name_is_not_prefixed_twice(
    tmp_path: Path, record: Path
) -> None:
    # #26: a server named `git` gave `git_git_status`.
    config = tmp_path / "config" / "toolwire" / "mcp.json"
    config.parent.mkdir(parents=True)
    server = {
        "command": sys.executable,
        "args": [SERVER, "stdio"],
        "env": {"MCP_RECORD": str(record), "MCP_TOOL_PREFIX": "git_"},
    }
    config.write_text(json.dumps({"mcpServers": {"git": server}}))
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "tools", "--json"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert "git_echo" in names
    assert not [n for n in names if n.startswith("git_git_")]


# -- what a served tool sends its caller while it runs (#26) -------------------------------


@tw.tool_fn(injected=["mcp"])
async def chatty(steps: int, mcp: Any = None) -> str:
    """Reports progress and logs as it works."""
    for i in range(steps):
        if mcp is not None:
            await mcp.log(f"step {i}", level="debug" if i % 2 else "warning")
            await mcp.progress(i + 1, steps, f"step {i + 1}")
    return "done"


# The client side of logging is deprecated from 2026-07-28 on: this test uses it on purpose.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_served_tool_logs_and_reports_progress_to_its_caller(mode: str) -> None:
    server = build_server(tw.Toolset("app", [chatty]), host=_host())
    logs: list[tuple[str, Any]] = []
    progress: list[tuple[float, float | None]] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async def main() -> Any:
        options: dict[str, Any] = {"logging_callback": on_log, "mode": mode}
        if mode == "auto":
            options["log_level"] = "info"  # 2026-07-28: each request opts in
        async with Client(server, **options) as client:
            if mode == "legacy":
                await client.session.set_logging_level("info")  # before 2026-07-28
            return await client.call_tool("chatty", {"steps": 4}, progress_callback=on_progress)

    result = anyio.run(main)
    assert "done" == result.content[0].text
    assert [(1, 4), (2, 4), (3, 4), (4, 4)] == progress
    assert [("warning", "step 0"), ("warning", "step 2")] == logs  # debug filtered out


async def test_the_call_context_refuses_an_unknown_level() -> None:
    from toolwire_mcp import MCPCallContext

    with pytest.raises(ValueError, match="level must be one of debug, info"):
        await MCPCallContext(object()).log("x", level="loud")


def test_the_gateway_tells_its_clients_when_an_upstream_list_changes(
    tmp_path: Path, record: Path
) -> None:
    # #26: tools.listChanged was false although upstream lists change. A toolwire client
    # in front of `toolwire mcp serve`, in front of a server whose `grow` adds a tool:
    # the new tool reaches the client's toolset without a reconnect.
    import time

    from toolwire_mcp import ServerSpec, close_all, mcp_toolset

    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    spec = ServerSpec(
        "gw",
        command=sys.executable,
        args=("-m", "toolwire", "mcp", "serve", "--approve"),
        env=env,
        cwd=str(tmp_path),
        connect_timeout=60.0,
    )
    tools = mcp_toolset("gw", spec)
    try:
        assert "inner_grown" not in [t.name for t in tools.tools()]
        executor = tw.Executor(tools=tools, plugins=False)
        assert "grown" == executor.execute(tw.ToolCall("c1", "inner_grow", "{}")).content
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "inner_grown" not in [t.name for t in tools.tools()]:
            time.sleep(0.1)
        assert "inner_grown" in [t.name for t in tools.tools()]
    finally:
        close_all()


def test_a_handshake_era_client_is_told_too(tmp_path: Path, record: Path) -> None:
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolwire", "mcp", "serve", "--approve"],
        env=env,
        cwd=str(tmp_path),
    )
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        seen.append(type(getattr(message, "root", message)).__name__)

    async def main() -> Any:
        async with Client(
            params, read_timeout_seconds=60, mode="legacy", message_handler=on_message
        ) as client:
            listed = client.server_capabilities.tools
            await client.list_tools()
            await client.call_tool("inner_grow", {})
            with anyio.move_on_after(20):
                while "ToolListChangedNotification" not in seen:
                    await anyio.sleep(0.1)
            return listed

    capability = anyio.run(main)
    assert capability is not None
    assert capability.list_changed is True
    assert "ToolListChangedNotification" in seen


# -- a served tool asks its caller: elicitation and sampling (#26) ----------------------------


@tw.tool_fn(injected=["mcp"])
async def survey(question: str, mcp: Any = None) -> str:
    """Asks the user a question."""
    answer = await mcp.elicit(
        question,
        {"type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}},
        timeout=0.5,
    )
    return f"{answer.action}: {answer.content}"


@tw.tool_fn(injected=["mcp"])
async def summarise(text: str, mcp: Any = None) -> str:
    """Asks the caller's model to summarise."""
    return await mcp.sample(f"Summarise: {text}", max_tokens=20, system="Be brief.")


def _ask_tool(mode: str, tool: str, arguments: dict[str, Any], **callbacks: Any) -> Any:
    server = build_server(tw.Toolset("app", [survey, summarise]), host=_host())

    async def main() -> Any:
        async with Client(server, mode=mode, **callbacks) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(main)


def test_a_served_tool_asks_the_user_and_gets_the_answer_as_given() -> None:
    asked: list[Any] = []
    result = _ask_tool(
        "legacy",
        "survey",
        {"question": "Your name?"},
        elicitation_callback=_asking(("accept", {"name": "Grace"}), asked),
    )
    assert "accept: {'name': 'Grace'}" == result.content[0].text
    [params] = asked
    assert "Your name?" == params.message
    assert "Ada" == params.requested_schema["properties"]["name"]["default"]


@pytest.mark.parametrize(
    ("answer", "shown"),
    [(("decline", None), "decline: None"), ("hang", "cancel: None")],
)
def test_a_declined_or_unanswered_question_is_the_tools_to_handle(answer: Any, shown: str) -> None:
    result = _ask_tool(
        "legacy", "survey", {"question": "?"}, elicitation_callback=_asking(answer, [])
    )
    assert (False, shown) == (result.is_error, result.content[0].text)


@MODES
def test_a_question_the_client_cannot_be_asked_fails_the_call(mode: str) -> None:
    result = _ask_tool(mode, "survey", {"question": "?"})
    assert result.is_error
    assert "declared no elicitation capability" in result.content[0].text


def test_on_2026_07_28_a_tools_question_is_asked_in_its_result() -> None:
    # No back-channel: the question is an InputRequiredResult; the SDK's client asks its
    # user and calls again with the answer, and the tool, run again, gets it.
    asked: list[Any] = []
    result = _ask_tool(
        "auto",
        "survey",
        {"question": "Your name?"},
        elicitation_callback=_asking(("accept", {"name": "Grace"}), asked),
    )
    assert (False, "accept: {'name': 'Grace'}") == (result.is_error, result.content[0].text)
    assert ["Your name?"] == [p.message for p in asked]


WROTE: list[str] = []


@tw.tool_fn(effect="mutating", injected=["mcp"])
async def rename(old: str, mcp: Any = None) -> str:
    """Renames a file, asking for the new name and then whether to keep a copy."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    new = await mcp.elicit(f"New name for {old}?", schema)
    keep = await mcp.elicit("Keep a copy?", {"type": "object", "properties": {
        "keep": {"type": "boolean"}}, "required": ["keep"]})  # fmt: skip
    WROTE.append(f"{old} -> {new.content['name']} (copy: {keep.content['keep']})")
    return WROTE[-1]


def test_rounds_carry_the_approval_and_earlier_answers() -> None:
    # A mutating tool on 2026-07-28, approved through the client, that asks two
    # questions: four rounds (the approval, each question, the end); each question and
    # the approval asked once (requestState carries them), and the tool acts once.
    WROTE.clear()
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        import mcp_types

        asked.append(params.message.split("\n")[0])
        if "approve" in params.requested_schema.get("required", []):
            return mcp_types.ElicitResult(action="accept", content={"approve": True})
        if "name" in params.requested_schema["properties"]:
            return mcp_types.ElicitResult(action="accept", content={"name": "b.txt"})
        return mcp_types.ElicitResult(action="accept", content={"keep": False})

    server = build_server(tw.Toolset("app", [rename]), host=_host())

    async def main() -> Any:
        async with Client(server, mode="auto", elicitation_callback=answer) as client:
            return await client.call_tool("rename", {"old": "a.txt"})

    result = anyio.run(main)
    assert (False, "a.txt -> b.txt (copy: False)") == (result.is_error, result.content[0].text)
    assert 3 == len(asked)
    assert "mutating tool `rename`" in asked[0]
    assert ["New name for a.txt?", "Keep a copy?"] == asked[1:]
    assert ["a.txt -> b.txt (copy: False)"] == WROTE  # acted once


def test_a_forged_or_borrowed_state_carries_nothing() -> None:
    # requestState is the gateway's, signed and bound to the call: a state edited by the
    # client, or one from another call, carries neither answers nor the approval.
    import base64
    import json as _json

    import mcp_types

    yes = mcp_types.ElicitResult(action="accept", content={"approve": True})
    name = mcp_types.ElicitResult(action="accept", content={"name": "b.txt"})
    server = build_server(tw.Toolset("app", [rename]), host=_host())

    async def main() -> list[Any]:
        async with Client(server, mode="auto", elicitation_callback=_asking("hang", [])) as c:
            first = await c.session.call_tool("rename", {"old": "a.txt"}, allow_input_required=True)
            [key] = first.input_requests
            second = await c.session.call_tool(
                "rename", {"old": "a.txt"}, input_responses={key: yes},
                request_state=first.request_state, allow_input_required=True,
            )  # fmt: skip
            assert isinstance(second, mcp_types.InputRequiredResult)  # the first question
            state = second.request_state
            assert state is not None
            body = state[4:].split(".")[0]
            data = _json.loads(base64.urlsafe_b64decode(body))
            data["answers"]["toolwire_input_1"] = name.model_dump(mode="json")
            forged_body = base64.urlsafe_b64encode(_json.dumps(data).encode()).decode()
            forged = state[:4] + forged_body + "." + state.split(".")[-1]
            out = []
            for given, args in (
                (forged, {"old": "a.txt"}),  # answers written in by the client
                (state, {"old": "c.txt"}),  # another call's state
            ):
                out.append(
                    await c.session.call_tool(
                        "rename", args, request_state=given, allow_input_required=True
                    )
                )
            return out

    forged, borrowed = anyio.run(main)
    for got in (forged, borrowed):
        assert isinstance(got, mcp_types.InputRequiredResult)
        # Back to the start: the approval is asked again.
        assert ["toolwire_approval"] == list(got.input_requests)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_served_tool_samples_the_callers_model() -> None:
    import mcp_types

    seen: list[Any] = []

    async def on_sample(context: Any, params: Any) -> Any:
        seen.append(params)
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text="short"),
            model="test",
        )

    result = _ask_tool("legacy", "summarise", {"text": "long"}, sampling_callback=on_sample)
    assert (False, "short") == (result.is_error, result.content[0].text)
    [params] = seen
    assert (20, "Be brief.") == (params.max_tokens, params.system_prompt)
    assert "Summarise: long" == params.messages[0].content.text
    refused = _ask_tool("legacy", "summarise", {"text": "long"})
    assert refused.is_error
    assert "declared no sampling capability" in refused.content[0].text


# -- toolwire client -> toolwire gateway: the client's approval is the answer (#26) ------------


@pytest.mark.parametrize(("approve", "ran"), [(True, ["delete_all"]), (False, [])])
def test_a_toolwire_client_answers_its_gateways_approval_with_its_own_decision(
    tmp_path: Path, record: Path, approve: bool, ran: list[str]
) -> None:
    from toolwire_mcp import elicitation_handler, mcp_toolset

    assert elicitation_handler() is None  # nobody answers forms: the approver decides
    config = _gateway_config(tmp_path, record)
    env = _env(tmp_path, TOOLWIRE_MCP_CONFIG=str(config))
    tools = mcp_toolset(
        "gw",
        [sys.executable, "-m", "toolwire", "mcp", "serve"],
        env=env,
        cwd=str(tmp_path),
        timeout=30,
        connect_timeout=60,
    )
    asked: list[str] = []

    def approver(request: tw.ApprovalRequest) -> tw.Allow | tw.Deny:
        asked.append(request.tool_name)
        return tw.Allow() if approve else tw.Deny("no")

    executor = tw.Executor(tools=tools, plugins=False, approval=approver)
    try:
        result = executor.execute(tw.ToolCall("c1", "inner_delete_all", "{}"))
    finally:
        executor.close()
    assert ["inner_delete_all"] == asked  # asked once, by the client
    assert result.is_error is not approve, result.content
    assert ran == [c["name"] for c in calls_in(record)]


def test_only_an_approval_of_a_call_in_flight_is_answered_by_the_client() -> None:
    from toolwire_mcp import ServerSpec
    from toolwire_mcp.client._connection import Connection
    from toolwire_mcp.client._elicit import APPROVAL_META, APPROVE_SCHEMA, approval_question

    conn = Connection(ServerSpec("s", command="true"))
    conn._calls[object()] = ("wipe", {"a": 1, "b": [2]})

    def approved(tool: str, arguments: Any, via: str) -> bool:
        """Answered yes, when the question came in its _meta or in its text alone."""
        if via == "meta":
            meta = {APPROVAL_META: {"tool": tool, "arguments": arguments}}
            params = mcp_types.ElicitRequestFormParams(
                message="?", requested_schema=APPROVE_SCHEMA, _meta=meta
            )
        else:
            text = approval_question("destructive", tool, json.dumps(arguments)) or ""
            params = mcp_types.ElicitRequestFormParams(
                message=text, requested_schema=APPROVE_SCHEMA
            )
        answer = anyio.run(conn._on_elicit, None, params)
        return answer.action == "accept"

    for via in ("meta", "text"):
        assert approved("wipe", {"b": [2], "a": 1}, via)  # key order is not meaning
        assert not approved("wipe", {"a": 2, "b": [2]}, via)  # other arguments
        assert not approved("other", {"a": 1, "b": [2]}, via)  # another tool
        assert not approved("wipe", "{}", via)
    text = approval_question("destructive", "wipe", '{"a": 1, "b": [2]}') or ""
    for schema in ({}, {**APPROVE_SCHEMA, "required": []}):  # not the approval form
        params = mcp_types.ElicitRequestFormParams(message=text, requested_schema=schema)
        assert "decline" == anyio.run(conn._on_elicit, None, params).action
    for bad in (None, {}, {APPROVAL_META: "wipe"}, {APPROVAL_META: {"tool": 1}}):
        params = mcp_types.ElicitRequestFormParams(
            message=text, requested_schema={"type": "object"}, _meta=bad
        )
        assert "decline" == anyio.run(conn._on_elicit, None, params).action


def test_an_upstream_servers_progress_reaches_the_gateways_client(
    stdio_spec: Any,
) -> None:
    from toolwire_mcp import mcp_toolset

    app = tw.Toolset("app").add(mcp_toolset("up", stdio_spec("up")), prefix="up_")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def main() -> Any:
        async with Client(build_server(app, host=_host())) as client:
            return await client.call_tool(
                "up_slow", {"seconds": 0.8, "every": 0.2}, progress_callback=on_progress
            )

    result = anyio.run(main)
    assert "worked" == result.content[0].text
    assert [(i, 4, f"step {i}") for i in range(1, 5)] == progress


# -- resumable streams (#26) ----------------------------------------------------------------

RESUMING = """
import asyncio

import toolwire as tw


@tw.tool_fn(injected=["mcp"])
async def long_job(mcp=None) -> str:
    \"\"\"Drops its stream mid-call, as a proxy cutting an idle stream would.\"\"\"
    if mcp is not None:
        await mcp.close_stream()
    await asyncio.sleep(0.5)
    return "done after the drop"


tools = tw.Toolset("resuming", [long_job])
"""


def test_a_dropped_stream_is_resumed_and_the_result_arrives(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "resuming.py").write_text(RESUMING)
    env = _env(tmp_path, PYTHONPATH=str(tmp_path))
    started = _start_http_gateway(tmp_path, env, ("--app", "resuming:tools"))

    async def call() -> Any:
        async with Client(streamable_http_client(started[1]), mode="legacy") as client:
            return await client.call_tool("long_job", {})

    try:
        result = anyio.run(call)
    finally:
        _stop_http_gateway(started)
    assert (False, "done after the drop") == (result.is_error, result.content[0].text)


async def test_the_event_store_replays_only_what_was_missed_and_stays_bounded() -> None:
    import mcp_types as t

    from toolwire_mcp.gateway._events import BoundedEventStore

    def note(n: int) -> Any:
        return t.JSONRPCNotification(jsonrpc="2.0", method="n", params={"i": n})

    store = BoundedEventStore(per_stream=3, max_streams=2)
    ids = [await store.store_event("a", note(i)) for i in range(5)]
    replayed: list[Any] = []

    async def send(event: Any) -> None:
        replayed.append((event.event_id, event.message.params["i"]))

    assert "a" == await store.replay_events_after(ids[2], send)
    assert [(ids[3], 3), (ids[4], 4)] == replayed  # after the last seen; the oldest dropped
    key = ids[0].rsplit(".", 1)[0]
    assert len(key) >= 16  # unguessable: another session cannot name this stream
    for bad in ("", "nope", f"{key}.x", "other.1"):
        assert await store.replay_events_after(bad, send) is None
    await store.store_event("b", note(0))
    await store.store_event("c", note(0))  # a third stream: the oldest ("a") forgotten
    assert await store.replay_events_after(ids[4], send) is None


# -- an upstream server's question, passed on to the gateway's client (#26) ------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_upstream_servers_question_reaches_the_gateways_client(
    stdio_spec: Any, mode: str
) -> None:
    from toolwire_mcp import mcp_toolset

    app = tw.Toolset("app").add(mcp_toolset("up", stdio_spec("up")), prefix="up_")
    asked: list[Any] = []

    async def main() -> Any:
        # The gateway can ask its own client mid-call only over a back-channel (legacy).
        async with Client(
            build_server(app, host=_host()),
            mode="legacy",
            elicitation_callback=_asking(("accept", {"colour": "teal"}), asked),
        ) as client:
            return await client.call_tool("up_ask_user", {})

    result = anyio.run(main)
    assert "accept: {'colour': 'teal'}" == result.content[0].text
    [params] = asked
    assert "Your favourite colour?" == params.message
    assert ["colour"] == params.requested_schema["required"]


def test_an_upstream_question_is_declined_when_the_gateways_client_cannot_answer(
    stdio_spec: Any,
) -> None:
    from toolwire_mcp import mcp_toolset

    app = tw.Toolset("app").add(mcp_toolset("up2", stdio_spec("up2")), prefix="up_")

    async def main() -> Any:
        async with Client(build_server(app, host=_host()), mode="legacy") as client:
            return await client.call_tool("up_ask_user", {})  # no elicitation capability

    assert "decline: None" == anyio.run(main).content[0].text


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("deny", [False, True])
def test_an_upstream_servers_sampling_reaches_the_gateways_client_under_policy(
    stdio_spec: Any, deny: bool
) -> None:
    import mcp_types

    from toolwire_mcp import mcp_toolset

    host = _host()
    if deny:

        class NoModel:
            @tw.hookimpl
            def toolwire_tool_decision(self, call: Any, context: Any) -> Any:
                return tw.Reject("no model for upstreams") if call.name == "mcp_sampling" else None

        host.register(NoModel(), "corp", kind="policy")
    app = tw.Toolset("app").add(mcp_toolset("ups", stdio_spec("ups")), prefix="up_")
    seen: list[Any] = []

    async def on_sample(context: Any, params: Any) -> Any:
        seen.append(params)
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text="from the client"),
            model="client-model",
        )

    async def main() -> Any:
        async with Client(
            build_server(app, host=host), mode="legacy", sampling_callback=on_sample
        ) as client:
            return await client.call_tool("up_ask_model", {"q": "what?"})

    result = anyio.run(main)
    if deny:
        assert "no model for upstreams" in result.content[0].text
        assert [] == seen
    else:
        assert "model said: from the client" == result.content[0].text
        [params] = seen
        assert ("what?", "Be brief.") == (params.messages[0].content.text, params.system_prompt)


# -- media results (#27) ------------------------------------------------------------------

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082"
)


@tw.tool_fn
def chart(title: str) -> list[str | tw.Image | tw.File | tw.Audio]:
    """Draw a chart."""
    return [
        title,
        tw.Image(PNG_1PX),
        tw.File(b'{"points": 3}', media_type="application/json", name="data.json"),
        tw.File(b"%PDF-1.4\n%%EOF\n", name="chart.pdf"),
    ]


def test_a_served_tool_returns_its_parts_as_mcp_content_blocks() -> None:
    server = build_server(tw.Toolset("app", [chart]), host=_host())

    async def call(client: Client) -> Any:
        return await client.call_tool("chart", {"title": "sales"})

    result = _in_process(server, call)
    assert not result.is_error
    kinds = [b.type for b in result.content]
    assert kinds == ["text", "image", "resource", "resource"]
    assert result.content[0].text == "sales"
    assert result.content[1].mime_type == "image/png"
    assert base64.b64decode(result.content[1].data) == PNG_1PX
    text_res = result.content[2].resource
    assert (str(text_res.uri), text_res.mime_type, text_res.text) == (
        "toolwire://result/data.json",
        "application/json",
        '{"points": 3}',
    )
    pdf = result.content[3].resource
    assert pdf.mime_type == "application/pdf"
    assert base64.b64decode(pdf.blob).startswith(b"%PDF-")


def test_a_result_hook_that_withholds_the_media_withholds_it_from_the_client() -> None:
    class Withhold:
        @tw.hookimpl
        def toolwire_tool_result(self, call: Any, result: tw.ToolResult, context: Any) -> Any:
            return result.replace(content="withheld")

    host = _host()
    host.register(Withhold(), name="withhold")
    server = build_server(tw.Toolset("app", [chart]), host=host)

    async def call(client: Client) -> Any:
        return await client.call_tool("chart", {"title": "sales"})

    result = _in_process(server, call)
    assert [(b.type, getattr(b, "text", None)) for b in result.content] == [("text", "withheld")]


def test_an_upstream_servers_media_passes_through_the_gateway(stdio_spec: Any) -> None:
    from toolwire_mcp import mcp_toolset

    server = build_server(mcp_toolset("srv", stdio_spec()), host=_host())

    async def call(client: Client) -> Any:
        return await client.call_tool("media", {})

    result = _in_process(server, call)
    kinds = [b.type for b in result.content]
    assert kinds == ["text", "image", "resource_link", "resource"], result.content
    assert result.content[1].data == "aGVsbG8="
    assert result.content[3].resource.text == "the notes"


def test_structured_content_with_media_keeps_both_through_the_gateway(stdio_spec: Any) -> None:
    from toolwire_mcp import mcp_toolset

    toolset = mcp_toolset("srv", stdio_spec())
    # The client: the model sees compact JSON (the data as the image's label) and the image.
    ex = tw.Executor(tools=toolset, plugins=False)
    seen = ex.execute(tw.ToolCall("c1", "media_file", "{}"))
    ex.close()
    assert [type(p).__name__ for p in seen.parts] == ["Text", "Image"]
    assert json.loads(seen.parts[0].text) == {
        "content": [
            {"type": "image", "data": "[image: image/png, 5 bytes]", "mimeType": "image/png"}
        ]
    }
    # The gateway's client: conforming structuredContent with the data put back, the image
    # as a content block.
    server = build_server(toolset, host=_host())

    async def call(client: Client) -> Any:
        return await client.call_tool("media_file", {})

    result = _in_process(server, call)
    assert not result.is_error
    assert result.structured_content == {
        "content": [{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]
    }
    assert [b.type for b in result.content] == ["text", "image"]
    assert result.content[1].data == "aGVsbG8="


@tw.tool_fn
def relay() -> list[Any]:
    """Returns MCP content blocks as they are (a tool that wraps another MCP library)."""
    return [
        mcp_types.TextContent(type="text", text="relayed"),
        mcp_types.ImageContent(
            type="image", data=base64.b64encode(PNG_1PX).decode(), mime_type="image/png"
        ),
    ]


def test_a_tool_may_return_mcp_content_blocks() -> None:
    result = tw.Executor(tools=[relay], plugins=False).execute(tw.ToolCall("c1", "relay", "{}"))
    assert result.parts == (tw.media.Text("relayed"), tw.Image(PNG_1PX))
    server = build_server(tw.Toolset("app", [relay]), host=_host())

    async def call(client: Client) -> Any:
        return await client.call_tool("relay", {})

    blocks = _in_process(server, call).content
    assert [(b.type, getattr(b, "mime_type", None)) for b in blocks] == [
        ("text", None),
        ("image", "image/png"),
    ]


@tw.tool_fn
def snapshot() -> mcp_types.ImageContent:
    """Returns one MCP image block, annotated as one."""
    return mcp_types.ImageContent(
        type="image", data=base64.b64encode(PNG_1PX).decode(), mime_type="image/png"
    )


def test_a_tool_annotated_with_an_mcp_block_class_returns_that_block() -> None:
    # #48: `-> ImageContent` (a pydantic model) made an output schema, so the gateway
    # advertised one and refused the image as output that does not match it.
    assert snapshot.output_schema is None
    server = build_server(tw.Toolset("app", [snapshot]), host=_host())

    async def listed(client: Client) -> Any:
        return (await client.list_tools()).tools[0].output_schema, await client.call_tool(
            "snapshot", {}
        )

    schema, result = _in_process(server, listed)
    assert (None, False, ["image"]) == (schema, result.is_error, [b.type for b in result.content])


# -- who is calling: tokens that name principals ------------------------------------------

_PRINCIPALS_APP = """
import toolwire as tw


def payroll(month: str) -> str:
    '''The payroll of a month.'''
    return "payroll of " + month


def weather(city: str) -> str:
    '''The weather in a city.'''
    return "sunny in " + city


tools = tw.Toolset("app", [tw.tool_fn(payroll), tw.tool_fn(weather)])
"""


def _digest(token: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def _tokens_file(tmp_path: Path, **subjects: dict[str, Any]) -> Path:
    """A private static-token file: each subject's token is ``<subject>-token``."""
    tokens = tmp_path / "tokens.json"
    entries = [
        {"sha256": _digest(f"{subject}-token"), "subject": subject, **more}
        for subject, more in subjects.items()
    ]
    tokens.write_text(json.dumps({"tokens": entries}))
    tokens.chmod(0o600)
    return tokens


def test_two_principals_through_one_gateway(tmp_path: Path) -> None:
    # #31: the same gateway, two tokens: alice (finance) may call payroll, bob gets it
    # neither listed nor runnable; both see weather; every record names its principal.
    pytest.importorskip("toolwire_policy")
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "app.py").write_text(_PRINCIPALS_APP)
    tokens = _tokens_file(tmp_path, alice={"groups": ["finance"]}, bob={})
    config = write_policy(
        tmp_path,
        'deny = ["payroll"]\nrequire_principal = true\n\n'
        '[[rules]]\ngroups = ["finance"]\nallow = ["payroll"]\n\n'
        '[[quotas]]\ntools = ["weather"]\ncalls = 1\nseconds = 600\n\n'
        '[audit]\npath = "audit.jsonl"\n',
    )
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    started = _start_http_gateway(tmp_path, env, ("--tokens", str(tokens), "--app", "app:tools"))
    url = started[1]

    async def session(token: str, mode: str = "auto") -> tuple[list[str], Any, Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, mode=mode) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            paid = await client.call_tool("payroll", {"month": "May"})
            sunny = await client.call_tool("weather", {"city": "Oslo"})
            return names, paid, sunny

    try:
        names, paid, sunny = anyio.run(session, "alice-token")
        assert ["payroll", "weather"] == names
        assert (False, "payroll of May") == (paid.is_error, paid.content[0].text)
        # A 2025-11-25 client (initialize, a session) is told the same.
        names, paid, _ = anyio.run(session, "alice-token", "legacy")
        assert ["payroll", "weather"] == names
        assert (False, "payroll of May") == (paid.is_error, paid.content[0].text)
        names, paid, sunny = anyio.run(session, "bob-token")
        assert ["weather"] == names
        assert paid.is_error
        assert "unknown tool `payroll`" in paid.content[0].text
        assert "sunny in Oslo" == sunny.content[0].text  # bob's quota is his own
        _, _, again = anyio.run(session, "alice-token")  # alice's one weather call is spent
        assert again.is_error
        assert "quota for `weather`: at most 1 call(s) in 600 s for `alice`" in (
            again.content[0].text
        )
        with pytest.raises(Exception):  # noqa: B017 - a token not in the file: 401
            anyio.run(session, "mallory-token")
    finally:
        _stop_http_gateway(started)
    records = [json.loads(x) for x in (config / "audit.jsonl").read_text().splitlines()]
    who = {(r.get("principal") or {}).get("subject") for r in records if r["event"] == "decision"}
    assert {"alice", "bob"} == who


def test_two_gateway_processes_share_quotas_in_redis(tmp_path: Path, redis_url: str) -> None:
    # #31: two gateway workers behind one address would each count alone in memory; with
    # [quota_store] they count together: alice's one weather call is spent on either.
    pytest.importorskip("toolwire_policy")
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "app.py").write_text(_PRINCIPALS_APP)
    tokens = _tokens_file(tmp_path, alice={}, bob={})
    write_policy(
        tmp_path,
        '[[quotas]]\ntools = ["weather"]\ncalls = 1\nseconds = 600\n\n'
        f'[quota_store]\nurl = "{redis_url}"\nprefix = "gw-{tmp_path.name}:"\n',
    )
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    workers = [
        _start_http_gateway(tmp_path, env, ("--tokens", str(tokens), "--app", "app:tools"))
        for _ in range(2)
    ]

    async def weather(url: str, token: str) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            return await client.call_tool("weather", {"city": "Oslo"})

    try:
        first = anyio.run(weather, workers[0][1], "alice-token")
        second = anyio.run(weather, workers[1][1], "alice-token")
        bobs = anyio.run(weather, workers[1][1], "bob-token")
    finally:
        for worker in workers:
            _stop_http_gateway(worker)
    assert "sunny in Oslo" == first.content[0].text
    assert second.is_error
    assert "at most 1 call(s) in 600 s for `alice`" in second.content[0].text
    assert "sunny in Oslo" == bobs.content[0].text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[]", 'expected {"tokens": [...]}'),
        ('{"tokens": [{"sha256": "abc", "subject": "a"}]}', '"sha256" must be'),
        ('{"tokens": [{"sha256": "sha256:' + "0" * 64 + '", "subject": ""}]}', "subject"),
        ('{"tokens": [{"sha256": "sha256:' + "0" * 64 + '", "subject": "a", "role": 1}]}',
         "unknown key(s) role"),
        ("not json", "is not JSON"),
    ],
)  # fmt: skip
def test_a_malformed_tokens_file_is_refused_by_name(
    tmp_path: Path, body: str, message: str
) -> None:
    from toolwire_mcp import load_tokens

    path = tmp_path / "tokens.json"
    path.write_text(body)
    path.chmod(0o600)
    with pytest.raises(UsageError, match=re.escape(message)):
        load_tokens(path)
    path.chmod(0o666)  # says who may call: used only when nobody else can write it
    with pytest.raises(UsageError, match="open to others"):
        load_tokens(path)


# -- the SDK's Mcp-Param header check, without a tools/list per call ---------------------------

_HEADED = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}},
    "required": ["region"],
}


def _policy_host(policy: Any) -> tw.PluginHost:
    """A host with ``policy`` installed as the organisation's policy, nothing else."""
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(policy, "corp", kind="policy")
    return host


def _recorded_availability(asked: list[str], hidden: Callable[[str, Any], bool]) -> Any:
    """A plugin whose availability hook records each tool it is asked about (in ``asked``)
    and hides those ``hidden(name, principal)`` says."""

    class Recorded:
        @tw.hookimpl
        def toolwire_tool_availability(self, tool: Any, context: tw.HookContext) -> Any:
            asked.append(tool.name)
            return False if hidden(tool.name, context.principal) else None

    return Recorded()


def _headed_toolset() -> tw.Toolset:
    def find(region: str, q: str = "") -> str:
        return f"found in {region}"

    plain = tw.raw_tool("plain", "No header.", {"type": "object", "properties": {}}, lambda: "ok")
    return tw.Toolset("app", [tw.raw_tool("find", "Routed by region.", _HEADED, find), plain])


def test_the_header_schema_lookup_lists_nothing_and_hides_what_the_caller_cannot_see() -> None:
    # The SDK asks for a tool's input schema on every 2026-07-28 tools/call (to check its
    # Mcp-Param-* headers); without a lookup it runs the whole tools/list handler for it.
    from toolwire_mcp.gateway._auth import CURRENT_PRINCIPAL

    asked: list[str] = []
    only_ops = _recorded_availability(
        asked, lambda name, who: name == "find" and (who is None or "ops" not in who.groups)
    )
    server = build_server(_headed_toolset(), host=_policy_host(only_ops))
    lookup = server.get_tool_input_schema
    assert lookup is not None
    assert lookup("plain") is None  # declares no header: nothing to check, nothing resolved
    assert lookup("nowhere") is None
    assert [] == asked  # no tools/list was resolved for them
    assert lookup("find") is None  # hidden from an anonymous caller: as if it did not exist
    token = CURRENT_PRINCIPAL.set(tw.Principal("alice", groups=["ops"]))
    try:
        assert _HEADED == lookup("find")
    finally:
        CURRENT_PRINCIPAL.reset(token)


_HEADED_APP = """
import toolwire as tw

SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


def find(region: str) -> str:
    return "found in " + region


tools = tw.Toolset("app", [tw.raw_tool("find", "Routed by region.", SCHEMA, find)])
"""


def test_a_2026_client_calls_a_tool_routed_by_header_through_the_gateway(tmp_path: Path) -> None:
    import httpx

    (tmp_path / "app.py").write_text(_HEADED_APP)
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    started = _start_http_gateway(tmp_path, env, ("--app", "app:tools"))
    url = started[1]

    async def call() -> Any:
        async with Client(url) as client:  # 2026-07-28: sends Mcp-Param-Region itself
            return await client.call_tool("find", {"region": "eu-west"})

    def raw(header: str) -> Any:
        return httpx.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "find",
                    "arguments": {"region": "eu-west"},
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            },
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "find",
                "Mcp-Param-Region": header,
            },
            timeout=30,
        )

    try:
        result = anyio.run(call)
        mismatched = raw("us-east")  # an intermediary would route it to the wrong region
    finally:
        _stop_http_gateway(started)
    assert (False, "found in eu-west") == (result.is_error, result.content[0].text)
    assert 400 == mismatched.status_code, mismatched.text
    assert "Mcp-Param-Region" in mismatched.text


def test_a_call_asks_the_availability_hooks_about_the_called_tool_only() -> None:
    # tools/call resolves what tools/list shows this caller of the called tool, not the
    # whole catalogue: with a policy in force and 500 tools, every call asked about 500.
    asked: list[str] = []
    host = _policy_host(_recorded_availability(asked, lambda name, who: name == "t3"))

    def tool(i: int) -> Any:
        return tw.raw_tool(f"t{i}", "Echo.", {"type": "object", "properties": {}}, lambda: f"t{i}")

    server = build_server(tw.Toolset("app", [tool(i) for i in range(50)]), host=host)

    async def calls(client: Client) -> tuple[Any, ...]:
        await client.call_tool("t7", {})  # the client lists the tools too (output schemas)
        before = len(asked)
        ran = await client.call_tool("t7", {})
        during = asked[before:]
        return ran, during, await client.call_tool("t3", {}), await client.call_tool("x", {})

    ran, during, hidden, unknown = _in_process(server, calls)
    assert (False, "t7") == (ran.is_error, ran.content[0].text)
    assert ["t7"] == during  # one question for the call, about the called tool
    assert hidden.is_error
    assert "unknown tool `t3`" in hidden.content[0].text
    assert unknown.is_error
    assert "unknown tool `x`" in unknown.content[0].text


def test_a_files_uri_at_the_gateway_is_its_name_when_that_is_one() -> None:
    # #48: documented (docs/media.md, File's docstring), and held to it here.
    from toolwire_mcp._content import content_block

    def uri(part: Any) -> str:
        return str(content_block(part).resource.uri)

    data = b"%PDF-1.4 tiny"
    assert [
        "file:///reports/q3.pdf",
        "toolwire://result/q3.pdf",
        "toolwire://result/file",
    ] == [
        uri(tw.File(data, name="file:///reports/q3.pdf")),
        uri(tw.File(data, name="q3.pdf")),
        uri(tw.File(data, media_type="application/pdf")),
    ]


# -- structured results (#44): the model reads the text, the client gets the value ------------


class _Reading(BaseModel):
    path: str
    content: str


@tw.tool_fn
def read_secret(path: str) -> tw.Structured[_Reading]:
    """Reads a file: its text for the model, a typed value for the application."""
    text = "user=ada key=AKIAABCDEFGHIJKLMNOP"
    return tw.Structured(_Reading(path=path, content=text), text=text)


def test_a_served_structured_tool_gives_the_text_and_the_value_both_redacted(
    tmp_path: Path,
) -> None:
    pytest.importorskip("toolwire_policy")
    from toolwire_policy import Policy, PolicyPlugin

    policy_file = tmp_path / "toolwire-policy.toml"
    policy_file.write_text("[[redact]]\nresult_patterns = ['AKIA[0-9A-Z]{16}']\n")
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(policy_file)), "corp", kind="policy")

    async def call(client: Client) -> Any:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        return listed, await client.call_tool("read_secret", {"path": "creds"})

    listed, result = _in_process(build_server(tw.Toolset("files", [read_secret]), host=host), call)
    assert ["content", "path"] == sorted(listed["read_secret"].output_schema["properties"])
    assert not result.is_error
    assert ["user=ada key=[REDACTED]"] == [b.text for b in result.content]
    assert {"path": "creds", "content": "user=ada key=[REDACTED]"} == result.structured_content
    # Without the policy the same call gives both in full (the redaction is the policy's).
    _, plain = _in_process(build_server(tw.Toolset("files", [read_secret]), host=_host()), call)
    assert {"path": "creds", "content": "user=ada key=AKIAABCDEFGHIJKLMNOP"} == (
        plain.structured_content
    )


def test_an_upstream_tools_text_reaches_the_model_and_its_value_the_gateways_client(
    stdio_spec: Any,
) -> None:
    # server-filesystem's tools answer with the text in a block and the same as
    # structuredContent: the model read it as escaped JSON inside {"content": ...}.
    from toolwire_mcp import mcp_toolset

    toolset = mcp_toolset("srv", stdio_spec())
    ex = tw.Executor(tools=toolset, plugins=False)  # no policy: what the server gives
    try:
        seen = ex.execute(tw.ToolCall("c1", "typed", "{}"))
    finally:
        ex.close()
    assert ("5", {"result": 5}) == (seen.content, seen.structured)

    async def call(client: Client) -> Any:
        return await client.call_tool("typed", {})

    through = _in_process(build_server(toolset, host=_host()), call)
    assert (False, ["5"], {"result": 5}) == (
        through.is_error,
        [b.text for b in through.content],
        through.structured_content,
    )
