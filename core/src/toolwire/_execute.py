"""The executor: checks, approval, interceptors, timeout, retry and parallelism for tool calls.

The executor is something user code hands calls (or a whole ToolRoundPlan) to;
it never runs anything on its own. Per call, in this order:

    lookup -> capability allow-list -> availability -> schema validation
    -> custom validation -> approval -> [retry: interceptors -> timeout -> tool]
    -> output validation -> on_result -> ToolResult

Every failure becomes an error result (``is_error=True``): refusals where the
tool was not run (unknown tool, sandbox violation, unavailable, invalid
arguments, failed validation, approval denied) carry the standard rejection
prefix, so ``rejection_reason(result)`` reads the reason back; failures of the
tool itself (its exception, a timeout, output of the wrong type) are plain
error text. ``dispatch`` raises ToolExecutionError instead.

Everything that depends only on the tool (is it async, its timeout, its retry
hint, its sandbox verdict, its output validator) is decided once per tool and
cached on the executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import enum
import functools
import hashlib
import inspect
import json
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union, cast

import attrs
import pydantic_core
from pydantic import BaseModel, ValidationError

from toolwire._calls import (
    HandledCall,
    RejectedCall,
    ToolCall,
    ToolResult,
    TypedCall,
    rejection_content,
    rejection_reason,
)
from toolwire._errors import (
    ApprovalPendingError,
    EventLoopError,
    ProviderError,
    ToolDefinitionError,
    ToolExecutionError,
    TranscriptError,
    UsageError,
)
from toolwire._exports import publish
from toolwire._hooks import HookContext, HookSet, _async_pass, _guards_only, _hooks_for
from toolwire._plugins import get_host
from toolwire._round import (
    AssistantReply,
    InvalidArguments,
    NotAvailable,
    ToolCallIssue,
    ToolRound,
    ToolRoundPlan,
    UnknownTool,
)
from toolwire._tools import Capability, Tool, ToolEffect, ToolMetadata, tool_of
from toolwire._toolset import Toolset
from toolwire._transcript import AssistantMessage, Session, _message_from_dict, _message_to_dict
from toolwire._turn import ResolvedTurn, resolve_turn

if TYPE_CHECKING:
    from toolwire._otel import Tracing

__all__ = [
    "Allow",
    "Approval",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Defer",
    "Deny",
    "Executor",
    "Interceptor",
    "LoggingInterceptor",
    "Modify",
    "RoundExecution",
    "RateLimitInterceptor",
    "TimeoutInterceptor",
    "ToolRequest",
    "call_fingerprint",
    "is_transient",
]

logger = logging.getLogger("toolwire.execute")
_T = TypeVar("_T")

# -- approval -----------------------------------------------------------------------------


@attrs.frozen
class Allow:
    """Approve the call as reviewed."""


@attrs.frozen
class Deny:
    """Refuse the call; the model receives a rejection carrying ``reason``."""

    reason: str = "denied"


@attrs.frozen
class Modify:
    """Approve the call with other arguments (a dict, a model instance or JSON text).

    They are validated against the tool's schema again; invalid ones give an
    error result and the tool is not run.
    """

    arguments: Any


@attrs.frozen
class Defer:
    """Decide later: nothing runs; the caller gets ApprovalRequest records to resume with."""

    note: str = ""


ApprovalDecision = Union[Allow, Deny, Modify, Defer]


class ApprovalGate(str, enum.Enum):
    """Which calls the approver sees, by the tool's effect."""

    ALWAYS = "always"
    DESTRUCTIVE_ONLY = "destructive_only"
    MUTATING_AND_ABOVE = "mutating_and_above"

    def applies(self, effect: ToolEffect) -> bool:
        if self is ApprovalGate.ALWAYS:
            return True
        if self is ApprovalGate.DESTRUCTIVE_ONLY:
            return effect is ToolEffect.DESTRUCTIVE
        return effect.rank >= ToolEffect.MUTATING.rank


def _canonical_json(value: Any) -> str:
    plain = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    plain = pydantic_core.to_jsonable_python(plain, fallback=repr)
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_fingerprint(call: TypedCall[Any]) -> str:
    """sha256 (hex) of the canonical JSON of ``{"tool": name, "input": input}``.

    Canonical: keys sorted, no spaces, UTF-8. An approval is bound to this
    value; a call whose input no longer has it is not run.
    """
    text = _canonical_json({"tool": call.name, "input": _plain(call.input)})
    return hashlib.sha256(text.encode()).hexdigest()


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


@attrs.frozen
class Approval:
    """A decision for one deferred call, bound to the fingerprint that was reviewed."""

    call_id: str
    fingerprint: str
    decision: ApprovalDecision


@attrs.frozen
class ApprovalRequest:
    """What an approver reviews (and what a deferred approval hands back to the caller).

    ``call`` is the typed call with the input that would run, ``fingerprint``
    binds a decision to exactly that input, ``context`` is the round's hook
    context (or None). ``allow()``, ``deny(reason)`` and ``modify(arguments)``
    make the Approval records :meth:`Executor.resume` takes.
    """

    call: TypedCall[Any]
    fingerprint: str
    context: HookContext | None = None

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def tool_name(self) -> str:
        return self.call.name

    @property
    def input(self) -> Any:
        return self.call.input

    @property
    def effect(self) -> ToolEffect:
        return self.call.metadata.effect

    @property
    def arguments_json(self) -> str:
        """The canonical JSON of the input under review (what the fingerprint hashes)."""
        return _canonical_json(_plain(self.call.input))

    def allow(self) -> Approval:
        return Approval(self.call.id, self.fingerprint, Allow())

    def deny(self, reason: str = "denied") -> Approval:
        return Approval(self.call.id, self.fingerprint, Deny(reason))

    def modify(self, arguments: Any) -> Approval:
        return Approval(self.call.id, self.fingerprint, Modify(arguments))


Approver = Callable[[ApprovalRequest], "ApprovalDecision | Awaitable[ApprovalDecision]"]

# -- interceptors -------------------------------------------------------------------------


