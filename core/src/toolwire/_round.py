"""Rounds: a reply turned into a round (see _decode for its calls); the hooks' round plan;
commit."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import attrs

from toolwire._calls import (
    REJECTION_PREFIX,
    HandledCall,
    RejectedCall,
    ToolCall,
    ToolResult,
    TypedCall,
    mismatch,
    rejection_content,
    rejection_reason,
    sendable_json,
    sendable_text,
)
from toolwire._decisions import (
    HookCache,
    Outcome,
    arun_hooks,
    chain_cache,
    run_hooks,
    run_hooks_all,
    split_outcomes,
)
from toolwire._decode import (
    InvalidArguments,
    ToolCallIssue,
    UnknownTool,
    decode_calls,
)
from toolwire._errors import (
    DuplicateToolResultError,
    ExpectationError,
    ExtraToolResultError,
    MismatchedToolCallArgumentsError,
    MismatchedToolCallNameError,
    MissingToolResultError,
    OutputValidationError,
    PolicyError,
    RequirementNotMetError,
    TranscriptError,
    UsageError,
)
from toolwire._exports import publish
from toolwire._hooks import _EMPTY_CONTEXT, AuditEvent, HookContext, HookSet
from toolwire._transcript import (
    AssistantMessage,
    Session,
    Usage,
    assistant_message,
    results_message,
)
from toolwire._transcript import _sendable_result as sendable_result
from toolwire._turn import ResolvedTurn, policy_set

__all__ = [
    "REJECTION_PREFIX",
    "AssistantReply",
    "ContinueSuggestion",
    "Finished",
    "NeedsTools",
    "ToolRound",
    "ToolRoundPlan",
    "decode_reply",
    "rejection_content",
    "rejection_reason",
]


@attrs.frozen
class AssistantReply:
    """A provider's decoded response, before it is turned into a round.

    ``finish_reason`` is normalised: ``stop``, ``tool_calls``, ``length``,
    ``content_filter``, ``refusal`` or ``other``. ``provider_state`` is opaque
    JSON data the adapter needs back on the next request.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: Usage | None = None
    provider_state: Mapping[str, Any] = attrs.field(factory=dict)
    model: str | None = None

    def replace(self, **changes: Any) -> AssistantReply:
        """A copy with ``changes`` (field names as keywords): for adapters fixing a reply."""
        return attrs.evolve(self, **changes)


class ContinueSuggestion(str, enum.Enum):
    """What a caller usually does next with a round or plan."""

    RUN_TOOLS = "run_tools"
    """Calls are pending: run them and commit the results."""
    RECOVERABLE_TOOL_CALL_ISSUE = "recoverable_tool_call_issue"
    """The model made bad calls; commit (issues are auto-rejected) and ask again."""
    COMMIT = "commit"
    """Nothing is left to run: commit and continue the conversation."""


# -- the guard: what decides a round's calls, whatever loop runs them ------------------------


class _Guard:
    """What must decide a round's calls before one runs (``call.run()``) or is committed:
    the installed policies, then the turn's hooks (those given to ``resolve_turn`` and the
    toolsets'). Each call is decided once, and a plan's decisions count as the guard's."""

    __slots__ = ("_cache", "context", "decided", "sets")

    def __init__(self, sets: tuple[HookSet, ...], context: HookContext) -> None:
        self.sets = sets
        self.context = context
        self.decided: dict[str, Outcome] = {}
        self._cache: HookCache = chain_cache(sets)

    def decide(self, call: TypedCall[Any], context: HookContext | None = None) -> Outcome:
        got = self.decided.get(call.id)
        if got is None:
            got = run_hooks(call, self.sets, context or self.context, self._cache)
            self.decided[call.id] = got
        return got

    async def adecide(self, call: TypedCall[Any], context: HookContext | None = None) -> Outcome:
        got = self.decided.get(call.id)
        if got is None:
            got = await arun_hooks(call, self.sets, context or self.context, self._cache)
            self.decided[call.id] = got
        return got

    def record(self, outcomes: Iterable[Outcome]) -> None:
        for o in outcomes:
            self.decided[o.id if isinstance(o, TypedCall) else o.call.id] = o


