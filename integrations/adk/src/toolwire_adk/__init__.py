"""toolwire for Google's Agent Development Kit: the organisation's policies over every tool
call a Runner makes, and toolwire tool packs as ADK tools.

```python
from google.adk.runners import Runner
from toolwire_adk import ToolwirePlugin

runner = Runner(agent=agent, app_name="notes", session_service=sessions,
                plugins=[ToolwirePlugin()])
```

The plugin's tool callbacks decide each call before ADK runs the tool and record its result
after, under the installed toolwire policies (found as every toolwire path finds them;
``TOOLWIRE_POLICY_REQUIRED`` and ``TOOLWIRE_DISABLE_POLICIES`` as everywhere):

- allowed: the tool runs; its result passes the result hooks (a redacted result reaches
  the model redacted);
- refused: ADK does not run the tool, and its response is ``{"error": "The call was
  rejected and did not run: REASON"}``;
- needs a person's approval: ADK's own tool confirmation (``request_confirmation``, the
  ``adk_request_confirmation`` call a client answers with ``{"confirmed": true}``), with
  every argument in the hint; the confirmed call runs once, a rejected one is refused;
- waits for the people the policy names (the approval queue): the same confirmation,
  its payload naming the request (``toolwire_queue``) and its hint saying who answers it;
  a client confirms once they answered, and the call is decided again: approved, it runs
  once; denied, the model reads who denied it and why; confirmed too early, it reads where
  the request waits. The confirmation never stands in for their answer;
- a policy that rewrites arguments: ADK runs the tool with them (the callback changes the
  call's arguments in place).

The principal is ``principal_from(tool_context)`` (default: the session state's
``principal``, a subject or ``{"subject": ..., "groups": [...]}``, else the session's
``user_id``), else ``principal``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

import toolwire as tw
from toolwire.bridges import (
    Governed,
    Governor,
    approval_question,
    principal_of,
    queued_request,
    tools_of,
)

__version__ = "0.1.0"

__all__ = ["FRAMEWORK", "QUEUE_KEY", "ToolwirePlugin", "default_principal", "tools"]

logger = logging.getLogger("toolwire.adk")

#: How the audit records name calls made through this bridge.
FRAMEWORK = "google-adk"
#: What the model reads for a refused call (as every toolwire path words it).
REFUSED = "The call was rejected and did not run: "
#: The key of a confirmation's payload that holds the approval key.
APPROVAL_KEY = "toolwire_approval"
#: The key of a confirmation's payload that names the approval request it waits on.
QUEUE_KEY = "toolwire_queue"
#: Seconds a decided call waits for ADK to report its result before it is cancelled.
HOLD = 300.0
_MAX_PENDING = 10_000


def default_principal(tool_context: ToolContext) -> tw.Principal | None:
    """Who a call is made for: the session state's ``principal`` (a subject, or a mapping
    with ``subject`` and ``groups``), else the session's user."""
    try:
        found = principal_of(tool_context.state.get("principal"))
    except AttributeError:  # no session state here
        found = None
    if found is not None:
        return found
    user = getattr(tool_context, "user_id", None)
    return tw.Principal(user) if isinstance(user, str) and user else None


