"""toolwire for CrewAI: the organisation's policies over every tool call of the process's
crews and agents, and toolwire tool packs as CrewAI tools.

```python
from toolwire_crewai import govern

govern()                                  # once: CrewAI's hooks are the process's
crew.kickoff(inputs={"principal": "alice"})
```

``govern()`` registers a ``PRE_TOOL_CALL`` and a ``POST_TOOL_CALL`` hook with CrewAI.
Every tool call then goes through the installed toolwire policies (found as every toolwire
path finds them; ``TOOLWIRE_POLICY_REQUIRED`` and ``TOOLWIRE_DISABLE_POLICIES`` as
everywhere), decided before CrewAI runs the tool and recorded after it:

- allowed: the tool runs; its result passes the result hooks (a redacted result reaches
  the agent as toolwire's text);
- refused: CrewAI does not run the tool (the hook blocks it) and the agent reads ``The
  call was rejected and did not run: REASON``;
- needs a person's approval: the person is asked through CrewAI's human input (every
  argument shown), and the call runs once when they type ``approve``; ``approver=`` puts
  any other way of asking in its place;
- a policy that rewrites arguments: CrewAI runs the tool with them (the hook changes the
  call's input in place);
- a hook that fails refuses the call: CrewAI would run a tool whose hook raised.

The principal is ``principal_from(context)`` (default: the crew's kickoff input
``principal``, a subject or ``{"subject": ..., "groups": [...]}``), else ``principal``.

An MCP server's tool (CrewAI's own, from an agent's ``mcps=``) is decided as one: its
source is ``mcp:SERVER`` with the server CrewAI names (``mcp_server_of(tool)``; give it for
MCP tools CrewAI does not make itself), so a policy's ``mcp:SERVER/*`` rules match it.
CrewAI passes on no annotations, so its effect is the application's mapping, else the MCP
specification's defaults (destructive).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from crewai.hooks.tool_hooks import (
    ToolCallHookContext,
    get_before_tool_call_hooks,
    register_after_tool_call_hook,
    register_before_tool_call_hook,
    unregister_after_tool_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.tools import BaseTool
from pydantic import BaseModel, ConfigDict, PrivateAttr, create_model

import toolwire as tw
from toolwire.bridges import (
    Governed,
    Governor,
    Underway,
    approval_question,
    principal_in,
    tools_of,
)

__version__ = "0.1.0"

__all__ = ["FRAMEWORK", "Governance", "crewai_mcp_server", "default_principal", "govern", "tools"]

logger = logging.getLogger("toolwire.crewai")

#: How the audit records name calls made through this bridge.
FRAMEWORK = "crewai"
#: What the agent reads for a refused call (as every toolwire path words it).
REFUSED = "The call was rejected and did not run: "
#: Seconds a decided call waits for CrewAI to report its result before it is cancelled.
HOLD = 300.0
#: Calls decided and not yet reported, at most.
_MAX_PENDING = 10_000

Approver = Callable[[ToolCallHookContext | None, str], bool]

#: The tools CrewAI makes for an MCP server's tools (an agent's ``mcps=``).
_CREWAI_MCP_TOOLS = frozenset({"MCPNativeTool", "MCPToolWrapper"})


def _original_name(tool: BaseTool) -> str | None:
    name = getattr(tool, "original_tool_name", None)
    return name if isinstance(name, str) and name else None


def crewai_mcp_server(tool: BaseTool) -> str | None:
    """The server a CrewAI MCP tool comes from, as CrewAI names it (its ``server_name``),
    else None: not an MCP server's tool."""
    if type(tool).__name__ not in _CREWAI_MCP_TOOLS:
        return None
    name = getattr(tool, "server_name", None)
    return name if isinstance(name, str) else ""  # an MCP tool whose server goes unnamed


def default_principal(context: ToolCallHookContext) -> tw.Principal | None:
    """Who a call is made for: the crew's kickoff input ``principal`` (a subject, or a
    mapping with ``subject`` and ``groups``)."""
    inputs = getattr(getattr(context, "crew", None), "_inputs", None)
    return principal_in(inputs) if isinstance(inputs, Mapping) else None


def ask_in_console(context: ToolCallHookContext | None, question: str) -> bool:
    """CrewAI's own way of asking a person: its human input (the console)."""
    prompt = "Type 'approve' to run it, anything else to refuse it:"
    if context is not None:
        answer = context.request_human_input(question, prompt)
    else:
        answer = input(f"{question}\n{prompt} ")
    return answer.strip().lower() == "approve"


