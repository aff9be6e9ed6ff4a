"""MCP tasks as a client (#44): a call the server runs as a task is followed to its result.

Against ``tasks_server.py``, written from the spec texts, on both wire versions: the
2026-07-28 tasks extension (``protocol="auto"``: the server decides, per call) and the
2025-11-25 experimental tasks (``protocol="legacy"``: a tool whose ``taskSupport`` is
``required`` is called with ``task``). server-everything's ``simulate-research-query`` is
called by the interop run (``tests/interop/run.sh``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _mcp_support import free_port, task_statuses, wait_for_port

import toolwire as tw
from toolwire_mcp import (
    ServerSpec,
    close_all,
    mcp_toolset,
    set_elicitation_handler,
    set_progress_handler,
)

TASKS_SERVER = str(Path(__file__).with_name("tasks_server.py"))
PROTOCOLS = ["auto", "legacy"]  # 2026-07-28 (the extension), 2025-11-25 (experimental)


@pytest.fixture(autouse=True)
def heard() -> Iterator[list[Any]]:
    heard: list[Any] = []
    set_progress_handler(heard.append)
    set_elicitation_handler(lambda request: {"colour": "blue"})
    yield heard
    set_progress_handler(None)
    set_elicitation_handler(None)
    close_all()


def _spec(protocol: str, record: Path, **more: Any) -> ServerSpec:
    return ServerSpec(
        f"tasks_{protocol}",
        command=sys.executable,
        args=(TASKS_SERVER, "stdio"),
        env={"MCP_RECORD": str(record)},
        timeout=10,
        protocol=protocol,  # type: ignore[arg-type]
        **more,
    )


def _run(spec: ServerSpec, tool: str, arguments: str = '{"topic": "owls"}') -> tw.ToolResult:
    executor = tw.Executor(tools=mcp_toolset(spec.name, spec), plugins=False)  # no policy
    try:
        return executor.execute(tw.ToolCall("c1", tool, arguments))
    finally:
        executor.close()


def _ended(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_task_call_gives_its_result_and_the_caller_hears_each_status(
    protocol: str, tmp_path: Path, heard: list[Any]
) -> None:
    result = _run(_spec(protocol, tmp_path / "record.jsonl"), "research")
    assert (False, "report on owls", {"topic": "owls"}) == (
        result.is_error,
        result.content,
        result.structured,
    )
    said = [event.message for event in heard]
    stages = [m.split(": ", 2)[-1] for m in said if ": working: " in m]
    assert ["Gathering sources", "Analyzing content", "Writing the report"] == stages
    if protocol == "auto":  # 2025-11-25: tasks/result may answer before a poll sees it end
        assert said[-1].endswith(": completed: done")
    assert all(m.startswith("task ") for m in said)
    assert [event.progress for event in heard] == list(range(1, len(heard) + 1))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_tasks_question_is_answered_by_the_elicitation_handler(
    protocol: str, tmp_path: Path
) -> None:
    # 2026-07-28: an input request in tasks/get, answered with tasks/update; 2025-11-25:
    # an elicitation/create while tasks/result waits. The same handler answers both.
    result = _run(_spec(protocol, tmp_path / "record.jsonl"), "ask")
    assert (False, "colour: blue") == (result.is_error, result.content)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failed_task_is_an_error_result_naming_the_failure(protocol: str, tmp_path: Path) -> None:
    result = _run(_spec(protocol, tmp_path / "record.jsonl"), "broken")
    assert result.is_error
    assert "failed: the disk is on fire (code -32603)" in result.content
    # The connection is not dropped for it: the next call runs on it.
    assert "plain answer" == _run(_spec(protocol, tmp_path / "record.jsonl"), "plain").content


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_tasks_result_is_checked_against_the_tools_output_schema(
    protocol: str, tmp_path: Path
) -> None:
    result = _run(_spec(protocol, tmp_path / "record.jsonl"), "miscounted")
    assert result.is_error
    assert "integer" in result.content, result.content


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_malformed_task_is_an_error_result_that_says_so(protocol: str, tmp_path: Path) -> None:
    # An empty task id and a status no version has: the call ends with an error the
    # model reads, nothing is polled, and the next call works.
    result = _run(_spec(protocol, tmp_path / "record.jsonl"), "malformed")
    assert result.is_error
    assert "malformed" in result.content, result.content
    assert "at least 1 character" in result.content  # the empty task id, named
    assert "plain answer" == _run(_spec(protocol, tmp_path / "record.jsonl"), "plain").content


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_task_whose_caller_is_cancelled_is_cancelled_on_the_server(
    protocol: str, tmp_path: Path, heard: list[Any]
) -> None:
    record = tmp_path / "record.jsonl"
    spec = _spec(protocol, record)
    executor = tw.Executor(tools=mcp_toolset(spec.name, spec), plugins=False)

    async def cancelled() -> None:
        call = asyncio.ensure_future(executor.aexecute(tw.ToolCall("c1", "slow", '{"topic": "x"}')))
        while not any("taking its time" in (e.message or "") for e in heard):
            await asyncio.sleep(0.02)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    try:
        asyncio.run(cancelled())
    finally:
        executor.close()
    deadline = time.monotonic() + 10
    while not _ended(record) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [{"tool": "slow", "status": "cancelled"}] == [
        {k: v for k, v in e.items() if k != "task"} for e in _ended(record)
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_task_past_its_call_time_is_cancelled_and_says_so(protocol: str, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    started = time.monotonic()
    result = _run(_spec(protocol, record, max_call_time=1.0), "slow")
    assert result.is_error
    assert "within 1 s (max_call_time)" in result.content
    assert time.monotonic() - started < 8
    deadline = time.monotonic() + 10
    while not _ended(record) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ["cancelled"] == [e["status"] for e in _ended(record)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_task_tools_over_streamable_http(protocol: str, tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, TASKS_SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        spec = ServerSpec(
            f"http_{protocol}",
            url=f"http://127.0.0.1:{port}/mcp",
            timeout=10,
            protocol=protocol,  # type: ignore[arg-type]
        )
        result = _run(spec, "research")
        asked = _run(spec, "ask")
    finally:
        close_all()
        proc.terminate()
        proc.wait(10)
    assert (False, "report on owls") == (result.is_error, result.content)
    assert (False, "colour: blue") == (asked.is_error, asked.content)


def test_a_legacy_server_that_runs_no_task_calls_is_not_sent_one(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    spec = _spec("legacy", record)
    spec = ServerSpec(
        "no_caps", command=spec.command, args=spec.args, timeout=10, protocol="legacy",
        env={"MCP_RECORD": str(record), "MCP_NO_TASKS_CAPABILITY": "1"},
    )  # fmt: skip
    result = _run(spec, "research")
    assert result.is_error
    assert "must run as a task, and the server does not declare" in result.content
    assert "plain answer" == _run(spec, "plain").content


def test_an_agent_calls_a_task_tool_like_any_other(tmp_path: Path) -> None:
    from toolwire.providers.test import TestProvider

    spec = _spec("auto", tmp_path / "record.jsonl")
    agent = tw.Agent(TestProvider(), mcp_toolset(spec.name, spec), plugins=False)
    done = agent.run(tw.Session(), "use the research tool on owls")
    results = [
        r for m in done.session.messages if isinstance(m, tw.ToolResultsMessage) for r in m.results
    ]
    assert ["research"] == [r.tool_name for r in results]
    assert "report on" in results[0].content


# -- the gateway: a served tool that declares itself long-running is a task -----------------


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def crunch(rounds: int, mcp: Any = None) -> str:
    """Crunches numbers for a while, saying how far it got."""
    for n in range(rounds):
        await mcp.progress(n + 1, rounds, f"round {n + 1} of {rounds}")
        await asyncio.sleep(0.05)
    return f"crunched {rounds}"


def _gateway() -> Any:
    from toolwire_mcp import build_server

    return build_server(tw.Toolset("jobs", [crunch]), host=tw.PluginHost(autoload=False))


def test_a_long_running_served_tool_is_a_task_to_a_client_that_takes_tasks() -> None:
    import anyio
    from mcp import Client

    from toolwire_mcp.client._tasks import (
        TasksExtension,
        _Any,
        _TaskRequest,
        _TaskRequestParams,
    )

    said: list[str] = []

    async def main() -> tuple[Any, Any, Any]:
        async with Client(_gateway(), extensions=[TasksExtension()]) as client:
            followed = await client.call_tool("crunch", {"rounds": 4})
            created = await client.session.call_tool("crunch", {"rounds": 20}, allow_claimed=True)
            request = _TaskRequest(
                method="tasks/get", params=_TaskRequestParams(taskId=created.task_id)
            )
            await anyio.sleep(0.3)
            got = await client.session.send_request(request, _Any)
        async with Client(_gateway()) as plain:  # no tasks: an ordinary call
            ordinary = await plain.call_tool("crunch", {"rounds": 2})
        return followed, (created, got), ordinary

    with task_statuses(said):
        followed, (created, got), ordinary = anyio.run(main)
    assert (False, "crunched 4") == (followed.is_error, followed.content[0].text)
    assert said[0].endswith(": working: running `crunch`")  # followed as a task
    assert ("task", "working") == (created.result_type, created.status)
    seen = got.model_dump(by_alias=True)
    assert seen["taskId"] == created.task_id
    # The tool's progress is the task's status message (a task gets no notifications).
    assert ("working", True) == (seen["status"], seen["statusMessage"].startswith("round "))
    assert (False, "crunched 2") == (ordinary.is_error, ordinary.content[0].text)


def test_tasks_methods_need_the_extension_declared() -> None:
    import anyio
    from mcp import Client, MCPError

    from toolwire_mcp.client._tasks import _Any, _TaskRequest, _TaskRequestParams

    async def main() -> int:
        async with Client(_gateway()) as client:  # declares no extension
            request = _TaskRequest(method="tasks/get", params=_TaskRequestParams(taskId="x"))
            try:
                await client.session.send_request(request, _Any)
            except MCPError as exc:
                return exc.error.code
        return 0

    assert -32021 == anyio.run(main)


_JOBS_APP = """
import asyncio

