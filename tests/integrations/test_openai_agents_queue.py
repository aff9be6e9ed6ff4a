"""#43: an OpenAI Agents SDK agent's call that waits for the people a policy names (the
approval queue) pauses with the SDK's own interruption; ``waiting_request(item)`` names
the request; resumed once they answered, the call is decided again and runs once. A real
Agents SDK ``Agent`` and ``Runner`` with the SDK's scripted test model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire_openai_agents")
pytest.importorskip("toolwire_policy")

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing.model import (
    ModelCall,
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)

import toolwire as tw
from toolwire.approvals import ApprovalQueue
from toolwire.bridges import Governor
from toolwire_openai_agents import govern, tools, waiting_request
from toolwire_policy import Policy, PolicyPlugin

set_tracing_disabled(True)  # nothing leaves the machine


def _read_back(call: ModelCall) -> Any:
    outputs = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    return [assistant_message(str(outputs[-1]["output"]) if outputs else "no output")]


def _host(tmp_path: Path) -> tuple[tw.PluginHost, Path]:
    queue_path = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        f'approve = ["pay"]\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue_path}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    return host, queue_path


@pytest.mark.parametrize("answer", ["approve", "deny", "not yet", "sdk rejects"])
@pytest.mark.parametrize("kind", ["govern", "tools"])
def test_the_run_pauses_until_the_named_approvers_answer(
    tmp_path: Path, answer: str, kind: str
) -> None:
    host, queue_path = _host(tmp_path)
    governor = Governor("openai-agents", plugins=host, effects={"pay": "mutating"})
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay."""
        paid.append(amount)
        return f"paid {amount}"

    model = ScriptedModel(
        [[function_call("pay", {"amount": 5}, call_id="c1")], ModelStep.respond(_read_back)]
    )
    if kind == "govern":
        agent = govern(Agent(name="a", model=model, tools=[function_tool(pay)]), governor=governor)
    else:
        pay_tool = tw.tool_fn(pay, effect="mutating")
        agent = Agent(
            name="a", model=model, tools=tools(tw.Toolset("p", [pay_tool]), governor=governor)
        )
    alice = tw.Principal("alice")
    first = asyncio.run(Runner.run(agent, "go", context=alice))
    [item] = first.interruptions  # the SDK's own pause
    request_id = waiting_request(item)
    assert request_id is not None
    assert request_id.startswith("apr_")
    request = ApprovalQueue(queue_path).get(request_id)
    assert request is not None
    assert request.subject == "alice"
    assert [] == paid

    if answer in ("approve", "deny"):
        ApprovalQueue(queue_path).answer(
            request_id, approve=answer == "approve", by=tw.Principal("fran", groups={"finance"}),
            reason="checked",
        )  # fmt: skip
    state = first.to_state()
    if answer == "sdk rejects":
        state.reject(item)
    else:
        state.approve(item)  # the application's yes: it does not stand in for fran's
    again = asyncio.run(Runner.run(agent, state))
    said = str(again.final_output)
    assert [] == again.interruptions
    if answer == "approve":
        assert "paid 5" == said
        assert [5] == paid  # once
        assert "spent" == ApprovalQueue(queue_path).get(request_id).state()  # type: ignore[union-attr]
    elif answer == "deny":
        assert "fran denied it: checked" in said
        assert [] == paid
    elif answer == "not yet":  # resumed before they answered: the model reads where it waits
        assert f"as approval request {request_id}" in said
        assert [] == paid
        assert "pending" == ApprovalQueue(queue_path).get(request_id).state()  # type: ignore[union-attr]
    else:
        assert [] == paid


def test_an_ordinary_approval_names_no_request(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text('approve = ["pay"]\n')
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    governor = Governor("openai-agents", plugins=host, effects={"pay": "mutating"})

    @function_tool
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    model = ScriptedModel(
        [[function_call("pay", {"amount": 5}, call_id="c1")], ModelStep.respond(_read_back)]
    )
    agent = govern(Agent(name="a", model=model, tools=[pay]), governor=governor)
    first = asyncio.run(Runner.run(agent, "go", context=tw.Principal("alice")))
    [item] = first.interruptions
    assert waiting_request(item) is None
    assert waiting_request(object()) is None
