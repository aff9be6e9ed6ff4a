"""Calls and their answers: the model's raw calls, typed calls, results and rejections.

The layer between tool definitions (``_tools``) and the hooks that decide calls
(``_hooks``): everything that names one call of one round lives here.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, Literal, NamedTuple, TypeVar

import attrs

from toolwire import _media
from toolwire._errors import MismatchedToolNameError, PolicyError, UsageError
from toolwire._exports import publish
from toolwire._media import Structured
from toolwire._metadata import ToolMetadata
from toolwire._sync import run_on_pooled_loop
from toolwire._tools import Tool

__all__ = [
    "sendable_text",
    "sendable_json",
    "sendable_value",
    "REJECTION_PREFIX",
    "HandledCall",
    "Receipt",
    "RejectedCall",
    "ToolCall",
    "ToolResult",
    "TypedCall",
    "mismatch",
    "rejection_content",
    "rejection_reason",
]

InT = TypeVar("InT")
_new_object = object.__new__
_new_tuple = tuple.__new__

REJECTION_PREFIX = "__toolwire_rejected__: "
#: How a rejection reads to the model (the marker is for code, not for the model).
MODEL_REJECTION = "The call was rejected and did not run: "
"""Every rejection result's content starts with this; ``rejection_reason`` reads it back."""


def sendable_text(text: str) -> str:
    """``text`` as something every provider can be sent: valid UTF-8.

    Lone UTF-16 surrogates reach Python strings from JSON escapes (``\\ud800`` in a
    reply, an emoji's pair split across two stream events) or from bytes decoded with
    surrogateescape. A split pair is joined back into its character; any other surrogate
    becomes U+FFFD. Text that is already valid (the common case) is returned as it is.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def sendable_value(value: Any) -> Any:
    """A JSON value as something every provider can be sent: strings (keys included) made
    valid UTF-8 as by :func:`sendable_text`, non-finite numbers (NaN, infinities) made
    null. A value that is already sendable (the common case) is returned as it is."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError, RecursionError):
        return _sendable(value)
    return value


