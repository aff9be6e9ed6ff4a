"""How many Streamable HTTP sessions the gateway keeps, for how long, and for whom.

A 2025-11-25 client opens a session and may go away without closing it. The SDK keeps
each for its idle timeout (30 minutes by default, ~36 KB each) up to 10,000, after which
every new client got a 503 with no word of when to come back. The gateway sets:

- an idle timeout the operator chooses (:data:`SESSION_IDLE`, 5 minutes, by default);
- a total (:data:`MAX_SESSIONS`), the SDK's own cap;
- a cap per principal, or per client address when the request names nobody
  (:data:`SESSIONS_PER_CLIENT`), so one runaway client cannot take every session;
- ``Retry-After`` on every 503 it answers for these reasons.

The per-client count follows the sessions it admitted: a ``DELETE`` ends one, and one
that sent nothing for the idle timeout is gone (the SDK reaps it then too).
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from toolwire_mcp.gateway._auth import principal_of_scope

__all__ = ["MAX_SESSIONS", "SESSIONS_PER_CLIENT", "SESSION_IDLE", "session_limits"]

#: Seconds a session that sent nothing is kept.
SESSION_IDLE = 300.0
#: Sessions open at once, in all.
MAX_SESSIONS = 1000
#: Sessions open at once for one principal (or one address, unauthenticated).
SESSIONS_PER_CLIENT = 64

_Scope = MutableMapping[str, Any]
_ASGI = Callable[
    [_Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


def _owner(scope: _Scope) -> str:
    principal = principal_of_scope(scope)
    if principal is not None:
        return f"principal {principal.method}:{principal.subject}"
    client = scope.get("client")
    return f"address {client[0]}" if client else "address unknown"


def _header(scope: _Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def session_limits(
    app: _ASGI,
    *,
    idle: float = SESSION_IDLE,
    per_client: int = SESSIONS_PER_CLIENT,
    clock: Callable[[], float] = time.monotonic,
) -> _ASGI:
    """``app`` (the gateway's Streamable HTTP app) with its sessions counted per client:
    a request that would open one more than ``per_client`` is answered 503 with
    ``Retry-After``, and every other 503 gets ``Retry-After`` too."""
    #: session id -> (owner, when it was last seen)
    seen: dict[str, tuple[str, float]] = {}
    retry_after = str(max(1, min(int(idle), 60))).encode()

    def prune(now: float) -> None:
        for sid in [s for s, (_, last) in seen.items() if now - last > idle]:
            del seen[sid]

    def count(owner: str) -> int:
        return sum(1 for o, _ in seen.values() if o == owner)

    async def refuse(send: Callable[[Any], Awaitable[None]], owner: str) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32000,
                    "message": f"too many open sessions for this client ({per_client}); "
                    f"close one, or retry after {retry_after.decode()} s",
                },
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", retry_after),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def limited(
        scope: _Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        now = clock()
        prune(now)
        sid = _header(scope, b"mcp-session-id")
        owner = _owner(scope)
        opening = sid is None and scope.get("method") == "POST"
        if sid is not None:
            if sid in seen:
                seen[sid] = (seen[sid][0], now)
            if scope.get("method") == "DELETE":
                seen.pop(sid, None)
        elif opening and count(owner) >= per_client:
            await refuse(send, owner)
            return

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers") or ())
                status = message.get("status")
                if status == 503 and not any(k.lower() == b"retry-after" for k, _ in headers):
                    headers.append((b"retry-after", retry_after))
                    message = {**message, "headers": headers}
                if opening and status is not None and status < 400:
                    made = next(
                        (v.decode("latin-1") for k, v in headers if k.lower() == b"mcp-session-id"),
                        None,
                    )
                    if made is not None:
                        seen[made] = (owner, clock())
            await send(message)

        await app(scope, receive, sending)

    return limited