@attrs.frozen
class ToolRequest:
    """What an interceptor receives for one attempt at running a call.

    - ``call``: the TypedCall about to run (``call.input`` is the validated,
      possibly hook-edited or approver-modified input; ``call.call`` the raw
      model call, whose id and argument text the result keeps);
    - ``attempt``: 1 for the first attempt, 2 for the first retry, ...;
    - ``context``: the round's HookContext (app, session, provider, user
      mapping), or None for a bare ``execute``;
    - ``approved``: the fingerprint an approver approved, or None when no
      approval applied. If the input run differs from it, the tool is not run.

    ``tool``, ``input``, ``name``, ``id`` and ``metadata`` are shortcuts;
    ``with_input(value)`` gives a request with another input.
    """

    call: TypedCall[Any]
    attempt: int = 1
    context: HookContext | None = None
    approved: str | None = None

    @property
    def tool(self) -> Tool[Any, Any]:
        return self.call.tool

    @property
    def input(self) -> Any:
        return self.call.input

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def metadata(self) -> ToolMetadata:
        return self.call.tool.metadata

    def with_input(self, value: Any) -> ToolRequest:
        return attrs.evolve(self, call=self.call.with_input(value))


Next = Callable[[ToolRequest], Awaitable[ToolResult]]


class Interceptor(Protocol):
    """Wraps every attempt at running a tool: ``result = await next(request)``.

    An interceptor may look at or edit the request (``request.with_input``),
    return its own ToolResult without calling ``next``, call ``next`` more than
    once, or let the tool's exception propagate (the executor turns it into an
    error result, or retries it). A plain function ``f(request, next)``
    (sync or async) works too; the first interceptor given is the outermost.
    """

    def __call__(
        self, request: ToolRequest, next: Next, /
    ) -> Awaitable[ToolResult] | ToolResult: ...


def _checked_interceptor(icpt: Any, position: int) -> Interceptor:
    """``icpt`` if it can be called as ``icpt(request, next)``; a UsageError otherwise.

    Checked when the executor is built, so a misconfigured interceptor fails the
    application's set-up instead of every tool call (where the model would see it).
    """
    if not callable(icpt):
        raise UsageError(
            f"interceptors[{position}] must be callable as f(request, next), "
            f"got {type(icpt).__name__}"
        )
    try:
        signature = inspect.signature(icpt)
    except (TypeError, ValueError):  # no signature to read (some builtins): trust it
        return cast(Interceptor, icpt)
    try:
        signature.bind(None, None)
    except TypeError as exc:
        name = getattr(icpt, "__qualname__", type(icpt).__qualname__)
        raise UsageError(
            f"interceptors[{position}] ({name}) must take two positional arguments "
            f"(request, next), but its signature is {signature}: {exc}"
        ) from None
    return cast(Interceptor, icpt)