def sendable_json(value: Any, fail: Callable[[str], Exception]) -> Any:
    """:func:`sendable_value`, checked: raises ``fail(why)`` when even the repaired value is
    not JSON data (a set, an object), which no session could save or send."""
    fixed = sendable_value(value)
    if fixed is not value:  # repaired: check that the repair made it JSON
        try:
            json.dumps(fixed, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise fail(str(exc)) from None
    return fixed


def _sendable(value: Any) -> Any:
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {
            (sendable_text(k) if isinstance(k, str) else k): _sendable(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_sendable(v) for v in value]
    return value


def rejection_content(reason: str) -> str:
    """The tool-result content for a rejected call."""
    return REJECTION_PREFIX + reason


def rejection_reason(content: str | ToolResult) -> str | None:
    """The reason of a rejection result, or None if the content is not a rejection."""
    text = content.content if isinstance(content, ToolResult) else content
    if isinstance(text, str) and text.startswith(REJECTION_PREFIX):
        return text[len(REJECTION_PREFIX) :]
    return None


class ToolCall(NamedTuple):
    """One tool call as the model made it; ``arguments`` is the raw JSON text, compared as text.

    A named tuple rather than an attrs class: providers build one per call on the
    decode hot path, and a tuple is immutable and three times cheaper to make.
    """

    id: str
    name: str
    arguments: str

    def result(self, content: str | Sequence[Any] | Any, *, is_error: bool = False) -> ToolResult:
        """A result for this call: text, or parts (an :class:`~toolwire.Image`, a list of
        text and media, an MCP content block; see :attr:`ToolResult.parts`)."""
        if type(content) is str:
            return ToolResult(self.id, self.name, self.arguments, content, is_error)
        if not _media.is_rich(content) and not (
            isinstance(content, (list, tuple)) and all(isinstance(x, str) for x in content)
        ):
            raise UsageError(
                f"a result's content is text or parts (Image, Audio, File, Text, ...), "
                f"got {type(content).__name__}"
            )
        return _rich_result(self.id, self.name, self.arguments, content, None, is_error)

    def complete(self, tool: Tool[Any, Any], output: Any) -> ToolResult:
        """A result carrying ``tool``'s serialised output; the tool must be the one called."""
        if tool.name != self.name:
            raise MismatchedToolNameError(
                f"tool call `{self.id}` is for tool `{self.name}`, "
                f"but the output was given for `{tool.name}`"
            )
        if type(output) is Structured:
            return _structured_result(output, self.id, self.name, self.arguments, tool.dump_output)
        if type(output) is not str and _media.is_rich(output):
            return _rich_result(self.id, self.name, self.arguments, output, tool.dump_output)
        return ToolResult(self.id, self.name, self.arguments, tool.dump_output(output), False)


def _rich_result(
    cid: str,
    name: str,
    arguments: str,
    output: Any,
    dump: Callable[[Any], str] | None,
    is_error: bool = False,
) -> ToolResult:
    """A result carrying parts, or an error result saying why the parts cannot be carried."""
    try:
        parts = _media.to_parts(output, dump or _dump_any)
    except UsageError as exc:  # MediaError and a bad Text: the tool's output, not a crash
        return ToolResult(cid, name, arguments, f"tool `{name}` returned media that {exc}", True)
    why = _media.over_limit(parts)
    if why is not None:
        return ToolResult(cid, name, arguments, f"tool `{name}`: {why}", True)
    if all(type(p) is _media.Text for p in parts):
        return ToolResult(cid, name, arguments, _media.render(parts), is_error)
    return ToolResult(cid, name, arguments, _media.render(parts), is_error, parts)


def _structured_result(
    out: Structured[Any], cid: str, name: str, arguments: str, dump: Callable[[Any], str] | None
) -> ToolResult:
    """The result a :class:`Structured` output makes (``dump`` serialises non-text parts)."""
    import pydantic_core

    try:
        value = pydantic_core.to_jsonable_python(out.value)
    except pydantic_core.PydanticSerializationError as exc:
        why = f"tool `{name}` returned a structured value that is not JSON: {exc}"
        return ToolResult(cid, name, arguments, why, True)
    text = out.text
    if text is None:
        text = json.dumps(value, ensure_ascii=False)
    if type(text) is str:
        return ToolResult(cid, name, arguments, text, False, (), value)
    if not _media.is_rich(text) and not (
        isinstance(text, (list, tuple)) and all(isinstance(x, str) for x in text)
    ):
        why = f"tool `{name}` returned a Structured whose text is {type(text).__name__}"
        return ToolResult(cid, name, arguments, f"{why}, not text or parts", True)
    made = _rich_result(cid, name, arguments, text, dump)
    return made if made.is_error else made._replace(structured=value)


def _dump_any(value: Any) -> str:
    import pydantic_core

    return pydantic_core.to_json(value).decode()


class ToolResult(NamedTuple):
    """The answer to one tool call, ready for the transcript (an immutable named tuple).

    ``content`` is the result's text. A result with media (a tool returned an
    :class:`~toolwire.Image`, a list of text and files, ...) also holds its parts in
    order in ``rich``, and ``content`` has a placeholder line for each media part;
    :attr:`parts` is the whole, in order, for any result.
    ``replace(content=...)`` makes a changed copy (for redaction, say): the parts follow
    the new content (a media part whose placeholder line was removed is left out).

    ``structured`` is the result's structured value when the tool gave one
    (:class:`Structured`, an MCP server's ``structuredContent``), as JSON values: what
    applications, policies and an MCP gateway read; the model reads ``content``. A copy
    whose content or parts change loses it unless it is given too: a hook that redacts
    the text says what the structured value is now, or the unredacted value is not kept.
    """

    call_id: str
    tool_name: str
    arguments: str
    content: str
    is_error: bool = False
    #: The parts of a result with media, in order (empty for a text result).
    rich: tuple[_media.Part, ...] = ()
    #: The structured value (JSON values), or None when the tool gave none.
    structured: Any = None

    def replace(self, **changes: Any) -> ToolResult:
        """A copy with some fields changed; a change of ``content`` or ``rich`` without
        ``structured`` drops the structured value (see the class docstring)."""
        if (
            self.structured is not None
            and "structured" not in changes
            and ("content" in changes or "rich" in changes)
        ):
            changes["structured"] = None
        return self._replace(**changes)

    @property
    def parts(self) -> tuple[_media.Part, ...]:
        """The result's parts in order: text and media as ``content`` says they are now
        (one :class:`~toolwire.Text` for a text result)."""
        if not self.rich:
            return (_media.Text(self.content),) if self.content else ()
        return _media.reconcile(self.content, self.rich)

    @property
    def media(self) -> tuple[_media.Part, ...]:
        """The result's media parts (images, audio, files, links), in order."""
        if not self.rich:
            return ()
        return tuple(p for p in self.parts if type(p) is not _media.Text)

    def with_parts(self, parts: Sequence[Any]) -> ToolResult:
        """A copy holding ``parts`` instead (text, media, MCP blocks: as a tool may return),
        checked as a tool's are: for a hook that edits the media itself (fetches a URL,
        scales an image). Media that cannot be carried gives an error result, as a tool's."""
        made = _rich_result(self.call_id, self.tool_name, self.arguments, list(parts), None)
        # The parts changed: the structured value is not carried over (see replace()).
        return made if made.is_error else made._replace(is_error=self.is_error)

    def model_parts(self) -> tuple[tuple[_media.Part, ...], bool]:
        """What a model able to take media receives: the parts (a rejection is its text
        alone, as :meth:`for_model` says it) and the error flag."""
        text, is_error = self.for_model()
        if not self.rich or text is not self.content:
            return ((_media.Text(text),) if text else ()), is_error
        return self.parts, is_error

    def for_model(self) -> tuple[str, bool]:
        """What the model receives for this result: the text and whether the provider's
        error flag is set (Anthropic's ``is_error``, Gemini's ``error`` response, MCP's
        ``isError``). A rejection goes in plain language, ``The call was rejected and
        did not run: REASON``, with the error flag; ``content`` keeps the machine marker
        (``REJECTION_PREFIX``) so :func:`rejection_reason` still reads it back from the
        transcript. Every adapter sends results through this."""
        content = self.content
        if content.startswith(REJECTION_PREFIX):
            return MODEL_REJECTION + content[len(REJECTION_PREFIX) :], True
        return content, self.is_error

    def answers(self, call: ToolCall) -> bool:
        """True when this result answers ``call``: same call id, tool name and argument text."""
        return mismatch(call, self) is None

    def receipt(self, at: datetime | None = None) -> Receipt:
        """A verifiable record of what ran: SHA-256 over the tool, the arguments, the
        output and the time (``at``, default now, UTC). Keep it (an audit log) and check
        it later with :meth:`Receipt.verify`."""
        when = _rfc3339(at)
        output = self.content
        if self.rich:  # each media part by its digest: a receipt never holds the bytes
            output += "".join(
                f"\n[sha256:{p.sha256()}]" for p in self.parts if hasattr(p, "sha256")
            )
        return Receipt(
            self.tool_name,
            output,
            when,
            _digest(self.tool_name, self.arguments, output, when),
        )


def _rfc3339(at: datetime | None) -> str:
    moment = datetime.now(UTC) if at is None else at
    if moment.tzinfo is None:
        raise UsageError("a receipt's time must be timezone-aware (datetime.now(timezone.utc))")
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _arguments_value(arguments: str | Mapping[str, Any]) -> Any:
    """The arguments as a JSON value: text is parsed (so spacing and key order do not
    matter), text that is not JSON is kept as text."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):  # text nested too deeply to parse is text too
        return arguments


def _digest(tool: str, arguments: str | Mapping[str, Any], output: str, at: str) -> str:
    body = {"args": _arguments_value(arguments), "output": output, "timestamp": at, "tool": tool}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class Receipt:
    """A verifiable record of one tool result: ``digest`` is the SHA-256 (hex) of the
    canonical JSON ``{"args", "output", "timestamp", "tool"}``, as the seed crates'
    results carry. The arguments are not stored: whoever checks the receipt brings the
    arguments they believe ran, and :meth:`verify` says whether they did."""

    tool: str
    output: str
    timestamp: str
    digest: str

    def verify(self, arguments: str | Mapping[str, Any]) -> bool:
        """True when ``arguments`` (JSON text or a mapping) are the ones this result was
        produced for, and the tool, output and time are unchanged."""
        expected = _digest(self.tool, arguments, self.output, self.timestamp)
        return hmac.compare_digest(expected, self.digest)

    def to_dict(self) -> dict[str, str]:
        return {
            "tool": self.tool,
            "output": self.output,
            "timestamp": self.timestamp,
            "digest": self.digest,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Receipt:
        """Read a receipt back (an audit log's); raises UsageError for a malformed one."""
        if not isinstance(data, Mapping):
            raise UsageError(f"a receipt is an object, got {type(data).__name__}")
        fields = {}
        for key in ("tool", "output", "timestamp", "digest"):
            value = data.get(key)
            if not isinstance(value, str):
                raise UsageError(f"receipt.{key} must be a string, got {type(value).__name__}")
            fields[key] = value
        if len(fields["digest"]) != 64 or any(
            c not in "0123456789abcdef" for c in fields["digest"]
        ):
            raise UsageError("receipt.digest must be 64 lowercase hex digits (SHA-256)")
        return cls(**fields)


def mismatch(call: ToolCall, result: ToolResult) -> Literal["id", "name", "arguments"] | None:
    """What keeps ``result`` from answering ``call`` (checked in this order), or None.

    The one definition of "this result answers this call": the same call id, the same
    tool name and the same raw argument text (compared as text, as providers do).
    """
    if result.call_id != call.id:
        return "id"
    if result.tool_name != call.name:
        return "name"
    if result.arguments != call.arguments:
        return "arguments"
    return None


class TypedCall(Generic[InT]):
    """A decoded, validated tool call: the raw call, its tool and its typed input.

    ``edited`` is true once a hook (or ``with_input``) replaced the input; the
    raw argument text stays what the model sent, as the transcript requires.
    Immutable: every attribute is read-only; ``with_input`` makes an edited copy.
    (A hand-written slotted class, not attrs: one is made per decoded call and
    attrs' frozen ``__init__`` costs more than validating the arguments.)
    """

    __slots__ = ("_call", "_edited", "_guard", "_input", "_tool")

    def __init__(
        self, call: ToolCall, tool: Tool[InT, Any], input: InT, edited: bool = False
    ) -> None:
        if call.name != tool.name:
            raise MismatchedToolNameError(
                f"tool call `{call.id}` names tool `{call.name}`, not `{tool.name}`"
            )
        self._call = call
        self._tool = tool
        self._input = input
        self._edited = edited
        self._guard: Any = None

    @property
    def call(self) -> ToolCall:
        return self._call

    @property
    def tool(self) -> Tool[InT, Any]:
        return self._tool

    @property
    def input(self) -> InT:
        return self._input

    @property
    def edited(self) -> bool:
        return self._edited

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypedCall):
            return NotImplemented
        return (self._call, self._tool, self._input, self._edited) == (
            other._call,
            other._tool,
            other._input,
            other._edited,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"TypedCall(call={self._call!r}, tool={self._tool!r}, input={self._input!r}, "
            f"edited={self._edited!r})"
        )

    @property
    def id(self) -> str:
        return self._call.id

    @property
    def name(self) -> str:
        return self._call.name

    @property
    def arguments(self) -> str:
        return self._call.arguments

    @property
    def metadata(self) -> ToolMetadata:
        return self._tool.metadata

    def with_input(self, value: InT) -> TypedCall[InT]:
        """The same call with an edited input."""
        return TypedCall(self.call, self.tool, value, True)

    def into_parts(self) -> tuple[ToolCall, InT]:
        return self.call, self.input

    def complete(self, output: Any) -> ToolResult:
        """The result of this call carrying ``output`` (text as is, anything else as JSON)."""
        # ToolResult(...) without the named tuple's Python-level __new__ (one per call).
        if type(output) is str:
            return _new_tuple(ToolResult, (*self._call, output, False, (), None))
        cid, name, arguments = self._call
        if type(output) is Structured:
            return _structured_result(output, cid, name, arguments, self._tool.dump_output)
        if _media.is_rich(output):
            return _rich_result(cid, name, arguments, output, self._tool.dump_output)
        content = self._tool.dump_output(output)
        return _new_tuple(ToolResult, (cid, name, arguments, content, False, (), None))

    def error(self, message: str) -> ToolResult:
        """An error result for this call (``is_error`` set)."""
        return ToolResult(self.call.id, self.call.name, self.call.arguments, message, True)

    def handled(self, output: Any) -> HandledCall:
        """Mark this call as handled without running it (as a hook's Complete does)."""
        return HandledCall(self, output, self.complete(output))

    def run(self, **injected: Any) -> Any:
        """Run the tool's implementation on this call's input (sync tools), see Tool.call.

        A call from a round whose turn has hooks or an installed policy is decided
        first (once): a rejected call raises PolicyError and does not run, a call a
        hook answered returns that answer without running, an edited input is the
        one used. The round's commit then writes the hooks' answers for you.
        """
        guard = self._guard
        if guard is None:
            out = self._tool.call(self._input, **injected)
        else:
            decided = guard.decide(self)
            if not isinstance(decided, TypedCall):
                return _answer(decided)
            out = decided._tool.call(decided._input, **injected)
        if inspect.isawaitable(out):
            return _run_async_tool(self.name, out)
        return out

    async def arun(self, **injected: Any) -> Any:
        """Run the tool's implementation on this call's input, awaiting it if it is async
        (use this inside an event loop; :meth:`run` for sync code). A call from a round is
        decided by its hooks and installed policies first, as for :meth:`run`, with async
        hooks awaited."""
        guard = self._guard
        if guard is None:
            return await self._tool.acall(self._input, **injected)
        decided = await guard.adecide(self)
        if not isinstance(decided, TypedCall):
            return _answer(decided)
        return await decided._tool.acall(decided._input, **injected)


def _run_async_tool(name: str, awaitable: Any) -> Any:
    """An async tool's output for sync code: run to completion where no event loop is
    running; inside one, a clear error naming ``arun`` (the coroutine is closed, so no
    "never awaited" warning follows)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_on_pooled_loop(_awaited(awaitable))
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()
    raise UsageError(
        f"tool `{name}` is async and an event loop is running: use `await call.arun()` "
        f"instead of call.run()"
    )


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _answer(decided: HandledCall | RejectedCall) -> Any:
    """What run() gives for a call a hook decided: the hook's output, or PolicyError."""
    if isinstance(decided, HandledCall):
        return decided.output
    raise PolicyError(
        f"tool call `{decided.call.id}` (`{decided.call.name}`) was rejected by "
        f"{decided.source}: {decided.reason}. It did not run; commit the round without a "
        f"result for it (the rejection is written for you)"
    )


@attrs.frozen
class HandledCall:
    """A call answered without running the tool (a hook's Complete); ``source`` names
    the hook (or plugin) that answered it (empty when not known)."""

    call: TypedCall[Any]
    output: Any
    result: ToolResult
    source: str = ""


@attrs.frozen
class RejectedCall:
    """A call rejected by a hook; ``source`` names the hook (or plugin) that decided."""

    call: ToolCall
    reason: str
    source: str
    result: ToolResult


publish(globals())
