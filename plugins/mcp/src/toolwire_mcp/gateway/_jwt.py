"""The gateway as an OAuth 2.1 resource server: bearer JWTs checked against the issuer's keys.

What the MCP authorization spec asks of a server, and what each check stops:

- the signature, against the issuer's JWKS (fetched over HTTPS with a deadline and a size
  limit, cached, fetched again for an unknown ``kid`` at most once per ``refresh`` seconds):
  a token nobody trusted signed;
- the algorithm, from a fixed list of asymmetric ones and matching the key's type and curve:
  ``alg: none``, and the HS256-signed-with-the-public-key confusion;
- ``iss`` (exactly the configured issuer), ``aud`` (this gateway's resource URL), ``exp``,
  ``nbf`` and ``iat`` (with a bounded leeway): a token for another server, or an old one;
- the scopes the gateway requires (RFC 6750 ``insufficient_scope``, a 403).

The claims name the principal (``sub``, ``name``, a groups claim, by configuration): the
policies decide by it. The verification is pyjwt's (with ``cryptography``), the library the
MCP SDK itself depends on; this module only chooses the key and the rules.
"""

from __future__ import annotations

import asyncio
import difflib
import ipaddress
import json
import logging
import os
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import jwt
from jwt.exceptions import PyJWTError

from toolwire import Principal
from toolwire.adapters import afetch_bounded
from toolwire.exceptions import FetchError, UsageError

__all__ = ["OAuthResource", "TokenRefused", "Verified", "load_oauth"]

logger = logging.getLogger("toolwire.mcp")

#: Asymmetric algorithms only: a resource server holds public keys, never a shared secret.
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_KEY_TYPE = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521", "EdDSA": "Ed25519"}
_MAX_FILE = 64 * 1024
#: A bearer token longer than this is refused unread (a JWT with a few claims is ~1 KB).
MAX_TOKEN = 16 * 1024