class LoggingInterceptor:
    """Logs each attempt (tool, call id, attempt, duration, outcome) to ``toolwire.execute``."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logger or logging.getLogger("toolwire.execute")
        self.level = level
        self.clock = clock

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        log = self.logger
        if not log.isEnabledFor(self.level):
            return await next(request)
        start = self.clock()
        log.log(
            self.level,
            "tool=%s call=%s attempt=%d start",
            request.name,
            request.id,
            request.attempt,
        )
        try:
            result = await next(request)
        except Exception as exc:
            log.log(
                self.level,
                "tool=%s call=%s attempt=%d raised %s after %.1f ms",
                request.name,
                request.id,
                request.attempt,
                type(exc).__name__,
                (self.clock() - start) * 1000,
            )
            raise
        log.log(
            self.level,
            "tool=%s call=%s attempt=%d %s after %.1f ms",
            request.name,
            request.id,
            request.attempt,
            "error" if result.is_error else "ok",
            (self.clock() - start) * 1000,
        )
        return result


class RateLimitInterceptor:
    """A token bucket: ``rate`` calls per second with bursts of ``burst``.

    ``per_tool=True`` (the default) keeps one bucket per tool name, otherwise
    one for every tool. A call that finds the bucket empty waits (through the
    injectable ``sleep``) for its token rather than failing.
    """

    def __init__(
        self,
        rate: float,
        *,
        burst: int = 1,
        per_tool: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        if not rate > 0:
            raise UsageError(f"rate must be > 0 calls per second, got {rate!r}")
        if burst < 1:
            raise UsageError(f"burst must be >= 1, got {burst!r}")
        self.rate = float(rate)
        self.burst = burst
        self.per_tool = per_tool
        self.clock = clock
        self.sleep = sleep
        self._buckets: dict[str, list[float]] = {}

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        key = request.name if self.per_tool else ""
        now = self.clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = [float(self.burst), now]
        tokens = min(float(self.burst), bucket[0] + (now - bucket[1]) * self.rate) - 1.0
        bucket[0], bucket[1] = tokens, now
        if tokens < 0:
            # The token is reserved now (the balance goes negative), so concurrent
            # callers queue up in order instead of racing for the same refill.
            await self.sleep(-tokens / self.rate)
        return await next(request)


class TimeoutInterceptor:
    """A deadline around everything inside it (later interceptors, the tool), per attempt.

    The tool's own ``metadata.timeout`` is always applied by the executor;
    this adds a cap for every tool (e.g. a request-wide deadline).
    """

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise UsageError(f"timeout must be > 0 seconds, got {seconds!r}")
        self.seconds = float(seconds)

    async def __call__(self, request: ToolRequest, next: Next) -> ToolResult:
        return cast("ToolResult", await _with_timeout(next(request), self.seconds))


# -- results of a plan run ----------------------------------------------------------------


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
    return {"content": result.content, "is_error": result.is_error}


def _issue_entry(issue: ToolCallIssue) -> dict[str, Any]:
    if isinstance(issue, InvalidArguments):
        errors = [
            {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": e.get("msg")}
            for e in issue.errors
        ]
        return {"call_id": issue.call.id, "kind": "invalid_arguments", "errors": errors}
    kind = "not_available" if isinstance(issue, NotAvailable) else "unknown_tool"
    return {"call_id": issue.call.id, "kind": kind}


_KINDS = {str: "a string", int: "an integer", bool: "a boolean", list: "a list"}


def _field(d: Mapping[str, Any], key: str, where: str, kind: type) -> Any:
    value = d.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = _KINDS.get(kind, "an object")
        raise TranscriptError(f"{where}.{key} must be {name}, got {type(value).__name__}")
    return value


def _entries(d: Mapping[str, Any], key: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    raw = _field(d, key, "pending", list)
    for i, e in enumerate(raw):
        where = f"pending.{key}[{i}]"
        if not isinstance(e, Mapping):
            raise TranscriptError(f"{where} must be an object, got {type(e).__name__}")
        yield e, where


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
    d = _field(entry, "result", where, Mapping)
    content = _field(d, "content", f"{where}.result", str)
    return call.result(content, is_error=_field(d, "is_error", f"{where}.result", bool))


def _issue(
    turn: ResolvedTurn, call: ToolCall, entry: Mapping[str, Any], where: str
) -> ToolCallIssue:
    kind = entry.get("kind")
    if kind == "not_available":
        return NotAvailable(call)
    if kind == "unknown_tool":
        return UnknownTool(call)
    if kind != "invalid_arguments":
        raise TranscriptError(
            f"{where}.kind must be 'not_available', 'unknown_tool' or 'invalid_arguments', "
            f"got {kind!r}"
        )
    tool = turn.toolset.get(call.name)
    if tool is None:
        raise TranscriptError(f"{where}: tool `{call.name}` is not in the toolset any more")
    errors = []
    for i, e in enumerate(_field(entry, "errors", where, list)):
        w = f"{where}.errors[{i}]"
        if not isinstance(e, Mapping):
            raise TranscriptError(f"{w} must be an object, got {type(e).__name__}")
        errors.append(
            {
                "type": _field(e, "type", w, str),
                "loc": tuple(_field(e, "loc", w, list)),
                "msg": _field(e, "msg", w, str),
            }
        )
    return InvalidArguments(call, tool, tuple(errors))


def _restore(
    data: Any, session: Session, turn: ResolvedTurn, context: HookContext | None
) -> RoundExecution:
    if not isinstance(data, Mapping):
        raise TranscriptError(f"a pending round must be a JSON object, got {type(data).__name__}")
    if data.get("format") != PENDING_FORMAT:
        raise TranscriptError(
            f"unknown pending round format {data.get('format')!r}; expected {PENDING_FORMAT!r}"
        )
    sid = _field(data, "session_id", "pending", str)
    if sid != session.id:
        raise TranscriptError(f"pending.session_id {sid!r} is not this session's id {session.id!r}")
    length = _field(data, "session_length", "pending", int)
    if len(session) != length:
        raise TranscriptError(
            f"the session has {len(session)} messages, but the paused round was decoded at "
            f"{length} (pending.session_length): the session changed since"
        )
    digest = _field(data, "session_digest", "pending", str)
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
        for e, w in _entries(data, key):
            cid = _field(e, "call_id", w, str)
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
        HandledCall(_answered(turn, raw, e, w), e.get("output"), _result(raw, e, w))
        for raw, e, w in recorded("handled")
    )
    rejected = tuple(
        RejectedCall(
            raw, _field(e, "reason", w, str), _field(e, "source", w, str), _result(raw, e, w)
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
    for e, w in _entries(data, "approvals"):
        cid = _field(e, "call_id", w, str)
        call = runnable.get(cid)
        if call is None:
            raise TranscriptError(f"{w}.call_id {cid!r} is not a call pending execution")
        if order[cid] <= last:
            raise TranscriptError(
                f"{w}.call_id {cid!r} is repeated or out of order: pending.approvals must "
                f"follow the order of the calls in pending.message"
            )
        last = order[cid]
        fingerprint = _field(e, "fingerprint", w, str)
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


# -- retry classification -----------------------------------------------------------------


def is_transient(exc: BaseException) -> bool:
    """The default retry classifier: is this failure worth another attempt?

    True for TimeoutError, ConnectionError and ProviderError subclasses marked
    ``transient`` (rate limit, overload, 5xx, connection, timeout); any other
    exception may opt in or out with a boolean ``transient`` attribute.
    """
    if isinstance(exc, _NotRetryable):
        return False
    flag = getattr(exc, "transient", None)
    if isinstance(flag, bool):
        return flag
    if isinstance(exc, ProviderError):
        return False
    return isinstance(exc, (TimeoutError, ConnectionError))


def _retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


class _NotRetryable(Exception):
    """Failures the executor itself detects inside an attempt: never retried."""

    kind = "error"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class _OutputMismatch(_NotRetryable):
    kind = "invalid_output"


class _ApprovalMismatch(_NotRetryable):
    kind = "approval_mismatch"


class _ToolTimeout(TimeoutError):
    """An attempt ran past its timeout (raised by the executor, not the tool)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"timed out after {float(seconds)!r} s")


class _Deadline:
    """The timer of one timed attempt: on expiry it cancels the task running the attempt."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def __call__(self) -> None:
        self.fired = True
        self.task.cancel()


async def _with_timeout(aw: Awaitable[Any], seconds: float) -> Any:
    """Await ``aw``, cancelling it after ``seconds``; expiry raises _ToolTimeout.

    One loop timer per attempt (cheaper than ``asyncio.timeout``, which the
    executor would otherwise pay on every call). A cancellation from outside
    still propagates as CancelledError.
    """
    task = asyncio.current_task()
    assert task is not None
    deadline = _Deadline(task)
    handle = asyncio.get_running_loop().call_later(seconds, deadline)
    try:
        return await aw
    except asyncio.CancelledError:
        if deadline.fired and _uncancel(task):
            raise _ToolTimeout(seconds) from None
        raise
    finally:
        handle.cancel()


if sys.version_info >= (3, 11):

    def _uncancel(task: asyncio.Task[Any]) -> bool:
        """Withdraw the deadline's cancel; True unless someone else cancelled too."""
        return task.uncancel() == 0

else:  # pragma: no cover - Python 3.10 has no cancel counting

    def _uncancel(task: asyncio.Task[Any]) -> bool:
        return True


# -- per-tool decisions, made once --------------------------------------------------------