import toolwire as tw


@tw.tool_fn(typical_duration=60)
async def crunch(rounds: int) -> str:
    '''Crunches numbers for a while.'''
    await asyncio.sleep(0.05 * rounds)
    return f"crunched {rounds}"


tools = tw.Toolset("jobs", [crunch])
"""


def test_a_task_is_its_principals_alone_and_survives_a_reconnect(tmp_path: Path) -> None:
    # Over Streamable HTTP with two tokens: alice's task is read by alice from a new
    # connection; bob, asking for the same id, is told it is unknown.
    import hashlib

    import anyio
    import httpx2
    from _mcp_support import _env, _start_http_gateway, _stop_http_gateway
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client

    from toolwire_mcp.client._tasks import TasksExtension, _Any, _TaskRequest, _TaskRequestParams

    (tmp_path / "app.py").write_text(_JOBS_APP)
    tokens = tmp_path / "tokens.json"
    tokens.write_text(
        json.dumps(
            {
                "tokens": [
                    {"sha256": "sha256:" + hashlib.sha256(f"{who}-token".encode()).hexdigest(),
                     "subject": who}
                    for who in ("alice", "bob")
                ]
            }
        )
    )  # fmt: skip
    tokens.chmod(0o600)
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    gateway = _start_http_gateway(tmp_path, env, ("--tokens", str(tokens), "--app", "app:tools"))
    url = gateway[1]

    async def as_(token: str, op: Any) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, extensions=[TasksExtension()]) as client:
            return await op(client)

    async def create(client: Any) -> str:
        created = await client.session.call_tool("crunch", {"rounds": 4}, allow_claimed=True)
        assert "task" == created.result_type
        return str(created.task_id)

    def reader(task_id: str) -> Any:
        async def read(client: Any) -> Any:
            request = _TaskRequest(method="tasks/get", params=_TaskRequestParams(taskId=task_id))
            for _ in range(100):
                got = (await client.session.send_request(request, _Any)).model_dump(by_alias=True)
                if got["status"] != "working":
                    return got
                await anyio.sleep(0.05)
            return got

        return read

    async def denied(client: Any, task_id: str) -> str:
        try:
            await reader(task_id)(client)
        except MCPError as exc:
            return exc.error.message
        return "read it"

    try:
        task_id = anyio.run(as_, "alice-token", create)
        bobs = anyio.run(as_, "bob-token", lambda c: denied(c, task_id))
        alices = anyio.run(as_, "alice-token", reader(task_id))  # a new connection
    finally:
        _stop_http_gateway(gateway)
    assert "unknown task" == bobs
    assert "completed" == alices["status"]
    assert "crunched 4" == alices["result"]["content"][0]["text"]


def test_the_gateway_serves_an_upstream_task_only_tool_as_a_task(tmp_path: Path) -> None:
    # An upstream 2025-11-25 server's task-only tool, through the gateway to a 2026-07-28
    # client that takes tasks: a task on both sides, the upstream's statuses in the
    # gateway task's status, the result at the end.
    import anyio
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension

    spec = _spec("legacy", tmp_path / "record.jsonl")
    upstream = mcp_toolset(spec.name, spec)
    assert upstream.get("research").metadata.typical_duration == spec.max_call_time
    server = build_server(upstream, host=tw.PluginHost(autoload=False), approve=True)
    said: list[str] = []

    async def main() -> Any:
        async with Client(server, extensions=[TasksExtension()]) as client:
            return await client.call_tool("research", {"topic": "owls"})

    with task_statuses(said):
        result = anyio.run(main)
    assert (False, "report on owls") == (result.is_error, result.content[0].text)
    assert said[0].endswith(": working: running `research`")


@tw.tool_fn(typical_duration=60, injected=["mcp"])
async def tidy(folder: str, mcp: Any = None) -> str:
    """Tidies a folder, asking first."""
    answer = await mcp.elicit(f"Tidy {folder}?", {"type": "object", "properties": {
        "ok": {"type": "boolean"}}, "required": ["ok"]})  # fmt: skip
    return f"tidied {folder}" if answer.accepted and answer.content["ok"] else "left alone"


def test_a_served_tasks_question_is_an_input_request_its_client_answers() -> None:
    # The gateway's tool asks inside a task (inputRequests, answered with tasks/update);
    # toolwire's client answers through its elicitation handler, as for a direct question.
    import anyio
    import mcp_types as types
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension

    server = build_server(tw.Toolset("jobs", [tidy]), host=tw.PluginHost(autoload=False))
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def main() -> Any:
        async with Client(
            server, extensions=[TasksExtension()], elicitation_callback=answer
        ) as client:
            return await client.call_tool("tidy", {"folder": "attic"})

    result = anyio.run(main)
    assert (False, "tidied attic") == (result.is_error, result.content[0].text)
    assert ["Tidy attic?"] == asked


def test_a_tasks_questions_take_only_answers_to_what_waits() -> None:
    # tasks/update is outside input: a key never asked, one answered already, and an
    # answer that is no object are ignored; the question waits for its own answer.
    from toolwire_mcp.gateway._served_tasks import TaskStore

    async def main() -> tuple[Any, Any, list[str]]:
        task = TaskStore().add("", "tidy", 60.0, "running")
        asking = asyncio.ensure_future(task.ask({"method": "elicitation/create"}, 5.0))
        await asyncio.sleep(0)
        seen = [task.status, *task.view()["inputRequests"]]
        task.answer({"input-9": {"action": "accept"}, "input-1": "yes", 7: {}})
        await asyncio.sleep(0)
        assert not asking.done()
        task.answer({"input-1": {"action": "decline"}})
        got = await asking
        task.answer({"input-1": {"action": "accept"}})  # answered already: ignored
        late = await task.ask({"method": "elicitation/create"}, 0.01)  # nobody answers
        return got, late, [*seen, task.status]

    got, late, seen = asyncio.run(main())
    assert {"action": "decline"} == got
    assert late is None
    assert ["input_required", "input-1", "working"] == seen


def test_a_task_waiting_on_a_question_counts_as_live_and_is_not_swept() -> None:
    from toolwire_mcp.gateway._served_tasks import TaskStore

    store = TaskStore(per_principal=1)
    task = store.add("", "tidy", 0.0, "asking")  # its time to live is over at once
    task.status = "input_required"
    assert not store.room_for("")  # it counts against its principal's limit
    assert task is store.get(task.id, "")  # and is kept while its call still runs
    task.status = "completed"
    assert store.room_for("")
    assert 0 == len(store)  # ended and past its time: gone


# -- the gateway's 2025-11-25 task side: a task-augmented call of a long-running tool -------


def test_a_legacy_client_calls_a_long_running_tool_as_a_task() -> None:
    # A 2025-11-25 client (the SDK's, handshake mode): the tool list says `crunch` may run
    # as a task, the capabilities that task-augmented calls run; its call with `task` is
    # answered with the task, tasks/get says how it stands, tasks/result gives the result.
    import anyio
    import mcp_types as types
    from mcp import Client, MCPError

    from toolwire_mcp.client._tasks import (
        WATCH,
        _Any,
        _LegacyTask,
        _raw_call,
        _send,
        call_as_task,
        runs_task_calls,
    )

    said: list[str] = []

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_gateway(), mode="legacy") as client:
            out["caps"] = runs_task_calls(client.server_capabilities)
            listed = {t.name: t for t in (await client.list_tools()).tools}
            out["support"] = listed["crunch"].execution.task_support  # type: ignore[union-attr]
            with task_statuses(said):
                out["followed"] = await call_as_task(
                    client.session, "crunch", {"rounds": 4}, limit=30, watch=WATCH.get()
                )
            raw = await _raw_call(
                client.session,
                {"name": "crunch", "arguments": {"rounds": 30}, "task": {"ttl": 120_000}},
                30, None,
            )  # fmt: skip
            out["created"] = raw
            task_id = raw["task"]["taskId"]
            await anyio.sleep(0.2)
            out["got"] = await _send(client.session, "tasks/get", task_id, _LegacyTask, 10)
            for method in ("tasks/update",):
                try:
                    await _send(client.session, method, task_id, _Any, 10, inputResponses={})
                except MCPError as exc:
                    out[method] = exc.error.code
            out["cancelled"] = await _send(client.session, "tasks/cancel", task_id, _Any, 10)
            try:
                await _send(client.session, "tasks/result", task_id, _Any, 10)
            except MCPError as exc:
                out["result after cancel"] = exc.error.message
            # Without `task`: an ordinary call, as before.
            out["ordinary"] = await client.call_tool("crunch", {"rounds": 1})
        return out

    out = anyio.run(main)
    assert out["caps"] is True
    assert "optional" == out["support"]
    followed = out["followed"]
    assert isinstance(followed, types.CallToolResult)
    assert (False, "crunched 4") == (followed.is_error, followed.content[0].text)
    assert said[0].endswith(": working: running `crunch`")  # followed as a task
    task = out["created"]["task"]
    assert "resultType" not in out["created"]
    assert ("working", 120_000, 1000) == (task["status"], task["ttl"], task["pollInterval"])
    assert out["got"].task_id == task["taskId"]
    assert out["got"].status_message.startswith("round ")  # the tool's progress
    assert -32601 == out["tasks/update"]  # a 2026-07-28 method
    assert "cancelled" == out["cancelled"].model_dump(by_alias=True)["status"]
    assert "was cancelled" in out["result after cancel"]
    assert (False, "crunched 1") == (out["ordinary"].is_error, out["ordinary"].content[0].text)


def test_a_legacy_tasks_question_goes_to_its_client_on_the_result_request() -> None:
    # The tool asks inside the task: on 2025-11-25 the question is an elicitation request
    # on the client's tasks/result request, and its answer goes back into the task.
    import anyio
    import mcp_types as types
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import call_as_task

    server = build_server(tw.Toolset("jobs", [tidy]), host=tw.PluginHost(autoload=False))
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def main() -> Any:
        async with Client(server, mode="legacy", elicitation_callback=answer) as client:
            return await call_as_task(client.session, "tidy", {"folder": "attic"}, limit=30)

    result = anyio.run(main)
    assert (False, "tidied attic") == (result.is_error, result.content[0].text)
    assert ["Tidy attic?"] == asked


def test_a_task_of_one_wire_version_is_unknown_to_the_other() -> None:
    # A 2026-07-28 task's id asked of by a 2025-11-25 request (and the other way) is
    # an unknown task; tasks/result is a 2025-11-25 method only.
    import anyio
    from mcp import Client, MCPError

    from toolwire_mcp.client._tasks import TasksExtension, _Any, _raw_call, _send

    server = _gateway()

    async def main() -> list[Any]:
        codes: list[Any] = []
        async with Client(server, mode="legacy") as old:
            raw = await _raw_call(
                old.session, {"name": "crunch", "arguments": {"rounds": 40}, "task": {}}, 30, None
            )
            legacy_id = raw["task"]["taskId"]
            async with Client(server, extensions=[TasksExtension()]) as new:
                for method in ("tasks/get", "tasks/result"):
                    try:
                        await _send(new.session, method, legacy_id, _Any, 10)
                    except MCPError as exc:
                        codes.append((method, exc.error.code))
            await _send(old.session, "tasks/cancel", legacy_id, _Any, 10)
        return codes

    assert [("tasks/get", -32602), ("tasks/result", -32601)] == anyio.run(main)


def test_toolwire_on_2025_11_25_calls_the_gateways_long_tool_as_a_task(
    tmp_path: Path, heard: list[Any]
) -> None:
    # Both sides real: `toolwire mcp serve` in a process of its own over Streamable HTTP,
    # and toolwire's client pinned to the 2025-11-25 handshake. The tool may run as a task
    # and the server runs task-augmented calls, so the client calls it as one: its statuses
    # reach the caller as progress, and the result is the tool's.
    from _mcp_support import _env, _start_http_gateway, _stop_http_gateway

    (tmp_path / "app.py").write_text(_JOBS_APP.replace("0.05 * rounds", "0.4 * rounds"))
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    gateway = _start_http_gateway(tmp_path, env, ("--app", "app:tools"))
    try:
        spec = ServerSpec("jobs", url=gateway[1], protocol="legacy", timeout=30)
        result = _run(spec, "crunch", '{"rounds": 4}')
    finally:
        close_all()
        _stop_http_gateway(gateway)
    assert (False, "crunched 4") == (result.is_error, result.content)
    said = [getattr(event, "message", "") or "" for event in heard]
    assert any(m.startswith("task ") and ": working: running `crunch`" in m for m in said), said


@tw.tool_fn(injected=["mcp"])
async def ask_first(folder: str, mcp: Any = None) -> str:
    """Asks before it does anything (not a long-running tool)."""
    answer = await mcp.elicit(f"Clean {folder}?", {"type": "object", "properties": {
        "ok": {"type": "boolean"}}, "required": ["ok"]})  # fmt: skip
    return f"cleaned {folder}" if answer.accepted and answer.content["ok"] else "left alone"


def test_a_question_with_no_back_channel_makes_the_call_a_task() -> None:
    # A 2026-07-28 request has no back-channel for a question; a client that takes tasks
    # gets the call as a task the moment the tool asks, and answers the question as the
    # task's input request. A client that takes none is asked in the call's result
    # (test_mcp_rounds.py).
    import anyio
    import mcp_types as types
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension

    server = build_server(tw.Toolset("jobs", [ask_first]), host=tw.PluginHost(autoload=False))
    asked: list[str] = []

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async def main() -> tuple[Any, Any]:
        async with Client(
            server, extensions=[TasksExtension()], elicitation_callback=answer
        ) as client:
            tasked = await client.call_tool("ask_first", {"folder": "attic"})
        async with Client(server, elicitation_callback=answer) as plain:
            rounds = await plain.call_tool("ask_first", {"folder": "cellar"})
        return tasked, rounds

    said: list[str] = []
    with task_statuses(said):
        tasked, rounds = anyio.run(main)
    assert (False, "cleaned attic") == (tasked.is_error, tasked.content[0].text)
    assert said[0].endswith("waiting for an answer from its user")
    assert (False, "cleaned cellar") == (rounds.is_error, rounds.content[0].text)
    assert ["Clean attic?", "Clean cellar?"] == asked


def test_a_tool_served_only_as_a_task_refuses_a_call_that_cannot_be_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # build_server(task_only=[...]) (`toolwire mcp serve --task-only NAME`): the tool list
    # says `required`; a 2026-07-28 client without the extension is refused with -32021
    # naming it, a 2025-11-25 call without `task` with -32601; a client that takes tasks
    # gets one, on either version.
    import anyio
    from mcp import Client, MCPError

    from toolwire.exceptions import UsageError
    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension, call_as_task

    server = build_server(
        tw.Toolset("jobs", [crunch]),
        host=tw.PluginHost(autoload=False),
        task_only=["crunch", "nothing_here"],
    )
    assert "task_only names no tool served here (yet): nothing_here" in caplog.text

    async def refused(client: Any) -> tuple[int, Any]:
        try:
            await client.call_tool("crunch", {"rounds": 1})
        except MCPError as exc:
            return exc.error.code, exc.error.data
        return 0, None

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(server) as plain:
            out["modern"] = await refused(plain)
        async with Client(server, mode="legacy") as old:
            listed = (await old.list_tools()).tools
            out["support"] = listed[0].execution.task_support  # type: ignore[union-attr]
            out["legacy"] = await refused(old)
            out["legacy task"] = await call_as_task(old.session, "crunch", {"rounds": 2}, limit=30)
        async with Client(server, extensions=[TasksExtension()]) as new:
            out["modern task"] = await new.call_tool("crunch", {"rounds": 3})
        return out

    out = anyio.run(main)
    code, data = out["modern"]
    assert -32021 == code
    assert {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}} == data
    assert -32601 == out["legacy"][0]
    assert "required" == out["support"]
    assert "crunched 2" == out["legacy task"].content[0].text
    assert "crunched 3" == out["modern task"].content[0].text
    with pytest.raises(UsageError, match="a list of tool names"):
        build_server(tw.Toolset("jobs", [crunch]), host=tw.PluginHost(autoload=False),
                     task_only="crunch")  # fmt: skip


GATHERED: list[str] = []


@tw.tool_fn(injected=["mcp"])
async def gather_then_work(mcp: Any = None) -> str:
    """Asks for a name in the call, then goes on as a task (SEP-2663's composition)."""
    GATHERED.append("ran")
    answer = await mcp.elicit(
        "Your name?",
        {"type": "object", "properties": {"user_name": {"type": "string"}}},
        before_task=True,
    )
    name = (answer.content or {}).get("user_name", "nobody")
    GATHERED.append(f"as task: {await mcp.continue_as_task(f'greeting {name}')}")
    await asyncio.sleep(0.05)
    return f"Hello, {name}!"


@tw.tool_fn(injected=["mcp"])
async def quick_job(mcp: Any = None) -> str:
    """Served only as a task, but ends before it says it goes on as one."""
    return "done at once"


def _recording(server: Any, seen: list[Any]) -> None:
    """Record every tools/call answer as the client receives it (the outermost middleware)."""

    async def record(ctx: Any, call_next: Any) -> Any:
        out = await call_next(ctx)
        if ctx.method == "tools/call":
            dump = getattr(out, "model_dump", None)
            seen.append(dump(by_alias=True, mode="json", exclude_none=True) if dump else out)
        return out

    server.middleware.insert(0, record)


def test_a_tool_gathers_input_in_rounds_and_then_goes_on_as_a_task() -> None:
    # SEP-2663's MRTR composition (the conformance suite's tasks-mrtr-composition): the
    # first round asks (no task id), the second, with the answer, is the task (no request
    # state), and the task's result has the answer in it.
    import anyio
    import mcp_types as types
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension

    server = build_server(
        tw.Toolset("jobs", [gather_then_work, quick_job]),
        host=tw.PluginHost(autoload=False),
        task_only=["gather_then_work", "quick_job"],
    )
    seen: list[Any] = []
    _recording(server, seen)
    GATHERED.clear()

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"user_name": "Alice"})

    async def main() -> tuple[Any, Any]:
        async with Client(
            server, extensions=[TasksExtension()], elicitation_callback=answer
        ) as client:
            greeted = await client.call_tool("gather_then_work", {})
            quick = await client.call_tool("quick_job", {})
        return greeted, quick

    said: list[str] = []
    with task_statuses(said):
        greeted, quick = anyio.run(main)
    assert (False, "Hello, Alice!") == (greeted.is_error, greeted.content[0].text)
    assert ["ran", "ran", "as task: True"] == GATHERED
    first, second, third = seen
    assert ("input_required", False) == (first["resultType"], "taskId" in first)
    assert ("task", True) == (second["resultType"], bool(second["taskId"]))
    assert not {"requestState", "inputRequests"} & set(second)
    assert "greeting Alice" == second.get("statusMessage")
    # A task-only tool's call that ended before it became a task: a task already done.
    assert ("task", "completed") == (third["resultType"], third["status"])
    assert "done at once" == quick.content[0].text


