"""Decoding a reply's tool calls against a turn: typed calls, and the recoverable issues
(unknown tool, not offered, invalid arguments) with the rejections the model is sent."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, Union

import attrs
from pydantic import ValidationError

from toolwire._calls import ToolCall, ToolResult, TypedCall, rejection_content, sendable_text
from toolwire._errors import UsageError
from toolwire._exports import publish
from toolwire._tools import Tool
from toolwire._turn import ResolvedTurn

__all__ = ["InvalidArguments", "NotAvailable", "ToolCallIssue", "UnknownTool", "decode_calls"]


def _hidden_by(turn: ResolvedTurn, name: str) -> str:
    """The plugin (policy or tool pack) whose availability hook hid ``name`` this turn, as
    the model may read it; an application's own hooks are not named (their default
    names are Python qualnames)."""
    hook = turn.hidden.get(name, "")
    return hook if hook.startswith("plugin:") else ""


def not_available(call: ToolCall, turn: ResolvedTurn) -> NotAvailable:
    """The issue of a call to a tool ``turn`` did not offer: who hid it and why, when a
    hook said so (the one way to build it, for the decoder and a resumed round alike)."""
    return NotAvailable(
        call, tuple(turn.offered), _hidden_by(turn, call.name), turn.hidden_why.get(call.name, "")
    )


_LISTED = 40  # tool names listed in an unknown-tool rejection, at most


def _offered_hint(name: str, available: tuple[str, ...]) -> str:
    """What the model is told it can call instead: the tools offered this round (the
    first few dozen) and the closest name, so it can correct itself."""
    if not available:
        return " No tools are available this round."
    close = difflib.get_close_matches(name, available, n=1, cutoff=0.6)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    listed = ", ".join(f"`{n}`" for n in available[:_LISTED])
    more = f" and {len(available) - _LISTED} more" if len(available) > _LISTED else ""
    return f"{hint} The tools available this round: {listed}{more}."


@attrs.frozen
class NotAvailable:
    """A call to a tool that exists but was not offered this round.

    ``available`` are the tools the round offered; the rejection lists them. When an
    availability hook hid the tool, ``hidden_by`` names it and the reason says so.
    """

    call: ToolCall
    available: tuple[str, ...] = ()
    #: The plugin whose availability hook hid the tool this round (``plugin:NAME``), or
    #: "" (not offered, or hidden by one of the application's own hooks).
    hidden_by: str = ""
    #: Why the hook hid it, when it said (:class:`~toolwire.Hidden`), else "".
    why: str = ""

    @property
    def reason(self) -> str:
        base = f"tool `{self.call.name}` is not available in this round"
        if self.hidden_by and self.why:
            return f"{base} (hidden by `{self.hidden_by}`: {self.why})"
        if self.why:
            return f"{base} ({self.why})"
        return f"{base} (hidden by `{self.hidden_by}`)" if self.hidden_by else base

    def rejection(self) -> ToolResult:
        text = self.reason + "." + _offered_hint(self.call.name, self.available)
        return self.call.result(rejection_content(text), is_error=True)


@attrs.frozen
class UnknownTool:
    """A call to a tool name the toolset does not have.

    ``available`` are the tools the round offered; the rejection lists them, with the
    closest name.
    """

    call: ToolCall
    available: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return f"tool `{self.call.name}` is not recognized in this toolset or round"

    def rejection(self) -> ToolResult:
        text = self.reason + "." + _offered_hint(self.call.name, self.available)
        return self.call.result(rejection_content(text), is_error=True)


@attrs.frozen
class InvalidArguments:
    """Argument text that is not JSON or does not match the tool's schema.

    ``errors`` keeps pydantic's error detail (``type``, ``loc``, ``msg``) so
    the model can correct itself; the rejection content includes it.
    """

    call: ToolCall
    tool: Tool[Any, Any]
    errors: tuple[Mapping[str, Any], ...]

    @property
    def reason(self) -> str:
        return f"tool `{self.call.name}` arguments did not match the expected schema"

    def detail(self) -> str:
        lines = []
        for e in self.errors:
            loc = ".".join(str(p) for p in e.get("loc", ())) or "(arguments)"
            lines.append(f"- {loc}: {e.get('msg', '')}")
        return "\n".join(lines)

    def rejection(self) -> ToolResult:
        return self.call.result(
            rejection_content(f"{self.reason}:\n{self.detail()}"), is_error=True
        )


ToolCallIssue = Union[NotAvailable, UnknownTool, InvalidArguments]


def _errors_of(exc: ValidationError) -> tuple[Mapping[str, Any], ...]:
    return tuple(
        {"type": e["type"], "loc": tuple(e["loc"]), "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False)
    )


def _check_record(call: object) -> None:
    # An adapter (maybe a plugin's) built the reply: a wrong record is its bug, named here.
    if not isinstance(call, ToolCall) or not all(type(part) is str for part in call):
        raise UsageError(
            f"a reply's tool_calls must be ToolCall(id, name, arguments) records of strings, "
            f"got {call!r:.200}"
        )


def decode_calls(
    turn: ResolvedTurn, calls: Iterable[ToolCall]
) -> tuple[tuple[ToolCall, ...], tuple[TypedCall[Any], ...], tuple[ToolCallIssue, ...]]:
    """Validate raw calls against a turn: (kept calls, typed calls, issues).

    Duplicate call ids are dropped (the first one wins).
    """
    calls = tuple(calls)
    typed: list[TypedCall[Any]] = []
    seen: set[str] = set()
    offered = turn.offered
    new = object.__new__
    isascii = str.isascii  # raises TypeError for a part that is not text (bytes too)
    # The common case first: records of ASCII text (nothing to repair), each id new, each
    # tool offered, each input valid. The first call that is not goes to the general path
    # below, which takes over from it with what was made so far.
    i = 0
    for call in calls:
        if type(call) is not ToolCall:
            break
        cid, name, arguments = call
        try:  # a part that is not text raises: the general path names the bad record
            tool = offered.get(name)
            if (
                tool is None
                or cid in seen
                or not (isascii(arguments) and isascii(cid) and isascii(name))
            ):
                break
        except TypeError:
            break
        seen.add(cid)
        try:
            value = tool._validate(arguments)
        except ValidationError as exc:  # answered here (validated once), the rest in general
            return _decode_rest(
                turn, calls, i + 1, typed, seen, InvalidArguments(call, tool, _errors_of(exc))
            )
        # TypedCall(...) without its name check: the tool was found by the call's name.
        typed_call = new(TypedCall)
        typed_call._call = call
        typed_call._tool = tool
        typed_call._input = value
        typed_call._edited = False
        typed_call._guard = None
        typed.append(typed_call)
        i += 1
    else:
        return calls, tuple(typed), ()
    return _decode_rest(turn, calls, i, typed, seen)


def _decode_rest(
    turn: ResolvedTurn,
    calls: tuple[ToolCall, ...],
    start: int,
    typed: list[TypedCall[Any]],
    seen: set[str],
    first: ToolCallIssue | None = None,
) -> tuple[tuple[ToolCall, ...], tuple[TypedCall[Any], ...], tuple[ToolCallIssue, ...]]:
    """decode_calls from ``calls[start]`` on, every case handled (the calls before it
    were the common case, kept as they are: their typed calls in ``typed``, the last one's
    issue ``first`` when its arguments did not validate)."""
    kept: list[ToolCall] | None = None  # made only when a call is dropped or repaired
    issues: list[ToolCallIssue] = [] if first is None else [first]
    offered = turn.offered
    find = offered.get
    isascii = str.isascii
    for i in range(start, len(calls)):
        call = calls[i]
        if type(call) is not ToolCall:
            _check_record(call)
        cid, name, arguments = call
        try:  # str.isascii: a part that is not text raises
            plain = isascii(arguments) and isascii(cid) and isascii(name)
        except TypeError:
            plain = False
        if not plain:
            _check_record(call)
            # Lone surrogates would make the session unsendable: repaired before anything.
            fixed = ToolCall(*(sendable_text(part) for part in call))
            if fixed != call:
                call = fixed
                cid, name, arguments = call
                if kept is None:
                    kept = list(calls[:i])
        if cid in seen:
            if kept is None:
                kept = list(calls[:i])
            continue
        seen.add(cid)
        if kept is not None:
            kept.append(call)
        tool = find(name)
        if tool is None:
            if name in turn.toolset:
                issues.append(not_available(call, turn))
            else:
                issues.append(UnknownTool(call, tuple(offered)))
            continue
        try:
            value = tool._validate(arguments)
        except ValidationError as exc:
            issues.append(InvalidArguments(call, tool, _errors_of(exc)))
            continue
        typed.append(TypedCall(call, tool, value))
    if kept is None:
        return calls, tuple(typed), tuple(issues)
    return tuple(kept), tuple(typed), tuple(issues)


publish(globals())