class _PreparedTool:
    """Everything about running one tool that does not depend on the call."""

    __slots__ = (
        "available",
        "blocking",
        "gated",
        "hint",
        "injected",
        "is_async",
        "max_attempts",
        "missing",
        "name",
        "out_adapter",
        "out_str",
        "run_alone",
        "timeout",
        "tool",
        "validate",
        "violation",
    )

    def __init__(self, ex: Executor, tool: Tool[Any, Any]) -> None:
        meta = tool.metadata
        name = tool.name
        self.tool = tool
        self.name = name
        fn = tool.fn
        self.is_async = tool.is_async or (
            fn is not None
            and not inspect.isfunction(fn)
            and inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        )
        self.blocking = meta.blocking and not self.is_async
        self.run_alone = meta.run_alone
        self.timeout = meta.timeout
        self.hint = meta.retry_hint
        self.max_attempts = meta.max_attempts
        missing_caps = meta.capabilities - ex._allowed
        self.violation = (
            f"sandbox violation: tool `{name}` requires "
            + ", ".join(sorted(c.value for c in missing_caps))
            if missing_caps
            else None
        )
        self.gated = ex._approver is not None and ex._gate.applies(meta.effect)
        self.available = [f for match, f in ex._availability if match(tool)]
        if ex._is_available is not None:
            self.available.insert(0, ex._is_available)
        self.validate = [f for match, f in ex._validators if match(tool)]
        if ex._validate is not None:
            self.validate.insert(0, ex._validate)
        self.injected = {k: ex._injected[k] for k in tool.injected if k in ex._injected}
        self.missing: str | None = None
        if fn is None:
            self.missing = (
                f"tool `{name}` has no implementation (it was declared with @tool_input); "
                f"run it in your own code and answer with call.complete(output)"
            )
        elif len(self.injected) != len(tool.injected):
            absent = [k for k in tool.injected if k not in ex._injected]
            self.missing = (
                f"tool `{name}` needs injected value(s) {', '.join(map(repr, absent))}; "
                f"pass them as Executor(injected={{...}})"
            )
        self.out_adapter = None
        self.out_str = False
        if ex.validate_output and tool.output_type is not None:
            if tool.output_type is str:
                self.out_str = True
            else:
                self.out_adapter = getattr(tool, "_output_adapter", None)


def _matcher(target: Any) -> Callable[[Tool[Any, Any]], bool]:
    if isinstance(target, str):
        return lambda tool: tool.name == target
    origin = tool_of(target).origin
    return lambda tool: tool.origin is origin


def _effect_of(job: _Job) -> ToolEffect | None:
    return job.plan.tool.metadata.effect if job.plan is not None else None


class _Job:
    """One call on its way through the executor (internal, mutable)."""

    __slots__ = ("approved", "call", "context", "error_type", "plan", "raw", "result")

    def __init__(self, raw: ToolCall, context: HookContext | None) -> None:
        self.raw = raw
        self.context = context
        self.call: TypedCall[Any] | None = None
        self.plan: _PreparedTool | None = None
        self.result: ToolResult | None = None
        self.error_type: str | None = None
        self.approved: str | None = None

    def refuse(self, reason: str, kind: str) -> None:
        self.result = self.raw.result(rejection_content(reason), is_error=True)
        self.error_type = kind


def _errors_text(exc: ValidationError, whole: str = "(arguments)") -> str:
    """pydantic's errors, one line each; ``whole`` names an error about the whole value."""
    lines = []
    for e in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in e["loc"]) or whole
        lines.append(f"- {loc}: {e['msg']}")
    return "\n".join(lines)


async def _maybe_await(value: Any) -> Any:
    if hasattr(value, "__await__"):
        return await value
    return value


# -- the executor -------------------------------------------------------------------------


