"""toolwire for the OpenAI Agents SDK: the organisation's policies over every function tool
call of an agent, and toolwire tool packs as Agents SDK tools.

```python
from agents import Agent, Runner
from toolwire_openai_agents import govern

agent = govern(Agent(name="assistant", tools=[search, send_mail]))
result = await Runner.run(agent, "...", context=principal)
```

Every call of the agent's function tools then goes through the installed toolwire policies
(found as every toolwire path finds them; ``TOOLWIRE_POLICY_REQUIRED`` and
``TOOLWIRE_DISABLE_POLICIES`` as everywhere). What the SDK sees:

- allowed: the tool runs, and its output passes the result hooks (a redacted result
  reaches the model as toolwire's text);
- refused: the tool does not run, and its output is ``The call was rejected and did not
  run: REASON``;
- needs a person's approval: the tool's ``needs_approval`` says so, and the run stops with
  the SDK's own interruption (``result.interruptions``); ``state = result.to_state()``,
  ``state.approve(item)`` (or ``reject``), ``Runner.run(agent, state)``: the call runs once;
- waits for the people the policy names (the approval queue): the run stops with the same
  interruption, and ``waiting_request(item)`` names the request they answer (in the
  console, ``toolwire policy approvals``); once they answered, ``state.approve(item)`` and
  ``Runner.run(agent, state)`` decide the call again: approved, it runs once; denied, the
  model reads who denied it and why; resumed before they answered, it reads where the
  request waits. The SDK's own approval never stands in for theirs (its ``reject`` ends
  the call as the SDK does);
- a policy that rewrites arguments (a constraint, an approver's edit): the tool runs with
  the rewritten arguments.

The policies decide a call when the SDK asks whether it needs approval (before it runs it),
and the call then waits for the SDK to invoke it; a call the SDK never invokes after that
(another guardrail stopped it, the run ended) is cancelled after ``hold`` seconds and
audited as cancelled.

The principal is ``principal_from(context)`` (default: the run's ``context`` when it is a
:class:`toolwire.Principal`, or its ``principal`` attribute or key), else ``principal``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper
from agents.tool_context import ToolContext

import toolwire as tw
from toolwire.bridges import Governed, Governor, principal_in, queued_request, tools_of

__version__ = "0.1.0"

__all__ = ["FRAMEWORK", "default_principal", "govern", "tools", "waiting_request"]

#: How the audit records name calls made through this bridge.
FRAMEWORK = "openai-agents"
#: What the model reads for a refused call (as every toolwire path words it).
REFUSED = "The call was rejected and did not run: "
#: Seconds a decided call waits for the SDK to invoke it before it is cancelled.
HOLD = 60.0
#: Calls decided and waiting, or approved and not yet run, remembered per governed agent.
_MAX_PENDING = 10_000


def default_principal(context: Any) -> tw.Principal | None:
    """Who a run's calls are made for: its context when that is a Principal, else the
    context's ``principal`` attribute or key when that is one."""
    return principal_in(context)


