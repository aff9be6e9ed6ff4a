"""The governance matrix's LangChain row: a real LangChain 1.x agent (``create_agent``, a
LangGraph graph with a checkpointer), its own test chat model calling one tool, governed by
one line: ``ToolwireMiddleware``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _matrix import EFFECTS, Runs, Seen
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import toolwire as tw
from toolwire.bridges import Governor
from toolwire_langchain import ToolwireMiddleware, tools

_threads = itertools.count()


class OneCall(BaseChatModel):
    """A chat model that calls one tool, then says what it read back."""

    tool: str
    arguments: dict[str, Any]

    @property
    def _llm_type(self) -> str:
        return "one-call"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):  # what the model read: the run's answer
            reply = AIMessage(content=str(last.content))
        else:
            call = {"name": self.tool, "args": self.arguments, "id": "c1", "type": "tool_call"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class LangChainRow:
    framework = "langchain"

    def __init__(self, host: tw.PluginHost, runs: Runs, where: Path) -> None:
        self.governor = Governor("langchain", plugins=host, effects=EFFECTS)
        self.middleware = ToolwireMiddleware(governor=self.governor)
        self.runs = runs

    def _agent(self, tool: str, arguments: dict[str, Any], pack: tw.Toolset | None) -> Any:
        model = OneCall(tool=tool, arguments=arguments)
        if pack is not None:
            given = tools(pack, governor=self.governor)
        else:
            runs = self.runs
            given = [
                StructuredTool.from_function(fn)
                for fn in (runs.lookup, runs.search, runs.drop_table, runs.send_mail)
            ]
        return create_agent(
            model, tools=given, middleware=[self.middleware], checkpointer=InMemorySaver()
        )

    def _run(self, agent: Any, inputs: Any, principal: tw.Principal, thread: str) -> Seen:
        config = {"configurable": {"thread_id": thread, "principal": principal}}
        state = agent.invoke(inputs, config=config)
        if state.get("__interrupt__"):
            return Seen(None, paused=(agent, principal, thread))
        return Seen(str(state["messages"][-1].content))

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen:
        agent = self._agent(tool, arguments, None)
        return self._run(agent, {"messages": [("user", "go")]}, principal, f"t{next(_threads)}")

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        agent = self._agent(tool, arguments, pack)
        return self._run(agent, {"messages": [("user", "go")]}, principal, f"t{next(_threads)}")

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen:
        agent, principal, thread = paused
        if arguments is None:
            decision: dict[str, Any] = {"type": "approve"}
        else:
            decision = {"type": "edit", "edited_action": {"name": "send_mail", "args": arguments}}
        return self._run(agent, Command(resume={"decisions": [decision]}), principal, thread)