class _Held:
    """A call the policies let run, waiting for ADK to run it and report its result."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.reached: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.result: asyncio.Future[Any] = loop.create_future()
        self.task: asyncio.Task[Governed] | None = None
        self.decided: dict[str, Any] = {}


class ToolwirePlugin(BasePlugin):
    """An ADK Runner plugin: every tool call under the installed toolwire policies (see
    the module's text). ``effects``: a tool's effect by its name (``read_only``,
    ``mutating``, ``destructive``); ADK's tools say none, so a tool not named counts as
    destructive. ``governor``: one made elsewhere (its host, its approvals), shared.

    An MCP server's tool (ADK's ``McpTool``) takes its effect from the server's annotations,
    believed only of a server the policy trusts (``trusted_mcp_servers``): ADK does not say
    which server a tool comes from, so ``mcp_server_of(tool)`` names it (default: none, so
    ``mcp:(unnamed)``, trusted only by a policy that trusts every server)."""

    def __init__(
        self,
        *,
        governor: Governor | None = None,
        principal: tw.Principal | None = None,
        principal_from: Callable[[ToolContext], tw.Principal | None] = default_principal,
        effects: Mapping[str, str] | None = None,
        hold: float = HOLD,
        app: str = "",
        name: str = "toolwire",
        mcp_server_of: Callable[[BaseTool], str | None] = lambda tool: None,
    ) -> None:
        super().__init__(name=name)
        self.mcp_server_of = mcp_server_of
        self.governor = governor or Governor(
            FRAMEWORK, principal=principal, effects=effects, app=app
        )
        self.principal = principal
        self.principal_from = principal_from
        self.hold = hold
        self._held: dict[str, _Held] = {}
        self._asked: dict[str, str] = {}

    # -- ADK's callbacks ------------------------------------------------------------------

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Decide the call: None runs it, a dict is its response instead. Never raises
        (anything that goes wrong refuses the call)."""
        try:
            return await self._before(tool, tool_args, tool_context)
        except Exception as exc:
            logger.exception("toolwire could not decide an ADK tool call")
            return _refusal(f"the organisation policy could not decide it ({type(exc).__name__})")

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Record the result; the result as the result hooks leave it (None: unchanged)."""
        held = self._held.pop(tool_context.function_call_id or "", None)
        if held is None or held.task is None:
            return None
        if tool_args != held.decided:
            held.task.cancel()
            return _refusal("its arguments were changed after the organisation policy decided it")
        _settle(held.result, result)
        try:
            outcome = await asyncio.wait_for(asyncio.shield(held.task), self.hold)
        except Exception as exc:
            logger.exception("toolwire could not record an ADK tool result")
            why = type(exc).__name__
            return {"error": f"the organisation policy could not record this result ({why})"}
        if outcome.status == "ok":
            return _as_response(outcome.content) if outcome.rewritten else None
        return {"error": outcome.content} if outcome.ran else _refusal(outcome.content)

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        """The tool raised: its record says so. ADK handles an ADK tool's error as it
        would; a toolwire pack's tool answers with toolwire's words, as it does anywhere."""
        held = self._held.pop(tool_context.function_call_id or "", None)
        if held is None or held.task is None or held.result.done():
            return None
        held.result.set_exception(error)
        try:
            outcome = await asyncio.wait_for(asyncio.shield(held.task), self.hold)
        except Exception:  # the error is the tool's: ADK's to handle
            return None
        return {"error": outcome.content} if isinstance(tool, _PackTool) else None

    # -- the decision -------------------------------------------------------------------

    async def _before(
        self, tool: BaseTool, tool_args: dict[str, Any], context: ToolContext
    ) -> dict[str, Any] | None:
        call_id = context.function_call_id or ""
        if isinstance(tool, _PackTool):
            foreign = tool.governed
        else:
            schema = _schema(tool)
            annotations = _mcp_annotations(tool)
            foreign = self.governor.foreign_tool(
                tool.name,
                tool.description or "",
                schema,
                mcp_annotations=annotations,
                mcp_server=self.mcp_server_of(tool) if annotations is not None else None,
                # The server's name for it (a toolset's tool_name_prefix renames the copy).
                mcp_name=_mcp_name(tool) if annotations is not None else None,
            )
        confirmation = getattr(context, "tool_confirmation", None)
        asked: str | None = None
        if confirmation is not None:
            if not confirmation.confirmed:
                self._asked.pop(call_id, None)
                return _refusal("a person did not approve it")
            payload = confirmation.payload
            key = payload.get(APPROVAL_KEY) if isinstance(payload, Mapping) else None
            # A confirmation of a call waiting in the queue approves nothing: the call is
            # decided again, and its approvers' answer decides it.
            queued = isinstance(payload, Mapping) and QUEUE_KEY in payload
            if not queued:
                asked = key if isinstance(key, str) else self._asked.pop(call_id, None)
            if asked is not None:
                self.governor.approve(asked)
        try:
            outcome, held = await self._decide(foreign, dict(tool_args), call_id, context)
        finally:
            if asked is not None:
                self.governor.forget(asked)
        if outcome is not None and outcome.status == "approval" and outcome.approval:
            if asked is not None or confirmation is not None:
                return _refusal(f"`{tool.name}` was approved with other arguments than these")
            hint = approval_question(tool.name, tool_args, outcome.content)
            if hint is None:
                return _refusal("its arguments are too long to show a person for approval")
            self._remember(self._asked, call_id, outcome.approval)
            context.request_confirmation(hint=hint, payload={APPROVAL_KEY: outcome.approval})
            return {"error": "This call needs a person's approval; it was not run. " + hint}
        request_id = queued_request(outcome, tool.name) if outcome is not None else None
        if outcome is not None and request_id is not None and confirmation is None:
            # Waits for the people the policy names: ADK's pause, naming the request; a
            # client confirms once they answered (the console, `toolwire policy approvals`).
            hint = (
                f"{outcome.content}. Confirm once it is answered; the call is then decided "
                "again (the confirmation approves nothing)."
            )
            context.request_confirmation(hint=hint, payload={QUEUE_KEY: request_id})
            return {"error": "This call waits for its approvers; it was not run. " + hint}
        if outcome is not None:
            return _refusal(outcome.content)
        assert held is not None
        given = held.reached.result()
        if given != tool_args:
            tool_args.clear()  # ADK runs the call with its arguments changed in place
            tool_args.update(given)
        held.decided = dict(given)
        self._remember(self._held, call_id, held)
        _DECIDED.set(call_id)  # a toolwire pack's tool runs only once decided here
        return None

    async def _decide(
        self, tool: tw.Tool[Any, Any], arguments: dict[str, Any], call_id: str, context: ToolContext
    ) -> tuple[Governed | None, _Held | None]:
        held = _Held()

        async def proceed(given: dict[str, Any]) -> Any:
            _settle(held.reached, given)
            return await held.result

        principal = self.principal_from(context) or self.principal
        task = held.task = asyncio.ensure_future(
            self.governor.arun(tool, arguments, proceed, call_id=call_id, principal=principal)
        )
        waiting: set[asyncio.Future[Any]] = {task, held.reached}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result(), None

        def never_reported() -> None:
            if not held.result.done():
                task.cancel()  # audited as cancelled, its quota slots freed

        asyncio.get_running_loop().call_later(self.hold, never_reported)
        return None, held

    def _remember(self, where: dict[str, Any], key: str, value: Any) -> None:
        if len(where) >= _MAX_PENDING:
            old = where.pop(next(iter(where)))
            if isinstance(old, _Held) and old.task is not None:
                old.task.cancel()
        where[key] = value


def _schema(tool: BaseTool) -> dict[str, Any]:
    """The tool's argument schema as ADK declares it to a model."""
    declaration = tool._get_declaration()
    if declaration is None:
        return {"type": "object"}
    given = getattr(declaration, "parameters_json_schema", None)
    if isinstance(given, Mapping):
        return dict(given)
    parameters = getattr(declaration, "parameters", None)
    if parameters is None:
        return {"type": "object"}
    lowered: dict[str, Any] = _lower_types(parameters.model_dump(mode="json", exclude_none=True))
    return lowered


