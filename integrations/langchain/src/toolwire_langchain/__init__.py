"""toolwire for LangChain (1.x) and LangGraph: the organisation's policies over every tool
call of an agent, and toolwire tool packs as LangChain tools.

```python
from langchain.agents import create_agent
from toolwire_langchain import ToolwireMiddleware

agent = create_agent(model, tools=[...], middleware=[ToolwireMiddleware()],
                     checkpointer=InMemorySaver())
```

Every tool call of the agent then goes through the installed toolwire policies (found as
every toolwire path finds them; ``TOOLWIRE_POLICY_REQUIRED`` and
``TOOLWIRE_DISABLE_POLICIES`` as everywhere). What LangChain sees:

- allowed: the tool runs; its ``ToolMessage`` passes the result hooks (a redacted result
  reaches the model as toolwire's text);
- refused: the tool does not run, and the model reads an error ``ToolMessage``: ``The
  call was rejected and did not run: REASON``;
- needs a person's approval: the graph is interrupted (LangGraph ``interrupt``, so the
  agent needs a checkpointer) with the request ``HumanInTheLoopMiddleware`` uses
  (``action_requests``, ``review_configs``, the reason as the description, and
  ``toolwire_approval``, the key); resume with ``Command(resume={"decisions": [{"type":
  "approve"}]})`` and the call runs once, or ``reject`` (with a ``message``). An ``edit``
  is refused: the approval was for the arguments shown;
- waits for the people the policy names (its approval queue): the graph is interrupted the
  same way, with ``toolwire_queue`` (the request's id) instead; resume once they have
  answered (``toolwire.approvals.ApprovalQueue.wait``), and the call is decided again: it
  runs once approved, else its refusal says why (a ``reject`` resume keeps the refusal);
- a policy that rewrites arguments (a constraint, an approver's edit): the tool runs
  with the rewritten arguments (LangChain lets a middleware change them).

The principal is ``principal_from(request)`` (default: the run's ``context`` when it is a
:class:`toolwire.Principal`, or its ``principal`` attribute or key, else
``config["configurable"]["principal"]``), else the middleware's ``principal``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeGuard

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt

import toolwire as tw
from toolwire.bridges import Governed, Governor, principal_in, queued_request, tools_of

__version__ = "0.1.0"

__all__ = ["FRAMEWORK", "ToolwireMiddleware", "default_principal", "mcp_sources", "tools"]

#: How the audit records name calls made through this bridge.
FRAMEWORK = "langchain"
#: The key of the interrupt's request that holds the approval key.
APPROVAL_KEY = "toolwire_approval"
#: The key of the interrupt's request that holds the approval queue's request id (a call
#: the people the policy names answer: resume once they have).
QUEUE_KEY = "toolwire_queue"
#: What the model reads for a refused call (as every toolwire path words it).
REFUSED = "The call was rejected and did not run: "

_Handler = Callable[[ToolCallRequest], ToolMessage | Command[Any]]
_AsyncHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


def default_principal(request: ToolCallRequest) -> tw.Principal | None:
    """Who a call is made for: the run's context (or its ``principal``), else
    ``config["configurable"]["principal"]``."""
    runtime = getattr(request, "runtime", None)
    found = principal_in(getattr(runtime, "context", None))
    if found is not None:
        return found
    config = getattr(runtime, "config", None)
    return principal_in(config.get("configurable") if _is_mapping(config) else None)


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """A mapping (LangGraph's config and its parts are dicts: the common case first)."""
    return type(value) is dict or isinstance(value, Mapping)


class _Failed(Exception):
    """The tool answered with an error ToolMessage: a failure for the audit log, the
    message itself for the model."""

    def __init__(self, message: ToolMessage) -> None:
        super().__init__(str(message.content))
        self.message = message


#: The annotation hints langchain-mcp-adapters puts in an MCP tool's metadata (the MCP
#: SDK's field names: camelCase in its 1.x, snake_case in its 2.x).
_MCP_HINT_KEYS = (
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
    "read_only_hint",
    "destructive_hint",
    "idempotent_hint",
    "open_world_hint",
)
_MCP_HINTS = frozenset(_MCP_HINT_KEYS)


class ToolwireMiddleware(AgentMiddleware):
    """A LangChain agent middleware: every tool call of the agent under the installed
    toolwire policies (see the module's text). ``principal``: for calls whose run names
    nobody; ``principal_from``: how a run names one; ``effects``: a tool's effect by its
    name (``read_only``, ``mutating``, ``destructive``) for tools that say none (a tool's
    ``metadata={"effect": ...}`` says one); unknown tools count as destructive.
    ``governor``: one made elsewhere (its host, its approvals), shared.

    An MCP server's tool (langchain-mcp-adapters keeps its annotations in the tool's
    ``metadata``) takes its effect from them, believed only of a server the policy trusts
    (``trusted_mcp_servers``): the adapters do not say which server a tool comes from, so
    ``mcp_server_of(tool)`` names it (default: none, so ``mcp:(unnamed)``), or names it and
    the tool's name on that server, ``(server, name)``, when the adapters prefixed it
    (:func:`mcp_sources` makes one from the tools each server gave)."""

    def __init__(
        self,
        *,
        principal: tw.Principal | None = None,
        principal_from: Callable[[ToolCallRequest], tw.Principal | None] = default_principal,
        effects: Mapping[str, str] | None = None,
        governor: Governor | None = None,
        app: str = "",
        mcp_server_of: Callable[[BaseTool], str | tuple[str, str] | None] = lambda tool: None,
    ) -> None:
        super().__init__()
        self.principal = principal
        self.principal_from = principal_from
        self.mcp_server_of = mcp_server_of
        self.governor = governor or Governor(
            FRAMEWORK, principal=principal, effects=effects, app=app
        )
        self._schemas: dict[int, tuple[BaseTool, dict[str, Any]]] = {}
        self._made: dict[int, tuple[BaseTool, tuple[Any, ...], tw.Tool[Any, Any]]] = {}

    def wrap_tool_call(self, request: ToolCallRequest, handler: _Handler) -> Any:
        made = self._prepare(request)
        if isinstance(made, ToolMessage):
            return made
        tool, held = made
        options = self._options(request)
        outcome = self._run(tool, request, handler, held, options)
        if outcome.status == "approval":
            refused = self._ask(request, outcome)
            if refused is not None:
                return _refusal(request, refused)
            outcome = self._run(tool, request, handler, held, options)
        elif queued_request(outcome, tool.name) is not None and not self._wait(request, outcome):
            outcome = self._run(tool, request, handler, held, options)
        return _answer(request, outcome, held)

    def _run(
        self,
        tool: tw.Tool[Any, Any],
        request: ToolCallRequest,
        handler: _Handler,
        held: dict[str, Any],
        options: dict[str, Any],
    ) -> Governed:
        """One sync call decided, and LangChain's tool run here, in LangGraph's thread with
        no loop running (as it runs without toolwire), between the decision and its end."""
        if held.get("native"):  # a toolwire tool: the executor runs it
            return self.governor.run(tool, request.tool_call["args"], None, **options)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:  # a loop runs in this thread: the governor decides on a thread of its own
            return self.governor.run(
                tool,
                request.tool_call["args"],
                lambda arguments: _content(handler(_with_args(request, arguments)), held),
                **options,
            )
        started = self.governor.begin(tool, request.tool_call["args"], **options)
        if isinstance(started, Governed):
            return started
        try:
            answer = _content(handler(_with_args(request, started.arguments)), held)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                started.cancel()
                raise
            return started.finish(error=exc)
        return started.finish(answer)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: _AsyncHandler) -> Any:
        made = self._prepare(request)
        if isinstance(made, ToolMessage):
            return made
        tool, held = made

        async def proceed(arguments: dict[str, Any]) -> Any:
            return _content(await handler(_with_args(request, arguments)), held)

        if held.get("native"):
            proceed = None  # type: ignore[assignment]  # a toolwire tool: the executor runs it

        options = self._options(request)
        outcome = await self.governor.arun(tool, request.tool_call["args"], proceed, **options)
        if outcome.status == "approval":
            refused = self._ask(request, outcome)
            if refused is not None:
                return _refusal(request, refused)
            outcome = await self.governor.arun(tool, request.tool_call["args"], proceed, **options)
        elif queued_request(outcome, tool.name) is not None and not self._wait(request, outcome):
            outcome = await self.governor.arun(tool, request.tool_call["args"], proceed, **options)
        return _answer(request, outcome, held)

    # -- the steps both share ------------------------------------------------------------

    def _prepare(
        self, request: ToolCallRequest
    ) -> ToolMessage | tuple[tw.Tool[Any, Any], dict[str, Any]]:
        """The toolwire tool standing for the request's, or the refusal when there is none."""
        base = request.tool
        name = request.tool_call.get("name", "")
        if base is None:
            return _refusal(request, f"there is no tool `{name}`")
        if not isinstance(request.tool_call.get("args"), Mapping):
            return _refusal(request, f"the arguments of `{name}` are not an object")
        if isinstance(base, _GovernedTool):
            # A toolwire tool made by tools(): decided here once, as itself (its real effect,
            # toolwire's schema), not again inside its body.
            return base.toolwire_tool, {"native": True}
        meta = base.metadata or {}
        hint = meta.get("effect") if isinstance(meta, Mapping) else None
        mcp = bool(meta) and isinstance(meta, Mapping) and not _MCP_HINTS.isdisjoint(meta)
        server: str | None = None
        own: str | None = None
        try:
            if mcp:
                named = self.mcp_server_of(base)
                server, own = named if isinstance(named, tuple) else (named, None)
            # What the toolwire tool is made of: the same object saying the same again is
            # the same tool (made once; making it costs more in LangGraph's fresh threads).
            hints = tuple((k, meta[k]) for k in _MCP_HINT_KEYS if k in meta) if mcp else ()
            said = (base.name, base.description, hint, server, own, hints)
            made = self._made.get(id(base))
            if made is not None and made[0] is base and made[1] == said:
                return made[2], {}
            schema = self._schema(base)
            tool = self.governor.foreign_tool(
                base.name,
                base.description or "",
                schema,
                effect=hint if isinstance(hint, str) else None,
                mcp_annotations=meta if mcp else None,
                mcp_server=server,
                mcp_name=own,
            )
        except Exception as exc:  # a schema toolwire cannot check, a source not named: fail closed
            return _refusal(request, f"it cannot be described ({type(exc).__name__}: {exc})")
        if len(self._made) >= 4096:
            self._made.clear()
        self._made[id(base)] = (base, said, tool)
        return tool, {}

    def _schema(self, base: BaseTool) -> dict[str, Any]:
        """The tool's argument schema as LangChain sends it to a model (made once per tool
        object: making it costs more than deciding the call)."""
        held = self._schemas.get(id(base))
        if held is not None and held[0] is base:
            return held[1]
        schema: dict[str, Any] = convert_to_openai_tool(base)["function"]["parameters"]
        if len(self._schemas) >= 4096:
            self._schemas.clear()
        self._schemas[id(base)] = (base, schema)
        return schema

    def _options(self, request: ToolCallRequest) -> dict[str, Any]:
        config = getattr(request.runtime, "config", None)
        configurable = config.get("configurable") if _is_mapping(config) else None
        thread = configurable.get("thread_id") if _is_mapping(configurable) else None
        return {
            "call_id": request.tool_call.get("id") or "",
            "principal": self.principal_from(request) or self.principal,
            "session_id": str(thread or ""),
        }

    def _wait(self, request: ToolCallRequest, outcome: Governed) -> bool:
        """Pause while the call waits in the approval queue for the people the policy names
        (a LangGraph interrupt, as for an approval, with ``toolwire_queue``: the request).
        Resume once they answered: the call is decided again (an approval runs it once).
        True when the resume said ``reject`` (the refusal stands)."""
        name = request.tool_call["name"]
        request_id = queued_request(outcome, name)
        action = {"name": name, "args": request.tool_call["args"], "description": outcome.content}
        answer = interrupt(
            {
                "action_requests": [action],
                "review_configs": [
                    {"action_name": name, "allowed_decisions": ["approve", "reject"]}
                ],
                QUEUE_KEY: request_id,
            }
        )
        decisions = answer.get("decisions") if isinstance(answer, Mapping) else None
        decision = decisions[0] if isinstance(decisions, list) and decisions else None
        return isinstance(decision, Mapping) and decision.get("type") == "reject"

    def _ask(self, request: ToolCallRequest, outcome: Governed) -> str | None:
        """Pause for a person (a LangGraph interrupt): None when they approved exactly this
        call (the governor then holds the approval), else why it is refused."""
        name = request.tool_call["name"]
        action = {"name": name, "args": request.tool_call["args"], "description": outcome.content}
        answer = interrupt(
            {
                "action_requests": [action],
                "review_configs": [
                    {"action_name": name, "allowed_decisions": ["approve", "reject"]}
                ],
                APPROVAL_KEY: outcome.approval,
            }
        )
        decisions = answer.get("decisions") if isinstance(answer, Mapping) else None
        decision = decisions[0] if isinstance(decisions, list) and decisions else None
        kind = decision.get("type") if isinstance(decision, Mapping) else None
        if kind == "approve" and outcome.approval is not None:
            self.governor.approve(outcome.approval)
            return None
        if kind == "edit":
            return (
                f"`{name}` was approved with other arguments than these ({outcome.content}); "
                "an approval is for the arguments shown"
            )
        message = decision.get("message") if isinstance(decision, Mapping) else None
        if kind == "reject":
            return "a person refused it" + (f": {message}" if isinstance(message, str) else "")
        return f"the answer to its approval request was not understood ({outcome.content})"


