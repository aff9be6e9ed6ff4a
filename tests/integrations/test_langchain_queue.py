"""#43: a LangChain agent's call that waits for the people a policy names (the approval
queue) pauses the graph in LangGraph's own way (an interrupt naming the request); resumed
once they answered, the call runs once. A real agent with its own test chat model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire_langchain")
pytest.importorskip("toolwire_policy")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import toolwire as tw
from toolwire.approvals import ApprovalQueue
from toolwire.bridges import Governor
from toolwire_langchain import QUEUE_KEY, ToolwireMiddleware
from toolwire_policy import Policy, PolicyPlugin


class PayOnce(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "pay-once"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=str(last.content))
        else:
            call = {"name": "pay", "args": {"amount": 5}, "id": "c1", "type": "tool_call"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.mark.parametrize("answer", ["approve", "deny", "not yet"])
def test_the_graph_pauses_until_the_named_approvers_answer(tmp_path: Path, answer: str) -> None:
    queue_path = tmp_path / "approvals.sqlite"
    (tmp_path / "p.toml").write_text(
        f'approve = ["pay"]\n[approvals]\napprovers = ["group:finance"]\nqueue = "{queue_path}"\n'
    )
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(tmp_path / "p.toml")), "corp", kind="policy")
    paid: list[int] = []

    def pay(amount: int) -> str:
        """Pay."""
        paid.append(amount)
        return f"paid {amount}"

    governor = Governor("langchain", plugins=host, effects={"pay": "mutating"})
    agent = create_agent(
        PayOnce(),
        tools=[StructuredTool.from_function(pay)],
        middleware=[ToolwireMiddleware(governor=governor)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1", "principal": tw.Principal("alice")}}
    state = agent.invoke({"messages": [("user", "go")]}, config=config)
    [paused] = state["__interrupt__"]
    request_id = paused.value[QUEUE_KEY]
    assert "waits for group:finance" in paused.value["action_requests"][0]["description"]
    assert [] == paid

    if answer != "not yet":
        ApprovalQueue(queue_path).answer(
            request_id, approve=answer == "approve", by=tw.Principal("fran", groups={"finance"}),
            reason="checked",
        )  # fmt: skip
    resumed = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config=config)
    said = str(resumed["messages"][-1].content)
    if answer == "approve":
        assert "paid 5" == said
        assert [5] == paid  # once
    elif answer == "deny":
        assert "fran denied it: checked" in said
        assert [] == paid
    else:  # resumed before they answered: the model reads where it waits
        assert f"as approval request {request_id}" in said
        assert [] == paid