class _Held:
    """A call the policies let run, waiting for CrewAI to run it and report its result."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.reached: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.decided: dict[str, Any] = {}
        self.result: asyncio.Future[Any] = loop.create_future()
        self.outcome: Any = None  # the governor's task, a concurrent future


class _Begun:
    """A call the policies let run, decided in CrewAI's own thread (no event loop running
    there): it waits, with no loop running, for CrewAI to run the tool and report."""

    __slots__ = ("at", "decided", "underway")

    def __init__(self, underway: Underway) -> None:
        self.underway = underway
        self.decided = dict(underway.arguments)
        self.at = time.monotonic()


class Governance:
    """The hooks ``govern()`` registered, and what they hold; ``remove()`` unregisters
    them."""

    def __init__(
        self,
        governor: Governor,
        principal: tw.Principal | None,
        principal_from: Callable[[ToolCallHookContext], tw.Principal | None],
        approver: Approver,
        hold: float,
        mcp_server_of: Callable[[BaseTool], str | None] = crewai_mcp_server,
    ) -> None:
        self.governor = governor
        self.mcp_server_of = mcp_server_of
        self.principal = principal
        self.principal_from = principal_from
        self.approver = approver
        self.hold = hold
        self._lock = threading.Lock()
        self._held: dict[int, _Held | _Begun] = {}
        self._refused: dict[int, str] = {}
        self._schemas: dict[int, tuple[Any, dict[str, Any], str | None, str | None]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="toolwire-crewai", daemon=True
        )
        self._thread.start()

    def remove(self) -> None:
        """Unregister the hooks and stop the thread deciding calls."""
        unregister_before_tool_call_hook(self.before)
        unregister_after_tool_call_hook(self.after)
        global _CURRENT
        if _CURRENT is self:
            _CURRENT = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        with self._lock:
            begun = [h for h in self._held.values() if isinstance(h, _Begun)]
            self._held.clear()
        for held in begun:  # decided, never reported: cancelled (audited), not left open
            held.underway.cancel()

    # -- the hooks ------------------------------------------------------------------------

    def before(self, context: ToolCallHookContext) -> bool | None:
        """PRE_TOOL_CALL: decide the call; False blocks it. Never raises: CrewAI would run
        a tool whose hook failed, so a failure here refuses the call."""
        try:
            return self._before(context)
        except Exception as exc:
            logger.exception("toolwire could not decide a CrewAI tool call")
            self._refuse(
                context, f"the organisation policy could not decide it ({type(exc).__name__})"
            )
            return False

    def after(self, context: ToolCallHookContext) -> str | None:
        """POST_TOOL_CALL: the refusal's words, or the result as the result hooks leave it."""
        key = id(context.tool_input)
        with self._lock:
            refused = self._refused.pop(key, None)
            held = self._held.pop(key, None)
        if refused is not None:
            return REFUSED + refused
        if held is None:
            return None  # not a call these hooks decided (a toolwire pack's tool)
        raw = context.raw_tool_result if context.raw_tool_result is not None else None
        if raw is None:
            raw = context.tool_result
        if isinstance(held, _Begun):
            return self._after_begun(context, held, raw)
        if context.tool_input != held.decided:
            # Changed after the decision, in spite of _last: the result is not passed on.
            logger.error("a CrewAI tool ran with arguments the organisation policy did not decide")
            self._loop.call_soon_threadsafe(held.outcome.cancel)
            return REFUSED + "its arguments were changed after the organisation policy decided it"
        try:
            self._loop.call_soon_threadsafe(_settle, held.result, raw)
            outcome: Governed = held.outcome.result(self.hold)
        except Exception as exc:
            logger.exception("toolwire could not record a CrewAI tool result")
            return f"the organisation policy could not record this result ({type(exc).__name__})"
        if outcome.status == "ok":
            return outcome.content if outcome.rewritten else None
        return outcome.content if outcome.ran else REFUSED + outcome.content

    def _after_begun(self, context: ToolCallHookContext, held: _Begun, raw: Any) -> str | None:
        if context.tool_input != held.decided:
            logger.error("a CrewAI tool ran with arguments the organisation policy did not decide")
            held.underway.cancel()
            return REFUSED + "its arguments were changed after the organisation policy decided it"
        try:
            outcome = held.underway.finish(raw)
        except Exception as exc:
            logger.exception("toolwire could not record a CrewAI tool result")
            return f"the organisation policy could not record this result ({type(exc).__name__})"
        if outcome.status == "ok":
            return outcome.content if outcome.rewritten else None
        return outcome.content if outcome.ran else REFUSED + outcome.content

    def _sweep(self) -> None:
        """Cancel the calls decided here that CrewAI never reported within ``hold`` (audited
        as cancelled, not held for ever)."""
        now = time.monotonic()
        with self._lock:
            stale = [
                k for k, h in self._held.items() if isinstance(h, _Begun) and now - h.at > self.hold
            ]
            gone = [self._held.pop(k) for k in stale]
        for held in gone:
            assert isinstance(held, _Begun)
            held.underway.cancel()

    def _before(self, context: ToolCallHookContext) -> bool | None:
        if isinstance(getattr(context.tool, "_original_tool", None), _PackTool):
            return None  # a toolwire tool made by tools(): it decides its own calls
        if not self._last():
            # CrewAI runs its hooks in turn and lets each change the input in place: one
            # after this could run the tool with arguments the policies never saw.
            self._refuse(
                context,
                "another before-tool-call hook runs after the organisation policy's and "
                "could change the arguments it decided (call govern() after registering it)",
            )
            return False
        tool = self._tool(context)
        arguments = dict(context.tool_input)
        outcome, held = self._decide(tool, arguments, context)
        if outcome is not None and outcome.status == "approval" and outcome.approval:
            question = approval_question(tool.name, arguments, outcome.content)
            if question is None:
                self._refuse(context, "its arguments are too long to show a person for approval")
                return False
            if not self.approver(context, question):
                self._refuse(context, f"a person did not approve it ({outcome.content})")
                return False
            key = outcome.approval
            self.governor.approve(key)
            try:
                outcome, held = self._decide(tool, arguments, context)
            finally:
                self.governor.forget(key)
        if outcome is not None:
            self._refuse(context, outcome.content)
            return False
        assert held is not None
        given = held.decided if isinstance(held, _Begun) else held.reached.result()
        if given != context.tool_input:
            context.tool_input.clear()  # CrewAI runs the call with its input changed in place
            context.tool_input.update(given)
        if not isinstance(held, _Begun):
            held.decided = dict(given)
        self._remember(self._held, id(context.tool_input), held)
        return None

    def _decide(
        self, tool: tw.Tool[Any, Any], arguments: dict[str, Any], context: ToolCallHookContext
    ) -> tuple[Governed | None, _Held | _Begun | None]:
        """The outcome when the policies answered without running the call, else the call
        held, its arguments decided, waiting for CrewAI to run it."""
        principal = self.principal_from(context) or self.principal
        if not _loop_running():
            # Decided here, in CrewAI's thread, with no loop left running while the tool
            # runs (no hop to another thread and back, twice a call).
            self._sweep()
            started = self.governor.begin(tool, arguments, principal=principal)
            if isinstance(started, Governed):
                return started, None
            return None, _Begun(started)
        # A loop runs in this thread (CrewAI's async paths): decided on the governance's
        # own loop in its thread, this thread waiting.
        held = _Held(self._loop)

        async def proceed(given: dict[str, Any]) -> Any:
            _settle(held.reached, given)
            return await held.result

        coro = self.governor.arun(tool, arguments, proceed, principal=principal)
        held.outcome = asyncio.run_coroutine_threadsafe(coro, self._loop)
        waiting = asyncio.run_coroutine_threadsafe(_first(held), self._loop)
        if waiting.result(self.hold) == "decided":
            return held.outcome.result(), None
        self._loop.call_soon_threadsafe(self._loop.call_later, self.hold, _cancel_if_waiting, held)
        return None, held

    def _last(self) -> bool:
        """Whether this governance's hook is the last CrewAI runs before a tool (global
        hooks first, then a crew's or an agent's own)."""
        try:
            from crewai.hooks.dispatch import InterceptionPoint, _resolve_hooks

            hooks = _resolve_hooks(InterceptionPoint.PRE_TOOL_CALL)
        except ImportError:  # another CrewAI: its public list of the global hooks
            hooks = get_before_tool_call_hooks()
        return bool(hooks) and _same(hooks[-1], self.before)

    def _tool(self, context: ToolCallHookContext) -> tw.Tool[Any, Any]:
        base = context.tool
        held = self._schemas.get(id(base))
        if held is None or held[0] is not base:
            model = getattr(base, "args_schema", None)
            schema = (
                model.model_json_schema()
                if isinstance(model, type) and issubclass(model, BaseModel)
                else {"type": "object"}
            )
            made: Any = getattr(base, "_original_tool", None) or base  # the agent's BaseTool
            held = (base, schema, self.mcp_server_of(made), _original_name(made))
            with self._lock:
                if len(self._schemas) >= 4096:
                    self._schemas.clear()
                self._schemas[id(base)] = held
        server = held[2]
        return self.governor.foreign_tool(
            context.tool_name,
            getattr(base, "description", "") or "",
            held[1],
            mcp_annotations=None if server is None else {},  # CrewAI passes on none
            mcp_server=server or None,
            mcp_name=held[3] if server is not None else None,
        )

    def _refuse(self, context: ToolCallHookContext, reason: str) -> None:
        self._remember(self._refused, id(context.tool_input), reason)

    def _remember(self, where: dict[int, Any], key: int, value: Any) -> None:
        with self._lock:
            if len(where) >= _MAX_PENDING:
                where.pop(next(iter(where)))
            where[key] = value


