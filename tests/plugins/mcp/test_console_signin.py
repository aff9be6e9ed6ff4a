"""#43: the console's sign-in with the organisation's identity provider, against an issuer
that misbehaves (a real HTTP server on 127.0.0.1): each failure is said, nobody is signed
in, and a malformed ``[console]`` table is refused by name. The whole flow in a browser is
in test_console.py."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("jwt")

from toolwire.exceptions import UsageError
from toolwire_mcp.gateway._jwt import OAuthResource, load_oauth
from toolwire_mcp.gateway._signin import MAX_TOKEN_RESPONSE, SignIn, SignInError


class Issuer:
    """Metadata and a token endpoint whose answer the test sets (``answer``: status and
    body); each token request's form and headers are kept."""

    def __init__(self) -> None:
        self.answer: tuple[int, bytes] = (200, b"{}")
        self.requests: list[tuple[dict[str, list[str]], dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/.well-known/oauth-authorization-server":
                    self.send_error(404)
                    return
                self._send(200, json.dumps(outer.metadata()).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                outer.requests.append((form, dict(self.headers)))
                self._send(*outer.answer)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": self.url + "/authorize?tenant=acme",
            "token_endpoint": self.url + "/token",
        }


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    made = Issuer()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


def _resource(issuer: Issuer, **console: Any) -> OAuthResource:
    return OAuthResource(
        issuer=issuer.url,
        resource="http://127.0.0.1:9/mcp",
        jwks_uri=issuer.url + "/jwks",
        scopes=["mcp:tools"],
        console={"client_id": "console", **console},
    )


def _flow(signin: SignIn) -> tuple[str, str]:
    """Start a sign-in: (the authorization URL, its state)."""
    return asyncio.run(signin.start("/console"))


def test_the_browser_is_sent_with_pkce_state_and_the_resource(issuer: Issuer) -> None:
    signin = SignIn(_resource(issuer))
    url, state = _flow(signin)
    parts = urlsplit(url)
    assert parts.path == "/authorize"
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query["tenant"] == "acme"  # the endpoint's own query kept
    assert query["response_type"] == "code"
    assert query["client_id"] == "console"
    assert query["state"] == state
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["resource"] == "http://127.0.0.1:9/mcp"
    assert query["scope"] == "mcp:tools"
    assert query["redirect_uri"] == "http://127.0.0.1:9/console/oauth/callback"
    other, _ = _flow(signin)
    assert other != url  # a fresh state and challenge each time


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ((400, b'{"error": "invalid_grant"}'), "refused the sign-in: 400 (invalid_grant)"),
        ((200, b"not json"), "refused the sign-in: 200"),
        ((200, b'{"token_type": "Bearer"}'), "holds no access token"),
        ((200, b'{"access_token": "not-a-jwt"}'), "token is not accepted: the token is not a JWT"),
        ((200, b'{"a": "' + b"x" * MAX_TOKEN_RESPONSE + b'"}'), "did not answer"),
    ],
)
def test_a_token_endpoint_that_misbehaves_signs_nobody_in(
    issuer: Issuer, answer: tuple[int, bytes], said: str
) -> None:
    issuer.answer = answer
    signin = SignIn(_resource(issuer))
    _, state = _flow(signin)
    with pytest.raises(SignInError, match=said.replace("(", r"\(").replace(")", r"\)")):
        asyncio.run(signin.finish("/console", "the-code", state, state))
    form, _ = issuer.requests[-1]
    assert form["grant_type"] == ["authorization_code"]
    assert form["code"] == ["the-code"]
    assert len(form["code_verifier"][0]) >= 43
    assert form["resource"] == ["http://127.0.0.1:9/mcp"]
    # Whatever happened, the state is spent.
    with pytest.raises(SignInError, match="unknown or took too long"):
        asyncio.run(signin.finish("/console", "the-code", state, state))


