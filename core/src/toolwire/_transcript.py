"""The neutral transcript: a Session of messages that is always valid for any provider.

A Session serialises to JSON and back with everything needed to continue,
provider state included (Gemini thought signatures, Anthropic thinking blocks,
Responses reasoning items are kept on the assistant message that produced them).
"""

from __future__ import annotations

import json
import operator
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Union

import attrs

from toolwire import _media
from toolwire._calls import ToolCall, ToolResult, mismatch, sendable_json, sendable_text
from toolwire._errors import TranscriptError, UsageError
from toolwire._exports import publish
from toolwire._jsondata import as_object, field, is_kind, loads, objects, optional

__all__ = [
    "AssistantMessage",
    "Message",
    "Session",
    "SystemMessage",
    "ToolResultsMessage",
    "Usage",
    "UserMessage",
]

FORMAT = "toolwire.session/1"


def _count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not is_kind(value, int):  # not a bool, not a float: what a saved session can hold
        raise UsageError(f"Usage.{attribute.name} must be an integer, got {type(value).__name__}")


@attrs.frozen
class Usage:
    """Token counts a provider reported for one response (integers; anything else raises
    UsageError, so a session never holds counts it could not save)."""

    input_tokens: int = attrs.field(default=0, validator=_count)
    output_tokens: int = attrs.field(default=0, validator=_count)
    cached_tokens: int = attrs.field(default=0, validator=_count)
    reasoning_tokens: int = attrs.field(default=0, validator=_count)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@attrs.frozen
class SystemMessage:
    text: str
    role: str = attrs.field(default="system", init=False)


@attrs.frozen
class UserMessage:
    text: str
    role: str = attrs.field(default="user", init=False)


