"""What governing another framework's agent costs per tool call:
``uv run python -m bench.bridges [--quick] [--json OUT]``.

For each framework with a toolwire bridge, a real agent of that framework with its own test
model (no network) makes ``CALLS`` tool calls in one run, one per model step, of a tool that
returns at once: first as the framework runs it alone, then governed by the bridge's one
line under a policy plugin that decides every call (allow, with toolwire-policy's rules
and its hash-chained audit log written for every call: the real job). Runs alternate,
plain and governed, and the medians of the per-call times are compared. Target: governance
adds at most 10% or 50 µs per call, whichever is larger.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolwire as tw

#: Tool calls per agent run (one per model step): a short run, so the framework's own
#: per-call cost is not inflated by scanning a long history.
CALLS = 20
#: The most governance may add per call: this share of the framework's own cost, or this
#: many microseconds, whichever is larger.
SHARE, FLOOR_US = 0.10, 50.0

POLICY = 'deny = ["drop_*"]\n\n[audit]\npath = "audit.jsonl"\n'


def echo(text: str) -> str:
    """Echo the text."""
    return text


def _host(where: Path) -> tw.PluginHost:
    from toolwire_policy import Policy, PolicyPlugin

    (where / "policy.toml").write_text(POLICY)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(where / "policy.toml")), "corp", kind="policy")
    return host


def _pydantic_ai(host: tw.PluginHost | None, calls: int) -> Callable[[], float]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(
            isinstance(p, ToolReturnPart)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
        )
        if step >= calls:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("echo", {"text": "hi"}, tool_call_id=f"c{step}")])

    capabilities: list[Any] = []
    if host is not None:
        from toolwire.bridges import Governor
        from toolwire_pydantic_ai import ToolwirePolicy

        governor = Governor("pydantic-ai", plugins=host, effects={"echo": "read_only"})
        capabilities = [ToolwirePolicy(governor=governor)]
    agent = Agent(FunctionModel(model), capabilities=capabilities)
    agent.tool_plain(echo)

    def run() -> float:
        start = time.perf_counter()
        result = agent.run_sync("go", usage_limits=UsageLimits(request_limit=calls + 5))
        elapsed = time.perf_counter() - start
        assert result.output == "done", result.output
        return elapsed / calls

    return run


def _langchain(host: tw.PluginHost | None, calls: int) -> Callable[[], float]:
    from collections.abc import Sequence

    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool

    class Steps(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "steps"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, **kwargs: Any
        ) -> ChatResult:
            step = sum(isinstance(m, ToolMessage) for m in messages)
            if step >= calls:
                reply = AIMessage(content="done")
            else:
                call = {"name": "echo", "args": {"text": "hi"}, "id": f"c{step}"}
                reply = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    middleware: list[Any] = []
    if host is not None:
        from toolwire.bridges import Governor
        from toolwire_langchain import ToolwireMiddleware

        governor = Governor("langchain", plugins=host, effects={"echo": "read_only"})
        middleware = [ToolwireMiddleware(governor=governor)]
    agent = create_agent(Steps(), tools=[StructuredTool.from_function(echo)], middleware=middleware)

    def run() -> float:
        start = time.perf_counter()
        state = agent.invoke(
            {"messages": [("user", "go")]}, config={"recursion_limit": 4 * calls + 10}
        )
        elapsed = time.perf_counter() - start
        assert state["messages"][-1].content == "done"
        return elapsed / calls

    return run


def _policy_floor() -> float:
    """µs per call of the policy's own work, through toolwire's executor alone: the part
    of governance that stays whatever framework the call comes from."""
    import asyncio

    with tempfile.TemporaryDirectory() as tmp:
        host = _host(Path(tmp))
        tool = tw.tool_fn(echo, effect="read_only")
        executor = tw.Executor(tools=[tool], plugins=host)
        typed = tw.TypedCall(
            tw.ToolCall("c", "echo", '{"text": "hi"}'), tool, tool.validate_json('{"text": "hi"}')
        )

        async def calls(n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                await executor.aexecute(typed)
            return (time.perf_counter() - start) / n

        asyncio.run(calls(200))
        return statistics.median(asyncio.run(calls(1000)) for _ in range(5)) * 1e6


def _openai_agents(host: tw.PluginHost | None, calls: int) -> Callable[[], float]:
    import asyncio

    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing.model import ScriptedModel, assistant_message, function_call

    def model() -> ScriptedModel:
        steps: list[Any] = [
            [function_call("echo", {"text": "hi"}, call_id=f"c{i}")] for i in range(calls)
        ]
        return ScriptedModel([*steps, [assistant_message("done")]])

    agent = Agent(name="a", tools=[function_tool(echo)])
    if host is not None:
        from toolwire.bridges import Governor
        from toolwire_openai_agents import govern

        agent = govern(
            agent, governor=Governor("openai-agents", plugins=host, effects={"echo": "read_only"})
        )
    config = RunConfig(tracing_disabled=True)

    def run() -> float:
        runner = agent.clone(model=model())
        start = time.perf_counter()
        result = asyncio.run(Runner.run(runner, "go", run_config=config, max_turns=calls + 5))
        elapsed = time.perf_counter() - start
        assert result.final_output == "done", result.final_output
        return elapsed / calls

    return run


def _crewai(host: tw.PluginHost | None, calls: int) -> Callable[[], float]:
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import tool as crew_tool

    class Steps(BaseLLM):
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            step = sum(1 for m in messages if m.get("role") == "assistant")
            if step >= calls:
                return "Thought: done\nFinal Answer: done"
            return f'Thought: again\nAction: echo\nAction Input: {{"text": "hi {step}"}}'

        def supports_function_calling(self) -> bool:
            return False

        def supports_stop_words(self) -> bool:
            return False

        def get_context_window_size(self) -> int:
            return 1_000_000

    governance = None
    if host is not None:
        from toolwire_crewai import govern

        from toolwire.bridges import Governor

        governance = govern(
            governor=Governor("crewai", plugins=host, effects={"echo": "read_only"})
        )
    tool = crew_tool("echo")(echo)

    def run() -> float:
        agent = Agent(
            role="r",
            goal="g",
            backstory="b",
            llm=Steps(model="steps"),
            tools=[tool],
            max_iter=calls + 5,
            verbose=False,
        )
        task = Task(description="go", expected_output="done", agent=agent)
        crew = Crew(agents=[agent], tasks=[task], verbose=False)
        start = time.perf_counter()
        out = crew.kickoff()
        elapsed = time.perf_counter() - start
        assert out.raw == "done", out.raw
        return elapsed / calls

    if governance is None:
        # The plain runs must not pass through the governed runs' hooks.
        def plain() -> float:
            from toolwire_crewai import _CURRENT

            if _CURRENT is not None:
                from crewai.hooks.tool_hooks import (
                    register_after_tool_call_hook,
                    register_before_tool_call_hook,
                    unregister_after_tool_call_hook,
                    unregister_before_tool_call_hook,
                )

                unregister_before_tool_call_hook(_CURRENT.before)
                unregister_after_tool_call_hook(_CURRENT.after)
                try:
                    return run()
                finally:
                    register_before_tool_call_hook(_CURRENT.before)
                    register_after_tool_call_hook(_CURRENT.after)
            return run()

        return plain
    return run


def _adk(host: tw.PluginHost | None, calls: int) -> Callable[[], float]:
    import asyncio
    import itertools
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    class Steps(BaseLlm):
        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            step = sum(
                1 for c in llm_request.contents for p in (c.parts or []) if p.function_response
            )
            if step >= calls:
                part = types.Part(text="done")
            else:
                call = types.FunctionCall(name="echo", args={"text": "hi"}, id=f"c{step}")
                part = types.Part(function_call=call)
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    plugins: list[Any] = []
    if host is not None:
        from toolwire_adk import ToolwirePlugin

        from toolwire.bridges import Governor

        governor = Governor("google-adk", plugins=host, effects={"echo": "read_only"})
        plugins = [ToolwirePlugin(governor=governor)]
    agent = LlmAgent(name="a", model=Steps(model="steps"), tools=[echo])
    sessions = InMemorySessionService()
    runner = Runner(
        app=App(name="bench", root_agent=agent, plugins=plugins), session_service=sessions
    )
    numbers = itertools.count()

    def run() -> float:
        session = f"s{next(numbers)}"

        async def go() -> float:
            await sessions.create_session(app_name="bench", user_id="u", session_id=session)
            message = types.Content(role="user", parts=[types.Part(text="go")])
            start = time.perf_counter()
            async for _ in runner.run_async(user_id="u", session_id=session, new_message=message):
                pass
            return time.perf_counter() - start

        return asyncio.run(go()) / calls

    return run


FRAMEWORKS: dict[str, tuple[str, Callable[[tw.PluginHost | None, int], Callable[[], float]]]] = {
    "pydantic-ai": ("toolwire_pydantic_ai", _pydantic_ai),
    "langchain": ("toolwire_langchain", _langchain),
    "openai-agents": ("toolwire_openai_agents", _openai_agents),
    # Outside the uv workspace (its MCP SDK): measured where it is installed, e.g.
    # uv run --isolated --no-project --with ./core --with ./integrations/crewai
    #   --with ./plugins/policy -- python -m bench.bridges
    "crewai": ("toolwire_crewai", _crewai),
    "google-adk": ("toolwire_adk", _adk),
}


def measure(rounds: int, calls: int) -> dict[str, Any]:
    import importlib.util

    started = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        host = _host(Path(tmp))
        for name, (module, make) in FRAMEWORKS.items():
            if importlib.util.find_spec(module) is None:
                continue
            plain, governed = make(None, calls), make(host, calls)
            plain(), governed()  # warm: imports, caches, the first audit write
            alone: list[float] = []
            with_policy: list[float] = []
            for _ in range(rounds):
                alone.append(plain())
                with_policy.append(governed())
            a, g = statistics.median(alone), statistics.median(with_policy)
            allowed = max(SHARE * a, FLOOR_US / 1e6)
            row = {
                "framework": name,
                "alone_us": a * 1e6,
                "governed_us": g * 1e6,
                "added_us": (g - a) * 1e6,
                "allowed_us": allowed * 1e6,
                "met": g - a <= allowed,
            }
            rows.append(row)
            print(
                f"{name:<12} alone {row['alone_us']:8.1f} µs/call  governed "
                f"{row['governed_us']:8.1f} µs/call  added {row['added_us']:7.1f} µs "
                f"(target <= {row['allowed_us']:.1f} µs: {'met' if row['met'] else 'MISSED'})",
                flush=True,
            )
    import importlib.metadata as md

    def version(dist: str) -> str:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return "-"

    return {
        "policy_floor_us": _policy_floor(),
        "meta": {
            "date": _dt.date.today().isoformat(),
            "elapsed_s": round(time.monotonic() - started),
            "rounds": rounds,
            "calls": calls,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "pydantic_ai": version("pydantic-ai-slim"),
            "langchain": version("langchain"),
            "openai_agents": version("openai-agents"),
            "crewai": version("crewai"),
            "google_adk": version("google-adk"),
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few rounds (proves the harness)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    results = measure(5 if args.quick else 60, CALLS)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