def mcp_sources(
    by_server: Mapping[str, Iterable[BaseTool]], *, prefixed: bool = False
) -> Callable[[BaseTool], tuple[str, str] | None]:
    """An ``mcp_server_of`` for :class:`ToolwireMiddleware` from the tools each MCP server
    gave (``{"files": await client.get_tools(server_name="files"), ...}``): each tool's
    server, and its name there. ``prefixed``: the tools were loaded with
    ``tool_name_prefix=True``, so ``files_read`` is ``read`` on ``files``, and a policy's
    ``mcp:files/read`` names it (a name without the prefix raises ValueError: a prefix is
    never guessed, so no rule stops matching by a guess). Tools are known by identity:
    give the agent the objects given here."""
    found: dict[int, tuple[BaseTool, str, str]] = {}
    for server, listed in by_server.items():
        if not isinstance(server, str) or not server.strip():
            raise ValueError(f"an MCP server's name must be text, not {server!r}")
        for tool in listed:
            name = tool.name
            if prefixed:
                if not name.startswith(f"{server}_") or name == f"{server}_":
                    raise ValueError(
                        f"the tool {name!r} of {server!r} has no `{server}_` prefix "
                        "(loaded without tool_name_prefix=True?)"
                    )
                name = name[len(server) + 1 :]
            found[id(tool)] = (tool, server, name)

    def mcp_server_of(tool: BaseTool) -> tuple[str, str] | None:
        held = found.get(id(tool))
        return (held[1], held[2]) if held is not None and held[0] is tool else None

    return mcp_server_of