def test_continue_as_task_is_false_where_the_call_cannot_be_one() -> None:
    # A client that declared the extension gets a task, from any tool of a gateway that
    # may answer with one; no extension declared, or a gateway that serves no task for
    # the tool (approval_wait=0 and neither task-only nor long-running), goes on as it
    # is; a 2025-11-25 task call is one from its start.
    import anyio
    import mcp_types as types
    from mcp import Client

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TasksExtension, call_as_task

    async def answer(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"user_name": "Bo"})

    def serve(**options: Any) -> Any:
        jobs = tw.Toolset("jobs", [gather_then_work])
        return build_server(jobs, host=tw.PluginHost(autoload=False), **options)

    default, no_wait, only = serve(), serve(approval_wait=0), serve(task_only=["gather_then_work"])
    GATHERED.clear()

    async def main() -> list[str]:
        out = []
        for server, extensions in ((default, [TasksExtension()]), (default, []),
                                   (no_wait, [TasksExtension()])):  # fmt: skip
            async with Client(server, extensions=extensions, elicitation_callback=answer) as c:
                out.append((await c.call_tool("gather_then_work", {})).content[0].text)
        async with Client(only, mode="legacy", elicitation_callback=answer) as old:
            done = await call_as_task(old.session, "gather_then_work", {}, limit=30)
            out.append(done.content[0].text)
        return out

    assert ["Hello, Bo!"] * 4 == anyio.run(main)
    # Two rounds each on 2026-07-28 (the question asked in the call), and one run as a
    # 2025-11-25 task (one from its start: its question went on tasks/result).
    assert GATHERED == [
        *("ran", "ran", "as task: True"),
        *("ran", "ran", "as task: False"),
        *("ran", "ran", "as task: False"),
        *("ran", "as task: True"),
    ]