class _Held:
    """One call decided before the SDK invokes it: the governor's task, waiting in its
    continuation for the SDK's ``on_invoke_tool``."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()  # the policies let it run: it waits for the SDK
        self.invoke: asyncio.Future[Callable[[dict[str, Any]], Any]] = (
            asyncio.get_running_loop().create_future()
        )
        self.task: asyncio.Task[Governed] | None = None


class _Governed:
    """The state of one governed agent's tools: calls decided and waiting, and the
    approval keys of calls paused for a person, by call id."""

    def __init__(
        self,
        governor: Governor,
        principal: tw.Principal | None,
        principal_from: Callable[[Any], tw.Principal | None],
        hold: float,
    ) -> None:
        self.governor = governor
        self.principal = principal
        self.principal_from = principal_from
        self.hold = hold
        self.held: dict[str, _Held] = {}
        self.asked: dict[str, str] = {}
        #: Calls paused while they wait in the approval queue: the request, by call id.
        self.queued: dict[str, str] = {}

    def who(self, context: Any) -> tw.Principal | None:
        return self.principal_from(context) or self.principal

    def tool(self, base: FunctionTool) -> FunctionTool:
        """``base`` governed: decided when the SDK asks whether it needs approval, run
        when the SDK invokes it."""
        if getattr(base, "_toolwire_governed", False):
            return base
        annotations, server = _mcp_of(base)
        try:
            tool = self.governor.foreign_tool(
                base.name,
                base.description or "",
                base.params_json_schema,
                mcp_annotations=annotations,
                mcp_server=server,
            )
        except tw.ToolDefinitionError as exc:
            reason = f"its schema cannot be checked ({exc})"

            async def refuse(ctx: ToolContext[Any], text: str) -> str:
                return REFUSED + reason

            return dataclasses.replace(base, on_invoke_tool=refuse, needs_approval=False)
        made = dataclasses.replace(
            base,
            on_invoke_tool=self._on_invoke(tool, base.on_invoke_tool),
            needs_approval=self._needs_approval(tool, base.needs_approval),
        )
        made._toolwire_governed = True  # type: ignore[attr-defined]
        made._toolwire_state = self  # type: ignore[attr-defined]
        return made

    def _needs_approval(self, tool: tw.Tool[Any, Any], already: Any) -> Any:
        async def needs_approval(
            ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
        ) -> bool:
            if already is True:
                return True  # the application asks a person anyway
            outcome = await self._decide(tool, params, call_id, ctx.context)
            if outcome is not None and outcome.status == "approval" and outcome.approval:
                self._remember(self.asked, call_id, outcome.approval)
                return True
            request_id = queued_request(outcome, tool.name) if outcome is not None else None
            if request_id is not None:  # waits for the people the policy names: pause
                self._remember(self.queued, call_id, request_id)
                return True
            if callable(already):
                answer = already(ctx, params, call_id)
                if inspect.isawaitable(answer):
                    answer = await answer
                return bool(answer)
            return False

        return needs_approval

    def _on_invoke(
        self,
        tool: tw.Tool[Any, Any],
        original: Callable[[ToolContext[Any], str], Any],
        native: bool = False,
    ) -> Callable[[ToolContext[Any], str], Any]:
        async def on_invoke(ctx: ToolContext[Any], text: str) -> Any:
            return await self._invoke(tool, original, ctx, text, native)

        return on_invoke

    async def _decide(
        self, tool: tw.Tool[Any, Any], params: dict[str, Any], call_id: str, context: Any
    ) -> Governed | None:
        """Start deciding the call: the outcome when the policies answered without running
        it (refused, needs approval), None when they let it run (it then waits here)."""
        held = _Held()

        async def proceed(arguments: dict[str, Any]) -> Any:
            held.reached.set()
            run = await held.invoke
            return await run(arguments)

        task = held.task = asyncio.ensure_future(
            self.governor.arun(tool, params, proceed, call_id=call_id, principal=self.who(context))
        )

        def never_invoked() -> None:
            # The SDK did not run the call it asked about: cancelled, so the executor
            # audits it as cancelled and the policy frees what it held for it.
            if not held.invoke.done():
                task.cancel()

        asyncio.get_running_loop().call_later(self.hold, never_invoked)
        reached = asyncio.ensure_future(held.reached.wait())
        await asyncio.wait({held.task, reached}, return_when=asyncio.FIRST_COMPLETED)
        if held.task.done():
            reached.cancel()
            outcome = held.task.result()
            if outcome.status == "approval" or queued_request(outcome, tool.name) is not None:
                return outcome
        self._remember(self.held, call_id, held)
        return None

    async def _invoke(
        self,
        tool: tw.Tool[Any, Any],
        original: Callable[[ToolContext[Any], str], Any],
        ctx: ToolContext[Any],
        text: str,
        native: bool,
    ) -> Any:
        call_id = ctx.tool_call_id

        async def run(arguments: dict[str, Any]) -> Any:
            return await original(ctx, json.dumps(arguments))

        held = self.held.pop(call_id, None)
        if held is not None and held.task is not None and not held.task.cancelled():
            if not held.task.done() and not held.invoke.done():
                held.invoke.set_result(run)
            outcome = await held.task
            return _answer(outcome, native)
        # Not decided before: a call a person approved (its key remembered), one paused
        # for the approval queue (decided again now: its approvers' answer decides), or
        # one the SDK invokes without asking (its needs_approval was not asked).
        self.queued.pop(call_id, None)
        asked = self.asked.pop(call_id, None)
        if asked is not None:
            self.governor.approve(asked)
        try:
            outcome = await self.governor.arun(
                tool, text, run, call_id=call_id, principal=self.who(ctx.context)
            )
        finally:
            if asked is not None:
                self.governor.forget(asked)
        if outcome.status == "approval":
            why = "approved with other arguments than these" if asked else "not approved"
            return f"{REFUSED}`{tool.name}` was {why} ({outcome.content})"
        return _answer(outcome, native)

    def _remember(self, where: dict[str, Any], call_id: str, value: Any) -> None:
        if len(where) >= _MAX_PENDING:
            old = where.pop(next(iter(where)))
            if isinstance(old, _Held) and old.task is not None:
                old.task.cancel()
        where[call_id] = value


def waiting_request(item: Any) -> str | None:
    """The approval request an interruption of a governed agent waits on: the id the
    people the policy names answer (``toolwire policy approvals approve ID``, the
    console), or None when the interruption is an ordinary approval (the application's
    person answers it with ``state.approve``/``reject``). Known in the process that ran
    the agent; after a resume elsewhere the call is decided again all the same."""
    raw = getattr(item, "raw_item", None)
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    agent = getattr(item, "agent", None)
    if not isinstance(call_id, str) or agent is None:
        return None
    states = [agent.__dict__.get(_STATE)] if hasattr(agent, "__dict__") else []
    states += [getattr(t, "_toolwire_state", None) for t in getattr(agent, "tools", ())]
    for state in states:
        if isinstance(state, _Governed) and call_id in state.queued:
            return state.queued[call_id]
    return None


def _answer(outcome: Governed, native: bool) -> Any:
    if outcome.status == "ok":
        return outcome.content if outcome.rewritten else outcome.value
    if outcome.status == "error":
        if outcome.raised is not None and not native:
            raise outcome.raised  # the SDK's tool's own failure, handled as the SDK does
        return outcome.content  # a toolwire tool's failure is an answer the model reads
    return REFUSED + outcome.content


def govern(
    agent: Agent[Any],
    *,
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
    principal_from: Callable[[Any], tw.Principal | None] = default_principal,
    effects: Mapping[str, str] | None = None,
    hold: float = HOLD,
    app: str = "",
) -> Agent[Any]:
    """``agent`` with every function tool under the installed toolwire policies (a copy:
    the agent given is unchanged), its MCP servers' tools too, as the SDK lists them each
    turn (their effect from the server's annotations, believed only of a server the policy
    trusts by the server's ``name``). ``effects``: a tool's effect by its name
    (``read_only``, ``mutating``, ``destructive``); the SDK's tools say none, so a tool
    not named counts as destructive. Handoffs are agents of their own: govern each."""
    gov = governor or Governor(FRAMEWORK, principal=principal, effects=effects, app=app)
    state = _Governed(gov, principal, principal_from, hold)
    governed = [state.tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
    unknown = [type(t).__name__ for t in agent.tools if not isinstance(t, FunctionTool)]
    if unknown:
        raise tw.UsageError(
            f"govern() can govern function tools only; this agent also has {', '.join(unknown)} "
            "(hosted tools run at OpenAI, where no policy of this process can decide them)"
        )
    made = agent.clone(tools=governed)
    if getattr(agent, "mcp_servers", None):
        # Its MCP servers' tools are listed at run time, each turn: governed as they are
        # listed, as the function tools are (their annotations under the trust rules).
        made.__class__ = _governing(type(agent))
        made.__dict__[_STATE] = state
    return made


#: Where a governed agent with MCP servers keeps its governance.
_STATE = "_toolwire_state"
_GOVERNING: dict[type, type] = {}


def _governing(kind: type[Agent[Any]]) -> type[Agent[Any]]:
    """``kind`` with its MCP servers' tools governed as they are listed (a subclass made
    once per agent class)."""
    made = _GOVERNING.get(kind)
    if made is None:

        async def get_mcp_tools(self: Any, run_context: RunContextWrapper[Any]) -> list[Any]:
            listed = await kind.get_mcp_tools(self, run_context)
            state: _Governed | None = self.__dict__.get(_STATE)
            if state is None:  # a clone that lost it: nothing of its servers runs ungoverned
                raise tw.UsageError("a governed agent's copy lost its governance: govern() it")
            return [state.tool(t) if isinstance(t, FunctionTool) else t for t in listed]

        def clone(self: Any, **changes: Any) -> Any:
            copy = kind.clone(self, **changes)  # a copy is governed as its original
            copy.__dict__[_STATE] = self.__dict__.get(_STATE)
            return copy

        made = type(kind.__name__, (kind,), {"get_mcp_tools": get_mcp_tools, "clone": clone})
        _GOVERNING[kind] = made
    return made


def _mcp_of(tool: FunctionTool) -> tuple[dict[str, Any] | None, str | None]:
    """An MCP server's tool, as the SDK lists it: its annotations (wire names) and its
    server's name; (None, None) for any other tool."""
    binding = getattr(tool, "_mcp_tool_binding", None)
    if not isinstance(binding, tuple) or not binding:
        return None, None
    annotations = getattr(tool, "_mcp_annotations", None)
    dump = getattr(annotations, "model_dump", None)
    found = dump(by_alias=True, exclude_none=True) if callable(dump) else None
    server = binding[0] if isinstance(binding[0], str) else None
    return (found if isinstance(found, dict) else {}), server


