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


def _server(tmp_path: Path, wait: float) -> tuple[Any, ApprovalQueue]:
    queue = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        f'approve = ["wipe"]\n[approvals]\napprovers = ["group:ops"]\nqueue = "{queue}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    server = build_server(tw.Toolset("app", [wipe]), host=host, approve=True, approval_wait=wait)
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