def _with_args(request: ToolCallRequest, arguments: dict[str, Any]) -> ToolCallRequest:
    if arguments == request.tool_call.get("args"):
        return request
    return request.override(tool_call={**request.tool_call, "args": arguments})


def _content(answer: Any, held: dict[str, Any]) -> Any:
    """What the result hooks see of the tool's answer (its text); the answer kept."""
    held["answer"] = answer
    if isinstance(answer, ToolMessage):
        if answer.status == "error":
            raise _Failed(answer)
        return answer.content if isinstance(answer.content, str) else answer.text
    return ""  # a Command: passed on as it is


def _answer(request: ToolCallRequest, outcome: Governed, held: dict[str, Any]) -> Any:
    answer = held.get("answer")
    if held.get("native") and outcome.ran:
        return ToolMessage(
            content=outcome.content,
            tool_call_id=request.tool_call.get("id") or "",
            name=request.tool_call.get("name"),
            status="success" if outcome.status == "ok" else "error",
        )
    if outcome.status == "ok":
        if isinstance(answer, ToolMessage) and outcome.rewritten:
            return answer.model_copy(update={"content": outcome.content})
        return answer
    if outcome.status == "error":
        if isinstance(outcome.raised, _Failed):
            return outcome.raised.message
        if outcome.raised is not None:
            raise outcome.raised
        return ToolMessage(
            content=outcome.content,
            tool_call_id=request.tool_call.get("id") or "",
            name=request.tool_call.get("name"),
            status="error",
        )
    return _refusal(request, outcome.content)


