"""OAuth 2.1 for remote MCP servers, through the SDK's OAuth client.

A server configured with ``auth="oauth"`` (``"auth": "oauth"`` in ``mcpServers``) is
reached the way the MCP authorization spec says: on its 401 the SDK discovers the
protected resource's and the authorization server's metadata, registers this client
(dynamic client registration, or the client ID the configuration gives), sends the user
to log in (authorization code with PKCE), exchanges the code for tokens and refreshes
them when they expire.

What toolwire adds: where the user logs in (:func:`set_login_handler`; by default a
browser opened on the authorization URL, with the answer taken by a one-shot server on
127.0.0.1), and where the tokens live: one file per server URL under
``$XDG_CONFIG_HOME/toolwire/mcp-oauth/`` (directory 0700, files 0600, written
atomically; a file that is not ours, is too large or is malformed is ignored, never
trusted), never in a log, a repr or an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
import os
import socket
import sys
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Union
from urllib.parse import parse_qs, urlsplit

from mcp.shared.exceptions import MCPDeprecationWarning

from toolwire.adapters import afetch_bounded, write_private
from toolwire.exceptions import FetchError
from toolwire_mcp._config import ConfigError, ServerSpec, _user_dir, private_bytes
from toolwire_mcp.client._slot import Slot

__all__ = [
    "IdTokenProvider",
    "adiscover_authorization_server",
    "discover_authorization_server",
    "LoginAnswer",
    "LoginHandler",
    "login_handler",
    "set_id_token_provider",
    "set_login_handler",
    "token_path",
]

logger = logging.getLogger("toolwire.mcp")

_MAX_FILE = 64 << 10
LOGIN_TIMEOUT = 300.0

LoginAnswer = Union[tuple[str, Union[str, None]], str, None]
"""What a login handler returns: ``(code, state)``, the ``code`` and ``state`` query
parameters the redirect to the redirect URI brought (``state`` None when it brought
none); or the code alone (no state to check); or None: the user did not log in (the
connection fails, saying so)."""
LoginHandler = Callable[[str, str], Union[LoginAnswer, Awaitable[LoginAnswer]]]
"""``handler(server, authorization_url)``: send the user there and return what came back
to the redirect URI (sync or async)."""

_HANDLER: Slot[LoginHandler] = Slot("login handler")

IdTokenProvider = Callable[[str], Union[str, Awaitable[str]]]
"""``provider(server)``: the user's current ID token from the enterprise identity provider
(sync or async), for a server with ``auth="cross_app"``."""

_ID_TOKEN: Slot[IdTokenProvider] = Slot("ID token provider")


def set_id_token_provider(provider: IdTokenProvider | None) -> None:
    """Where ``auth="cross_app"`` servers get the user's ID token (None: from the variable
    the server's ``idp_id_token_env`` names)."""
    _ID_TOKEN.set(provider)


def set_login_handler(handler: LoginHandler | None) -> None:
    """Send users to log in with ``handler`` (None: the browser, the default).

    ``handler(server, authorization_url)`` (sync or async) sends the user to the URL and
    returns a :data:`LoginAnswer`: ``(code, state)`` from the redirect, the code alone, or
    None when the user did not log in::

        from urllib.parse import parse_qs, urlsplit

        def login(server: str, url: str) -> tuple[str, str | None] | None:
            redirected = my_ui.open_and_wait(url)  # the URL the redirect landed on
            query = parse_qs(urlsplit(redirected).query)
            if "code" not in query:
                return None
            return query["code"][0], query.get("state", [None])[0]
    """
    _HANDLER.set(handler)


def login_handler() -> LoginHandler | None:
    return _HANDLER.get()


