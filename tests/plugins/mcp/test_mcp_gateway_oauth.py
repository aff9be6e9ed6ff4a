"""#31: the gateway as an OAuth 2.1 resource server. Tokens from a real local issuer
(tests/plugins/mcp/_issuer.py: OpenID metadata and a JWKS on 127.0.0.1, keys generated for
the run), checked by the verifier and then by a real gateway process with the SDK client."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _issuer import Issuer, forge
from _mcp_support import _env, _start_http_gateway, _stop_http_gateway, free_port, write_policy

from toolwire import Principal
from toolwire.exceptions import UsageError
from toolwire_mcp import OAuthResource, load_oauth
from toolwire_mcp.gateway._jwt import JwtVerifier, TokenRefused

RESOURCE = "http://127.0.0.1:8931/mcp"


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    started = Issuer()
    yield started
    started.close()


def _verifier(issuer: Issuer, **settings: Any) -> JwtVerifier:
    settings.setdefault("algorithms", ["RS256", "ES256", "EdDSA"])
    return JwtVerifier(OAuthResource(issuer=issuer.url, resource=RESOURCE, **settings))


async def _refused(verifier: JwtVerifier, token: str) -> TokenRefused:
    with pytest.raises(TokenRefused) as caught:
        await verifier.verify(token)
    return caught.value


# -- the verifier ------------------------------------------------------------------------


@pytest.mark.parametrize("kid", ["rsa1", "ec1", "ed1"])
async def test_a_token_from_the_issuer_names_its_principal(issuer: Issuer, kid: str) -> None:
    verifier = _verifier(issuer, claims={"groups": "realm_access.roles"})
    token = issuer.token(
        RESOURCE,
        kid=kid,
        name="Alice",
        azp="inspector",
        realm_access={"roles": ["finance", 7]},
    )
    verified = await verifier.verify(token)
    assert (
        Principal("alice", name="Alice", groups=["finance"], client="inspector", method="oauth")
        == verified.principal
    )
    assert {"mcp:tools"} == verified.scopes
    assert 1 == issuer.fetches  # discovered, fetched once, then cached
    await verifier.verify(token)
    assert 1 == issuer.fetches


def _claims(issuer: Issuer, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": RESOURCE, "sub": "mallory", "exp": now + 300}
    return {**claims, **changes}


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda i: i.token(RESOURCE, lifetime=-120), "the token has expired"),
        (lambda i: i.token(RESOURCE, nbf=int(time.time()) + 600), "not valid yet"),
        (lambda i: i.token("http://127.0.0.1:8931/other"), "not for this resource"),
        (lambda i: i.token(RESOURCE, iss="http://127.0.0.1:1/evil"), "from another issuer"),
        (lambda i: i.token(RESOURCE, exp=None), "no `exp` claim"),
        (lambda i: i.token(RESOURCE, aud=None), "no `aud` claim"),
        (lambda i: i.token(RESOURCE, subject=None), "no `sub` claim"),
        (lambda i: i.token(RESOURCE, subject=""), "no `sub` claim"),
        (lambda i: i.token(RESOURCE, headers={"kid": "nobody"}), "not signed by a key"),
        # alg none: no signature at all
        (lambda i: forge({"alg": "none", "kid": "rsa1"}, _claims(i), None), "'none'"),
        # HS256 "signed" with the issuer's public key as the shared secret
        (
            lambda i: forge({"alg": "HS256", "kid": "rsa1"}, _claims(i), i.public_pem("rsa1")),
            "'HS256'",
        ),
        # ES256 claimed for the RSA key; RS256 claimed for the EC key
        (lambda i: forge({"alg": "ES256", "kid": "rsa1"}, _claims(i), b"x"), "not signed by"),
        (lambda i: forge({"alg": "RS256", "kid": "ec1"}, _claims(i), b"x"), "not signed by"),
        # a valid header and claims with someone else's signature
        (lambda i: i.token(RESOURCE)[:-8] + "AAAAAAAA", "signature or claims are invalid"),
        (lambda i: "not-a-jwt", "not a JWT"),
        (lambda i: "e30." * 5000, "over 16,384 bytes"),
        # #40.10: an audience beside this one (the other resource could replay it)
        (lambda i: i.token([RESOURCE, "https://other.example/api"]), "also for another"),
        # #40.10: a JWT of another kind than an access token
        (lambda i: i.token(RESOURCE, headers={"typ": "oauth-id-jag+jwt"}), "not an access"),
        (lambda i: i.token(RESOURCE, headers={"typ": "logout+jwt"}), "not an access token"),
    ],
)  # fmt: skip
async def test_a_bad_token_is_refused_saying_why(issuer: Issuer, make: Any, said: str) -> None:
    refused = await _refused(_verifier(issuer), make(issuer))
    assert (401, "invalid_token") == (refused.status, refused.error)
    assert said in refused.description


@pytest.mark.parametrize(
    ("typ", "required", "accepted"),
    [
        ("at+jwt", True, True),
        ("application/at+jwt", True, True),
        ("JWT", True, False),
        (None, True, False),
        ("JWT", False, True),
        ("at+JWT", False, True),
    ],
)
async def test_the_token_type_is_checked(
    issuer: Issuer, typ: str | None, required: bool, accepted: bool
) -> None:
    verifier = _verifier(issuer, require_at_jwt=required)
    headers = {"typ": typ} if typ is not None else {}
    token = issuer.token(RESOURCE, headers=headers)
    if typ is None:  # PyJWT writes typ JWT unless told: take it out
        import jwt as pyjwt

        key, alg = issuer.keys["rsa1"]
        token = pyjwt.encode(
            pyjwt.decode(token, options={"verify_signature": False}),
            key,
            algorithm=alg,
            headers={"kid": "rsa1", "typ": None},
        )
    if accepted:
        assert "alice" == (await verifier.verify(token)).principal.subject
    else:
        refused = await _refused(verifier, token)
        assert "is not an access token (at+jwt)" in refused.description


async def test_a_token_whose_audiences_are_all_this_resource_is_accepted(issuer: Issuer) -> None:
    token = issuer.token([RESOURCE, RESOURCE.rstrip("/") + "/"])
    assert "alice" == (await _verifier(issuer).verify(token)).principal.subject


async def test_a_token_without_the_required_scope_is_a_403(issuer: Issuer) -> None:
    verifier = _verifier(issuer, scopes=["mcp:tools", "mcp:admin"])
    refused = await _refused(verifier, issuer.token(RESOURCE))
    assert (403, "insufficient_scope") == (refused.status, refused.error)
    # scp as a list (as some issuers send it) counts too
    verified = await verifier.verify(
        issuer.token(RESOURCE, scope=None, scp=["mcp:tools", "mcp:admin"])
    )
    assert {"mcp:tools", "mcp:admin"} == verified.scopes


async def test_an_algorithm_left_out_of_the_configuration_is_refused(issuer: Issuer) -> None:
    refused = await _refused(_verifier(issuer, algorithms=["ES256"]), issuer.token(RESOURCE))
    assert "'RS256' is not accepted" in refused.description


async def test_a_rotated_key_is_fetched_and_unknown_kids_do_not_hammer_the_issuer(
    issuer: Issuer,
) -> None:
    now = [0.0]
    issuer.published = {"rsa1"}
    verifier = JwtVerifier(
        OAuthResource(issuer=issuer.url, resource=RESOURCE, refresh_seconds=30),
        clock=lambda: now[0],
    )
    await verifier.verify(issuer.token(RESOURCE))
    issuer.published = {"rsa1", "ec1"}  # the issuer rotates in a new key
    refused = await _refused(verifier, issuer.token(RESOURCE, kid="ec1"))
    assert "not signed by a key" in refused.description  # fetched a moment ago: not again
    now[0] = 31.0
    await verifier.verify(issuer.token(RESOURCE, kid="ec1"))
    assert 2 == issuer.fetches
    for _ in range(20):  # an attacker's unknown kids: one fetch per refresh period at most
        await _refused(verifier, issuer.token(RESOURCE, headers={"kid": "x"}))
    now[0] = 62.0
    for _ in range(20):
        await _refused(verifier, issuer.token(RESOURCE, headers={"kid": "x"}))
    assert 3 == issuer.fetches


@pytest.mark.parametrize("mode", ["zstd", "gzip-bomb"])
async def test_a_compressed_key_set_bomb_is_refused_as_it_grows(issuer: Issuer, mode: str) -> None:
    # Attack (#40.3): the JWKS fetch accepted zstd, and a 16 KB body grew the process by
    # 0.7-1 GiB before the size limit was seen.
    if mode == "zstd":
        pytest.importorskip("zstandard")
    import tracemalloc

    issuer.mode = mode
    verifier = _verifier(issuer, timeout=5.0)
    tracemalloc.start()
    try:
        refused = await _refused(verifier, issuer.token(RESOURCE))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (503, True) == (refused.status, peak < 16 << 20)


@pytest.mark.parametrize("mode", ["hang", "huge", "broken", "empty", "error", "private"])
async def test_keys_that_cannot_be_had_are_a_503_within_the_deadline(
    issuer: Issuer, mode: str
) -> None:
    issuer.mode = mode
    verifier = _verifier(issuer, timeout=1.0)
    started = time.monotonic()
    refused = await _refused(verifier, issuer.token(RESOURCE))
    assert (503, "temporarily_unavailable") == (refused.status, refused.error)
    assert time.monotonic() - started < 10
    # the next request does not wait on the issuer again until the refresh period passes
    started = time.monotonic()
    await _refused(verifier, issuer.token(RESOURCE))
    assert time.monotonic() - started < 0.5
    assert 1 == issuer.fetches


async def test_requests_waiting_on_the_keys_share_one_fetch(issuer: Issuer) -> None:
    verifier = _verifier(issuer)
    tokens = [issuer.token(RESOURCE, subject=f"user{i}") for i in range(10)]
    found = await asyncio.gather(*(verifier.verify(t) for t in tokens))
    assert [f"user{i}" for i in range(10)] == [v.principal.subject for v in found]
    assert 1 == issuer.fetches


async def test_cached_keys_outlive_an_issuer_that_went_away(issuer: Issuer) -> None:
    now = [0.0]
    verifier = JwtVerifier(
        OAuthResource(issuer=issuer.url, resource=RESOURCE, cache_seconds=60),
        clock=lambda: now[0],
    )
    await verifier.verify(issuer.token(RESOURCE))
    issuer.mode = "error"
    now[0] = 120.0  # stale: fetched again, that fails, the keys held are still used
    assert "alice" == (await verifier.verify(issuer.token(RESOURCE))).principal.subject
    while verifier._renewing is not None:  # the fetch goes on in the background
        await asyncio.sleep(0.01)
    assert 2 == issuer.fetches
    assert "alice" == (await verifier.verify(issuer.token(RESOURCE))).principal.subject


async def test_an_issuer_that_hangs_while_keys_are_renewed_stalls_no_request(
    issuer: Issuer,
) -> None:
    now = [0.0]
    verifier = JwtVerifier(
        OAuthResource(issuer=issuer.url, resource=RESOURCE, cache_seconds=60, timeout=2),
        clock=lambda: now[0],
    )
    await verifier.verify(issuer.token(RESOURCE))
    issuer.mode = "hang"
    now[0] = 120.0
    started = time.monotonic()
    for _ in range(5):  # each checked at once with the key held
        await verifier.verify(issuer.token(RESOURCE))
    assert time.monotonic() - started < 1
    assert verifier._renewing is not None  # one renewal, waiting on the issuer
    await verifier._renewing


async def test_metadata_naming_another_issuer_is_not_followed(issuer: Issuer) -> None:
    issuer.discovery = lambda: {"issuer": "http://127.0.0.1:1", "jwks_uri": issuer.url + "/jwks"}
    refused = await _refused(_verifier(issuer), issuer.token(RESOURCE))
    assert 503 == refused.status
    assert 0 == issuer.fetches


async def test_a_configured_jwks_uri_skips_discovery(issuer: Issuer) -> None:
    issuer.discovery = dict  # would be refused
    verifier = _verifier(issuer, jwks_uri=issuer.url + "/jwks")
    assert "alice" == (await verifier.verify(issuer.token(RESOURCE))).principal.subject


# -- the configuration -------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_the_oauth_file_is_read_and_its_metadata_follows_rfc_9728(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "oauth.toml",
        'issuer = "https://login.example.com/realms/acme"\n'
        'resource = "https://mcp.example.com/mcp"\nscopes = ["mcp:tools"]\n'
        '[claims]\ngroups = "realm_access.roles"\n',
    )
    oauth = load_oauth(path)
    assert "/.well-known/oauth-protected-resource/mcp" == oauth.metadata_path
    assert "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" == oauth.metadata_url
    doc = oauth.metadata()
    assert "https://mcp.example.com/mcp" == doc["resource"]
    assert ["https://login.example.com/realms/acme"] == doc["authorization_servers"]
    assert (["mcp:tools"], ["header"]) == (doc["scopes_supported"], doc["bearer_methods_supported"])
    # the SDK's own model of the document accepts it as it is
    from mcp.shared.auth import ProtectedResourceMetadata

    assert "https://mcp.example.com/mcp" == str(
        ProtectedResourceMetadata.model_validate(doc).resource
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('issuer = "https://a"\nresource = "https://b/mcp"\nscope = ["x"]\n',
         "unknown key `scope`; did you mean `scopes`?"),
        ('resource = "https://b/mcp"\n', "`issuer` (a URL) is required"),
        ('issuer = "http://login.example.com"\nresource = "https://b/mcp"\n', "must be https"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\nalgorithms = ["HS256"]\n',
         "asymmetric only"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\nalgorithms = ["none"]\n',
         "asymmetric only"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\nleeway = 3600\n', "at most 300"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\ntimeout = 0\n', "(0, 60]"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\njwks_uri = 5\n', "must be a URL"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\n[claims]\nsubjet = "email"\n',
         "unknown key(s) subjet"),
        ('issuer = "https://a"\nresource = "https://b/mcp"\nscopes = ["a b"]\n', "not a scope"),
        ("issuer = [\n", "is not TOML"),
    ],
)  # fmt: skip
def test_a_malformed_oauth_file_is_refused_by_name(tmp_path: Path, body: str, said: str) -> None:
    path = _write(tmp_path / "oauth.toml", body)
    with pytest.raises(UsageError, match="OAuth file .*" + __import__("re").escape(said)):
        load_oauth(path)


def test_an_oauth_file_others_can_write_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "oauth.toml", 'issuer = "https://a"\nresource = "https://b/mcp"\n')
    path.chmod(0o666)  # it says whom to trust: anyone could have said so
    with pytest.raises(UsageError, match="open to others"):
        load_oauth(path)
    with pytest.raises(UsageError, match="no such file"):
        load_oauth(tmp_path / "missing.toml")


def test_json_is_not_taken_for_toml(tmp_path: Path) -> None:
    path = _write(tmp_path / "oauth.toml", json.dumps({"issuer": "https://a"}))
    with pytest.raises(UsageError, match="is not TOML"):
        load_oauth(path)


# -- a real gateway, the SDK client ----------------------------------------------------------

_APP = """
import os