def _guard_for(turn: ResolvedTurn) -> _Guard | None:
    """The guard for a round of ``turn``: None when nothing would decide its calls."""
    sets = turn.hooks
    policies = policy_set(turn.plugins)
    if policies is not None and all(policies is not s for s in sets):
        sets = (policies, *sets)  # policies first, so no later hook can answer for them
    if not any(sets):
        return None
    return _Guard(sets, turn.context or _EMPTY_CONTEXT)


def audit_refused(plugins: Any, rejected: Iterable[RejectedCall], context: HookContext) -> None:
    """Each call the decision hooks refused, sent to the audit hooks of ``plugins`` (a
    host, or True/False as a turn names it) as ``refused``: a policy that let it through
    hears that it never ran (and frees what it held for it)."""
    host = sys.modules["toolwire"]._default_host() if plugins is True else plugins
    audit = getattr(host, "audit", None) if plugins is not False else None
    if audit is None:
        return
    for r in rejected:
        call = r.call
        audit(
            AuditEvent("refused", r.reason, call.name, call.id, call.arguments, r.source, call),
            context,
        )


def audit_issues(turn: ResolvedTurn, issues: Iterable[ToolCallIssue]) -> None:
    """Each call the round answers itself (unknown, not offered, hidden, invalid), sent to
    the audit hooks of the host the turn names (``toolwire_audit``)."""
    plugins = turn.plugins
    host = sys.modules["toolwire"]._default_host() if isinstance(plugins, bool) else plugins
    audit = getattr(host, "audit", None)
    if audit is None:
        return
    for issue in issues:
        call = issue.call
        source = "toolwire"
        if isinstance(issue, UnknownTool):
            kind = "unknown_tool"
        elif isinstance(issue, InvalidArguments):
            kind = "invalid_arguments"
        else:
            hook = turn.hidden.get(call.name)
            kind = "hidden" if hook else "not_offered"
            source = hook or source
        event = AuditEvent(kind, issue.reason, call.name, call.id, call.arguments, source)
        audit(event, turn.context)


@attrs.frozen
class Finished:
    """The model answered without tools; the answer is already in the session.

    With an ``output_type`` on the turn, ``output`` is the answer validated into
    that type, or None with ``output_error`` (an OutputValidationError, whose
    ``feedback`` asks the model for a corrected answer) when it does not match.
    """

    text: str
    message: AssistantMessage
    reply: AssistantReply
    output: Any = None
    output_error: OutputValidationError | None = None


def decode_reply(
    session: Session,
    turn: ResolvedTurn,
    reply: AssistantReply,
    *,
    enforce_requirement: bool = True,
) -> Finished | NeedsTools:
    """Turn a provider reply into Finished (committed at once) or NeedsTools(round).

    With ``enforce_requirement`` (the default), a reply that ignores the turn's
    requirement raises RequirementNotMetError and nothing is written: for
    providers that cannot express a requirement, or servers that ignore it.
    """
    try:
        text = reply.text
        state = reply.provider_state
        model = reply.model
    except AttributeError:  # not an AssistantReply
        _check_reply(reply)
        raise
    if (
        type(text) is not str
        or type(reply.tool_calls) is not tuple
        or type(state) is not dict
        or (model is not None and type(model) is not str)
        or (reply.usage is not None and type(reply.usage) is not Usage)
    ):
        _check_reply(reply)  # raises for a field of the wrong type (an adapter's bug)
    kept, typed, issues = decode_calls(turn, reply.tool_calls)
    if issues:
        audit_issues(turn, issues)
    if enforce_requirement and turn.requirement.kind != "optional":
        _check_requirement(turn, reply, typed)
    message = assistant_message(
        text if text.isascii() else sendable_text(text),
        kept,
        _sendable_state(state) if state else {},
        model if model is None or model.isascii() else sendable_text(model),
        reply.usage,
    )
    if not kept:
        session.extend([message])
        spec = turn.output
        if spec is None:
            return Finished(reply.text, message, reply)
        try:
            return Finished(reply.text, message, reply, spec.parse(reply.text))
        except OutputValidationError as exc:
            return Finished(reply.text, message, reply, None, exc)
    round_ = ToolRound(session, turn, message, typed, issues, reply)
    if typed:
        guard = _guard_for(turn)
        if guard is not None:
            round_._guard = guard
            for c in typed:
                c._guard = guard
    needs = _new(NeedsTools)  # NeedsTools(round_) without attrs' frozen __init__
    _set_round(needs, round_)
    return needs