def _is_loopback(host: str | None) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _https(url: str, what: str) -> str:
    """``url``, when it is https (or http on this machine's loopback, for tests)."""
    if not isinstance(url, str):
        raise UsageError(f"{what} must be a URL, got {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment:
        raise UsageError(f"{what} must be an https URL without a fragment, got {url!r}")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise UsageError(f"{what} must be https (http only on 127.0.0.1), got {url!r}")
    return url


def _optional_https(_self: Any, attribute: Any, value: str | None) -> None:
    if value is not None:
        _https(value, attribute.name)


def _client_id(_self: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value or len(value) > 512 or not value.isprintable():
        raise UsageError(f"console: client_id must be the client's id, got {value!r}")


def _tuple_or_none(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class ConsoleClient:
    """The approval console as a client of the issuer (the ``[console]`` table): people
    sign in with the organisation's identity provider (authorization code with PKCE), and
    the access token it issues for the gateway's resource names the principal, as a
    bearer token does. ``client_id``: the console's registration at the issuer;
    ``client_secret_env``: the environment variable holding its secret (a confidential
    client; none: a public client, PKCE alone); ``redirect_uri``: where the issuer sends
    the browser back (default: the resource's origin and ``/console/oauth/callback``; it
    must be registered with the issuer); ``scopes``: asked for (default: the resource's)."""

    client_id: str = attrs.field(validator=_client_id)
    client_secret_env: str | None = None
    redirect_uri: str | None = attrs.field(default=None, validator=_optional_https)
    scopes: tuple[str, ...] | None = attrs.field(default=None, converter=_tuple_or_none)

    def secret(self) -> str | None:
        """The client's secret, read from its variable now; UsageError when unset."""
        if self.client_secret_env is None:
            return None
        found = os.environ.get(self.client_secret_env)
        if not found:
            raise UsageError(
                f"console: the environment variable {self.client_secret_env} (the console's "
                "client secret) is not set"
            )
        return found


def _console(value: Any) -> ConsoleClient | None:
    if value is None or isinstance(value, ConsoleClient):
        return value
    if not isinstance(value, Mapping):
        raise UsageError("[console] is a table: client_id, client_secret_env, redirect_uri, scopes")
    known = {f.name for f in attrs.fields(ConsoleClient)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise UsageError(f"[console]: unknown key(s) {', '.join(unknown)}")
    if not isinstance(value.get("client_id"), str):
        raise UsageError("[console]: `client_id` (the console's id at the issuer) is required")
    env = value.get("client_secret_env")
    if env is not None and (not isinstance(env, str) or not env):
        raise UsageError("[console]: `client_secret_env` names an environment variable")
    scopes = value.get("scopes")
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(v, str) and v for v in scopes)
    ):
        raise UsageError("[console]: `scopes` must be a list of strings")
    return ConsoleClient(**value)


@attrs.frozen
class OAuthResource:
    """How the gateway checks bearer JWTs (see :func:`load_oauth` for the file).

    ``issuer``: the authorization server (tokens' ``iss``, exactly); ``resource``: this
    gateway's URL as its clients reach it (tokens' ``aud``, and the RFC 9728 metadata's
    ``resource``); ``jwks_uri``: the issuer's keys (default: from its RFC 8414 or OpenID
    metadata); ``algorithms``: those accepted (asymmetric only); ``scopes``: each token
    must carry all of them; ``leeway``: seconds of clock difference allowed; ``claims``:
    which claims name the principal (``subject``, ``name``, ``groups``, ``client``; a
    dotted path reaches into an object, as ``realm_access.roles``).
    ``timeout`` bounds each fetch of the issuer's metadata or keys, ``max_bytes`` their
    size; keys are kept ``cache_seconds`` and fetched again for an unknown ``kid`` at most
    once per ``refresh_seconds``. ``require_at_jwt``: accept only tokens whose header
    ``typ`` says an access token (``at+jwt``, RFC 9068); without it ``JWT`` or no ``typ``
    is accepted too (what many issuers send), and any other type (an ID-JAG, a logout or
    DPoP token) never is.
    """

    issuer: str = attrs.field(validator=lambda _s, _a, v: _https(v, "issuer"))
    resource: str = attrs.field(validator=lambda _s, _a, v: _https(v, "resource"))
    jwks_uri: str | None = attrs.field(default=None, validator=_optional_https)
    algorithms: tuple[str, ...] = attrs.field(
        default=("RS256", "ES256", "PS256", "EdDSA"), converter=tuple
    )
    scopes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    leeway: float = 30.0
    claims: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = 5.0
    max_bytes: int = 256 * 1024
    cache_seconds: float = 300.0
    refresh_seconds: float = 30.0
    require_at_jwt: bool = False
    console: ConsoleClient | None = attrs.field(default=None, converter=_console)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.require_at_jwt, bool):
            raise UsageError(f"require_at_jwt must be true or false, got {self.require_at_jwt!r}")
        bad = [a for a in self.algorithms if a not in ALGORITHMS]
        if bad or not self.algorithms:
            raise UsageError(
                f"algorithms must be some of {', '.join(ALGORITHMS)} (asymmetric only), "
                f"got {', '.join(map(repr, bad)) or 'none'}"
            )
        for scope in self.scopes:
            if not isinstance(scope, str) or not scope or any(c in scope for c in ' "\\'):
                raise UsageError(f"scopes: {scope!r} is not a scope token")
        unknown = set(self.claims) - set(_CLAIMS)
        if unknown:
            raise UsageError(f"claims: unknown key(s) {', '.join(sorted(unknown))}")
        for name, value in (
            ("leeway", self.leeway),
            ("timeout", self.timeout),
            ("cache_seconds", self.cache_seconds),
            ("refresh_seconds", self.refresh_seconds),
        ):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise UsageError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if not 0 <= self.leeway <= 300:
            raise UsageError(f"leeway is at most 300 seconds, got {self.leeway!r}")
        if not 0 < self.timeout <= 60:
            raise UsageError(f"timeout must be in (0, 60] seconds, got {self.timeout!r}")
        if not isinstance(self.max_bytes, int) or not 1024 <= self.max_bytes <= 16 << 20:
            raise UsageError(f"max_bytes must be 1024..16 MiB, got {self.max_bytes!r}")

    def claim(self, which: str) -> str:
        """The claim (a dotted path) that holds ``which`` part of the principal."""
        return self.claims.get(which, _CLAIMS[which])

    @property
    def metadata_path(self) -> str:
        """Where RFC 9728 puts this resource's metadata: the well-known prefix, then the
        resource's path."""
        path = urlsplit(self.resource).path.rstrip("/")
        return "/.well-known/oauth-protected-resource" + path

    @property
    def metadata_url(self) -> str:
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 protected-resource metadata document."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_signing_alg_values_supported": list(self.algorithms),
            "resource_name": "toolwire MCP gateway",
        }
        if self.scopes:
            doc["scopes_supported"] = list(self.scopes)
        return doc