@tw.tool_fn(typical_duration=60)
async def broken_job(fail: bool = True) -> str:
    """Ends in a protocol error, as the MCP SDK's tools raise one."""
    from mcp import MCPError

    if fail:
        raise MCPError(-32603, "the job's store is gone", {"store": "jobs"})
    return "ran"


@tw.tool_fn
def broken_now() -> str:
    """A protocol error from an ordinary call."""
    from mcp import MCPError

    raise MCPError(-32010, "not this way")


def test_a_tool_that_raises_a_protocol_error_ends_its_call_with_it() -> None:
    # The SDK's convention: MCPError from a tool is a JSON-RPC error, not a result the
    # model reads (a failed task when the call is one); any other exception stays an
    # error result (a completed task with isError). The conformance suite's
    # tasks-lifecycle asks both.
    import anyio
    from mcp import Client, MCPError

    from toolwire_mcp import build_server
    from toolwire_mcp.client._tasks import TaskError, TasksExtension

    records: list[Any] = []
    host = tw.PluginHost(autoload=False)

    class Results:
        @tw.hookimpl
        def toolwire_tool_result(self, call: Any, result: Any, context: Any) -> None:
            records.append((call.name, result.is_error))

    host.register(Results(), name="results")
    server = build_server(tw.Toolset("jobs", [broken_job, broken_now]), host=host)

    async def caught(client: Any, name: str) -> Any:
        try:
            return await client.call_tool(name, {})
        except MCPError as exc:
            return exc.error.code, exc.error.message, exc.error.data
        except TaskError as exc:
            return str(exc)

    async def main() -> list[Any]:
        out = []
        async with Client(server) as plain:
            out.append(await caught(plain, "broken_now"))
            out.append(await caught(plain, "broken_job"))
        async with Client(server, extensions=[TasksExtension()]) as tasks:
            out.append(await caught(tasks, "broken_job"))
            ok = await tasks.call_tool("broken_job", {"fail": False})
            out.append(ok.content[0].text)
        return out

    now, plain, tasked, ok = anyio.run(main)
    assert (-32010, "not this way", None) == now
    assert (-32603, "the job's store is gone", {"store": "jobs"}) == plain
    # As a task: failed, its error the tool's (toolwire's client raises on a failed task).
    assert tasked.endswith("failed: the job's store is gone (code -32603)")
    assert "ran" == ok
    # Each attempt recorded as the executor records a failure (the result hooks saw it).
    failed = [("broken_now", True)] + [("broken_job", True)] * 2 + [("broken_job", False)]
    assert failed == records