def _refusal(request: ToolCallRequest, reason: str) -> ToolMessage:
    return ToolMessage(
        content=REFUSED + reason,
        tool_call_id=request.tool_call.get("id") or "",
        name=request.tool_call.get("name"),
        status="error",
    )


def tools(
    *sources: tw.Toolset | tw.Tool[Any, Any] | Iterable[tw.Tool[Any, Any]],
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
) -> list[BaseTool]:
    """toolwire tools as LangChain tools: the installed tool packs (no sources), or the
    toolsets and tools given. Each call runs through toolwire's executor (validation, the
    policies, timeouts, retries, result hooks, the audit log); schemas are toolwire's. A
    call that needs approval is refused (put :class:`ToolwireMiddleware` on the agent to
    pause for it instead)."""
    gov = governor or Governor(FRAMEWORK, principal=principal)
    found = tools_of(*sources)
    return [_lc_tool(gov, t) for t in found]


class _GovernedTool(StructuredTool):
    """A LangChain tool standing for a toolwire tool (made by :func:`tools` only)."""

    toolwire_tool: Any = None


def _lc_tool(governor: Governor, tool: tw.Tool[Any, Any]) -> BaseTool:
    async def arun(**arguments: Any) -> str:
        outcome = await governor.arun(tool, arguments)
        return outcome.content if outcome.ran else REFUSED + outcome.content

    def run(**arguments: Any) -> str:
        outcome = governor.run(tool, arguments)
        return outcome.content if outcome.ran else REFUSED + outcome.content

    return _GovernedTool(
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.input_schema),
        func=run,
        coroutine=arun,
        metadata={"effect": tool.metadata.effect.value},
        toolwire_tool=tool,
    )