def token_path(url: str) -> Path:
    """Where the tokens of the server at ``url`` are kept."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]
    return _user_dir() / "mcp-oauth" / f"{digest}.json"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` on one 0600 file per server (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = token_path(url)

    def __repr__(self) -> str:
        return f"<FileTokenStorage for {self.url!r}>"

    def _read(self) -> dict[str, Any]:
        try:
            raw = private_bytes(self.path, _MAX_FILE, secret=True)  # a secret: ours alone
        except ConfigError as exc:
            logger.warning("MCP OAuth: %s", exc)
            return {}
        except OSError as exc:
            logger.warning("MCP OAuth: cannot read %s: %s", self.path, exc.strerror)
            return {}
        if raw is None:
            return {}
        if len(raw) > _MAX_FILE:
            logger.warning("MCP OAuth: %s is too large: ignored", self.path)
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            logger.warning("MCP OAuth: %s is malformed: ignored", self.path)
            return {}
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}
        return data

    def _write(self, **changes: Any) -> None:
        data = self._read()
        data.update(changes, url=self.url)
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)  # one made earlier, or under a loose umask: private again
        write_private(self.path, json.dumps(data))

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: Any) -> None:
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    def redirect_port(self) -> int | None:
        port = self._read().get("port")
        return port if isinstance(port, int) and 0 < port < 65536 else None

    def set_redirect_port(self, port: int) -> None:
        self._write(port=port)


class _PresetClient(FileTokenStorage):
    """A client registered beforehand (``oauth_client_id``): no dynamic registration."""

    def __init__(self, url: str, client_id: str, secret: str | None, redirect: str) -> None:
        super().__init__(url)
        self._client = (client_id, secret, redirect)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        client_id, secret, redirect = self._client
        return OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=[redirect],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )

    async def set_client_info(self, client_info: Any) -> None:
        return None


def _free_port(preferred: int | None) -> int:
    for port in (preferred, 0):
        if port is None:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free port on 127.0.0.1 for the OAuth redirect")


def auth_for(spec: ServerSpec) -> Any:
    """The ``httpx`` auth of an ``auth="oauth"`` server: the SDK's OAuth client provider."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    assert spec.url is not None
    if spec.auth == "client_credentials":
        return _service_auth(spec)
    if spec.auth == "cross_app":
        return _cross_app_auth(spec)
    storage = FileTokenStorage(spec.url)
    port = _free_port(storage.redirect_port())
    if port != storage.redirect_port():
        storage.set_redirect_port(port)
    redirect = f"http://127.0.0.1:{port}/callback"
    if spec.oauth_client_id:
        secret = os.environ.get(spec.oauth_client_secret_env or "") or None
        if spec.oauth_client_secret_env and secret is None:
            raise ConfigError(
                f"MCP server `{spec.name}`: the environment variable "
                f"{spec.oauth_client_secret_env} (its OAuth client secret) is not set"
            )
        storage = _PresetClient(spec.url, spec.oauth_client_id, secret, redirect)
    metadata = OAuthClientMetadata(
        client_name="toolwire",
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",  # a public client: no secret to keep
        scope=spec.oauth_scope,
    )
    asked: list[str] = []

    async def redirect_handler(url: str) -> None:
        asked.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        if not asked:
            raise RuntimeError("no authorization URL to send the user to")
        answer = await _login(spec.name, asked.pop(), port)
        if answer is None:
            raise RuntimeError(f"MCP server `{spec.name}`: the login was not completed")
        code, state = answer
        return AuthorizationCodeResult(code=code, state=state)

    try:
        return OAuthClientProvider(
            spec.url,
            metadata,
            storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=spec.oauth_client_metadata_url,
        )
    except ValueError as exc:  # the metadata URL is not an HTTPS URL with a path
        raise ConfigError(f"MCP server `{spec.name}`: {exc}") from None


def _secret(spec: ServerSpec, variable: str | None, what: str) -> str | None:
    if not variable:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ConfigError(
            f"MCP server `{spec.name}`: the environment variable {variable} ({what}) is not set"
        )
    return value


