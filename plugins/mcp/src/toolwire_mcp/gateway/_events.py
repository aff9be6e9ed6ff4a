"""The gateway's event store: what makes its Streamable HTTP streams resumable.

Each SSE event the gateway sends on a stream is kept (a priming event first, and the
``retry`` field tells the client how long to wait), so a client whose connection
dropped reconnects with ``Last-Event-ID`` and gets what it missed. Bounded: the newest
``per_stream`` events of each stream, at most ``max_streams`` streams (the oldest
forgotten first), at most ``max_bytes`` in all, and nothing older than ``ttl``
seconds. Event IDs are unguessable (a random stream key and a counter): a client can
resume only a stream it was sent.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

__all__ = ["BoundedEventStore"]


class BoundedEventStore(EventStore):
    def __init__(
        self,
        *,
        per_stream: int = 1000,
        max_streams: int = 10_000,
        max_bytes: int = 64 << 20,
        ttl: float = 600.0,
    ) -> None:
        self.per_stream = per_stream
        self.max_streams = max_streams
        self.max_bytes = max_bytes
        self.ttl = ttl
        # key -> (stream id, events (seq, time, size, message)); the key is in each event ID
        self._streams: OrderedDict[str, tuple[str, deque[tuple[int, float, int, Any]]]] = (
            OrderedDict()
        )
        self._keys: dict[str, str] = {}  # stream id -> key
        self._seq = 0
        self._bytes = 0

    async def store_event(self, stream_id: str, message: Any) -> str:
        key = self._keys.get(stream_id)
        if key is None:
            key = self._keys[stream_id] = secrets.token_urlsafe(12)
            self._streams[key] = (stream_id, deque())
        self._streams.move_to_end(key)
        events = self._streams[key][1]
        self._seq += 1
        size = _size(message)
        events.append((self._seq, time.monotonic(), size, message))
        self._bytes += size
        while len(events) > self.per_stream:
            self._bytes -= events.popleft()[2]
        self._evict()
        return f"{key}.{self._seq}"

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        key, _, seq_text = last_event_id.rpartition(".")
        found = self._streams.get(key)
        if found is None or not seq_text.isdigit():
            return None
        stream_id, events = found
        after = int(seq_text)
        cutoff = time.monotonic() - self.ttl
        for seq, at, _, message in list(events):
            if seq > after and at >= cutoff and message is not None:
                await send_callback(EventMessage(message, f"{key}.{seq}"))
        return stream_id

    def _evict(self) -> None:
        cutoff = time.monotonic() - self.ttl
        while self._streams and (
            len(self._streams) > self.max_streams or self._bytes > self.max_bytes
        ):
            self._drop(next(iter(self._streams)))
        for key in [k for k, (_, ev) in self._streams.items() if ev and ev[-1][1] < cutoff]:
            self._drop(key)

    def _drop(self, key: str) -> None:
        stream_id, events = self._streams.pop(key)
        self._keys.pop(stream_id, None)
        self._bytes -= sum(e[2] for e in events)


def _size(message: Any) -> int:
    if message is None:
        return 0
    dump = getattr(message, "model_dump_json", None)
    return len(dump(by_alias=True, exclude_none=True)) if dump is not None else 256
