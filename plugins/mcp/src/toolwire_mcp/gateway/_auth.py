"""Who may call the gateway, and as whom: the HTTP guard in front of the MCP app.

Three ways in, any of them configured: one shared bearer token (``--token-env``), a file
of tokens by SHA-256 each naming a principal (``--tokens``), and bearer JWTs from an
OAuth 2.1 authorization server (``--oauth``, :mod:`toolwire_mcp.gateway._jwt`). A request the
guard accepts carries its principal to the policies (the request's state) and to the
SDK's session binding (``scope["user"]``: a session is usable only with the credential of
the principal that opened it); one it refuses never reaches the MCP app.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from toolwire import Principal
from toolwire.exceptions import UsageError
from toolwire_mcp.gateway._jwt import JwtVerifier, OAuthResource, TokenRefused

__all__ = ["PRINCIPAL_STATE", "guarded", "load_tokens", "principal_of", "principal_of_scope"]

_ASGI = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]

#: Where the guard leaves the principal a request's token names (Starlette's request state).
PRINCIPAL_STATE = "toolwire_principal"

#: The principal of the request being served, for code the SDK calls without the request
#: (its tool-schema lookup); None outside a request or without credentials.
CURRENT_PRINCIPAL: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "toolwire_mcp_principal", default=None
)


def principal_of(ctx: Any) -> Principal | None:
    """The principal the HTTP request behind ``ctx`` was authenticated as (None: none)."""
    return principal_of_scope(getattr(getattr(ctx, "request", None), "scope", None))


def principal_key(ctx: Any) -> str:
    """The principal behind ``ctx`` as one comparable text ("" for none): what binds
    something to whoever asked for it (an approval answered across two requests, a task)."""
    principal = principal_of(ctx)
    return "" if principal is None else json.dumps(principal.to_dict(), sort_keys=True)


def principal_of_scope(scope: Any) -> Principal | None:
    """The principal an ASGI request ``scope`` was authenticated as (None: none)."""
    state = scope.get("state") if isinstance(scope, Mapping) else None
    found = state.get(PRINCIPAL_STATE) if isinstance(state, Mapping) else None
    return found if isinstance(found, Principal) else None


def _quoted(text: str) -> str:
    """``text`` as an RFC 7235 quoted string (no quote or backslash inside)."""
    return '"' + re.sub(r'["\\\x00-\x1f\x7f]', "", text) + '"'


def guarded(
    app: _ASGI,
    *,
    token: str | None,
    max_bytes: int,
    principals: Mapping[str, Principal] | None = None,
    oauth: OAuthResource | None = None,
) -> _ASGI:
    """The ASGI app behind the gateway's credentials and a request-size bound.

    ``token``: one shared bearer token (no principal). ``principals``: SHA-256 of a token
    -> whom it names. ``oauth``: bearer JWTs checked against the issuer's keys, the
    RFC 9728 metadata served at its well-known URL, refusals as RFC 6750 says (401
    ``invalid_token``, 403 ``insufficient_scope``, each naming the metadata). With none
    of them, every request passes."""
    expected = token.encode() if token else None
    verifier = JwtVerifier(oauth) if oauth is not None else None
    metadata_paths = (
        {oauth.metadata_path, "/.well-known/oauth-protected-resource"} if oauth else set()
    )
    metadata = json.dumps(oauth.metadata()).encode() if oauth else b""
    required = expected is not None or principals is not None or verifier is not None

    def challenge(error: str = "", description: str = "") -> bytes:
        parts = ['Bearer realm="toolwire-mcp"']
        if error:
            parts.append(f"error={_quoted(error)}")
        if description:
            parts.append(f"error_description={_quoted(description)}")
        if oauth is not None:
            parts.append(f"resource_metadata={_quoted(oauth.metadata_url)}")
            if oauth.scopes:
                parts.append(f"scope={_quoted(' '.join(oauth.scopes))}")
        return ", ".join(parts).encode()

    async def guarded_app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope.get("path") in metadata_paths:
            await _metadata(send, scope.get("method", ""), metadata)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"")
        principal = None
        issuer = "token"
        if principals is not None:
            principal = principals.get(_token_digest(given))
        if (
            principal is None
            and verifier is not None
            and not (expected is not None and _bearer_ok(given, expected))
        ):
            bearer = _bearer(given)
            if bearer:
                try:
                    verified = await verifier.verify(bearer.decode("ascii"))
                except UnicodeDecodeError:
                    verified = None
                    refused = TokenRefused(401, "invalid_token", "the token is not a JWT")
                except TokenRefused as exc:
                    verified, refused = None, exc
                if verified is None:
                    await _refuse(send, refused, challenge)
                    return
                principal, issuer = verified.principal, oauth.issuer if oauth else ""
        if (
            required
            and principal is None
            and not (expected is not None and _bearer_ok(given, expected))
        ):
            # RFC 6750: say which scheme is wanted, so a client does not guess (the
            # Inspector assumed OAuth without it); with OAuth, where to learn how.
            await _plain(
                send,
                401,
                b"a bearer token is required",
                [(b"www-authenticate", challenge())],
            )
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > max_bytes):
            await _plain(send, 413, b"request too large")
            return
        if principal is None:
            await app(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        scope["user"] = _user(principal, issuer, given)
        reset = CURRENT_PRINCIPAL.set(principal)
        try:
            await app(scope, receive, send)
        finally:
            CURRENT_PRINCIPAL.reset(reset)

    return guarded_app


def _user(principal: Principal, issuer: str, given: bytes) -> Any:
    """The SDK's authenticated user for ``principal``: its streamable HTTP transport lets
    a session be used only by the (client, issuer, subject) that opened it."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(
        AccessToken(
            token=_token_digest(given),  # the digest: the token itself is not kept
            client_id=principal.client or "mcp",
            scopes=[],
            subject=principal.subject,
            claims={"iss": issuer},
        )
    )


