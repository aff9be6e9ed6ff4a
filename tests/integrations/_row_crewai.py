"""The governance matrix's CrewAI row: a real CrewAI crew (an agent, a task, kickoff), a
CrewAI LLM of the test's own (``BaseLLM``, answering in CrewAI's ReAct format) calling one
tool, governed by one line: ``govern()``. CrewAI asks a person inline (its human input):
the row's approver stands for the person, approving the questions it was told to."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from _matrix import EFFECTS, Runs, Seen
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool as crew_tool
from pydantic import Field
from toolwire_crewai import govern, tools

import toolwire as tw
from toolwire.bridges import Governor


class OneCall(BaseLLM):
    """Calls one tool (ReAct text), then answers with what it observed."""

    tool_name: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        said = [str(m.get("content")) for m in messages if m.get("role") == "assistant"]
        if said:
            observed = said[-1].rsplit("Observation:", 1)[1].strip()
            return f"Thought: I have it.\nFinal Answer: {observed}"
        given = json.dumps(self.arguments)
        return f"Thought: call it\nAction: {self.tool_name}\nAction Input: {given}"

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8000


class CrewAIRow:
    framework = "crewai"

    def __init__(self, host: tw.PluginHost, runs: Runs, where: Path) -> None:
        self.governor = Governor("crewai", plugins=host, effects=EFFECTS)
        self.runs = runs
        self.approved: set[str] = set()
        self.asked: list[str] = []
        self.governance = govern(governor=self.governor, approver=self._person)

    def close(self) -> None:
        self.governance.remove()

    def _person(self, context: Any, question: str) -> bool:
        self.asked.append(question)
        return question in self.approved

    def _kickoff(
        self,
        tool: str,
        arguments: dict[str, Any],
        principal: tw.Principal,
        given: list[Any],
        pause: bool = True,
    ) -> Seen:
        llm = OneCall(model="one-call", tool_name=tool, arguments=arguments)
        agent = Agent(role="r", goal="g", backstory="b", llm=llm, tools=given, verbose=False)
        task = Task(description="go", expected_output="what the tool said", agent=agent)
        asked = len(self.asked)
        out = Crew(agents=[agent], tasks=[task], verbose=False).kickoff(
            inputs={"principal": principal.subject}
        )
        question = self.asked[asked] if len(self.asked) > asked else None
        if pause and question is not None and question not in self.approved:
            return Seen(None, paused=(tool, arguments, principal, given, question))
        return Seen(out.raw)

    def _tools(self) -> list[Any]:
        runs = self.runs
        return [
            crew_tool(fn.__name__)(fn)
            for fn in (runs.lookup, runs.search, runs.drop_table, runs.send_mail)
        ]

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen:
        return self._kickoff(tool, arguments, principal, self._tools())

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        given = tools(pack, governor=self.governor, principal=principal, approver=self._person)
        return self._kickoff(tool, arguments, principal, given)

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen:
        # The person approves the call they were asked about; the crew runs again. With
        # other arguments, the question is another one, which they did not approve.
        tool, asked_args, principal, given, question = paused
        self.approved.add(question)
        return self._kickoff(tool, arguments or asked_args, principal, given, pause=False)