async def _first(held: _Held) -> str:
    """'allowed' once the call waits in its body, 'decided' when the governor answered."""
    outcome = asyncio.wrap_future(held.outcome)
    done, _ = await asyncio.wait({outcome, held.reached}, return_when=asyncio.FIRST_COMPLETED)
    return "allowed" if held.reached in done and not outcome.done() else "decided"


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _same(hook: Any, ours: Any) -> bool:
    """``hook`` is ``ours`` (CrewAI may keep it wrapped: filters, legacy adapters)."""
    while hook is not None:
        if hook == ours:
            return True
        hook = getattr(hook, "__wrapped__", None)
    return False


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _cancel_if_waiting(held: _Held) -> None:
    """CrewAI never reported the result of a call it was let run: the call is cancelled
    (audited as such), not held for ever."""
    if not held.result.done():
        held.outcome.cancel()


_CURRENT: Governance | None = None


def govern(
    *,
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
    principal_from: Callable[[ToolCallHookContext], tw.Principal | None] = default_principal,
    effects: Mapping[str, str] | None = None,
    approver: Approver = ask_in_console,
    hold: float = HOLD,
    app: str = "",
    mcp_server_of: Callable[[BaseTool], str | None] = crewai_mcp_server,
) -> Governance:
    """Put every CrewAI tool call of this process under the installed toolwire policies
    (CrewAI's tool hooks are global). ``effects``: a tool's effect by its name
    (``read_only``, ``mutating``, ``destructive``); CrewAI's tools say none, so a tool not
    named counts as destructive. ``mcp_server_of(tool)``: the MCP server a tool comes from
    (an empty name: an MCP tool of a server unnamed), else None (default: CrewAI's own MCP
    tools' ``server_name``). Called again, it replaces the hooks it registered."""
    global _CURRENT
    if _CURRENT is not None:
        _CURRENT.remove()
    gov = governor or Governor(FRAMEWORK, principal=principal, effects=effects, app=app)
    made = Governance(gov, principal, principal_from, approver, hold, mcp_server_of)
    register_before_tool_call_hook(made.before)
    register_after_tool_call_hook(made.after)
    _CURRENT = made
    return made