def _check_reply(reply: object) -> None:
    """An adapter (maybe a plugin's) built the reply: a field of the wrong type is its bug,
    named here before anything is decoded or written (what the session holds must save and
    send). Subclasses of the right types pass."""
    if not isinstance(reply, AssistantReply):
        raise UsageError(f"decode_reply takes an AssistantReply, got {type(reply).__name__}")
    r: Any = reply  # its fields hold what the adapter put there, whatever their annotations
    wrong: list[str] = []
    if not isinstance(r.text, str):
        wrong.append(f"text must be a string, got {type(r.text).__name__}")
    if not isinstance(r.tool_calls, (tuple, list)):
        wrong.append(
            f"tool_calls must be a tuple of ToolCall records, got {type(r.tool_calls).__name__}"
        )
    if not isinstance(r.provider_state, Mapping):
        wrong.append(f"provider_state must be a mapping, got {type(r.provider_state).__name__}")
    if r.model is not None and not isinstance(r.model, str):
        wrong.append(f"model must be a string or None, got {type(r.model).__name__}")
    if r.usage is not None and not isinstance(r.usage, Usage):
        wrong.append(f"usage must be a Usage or None, got {type(r.usage).__name__}")
    if wrong:
        raise UsageError(f"a malformed provider reply (an adapter's bug): {'; '.join(wrong)}")


def _sendable_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A reply's provider state as JSON data the session can save and send again; a value
    that cannot be made so (a set, an object) is the adapter's bug, named."""
    return cast("dict[str, Any]", sendable_json(dict(state), _state_not_json))


def _state_not_json(why: str) -> UsageError:
    return UsageError(
        f"a malformed provider reply (an adapter's bug): provider_state must be JSON data: {why}"
    )


def _check_requirement(
    turn: ResolvedTurn, reply: AssistantReply, typed: Sequence[TypedCall[Any]]
) -> None:
    kind = turn.requirement.kind
    if kind == "optional":
        return
    # Only valid calls count: a call to an unknown tool does not meet a requirement.
    if kind == "at_least_one" and not typed:
        raise RequirementNotMetError(
            "the turn requires at least one tool call, but the model answered without tools"
        )
    if kind == "specific" and not any(c.name == turn.required_tool for c in typed):
        got = ", ".join(f"`{c.name}`" for c in reply.tool_calls) or "no tool"
        raise RequirementNotMetError(
            f"the turn requires a call to `{turn.required_tool}`, but the model called {got}"
        )