import toolwire as tw


def payroll(month: str) -> str:
    '''The payroll of a month.'''
    with open(os.environ["RAN"], "a") as f:
        f.write(month + "\\n")
    return "payroll of " + month


def weather(city: str) -> str:
    '''The weather in a city.'''
    return "sunny in " + city


tools = tw.Toolset("app", [tw.tool_fn(payroll), tw.tool_fn(weather)])
"""


@pytest.fixture
def gateway(tmp_path: Path, issuer: Issuer) -> Iterator[tuple[str, Path]]:
    """A gateway accepting the issuer's tokens for its own URL (scope ``mcp:tools``), and a
    static token for a service; payroll for the finance group only. Its URL and the file
    each payroll run appends to."""
    pytest.importorskip("toolwire_policy")

    port = free_port()
    (tmp_path / "app.py").write_text(_APP)
    oauth = _write(
        tmp_path / "oauth.toml",
        f'issuer = "{issuer.url}"\nresource = "http://127.0.0.1:{port}/mcp"\n'
        'scopes = ["mcp:tools"]\ntimeout = 1\nrefresh_seconds = 0\n'
        '[claims]\ngroups = "realm_access.roles"\n',
    )
    import hashlib

    digest = "sha256:" + hashlib.sha256(b"ci-bot-token").hexdigest()
    tokens = _write(
        tmp_path / "tokens.json",
        json.dumps({"tokens": [{"sha256": digest, "subject": "ci-bot", "groups": ["finance"]}]}),
    )
    write_policy(
        tmp_path,
        'deny = ["payroll"]\nrequire_principal = true\n\n'
        '[[rules]]\ngroups = ["finance"]\nallow = ["payroll"]\n\n'
        '[audit]\npath = "audit.jsonl"\n',
    )
    ran = tmp_path / "ran.txt"
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0", RAN=str(ran))
    started = _start_http_gateway(
        tmp_path,
        env,
        ("--oauth", str(oauth), "--tokens", str(tokens), "--app", "app:tools"),
        port=port,
    )
    yield started[1], ran
    _stop_http_gateway(started)


def _session(url: str, token: str, mode: str = "auto") -> tuple[list[str], Any]:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> tuple[list[str], Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as c:
            names = sorted(t.name for t in (await c.list_tools()).tools)
            return names, await c.call_tool("payroll", {"month": "May"})

    return anyio.run(run)


def test_the_issuers_tokens_name_who_calls_through_the_gateway(
    gateway: tuple[str, Path], issuer: Issuer
) -> None:
    url, ran = gateway
    finance = {"realm_access": {"roles": ["finance"]}}
    names, paid = _session(url, issuer.token(url, **finance))
    assert (["payroll", "weather"], False) == (names, paid.is_error)
    names, paid = _session(url, issuer.token(url, kid="ec1", **finance), "legacy")
    assert (["payroll", "weather"], False) == (names, paid.is_error)
    names, paid = _session(url, issuer.token(url, subject="bob"))  # not in finance
    assert ["weather"] == names
    assert paid.is_error
    names, paid = _session(url, "ci-bot-token")  # a static token beside the JWTs
    assert (["payroll", "weather"], False) == (names, paid.is_error)
    assert ["May", "May", "May"] == ran.read_text().split()
    records = [
        json.loads(line)
        for line in (ran.parent / "config" / "toolwire" / "audit.jsonl").read_text().splitlines()
    ]
    methods = {
        (r["principal"]["subject"], r["principal"]["method"]) for r in records if "principal" in r
    }
    assert {("alice", "oauth"), ("bob", "oauth"), ("ci-bot", "token")} == methods


def _post(url: str, token: str | None, **headers: str) -> Any:
    import httpx

    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx.post(
        url,
        json=body,
        headers={"Accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )


def test_a_refused_token_never_reaches_a_tool_and_says_why(
    gateway: tuple[str, Path], issuer: Issuer
) -> None:
    url, ran = gateway
    finance = {"realm_access": {"roles": ["finance"]}}
    now = int(time.time())
    bad = {
        "expired": issuer.token(url, lifetime=-120, **finance),
        "another resource": issuer.token("http://127.0.0.1:1/mcp", **finance),
        "another issuer": issuer.token(url, iss="http://127.0.0.1:1", **finance),
        "alg none": forge(
            {"alg": "none", "kid": "rsa1"},
            {"iss": issuer.url, "aud": url, "sub": "alice", "exp": now + 300, **finance},
            None,
        ),
        "HS256 with the public key": forge(
            {"alg": "HS256", "kid": "rsa1"},
            {"iss": issuer.url, "aud": url, "sub": "alice", "exp": now + 300, **finance},
            issuer.public_pem("rsa1"),
        ),
        "unknown kid": issuer.token(url, headers={"kid": "gone"}, **finance),
    }
    for what, token in bad.items():
        with pytest.raises(Exception):  # noqa: B017 - the SDK client's error for a 401
            _session(url, token)
        refused = _post(url, token)
        assert 401 == refused.status_code, what
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer "), what
        assert 'error="invalid_token"' in challenge, what
        assert "invalid_token" == refused.json()["error"], what
    assert not ran.exists()  # not one of them ran payroll

    # Without the scope: a 403 that names the scope wanted.
    refused = _post(url, issuer.token(url, scope="profile"))
    assert 403 == refused.status_code
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert 'scope="mcp:tools"' in refused.headers["www-authenticate"]


def test_a_client_without_a_token_is_told_where_the_metadata_is(
    gateway: tuple[str, Path], issuer: Issuer
) -> None:
    import httpx
    from mcp.client.auth.utils import (
        build_protected_resource_metadata_discovery_urls,
        extract_resource_metadata_from_www_auth,
        extract_scope_from_www_auth,
    )
    from mcp.shared.auth import ProtectedResourceMetadata

    url, _ = gateway
    refused = _post(url, None)
    assert 401 == refused.status_code
    # As the SDK's OAuth client reads the challenge: where the metadata is, which scope.
    said = extract_resource_metadata_from_www_auth(refused)
    port = url.split(":")[2].split("/")[0]
    assert f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp" == said
    assert "mcp:tools" == extract_scope_from_www_auth(refused)
    for where in build_protected_resource_metadata_discovery_urls(said, url)[:2]:
        doc = ProtectedResourceMetadata.model_validate_json(httpx.get(where, timeout=10).content)
        assert url == str(doc.resource)
        assert [issuer.url] == [str(a).rstrip("/") for a in doc.authorization_servers]
    assert 204 == httpx.options(said, timeout=10).status_code  # a browser's preflight
    assert 405 == httpx.post(said, timeout=10).status_code


def test_a_session_is_usable_only_by_the_principal_that_opened_it(
    gateway: tuple[str, Path], issuer: Issuer
) -> None:
    import httpx

    url, _ = gateway
    alice, bob = issuer.token(url), issuer.token(url, subject="bob")
    opened = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        headers={
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {alice}",
        },
        timeout=30,
    )
    assert 200 == opened.status_code
    session = opened.headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    assert 404 == _post(url, bob, **headers).status_code  # as if there were no such session
    assert 200 == _post(url, alice, **headers).status_code


def test_a_gateway_whose_issuer_hangs_answers_503_in_time_then_recovers(
    gateway: tuple[str, Path], issuer: Issuer
) -> None:
    url, _ = gateway
    issuer.mode = "hang"
    started = time.monotonic()
    refused = _post(url, issuer.token(url))
    assert (503, "30") == (refused.status_code, refused.headers["retry-after"])
    assert "www-authenticate" not in refused.headers  # not the client's fault: no re-login
    assert time.monotonic() - started < 15
    issuer.mode = "ok"
    _, paid = _session(url, issuer.token(url, realm_access={"roles": ["finance"]}))
    assert not paid.is_error


def test_the_sdks_oauth_client_logs_in_and_calls_through_the_gateway(tmp_path: Path) -> None:
    # The whole flow with peers nobody here wrote: the MCP SDK's OAuth client (under
    # toolwire's MCP client) meets the gateway's 401, reads its RFC 9728 metadata, finds
    # the authorization server (the SDK's own routes), registers, logs in with PKCE for
    # this gateway's resource, and calls with the JWT it got.
    pytest.importorskip("toolwire_policy")
    import httpx
    from _authserver import AuthServer

    import toolwire as tw
    from toolwire_mcp import ServerSpec, close_all, mcp_toolset, set_login_handler

    auth = AuthServer(subject="alice", groups=("finance",))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    (tmp_path / "app.py").write_text(_APP)
    oauth = _write(
        tmp_path / "oauth.toml",
        f'issuer = "{auth.url}"\nresource = "{url}"\njwks_uri = "{auth.url}jwks"\n'
        'scopes = ["mcp:tools"]\n',
    )
    write_policy(
        tmp_path,
        'deny = ["payroll"]\nrequire_principal = true\n\n'
        '[[rules]]\ngroups = ["finance"]\nallow = ["payroll"]\n',
    )
    ran = tmp_path / "ran.txt"
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0", RAN=str(ran))
    started = _start_http_gateway(
        tmp_path, env, ("--oauth", str(oauth), "--app", "app:tools"), port=port
    )
    logins: list[str] = []

    async def log_in(server: str, authorize_url: str) -> tuple[str, str]:
        # The user's browser: the authorization server sends it straight back with a code.
        logins.append(authorize_url)
        async with httpx.AsyncClient() as browser:
            back = (await browser.get(authorize_url)).headers["location"]
        query = dict(httpx.URL(back).params)
        return query["code"], query["state"]

    set_login_handler(log_in)
    try:
        spec = ServerSpec("gw", url=url, auth="oauth", oauth_scope="mcp:tools")
        toolset = mcp_toolset("gw", spec)
        executor = tw.Executor(tools=toolset, plugins=False, approval=lambda r: tw.Allow())
        result = executor.execute(tw.ToolCall("c1", "payroll", json.dumps({"month": "May"})))
        assert "payroll of May" == result.content
    finally:
        set_login_handler(None)
        close_all()  # the client's connection first: the gateway then stops at once
        _stop_http_gateway(started)
        auth.close()
    assert 1 == len(logins)
    assert auth.url + "authorize" == logins[0].split("?")[0]
    assert [url] == auth.resources  # the token was asked for this gateway (RFC 8707)
    assert ["May"] == ran.read_text().split()


@pytest.mark.parametrize(
    "setting",
    [
        {"oauth": OAuthResource(issuer="https://a", resource="https://b/mcp")},
        {"tokens_file": "tokens.json"},
        {"token_env": "GW_TOKEN"},
    ],
)
def test_credentials_for_a_stdio_server_are_refused_not_dropped(setting: dict[str, Any]) -> None:
    # A stdio server has no request to carry them: a policy requiring a principal would
    # otherwise meet none, and the operator would not know why.
    from toolwire_mcp import serve_mcp

    with pytest.raises(UsageError, match="HTTP transport only"):
        serve_mcp(None, transport="stdio", **setting)


# -- DNS rebinding: any loopback address checks Host and Origin (#40.9) ---------------------


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"])
def test_a_gateway_on_any_loopback_address_refuses_another_origin(
    tmp_path: Path, host: str
) -> None:
    # Attack (#40.9): the gateway served a cross-origin request on 127.0.0.2: Origin was
    # validated only on the loopback addresses the SDK knows (127.0.0.1, localhost, ::1).
    import httpx

    started = _start_http_gateway(
        tmp_path, _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0"), host=host
    )
    try:
        url, hello, headers = started[1], _HELLO, _ACCEPT
        with httpx.Client(timeout=10) as http:
            evil = http.post(url, json=hello, headers={**headers, "Origin": "http://evil.example"})
            rebound = http.post(url, json=hello, headers={**headers, "Host": "evil.example"})
            own = http.post(url, json=hello, headers={**headers, "Origin": f"http://{host}:1"})
            plain = http.post(url, json=hello, headers=headers)
        assert (403, 421, 200, 200) == (
            evil.status_code,
            rebound.status_code,
            own.status_code,
            plain.status_code,
        )
    finally:
        _stop_http_gateway(started)


# -- an approval answered across requests is bound to its principal (#40.10) -----------------


def _alice_and_bob(tmp_path: Path) -> Path:
    """A tokens file: ``alice-token`` names alice, ``bob-token`` bob."""
    import hashlib

    entries = [
        {"sha256": "sha256:" + hashlib.sha256(t.encode()).hexdigest(), "subject": s}
        for t, s in (("alice-token", "alice"), ("bob-token", "bob"))
    ]
    return _write(tmp_path / "tokens.json", json.dumps({"tokens": entries}))


_WIPE_APP = """
import os
import toolwire as tw

