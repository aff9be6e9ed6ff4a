"""The governance matrix's Google ADK row: a real ADK ``LlmAgent`` and ``Runner`` with an
in-memory session service, a ``BaseLlm`` of the test's own calling one tool, governed by
one line: ``plugins=[ToolwirePlugin()]``. Approvals are ADK's own tool confirmations."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from _matrix import EFFECTS, Runs, Seen
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field
from toolwire_adk import ToolwirePlugin, tools

import toolwire as tw
from toolwire.bridges import Governor

_sessions = itertools.count()
CONFIRM = "adk_request_confirmation"


class OneCall(BaseLlm):
    """Calls one tool, then says what it read back."""

    tool: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        answers = [
            p.function_response
            for c in llm_request.contents
            for p in (c.parts or [])
            if p.function_response is not None and p.function_response.name == self.tool
        ]
        if answers:
            said = answers[-1].response or {}
            text = said.get("result", said.get("error", str(said)))
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text=str(text))])
            )
            return
        call = types.FunctionCall(name=self.tool, args=self.arguments, id="c1")
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


class AdkRow:
    framework = "google-adk"

    def __init__(self, host: tw.PluginHost, runs: Runs, where: Path) -> None:
        self.governor = Governor("google-adk", plugins=host, effects=EFFECTS)
        self.runs = runs

    def _run(
        self, tool: str, arguments: dict[str, Any], principal: tw.Principal, given: list[Any]
    ) -> Seen:
        agent = LlmAgent(
            name="a", model=OneCall(model="one-call", tool=tool, arguments=arguments), tools=given
        )
        sessions = InMemorySessionService()
        app = App(name="matrix", root_agent=agent, plugins=[ToolwirePlugin(governor=self.governor)])
        runner = Runner(app=app, session_service=sessions)
        session = f"s{next(_sessions)}"
        asyncio.run(
            sessions.create_session(
                app_name="matrix", user_id=principal.subject, session_id=session
            )
        )
        message = types.Content(role="user", parts=[types.Part(text="go")])
        return self._drive(runner, principal, session, message)

    def _drive(self, runner: Runner, principal: tw.Principal, session: str, message: Any) -> Seen:
        async def drive() -> tuple[list[Any], list[str]]:
            asks, texts = [], []
            async for event in runner.run_async(
                user_id=principal.subject, session_id=session, new_message=message
            ):
                for part in (event.content.parts or []) if event.content else []:
                    if part.function_call is not None and part.function_call.name == CONFIRM:
                        asks.append(part.function_call)
                    if part.text and event.author != "user":
                        texts.append(part.text)
            return asks, texts

        asks, texts = asyncio.run(drive())
        if asks:
            return Seen(None, paused=(runner, principal, session, asks[-1]))
        return Seen(texts[-1] if texts else None)

    def call(self, tool: str, arguments: dict[str, Any], principal: tw.Principal) -> Seen:
        runs = self.runs
        given = [runs.lookup, runs.search, runs.drop_table, runs.send_mail]
        return self._run(tool, arguments, principal, given)

    def call_pack(
        self, pack: tw.Toolset, tool: str, arguments: dict[str, Any], principal: tw.Principal
    ) -> Seen:
        return self._run(tool, arguments, principal, tools(pack, governor=self.governor))

    def resume(self, paused: Any, *, arguments: dict[str, Any] | None = None) -> Seen:
        runner, principal, session, ask = paused
        answer: dict[str, Any] = {"confirmed": True}
        if arguments is not None:
            # ADK re-runs the call it asked about; a client can only confirm it (or send a
            # payload): a payload approving other arguments is what it can change.
            answer["payload"] = {"toolwire_approval": "sha256:" + "0" * 64}
        response = types.FunctionResponse(name=CONFIRM, id=ask.id, response=answer)
        message = types.Content(role="user", parts=[types.Part(function_response=response)])
        return self._drive(runner, principal, session, message)
