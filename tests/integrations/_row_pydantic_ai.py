"""The governance matrix's pydantic-ai row: a real pydantic-ai Agent, its own test model
(``FunctionModel``) calling one tool, governed by one line: ``ToolwirePolicy``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _matrix import EFFECTS, Runs, Seen
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
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
from toolwire.bridges import Governor
from toolwire_pydantic_ai import ToolwirePolicy, toolset


class PydanticAiRow:
    framework = "pydantic-ai"

    def __init__(self, host: tw.PluginHost, runs: Runs, where: Path) -> None:
        self.policy = ToolwirePolicy(
            governor=Governor("pydantic-ai", plugins=host, effects=EFFECTS)
        )
        self.runs = runs

    def _agent(
        self, tool: str, arguments: dict[str, Any], pack: tw.Toolset | None = None
    ) -> Agent[tw.Principal, Any]:
        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1]
            if isinstance(last, ModelRequest):
                answers = [p for p in last.parts if isinstance(p, ToolReturnPart)]
                if answers:  # what the model read: the run's output, for the test to see
                    return ModelResponse(parts=[TextPart(str(answers[-1].content))])
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id="c1")])

        if pack is not None:  # the pack as pydantic-ai tools, governed by toolwire's executor
            governed = toolset(pack, governor=self.policy.governor)
            return Agent(
                FunctionModel(model),
                deps_type=tw.Principal,
                output_type=[str, DeferredToolRequests],
                toolsets=[governed],
                capabilities=[self.policy],  # both: a call is still decided once
            )
        runs = self.runs
        agent: Agent[tw.Principal, Any] = Agent(
            FunctionModel(model),
            deps_type=tw.Principal,
            output_type=[str, DeferredToolRequests],
            capabilities=[self.policy],
        )
        for fn in (runs.lookup, runs.search, runs.drop_table, runs.send_mail):
            agent.tool_plain(name=fn.__name__)(fn)
        return agent

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        agent = self._agent(tool, arguments, pack)
        return self._seen(asyncio.run(agent.run("go", deps=principal)), agent, principal)

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen:
        agent = self._agent(tool, arguments)
        result = asyncio.run(agent.run("go", deps=principal))
        return self._seen(result, agent, principal)

    def _seen(self, result: Any, agent: Any, principal: tw.Principal) -> Seen:
        if isinstance(result.output, DeferredToolRequests):
            return Seen(None, paused=(agent, result, principal))
        return Seen(result.output)

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen:
        agent, result, principal = paused
        requests: DeferredToolRequests = result.output
        [call] = requests.approvals
        answer: Any = True if arguments is None else ToolApproved(override_args=arguments)
        again = asyncio.run(
            agent.run(
                message_history=result.all_messages(),
                deferred_tool_results=DeferredToolResults(
                    approvals={call.tool_call_id: answer},
                    metadata={call.tool_call_id: requests.metadata.get(call.tool_call_id, {})},
                ),
                deps=principal,
            )
        )
        return self._seen(again, agent, principal)
