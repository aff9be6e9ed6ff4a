"""The Provider interface, stream events, and running one turn against a provider."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar, Union

import attrs

from toolwire._errors import StreamError
from toolwire._exports import publish
from toolwire._media import TEXT_ONLY, MediaSupport
from toolwire._round import AssistantReply, Finished, NeedsTools, decode_reply
from toolwire._transcript import Session
from toolwire._turn import ResolvedTurn

__all__ = [
    "Provider",
    "ReplyCollector",
    "ReplyCompleted",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallStarted",
    "arun_turn",
    "run_turn",
]


@attrs.frozen
class TextDelta:
    """A piece of the assistant's text, as it streams."""

    text: str


@attrs.frozen
class ToolCallStarted:
    """The model started a tool call (``index`` is its position in the reply)."""

    index: int
    id: str
    name: str


@attrs.frozen
class ToolCallDelta:
    """A fragment of a tool call's argument text."""

    index: int
    fragment: str


@attrs.frozen
class ReplyCompleted:
    """The stream ended cleanly; ``reply`` is the assembled response."""

    reply: AssistantReply


StreamEvent = Union[TextDelta, ToolCallStarted, ToolCallDelta, ReplyCompleted]


class Provider(abc.ABC):
    """A model provider: renders a turn, sends it, decodes the answer into a reply.

    Adapters implement :meth:`generate` (and usually :meth:`agenerate`,
    :meth:`stream`, :meth:`astream` over real HTTP). ``supports_requirement``
    says whether the provider can express every requirement natively; either
    way the requirement is checked after decoding.
    """

    name: ClassVar[str] = ""
    default_model: ClassVar[str] = ""
    supports_requirement: ClassVar[bool] = True
    #: What media this provider sends as itself in a tool result (images, audio, files);
    #: anything else goes as its placeholder line. Text only unless the adapter says more.
    result_media: MediaSupport = TEXT_ONLY

    def __init__(self, model: str | None = None) -> None:
        self.model = model or self.default_model

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} model={self.model!r}>"

    @abc.abstractmethod
    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        """Send the session and the turn's tools; return the decoded reply."""

    async def agenerate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        """Async :meth:`generate`; adapters with real I/O override it."""
        return self.generate(session, turn)

    def stream(self, session: Session, turn: ResolvedTurn) -> Iterator[StreamEvent]:
        """Stream events, ending with ReplyCompleted; by default from :meth:`generate`."""
        yield from _events_of(self.generate(session, turn))

    async def astream(self, session: Session, turn: ResolvedTurn) -> AsyncIterator[StreamEvent]:
        for event in _events_of(await self.agenerate(session, turn)):
            yield event

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The tool definitions as this provider sends them (neutral by default)."""
        return [dict(t.definition.to_spec()) for t in turn.tools]

    def close(self) -> None:  # noqa: B027 - optional for adapters without resources
        """Release connections."""

    async def aclose(self) -> None:
        self.close()


def _events_of(reply: AssistantReply) -> Iterator[StreamEvent]:
    if reply.text:
        yield TextDelta(reply.text)
    for i, call in enumerate(reply.tool_calls):
        yield ToolCallStarted(i, call.id, call.name)
        if call.arguments:
            yield ToolCallDelta(i, call.arguments)
    yield ReplyCompleted(reply)


class ReplyCollector:
    """The I/O-free core of every stream loop, sync or async: feed it each event in order;
    ``feed`` says when the reply is complete and ``result`` returns it, or raises
    StreamError when the stream ended without one (nothing may be committed then)."""

    __slots__ = ("reply",)

    def __init__(self) -> None:
        self.reply: AssistantReply | None = None

    def feed(self, event: StreamEvent) -> bool:
        """Take one event; True once the reply is complete (stop reading there)."""
        if isinstance(event, ReplyCompleted):
            self.reply = event.reply
            return True
        return False

    def result(self) -> AssistantReply:
        if self.reply is None:
            raise StreamError("the stream ended without a completed reply")
        return self.reply


def _reply_from_stream(
    events: Iterator[StreamEvent], on_event: Callable[[StreamEvent], None] | None
) -> AssistantReply:
    collector = ReplyCollector()
    for event in events:
        if on_event is not None:
            on_event(event)
        if collector.feed(event):
            break
    return collector.result()


def run_turn(
    provider: Provider,
    session: Session,
    turn: ResolvedTurn,
    *,
    stream: bool = False,
    on_event: Callable[[StreamEvent], None] | None = None,
    enforce_requirement: bool = True,
) -> Finished | NeedsTools:
    """One request: send the session with the turn's tools, decode into Finished or NeedsTools.

    With ``stream=True`` every event is passed to ``on_event`` as it arrives;
    nothing is committed unless the stream completes.
    """
    if stream or on_event is not None:
        reply = _reply_from_stream(provider.stream(session, turn), on_event)
    else:
        reply = provider.generate(session, turn)
    return decode_reply(session, turn, reply, enforce_requirement=enforce_requirement)


async def arun_turn(
    provider: Provider,
    session: Session,
    turn: ResolvedTurn,
    *,
    stream: bool = False,
    on_event: Callable[[StreamEvent], Any] | None = None,
    enforce_requirement: bool = True,
) -> Finished | NeedsTools:
    """Async :func:`run_turn`; ``on_event`` may be sync or async."""
    if stream or on_event is not None:
        collector = ReplyCollector()
        async for event in provider.astream(session, turn):
            if on_event is not None:
                out = on_event(event)
                if hasattr(out, "__await__"):
                    await out
            if collector.feed(event):
                break
        reply = collector.result()
    else:
        reply = await provider.agenerate(session, turn)
    return decode_reply(session, turn, reply, enforce_requirement=enforce_requirement)


publish(globals())
