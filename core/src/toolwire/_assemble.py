"""Assembling streamed tool calls, shared by every provider adapter.

Providers stream a tool call as fragments: an index (or a block/item key),
an id and a name (usually only on the first fragment) and pieces of argument
text. Known quirks handled here once: ids only on the first fragment;
parallel calls that share an index but carry different ids (some
OpenAI-compatible servers); whole calls in one fragment; missing ids
(Gemini), synthesised deterministically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

from toolwire._calls import ToolCall
from toolwire._errors import StreamError
from toolwire._exports import publish
from toolwire._provider import StreamEvent, TextDelta, ToolCallDelta, ToolCallStarted

__all__ = ["ToolCallAssembler", "synthesize_call_id"]


def synthesize_call_id(name: str, arguments: str, position: int) -> str:
    """A deterministic id for a call the provider sent without one.

    The same reply always gets the same ids, so a resumed session and a
    re-decoded response agree; the position keeps identical parallel calls apart.
    """
    digest = hashlib.blake2b(
        f"{position}\x00{name}\x00{arguments}".encode(), digest_size=6
    ).hexdigest()
    return f"call_{position}_{digest}"


class _Open:
    __slots__ = ("args", "id", "name", "position")

    def __init__(self, position: int, id: str | None, name: str) -> None:
        self.position = position
        self.id = id
        self.name = name
        self.args: list[str] = []


class ToolCallAssembler:
    """Collects text and tool-call fragments; ``calls()`` gives the finished calls in order.

    Each method returns the stream events to pass on to the caller.
    """

    __slots__ = ("_by_key", "_calls", "_text", "provider")

    def __init__(self, provider: str = "") -> None:
        self.provider = provider
        self._calls: list[_Open] = []
        self._by_key: dict[Hashable, _Open] = {}
        self._text: list[str] = []

    def text(self, delta: str) -> list[StreamEvent]:
        if not delta:
            return []
        self._text.append(delta)
        return [TextDelta(delta)]

    @property
    def text_so_far(self) -> str:
        return "".join(self._text)

    def fragment(
        self,
        key: Hashable,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> list[StreamEvent]:
        """Feed one fragment of the call identified by ``key`` (an index, a block id...).

        A fragment whose ``id`` differs from the id of the call open under the
        same key starts a new call (the shared-index quirk).
        """
        events: list[StreamEvent] = []
        current = self._by_key.get(key)
        if current is None or (id and current.id and id != current.id):
            if not name and current is None:
                raise StreamError(
                    f"a tool-call fragment for {key!r} arrived before the call's name",
                    provider=self.provider,
                )
            current = _Open(len(self._calls), id or None, name or (current.name if current else ""))
            self._calls.append(current)
            self._by_key[key] = current
            events.append(ToolCallStarted(current.position, current.id or "", current.name))
        else:
            if id and not current.id:
                current.id = id
            if name and not current.name:
                current.name = name
        if arguments:
            current.args.append(arguments)
            events.append(ToolCallDelta(current.position, arguments))
        return events

    def calls(self) -> tuple[ToolCall, ...]:
        """The assembled calls, in the order they started; empty argument text becomes ``{}``."""
        out = []
        for c in self._calls:
            args = "".join(c.args) or "{}"
            out.append(ToolCall(c.id or synthesize_call_id(c.name, args, c.position), c.name, args))
        return tuple(out)

    def __len__(self) -> int:
        return len(self._calls)


publish(globals())