def tools(
    *sources: tw.Toolset | tw.Tool[Any, Any] | Iterable[tw.Tool[Any, Any]],
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
    principal_from: Callable[[Any], tw.Principal | None] = default_principal,
    hold: float = HOLD,
) -> list[FunctionTool]:
    """toolwire tools as Agents SDK function tools: the installed tool packs (no sources),
    or the toolsets and tools given. Each call runs through toolwire's executor
    (validation, the policies, approvals as the SDK's interruptions, timeouts, retries,
    result hooks, the audit log); schemas are toolwire's."""
    gov = governor or Governor(FRAMEWORK, principal=principal)
    state = _Governed(gov, principal, principal_from, hold)
    found = tools_of(*sources)
    return [_sdk_tool(state, t) for t in found]


def _sdk_tool(state: _Governed, tool: tw.Tool[Any, Any]) -> FunctionTool:
    # The pack's tool stands as a foreign one with its own schema and effect, its body
    # the continuation: decided when the SDK asks, run when the SDK invokes it.
    foreign = state.governor.foreign_tool(
        tool.name, tool.description, tool.input_schema, metadata=tool.metadata
    )

    async def body(ctx: ToolContext[Any], text: str) -> Any:
        answer = tool.call(tool.validate_json(text))
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    made = FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=dict(tool.input_schema),
        on_invoke_tool=state._on_invoke(foreign, body, native=True),
        strict_json_schema=False,
        needs_approval=state._needs_approval(foreign, False),
    )
    made._toolwire_governed = True  # type: ignore[attr-defined]
    made._toolwire_state = state  # type: ignore[attr-defined]
    return made