class _PackTool(BaseTool):
    """A CrewAI tool standing for a toolwire tool (made by :func:`tools` only)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _toolwire: Any = PrivateAttr(default=None)
    _governor: Any = PrivateAttr(default=None)
    _approver: Any = PrivateAttr(default=None)
    _principal: Any = PrivateAttr(default=None)

    def _run(self, **given: Any) -> str:
        tool: tw.Tool[Any, Any] = self._toolwire
        required = set(tool.input_schema.get("required", ()))
        # CrewAI fills the arguments the model left out with None: toolwire's defaults apply.
        arguments = {k: v for k, v in given.items() if v is not None or k in required}
        governor: Governor = self._governor
        outcome = governor.run(tool, arguments, principal=self._principal)
        if outcome.status == "approval" and outcome.approval:
            question = approval_question(tool.name, arguments, outcome.content)
            if question is None or not self._approver(None, question):
                return REFUSED + f"a person did not approve it ({outcome.content})"
            key = outcome.approval
            governor.approve(key)
            try:
                outcome = governor.run(tool, arguments, principal=self._principal)
            finally:
                governor.forget(key)
        return outcome.content if outcome.ran else REFUSED + outcome.content


def tools(
    *sources: tw.Toolset | tw.Tool[Any, Any] | Iterable[tw.Tool[Any, Any]],
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
    approver: Approver = ask_in_console,
) -> list[BaseTool]:
    """toolwire tools as CrewAI tools: the installed tool packs (no sources), or the
    toolsets and tools given. Each call runs through toolwire's executor (validation, the
    policies, approvals asked as ``govern()`` asks them, timeouts, retries, result hooks,
    the audit log), decided once even under ``govern()``'s hooks."""
    gov = governor or Governor(FRAMEWORK, principal=principal)
    found = tools_of(*sources)
    made: list[BaseTool] = []
    for tool in found:
        required = set(tool.input_schema.get("required", ()))
        fields = {
            name: (Any, ... if name in required else None)
            for name in tool.input_schema.get("properties", {})
        }
        schema = create_model(f"{tool.name}_arguments", **fields)  # type: ignore[call-overload]
        one = _PackTool(name=tool.name, description=tool.description, args_schema=schema)
        one._toolwire, one._governor, one._approver, one._principal = tool, gov, approver, principal
        made.append(one)
    return made