@attrs.frozen
class AssistantMessage:
    """What the model said: text, tool calls in order, and opaque provider state.

    ``provider_state`` is JSON-serialisable data an adapter must send back on
    later requests (keyed by the adapter name), e.g. thinking blocks.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider_state: Mapping[str, Any] = attrs.field(factory=dict)
    model: str | None = None
    usage: Usage | None = None
    role: str = attrs.field(default="assistant", init=False)


@attrs.frozen
class ToolResultsMessage:
    """The results of one assistant turn's tool calls, in the assistant's order."""

    results: tuple[ToolResult, ...]
    role: str = attrs.field(default="tool", init=False)


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolResultsMessage]


# The round's messages made without attrs' frozen __init__ (one setattr call per field):
# one of each is made per tool round on the decode hot path, from values already checked.
_new = object.__new__
_am_slots = tuple(
    AssistantMessage.__dict__[n].__set__
    for n in ("text", "tool_calls", "provider_state", "model", "usage", "role")
)
_trm_slots = tuple(ToolResultsMessage.__dict__[n].__set__ for n in ("results", "role"))


def assistant_message(
    text: str,
    tool_calls: tuple[ToolCall, ...],
    provider_state: dict[str, Any],
    model: str | None,
    usage: Usage | None,
) -> AssistantMessage:
    """``AssistantMessage(text, tool_calls, provider_state, model, usage)``, faster."""
    m = _new(AssistantMessage)
    s_text, s_calls, s_state, s_model, s_usage, s_role = _am_slots
    s_text(m, text)
    s_calls(m, tool_calls)
    s_state(m, provider_state)
    s_model(m, model)
    s_usage(m, usage)
    s_role(m, "assistant")
    return m


def results_message(results: tuple[ToolResult, ...]) -> ToolResultsMessage:
    """``ToolResultsMessage(results)``, faster."""
    m = _new(ToolResultsMessage)
    s_results, s_role = _trm_slots
    s_results(m, results)
    s_role(m, "tool")
    return m


class Session:
    """An ordered, always-valid conversation.

    Every assistant tool call is answered by the next message, a
    :class:`ToolResultsMessage` with exactly one result per call in the same
    order. Tool rounds append the assistant message and its results together
    on commit, so a Session never holds an unanswered call.
    """

    __slots__ = ("_messages", "id", "metadata")

    def __init__(
        self,
        system: str | None = None,
        *,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if id is not None and not isinstance(id, str):
            raise TranscriptError(f"a session id must be a string, got {type(id).__name__}")
        self.id = id or uuid.uuid4().hex
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TranscriptError(
                f"session metadata must be a mapping, got {type(metadata).__name__}"
            )
        self.metadata: dict[str, Any] = dict(metadata or {})
        if self.metadata:
            try:  # what to_json() will write, and from_json() read back
                json.dumps(self.metadata, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                raise TranscriptError(f"session metadata must be JSON data: {exc}") from None
            # Lone surrogates in keys or values (from JSON escapes) are repaired, as message
            # text is: to_json() must be writable as UTF-8.
            self.metadata = sendable_json(
                self.metadata, lambda why: TranscriptError(f"session metadata: {why}")
            )
        self._messages: list[Message] = []
        if system is not None:
            self.add_system(system)

    def __repr__(self) -> str:
        return f"<Session {self.id} with {len(self._messages)} messages>"

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(tuple(self._messages))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Session):
            return NotImplemented
        return (self.id, self.metadata, self._messages) == (
            other.id,
            other.metadata,
            other._messages,
        )

    __hash__ = None  # type: ignore[assignment]

    # -- appending ------------------------------------------------------------------

    def add_system(self, text: str) -> Session:
        self._append_checked([SystemMessage(_text(text, "system"))])
        return self

    def add_user(self, text: str) -> Session:
        self._append_checked([UserMessage(_text(text, "user"))])
        return self

    def add_assistant(self, text: str) -> Session:
        """Append a plain assistant answer (no tool calls)."""
        self._append_checked([AssistantMessage(_text(text, "assistant"))])
        return self

    def extend(self, messages: Sequence[Message]) -> Session:
        """Append messages atomically, checking the transcript stays valid."""
        self._append_checked(list(messages))
        return self

    def _append_trusted(self, new: tuple[Message, ...]) -> None:
        # For a committed tool round, whose results commit already matched to its calls.
        # Media past the session's limit is left out (and says so): the round still lands.
        last = new[-1]
        if isinstance(last, ToolResultsMessage) and any(r.rich for r in last.results):
            kept = _within_budget(self.media_bytes(), last.results)
            if kept is not last.results:
                new = (*new[:-1], ToolResultsMessage(kept))
        self._messages.extend(new)

    def _append_checked(self, new: list[Message]) -> None:
        start = len(self._messages)
        new = [_sendable_message(m, f"message {start + i}") for i, m in enumerate(new)]
        _check_sequence(self._messages, new)
        adding = sum(
            _media.media_bytes(r.rich)
            for m in new
            if isinstance(m, ToolResultsMessage)
            for r in m.results
        )
        if adding:
            cap = _media.current_limits().session_bytes
            total = self.media_bytes() + adding
            if total > cap:
                raise TranscriptError(
                    f"the session would hold {total:,} bytes of media, over its limit of "
                    f"{cap:,} (toolwire.media.set_media_limits)"
                )
        self._messages.extend(new)

    def media_bytes(self) -> int:
        """Bytes of media (images, audio, files) the session's tool results hold."""
        return sum(
            _media.media_bytes(r.rich)
            for m in self._messages
            if isinstance(m, ToolResultsMessage)
            for r in m.results
            if r.rich
        )

    @property
    def last(self) -> Message | None:
        return self._messages[-1] if self._messages else None

    def system_text(self) -> str:
        """All non-empty system messages joined with blank lines (for providers with
        one system field). An empty system message is sent by no adapter."""
        return "\n\n".join(
            m.text for m in self._messages if isinstance(m, SystemMessage) and m.text
        )

    # -- serialisation --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.id,
            "metadata": self.metadata,
            "messages": [_message_to_dict(m) for m in self._messages],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> Session:
        """Rebuild a session; malformed data raises TranscriptError naming the bad path."""
        data = as_object(data, "a session")
        if data.get("format") != FORMAT:
            raise TranscriptError(
                f"unknown session format {data.get('format')!r}; expected {FORMAT!r}"
            )
        sid = field(data, "id", "session", str)
        if not sid:
            raise TranscriptError("session.id must be a non-empty string")
        meta = field(data, "metadata", "session", Mapping, {})
        raw = field(data, "messages", "session", list)
        messages = [_message_from_dict(m, f"messages[{i}]") for i, m in enumerate(raw)]
        session = cls(id=sid, metadata=meta)
        try:
            session._append_checked(messages)
        except TranscriptError as exc:
            raise TranscriptError(f"session {sid}: {exc}") from None
        return session

    @classmethod
    def from_json(cls, text: str | bytes) -> Session:
        data = loads(text, "session JSON")
        return cls.from_dict(data)