class ToolRound:
    """An assistant turn with tool calls, waiting for results.

    ``calls`` are the valid typed calls; ``issues`` the recoverable bad calls
    (answered with a rejection on commit unless you give a result for their
    id). Nothing is in the session until :meth:`commit`, which appends the
    assistant message and every result together, in the assistant's order.
    """

    __slots__ = (
        "_done",
        "_guard",
        "_mark",
        "calls",
        "issues",
        "message",
        "reply",
        "session",
        "turn",
    )

    def __init__(
        self,
        session: Session,
        turn: ResolvedTurn,
        message: AssistantMessage,
        calls: tuple[TypedCall[Any], ...],
        issues: tuple[ToolCallIssue, ...],
        reply: AssistantReply,
    ) -> None:
        self.session = session
        self.turn = turn
        self.message = message
        self.calls = calls
        self.issues = issues
        self.reply = reply
        self._mark = len(session)
        self._done: str | None = None
        self._guard: _Guard | None = None

    def __repr__(self) -> str:
        return f"<ToolRound calls={[c.name for c in self.calls]} issues={len(self.issues)}>"

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every call the model made (valid ones and issues), in order."""
        return self.message.tool_calls

    @property
    def continue_suggestion(self) -> ContinueSuggestion:
        if self.issues:
            return ContinueSuggestion.RECOVERABLE_TOOL_CALL_ISSUE
        return ContinueSuggestion.RUN_TOOLS if self.calls else ContinueSuggestion.COMMIT

    def expect_one(self) -> TypedCall[Any]:
        """The single valid call; raises ExpectationError otherwise."""
        if len(self.calls) != 1:
            raise ExpectationError(f"expected exactly one tool call, got {len(self.calls)}")
        return self.calls[0]

    def expect_at_most_one(self) -> TypedCall[Any] | None:
        if len(self.calls) > 1:
            raise ExpectationError(f"expected at most one tool call, got {len(self.calls)}")
        return self.calls[0] if self.calls else None

    def discard(self) -> None:
        """Drop this turn: nothing is written to the session."""
        self._check_open()
        self._done = "discarded"

    def _check_open(self) -> None:
        if self._done is not None:
            raise TranscriptError(f"this tool round was already {self._done}")

    def _check_writable(self) -> None:
        """Raise before anything runs when this round can no longer be committed."""
        self._check_open()
        if len(self.session) != self._mark:
            raise TranscriptError(
                "the session changed after this round was decoded; decode a new turn"
            )

    def commit(self, results: Iterable[ToolResult]) -> None:
        """Append the assistant turn and its results, or raise and write nothing.

        ``results`` answer the valid calls (and, optionally, issues: an issue
        without a result gets the standard rejection). Results are stored in
        the assistant's order whatever order they come in. Raises a
        CommitError subclass naming the call id for a missing, extra,
        duplicate, misnamed or mismatched result.

        When the turn has hooks or a policy is installed (see
        :func:`resolve_turn`'s ``plugins``), every call is decided before
        anything is written (once: ``call.run()`` and ``apply_hooks`` decide
        too). A call a hook answered or rejected needs no result: the hook's
        answer is written. An output for a rejected call raises PolicyError
        and writes nothing.
        """
        self._check_open()
        given = list(results)
        if self._guard is not None:
            given = self._decided(given, self._guard)
        calls = self.message.tool_calls
        if not self.issues and _in_order(calls, given):
            # Checked, sendable as they are, and text only (no media to budget).
            self._check_writable()
            self.session._messages.extend((self.message, results_message(tuple(given))))
            self._done = "committed"
            return
        by_id: dict[str, ToolResult] = {}
        for r in given:
            if not isinstance(r, ToolResult):
                raise UsageError(f"commit takes ToolResult objects, got {type(r).__name__}")
            if not isinstance(r.content, str) or not isinstance(r.is_error, bool):
                raise UsageError(
                    f"the result for tool call `{r.call_id}` must carry text content and a "
                    f"bool is_error, got {type(r.content).__name__} content and "
                    f"{type(r.is_error).__name__} is_error (call.complete(output) serialises "
                    f"an output for you)"
                )
            if r.call_id in by_id:
                raise DuplicateToolResultError(r.call_id)
            by_id[r.call_id] = r
        for issue in self.issues:
            if issue.call.id not in by_id:
                by_id[issue.call.id] = issue.rejection()
        ordered: list[ToolResult] = []
        for call in self.message.tool_calls:
            res = by_id.pop(call.id, None)
            if res is None:
                raise MissingToolResultError(call.id)
            wrong = mismatch(call, res)
            if wrong == "name":
                raise MismatchedToolCallNameError(call.id, call.name, res.tool_name)
            if wrong == "arguments":
                raise MismatchedToolCallArgumentsError(call.id)
            ordered.append(res)
        if by_id:
            raise ExtraToolResultError(next(iter(by_id)))
        self._write(ordered)

    def _decided(self, given: list[ToolResult], guard: _Guard) -> list[ToolResult]:
        """``given`` with the hooks' answers added for the calls they answered; raises
        PolicyError for an output given for a rejected call."""
        by_id = {r.call_id: r for r in given if isinstance(r, ToolResult)}
        for c in self.calls:
            outcome = guard.decide(c)
            if isinstance(outcome, TypedCall):
                continue
            r = by_id.get(c.id)
            if r is None:
                given.append(outcome.result)
            elif isinstance(outcome, RejectedCall) and not r.is_error:
                raise PolicyError(
                    f"tool call `{c.id}` (`{c.name}`) was rejected by {outcome.source}: "
                    f"{outcome.reason}. Its output cannot be committed: leave it out of the "
                    f"results (the rejection is written for you)"
                )
        return given

    def _write(self, ordered: list[ToolResult]) -> None:
        for i, r in enumerate(ordered):
            if r.rich:
                ordered[i] = r = sendable_result(r, f"the result for tool call `{r.call_id}`")
            content = r.content
            if not content.isascii() and sendable_text(content) is not content:
                ordered[i] = r._replace(content=sendable_text(content))
        self._append(ordered)

    def _append(self, ordered: list[ToolResult]) -> None:
        """Write the round (results already checked against the calls and sendable)."""
        self._check_writable()
        self.session._append_trusted((self.message, results_message(tuple(ordered))))
        self._done = "committed"

    def apply_hooks(self, *hooks: HookSet, context: HookContext | None = None) -> ToolRoundPlan:
        """Run decision hooks over every valid call: returns a ToolRoundPlan.

        The turn's hooks (policies, tool packs, toolset hook sets) run first,
        then ``hooks`` in the order given. The installed policies run first of all,
        even when they were not passed to ``resolve_turn`` (unless it said
        ``plugins=False``); a call already decided (by ``call.run()``) is not
        decided again.
        """
        guard = self._guard
        if guard is None:
            return plan_round(self, self.calls, (*self.turn.hooks, *hooks), context, (), ())
        ctx = context or guard.context
        first = _plan_of(self, [guard.decide(c, ctx) for c in self.calls], ctx)
        return first.apply_hooks(*hooks) if any(hooks) else first

    async def aapply_hooks(
        self, *hooks: HookSet, context: HookContext | None = None
    ) -> ToolRoundPlan:
        """As :meth:`apply_hooks`, awaiting async hooks."""
        guard = self._guard
        if guard is None:
            return await aplan_round(self, self.calls, (*self.turn.hooks, *hooks), context, (), ())
        ctx = context or guard.context
        first = _plan_of(self, [await guard.adecide(c, ctx) for c in self.calls], ctx)
        return await first.aapply_hooks(*hooks) if any(hooks) else first


def _in_order(calls: tuple[ToolCall, ...], given: list[ToolResult]) -> bool:
    """True when ``given`` answers ``calls`` exactly, in order (the common case), with
    content that needs no repair (ASCII text; otherwise the general path repairs it, or
    refuses content that is not text) and a bool ``is_error``."""
    if len(calls) != len(given):
        return False
    isascii = str.isascii  # raises TypeError for content that is not text (bytes too)
    try:
        for call, r in zip(calls, given, strict=False):  # lengths compared above
            if type(r) is not ToolResult:
                return False
            cid, name, arguments, content, is_error, parts, _ = r
            # mismatch(call, r) is None, inlined: the same id, name and argument text.
            if (
                cid != call[0]
                or name != call[1]
                or arguments != call[2]
                or not isascii(content)
                or (is_error is not False and is_error is not True)
                or parts  # checked and settled by the general path
            ):
                return False
    except TypeError:  # content that is not text
        return False
    return True


@attrs.frozen
class NeedsTools:
    """The model called tools: run them (or hook them) and commit the round."""

    round: ToolRound


class ToolRoundPlan:
    """What hooks decided for a round: pending calls to run, handled, rejected, issues.

    ``apply_hooks`` again re-hooks only the pending calls. ``commit`` writes
    handled + rejected + issue rejections + the results you give for the
    pending calls, in the assistant's order.
    """

    __slots__ = ("_observed", "context", "handled", "pending", "rejected", "round")

    def __init__(
        self,
        round: ToolRound,
        pending: tuple[TypedCall[Any], ...],
        handled: tuple[HandledCall, ...],
        rejected: tuple[RejectedCall, ...],
        context: HookContext,
    ) -> None:
        self.round = round
        self.pending = pending
        self.handled = handled
        self.rejected = rejected
        self.context = context
        self._observed = False  # result hooks already applied to handled (the executor)

    @property
    def issues(self) -> tuple[ToolCallIssue, ...]:
        """The round's recoverable issues (answered with rejections on commit)."""
        return self.round.issues

    def __repr__(self) -> str:
        return (
            f"<ToolRoundPlan pending={[c.name for c in self.pending]} "
            f"handled={len(self.handled)} rejected={len(self.rejected)} issues={len(self.issues)}>"
        )

    @property
    def continue_suggestion(self) -> ContinueSuggestion:
        if self.issues:
            return ContinueSuggestion.RECOVERABLE_TOOL_CALL_ISSUE
        return ContinueSuggestion.RUN_TOOLS if self.pending else ContinueSuggestion.COMMIT

    def apply_hooks(self, *hooks: HookSet, context: HookContext | None = None) -> ToolRoundPlan:
        return plan_round(
            self.round, self.pending, hooks, context or self.context, self.handled, self.rejected
        )

    async def aapply_hooks(
        self, *hooks: HookSet, context: HookContext | None = None
    ) -> ToolRoundPlan:
        return await aplan_round(
            self.round, self.pending, hooks, context or self.context, self.handled, self.rejected
        )

    def results(self, pending_results: Iterable[ToolResult] = ()) -> list[ToolResult]:
        """Every result this plan would commit (before ordering)."""
        return [
            *(h.result for h in self.handled),
            *(r.result for r in self.rejected),
            *pending_results,
        ]

    def commit(self, pending_results: Iterable[ToolResult] = ()) -> None:
        """Commit the round: handled, rejected and issues are filled in for you."""
        self.round.commit(self.results(pending_results))

    def discard(self) -> None:
        self.round.discard()


def _plan_of(round: ToolRound, outcomes: list[Outcome], ctx: HookContext) -> ToolRoundPlan:
    pending, handled, rejected = split_outcomes(outcomes)
    if rejected:
        audit_refused(round.turn.plugins, rejected, ctx)
    return ToolRoundPlan(round, tuple(pending), tuple(handled), tuple(rejected), ctx)


def plan_round(
    round: ToolRound,
    calls: Sequence[TypedCall[Any]],
    sets: Sequence[HookSet],
    context: HookContext | None,
    handled: Sequence[HandledCall],
    rejected: Sequence[RejectedCall],
) -> ToolRoundPlan:
    ctx = context or round.turn.context or _EMPTY_CONTEXT
    if any(sets):
        cache = chain_cache(sets)
        pending, h, r = run_hooks_all(calls, sets, ctx, cache)
    else:
        pending, h, r = list(calls), [], []
    if round._guard is not None:
        round._guard.record((*pending, *h, *r))
    if r:
        audit_refused(round.turn.plugins, r, ctx)
    return ToolRoundPlan(round, tuple(pending), (*handled, *h), (*rejected, *r), ctx)


async def aplan_round(
    round: ToolRound,
    calls: Sequence[TypedCall[Any]],
    sets: Sequence[HookSet],
    context: HookContext | None,
    handled: Sequence[HandledCall],
    rejected: Sequence[RejectedCall],
) -> ToolRoundPlan:
    ctx = context or round.turn.context or _EMPTY_CONTEXT
    cache = chain_cache(sets)
    outcomes = [await arun_hooks(c, sets, ctx, cache) for c in calls] if any(sets) else list(calls)
    pending, h, r = split_outcomes(outcomes)
    if round._guard is not None:
        round._guard.record(outcomes)
    if r:
        audit_refused(round.turn.plugins, r, ctx)
    return ToolRoundPlan(round, tuple(pending), (*handled, *h), (*rejected, *r), ctx)


_new = object.__new__
_set_round = NeedsTools.__dict__["round"].__set__

publish(globals())