def _service_auth(spec: ServerSpec) -> Any:
    """The client-credentials grant (a service logging in as itself, no user): with a
    secret (client_secret_basic) or a private key signing JWT assertions (private_key_jwt,
    RFC 7523)."""
    assert spec.url is not None
    assert spec.oauth_client_id is not None
    if spec.oauth_issuer is None:
        logger.warning(
            "MCP server `%s`: no oauthIssuer: the server decides which authorization "
            "server receives this client's credentials; name it to send them there only",
            spec.name,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # said above, in our terms
        return _service_provider(spec)


def _service_provider(spec: ServerSpec) -> Any:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert spec.url is not None
    assert spec.oauth_client_id is not None
    storage = FileTokenStorage(spec.url)
    key = _secret(spec, spec.oauth_private_key_env, "its OAuth private key")
    if key is not None:
        signer = SignedJWTParameters(
            issuer=spec.oauth_client_id,
            subject=spec.oauth_client_id,
            signing_key=key,
            signing_algorithm=spec.oauth_signing_algorithm,
        )
        return PrivateKeyJWTOAuthProvider(
            spec.url,
            storage,
            spec.oauth_client_id,
            signer.create_assertion_provider(),
            scope=spec.oauth_scope,
            issuer=spec.oauth_issuer,
        )
    secret = _secret(spec, spec.oauth_client_secret_env, "its OAuth client secret")
    assert secret is not None
    return ClientCredentialsOAuthProvider(
        spec.url,
        storage,
        spec.oauth_client_id,
        secret,
        scope=spec.oauth_scope,
        issuer=spec.oauth_issuer,
    )


# -- enterprise-managed authorization (SEP-990, cross-app access) -----------------------------

_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
_ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
_MAX_IDP_ANSWER = 64 << 10
IDP_TIMEOUT = 30.0


def _cross_app_auth(spec: ServerSpec) -> Any:
    """Leg 2 is the SDK's (the ID-JAG presented to the configured authorization server with
    the jwt-bearer grant, client_secret_basic); leg 1 is here: the user's ID token exchanged
    at the enterprise identity provider for an ID-JAG for that server (RFC 8693)."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    assert spec.url is not None
    assert spec.oauth_client_id is not None
    assert spec.oauth_issuer is not None
    secret = _secret(spec, spec.oauth_client_secret_env, "its OAuth client secret")
    assert secret is not None

    async def id_jag(audience: str, resource: str) -> str:
        return await exchange_for_id_jag(spec, audience, resource)

    return IdentityAssertionOAuthProvider(
        spec.url,
        FileTokenStorage(spec.url),
        spec.oauth_client_id,
        secret,
        spec.oauth_issuer,
        id_jag,
        scope=spec.oauth_scope,
        token_endpoint_auth_method="client_secret_basic",  # every server must take it
    )


#: The most a protected resource's metadata document may be.
_MAX_RESOURCE_METADATA = 64 << 10


async def adiscover_authorization_server(url: str, *, timeout: float = IDP_TIMEOUT) -> str:
    """The authorization server an MCP server at ``url`` names in its protected-resource
    metadata (RFC 9728: ``/.well-known/oauth-protected-resource`` with the server's path,
    then at the root): its first ``authorization_servers`` entry, an https URL (or http on
    127.0.0.1 / localhost). For an application that looks it up once and pins it as
    ``ServerSpec(..., auth="cross_app", oauth_issuer=...)``: toolwire never takes it
    from the server by itself, as the ID-JAG and the client secret go to that server.
    Bounded (no redirect, ``timeout`` seconds, 64 KiB); ConfigError saying what failed."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(f"{url!r} is not an MCP server's http(s) URL")
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    tried = []
    for where in dict.fromkeys(
        (f"/.well-known/oauth-protected-resource{path}", "/.well-known/oauth-protected-resource")
    ):
        tried.append(origin + where)
        try:
            answer = await afetch_bounded(
                "GET",
                origin + where,
                limit=_MAX_RESOURCE_METADATA,
                timeout=timeout,
                headers={"Accept": "application/json"},
                what=f"{url}'s protected-resource metadata",
            )
        except FetchError as exc:
            raise ConfigError(f"{url}: its protected-resource metadata: {exc}") from None
        if answer.status != 200:
            continue
        try:
            data = json.loads(answer.body)
        except ValueError:
            raise ConfigError(f"{origin + where}: the metadata is not JSON") from None
        servers = data.get("authorization_servers") if isinstance(data, dict) else None
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise ConfigError(f"{origin + where}: the metadata names no authorization server")
        issuer = servers[0]
        named = urlsplit(issuer)
        local = named.hostname in ("127.0.0.1", "localhost", "::1")
        if not (named.scheme == "https" or (named.scheme == "http" and local)) or not named.netloc:
            raise ConfigError(
                f"{origin + where}: the authorization server {issuer[:200]!r} is not an https URL"
            )
        return issuer
    raise ConfigError(f"{url}: no protected-resource metadata at {' or '.join(tried)}")


def discover_authorization_server(url: str, *, timeout: float = IDP_TIMEOUT) -> str:
    """:func:`adiscover_authorization_server`, for code with no event loop running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(adiscover_authorization_server(url, timeout=timeout))
    raise ConfigError(
        "discover_authorization_server() is for code with no event loop running: "
        "await adiscover_authorization_server()"
    )


async def _id_token(spec: ServerSpec) -> str:
    provider = _ID_TOKEN.get()
    if provider is not None:
        got: Any = provider(spec.name)
        if inspect.isawaitable(got):
            got = await got
        if not isinstance(got, str) or not got:
            raise RuntimeError(f"MCP server `{spec.name}`: the ID token provider gave no token")
        return got
    token = _secret(spec, spec.idp_id_token_env, "the user's ID token")
    if token is None:
        raise ConfigError(
            f"MCP server `{spec.name}`: no ID token: set idp_id_token_env, or "
            f"toolwire_mcp.set_id_token_provider(...)"
        )
    return token


async def exchange_for_id_jag(spec: ServerSpec, audience: str, resource: str) -> str:
    """The user's ID token exchanged at the identity provider for an ID-JAG (RFC 8693:
    ``requested_token_type`` id-jag, ``audience`` the authorization server, ``resource`` the
    MCP server). No redirects, a deadline and a bounded answer; a refusal says why."""
    assert spec.idp_token_endpoint is not None
    assert spec.idp_client_id is not None
    form = {
        "grant_type": _TOKEN_EXCHANGE,
        "requested_token_type": _ID_JAG_TYPE,
        "subject_token": await _id_token(spec),
        "subject_token_type": _ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
        "client_id": spec.idp_client_id,
    }
    if spec.oauth_scope:
        form["scope"] = spec.oauth_scope
    idp_secret = _secret(spec, spec.idp_client_secret_env, "its identity provider secret")
    if idp_secret is not None:
        form["client_secret"] = idp_secret
    where = f"MCP server `{spec.name}`: the identity provider"
    try:
        # The one bounded fetch: the whole exchange within IDP_TIMEOUT, the answer at most
        # _MAX_IDP_ANSWER bytes as it is decompressed.
        answer = await afetch_bounded(
            "POST",
            spec.idp_token_endpoint,
            data=form,
            limit=_MAX_IDP_ANSWER,
            timeout=IDP_TIMEOUT,
            what=f"{where}'s answer",
        )
    except FetchError as exc:
        if exc.reason == "timeout":
            raise RuntimeError(f"{where} did not answer within {IDP_TIMEOUT:g} s") from None
        if exc.reason == "too_large":
            raise RuntimeError(f"{where} answered over {_MAX_IDP_ANSWER:,} bytes") from None
        raise RuntimeError(str(exc)) from None
    try:
        data = json.loads(answer.body)
    except ValueError:
        data = None
    if answer.status != 200 or not isinstance(data, dict):
        error = data.get("error") if isinstance(data, dict) else None
        described = data.get("error_description") if isinstance(data, dict) else None
        why = ": ".join(str(x)[:200] for x in (error, described) if x) or "no reason given"
        raise RuntimeError(f"{where} refused the token exchange ({answer.status}): {why}")
    token = data.get("access_token")
    if data.get("issued_token_type") != _ID_JAG_TYPE or not isinstance(token, str) or not token:
        raise RuntimeError(f"{where} did not answer with an ID-JAG")
    return token


async def _login(server: str, url: str, port: int) -> tuple[str, str | None] | None:
    handler = _HANDLER.get()
    if handler is None:
        return await browser_login(server, url, port)
    out: Any = handler(server, url)
    if inspect.isawaitable(out):
        out = await out
    if out is None:
        return None
    if isinstance(out, str):
        return out, None
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
        return out[0], out[1] if isinstance(out[1], str) else None
    raise TypeError(f"the login handler returned {type(out).__name__}; expected (code, state)")


def _first(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


async def browser_login(
    server: str, url: str, port: int, timeout: float = LOGIN_TIMEOUT
) -> tuple[str, str | None] | None:
    """Open ``url`` in a browser (and print it) and wait up to ``timeout`` seconds for the
    redirect to ``http://127.0.0.1:PORT/callback``, served once and then closed."""
    import webbrowser

    got: asyncio.Future[tuple[str, str | None] | None] = asyncio.get_running_loop().create_future()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            target = line.split(b" ")[1].decode("ascii", "replace") if b" " in line else ""
            query = parse_qs(urlsplit(target).query)
            code = _first(query, "code")
            ok = urlsplit(target).path == "/callback" and code is not None
            body = b"Logged in: you can close this window." if ok else b"Not a login answer."
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            if ok and not got.done():
                got.set_result((str(code), _first(query, "state")))
            elif "error" in query and not got.done():
                got.set_result(None)
        except (TimeoutError, OSError, IndexError):
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", port)
    try:
        sys.stderr.write(f"MCP server `{server}` needs you to log in: opening\n  {url}\n")
        sys.stderr.flush()
        with contextlib.suppress(Exception):
            webbrowser.open(url)
        return await asyncio.wait_for(got, timeout)
    except TimeoutError:
        logger.warning("MCP server `%s`: no login within %g s", server, timeout)
        return None
    finally:
        listener.close()