def test_a_state_not_bound_to_this_browser_is_refused_before_any_exchange(
    issuer: Issuer,
) -> None:
    signin = SignIn(_resource(issuer))
    _, state = _flow(signin)
    for bound in ("", "another"):
        with pytest.raises(SignInError, match="not started in this browser"):
            asyncio.run(signin.finish("/console", "code", state, bound))
    with pytest.raises(SignInError, match="no usable code"):
        asyncio.run(signin.finish("/console", "", state, state))
    assert [] == issuer.requests


def test_a_confidential_client_sends_its_secret(
    issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONSOLE_SECRET", "s3cr:t")
    signin = SignIn(_resource(issuer, client_secret_env="CONSOLE_SECRET"))
    _, state = _flow(signin)
    with pytest.raises(SignInError):
        asyncio.run(signin.finish("/console", "c", state, state))
    _, headers = issuer.requests[-1]
    import base64

    assert headers["Authorization"] == "Basic " + base64.b64encode(b"console:s3cr%3At").decode()
    monkeypatch.delenv("CONSOLE_SECRET")
    with pytest.raises(UsageError, match="CONSOLE_SECRET"):
        SignIn(_resource(issuer, client_secret_env="CONSOLE_SECRET"))


def test_an_issuer_that_cannot_be_reached_is_said() -> None:
    resource = OAuthResource(
        issuer="http://127.0.0.1:9",
        resource="http://127.0.0.1:9/mcp",
        console={"client_id": "console"},
        timeout=2,
    )
    with pytest.raises(SignInError, match="cannot be reached"):
        asyncio.run(SignIn(resource).start(""))


def test_no_console_table_no_sign_in() -> None:
    with pytest.raises(UsageError, match=r"no \[console\] table"):
        SignIn(OAuthResource(issuer="https://a", resource="https://b/mcp"))


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("[console]\nclient = 'x'\n", r"unknown key\(s\) client"),
        ("[console]\nscopes = ['a']\n", "client_id"),
        ("[console]\nclient_id = ''\n", "client_id must be"),
        ("[console]\nclient_id = 'c'\nscopes = 'a'\n", "scopes"),
        ("[console]\nclient_id = 'c'\nclient_secret_env = ''\n", "client_secret_env"),
        ("[console]\nclient_id = 'c'\nredirect_uri = 'http://example.com/cb'\n", "https"),
        ("console = 3\n", "is a table"),
    ],
)
def test_a_malformed_console_table_is_refused(tmp_path: Path, table: str, said: str) -> None:
    path = tmp_path / "oauth.toml"
    if table.startswith("console"):
        path.write_text(table + 'issuer = "https://a"\nresource = "https://b/mcp"\n')
    else:
        path.write_text('issuer = "https://a"\nresource = "https://b/mcp"\n' + table)
    path.chmod(0o600)
    with pytest.raises(UsageError, match=said):
        load_oauth(path)


def test_a_console_table_is_read(tmp_path: Path) -> None:
    path = tmp_path / "oauth.toml"
    path.write_text(
        'issuer = "https://a"\nresource = "https://b/mcp"\n\n[console]\nclient_id = "c"\n'
        'redirect_uri = "https://b/console/oauth/callback"\nscopes = ["openid", "mcp"]\n'
    )
    path.chmod(0o600)
    console = load_oauth(path).console
    assert console is not None
    assert console.client_id == "c"
    assert console.scopes == ("openid", "mcp")
    assert SignIn(load_oauth(path)).redirect_uri("/x") == "https://b/console/oauth/callback"


def test_a_console_without_a_way_to_sign_in_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    from toolwire_mcp import serve_console, serve_mcp

    with pytest.raises(UsageError, match="--tokens or --oauth"):
        serve_console()
    with pytest.raises(UsageError, match="--tokens or --oauth"):
        serve_mcp(None, transport="http", console=True)
    # As the user types it: exit 2, saying what is missing.
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "mcp", "console", "--port", "1"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert 2 == done.returncode, done.stderr
    assert "--tokens or --oauth" in done.stderr
