"""The governance matrix's OpenAI Agents SDK row: a real Agents SDK ``Agent`` and
``Runner``, the SDK's own scripted test model calling one tool, governed by one line:
``govern(agent)``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _matrix import EFFECTS, Runs, Seen
from agents import Agent, ModelBehaviorError, Runner, function_tool, set_tracing_disabled
from agents.testing.model import (
    ModelCall,
    ModelStep,
    ScriptedModel,
    assistant_message,
    function_call,
)

import toolwire as tw
from toolwire.bridges import Governor
from toolwire_openai_agents import govern, tools

set_tracing_disabled(True)  # no trace export from tests: nothing leaves the machine


def _read_back(call: ModelCall) -> Any:
    """The model's last step: say what the tool's output was."""
    outputs = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    return [assistant_message(str(outputs[-1]["output"]) if outputs else "no output")]


class OpenAIAgentsRow:
    framework = "openai-agents"

    def __init__(self, host: tw.PluginHost, runs: Runs, where: Path) -> None:
        self.governor = Governor("openai-agents", plugins=host, effects=EFFECTS)
        self.runs = runs

    def _agent(self, tool: str, arguments: dict[str, Any], pack: tw.Toolset | None) -> Any:
        model = ScriptedModel(
            [[function_call(tool, arguments, call_id="c1")], ModelStep.respond(_read_back)]
        )
        if pack is not None:
            return Agent(name="a", model=model, tools=tools(pack, governor=self.governor))
        runs = self.runs
        given = [
            function_tool(fn) for fn in (runs.lookup, runs.search, runs.drop_table, runs.send_mail)
        ]
        return govern(Agent(name="a", model=model, tools=given), governor=self.governor)

    def _seen(self, agent: Any, result: Any, principal: tw.Principal) -> Seen:
        if result.interruptions:
            return Seen(None, paused=(agent, result, principal))
        return Seen(str(result.final_output))

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen:
        agent = self._agent(tool, arguments, None)
        result = asyncio.run(Runner.run(agent, "go", context=principal))
        return self._seen(agent, result, principal)

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        agent = self._agent(tool, arguments, pack)
        result = asyncio.run(Runner.run(agent, "go", context=principal))
        return self._seen(agent, result, principal)

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen:
        agent, result, principal = paused
        state = result.to_state()
        [item] = result.interruptions
        if arguments is not None:
            # The SDK approves a call by its id, with the arguments the model sent: another
            # set of arguments is a changed call, which the SDK itself refuses to run.
            item.raw_item.arguments = json.dumps(arguments)
        try:
            state.approve(item)
            again = asyncio.run(Runner.run(agent, state))
        except ModelBehaviorError as exc:
            return Seen(None, raised=str(exc))
        return self._seen(agent, again, principal)
