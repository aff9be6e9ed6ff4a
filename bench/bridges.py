"""What governing another framework's agent costs per tool call:
``uv run python -m bench.bridges [--quick] [--json OUT]``.

For each framework with a toolwire bridge, a real agent of that framework with its own test
model (no network) makes ``CALLS`` tool calls in one run, one per model step, of a tool that
returns at once, four ways, runs alternating: as the framework runs it alone; with a hook
of the framework's own that does nothing (its capability, middleware, plugin or hook: what
any integration of that framework costs); governed by the bridge's one line with no policy
installed (the bridge alone); and governed under a policy plugin that decides every call
(allow, with toolwire-policy's rules and its hash-chained audit log written for every call:
the real job). The medians of the per-call times are compared.

Target: governance adds at most 10% or 50 µs per call, whichever is larger. Measured, that
is below the floor of what must stay: the framework's own hook, and the policy's own work
(its decision and two chained records), whose floor through toolwire's executor alone is
above 50 µs (``policy_floor_us``). So the target is re-based on that floor: the bridge adds
at most 10% or 50 µs beyond the framework's own hook (``bridge_us``), and the policy's
work is reported beside it (``policy_us``).
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

#: The mode of a run with the framework's own do-nothing hook (else None: the framework
#: alone, or a PluginHost: governed by the bridge on that host).
HOOK = "hook"


def echo(text: str) -> str:
    """Echo the text."""
    return text


def _host(where: Path) -> tw.PluginHost:
    from toolwire_policy import Policy, PolicyPlugin

    (where / "policy.toml").write_text(POLICY)
    host = tw.PluginHost(autoload=False, disable_policies=False)
    host.register(PolicyPlugin(Policy.from_file(where / "policy.toml")), "corp", kind="policy")
    return host


def _pydantic_ai(host: Any, calls: int) -> Callable[[], float]:
    from dataclasses import dataclass

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
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

    @dataclass
    class Pass(AbstractCapability[Any]):
        async def wrap_tool_execute(self, ctx: Any, *, handler: Any, args: Any, **_: Any) -> Any:
            return await handler(args)

    capabilities: list[Any] = []
    if host == HOOK:
        capabilities = [Pass()]
    elif host is not None:
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


def _langchain(host: Any, calls: int, *, asynchronous: bool = False) -> Callable[[], float]:
    import asyncio
    from collections.abc import Sequence

    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
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
            self,
            messages: list[BaseMessage],
            stop: Any = None,
            run_manager: Any = None,
            **kwargs: Any,
        ) -> ChatResult:
            step = sum(isinstance(m, ToolMessage) for m in messages)
            if step >= calls:
                reply = AIMessage(content="done")
            else:
                call = {"name": "echo", "args": {"text": "hi"}, "id": f"c{step}"}
                reply = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    class Pass(AgentMiddleware):  # type: ignore[type-arg]
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return await handler(request)

    middleware: list[Any] = []
    if host == HOOK:
        middleware = [Pass()]
    elif host is not None:
        from toolwire.bridges import Governor
        from toolwire_langchain import ToolwireMiddleware

        governor = Governor("langchain", plugins=host, effects={"echo": "read_only"})
        middleware = [ToolwireMiddleware(governor=governor)]
    agent = create_agent(Steps(), tools=[StructuredTool.from_function(echo)], middleware=middleware)

    given = ({"messages": [("user", "go")]},)
    config = {"recursion_limit": 4 * calls + 10}

    def run() -> float:
        start = time.perf_counter()
        if asynchronous:  # its tools awaited on the run's loop (sync: each in a new thread)
            state = asyncio.run(agent.ainvoke(*given, config=config))  # type: ignore[arg-type]
        else:
            state = agent.invoke(*given, config=config)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
        assert state["messages"][-1].content == "done"
        return elapsed / calls

    return run


def _langchain_async(host: Any, calls: int) -> Callable[[], float]:
    return _langchain(host, calls, asynchronous=True)


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


def _openai_agents(host: Any, calls: int) -> Callable[[], float]:
    import asyncio
    import dataclasses

    from agents import Agent, RunConfig, Runner, function_tool
    from agents.testing.model import ScriptedModel, assistant_message, function_call

    def model() -> ScriptedModel:
        steps: list[Any] = [
            [function_call("echo", {"text": "hi"}, call_id=f"c{i}")] for i in range(calls)
        ]
        return ScriptedModel([*steps, [assistant_message("done")]])

    agent = Agent(name="a", tools=[function_tool(echo)])
    if host == HOOK:  # what govern() changes on a tool, doing nothing
        base = agent.tools[0]
        invoke = base.on_invoke_tool  # type: ignore[union-attr]

        async def passing(ctx: Any, arguments: str) -> Any:
            return await invoke(ctx, arguments)

        async def never(*_: Any) -> bool:
            return False

        hooked = dataclasses.replace(base, on_invoke_tool=passing, needs_approval=never)  # type: ignore[type-var]
        agent = agent.clone(tools=[hooked])
    elif host is not None:
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


def _crewai(host: Any, calls: int) -> Callable[[], float]:
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
    if host is not None and host != HOOK:
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
        # The plain runs (and those with a do-nothing hook) must not pass through the
        # governed runs' hooks, which CrewAI holds for the whole process.
        from crewai.hooks.tool_hooks import (
            register_after_tool_call_hook,
            register_before_tool_call_hook,
            unregister_after_tool_call_hook,
            unregister_before_tool_call_hook,
        )

        def nothing(context: Any) -> None:
            return None

        ours = [nothing] if host == HOOK else []

        def plain() -> float:
            from toolwire_crewai import _CURRENT

            theirs = [] if _CURRENT is None else [(_CURRENT.before, _CURRENT.after)]
            for before, after in theirs:
                unregister_before_tool_call_hook(before)
                unregister_after_tool_call_hook(after)
            for hook in ours:
                register_before_tool_call_hook(hook)
                register_after_tool_call_hook(hook)
            try:
                return run()
            finally:
                for hook in ours:
                    unregister_before_tool_call_hook(hook)
                    unregister_after_tool_call_hook(hook)
                for before, after in theirs:
                    register_before_tool_call_hook(before)
                    register_after_tool_call_hook(after)

        return plain
    return run


def _adk(host: Any, calls: int) -> Callable[[], float]:
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

    from google.adk.plugins.base_plugin import BasePlugin

    class Pass(BasePlugin):
        async def before_tool_callback(self, **_: Any) -> None:
            return None

        async def after_tool_callback(self, **_: Any) -> None:
            return None

    plugins: list[Any] = []
    if host == HOOK:
        plugins = [Pass(name="pass")]
    elif host is not None:
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


FRAMEWORKS: dict[str, tuple[str, Callable[[Any, int], Callable[[], float]]]] = {
    "pydantic-ai": ("toolwire_pydantic_ai", _pydantic_ai),
    "langchain": ("toolwire_langchain", _langchain),
    "langchain (ainvoke)": ("toolwire_langchain", _langchain_async),
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
        bare = tw.PluginHost(autoload=False, disable_policies=False)  # no policy installed
        for name, (module, make) in FRAMEWORKS.items():
            if importlib.util.find_spec(module) is None:
                continue
            ways = {
                "alone": make(None, calls),
                "hook": make(HOOK, calls),
                "bridge": make(bare, calls),
                "governed": make(host, calls),
            }
            for way in ways.values():
                way()  # warm: imports, caches, the first audit write
            times: dict[str, list[float]] = {k: [] for k in ways}
            for _ in range(rounds):
                for k, way in ways.items():
                    times[k].append(way())
            a, h, b, g = (statistics.median(times[k]) * 1e6 for k in ways)
            allowed = max(SHARE * a, FLOOR_US)
            row = {
                "framework": name,
                "alone_us": a,
                "hook_us": h - a,
                "bridge_us": b - h,
                "policy_us": g - b,
                "governed_us": g,
                "added_us": g - a,
                "allowed_us": allowed,
                "met": b - h <= allowed,
                "met_whole": g - a <= allowed,
            }
            rows.append(row)
            print(
                f"{name:<13} alone {a:7.1f} µs/call; added: its own hook {h - a:6.1f}, the "
                f"bridge {b - h:6.1f}, the policy {g - b:6.1f} = {g - a:6.1f} µs "
                f"(the bridge's target <= {allowed:.1f} µs: "
                f"{'met' if row['met'] else 'MISSED'})",
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
