"""Signing in to the approval console with the organisation's identity provider: the
authorization-code flow with PKCE (RFC 7636), the console a client of the issuer the
gateway's OAuth file names (its ``[console]`` table).

The browser is sent to the issuer's ``authorization_endpoint`` with a fresh ``state``
(bound to the browser by a cookie, so a code meant for one browser cannot sign in
another) and a PKCE challenge; the code it brings back is exchanged once, within a
deadline and a size limit, at the ``token_endpoint`` for an access token for the
gateway's resource (RFC 8707 ``resource``), and that token is checked exactly as the
gateway checks a bearer token (:class:`JwtVerifier`: issuer, audience, signature,
expiry, scopes), so the person signed in is the principal the gateway would see.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from toolwire import Principal
from toolwire.adapters import afetch_bounded
from toolwire.exceptions import FetchError, UsageError
from toolwire_mcp.gateway._jwt import (
    ConsoleClient,
    JwtVerifier,
    OAuthResource,
    TokenRefused,
    issuer_metadata,
)

__all__ = ["SignInError", "SignIn"]

#: How long a sign-in may take between leaving for the issuer and coming back (seconds).
FLOW_SECONDS = 600.0
#: Sign-ins under way at once (past it, the oldest are forgotten).
MAX_FLOWS = 1000
#: The most a token response may hold (bytes).
MAX_TOKEN_RESPONSE = 64 * 1024
CALLBACK = "/oauth/callback"


class SignInError(Exception):
    """Why a sign-in did not complete (said to the person; never a secret)."""


class SignIn:
    """The console's OAuth sign-in for one :class:`OAuthResource` with a ``[console]``."""

    def __init__(
        self,
        resource: OAuthResource,
        verifier: JwtVerifier | None = None,
        *,
        origin: str | None = None,
    ) -> None:
        if resource.console is None:
            raise UsageError("the OAuth file has no [console] table (the console's client_id)")
        self.resource = resource
        self.client: ConsoleClient = resource.console
        self.client.secret()  # said at start, not at the first sign-in
        self.verifier = verifier or JwtVerifier(resource)
        self._flows: dict[str, tuple[str, float]] = {}  # state -> (PKCE verifier, when)
        self._endpoints: tuple[str, str] | None = None
        parts = urlsplit(resource.resource)
        #: Where the console is served (scheme and host): the resource's, beside a gateway.
        self.origin = origin or f"{parts.scheme}://{parts.netloc}"

    @property
    def issuer(self) -> str:
        return self.resource.issuer

    def redirect_uri(self, base: str) -> str:
        """Where the issuer sends the browser back: the configured one, else the
        console's origin (the resource's, beside a gateway), its ``base`` and the
        callback."""
        if self.client.redirect_uri is not None:
            return self.client.redirect_uri
        return f"{self.origin}{base}{CALLBACK}"

    async def _issuer_endpoints(self) -> tuple[str, str]:
        if self._endpoints is None:
            try:
                doc = await issuer_metadata(self.resource)
            except ValueError as exc:
                raise SignInError(f"the identity provider cannot be reached: {exc}") from None
            found = []
            for key in ("authorization_endpoint", "token_endpoint"):
                value = doc.get(key)
                if not isinstance(value, str):
                    raise SignInError(f"the identity provider's metadata has no {key}")
                from toolwire_mcp.gateway._jwt import _https

                try:
                    found.append(_https(value, f"the issuer's {key}"))
                except UsageError as exc:
                    raise SignInError(str(exc)) from None
            self._endpoints = (found[0], found[1])
        return self._endpoints

    async def start(self, base: str) -> tuple[str, str]:
        """Begin a sign-in: (the issuer's authorization URL to send the browser to, the
        ``state`` to bind to the browser in a cookie)."""
        authorize, _ = await self._issuer_endpoints()
        now = time.monotonic()
        for key in [k for k, (_, t) in self._flows.items() if t < now - FLOW_SECONDS]:
            del self._flows[key]
        while len(self._flows) >= MAX_FLOWS:
            del self._flows[next(iter(self._flows))]
        state = secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        self._flows[state] = (verifier, now)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest())
            .rstrip(b"=")
            .decode("ascii")
        )
        scopes = self.client.scopes if self.client.scopes is not None else self.resource.scopes
        query = {
            "response_type": "code",
            "client_id": self.client.client_id,
            "redirect_uri": self.redirect_uri(base),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": self.resource.resource,
        }
        if scopes:
            query["scope"] = " ".join(scopes)
        joiner = "&" if urlsplit(authorize).query else "?"
        return f"{authorize}{joiner}{urlencode(query)}", state

    async def finish(self, base: str, code: str, state: str, bound: str) -> Principal:
        """Complete a sign-in from the issuer's redirect: ``state`` must be the one this
        browser's cookie holds (``bound``) and under way; the code is exchanged once."""
        if not state or not hmac.compare_digest(state.encode(), bound.encode()):
            raise SignInError("this sign-in was not started in this browser; sign in again")
        flow = self._flows.pop(state, None)
        if flow is None or flow[1] < time.monotonic() - FLOW_SECONDS:
            raise SignInError("this sign-in is unknown or took too long; sign in again")
        if not code or len(code) > 4096:
            raise SignInError("the identity provider sent no usable code")
        _, token_url = await self._issuer_endpoints()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri(base),
            "client_id": self.client.client_id,
            "code_verifier": flow[0],
            "resource": self.resource.resource,
        }
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        secret = self.client.secret()
        if secret is not None:  # client_secret_basic (RFC 6749 2.3.1)
            from urllib.parse import quote

            pair = f"{quote(self.client.client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        try:
            got = await afetch_bounded(
                "POST",
                token_url,
                limit=MAX_TOKEN_RESPONSE,
                timeout=self.resource.timeout,
                headers=headers,
                content=urlencode(form).encode("ascii"),
                what="the identity provider's token endpoint",
            )
        except FetchError as exc:
            raise SignInError(f"the identity provider did not answer: {exc}") from None
        try:
            doc: Any = json.loads(got.body)
        except ValueError:
            doc = None
        if got.status != 200 or not isinstance(doc, dict):
            said = doc.get("error") if isinstance(doc, dict) else None
            why = f" ({said})" if isinstance(said, str) and said.isprintable() else ""
            raise SignInError(f"the identity provider refused the sign-in: {got.status}{why[:200]}")
        token = doc.get("access_token")
        if not isinstance(token, str) or not token:
            raise SignInError("the identity provider's answer holds no access token")
        try:
            verified = await self.verifier.verify(token)
        except TokenRefused as exc:
            raise SignInError(f"the identity provider's token is not accepted: {exc}") from None
        return verified.principal