def wipe(target: str) -> str:
    '''Wipe a target.'''
    with open(os.environ["RAN"], "a") as f:
        f.write(target + "\\n")
    return "wiped " + target

tools = tw.Toolset("app", [tw.tool_fn(wipe, effect="destructive")])
"""


def test_an_approval_for_one_principal_cannot_be_replayed_by_another(tmp_path: Path) -> None:
    # #40.10: the approval requestState HMAC did not cover the principal, so bob's request
    # carrying alice's request_state and a yes ran the call alice was asked about.

    import anyio
    import httpx2
    import mcp_types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "app.py").write_text(_WIPE_APP)
    tokens = _alice_and_bob(tmp_path)
    ran = tmp_path / "ran.txt"
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0", RAN=str(ran))
    started = _start_http_gateway(tmp_path, env, ("--tokens", str(tokens), "--app", "app:tools"))
    yes = mcp_types.ElicitResult(action="accept", content={"approve": True})

    async def never(*args: Any) -> Any:
        raise AssertionError("answered in the result, not over a back-channel")

    async def call(token: str, state: str | None = None, key: str | None = None) -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        client = Client(
            streamable_http_client(started[1], http_client=http),
            mode="auto",
            elicitation_callback=never,
        )
        async with http, client as c:
            return await c.session.call_tool(
                "wipe",
                {"target": "db"},
                input_responses={key: yes} if key else None,
                request_state=state,
                allow_input_required=True,
            )

    try:
        first = anyio.run(call, "alice-token")
        assert isinstance(first, mcp_types.InputRequiredResult)
        [key] = first.input_requests
        replayed = anyio.run(call, "bob-token", first.request_state, key)
        assert isinstance(replayed, mcp_types.InputRequiredResult)  # asked again: nothing ran
        assert not ran.exists()
        honest = anyio.run(call, "alice-token", first.request_state, key)
        assert "wiped db" == honest.content[0].text
    finally:
        _stop_http_gateway(started)


# -- sessions cannot pile up (#47.1) ---------------------------------------------------------

_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


def _open(http: Any, url: str, token: str | None = None) -> Any:
    headers = dict(_ACCEPT)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return http.post(url, json=_HELLO, headers=headers)


def test_abandoned_sessions_are_capped_per_client_and_closed_when_idle(tmp_path: Path) -> None:
    # #47.1: a 2025-11-25 client that opened a session and went away left it for 30
    # minutes, and at 10,001 every new client got a 503 with no Retry-After: one runaway
    # client locked out the others.

    import httpx

    tokens = _alice_and_bob(tmp_path)
    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    extra = ("--tokens", str(tokens), "--sessions-per-client", "3", "--session-idle", "2")
    started = _start_http_gateway(tmp_path, env, extra)
    url = started[1]
    try:
        with httpx.Client(timeout=10) as http:
            opened = [_open(http, url, "alice-token") for _ in range(3)]
            assert [200] * 3 == [r.status_code for r in opened]
            refused = _open(http, url, "alice-token")  # alice's runaway client
            assert (503, "2") == (refused.status_code, refused.headers.get("retry-after"))
            assert "too many open sessions for this client" in refused.text
            assert 200 == _open(http, url, "bob-token").status_code  # bob is not locked out
            first = opened[0].headers["mcp-session-id"]
            ended = http.delete(
                url,
                headers={**_ACCEPT, "Authorization": "Bearer alice-token", "mcp-session-id": first},
            )
            assert ended.status_code < 300
            assert 200 == _open(http, url, "alice-token").status_code  # a DELETE frees one
            time.sleep(2.6)  # abandoned: idle past --session-idle, closed
            assert [200] * 3 == [_open(http, url, "alice-token").status_code for _ in range(3)]
            gone = http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                headers={
                    **_ACCEPT,
                    "Authorization": "Bearer alice-token",
                    "mcp-session-id": opened[1].headers["mcp-session-id"],
                },
            )
            assert 404 == gone.status_code  # the idle one was closed by the server too
    finally:
        _stop_http_gateway(started)


def test_the_total_session_cap_says_when_to_retry(tmp_path: Path) -> None:
    import httpx

    env = _env(tmp_path, TOOLWIRE_AUTOLOAD_PLUGINS="0")
    started = _start_http_gateway(tmp_path, env, ("--max-sessions", "2"))
    try:
        with httpx.Client(timeout=10) as http:
            statuses = [_open(http, started[1]) for _ in range(3)]
        assert [200, 200, 503] == [r.status_code for r in statuses]
        assert statuses[2].headers.get("retry-after") is not None
    finally:
        _stop_http_gateway(started)
