"""toolwire for pydantic-ai: the organisation's policies over every tool call of an agent,
and toolwire tool packs as pydantic-ai tools.

```python
from pydantic_ai import Agent
from toolwire_pydantic_ai import ToolwirePolicy

agent = Agent(model, tools=[...], capabilities=[ToolwirePolicy()])
```

Every tool call the agent makes then goes through the installed toolwire policies (found
as every toolwire path finds them; ``TOOLWIRE_POLICY_REQUIRED`` and
``TOOLWIRE_DISABLE_POLICIES`` as everywhere). What pydantic-ai sees:

- allowed: the tool runs, and its result passes the result hooks (a redacted result
  reaches the model as toolwire's text);
- refused: the tool does not run, and the model reads ``The call was rejected and did
  not run: REASON`` (``SkipToolExecution``);
- needs a person's approval: the call is deferred (``ApprovalRequired``); the run ends
  with ``DeferredToolRequests`` (give the agent ``output_type=[..., DeferredToolRequests]``)
  whose metadata holds the reason and the approval key; resume with
  ``DeferredToolResults(approvals={id: True})`` and the call runs once. A resumed call
  whose arguments differ from those asked about (``ToolApproved(override_args=...)``) is
  refused: the approval was for the other arguments;
- a policy that rewrites arguments (a constraint, an approver's edit) refuses the call:
  pydantic-ai passes its tool the arguments it validated and cannot take others.

The principal is ``principal_from(ctx)`` (default: ``ctx.deps`` when it is a
:class:`toolwire.Principal`, or its ``principal`` attribute or key), else the
capability's ``principal``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, SkipToolExecution
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import Tool as PaiTool
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

import toolwire as tw
from toolwire.bridges import Governed, Governor, principal_in, queued_request, tools_of

__version__ = "0.1.0"

__all__ = ["FRAMEWORK", "ToolwirePolicy", "default_principal", "toolset"]

#: How the audit records name calls made through this bridge.
FRAMEWORK = "pydantic-ai"
#: The key of a deferred call's metadata that holds its approval key.
APPROVAL_KEY = "toolwire_approval"
#: The key of a deferred call's metadata that holds its approval queue request (a call the
#: people the policy names answer: resume it once they have).
QUEUE_KEY = "toolwire_queue"
#: What the model reads for a refused call (as every toolwire path words it).
REFUSED = "The call was rejected and did not run: "
#: The metadata key and this process's value marking the tools toolset() made, so the
#: capability does not decide their calls a second time (an object no other code holds).
_GOVERNED = "toolwire_governed"
_TOKEN = object()


def default_principal(ctx: RunContext[Any]) -> tw.Principal | None:
    """Who a run's calls are made for: ``ctx.deps`` when it is a Principal, else its
    ``principal`` attribute or key when that is one."""
    return principal_in(ctx.deps)


@dataclass
class ToolwirePolicy(AbstractCapability[Any]):
    """A pydantic-ai capability: every tool call of the agent under the installed toolwire
    policies (see the module's text). ``principal``: for calls whose run names nobody;
    ``principal_from``: how a run names one; ``effects``: a tool's effect by its name
    (``read_only``, ``mutating``, ``destructive``), for tools that say none (a tool's
    ``metadata={"effect": ...}`` says one); unknown tools count as destructive.
    ``governor``: one made elsewhere (its host, its approvals), shared."""

    principal: tw.Principal | None = None
    principal_from: Callable[[RunContext[Any]], tw.Principal | None] = default_principal
    effects: Mapping[str, str] = field(default_factory=dict)
    governor: Governor | None = None
    app: str = ""
    #: tool call id -> the approval key it was deferred with, for a resume in this process
    #: whose DeferredToolResults carries no metadata (bounded; the metadata wins).
    _pending: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.governor is None:
            self.governor = Governor(
                FRAMEWORK, principal=self.principal, effects=self.effects, app=self.app
            )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return "ToolwirePolicy"

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Any,
    ) -> Any:
        governor = self.governor
        assert governor is not None
        if (tool_def.metadata or {}).get(_GOVERNED) is _TOKEN:
            # A toolwire tool made by toolset(): it is decided in its own body, once.
            return await handler(args)
        hint = (tool_def.metadata or {}).get("effect")
        mcp = _mcp_of(ctx, tool_def)
        try:
            tool = governor.foreign_tool(
                tool_def.name,
                tool_def.description or "",
                tool_def.parameters_json_schema,
                effect=hint if isinstance(hint, str) else None,
                mcp_annotations=mcp[0] if mcp else None,
                mcp_server=mcp[1] if mcp else None,
            )
        except tw.ToolDefinitionError as exc:  # a schema toolwire cannot check: fail closed
            raise SkipToolExecution(f"{REFUSED}its schema cannot be checked ({exc})") from None
        arguments = args if isinstance(args, Mapping) else {}
        if not isinstance(args, Mapping):
            raise SkipToolExecution(
                f"{REFUSED}`{tool_def.name}` takes no object of arguments, which the "
                "organisation policy cannot check"
            )
        asked = _asked(ctx, self._pending)
        if asked is not None:
            governor.approve(asked)  # a person approved the call with this key
        try:
            outcome = await governor.arun(
                tool,
                dict(arguments),
                lambda given: handler(args),
                call_id=call.tool_call_id,
                principal=self.principal_from(ctx) or self.principal,
                session_id=ctx.run_id or "",
                model=ctx.model.model_name if ctx.model is not None else "",
                rewrite=False,
            )
        finally:
            if asked is not None:
                governor.forget(asked)  # spent, or not for these arguments: never kept
        waiting = queued_request(outcome, tool_def.name)
        if waiting is not None:
            # It waits for the people the policy names: deferred, to be resumed once they
            # answered (a resume while it still waits is refused, naming the request).
            meta = ctx.tool_call_metadata if ctx.tool_call_approved else None
            if not (isinstance(meta, Mapping) and meta.get(QUEUE_KEY) == waiting):
                raise ApprovalRequired(metadata={QUEUE_KEY: waiting, "reason": outcome.content})
        if outcome.status == "approval" and asked is None and call.tool_call_id:
            if len(self._pending) >= _MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))
            self._pending[call.tool_call_id] = outcome.approval or ""
        return _answer(outcome, resumed=asked is not None, name=tool_def.name)


def _mcp_of(ctx: RunContext[Any], tool_def: ToolDefinition) -> tuple[Mapping[str, Any], str] | None:
    """An MCP server's tool: its annotations (as pydantic-ai keeps them in the tool's
    metadata) and its server's name (the toolset's ``id``), else None."""
    # No MCP toolset exists unless pydantic-ai's MCP module was imported to make it.
    kind = getattr(sys.modules.get("pydantic_ai.mcp"), "MCPToolset", None)
    if not isinstance(kind, type):
        return None
    manager = getattr(ctx, "tool_manager", None)
    found = (getattr(manager, "tools", None) or {}).get(tool_def.name)
    toolset = getattr(found, "toolset", None)
    for _ in range(16):  # wrappers (prefixed, filtered, ...) hold the toolset they wrap
        if toolset is None or isinstance(toolset, kind):
            break
        toolset = getattr(toolset, "wrapped", None)
    if not isinstance(toolset, kind):
        return None
    meta = tool_def.metadata or {}
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    server = getattr(toolset, "id", None)
    return (
        annotations if isinstance(annotations, Mapping) else {},
        server if isinstance(server, str) else "",
    )


#: Deferred calls remembered for a resume without metadata.
_MAX_PENDING = 10_000


def _asked(ctx: RunContext[Any], pending: dict[str, str] | None = None) -> str | None:
    """The approval key of a call a person approved on resume (from the deferred call's
    metadata, else from this process's memory of it), else None."""
    if not ctx.tool_call_approved:
        return None
    meta = ctx.tool_call_metadata
    key = meta.get(APPROVAL_KEY) if isinstance(meta, Mapping) else None
    if key is None and pending is not None and ctx.tool_call_id:
        key = pending.pop(ctx.tool_call_id, None)
    return key if isinstance(key, str) and key.startswith("sha256:") else None


def _answer(outcome: Governed, *, resumed: bool, name: str) -> Any:
    if outcome.status == "ok":
        return outcome.content if outcome.rewritten else outcome.value
    if outcome.status == "error":
        if outcome.raised is not None:
            raise outcome.raised  # the tool's own failure (ModelRetry, ...), as pydantic-ai has it
        raise SkipToolExecution(outcome.content)
    if outcome.status == "approval":
        if resumed:
            raise SkipToolExecution(
                f"{REFUSED}`{name}` was approved with other arguments than these "
                f"({outcome.content})"
            )
        raise ApprovalRequired(metadata={APPROVAL_KEY: outcome.approval, "reason": outcome.content})
    raise SkipToolExecution(REFUSED + outcome.content)


def toolset(
    *sources: tw.Toolset | tw.Tool[Any, Any] | Iterable[tw.Tool[Any, Any]],
    governor: Governor | None = None,
    principal: tw.Principal | None = None,
    principal_from: Callable[[RunContext[Any]], tw.Principal | None] = default_principal,
    approvals: bool = True,
) -> FunctionToolset[Any]:
    """toolwire tools as a pydantic-ai toolset: the installed tool packs (no sources), or
    the toolsets and tools given. Each call runs through toolwire's executor (validation,
    the policies, approvals, timeouts, retries, result hooks, the audit log); schemas
    are toolwire's. A call that needs approval is deferred as :class:`ToolwirePolicy`
    defers one (``approvals=False``: refused instead)."""
    gov = governor or Governor(FRAMEWORK, principal=principal)
    tools = tools_of(*sources)
    return FunctionToolset([_pai_tool(gov, t, principal_from, approvals) for t in tools])


def _pai_tool(
    governor: Governor,
    tool: tw.Tool[Any, Any],
    principal_from: Callable[[RunContext[Any]], tw.Principal | None],
    approvals: bool,
) -> PaiTool[Any]:
    async def run(ctx: RunContext[Any], **arguments: Any) -> Any:
        asked = _asked(ctx)
        if asked is not None:
            governor.approve(asked)
        try:
            outcome = await governor.arun(
                tool,
                arguments,
                call_id=ctx.tool_call_id or "",
                principal=principal_from(ctx),
                session_id=ctx.run_id or "",
            )
        finally:
            if asked is not None:
                governor.forget(asked)
        if outcome.status == "approval" and not approvals:
            return REFUSED + outcome.content
        try:
            answer = _answer(outcome, resumed=asked is not None, name=tool.name)
        except SkipToolExecution as exc:
            return exc.result  # a plain tool answers; its refusal is its result
        return answer if outcome.status != "ok" else outcome.content

    made = PaiTool.from_schema(
        run,
        name=tool.name,
        description=tool.description,
        json_schema=dict(tool.input_schema),
        takes_ctx=True,
    )
    made.metadata = {"effect": tool.metadata.effect.value, _GOVERNED: _TOKEN}
    return made