class Executor:
    """Runs tool calls: checks, approval, interceptors, timeout, retry, parallelism.

    Options (all keyword-only):

    - ``tools``: a Toolset (or tools) to look raw ToolCalls up in; TypedCalls
      carry their tool.
    - ``allowed_capabilities``: the sandbox allow-list (default: every Capability).
    - ``is_available`` / ``validate``: checks for every tool (``fn(tool) -> bool``;
      ``fn(call) -> None | bool | str``, a string or False or a ValueError
      being the refusal); per-tool ones with :meth:`availability` / :meth:`validator`.
    - ``approval``: the approver, ``fn(ApprovalRequest) -> Allow | Deny | Modify
      | Defer`` (sync or async); ``approval_gate``: which effects it sees
      (``always`` by default).
    - ``interceptors``: wrap each attempt; the first one is the outermost.
    - ``max_concurrency``: calls in flight in ``execute_all`` (None: no bound).
    - ``validate_output``: check outputs against the tool's output type.
    - ``retry_if``: the retry classifier (default :func:`is_transient`).
    - ``injected``: values for tools' injected parameters, by parameter name.
    - ``on_result``: ``fn(call, result) -> ToolResult | None`` sees every result
      of a typed call (observe, or return a redacted result); if it raises,
      the call gets an error result (fail closed).
    - ``tracing``: a :class:`toolwire.Tracing` for OpenTelemetry spans.
    - ``clock``, ``sleep``, ``rng``: injectable time source, backoff sleep, jitter.
    - ``plugins``: the plugin host whose result hooks see every result (after
      ``on_result``) and whose failed policies block every call: ``True`` (the
      default) is the process's host (``toolwire.get_host()``), ``False`` none.
    - ``thread_pool``: where ``blocking=True`` tools run (default: a pool of
      ``max_concurrency`` threads, made on first use).

    Sync tools run inline on the event loop (no thread hop) unless declared
    ``blocking=True``. A timeout cannot preempt an inline sync tool: it applies
    to async tools and to blocking (threaded) tools, whose thread is left to
    finish on its own once the call has timed out.
    """

    def __init__(
        self,
        *,
        tools: Toolset | Iterable[Any] | None = None,
        allowed_capabilities: Iterable[Capability | str] | None = None,
        is_available: Callable[[Tool[Any, Any]], Any] | None = None,
        validate: Callable[[TypedCall[Any]], Any] | None = None,
        approval: Approver | None = None,
        approval_gate: ApprovalGate | str = ApprovalGate.ALWAYS,
        interceptors: Iterable[Interceptor | Callable[..., Any]] = (),
        max_concurrency: int | None = 8,
        validate_output: bool = True,
        retry_if: Callable[[BaseException], bool] = is_transient,
        injected: Mapping[str, Any] | None = None,
        on_result: Callable[[TypedCall[Any], ToolResult], Any] | None = None,
        tracing: Tracing | None = None,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
        thread_pool: concurrent.futures.Executor | None = None,
        plugins: Any = True,
    ) -> None:
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise UsageError(
                f"max_concurrency must be an int >= 1 or None, got {max_concurrency!r}"
            )
        self._tools: dict[str, Tool[Any, Any]] = {}
        if tools is not None:
            items = tools.tools() if isinstance(tools, Toolset) else (tool_of(t) for t in tools)
            self._tools = {t.name: t for t in items}
        self._toolset = tools if isinstance(tools, Toolset) else None
        self._allowed = (
            frozenset(Capability)
            if allowed_capabilities is None
            else frozenset(Capability(c) for c in allowed_capabilities)
        )
        self._is_available = is_available
        self._validate = validate
        self._approver = approval
        self._gate = ApprovalGate(approval_gate)
        self._interceptors = tuple(_checked_interceptor(i, n) for n, i in enumerate(interceptors))
        self.max_concurrency = max_concurrency
        self.validate_output = validate_output
        self._retry_if = retry_if
        self._injected = dict(injected or {})
        self._on_result = on_result
        self._host = _resolve_host(plugins)
        # The host's result hooks (tool packs, then policies) see every result after
        # ``on_result``; looked up once. A host with none costs nothing per call.
        self._tracing = tracing
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._pool = thread_pool
        self._own_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._availability: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]] = []
        self._validators: list[tuple[Callable[[Tool[Any, Any]], bool], Callable[..., Any]]] = []
        self._prepared: dict[Tool[Any, Any], _PreparedTool] = {}
        self._chain = self._build_chain()

    def __repr__(self) -> str:
        return (
            f"<Executor max_concurrency={self.max_concurrency} "
            f"interceptors={len(self._interceptors)} approval={self._approver is not None}>"
        )

    # -- configuration ------------------------------------------------------------------

    def availability(self, target: Any, fn: Callable[..., Any] | None = None) -> Any:
        """Register ``fn(tool) -> bool`` deciding whether ``target`` may run now.

        ``target`` is a tool, a @tool_input class, a function tool or a wire
        name. Usable as a decorator. A check that raises counts as unavailable.
        """

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._availability.append((_matcher(target), f))
            self._prepared.clear()
            return f

        return register if fn is None else register(fn)

    def validator(self, target: Any, fn: Callable[..., Any] | None = None) -> Any:
        """Register ``fn(call) -> None | bool | str`` validating ``target``'s calls.

        Runs after schema validation. None or True passes; False, a string
        (the reason) or a raised ValueError refuses the call. May be async.
        """

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._validators.append((_matcher(target), f))
            self._prepared.clear()
            return f

        return register if fn is None else register(fn)

    def close(self) -> None:
        """Shut down the executor's own thread pool (threads still running are not waited for)."""
        pool, self._own_pool = self._own_pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def _prepare(self, tool: Tool[Any, Any]) -> _PreparedTool:
        plan = self._prepared.get(tool)
        if plan is None:
            plan = self._prepared[tool] = _PreparedTool(self, tool)
        return plan

    def _thread_pool(self) -> concurrent.futures.Executor:
        if self._pool is not None:
            return self._pool
        if self._own_pool is None:
            self._own_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.max_concurrency or 32, thread_name_prefix="toolwire-tool"
            )
        return self._own_pool

    def _build_chain(self) -> Next | None:
        if not self._interceptors:
            return None

        async def innermost(request: ToolRequest) -> ToolResult:
            return await self._attempt(
                self._prepare(request.call.tool), request.call, request.approved
            )

        chain: Next = innermost
        for icpt in reversed(self._interceptors):
            chain = _link(icpt, chain)
        return chain

    # -- stage 1: lookup and checks -------------------------------------------------------

    def _lookup(self, name: str) -> Tool[Any, Any] | None:
        tool = self._tools.get(name)
        if tool is None and self._toolset is not None:
            tool = self._toolset.get(name)
        return tool

    def _check(self, job: _Job, call: TypedCall[Any] | ToolCall) -> bool:
        """Lookup, capability, availability and schema validation.

        A refusal sets ``job.result``. Returns True when custom validators
        are left to run (they may be async).
        """
        if isinstance(call, TypedCall):
            tool = call.tool
            typed: TypedCall[Any] | None = call
        else:
            found = self._lookup(call.name)
            if found is None:
                job.refuse(f"unknown tool `{call.name}`", "unknown_tool")
                return False
            tool, typed = found, None
        plan = job.plan = self._prepare(tool)
        if plan.violation is not None:
            job.refuse(plan.violation, "sandbox_violation")
            return False
        if plan.available and not self._is_tool_available(plan, tool):
            job.refuse(f"tool `{tool.name}` is currently unavailable", "unavailable")
            return False
        if typed is None:
            try:
                value = tool.validate_json(job.raw.arguments)
            except ValidationError as exc:
                job.refuse(
                    f"tool `{tool.name}` arguments did not match the expected schema:\n"
                    + _errors_text(exc),
                    "invalid_arguments",
                )
                return False
            typed = TypedCall(job.raw, tool, value)
        job.call = typed
        return bool(plan.validate)

    def _is_tool_available(self, plan: _PreparedTool, tool: Tool[Any, Any]) -> bool:
        for check in plan.available:
            try:
                if not check(tool):
                    return False
            except Exception as exc:
                logger.warning("availability check for tool %s failed: %r", tool.name, exc)
                return False
        return True

    async def _run_validators(self, job: _Job, plan: _PreparedTool, call: TypedCall[Any]) -> None:
        for check in plan.validate:
            try:
                verdict = await _maybe_await(check(call))
            except (ValueError, TypeError) as exc:
                verdict = str(exc) or type(exc).__name__
            except Exception as exc:
                verdict = f"validator failed: {type(exc).__name__}: {exc}"
            if verdict is None or verdict is True:
                continue
            reason = verdict if isinstance(verdict, str) else "validation failed"
            job.refuse(f"tool `{call.name}` arguments were refused: {reason}", "validation_failed")
            return

    # -- stage 2: approval ----------------------------------------------------------------

    async def _approve(
        self, jobs: Sequence[_Job], approvals: Mapping[str, Approval]
    ) -> list[ApprovalRequest]:
        pending: list[ApprovalRequest] = []
        for job in jobs:
            call, plan = job.call, job.plan
            if job.result is not None or call is None or plan is None:
                continue
            given = approvals.get(call.id)
            if given is not None:
                current = call_fingerprint(call)
                if current != given.fingerprint:
                    job.refuse(
                        f"the arguments of tool `{call.name}` changed after they were approved; "
                        f"the call was not run",
                        "approval_mismatch",
                    )
                    continue
                decision: Any = given.decision
                request = ApprovalRequest(call, current, job.context)
            elif not plan.gated:
                continue
            else:
                request = ApprovalRequest(call, call_fingerprint(call), job.context)
                assert self._approver is not None
                try:
                    decision = await _maybe_await(self._approver(request))
                except Exception as exc:
                    decision = Deny(f"approver failed: {type(exc).__name__}: {exc}")
            await self._apply_decision(job, request, decision, pending)
        return pending

    async def _policies_on(
        self,
        call: TypedCall[Any],
        context: HookContext | None,
        guards: Sequence[HookSet] = (),
    ) -> str | None:
        """The guard hooks on input they have not seen as it is (an approver rewrote it; a
        restored round's data says they let it through): the host's policies, and the
        guard hooks among ``guards``. None if they let it run, else why not."""
        sets: list[HookSet] = []
        if self._host is not None:
            policies = self._host.hook_sets()[0]
            if policies:
                sets.append(policies)
        sets.extend(s for s in guards if all(s is not p for p in sets))
        if not sets:
            return None
        hooks, _ = _guards_only(_hooks_for(sets, call.tool))
        if not hooks:
            return None
        outcome, _ = await _async_pass(call, (hooks, -1), context or HookContext())
        if isinstance(outcome, RejectedCall):
            return outcome.reason
        if isinstance(outcome, HandledCall):
            return "a policy answered the call instead of letting it run"
        return None

    async def _apply_decision(
        self, job: _Job, request: ApprovalRequest, decision: Any, pending: list[ApprovalRequest]
    ) -> None:
        call = request.call
        if isinstance(decision, Allow):
            job.approved = request.fingerprint
        elif isinstance(decision, Deny):
            job.refuse(f"approval denied for tool `{call.name}`: {decision.reason}", "denied")
        elif isinstance(decision, Defer):
            pending.append(request)
        elif isinstance(decision, Modify):
            args = decision.arguments
            try:
                if isinstance(args, (str, bytes)):
                    value = call.tool.validate_json(args)
                else:
                    value = call.tool.validate_python(args)
            except ValidationError as exc:
                job.refuse(
                    f"the approver's arguments for tool `{call.name}` did not match the "
                    f"expected schema:\n" + _errors_text(exc),
                    "invalid_arguments",
                )
                return
            modified = call.with_input(value)
            refusal = await self._policies_on(modified, job.context)
            if refusal is not None:
                job.refuse(
                    f"the approver's arguments for tool `{call.name}` were rejected: {refusal}",
                    "policy_rejected",
                )
                return
            job.call = modified
            assert job.plan is not None
            if job.plan.validate:
                await self._run_validators(job, job.plan, modified)
                if job.result is not None:
                    return
            job.approved = call_fingerprint(modified)
        else:
            job.refuse(
                f"the approver returned {type(decision).__name__} for tool `{call.name}`; "
                f"expected Allow, Deny, Modify or Defer",
                "denied",
            )

    # -- stage 3: running -----------------------------------------------------------------

    async def _attempt(
        self, plan: _PreparedTool, call: TypedCall[Any], approved: str | None
    ) -> ToolResult:
        """One attempt: run the tool under its timeout, validate its output. Raises on failure."""
        if approved is not None and call_fingerprint(call) != approved:
            raise _ApprovalMismatch(
                f"the arguments of tool `{call.name}` changed after they were approved; "
                f"the call was not run"
            )
        tool = plan.tool
        timeout = plan.timeout
        if plan.is_async:
            aw = tool.call(call.input, **plan.injected)
            out = await (aw if timeout is None else _with_timeout(aw, timeout))
        elif plan.blocking:
            loop = asyncio.get_running_loop()
            ctx = contextvars.copy_context()
            fut = loop.run_in_executor(
                self._thread_pool(),
                functools.partial(ctx.run, tool.call, call.input, **plan.injected),
            )
            out = await (fut if timeout is None else _with_timeout(fut, timeout))
        else:
            out = tool.call(call.input, **plan.injected)
            if hasattr(out, "__await__"):
                out = await (out if timeout is None else _with_timeout(out, timeout))
        if plan.out_adapter is not None:
            try:
                out = plan.out_adapter.validate_python(out)
            except ValidationError as exc:
                raise _OutputMismatch(
                    f"tool `{call.name}` returned output that does not match its output type "
                    f"{_type_name(tool.output_type)}:\n{_errors_text(exc, '(output)')}"
                ) from None
        elif plan.out_str and not isinstance(out, str):
            raise _OutputMismatch(
                f"tool `{call.name}` returned {type(out).__name__}, but its output type is str"
            )
        return call.complete(out)

    async def _run_job(self, job: _Job) -> None:
        """Retries around interceptors around one attempt; sets job.result."""
        call, plan = job.call, job.plan
        assert call is not None
        assert plan is not None
        if plan.missing is not None:
            job.result = call.error(plan.missing)
            job.error_type = "not_runnable"
            return
        chain = self._chain
        attempt = 1
        while True:
            try:
                if chain is None:
                    result = await self._attempt(plan, call, job.approved)
                else:
                    result = await chain(ToolRequest(call, attempt, job.context, job.approved))
                break
            except Exception as exc:
                if (
                    attempt >= plan.max_attempts
                    or isinstance(exc, _NotRetryable)
                    or not self._retry_if(exc)
                ):
                    result = self._failure(call, exc, attempt, job)
                    break
                assert plan.hint is not None
                delay = plan.hint.delay(
                    attempt - 1, rand=self._rng(), retry_after=_retry_after(exc)
                )
                logger.info(
                    "tool=%s call=%s attempt=%d failed (%s); retrying in %.3f s",
                    call.name,
                    call.id,
                    attempt,
                    type(exc).__name__,
                    delay,
                )
                # A cancellation here propagates: the failed attempt is over and
                # the next one has not started, so nothing is left half done.
                await self._sleep(delay)
                attempt += 1
        job.result = result
        if self._on_result is not None or self._host_results:
            await self._observe(job, call)

    @property
    def _host_results(self) -> bool:
        # Read at each use (the host caches it): a policy registered after this executor
        # was made still sees every result.
        return self._host is not None and bool(self._host._result_pipeline())

    async def _observe_handled(self, plan: ToolRoundPlan) -> None:
        """Results hooks answered (Complete) pass the same result hooks as results that ran
        (once per plan: the plan's handled results are replaced in place)."""
        if (
            not plan.handled
            or plan._observed
            or not (self._on_result is not None or self._host_results)
        ):
            return
        handled = []
        for h in plan.handled:
            job = _Job(h.call.call, plan.context)
            job.result = h.result
            await self._observe(job, h.call)
            assert job.result is not None
            handled.append(attrs.evolve(h, result=job.result))
        plan.handled = tuple(handled)
        plan._observed = True

    def _failure(
        self, call: TypedCall[Any], exc: Exception, attempts: int, job: _Job
    ) -> ToolResult:
        if isinstance(exc, _ToolTimeout):
            text = f"tool `{call.name}` timed out after {float(exc.seconds)!r} s"
            job.error_type = "timeout"
        elif isinstance(exc, _ApprovalMismatch):
            job.error_type = exc.kind
            return call.error(rejection_content(exc.message))
        elif isinstance(exc, _NotRetryable):
            text = exc.message
            job.error_type = exc.kind
        else:
            text = f"tool `{call.name}` failed: {type(exc).__name__}: {exc}"
            job.error_type = type(exc).__qualname__
        if attempts > 1:
            text += f" (after {attempts} attempts)"
        return call.error(text)

    async def _observe(self, job: _Job, call: TypedCall[Any]) -> None:
        assert job.result is not None
        if self._on_result is not None:
            await self._observe_with(job, call, self._on_result)
        if self._host_results:
            assert self._host is not None
            host = self._host
            ctx = job.context
            await self._observe_with(job, call, lambda c, r: host.atool_result(c, r, ctx))

    async def _observe_with(
        self, job: _Job, call: TypedCall[Any], hook: Callable[[TypedCall[Any], ToolResult], Any]
    ) -> None:
        assert job.result is not None
        try:
            new = await _maybe_await(hook(call, job.result))
        except Exception as exc:
            # The model sees the exception type; the message (it may hold internal detail)
            # goes to the log only, as for decision hooks.
            logger.warning("result hook for %s call %s failed: %r", call.name, call.id, exc)
            job.result = call.error(f"result hook failed ({type(exc).__name__})")
            job.error_type = "result_hook_failed"
            return
        if new is None:
            return
        if not isinstance(new, ToolResult) or not new.answers(call.call):
            job.result = call.error(
                f"result hook returned {type(new).__name__} that does not answer call "
                f"`{call.id}`; return None or a ToolResult for the same call"
            )
            job.error_type = "result_hook_failed"
            return
        job.result = new

    async def _run(self, job: _Job) -> None:
        if self._tracing is None:
            await self._run_job(job)
            return
        with self._tracing.tool_span(job.raw, _effect_of(job)) as span:
            await self._run_job(job)
            span.record(job.result, job.error_type)

    def _runner(self) -> Callable[[_Job], Coroutine[Any, Any, None]]:
        return self._run_job if self._tracing is None else self._run

    async def _parallel(self, jobs: list[_Job]) -> None:
        if len(jobs) == 1:
            await self._run(jobs[0])
            return
        bound = self.max_concurrency
        if bound is None or bound >= len(jobs):
            run = self._runner()
            loop = asyncio.get_running_loop()
            tasks = [loop.create_task(run(j)) for j in jobs]
        else:
            queue = iter(jobs)
            tasks = [asyncio.ensure_future(self._worker(queue)) for _ in range(bound)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            raise

    async def _worker(self, queue: Iterator[_Job]) -> None:
        for job in queue:
            await self._run(job)

    async def _run_all(self, jobs: Sequence[_Job]) -> None:
        runnable = [j for j in jobs if j.result is None]
        if not runnable:
            return
        if len(runnable) == 1:
            await self._run(runnable[0])
            return
        segment: list[_Job] = []
        for job in runnable:
            assert job.plan is not None
            if job.plan.run_alone:
                if segment:
                    await self._parallel(segment)
                    segment = []
                await self._run(job)
            else:
                segment.append(job)
        if segment:
            await self._parallel(segment)

    async def _process(
        self,
        calls: Sequence[TypedCall[Any] | ToolCall],
        context: HookContext | None,
        approvals: Iterable[Approval] | Mapping[str, Approval],
        guards: Sequence[HookSet] | None = None,
    ) -> tuple[list[_Job], list[ApprovalRequest]]:
        """Check every call, decide approval, run what may run. ``guards``: a restored
        round's hook sets, whose guard hooks see each call again before anything else."""
        jobs: list[_Job] = []
        blocked = self._host.blocked if self._host is not None else ()
        for c in calls:
            raw = c.call if isinstance(c, TypedCall) else c
            if blocked and isinstance(raw, ToolCall):
                # A policy failed to load: nothing runs (fail closed), whatever the hooks said.
                job = _Job(raw, context)
                job.refuse(f"tool `{raw.name}` was not run: {blocked[0]}", "policy_blocked")
                jobs.append(job)
                continue
            if not isinstance(raw, ToolCall):
                raise UsageError(
                    f"the executor takes TypedCall or ToolCall objects, got {type(c).__name__}"
                )
            job = _Job(raw, context)
            validate = self._check(job, c)
            if guards is not None and job.result is None:
                assert job.call is not None
                refusal = await self._policies_on(job.call, context, guards)
                if refusal is not None:
                    job.refuse(
                        f"tool `{raw.name}` was rejected when its paused round was resumed: "
                        f"{refusal}",
                        "policy_rejected",
                    )
            if validate and job.result is None:
                assert job.plan is not None
                assert job.call is not None
                await self._run_validators(job, job.plan, job.call)
            jobs.append(job)
        given = _approval_map(approvals, jobs) if approvals else {}
        if self._approver is not None or given:
            pending = await self._approve(jobs, given)
            if pending:
                return jobs, pending
        if self._tracing is not None:
            for job in jobs:  # calls refused before running: unknown, sandbox, invalid, denied
                if job.result is not None:
                    with self._tracing.tool_span(job.raw, _effect_of(job)) as span:
                        span.record(job.result, job.error_type)
        await self._run_all(jobs)
        return jobs, []

    # -- public API -----------------------------------------------------------------------

    async def aexecute(
        self,
        call: TypedCall[Any] | ToolCall,
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> ToolResult:
        """Run one call; every failure is an error result (never raised).

        Raises ApprovalPendingError only when the approver deferred.
        """
        jobs, pending = await self._process((call,), context, approvals)
        if pending:
            raise ApprovalPendingError(tuple(pending))
        result = jobs[0].result
        assert result is not None
        return result

    def execute(
        self,
        call: TypedCall[Any] | ToolCall,
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> ToolResult:
        """Sync :meth:`aexecute` (runs an event loop; not for use inside one)."""
        return _run_sync(self.aexecute(call, context=context, approvals=approvals), "execute")

    async def aexecute_all(
        self,
        calls: Iterable[TypedCall[Any] | ToolCall],
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Run calls in parallel (at most ``max_concurrency`` at once); results in input order.

        Async tools are awaited concurrently; sync tools run inline, ``blocking``
        ones in worker threads; a ``run_alone`` tool waits for everything
        before it, runs by itself, then the rest continue. Approval is decided
        for every call before any runs: if one is deferred nothing runs and
        ApprovalPendingError carries every pending request.
        """
        jobs, pending = await self._process(list(calls), context, approvals)
        if pending:
            raise ApprovalPendingError(tuple(pending))
        return [j.result for j in jobs if j.result is not None]

    def execute_all(
        self,
        calls: Iterable[TypedCall[Any] | ToolCall],
        *,
        context: HookContext | None = None,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Sync :meth:`aexecute_all`."""
        return _run_sync(
            self.aexecute_all(calls, context=context, approvals=approvals), "execute_all"
        )

    async def adispatch(
        self, call: TypedCall[Any] | ToolCall, *, context: HookContext | None = None
    ) -> ToolResult:
        """As :meth:`aexecute`, but an error result raises ToolExecutionError (``.result``)."""
        result = await self.aexecute(call, context=context)
        if result.is_error:
            raise ToolExecutionError(_error_text(result), result=result)
        return result

    def dispatch(
        self, call: TypedCall[Any] | ToolCall, *, context: HookContext | None = None
    ) -> ToolResult:
        """Sync :meth:`adispatch`."""
        return _run_sync(self.adispatch(call, context=context), "dispatch")

    async def arun_plan(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Run a plan's pending calls (or a bare round's calls); results in the plan's order."""
        calls, context = _plan_calls(plan)
        jobs, pending = await self._process(calls, context, approvals, _guards_of(plan))
        if pending:
            raise ApprovalPendingError(tuple(pending))
        results = [j.result for j in jobs if j.result is not None]
        if isinstance(plan, ToolRoundPlan):
            await self._observe_handled(plan)  # so plan.commit writes the observed results
        return results

    def run_plan(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> list[ToolResult]:
        """Sync :meth:`arun_plan`."""
        return _run_sync(self.arun_plan(plan, approvals=approvals), "run_plan")

    async def aexecute_and_commit(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> RoundExecution:
        """Run the pending calls and commit the round (handled + rejected + issues + results).

        If an approval is deferred, nothing runs and nothing is committed: the
        RoundExecution carries the pending requests; resume with :meth:`aresume`.
        """
        calls, context = _plan_calls(plan)
        jobs, pending = await self._process(calls, context, approvals, _guards_of(plan))
        if pending:
            return RoundExecution(plan, (), tuple(pending), False)
        results = tuple(j.result for j in jobs if j.result is not None)
        if isinstance(plan, ToolRoundPlan):
            await self._observe_handled(plan)
        plan.commit(results)
        return RoundExecution(plan, results, (), True)

    def execute_and_commit(
        self,
        plan: ToolRoundPlan | ToolRound,
        *,
        approvals: Iterable[Approval] | Mapping[str, Approval] = (),
    ) -> RoundExecution:
        """Sync :meth:`aexecute_and_commit`."""
        return _run_sync(self.aexecute_and_commit(plan, approvals=approvals), "execute_and_commit")

    async def aresume(
        self,
        plan: ToolRoundPlan | ToolRound | RoundExecution,
        approvals: Iterable[Approval] | Mapping[str, Approval],
    ) -> RoundExecution:
        """Continue a plan whose approval was deferred, with the decisions made since.

        Each Approval is bound to the fingerprint that was reviewed: a call
        whose arguments changed since gets an error result and is not run.
        Calls without a decision go to the approver again.
        """
        target = plan.plan if isinstance(plan, RoundExecution) else plan
        return await self.aexecute_and_commit(target, approvals=approvals)

    def resume(
        self,
        plan: ToolRoundPlan | ToolRound | RoundExecution,
        approvals: Iterable[Approval] | Mapping[str, Approval],
    ) -> RoundExecution:
        """Sync :meth:`aresume`."""
        return _run_sync(self.aresume(plan, approvals), "resume")


def _resolve_host(plugins: Any) -> Any:
    """``True``: the process's plugin host; ``False``/None: none; else the host given."""
    if plugins is True:
        return get_host()
    if plugins is False or plugins is None:
        return None
    if not hasattr(plugins, "hook_sets") or not hasattr(plugins, "atool_result"):
        raise UsageError(
            f"plugins must be True, False or a toolwire.PluginHost, got {type(plugins).__name__}"
        )
    return plugins


def _link(icpt: Callable[..., Any], inner: Next) -> Next:
    async def run(request: ToolRequest) -> ToolResult:
        out = icpt(request, inner)
        if hasattr(out, "__await__"):
            out = await out
        if not isinstance(out, ToolResult):
            raise UsageError(
                f"interceptor {icpt!r} returned {type(out).__name__}; expected a ToolResult "
                f"(return `await next(request)` or your own result)"
            )
        return out

    return run


def _approval_map(
    approvals: Iterable[Approval] | Mapping[str, Approval], jobs: Sequence[_Job]
) -> dict[str, Approval]:
    if isinstance(approvals, Mapping):
        given = dict(approvals)
    else:
        given = {}
        for a in approvals:
            if not isinstance(a, Approval):
                raise UsageError(
                    f"approvals must be Approval records (from ApprovalRequest.allow(), "
                    f".deny() or .modify()), got {type(a).__name__}"
                )
            given[a.call_id] = a
    if given:
        known = {j.raw.id for j in jobs}
        unknown = sorted(set(given) - known)
        if unknown:
            raise UsageError(
                f"approvals for call id(s) {', '.join(map(repr, unknown))} that are not in "
                f"these calls ({', '.join(map(repr, sorted(known)))})"
            )
    return given


def _plan_calls(
    plan: ToolRoundPlan | ToolRound,
) -> tuple[tuple[TypedCall[Any], ...], HookContext | None]:
    if isinstance(plan, ToolRoundPlan):
        return plan.pending, plan.context
    if isinstance(plan, ToolRound):
        return plan.calls, plan.turn.context
    raise UsageError(f"expected a ToolRoundPlan or a ToolRound, got {type(plan).__name__}")


def _error_text(result: ToolResult) -> str:

    reason = rejection_reason(result)
    return reason if reason is not None else result.content


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _run_sync(coro: Coroutine[Any, Any, _T], what: str) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise EventLoopError(
        f"Executor.{what}() runs its own event loop and cannot be called inside a running "
        f"one; use `await executor.a{what}(...)` in async code"
    )


publish(globals())