def _lower_types(value: Any) -> Any:
    """A Gemini ``Schema`` dump as JSON Schema: its types are upper-case (``OBJECT``)."""
    if isinstance(value, dict):
        out = {k: _lower_types(v) for k, v in value.items()}
        if isinstance(out.get("type"), str):
            out["type"] = out["type"].lower()
        return out
    if isinstance(value, list):
        return [_lower_types(v) for v in value]
    return value


def _refusal(reason: str) -> dict[str, Any]:
    return {"error": REFUSED + reason}


def _as_response(content: str) -> dict[str, Any]:
    """A redacted result as ADK's response: the JSON object it was, else its text."""
    try:
        value = json.loads(content)
    except ValueError:
        return {"result": content}
    return value if isinstance(value, dict) else {"result": value}


#: The call the plugin let run, in the task that runs it (read by a pack's tool).
_DECIDED: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "toolwire_adk_decided", default=None
)


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class _PackTool(BaseTool):
    """An ADK tool standing for a toolwire tool (made by :func:`tools` only): the plugin
    decides it as itself (its schema, its metadata)."""

    def __init__(self, tool: tw.Tool[Any, Any], governed: tw.Tool[Any, Any]) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self.governed = governed
        self._toolwire = tool

    def _get_declaration(self) -> Any:
        from google.genai import types

        return types.FunctionDeclaration(
            name=self._toolwire.name,
            description=self._toolwire.description,
            parameters_json_schema=dict(self._toolwire.input_schema),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if _DECIDED.get() != tool_context.function_call_id:
            # Given to a Runner without ToolwirePlugin: nothing decided this call.
            return _refusal("no ToolwirePlugin on this Runner decided it")
        _DECIDED.set(None)
        tool = self._toolwire
        answer = tool.call(tool.validate_python(args))
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer


def _mcp_name(tool: BaseTool) -> str | None:
    """An ADK MCP tool's name on its server (``tool.name`` may carry a toolset's prefix)."""
    name = getattr(getattr(tool, "_mcp_tool", None), "name", None)
    return name if isinstance(name, str) and name else None


def _mcp_annotations(tool: BaseTool) -> dict[str, Any] | None:
    """An ADK MCP tool's annotations (wire names; empty when the server gave none), else
    None for a tool that is not an MCP server's."""
    if type(tool).__name__ != "McpTool":
        return None
    described = getattr(tool, "_mcp_tool", None)
    annotations = getattr(described, "annotations", None)
    if annotations is None:
        return {}
    dump = getattr(annotations, "model_dump", None)
    found = dump(by_alias=True, exclude_none=True) if callable(dump) else None
    return found if isinstance(found, dict) else {}


def tools(
    *sources: tw.Toolset | tw.Tool[Any, Any] | Iterable[tw.Tool[Any, Any]],
    governor: Governor,
) -> list[BaseTool]:
    """toolwire tools as ADK tools, for a Runner with :class:`ToolwirePlugin` (give it
    the plugin's ``governor``): the installed tool packs (no sources), or the toolsets and
    tools given, each decided as itself (its schema, its effect, its timeout). Without
    the plugin they are not governed: give them to a Runner that has it."""
    found = tools_of(*sources)
    return [
        _PackTool(
            t, governor.foreign_tool(t.name, t.description, t.input_schema, metadata=t.metadata)
        )
        for t in found
    ]