def _text(text: Any, role: str) -> str:
    if not isinstance(text, str):
        raise TranscriptError(f"{role} text must be a string, got {type(text).__name__}")
    return sendable_text(text)


def _sendable_message(msg: Any, where: str) -> Any:
    """``msg`` with every field checked as :meth:`Session.from_dict` checks saved JSON, and
    made sendable (lone surrogates repaired, provider state made JSON data): a message built
    by hand, or read from a file, can break neither the session's save nor a later request.
    A field of the wrong type raises TranscriptError naming it; anything that is not a
    message is returned as it is (the sequence check names it). A message that needs no
    repair is the same object."""
    if isinstance(msg, (SystemMessage, UserMessage)):
        text = _sendable_part(msg.text, f"{where}.text")
        return msg if text is msg.text else attrs.evolve(msg, text=text)
    if isinstance(msg, AssistantMessage):
        return _sendable_assistant(msg, where)
    if isinstance(msg, ToolResultsMessage):
        got = _records(msg.results, f"{where}.results", ToolResult)
        results = tuple(_sendable_result(r, f"{where}.results[{i}]") for i, r in enumerate(got))
        same = type(got) is tuple and _unchanged(results, got)
        return msg if same else ToolResultsMessage(results)
    return msg


def _sendable_assistant(msg: AssistantMessage, where: str) -> AssistantMessage:
    text = _sendable_part(msg.text, f"{where}.text")
    got = _records(msg.tool_calls, f"{where}.tool_calls", ToolCall)
    calls = tuple(_sendable_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(got))
    state = msg.provider_state
    if not isinstance(state, Mapping):
        raise TranscriptError(
            f"{where}.provider_state must be a mapping, got {type(state).__name__}"
        )
    if state:
        sendable_state = sendable_json(
            state, lambda why: TranscriptError(f"{where}.provider_state must be JSON data: {why}")
        )
    else:
        sendable_state = state
    model = msg.model if msg.model is None else _sendable_part(msg.model, f"{where}.model")
    usage = msg.usage
    if usage is not None and not isinstance(usage, Usage):  # a Usage checks its counts
        raise TranscriptError(f"{where}.usage must be a Usage, got {usage!r:.200}")
    if (
        text is msg.text
        and type(got) is tuple
        and _unchanged(calls, got)
        and sendable_state is state
        and model is msg.model
    ):
        return msg
    return AssistantMessage(text, calls, sendable_state, model, usage)


def _records(value: Any, where: str, kind: type) -> Sequence[Any]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(x, kind) for x in value):
        raise TranscriptError(
            f"{where} must be a tuple of {kind.__name__} records, got {value!r:.200}"
        )
    return value


