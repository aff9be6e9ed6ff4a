"""An incremental server-sent-events decoder that follows the WHATWG rules."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Iterator,
)
from typing import TYPE_CHECKING, Any

import attrs
from pydantic_core import from_json as _from_json

from toolwire._exports import publish

if TYPE_CHECKING:
    pass


# ---------------------------------------------------------------------------- SSE


@attrs.frozen
class SSEEvent:
    """One server-sent event.

    ``event`` is the event type (``"message"`` when the stream named none),
    ``data`` the data lines joined with ``"\\n"``, ``id`` the last event id seen
    on the stream (``""`` if none), ``retry`` the reconnection time in
    milliseconds when this event's block set one.
    """

    event: str
    data: str
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        """``data`` decoded as JSON (raises ``json.JSONDecodeError`` if it is not).

        What ``json.loads(data)`` returns, parsed by pydantic-core's parser (three times
        faster on a stream's small events); text that parser refuses (a lone surrogate
        escape, nesting deeper than its limit) is handed to ``json.loads``, whose answer
        or error stands.
        """
        try:
            return _from_json(self.data)
        except ValueError:
            return json.loads(self.data)


def _event(kind: str, data: str, id: str, retry: int | None) -> SSEEvent:
    """An SSEEvent made without attrs' frozen ``__init__`` (one per event on every stream):
    the decoder's values need no checks."""
    event = _new(SSEEvent)
    _set(event, "event", kind)
    _set(event, "data", data)
    _set(event, "id", id)
    _set(event, "retry", retry)
    return event


_new = object.__new__
_set = object.__setattr__
_EOL = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (WHATWG HTML, "Server-sent events").

    Feed bytes in any fragmentation; get the events completed so far. Lines end
    in CRLF, LF or CR (also a CR at the end of one chunk and the LF at the start
    of the next); UTF-8 may be split anywhere and invalid bytes decode to U+FFFD;
    a leading BOM is dropped; ``:`` lines are comments; one space after the colon
    is stripped; ``data`` lines are joined with ``"\\n"``; ``id`` with a NUL is
    ignored; ``retry`` must be ASCII digits; unknown fields are ignored; an
    event is dispatched on a blank line, and only when it has data.

    The decoder never raises on input. At the end of the stream call
    :meth:`finish`; :attr:`truncated` then says whether an event was cut off
    (data that no blank line completed): the caller decides what that means.
    """

    __slots__ = ("_data", "_decoder", "_event", "_last_id", "_parts", "_retry", "_skip_lf")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._parts: list[str] = []
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last ``id`` the stream set (``""`` if none)."""
        return self._last_id

    @property
    def truncated(self) -> bool:
        """True when data (or an unfinished, non-comment line) waits for a blank line."""
        if self._data or self._event:
            return True
        partial = "".join(self._parts)
        return bool(partial) and not partial.startswith(":")

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed (possibly none)."""
        return self._feed_text(self._decoder.decode(chunk))

    def finish(self) -> list[SSEEvent]:
        """Mark the end of the stream; flushes a partial UTF-8 sequence into the last line.

        Returns the events completed by that flush (in practice none: an event
        needs a blank line, and the end of the stream is not one).
        """
        return self._feed_text(self._decoder.decode(b"", final=True))

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\n" not in text and "\r" not in text:
            self._parts.append(text)
            return []
        if self._parts:
            self._parts.append(text)
            text = "".join(self._parts)
            self._parts.clear()
        if "\r" not in text:
            return self._feed_lf(text)
        events: list[SSEEvent] = []
        pos = 0
        end = len(text)
        for match in _EOL.finditer(text):
            line = text[pos : match.start()]
            pos = match.end()
            if pos == end and match.group() == "\r":
                self._skip_lf = True
            event = self._line(line)
            if event is not None:
                events.append(event)
        if pos < end:
            self._parts.append(text[pos:])
        return events

    def _feed_lf(self, text: str) -> list[SSEEvent]:
        """:meth:`_feed_text` for text whose lines all end in LF (what servers send): the
        whole read split at once, ``data`` lines and blank lines handled inline."""
        lines = text.split("\n")
        rest = lines.pop()  # after the last LF: an unfinished line, or ""
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(
                        _event(
                            self._event or "message", "\n".join(data), self._last_id, self._retry
                        )
                    )
                    data.clear()
                self._event = ""
                self._retry = None
            elif line.startswith("data:"):
                data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            elif line.startswith("event:"):
                self._event = line[7:] if line.startswith(" ", 6) else line[6:]
            elif line[0] != ":":
                self._line(line)
        if rest:
            self._parts.append(rest)
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            self._retry = None
            return None
        event = _event(self._event or "message", "\n".join(self._data), self._last_id, self._retry)
        self._data.clear()
        self._event = ""
        self._retry = None
        return event


def iter_sse(chunks: Iterable[bytes], decoder: SSEDecoder | None = None) -> Iterator[SSEEvent]:
    """Events from an iterable of byte chunks.

    An event cut off by the end of ``chunks`` is not yielded; pass your own
    ``decoder`` and check ``decoder.truncated`` afterwards to tell.
    """
    decoder = SSEDecoder() if decoder is None else decoder
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.finish()


async def aiter_sse(
    chunks: AsyncIterable[bytes], decoder: SSEDecoder | None = None
) -> AsyncIterator[SSEEvent]:
    """Events from an async iterable of byte chunks (see :func:`iter_sse`)."""
    decoder = SSEDecoder() if decoder is None else decoder
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.finish():
        yield event


publish(globals())
