"""#43: the gateway holds a call a policy files in the approval queue, telling its client
(MCP progress notifications) while it waits, and answers once an approver has: the call
run once, or the denial's reason; past its wait, a refusal naming the request."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("toolwire_mcp")
pytest.importorskip("toolwire_policy")  # the policy that files calls for approval

from mcp import Client

import toolwire as tw
from toolwire.approvals import ApprovalQueue, request_ids_in
from toolwire_mcp import build_server
from toolwire_policy import Policy, PolicyPlugin

WIPED: list[str] = []


@tw.tool_fn(effect="destructive")
def wipe(target: str) -> str:
    """Wipe a target."""
    WIPED.append(target)
    return f"wiped {target}"


def _server(tmp_path: Path, wait: float, approve: bool = True) -> tuple[Any, ApprovalQueue]:
    queue = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        f'approve = ["wipe"]\n[approvals]\napprovers = ["group:ops"]\nqueue = "{queue}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    server = build_server(tw.Toolset("app", [wipe]), host=host, approve=approve, approval_wait=wait)
    return server, ApprovalQueue(queue)


#: Set when the gateway has said the call waits (the approver then answers).
TOLD = threading.Event()


def _call(server: Any, target: str) -> tuple[Any, list[str]]:
    said: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        said.append(message or "")
        TOLD.set()

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("wipe", {"target": target}, progress_callback=on_progress)

    return anyio.run(main), said


def _answer(queue: ApprovalQueue, approve: bool) -> threading.Thread:
    def answer() -> None:
        TOLD.wait(60)  # the client heard that its call waits
        [request] = queue.pending()
        queue.answer(request.id, approve=approve, by=tw.Principal("oli", groups={"ops"}),
                     reason="" if approve else "not during the release")  # fmt: skip

    TOLD.clear()  # this call's telling, not an earlier one's
    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def test_the_gateway_holds_the_call_until_it_is_approved_and_says_so(tmp_path: Path) -> None:
    WIPED.clear()
    server, queue = _server(tmp_path, wait=60)
    approver = _answer(queue, approve=True)
    result, said = _call(server, "cache")
    approver.join()
    assert not result.is_error
    assert "wiped cache" == result.content[0].text
    assert ["cache"] == WIPED  # once
    assert said
    assert said[0].startswith("waiting for approval: request apr_")
    assert "waits for group:ops" in said[0]


def test_a_denial_is_the_calls_answer(tmp_path: Path) -> None:
    WIPED.clear()
    server, queue = _server(tmp_path, wait=60)
    approver = _answer(queue, approve=False)
    result, _ = _call(server, "db")
    approver.join()
    assert result.is_error
    assert "oli denied it: not during the release" in result.content[0].text
    assert [] == WIPED


def test_past_its_wait_the_refusal_names_the_request_and_a_later_call_runs(
    tmp_path: Path,
) -> None:
    WIPED.clear()
    server, queue = _server(tmp_path, wait=0.3)
    result, _ = _call(server, "logs")
    assert result.is_error
    [request_id] = request_ids_in(result.content[0].text)
    assert "pending" == queue.get(request_id).state()  # type: ignore[union-attr]
    queue.answer(request_id, approve=True, by=tw.Principal("oli", groups={"ops"}))
    again, _ = _call(server, "logs")  # the same call, made again: runs once
    assert "wiped logs" == again.content[0].text
    assert ["logs"] == WIPED


def test_the_named_approvers_answer_is_the_approval_without_approve(tmp_path: Path) -> None:
    """Without --approve, a client that cannot be asked (no elicitation) would be denied
    a destructive call; where the policy names who approves, their answer is the approval
    (the caller's own approver counts for nothing either way). It was denied after the
    named approver approved."""
    WIPED.clear()
    server, queue = _server(tmp_path, wait=60, approve=False)
    approver = _answer(queue, approve=True)
    result, _ = _call(server, "cache")
    approver.join()
    assert not result.is_error, result.content[0].text
    assert ["cache"] == WIPED
    # Not approved by the policy's approvers: the gateway's own gate still holds.
    unruled = build_server(tw.Toolset("app", [wipe]), host=_no_policy(), approve=False)
    denied, _ = _call(unruled, "db")
    assert denied.is_error
    assert ["cache"] == WIPED


def _no_policy() -> tw.PluginHost:
    return tw.PluginHost(autoload=False, disable_policies=False)


# -- #44: a client that takes tasks gets one, and polls it ----------------------------------


def _as_task(server: Any, target: str, then: Any) -> Any:
    """Call ``wipe`` declaring the tasks extension; ``then(client, created)`` goes on."""
    from toolwire_mcp.client._tasks import TasksExtension

    async def main() -> Any:
        async with Client(server, extensions=[TasksExtension()]) as client:
            created = await client.session.call_tool("wipe", {"target": target}, allow_claimed=True)
            return await then(client, created)

    return anyio.run(main)


async def _get(client: Any, task_id: str) -> dict[str, Any]:
    from toolwire_mcp.client._tasks import _Any, _TaskRequest, _TaskRequestParams

    request = _TaskRequest(method="tasks/get", params=_TaskRequestParams(taskId=task_id))
    got = await client.session.send_request(request, _Any)
    return got.model_dump(by_alias=True, exclude_none=True)


def test_a_waiting_call_is_answered_as_a_task_that_completes_when_approved(
    tmp_path: Path,
) -> None:
    WIPED.clear()
    server, queue = _server(tmp_path, wait=60)
    seen: list[dict[str, Any]] = []

    async def poll(client: Any, created: Any) -> dict[str, Any]:
        # The request was answered at once, with a task saying what it waits for.
        assert "task" == created.result_type
        assert created.status_message.startswith("waiting for approval: request apr_")
        [request] = queue.pending()
        assert request.id in created.status_message
        first = await _get(client, created.task_id)
        seen.append(first)
        assert [] == WIPED  # nothing ran while it waits
        queue.answer(request.id, approve=True, by=tw.Principal("oli", groups={"ops"}))
        while True:
            got = await _get(client, created.task_id)
            if got["status"] != "working":
                return got
            await anyio.sleep(0.05)

    done = _as_task(server, "cache", poll)
    assert ("working", "completed") == (seen[0]["status"], done["status"])
    assert "wiped cache" == done["result"]["content"][0]["text"]
    assert ["cache"] == WIPED  # once


def test_toolwires_own_client_follows_the_gateways_task_and_hears_its_status(
    tmp_path: Path,
) -> None:
    # The client side of #44 against the gateway side: an ordinary result, the status
    # heard as progress while the approver has not answered.
    from toolwire_mcp.client._tasks import WATCH, TaskWatch

    WIPED.clear()
    server, queue = _server(tmp_path, wait=60)
    said: list[str] = []

    async def progress(n: float, message: str) -> None:
        said.append(message)
        if "waiting for approval" in message and queue.pending():
            [request] = queue.pending()
            queue.answer(request.id, approve=True, by=tw.Principal("oli", groups={"ops"}))

    async def main() -> Any:
        from toolwire_mcp.client._tasks import TasksExtension

        token = WATCH.set(TaskWatch(lambda: None, progress))
        try:
            async with Client(server, extensions=[TasksExtension()]) as client:
                return await client.call_tool("wipe", {"target": "tmp"})
        finally:
            WATCH.reset(token)

    result = anyio.run(main)
    assert (False, "wiped tmp") == (result.is_error, result.content[0].text)
    assert ["tmp"] == WIPED
    assert any("working: waiting for approval: request apr_" in m for m in said)


def test_a_cancelled_task_never_runs_its_call(tmp_path: Path) -> None:
    WIPED.clear()
    server, queue = _server(tmp_path, wait=60)

    async def cancel(client: Any, created: Any) -> dict[str, Any]:
        from toolwire_mcp.client._tasks import _Any, _TaskRequest, _TaskRequestParams

        request = _TaskRequest(
            method="tasks/cancel", params=_TaskRequestParams(taskId=created.task_id)
        )
        await client.session.send_request(request, _Any)
        got = await _get(client, created.task_id)
        for _ in range(100):
            if got["status"] != "working":
                break
            await anyio.sleep(0.02)
            got = await _get(client, created.task_id)
        [pending] = queue.pending()  # the request stays: answering it runs nothing now
        queue.answer(pending.id, approve=True, by=tw.Principal("oli", groups={"ops"}))
        await anyio.sleep(0.2)
        return got

    assert "cancelled" == _as_task(server, "prod", cancel)["status"]
    assert [] == WIPED


def test_another_principals_task_is_an_unknown_task() -> None:
    from mcp import MCPError

    from toolwire_mcp.gateway._served_tasks import TaskStore

    store = TaskStore(per_principal=2)
    alice = '{"subject": "alice"}'
    task = store.add(alice, "wipe", 60.0, "waiting")
    assert task is store.get(task.id, alice)
    for who, which in (('{"subject": "bob"}', task.id), (alice, "nope"), (alice, 7)):
        with pytest.raises(MCPError, match="unknown task"):
            store.get(which, who)
    # At most two waiting for alice: a third call is held, not a task.
    store.add(alice, "wipe", 60.0, "waiting")
    assert not store.room_for(alice)
    assert store.room_for('{"subject": "bob"}')