def _sendable_part(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TranscriptError(f"{where} must be a string, got {type(value).__name__}")
    return sendable_text(value)


def _sendable_call(call: ToolCall, where: str) -> ToolCall:
    parts = tuple(
        _sendable_part(v, f"{where}.{n}") for n, v in zip(call._fields, call, strict=True)
    )
    return call if _unchanged(parts, call) else ToolCall(*parts)


def _sendable_result(r: ToolResult, where: str) -> ToolResult:
    parts = tuple(
        _sendable_part(v, f"{where}.{n}") for n, v in zip(r._fields[:4], r[:4], strict=True)
    )
    if not isinstance(r.is_error, bool):
        raise TranscriptError(
            f"{where}.is_error must be a boolean, got {type(r.is_error).__name__}"
        )
    rich = r.rich
    if rich:
        if type(rich) is not tuple or not all(isinstance(p, _media.PART_TYPES) for p in rich):
            raise TranscriptError(
                f"{where}.rich must be a tuple of parts (Text, Image, Audio, File, "
                f"ResourceLink), got {rich!r:.200}"
            )
        rich = _settled(parts[3], rich)
    if _unchanged(parts, r[:4]) and rich is r.rich:
        return r
    cid, name, arguments, content = parts
    return ToolResult(cid, name, arguments, content, r.is_error, rich, r.structured)


def _settled(content: str, rich: tuple[_media.Part, ...]) -> tuple[_media.Part, ...]:
    """The parts ``content`` says are left (a session never keeps text a hook redacted
    from the content, nor media whose placeholder it removed); none when no media is left."""
    parts = _media.reconcile(content, rich)
    if parts is rich:
        return rich
    return parts if any(type(p) is not _media.Text for p in parts) else ()


def _within_budget(held: int, results: tuple[ToolResult, ...]) -> tuple[ToolResult, ...]:
    """``results`` with each media part that would take the session past its media limit
    replaced by a line saying so (working on the parts, which the commit has settled: a
    tool's text may hold a copy of a media line)."""
    cap = _media.current_limits().session_bytes
    out: list[ToolResult] = []
    changed = False
    for r in results:
        if not r.rich:
            out.append(r)
            continue
        parts: list[_media.Part] = []
        left_out = False
        for p in r.rich:
            size = p.size if isinstance(p, _media.MEDIA_TYPES) else 0
            if size and held + size > cap:
                assert isinstance(p, _media.MEDIA_TYPES)
                note = p.label(f"left out: the session's media limit of {cap:,} bytes is reached")
                parts.append(_media.Text(note))
                left_out = True
                continue
            held += size
            parts.append(p)
        if not left_out:
            out.append(r)
            continue
        changed = True
        left = tuple(parts) if any(type(p) is not _media.Text for p in parts) else ()
        # replace(): a structured value (it may hold the same media) is not kept either.
        out.append(r.replace(content=_media.render(parts), rich=left))
    return tuple(out) if changed else results


def _unchanged(new: tuple[Any, ...], old: Sequence[Any]) -> bool:
    """``new`` holds the very objects ``old`` held: nothing was repaired."""
    return len(new) == len(old) and all(map(operator.is_, new, old))


def _check_sequence(existing: list[Message], new: list[Message]) -> None:
    """Every assistant tool call is answered by the next message, one result per call, in order."""
    prev = existing[-1] if existing else None
    for i, msg in enumerate(new):
        if not isinstance(msg, (SystemMessage, UserMessage, AssistantMessage, ToolResultsMessage)):
            raise TranscriptError(f"not a message: {msg!r} ({type(msg).__name__})")
        if isinstance(msg, AssistantMessage) and len({c.id for c in msg.tool_calls}) != len(
            msg.tool_calls
        ):
            call_ids = [c.id for c in msg.tool_calls]
            dup = next(x for x in call_ids if call_ids.count(x) > 1)
            raise TranscriptError(
                f"message {len(existing) + i}: tool call id `{dup}` appears twice in one "
                f"assistant turn"
            )
        if isinstance(prev, AssistantMessage) and prev.tool_calls:
            if not isinstance(msg, ToolResultsMessage):
                ids = ", ".join(f"`{c.id}`" for c in prev.tool_calls)
                raise TranscriptError(
                    f"message {len(existing) + i} ({msg.role}) follows an assistant turn whose "
                    f"tool calls {ids} have no results; commit the tool round first"
                )
            _check_results(prev, msg)
        elif isinstance(msg, ToolResultsMessage):
            raise TranscriptError(
                f"message {len(existing) + i}: tool results must follow an assistant turn "
                f"with tool calls"
            )
        prev = msg
    if isinstance(prev, AssistantMessage) and prev.tool_calls:
        pending = ", ".join(f"`{c.id}`" for c in prev.tool_calls)
        raise TranscriptError(
            f"an assistant turn with tool calls {pending} must be followed by their results in the "
            f"same append; commit tool rounds through ToolRound.commit"
        )


def _check_results(assistant: AssistantMessage, results: ToolResultsMessage) -> None:
    calls = assistant.tool_calls
    got = results.results
    if len(calls) != len(got):
        raise TranscriptError(
            f"{len(calls)} tool calls but {len(got)} results: "
            f"calls {[c.id for c in calls]}, results {[r.call_id for r in got]}"
        )
    for call, res in zip(calls, got, strict=False):
        wrong = mismatch(call, res)
        if wrong == "arguments":
            raise TranscriptError(
                f"result `{res.call_id}` carries arguments that differ from its call's"
            )
        if wrong is not None:
            raise TranscriptError(
                f"result `{res.call_id}` ({res.tool_name}) does not answer call "
                f"`{call.id}` ({call.name}) at the same position"
            )


def _message_to_dict(m: Message) -> dict[str, Any]:
    if isinstance(m, (SystemMessage, UserMessage)):
        return {"role": m.role, "text": m.text}
    if isinstance(m, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "text": m.text}
        if m.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
            ]
        if m.provider_state:
            out["provider_state"] = dict(m.provider_state)
        if m.model is not None:
            out["model"] = m.model
        if m.usage is not None:
            out["usage"] = attrs.asdict(m.usage)
        return out
    return {
        "role": "tool",
        "results": [
            {
                "call_id": r.call_id,
                "tool_name": r.tool_name,
                "arguments": r.arguments,
                "content": r.content,
                "is_error": r.is_error,
                **({"parts": [_media.part_to_dict(p) for p in r.rich]} if r.rich else {}),
                **({"structured": r.structured} if r.structured is not None else {}),
            }
            for r in m.results
        ],
    }


