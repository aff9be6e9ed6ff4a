"""#43: a pydantic-ai agent's call that waits for the people a policy names (the approval
queue) is deferred in pydantic-ai's own way (``ApprovalRequired``, the request in its
metadata); resumed once they answered, the call runs once. A real agent, its own test
model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire_pydantic_ai")
pytest.importorskip("toolwire_policy")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolwire as tw
from toolwire.approvals import ApprovalQueue
from toolwire.bridges import Governor
from toolwire_policy import Policy, PolicyPlugin
from toolwire_pydantic_ai import QUEUE_KEY, ToolwirePolicy


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest):
        answers = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if answers:
            return ModelResponse(parts=[TextPart(str(answers[-1].content))])
    return ModelResponse(parts=[ToolCallPart("pay", {"amount": 5}, tool_call_id="c1")])


@pytest.mark.parametrize("answer", ["approve", "deny", "not yet"])
def test_the_call_is_deferred_until_the_named_approvers_answer(tmp_path: Path, answer: str) -> None:
    queue_path = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        f'approve = ["pay"]\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue_path}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    policy = ToolwirePolicy(
        governor=Governor("pydantic-ai", plugins=host, effects={"pay": "mutating"})
    )
    agent: Agent[tw.Principal, Any] = Agent(
        FunctionModel(model),
        deps_type=tw.Principal,
        output_type=[str, DeferredToolRequests],
        capabilities=[policy],
    )
    paid: list[int] = []

    @agent.tool_plain
    def pay(amount: int) -> str:
        """Pay."""
        paid.append(amount)
        return f"paid {amount}"

    alice = tw.Principal("alice")
    first = asyncio.run(agent.run("go", deps=alice))
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    [call] = requests.approvals
    meta = requests.metadata[call.tool_call_id]
    request_id = meta[QUEUE_KEY]
    assert "waits for group:finance" in meta["reason"]
    assert [] == paid

    if answer != "not yet":
        ApprovalQueue(queue_path).answer(
            request_id, approve=answer == "approve", by=tw.Principal("fran", groups={"finance"}),
            reason="checked",
        )  # fmt: skip
    again = asyncio.run(
        agent.run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={call.tool_call_id: True}, metadata={call.tool_call_id: meta}
            ),
            deps=alice,
        )
    )
    said = str(again.output)
    if answer == "approve":
        assert "paid 5" == said
        assert [5] == paid  # once
    elif answer == "deny":
        assert "fran denied it: checked" in said
        assert [] == paid
    else:  # resumed before they answered: the model reads where it waits
        assert f"as approval request {request_id}" in said
        assert [] == paid