async def _refuse(send: Any, refused: TokenRefused, challenge: Callable[..., bytes]) -> None:
    body = json.dumps({"error": refused.error, "error_description": refused.description})
    headers = [(b"content-type", b"application/json")]
    if refused.status == 503:
        headers.append((b"retry-after", b"30"))
    else:
        headers.append((b"www-authenticate", challenge(refused.error, refused.description)))
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})


async def _metadata(send: Any, method: str, body: bytes) -> None:
    """RFC 9728 metadata, readable from a browser (a web client discovers it too)."""
    cors = [
        (b"access-control-allow-origin", b"*"),
        (b"access-control-allow-methods", b"GET, OPTIONS"),
        (b"access-control-allow-headers", b"mcp-protocol-version"),
    ]
    if method == "OPTIONS":
        await send({"type": "http.response.start", "status": 204, "headers": cors})
        await send({"type": "http.response.body", "body": b""})
        return
    if method not in ("GET", "HEAD"):
        await _plain(send, 405, b"method not allowed", [(b"allow", b"GET, OPTIONS"), *cors])
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"cache-control", b"max-age=3600"),
                *cors,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


def _bearer(header: bytes) -> bytes:
    """The token of an ``Authorization: Bearer`` header (b"" without one)."""
    scheme, _, given = header.strip().partition(b" ")
    return given.strip() if scheme.lower() == b"bearer" else b""


_MAX_TOKENS_FILE = 1024 * 1024


def load_tokens(path: str | os.PathLike[str]) -> dict[str, Principal]:
    """The tokens a gateway accepts: ``{"tokens": [{"sha256": "sha256:<hex of the
    token>", "subject": "alice", "name": "Alice", "groups": ["ops"]}, ...]}``. The file
    holds no token, only digests (``printf %s "$TOKEN" | sha256sum``); it must be the
    user's own and not writable by others (it says who may call). A malformed entry is a
    UsageError naming it."""
    from toolwire_mcp._config import read_private_file

    p = Path(path).expanduser()
    raw = read_private_file(p, _MAX_TOKENS_FILE, "tokens file")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"tokens file {p} is not JSON: {exc}") from None
    entries = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UsageError(f'tokens file {p}: expected {{"tokens": [...]}}')
    found: dict[str, Principal] = {}
    for i, entry in enumerate(entries):
        where = f"tokens file {p}: tokens[{i}]"
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            raise UsageError(f'{where}: "sha256" must be "sha256:" and 64 hex digits')
        if digest in found:
            raise UsageError(f"{where}: that token is listed twice")
        unknown = set(entry) - {"sha256", "subject", "name", "groups"}
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        try:
            found[digest] = Principal(
                entry.get("subject"),  # checked by Principal
                name=entry.get("name", ""),
                groups=entry.get("groups", ()),
                client="mcp",
                method="token",
            )
        except UsageError as exc:
            raise UsageError(f"{where}: {exc}") from None
    return found


def _token_digest(header: bytes) -> str:
    """``sha256:<hex>`` of the bearer token in an Authorization header ("" without one):
    tokens are looked up by digest, so the file holds none and a lookup leaks nothing."""
    scheme, _, given = header.strip().partition(b" ")
    if scheme.lower() != b"bearer" or not given.strip():
        return ""
    return "sha256:" + hashlib.sha256(given.strip()).hexdigest()


def _bearer_ok(header: bytes, expected: bytes) -> bool:
    """``Authorization: Bearer <token>``, the scheme matched case-insensitively (RFC 7235)
    and the token in constant time."""
    scheme, _, given = header.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), expected)


async def _plain(
    send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": body})