def _message_from_dict(d: Any, where: str) -> Message:
    d = as_object(d, where)
    role = d.get("role")
    if role == "system":
        return SystemMessage(field(d, "text", where, str))
    if role == "user":
        return UserMessage(field(d, "text", where, str))
    if role == "assistant":
        calls = tuple(
            ToolCall(
                field(c, "id", w, str), field(c, "name", w, str), field(c, "arguments", w, str)
            )
            for c, w in objects(d, "tool_calls", where, ())
        )
        state = field(d, "provider_state", where, Mapping, {})
        usage_raw = optional(d, "usage", where, Mapping)
        usage = None
        if usage_raw is not None:
            counts = {key: field(usage_raw, key, f"{where}.usage", int) for key in usage_raw}
            try:
                usage = Usage(**counts)
            except TypeError as exc:
                raise TranscriptError(f"{where}.usage is malformed: {exc}") from None
        model = optional(d, "model", where, str)
        return AssistantMessage(field(d, "text", where, str, ""), calls, dict(state), model, usage)
    if role == "tool":
        results = tuple(
            ToolResult(
                field(r, "call_id", w, str),
                field(r, "tool_name", w, str),
                field(r, "arguments", w, str),
                field(r, "content", w, str),
                field(r, "is_error", w, bool, False),
                tuple(_media.part_from_dict(p, pw) for p, pw in objects(r, "parts", w, ())),
                r.get("structured"),
            )
            for r, w in objects(d, "results", where)
        )
        return ToolResultsMessage(results)
    raise TranscriptError(
        f"{where}.role must be one of 'system', 'user', 'assistant', 'tool'; got {role!r}"
    )


publish(globals())