_CLAIMS = {"subject": "sub", "name": "name", "groups": "groups", "client": "azp"}
_FILE_KEYS = {f.name for f in attrs.fields(OAuthResource)}


def load_oauth(path: str | os.PathLike[str]) -> OAuthResource:
    """An :class:`OAuthResource` from a TOML file::

        issuer = "https://login.example.com/realms/acme"
        resource = "https://mcp.example.com/mcp"
        scopes = ["mcp:tools"]

        [claims]
        groups = "realm_access.roles"

    It says who may call, so it must be the user's own and not writable by others; a key
    that is not one of :class:`OAuthResource`'s is refused by name."""
    from toolwire_mcp._config import read_private_file

    p = Path(path).expanduser()
    raw = read_private_file(p, _MAX_FILE, "OAuth file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"OAuth file {p} is not TOML: {exc}") from None
    for key in data:
        if key not in _FILE_KEYS:
            close = difflib.get_close_matches(key, sorted(_FILE_KEYS), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise UsageError(f"OAuth file {p}: unknown key `{key}`{hint}")
    for key in ("issuer", "resource"):
        if not isinstance(data.get(key), str):
            raise UsageError(f"OAuth file {p}: `{key}` (a URL) is required")
    claims = data.get("claims", {})
    if not isinstance(claims, dict) or not all(isinstance(v, str) and v for v in claims.values()):
        raise UsageError(
            f"OAuth file {p}: [claims] maps subject, name, groups, client to claim names"
        )
    for key in ("algorithms", "scopes"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"OAuth file {p}: `{key}` must be a list of strings")
    try:
        return OAuthResource(**data)
    except UsageError as exc:
        raise UsageError(f"OAuth file {p}: {exc}") from None
    except TypeError as exc:  # a value of the wrong type where attrs passes it through
        raise UsageError(f"OAuth file {p}: {exc}") from None


@attrs.frozen
class Verified:
    """What a valid token says: whom, with which scopes, until when."""

    principal: Principal
    scopes: frozenset[str]
    expires_at: int | None
    client_id: str


class TokenRefused(Exception):
    """Why a request's token was not accepted: ``status`` 401 (``invalid_token``), 403
    (``insufficient_scope``) or 503 (the issuer's keys could not be had: not the
    client's fault, so it is not told to log in again)."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description


def _invalid(description: str) -> TokenRefused:
    return TokenRefused(401, "invalid_token", description)


def _unavailable() -> TokenRefused:
    return TokenRefused(503, "temporarily_unavailable", "the issuer's keys cannot be had now")


def _claim(claims: Mapping[str, Any], path: str) -> Any:
    found: Any = claims
    for part in path.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """RFC 9068's space-separated ``scope``, or the ``scp`` list some issuers send."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        return frozenset(scp.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


class JwtVerifier:
    """Checks bearer JWTs for one :class:`OAuthResource`; keeps the issuer's keys."""

    def __init__(self, resource: OAuthResource, *, clock: Any = time.monotonic) -> None:
        self.resource = resource
        self._clock = clock
        self._keys: dict[str, dict[str, Any]] = {}  # kid ("" for none) -> JWK
        self._built: dict[tuple[str, str], Any] = {}
        self._fetched = -float("inf")  # when the keys were last fetched
        self._tried = -float("inf")  # when a fetch was last tried (or failed)
        self._jwks_uri = resource.jwks_uri
        self._lock = asyncio.Lock()
        self._renewing: asyncio.Task[None] | None = None

    async def verify(self, token: str) -> Verified:
        """The token's principal and scopes, or :class:`TokenRefused` saying why not."""
        r = self.resource
        if len(token) > MAX_TOKEN:
            raise _invalid(f"the token is over {MAX_TOKEN:,} bytes")
        try:
            header = jwt.get_unverified_header(token)
        except PyJWTError:
            raise _invalid("the token is not a JWT") from None
        typ = header.get("typ")
        kind = typ.lower().removeprefix("application/") if isinstance(typ, str) else typ
        if kind != "at+jwt" and (r.require_at_jwt or kind not in (None, "jwt")):
            raise _invalid(f"the token's type {typ!r} is not an access token (at+jwt)")
        alg = header.get("alg")
        if alg not in r.algorithms:
            raise _invalid(f"the token's algorithm {alg!r} is not accepted")
        kid = header.get("kid", "")
        if not isinstance(kid, str):
            raise _invalid("the token's kid is not a string")
        key = self._key(kid, alg)
        if key is None:
            await self._refresh(stale_only=False)
            key = self._key(kid, alg)
            if key is None:
                raise _invalid("the token was not signed by a key of the issuer")
        elif self._clock() - self._fetched > r.cache_seconds and self._renewing is None:
            # Kept too long: fetched again in the background, while this token is checked
            # with the key at hand (an issuer that hangs then stalls no request).
            self._renewing = asyncio.get_running_loop().create_task(self._renew())
        audiences = [r.resource, r.resource.rstrip("/"), r.resource.rstrip("/") + "/"]
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=audiences,
                issuer=r.issuer,
                leeway=r.leeway,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            raise _invalid("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise _invalid("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise _invalid(f"the token is not for this resource ({r.resource})") from None
        except jwt.InvalidIssuerError:
            raise _invalid("the token is from another issuer") from None
        except jwt.MissingRequiredClaimError as exc:
            raise _invalid(f"the token has no `{exc.claim}` claim") from None
        except (PyJWTError, ValueError, TypeError):
            raise _invalid("the token's signature or claims are invalid") from None
        aud = claims.get("aud")
        others = [a for a in (aud if isinstance(aud, list) else [aud]) if a not in audiences]
        if others:
            # A token for this resource and another can be replayed by the other.
            raise _invalid(f"the token is also for another resource ({others[0]!r})")
        return self._verified(claims)

    def _verified(self, claims: Mapping[str, Any]) -> Verified:
        r = self.resource
        subject = _claim(claims, r.claim("subject"))
        if not isinstance(subject, str) or not subject:
            raise _invalid(f"the token has no `{r.claim('subject')}` claim naming its subject")
        name = _claim(claims, r.claim("name"))
        groups = _claim(claims, r.claim("groups"))
        if isinstance(groups, str):
            groups = [groups]
        client = _claim(claims, r.claim("client")) or claims.get("client_id") or ""
        try:
            principal = Principal(
                subject,
                name=name if isinstance(name, str) else "",
                groups=[g for g in groups if isinstance(g, str)]
                if isinstance(groups, list)
                else (),
                client=client if isinstance(client, str) else "",
                method="oauth",
            )
        except UsageError as exc:
            raise _invalid(f"the token's claims do not name a principal: {exc}") from None
        scopes = _scopes(claims)
        if not scopes.issuperset(r.scopes):
            raise TokenRefused(403, "insufficient_scope", f"required scope: {' '.join(r.scopes)}")
        exp = claims.get("exp")
        return Verified(
            principal,
            scopes,
            int(exp) if isinstance(exp, (int, float)) else None,
            principal.client,
        )

    # -- the issuer's keys ----------------------------------------------------------------

    def _key(self, kid: str, alg: str) -> Any:
        """The public key ``kid`` names, built for ``alg`` (None: none fits it)."""
        jwk = self._keys.get(kid)
        if jwk is None and not kid and len(self._keys) == 1:
            jwk = next(iter(self._keys.values()))  # no kid, one key: that one
        if jwk is None:
            return None
        if jwk.get("kty") != _KEY_TYPE[alg[:2]] or jwk.get("alg", alg) != alg:
            return None
        if alg in _CURVE and jwk.get("crv") != _CURVE[alg]:
            return None
        if jwk.get("use", "sig") != "sig":
            return None
        ops = jwk.get("key_ops")
        if isinstance(ops, list) and "verify" not in ops:
            return None
        built = self._built.get((kid, alg))
        if built is None:
            try:
                built = jwt.PyJWK(jwk, algorithm=alg).key
            except (PyJWTError, ValueError, TypeError):
                return None
            self._built[(kid, alg)] = built
        return built

    async def _renew(self) -> None:
        # Started only while keys are held, and keys are never dropped (a failed fetch
        # keeps them): _refresh cannot refuse here, it logs the failure and returns.
        try:
            await self._refresh(stale_only=True)
        finally:
            self._renewing = None

    async def _refresh(self, *, stale_only: bool) -> None:
        """Fetch the keys again, unless another request just did (or just failed to):
        at most once per ``refresh_seconds``, one fetch at a time. Without any key, a
        failure is a 503; with keys, they are kept and the failure logged."""
        r = self.resource
        async with self._lock:
            now = self._clock()
            if stale_only and now - self._fetched <= r.cache_seconds:
                return  # another request refreshed them while this one waited
            if now - self._tried < r.refresh_seconds:
                if not self._keys:
                    raise _unavailable()
                return
            self._tried = now
            try:
                keys = await asyncio.wait_for(self._fetch_keys(), r.timeout)
            except (TimeoutError, OSError, ValueError) as exc:
                reason = "it did not answer in time" if isinstance(exc, TimeoutError) else str(exc)
                logger.warning("the issuer's keys could not be fetched: %s", reason)
                if not self._keys:
                    raise _unavailable() from None
                return
            self._keys = keys
            self._built = {}
            self._fetched = self._clock()

    async def _fetch_keys(self) -> dict[str, dict[str, Any]]:
        r = self.resource
        if self._jwks_uri is None:
            self._jwks_uri = await self._discover()
        data = await _get_json(self._jwks_uri, r.max_bytes, r.timeout)
        entries = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"{self._jwks_uri} is not a JWK Set")
        keys: dict[str, dict[str, Any]] = {}
        for jwk in entries:
            if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "OKP"):
                continue  # symmetric or unknown keys are never used
            if "d" in jwk or "p" in jwk:
                continue  # a private key published by mistake: not used
            kid = jwk.get("kid", "")
            if isinstance(kid, str) and kid not in keys:
                keys[kid] = jwk
        if not keys:
            raise ValueError(f"{self._jwks_uri} holds no public signing key")
        return keys

    async def _discover(self) -> str:
        """The issuer's ``jwks_uri`` from its metadata (:func:`issuer_metadata`)."""
        doc = await issuer_metadata(self.resource)
        uri = doc.get("jwks_uri")
        if not isinstance(uri, str):
            raise ValueError("the issuer's metadata names no jwks_uri")
        try:
            return _https(uri, "the issuer's jwks_uri")
        except UsageError as exc:
            raise ValueError(str(exc)) from None


async def issuer_metadata(resource: OAuthResource) -> dict[str, Any]:
    """The issuer's metadata: RFC 8414's well-known URL, then OpenID Connect's; the
    document must name the configured issuer exactly. ValueError saying what was tried."""
    parts = urlsplit(resource.issuer)
    path = parts.path.rstrip("/")
    base = f"{parts.scheme}://{parts.netloc}"
    tried: list[str] = []
    for url in (
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}{path}/.well-known/openid-configuration",
    ):
        try:
            doc = await _get_json(url, resource.max_bytes, resource.timeout)
        except (OSError, ValueError) as exc:
            tried.append(f"{url}: {exc}")
            continue
        if not isinstance(doc, dict) or doc.get("issuer") != resource.issuer:
            tried.append(f"{url}: names another issuer")
            continue
        return doc
    raise ValueError("no usable issuer metadata (" + "; ".join(tried) + ")")


async def _get_json(url: str, limit: int, timeout: float) -> Any:
    """The JSON at ``url``: a 200, at most ``limit`` bytes as it is decompressed, within
    ``timeout`` (the one bounded fetch: a compressed bomb is refused as it grows)."""
    try:
        got = await afetch_bounded(
            "GET",
            url,
            limit=limit,
            timeout=timeout,
            headers={"Accept": "application/json"},
            what=url,
        )
    except FetchError as exc:
        raise ValueError(str(exc)) from None
    if got.status != 200:
        raise ValueError(f"{url} answered {got.status}")
    try:
        return json.loads(got.body)
    except ValueError:
        raise ValueError(f"{url} is not JSON") from None
