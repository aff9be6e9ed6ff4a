"""A round's execution and its paused form: RoundExecution, and the JSON codec that saves a
round paused for approval and restores it (re-checking what it can) on another worker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import pydantic_core
from pydantic import ValidationError

from toolwire._calls import (
    HandledCall,
    RejectedCall,
    ToolCall,
    ToolResult,
    TypedCall,
)
from toolwire._decode import (
    InvalidArguments,
    NotAvailable,
    ToolCallIssue,
    UnknownTool,
    not_available,
)
from toolwire._errors import (
    ToolDefinitionError,
    TranscriptError,
    UsageError,
)
from toolwire._execute.approval import ApprovalRequest, _canonical_json, _plain, call_fingerprint
from toolwire._execute.jobs import _errors_text
from toolwire._exports import publish
from toolwire._hooks import HookContext, HookSet
from toolwire._jsondata import as_object, field, objects
from toolwire._media import part_from_dict, part_to_dict
from toolwire._round import AssistantReply, ToolRound, ToolRoundPlan
from toolwire._tools import Tool
from toolwire._toolset import Toolset
from toolwire._transcript import AssistantMessage, Session, _message_from_dict, _message_to_dict
from toolwire._turn import ResolvedTurn, resolve_turn

if TYPE_CHECKING:
    pass

_T = TypeVar("_T")


@attrs.frozen
class RoundExecution:
    """What ``execute_and_commit`` / ``resume`` did with a plan.

    ``results``: the executor's results for the plan's pending calls, in the
    plan's order (empty when approval is pending); ``pending``: the deferred
    approvals (nothing ran, nothing was committed); ``committed``: the round
    is in the session; ``plan``: the plan (or round), to resume.
    """

    plan: ToolRoundPlan | ToolRound
    results: tuple[ToolResult, ...] = ()
    pending: tuple[ApprovalRequest, ...] = ()
    committed: bool = False

    @property
    def is_pending(self) -> bool:
        return bool(self.pending)

    def to_dict(self) -> dict[str, Any]:
        """The paused round as JSON data (format ``toolwire.pending/1``), to resume elsewhere.

        While approval is pending the session does not hold the assistant's
        tool calls; this holds them (the assistant message), the session id,
        the length and a sha256 digest of the messages the round was decoded
        at, what hooks decided (handled and rejected results, the round's
        issues), the calls pending execution (with the input a hook edited,
        if one did) and the approval requests (call id, fingerprint), every
        list in the order of the assistant's calls. :meth:`from_dict` rebuilds
        the run.

        Trust: this is server-side data, as trusted as the Session JSON it is
        stored with (toolwire signs neither): keep both where neither the model
        nor the user can write them. Consume it once: resuming the same data
        twice runs its calls twice. :meth:`from_dict` still fails closed where
        it can without trusting it (see there).

        Raises ValueError unless approval is pending, or when a hook edited a
        call's input into something that does not survive JSON (a
        ``SecretStr``, a value without a JSON form): resumed, it would run
        other arguments than the ones approved.
        """
        if not self.pending or self.committed:
            raise TranscriptError(
                "only a run whose approval is pending can be saved with to_dict()"
            )
        plan = self.plan
        if isinstance(plan, ToolRound):
            round_, calls = plan, plan.calls
            handled: tuple[HandledCall, ...] = ()
            rejected: tuple[RejectedCall, ...] = ()
        else:
            round_, calls = plan.round, plan.pending
            handled, rejected = plan.handled, plan.rejected
        order = {c.id: i for i, c in enumerate(round_.message.tool_calls)}
        return {
            "format": PENDING_FORMAT,
            "session_id": round_.session.id,
            "session_length": round_._mark,
            "session_digest": _session_digest(round_.session, round_._mark),
            "message": _message_to_dict(round_.message),
            "calls": [_call_entry(c) for c in _in_order(calls, lambda c: c.id, order)],
            "approvals": [
                {"call_id": r.call_id, "fingerprint": r.fingerprint}
                for r in _in_order(self.pending, lambda r: r.call_id, order)
            ],
            "handled": [
                {
                    **_call_entry(h.call),
                    "output": pydantic_core.to_jsonable_python(h.output, fallback=repr),
                    "result": _result_entry(h.result),
                    "source": h.source,
                }
                for h in _in_order(handled, lambda h: h.call.id, order)
            ],
            "rejected": [
                {
                    "call_id": r.call.id,
                    "reason": r.reason,
                    "source": r.source,
                    "result": _result_entry(r.result),
                }
                for r in _in_order(rejected, lambda r: r.call.id, order)
            ],
            "issues": [
                _issue_entry(i) for i in _in_order(round_.issues, lambda i: i.call.id, order)
            ],
        }

    @classmethod
    def from_dict(
        cls,
        data: Any,
        session: Session,
        tools: Toolset | ResolvedTurn,
        *,
        context: HookContext | None = None,
    ) -> RoundExecution:
        """Rebuild a run saved with :meth:`to_dict`, to pass to :meth:`Executor.resume`.

        ``session`` is the session restored from JSON (still at the recorded
        length), ``tools`` the turn (or toolset) whose tools the pending calls
        are validated against again, from their argument text (or the input a
        hook edited).

        Trust: the data is as trusted as the Session JSON it was stored with
        (nothing is signed), and must be consumed once: resuming the same
        data twice runs its calls twice. What can be checked without trusting
        it is checked, failing closed:

        - the session must have the recorded id, length and message digest;
        - every list must follow the order of the assistant's calls;
        - each approval's fingerprint must be the one the re-validated call
          has now (so an approval of the reviewed fingerprint still binds);
        - the turn's guard hooks (policies: guard hook sets, hooks registered
          with ``guard=True``) and the executor's plugin policies run again
          on every call pending execution when the run is resumed, before
          anything runs: a Reject (or Complete) from them refuses the call.

        Other hooks do not run again: handled and rejected calls keep their
        recorded results (a handled call's ``output`` comes back as its JSON
        form; it does not need its tool to be offered any more). Malformed
        data, a changed session, or a pending call whose tool is gone or whose
        arguments no longer validate raise TranscriptError naming the path.
        """
        if isinstance(tools, Toolset):
            turn = resolve_turn(tools)
        elif isinstance(tools, ResolvedTurn):
            turn = tools
        else:
            raise UsageError(
                f"tools must be a Toolset or a ResolvedTurn, got {type(tools).__name__}"
            )
        return _restore(data, session, turn, context)


PENDING_FORMAT = "toolwire.pending/1"


class _RestoredRoundPlan(ToolRoundPlan):
    """A plan rebuilt by :meth:`RoundExecution.from_dict`: the executor runs the guard hooks of
    ``guards`` (the turn's hook sets) again on its pending calls before anything runs,
    rather than trusting the saved data to say they passed."""

    __slots__ = ("guards",)

    def __init__(self, plan: ToolRoundPlan, guards: tuple[HookSet, ...]) -> None:
        super().__init__(plan.round, plan.pending, plan.handled, plan.rejected, plan.context)
        self._observed = plan._observed
        self.guards = guards

    def apply_hooks(self, *hooks: HookSet, context: HookContext | None = None) -> ToolRoundPlan:
        return _RestoredRoundPlan(super().apply_hooks(*hooks, context=context), self.guards)

    async def aapply_hooks(
        self, *hooks: HookSet, context: HookContext | None = None
    ) -> ToolRoundPlan:
        return _RestoredRoundPlan(await super().aapply_hooks(*hooks, context=context), self.guards)


def _guards_of(plan: ToolRoundPlan | ToolRound) -> tuple[HookSet, ...] | None:
    return plan.guards if isinstance(plan, _RestoredRoundPlan) else None


def _in_order(items: Iterable[_T], key: Callable[[_T], str], order: Mapping[str, int]) -> list[_T]:
    return sorted(items, key=lambda item: order[key(item)])


def _session_digest(session: Session, length: int) -> str:
    """sha256 (hex) of the canonical JSON of the session's first ``length`` messages."""
    messages = session.to_dict()["messages"][:length]
    return hashlib.sha256(_canonical_json(messages).encode()).hexdigest()


def _call_entry(call: TypedCall[Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"call_id": call.id}
    if call.edited:  # a hook edited the input: keep what it made (else the argument text is it)
        stored = json.loads(_canonical_json(_plain(call.input)))
        try:
            same = call.tool.validate_json(json.dumps(stored)) == call.input
        except (ValidationError, ValueError, TypeError):
            same = False
        if not same:
            raise TranscriptError(
                f"call `{call.id}` (tool `{call.name}`): the input a hook edited does not "
                f"survive JSON (a secret such as SecretStr, or a value without a JSON form), "
                f"so the paused round cannot be saved: resumed, it would run other arguments"
            )
        entry["input"] = stored
    return entry


def _result_entry(result: ToolResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": result.content, "is_error": result.is_error}
    if result.rich:
        entry["parts"] = [part_to_dict(p) for p in result.parts]
    return entry


def _issue_entry(issue: ToolCallIssue) -> dict[str, Any]:
    if isinstance(issue, InvalidArguments):
        errors = [
            {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": e.get("msg")}
            for e in issue.errors
        ]
        return {"call_id": issue.call.id, "kind": "invalid_arguments", "errors": errors}
    kind = "not_available" if isinstance(issue, NotAvailable) else "unknown_tool"
    return {"call_id": issue.call.id, "kind": kind}


def _typed(
    turn: ResolvedTurn, call: ToolCall, entry: Mapping[str, Any], where: str
) -> TypedCall[Any]:
    """A recorded call validated again against the turn's tools (the edited input, if any)."""
    tool = turn.lookup(call.name)
    if tool is None:
        raise TranscriptError(
            f"{where}: tool `{call.name}` (call `{call.id}`) is not offered by this turn; "
            f"the paused round cannot be resumed without it"
        )
    try:
        value = tool.validate_json(call.arguments)
        if "input" not in entry:
            return TypedCall(call, tool, value)
        where = f"{where}.input"
        edited = tool.validate_json(json.dumps(entry["input"]))
    except ValidationError as exc:
        raise TranscriptError(
            f"{where}: the arguments of call `{call.id}` do not match tool `{call.name}`:\n"
            + _errors_text(exc)
        ) from None
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"{where} is not JSON data: {exc}") from None
    return TypedCall(call, tool, edited, True)


def _answered(
    turn: ResolvedTurn, call: ToolCall, entry: Mapping[str, Any], where: str
) -> TypedCall[Any]:
    """A handled call, rebuilt from the raw call (it will not run: its tool need not be
    offered now). With the toolset's tool when it still takes the recorded input, so result
    hooks see the call typed as before; else with a stand-in raw tool of the same name."""
    edited = "input" in entry
    tool = turn.lookup(call.name) or turn.toolset.get(call.name)
    if tool is not None and tool.name == call.name:
        try:
            text = json.dumps(entry["input"]) if edited else call.arguments
            return TypedCall(call, tool, tool.validate_json(text), edited)
        except (ValidationError, TypeError, ValueError):
            pass
    value = entry.get("input")
    if not edited:
        try:
            value = json.loads(call.arguments)
        except ValueError:
            value = None
    try:
        stand_in: Tool[Any, Any] = Tool(
            name=call.name,
            description="A tool a hook answered; not available now.",
            input_type=dict,
            input_schema={"type": "object"},
        )
    except ToolDefinitionError as exc:
        raise TranscriptError(f"{where}: {exc}") from None
    return TypedCall(call, stand_in, value if isinstance(value, dict) else {}, edited)


def _result(call: ToolCall, entry: Mapping[str, Any], where: str) -> ToolResult:
    d = field(entry, "result", where, Mapping)
    content = field(d, "content", f"{where}.result", str)
    result = call.result(content, is_error=field(d, "is_error", f"{where}.result", bool))
    parts = tuple(part_from_dict(p, w) for p, w in objects(d, "parts", f"{where}.result", ()))
    return result._replace(rich=parts) if parts else result


def _issue(
    turn: ResolvedTurn, call: ToolCall, entry: Mapping[str, Any], where: str
) -> ToolCallIssue:
    kind = entry.get("kind")
    if kind == "not_available":
        return not_available(call, turn)
    if kind == "unknown_tool":
        return UnknownTool(call, tuple(turn.offered))
    if kind != "invalid_arguments":
        raise TranscriptError(
            f"{where}.kind must be 'not_available', 'unknown_tool' or 'invalid_arguments', "
            f"got {kind!r}"
        )
    tool = turn.toolset.get(call.name)
    if tool is None:
        raise TranscriptError(f"{where}: tool `{call.name}` is not in the toolset any more")
    errors = []
    for e, w in objects(entry, "errors", where):
        errors.append(
            {
                "type": field(e, "type", w, str),
                "loc": tuple(field(e, "loc", w, list)),
                "msg": field(e, "msg", w, str),
            }
        )
    return InvalidArguments(call, tool, tuple(errors))


def _restore(
    data: Any, session: Session, turn: ResolvedTurn, context: HookContext | None
) -> RoundExecution:
    data = as_object(data, "a pending round")
    if data.get("format") != PENDING_FORMAT:
        raise TranscriptError(
            f"unknown pending round format {data.get('format')!r}; expected {PENDING_FORMAT!r}"
        )
    sid = field(data, "session_id", "pending", str)
    if sid != session.id:
        raise TranscriptError(f"pending.session_id {sid!r} is not this session's id {session.id!r}")
    length = field(data, "session_length", "pending", int)
    if len(session) != length:
        raise TranscriptError(
            f"the session has {len(session)} messages, but the paused round was decoded at "
            f"{length} (pending.session_length): the session changed since"
        )
    digest = field(data, "session_digest", "pending", str)
    if digest != _session_digest(session, length):
        raise TranscriptError(
            "the session's messages are not the ones the paused round was decoded at "
            "(pending.session_digest): the session changed since"
        )
    message = _message_from_dict(data.get("message"), "pending.message")
    if not isinstance(message, AssistantMessage) or not message.tool_calls:
        raise TranscriptError("pending.message must be an assistant message with tool calls")
    by_id = {c.id: c for c in message.tool_calls}
    if len(by_id) != len(message.tool_calls):
        raise TranscriptError("pending.message: a tool call id appears twice")
    order = {cid: i for i, cid in enumerate(by_id)}
    seen: set[str] = set()

    def recorded(key: str) -> Iterator[tuple[ToolCall, Mapping[str, Any], str]]:
        """pending.<key>'s entries: each names a call of the message, once, in its order."""
        last = -1
        for e, w in objects(data, key, "pending"):
            cid = field(e, "call_id", w, str)
            if cid not in by_id:
                raise TranscriptError(f"{w}.call_id {cid!r} is not a call of pending.message")
            if cid in seen:
                raise TranscriptError(f"{w}.call_id {cid!r} is recorded twice")
            seen.add(cid)
            if order[cid] < last:
                raise TranscriptError(
                    f"{w}.call_id {cid!r} is out of order: pending.{key} must follow the "
                    f"order of the calls in pending.message"
                )
            last = order[cid]
            yield by_id[cid], e, w

    ctx = context or turn.context or HookContext()
    calls = tuple(_typed(turn, raw, e, w) for raw, e, w in recorded("calls"))
    handled = tuple(
        HandledCall(
            _answered(turn, raw, e, w),
            e.get("output"),
            _result(raw, e, w),
            field(e, "source", w, str, ""),  # absent from rounds paused before 0.2
        )
        for raw, e, w in recorded("handled")
    )
    rejected = tuple(
        RejectedCall(
            raw, field(e, "reason", w, str), field(e, "source", w, str), _result(raw, e, w)
        )
        for raw, e, w in recorded("rejected")
    )
    issues = tuple(_issue(turn, raw, e, w) for raw, e, w in recorded("issues"))
    missing = [cid for cid in by_id if cid not in seen]
    if missing:
        raise TranscriptError(
            f"pending: call(s) {', '.join(map(repr, missing))} of pending.message are not "
            f"recorded as pending, handled, rejected or an issue"
        )
    runnable = {c.id: c for c in calls}
    requests = []
    last = -1
    for e, w in objects(data, "approvals", "pending"):
        cid = field(e, "call_id", w, str)
        call = runnable.get(cid)
        if call is None:
            raise TranscriptError(f"{w}.call_id {cid!r} is not a call pending execution")
        if order[cid] <= last:
            raise TranscriptError(
                f"{w}.call_id {cid!r} is repeated or out of order: pending.approvals must "
                f"follow the order of the calls in pending.message"
            )
        last = order[cid]
        fingerprint = field(e, "fingerprint", w, str)
        if fingerprint != call_fingerprint(call):
            raise TranscriptError(
                f"{w}.fingerprint is not the fingerprint of call `{cid}` (tool `{call.name}`) "
                f"as recorded: the call's arguments or the fingerprint changed since it was saved"
            )
        requests.append(ApprovalRequest(call, fingerprint, ctx))
    if not requests:
        raise TranscriptError("pending.approvals is empty: there is nothing to resume")
    typed = tuple(sorted((*calls, *(h.call for h in handled)), key=lambda c: order[c.id]))
    reply = AssistantReply(
        message.text,
        message.tool_calls,
        "tool_calls",
        message.usage,
        dict(message.provider_state),
        message.model,
    )
    plan = ToolRoundPlan(
        ToolRound(session, turn, message, typed, issues, reply), calls, handled, rejected, ctx
    )
    # Restored plans start unobserved (result hooks see the handled results at commit) and
    # their pending calls pass the turn's guard hooks again when the run is resumed.
    return RoundExecution(_RestoredRoundPlan(plan, turn.hooks), (), tuple(requests), False)


publish(globals())
