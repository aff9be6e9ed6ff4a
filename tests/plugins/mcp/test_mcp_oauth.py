"""OAuth for remote MCP servers (#26): the token file, the login, the settings. The whole
flow (discovery, registration, PKCE, tokens, step-up, refresh) is proven against the
official conformance suite's authorization servers (tests/conformance, 17 auth
scenarios); these are the parts toolwire adds."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import stat
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from toolwire_mcp import ConfigError, ServerSpec, load_config, set_login_handler, token_path
from toolwire_mcp.client._oauth import FileTokenStorage, _login, browser_login

URL = "https://mcp.example.com/mcp"


@pytest.fixture(autouse=True)
def _config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    yield
    set_login_handler(None)


async def test_tokens_and_the_registration_are_kept_in_a_private_file() -> None:
    store = FileTokenStorage(URL)
    assert await store.get_tokens() is None
    await store.set_tokens(OAuthToken(access_token="s3cret-token", refresh_token="r1"))
    await store.set_client_info(
        OAuthClientInformationFull(client_id="cid", redirect_uris=["http://127.0.0.1:9/cb"])
    )
    again = FileTokenStorage(URL)
    assert ("s3cret-token", "r1") == (
        (await again.get_tokens()).access_token,
        (await again.get_tokens()).refresh_token,
    )
    assert "cid" == (await again.get_client_info()).client_id
    path = token_path(URL)
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)
    assert 0o700 == stat.S_IMODE(path.parent.stat().st_mode)
    assert "s3cret" not in repr(store)
    assert token_path("https://other.example.com/mcp") != path  # one file per server


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p: p.chmod(0o644),  # readable by others: not ours to trust
        lambda p: p.write_text("{not json"),
        lambda p: p.write_text(json.dumps({"url": "https://evil/", "tokens": {}})),
        lambda p: p.write_text(json.dumps({"url": URL, "pad": "x" * (70 << 10)})),
    ],
)
async def test_a_token_file_that_is_not_ours_is_ignored(spoil: Any) -> None:
    store = FileTokenStorage(URL)
    await store.set_tokens(OAuthToken(access_token="t"))
    path = token_path(URL)
    spoil(path)
    if stat.S_IMODE(path.stat().st_mode) != 0o644:
        path.chmod(0o600)
    assert await FileTokenStorage(URL).get_tokens() is None


def _visit(url: str) -> None:
    def go() -> None:
        with contextlib.suppress(OSError):  # the login server may be gone: fine
            urllib.request.urlopen(url, timeout=5).read()

    threading.Thread(target=go, daemon=True).start()


async def test_the_browser_login_takes_the_code_from_the_redirect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket
    import webbrowser

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opened: list[str] = []

    def browser(url: str) -> bool:
        opened.append(url)
        _visit(f"http://127.0.0.1:{port}/favicon.ico")  # not the answer: ignored
        _visit(f"http://127.0.0.1:{port}/callback?code=abc&state=xyz")
        return True

    monkeypatch.setattr(webbrowser, "open", browser)
    got = await browser_login("srv", "https://auth.example.com/authorize?x=1", port, timeout=10)
    assert ("abc", "xyz") == got
    assert ["https://auth.example.com/authorize?x=1"] == opened

    def refuse(url: str) -> bool:
        _visit(f"http://127.0.0.1:{port}/callback?error=access_denied")
        return True

    monkeypatch.setattr(webbrowser, "open", refuse)
    assert await browser_login("srv", "https://a/", port, timeout=10) is None
    monkeypatch.setattr(webbrowser, "open", lambda url: True)
    assert await browser_login("srv", "https://a/", port, timeout=0.3) is None  # nobody came


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("code1", ("code1", None)), (("c", "s"), ("c", "s")), (None, None)],
)
async def test_a_login_handler_answers_for_the_user(answer: Any, expected: Any) -> None:
    async def handler(server: str, url: str) -> Any:
        await asyncio.sleep(0)
        return answer

    set_login_handler(handler)
    assert expected == await _login("srv", "https://a/", 1)


async def test_a_login_handler_that_answers_nonsense_is_an_error() -> None:
    set_login_handler(lambda server, url: 42)
    with pytest.raises(TypeError, match="expected \\(code, state\\)"):
        await _login("srv", "https://a/", 1)
    with pytest.raises(TypeError, match="must be callable"):
        set_login_handler("browser")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"command": "x", "auth": "oauth"}, "applies to a server reached by `url`"),
        ({"url": URL, "auth": "basic"}, "`auth` must be 'oauth'"),
        ({"url": URL, "auth": "oauth", "bearer_token_env": "T"}, "not both"),
        ({"url": URL, "oauth_scope": "read"}, "need `auth` set"),
    ],
)
def test_oauth_settings_are_checked(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        ServerSpec("s", **fields)


def test_oauth_is_configured_in_the_mcp_servers_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    entry = {
        "url": URL,
        "auth": "oauth",
        "oauthScope": "tools:read",
        "oauthClientId": "registered",
        "oauthClientSecretEnv": "MY_SECRET",
    }
    path.write_text(json.dumps({"mcpServers": {"hosted": entry}}))
    spec = load_config([path])["hosted"]
    assert ("oauth", "tools:read", "registered", "MY_SECRET") == (
        spec.auth,
        spec.oauth_scope,
        spec.oauth_client_id,
        spec.oauth_client_secret_env,
    )
    path.write_text(json.dumps({"mcpServers": {"hosted": {"url": URL, "auth": 1}}}))
    with pytest.raises(ConfigError, match="auth must be a non-empty string"):
        load_config([path])


def test_a_missing_client_secret_or_a_bad_metadata_url_is_said_at_connect() -> None:
    from toolwire_mcp.client._oauth import auth_for

    os.environ.pop("NO_SUCH_SECRET", None)
    spec = ServerSpec(
        "s", url=URL, auth="oauth", oauth_client_id="c", oauth_client_secret_env="NO_SUCH_SECRET"
    )
    with pytest.raises(ConfigError, match="NO_SUCH_SECRET"):
        auth_for(spec)
    bad = ServerSpec("s", url=URL, auth="oauth", oauth_client_metadata_url="http://x/")
    with pytest.raises(ConfigError, match="client_metadata_url must be a valid HTTPS URL"):
        auth_for(bad)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"url": URL, "auth": "client_credentials"}, "needs the client's ID"),
        ({"url": URL, "auth": "client_credentials", "oauth_client_id": "c"}, "its secret or"),
    ],
)
def test_client_credentials_need_an_id_and_a_secret_or_key(
    fields: dict[str, Any], said: str
) -> None:
    with pytest.raises(ConfigError, match=said):
        ServerSpec("s", **fields)


def test_a_service_logs_in_with_its_secret_or_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
    )

    from toolwire_mcp.client._oauth import auth_for

    base = {"url": URL, "auth": "client_credentials", "oauth_client_id": "svc"}
    monkeypatch.setenv("SVC_SECRET", "s")
    monkeypatch.setenv("SVC_KEY", "-----BEGIN PRIVATE KEY-----\n...")
    by_secret = auth_for(ServerSpec("s", oauth_client_secret_env="SVC_SECRET", **base))
    by_key = auth_for(ServerSpec("s", oauth_private_key_env="SVC_KEY", **base))
    assert isinstance(by_secret, ClientCredentialsOAuthProvider)
    assert isinstance(by_key, PrivateKeyJWTOAuthProvider)
    monkeypatch.delenv("SVC_KEY")
    with pytest.raises(ConfigError, match="SVC_KEY \\(its OAuth private key\\) is not set"):
        auth_for(ServerSpec("s", oauth_private_key_env="SVC_KEY", **base))


# -- enterprise-managed authorization (SEP-990, cross-app access) --------------------------------
# The whole flow against the conformance suite's identity provider, authorization server and
# MCP server is tests/conformance (auth/cross-app-access-complete-flow); these are its edges.

CROSS_APP = {
    "url": "https://mcp.example.com/mcp",
    "auth": "cross_app",
    "oauth_client_id": "app",
    "oauth_client_secret_env": "APP_SECRET",
    "oauth_issuer": "https://as.example.com",
    "idp_client_id": "idp-app",
}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({**CROSS_APP, "idp_token_endpoint": None}, "needs idp_token_endpoint"),
        (
            {**CROSS_APP, "oauth_issuer": None, "idp_token_endpoint": "https://idp/t"},
            "needs oauth_issuer",
        ),
        (
            {**CROSS_APP, "idp_token_endpoint": "http://idp.example.com/token"},
            "must be an https URL",
        ),
    ],
)
def test_cross_app_settings_are_checked(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        ServerSpec("s", **{k: v for k, v in fields.items() if v is not None})


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (the deadline tests) is not printed; anything else is.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _IdP:
    """A token endpoint on 127.0.0.1 that answers as told and records each form."""

    def __init__(self, status: int, body: bytes, delay: float = 0.0) -> None:
        import http.server
        import time
        from urllib.parse import parse_qs

        outer = self
        self.forms: list[dict[str, list[str]]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers["content-length"])
                outer.forms.append(parse_qs(self.rfile.read(size).decode()))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _exchange(idp: _IdP, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> str:
    from toolwire_mcp.client._oauth import exchange_for_id_jag

    monkeypatch.setenv("USER_ID_TOKEN", "the-users-id-token")
    spec = ServerSpec(
        "s",
        **{
            **CROSS_APP,
            "idp_token_endpoint": idp.url,
            "idp_id_token_env": "USER_ID_TOKEN",
            **extra,
        },
    )
    return asyncio.run(exchange_for_id_jag(spec, "https://as.example.com", CROSS_APP["url"]))


def test_the_id_token_is_exchanged_for_an_id_jag(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {
        "access_token": "the-id-jag",
        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "token_type": "N_A",
    }
    idp = _IdP(200, json.dumps(answer).encode())
    try:
        assert _exchange(idp, monkeypatch) == "the-id-jag"
    finally:
        idp.close()
    (form,) = idp.forms
    assert form == {
        "grant_type": ["urn:ietf:params:oauth:grant-type:token-exchange"],
        "requested_token_type": ["urn:ietf:params:oauth:token-type:id-jag"],
        "subject_token": ["the-users-id-token"],
        "subject_token_type": ["urn:ietf:params:oauth:token-type:id_token"],
        "audience": ["https://as.example.com"],
        "resource": ["https://mcp.example.com/mcp"],
        "client_id": ["idp-app"],
    }


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (
            400,
            b'{"error": "invalid_grant", "error_description": "expired"}',
            "refused the token exchange \\(400\\): invalid_grant: expired",
        ),
        (
            200,
            b'{"access_token": "x", '
            b'"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}',
            "did not answer with an ID-JAG",
        ),
        (200, b"not json", "refused the token exchange \\(200\\): no reason given"),
        (200, b"{" + b" " * (70 << 10) + b"}", "answered over 65,536 bytes"),
    ],
)
def test_an_identity_provider_that_refuses_or_misbehaves_is_said(
    monkeypatch: pytest.MonkeyPatch, status: int, body: bytes, said: str
) -> None:
    idp = _IdP(status, body)
    try:
        with pytest.raises(RuntimeError, match=said):
            _exchange(idp, monkeypatch)
    finally:
        idp.close()


def test_an_identity_provider_that_does_not_answer_meets_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolwire_mcp.client import _oauth

    monkeypatch.setattr(_oauth, "IDP_TIMEOUT", 0.5)
    idp = _IdP(200, b"{}", delay=3.0)
    try:
        with pytest.raises(RuntimeError, match=r"did not answer within 0\.5 s"):
            _exchange(idp, monkeypatch)
    finally:
        idp.close()


def test_the_id_token_comes_from_the_application_when_it_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolwire_mcp import set_id_token_provider

    answer = {"access_token": "jag", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}
    idp = _IdP(200, json.dumps(answer).encode())

    async def provider(server: str) -> str:
        return f"token-for-{server}"

    set_id_token_provider(provider)
    try:
        assert _exchange(idp, monkeypatch) == "jag"
    finally:
        set_id_token_provider(None)
        idp.close()
    assert idp.forms[0]["subject_token"] == ["token-for-s"]


# -- discovering an MCP server's authorization server, to pin it (#48) ------------------------


@contextlib.contextmanager
def _metadata_server(routes: dict[str, tuple[int, bytes]]) -> Any:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = routes.get(self.path, (404, b"{}"))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _names(issuer: Any) -> bytes:
    return json.dumps({"resource": "x", "authorization_servers": [issuer]}).encode()


def test_the_authorization_server_is_discovered_for_the_application_to_pin() -> None:
    from toolwire_mcp import discover_authorization_server

    path_first = {
        "/.well-known/oauth-protected-resource/mcp": (200, _names("https://auth.example.com")),
        "/.well-known/oauth-protected-resource": (200, _names("https://elsewhere.example")),
    }
    with _metadata_server(path_first) as origin:
        assert "https://auth.example.com" == discover_authorization_server(origin + "/mcp")
    root_only = {"/.well-known/oauth-protected-resource": (200, _names("http://127.0.0.1:9/as"))}
    with _metadata_server(root_only) as origin:
        assert "http://127.0.0.1:9/as" == discover_authorization_server(origin + "/mcp/")


@pytest.mark.parametrize(
    ("routes", "said"),
    [
        ({}, "no protected-resource metadata at"),
        ({"/.well-known/oauth-protected-resource": (200, b"{nope")}, "is not JSON"),
        ({"/.well-known/oauth-protected-resource": (200, b'{"x": 1}')}, "no authorization"),
        (
            {"/.well-known/oauth-protected-resource": (200, _names("http://evil.example"))},
            "is not an https URL",
        ),
        ({"/.well-known/oauth-protected-resource": (200, _names(5))}, "no authorization"),
        (
            {"/.well-known/oauth-protected-resource": (200, b" " * (70 << 10))},
            "protected-resource metadata",
        ),
    ],
)
def test_a_discovery_that_cannot_be_believed_says_why(
    routes: dict[str, tuple[int, bytes]], said: str
) -> None:
    from toolwire_mcp import discover_authorization_server

    with _metadata_server(routes) as origin, pytest.raises(ConfigError, match=said):
        discover_authorization_server(origin + "/mcp")
    with pytest.raises(ConfigError, match="not an MCP server's http"):
        discover_authorization_server("ftp://x")

    async def inside() -> None:
        with pytest.raises(ConfigError, match="no event loop running"):
            discover_authorization_server("https://x.example/mcp")

    asyncio.run(inside())
