"""toolwire-http against a real HTTP server on 127.0.0.1 (an explicit test allowance).

The attacks are kept as tests: loopback and metadata addresses, a redirect into the
private network, DNS rebinding (a host that answers with a public and then a private
address), a credential that would follow a redirect to another host, bodies too large
and servers too slow.
"""

from __future__ import annotations

import gzip
import http.server
import ipaddress
import json
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

import toolwire as tw
from toolwire_http import (
    HttpConfigError,
    HttpDenied,
    HttpError,
    HttpPolicy,
    Rule,
    fetch,
    html_to_text,
    http_toolset,
    policy_from_env,
)
from toolwire_http._policy import _not_public

#: 64 MiB of zeros, gzipped: about 64 KiB on the wire.
BOMB = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)

PAGE = b"""<html><head><title>Notes</title><style>p{color:red}</style>
<script>alert('x')</script></head>
<body><h1>Milk</h1><p>Buy   milk.</p><ul><li>one</li><li>two</li></ul></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        _Handler.seen.append(
            {"path": self.path, "method": self.command, "headers": dict(self.headers), "body": body}
        )
        path = self.path.split("?")[0]
        port = self.server.server_address[1]
        if path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif path == "/json":
            self._send(200, "application/json", b'{"a":1,"b":[1,2]}')
        elif path == "/big":
            self._send(200, "text/plain", b"x" * 200_000)
        elif path == "/png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
        elif path == "/slow":
            time.sleep(3)
            self._send(200, "text/plain", b"late")
        elif path == "/echo":
            self._send(200, "application/json", json.dumps(dict(self.headers)).encode())
        elif path == "/to-metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/")
        elif path == "/to-internal":
            self._redirect(f"http://internal.test:{port}/echo")
        elif path == "/to-other-host":
            self._redirect(f"http://other.test:{port}/echo")
        elif path == "/loop":
            self._redirect("/loop")
        elif path == "/post-then-see":
            self._redirect("/echo", status=303)
        elif path in ("/bomb", "/zstd"):
            encoding = "gzip" if path == "/bomb" else "zstd"
            body = BOMB if path == "/bomb" else b"(zstd frame)"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path == "/drip":
            # A header line every 0.3 s for 6 s: each read is quick, the whole is not.
            self.send_response(200)
            for i in range(20):
                self.send_header(f"X-Drip-{i}", "x")
                self.wfile.flush()
                time.sleep(0.3)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, "text/plain", b"no such page")

    def _redirect(self, where: str, status: int = 302) -> None:
        self.send_response(status)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # The size-limit tests hang up mid-body: that is not printed; anything else is.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    srv = _QuietServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _Handler.seen.clear()


LOCAL = HttpPolicy(allow_private=("127.0.0.1",), timeout=5.0)


def names(mapping: dict[str, str]) -> Any:
    """A resolver answering from ``mapping`` (no DNS); counts its calls."""
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        answer = mapping.get(host, host)
        return answer.split(",")

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


# -- the address check ----------------------------------------------------------------


def test_loopback_is_denied_without_an_allowance_and_nothing_is_sent(server: str) -> None:
    with pytest.raises(HttpDenied, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        fetch(f"{server}/page", "GET", HttpPolicy())
    assert [] == _Handler.seen


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("169.254.169.254", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),
        ("10.0.0.5", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "non-public"),
        ("0.0.0.0", "unspecified"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback (inside IPv6)"),
        ("fd00:ec2::254", "cloud metadata"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
    ],
)
def test_non_public_addresses_are_denied(address: str, kind: str) -> None:
    assert kind == _not_public(ipaddress.ip_address(address))
    with pytest.raises(HttpDenied, match=kind.split(" ")[0]):
        HttpPolicy().check_address("h.test", address)


def test_public_addresses_pass() -> None:
    assert _not_public(ipaddress.ip_address("93.184.216.34")) is None
    HttpPolicy().check_address("example.org", "2606:2800:220:1:248:1893:25c8:1946")


def test_a_decimal_ip_resolves_to_loopback_and_is_denied() -> None:
    with pytest.raises(HttpDenied, match="loopback"):
        fetch("http://2130706433/", "GET", HttpPolicy())


def test_dns_rebinding_cannot_switch_the_address() -> None:
    """The host is resolved once per hop and the request goes to that checked address:
    a later private answer is never used. A mixed answer is denied outright."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="public page", headers={"content-type": "text/plain"})

    result = fetch(
        "http://rebind.test/x", "GET", HttpPolicy(), resolver=rebinding,
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    assert b"public page" == result.body
    assert ["rebind.test"] == calls  # resolved once
    (request,) = seen
    assert "93.184.216.34" == request.url.host  # connected to the checked address
    assert "rebind.test" == request.headers["host"]
    mixed = names({"mixed.test": "93.184.216.34,127.0.0.1"})
    with pytest.raises(HttpDenied, match=r"127\.0\.0\.1, a loopback"):
        fetch("http://mixed.test/", "GET", HttpPolicy(), resolver=mixed)


def test_the_pinned_address_gets_the_host_name_in_host(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    resolver = names({"app.test": "127.0.0.1"})
    result = fetch(f"http://app.test:{port}/echo", "GET", LOCAL, resolver=resolver)
    assert f"app.test:{port}" == json.loads(result.body)["Host"]


# -- redirects --------------------------------------------------------------------------


def test_a_redirect_to_the_metadata_address_is_denied(server: str) -> None:
    with pytest.raises(HttpDenied, match="cloud metadata"):
        fetch(f"{server}/to-metadata", "GET", LOCAL)


def test_a_redirect_into_the_private_network_is_denied(server: str) -> None:
    resolver = names({"internal.test": "10.1.2.3"})
    with pytest.raises(HttpDenied, match=r"internal\.test resolves to 10\.1\.2\.3, a private"):
        fetch(f"{server}/to-internal", "GET", LOCAL, resolver=resolver)


def test_a_credential_is_not_forwarded_to_another_host(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = HttpPolicy(
        rules=(
            Rule(f"http://127.0.0.1:{port}/*", headers={"Authorization": "Bearer s3cret"}),
            Rule("other.test"),
        ),
        allow_private=("127.0.0.1",),
    )
    resolver = names({"other.test": "127.0.0.1"})
    direct = fetch(f"{server}/echo", "GET", policy, resolver=resolver)
    assert "Bearer s3cret" == json.loads(direct.body)["Authorization"]
    moved = fetch(f"{server}/to-other-host", "GET", policy, resolver=resolver)
    assert "Authorization" not in json.loads(moved.body)
    assert moved.redirects == (f"http://other.test:{port}/echo",)


def test_a_redirect_loop_stops(server: str) -> None:
    with pytest.raises(HttpError, match="more than 5 redirects"):
        fetch(f"{server}/loop", "GET", LOCAL)


def test_a_303_after_post_becomes_a_get(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = HttpPolicy(
        rules=(Rule(f"http://127.0.0.1:{port}/*", frozenset({"GET", "POST"})),),
        allow_private=("127.0.0.1",),
    )
    fetch(f"{server}/post-then-see", "POST", policy, body=b"{}", content_type="application/json")
    assert ["POST", "GET"] == [s["method"] for s in _Handler.seen]


# -- limits and content ---------------------------------------------------------------------


def test_html_becomes_text(server: str) -> None:
    result = fetch(f"{server}/page", "GET", LOCAL)
    text = result.text()
    assert text.splitlines()[0] == "Notes"
    assert "Buy milk." in text
    assert "alert" not in text
    assert "color" not in text
    assert ["one", "two"] == [line for line in text.splitlines() if line in ("one", "two")]


def test_json_is_pretty_and_binary_is_described(server: str) -> None:
    assert '{\n  "a": 1,' in fetch(f"{server}/json", "GET", LOCAL).text()
    assert (
        "(image/png content, 108 bytes, not shown)" == fetch(f"{server}/png", "GET", LOCAL).text()
    )


def test_a_large_body_is_cut_at_the_limit(server: str) -> None:
    policy = HttpPolicy(allow_private=("127.0.0.1",), max_bytes=1000)
    result = fetch(f"{server}/big", "GET", policy)
    assert (True, 1000) == (result.truncated, len(result.body))


def test_a_slow_server_hits_the_deadline(server: str) -> None:
    policy = HttpPolicy(allow_private=("127.0.0.1",), timeout=0.5)
    start = time.monotonic()
    with pytest.raises(HttpError, match=r"longer than 0\.5 s"):
        fetch(f"{server}/slow", "GET", policy)
    assert time.monotonic() - start < 2.5


# -- the allow-list ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "method", "match"),
    [
        ("file:///etc/passwd", "GET", "only http and https"),
        ("http://user:pw@example.org/", "GET", "credentials in it"),
        ("http://other.org/", "GET", "not on the allow-list"),
        ("https://api.example.org/v1/x", "DELETE", "DELETE is not allowed"),
        ("https://api.example.org/v2/x", "GET", "not on the allow-list"),
        ("not a url at all", "GET", "only http and https|not a valid URL|no host"),
    ],
)
def test_the_allow_list_decides_before_anything_is_sent(url: str, method: str, match: str) -> None:
    policy = HttpPolicy(rules=(Rule("https://api.example.org/v1/*", frozenset({"GET", "POST"})),))
    with pytest.raises(HttpDenied, match=match):
        fetch(url, method, policy, resolver=names({}))


def test_without_an_allow_list_only_reads_are_allowed() -> None:
    with pytest.raises(HttpDenied, match="POST needs an allow-list rule"):
        fetch("https://example.org/", "POST", HttpPolicy(), resolver=names({}))


def test_policy_from_the_environment_and_a_file(tmp_path: Path) -> None:
    config = tmp_path / "http.toml"
    config.write_text(
        'allow_private = ["10.0.0.0/8"]\nmax_bytes = 5000\n\n'
        '[[allow]]\nurl = "https://api.example.org/*"\nmethods = ["GET", "POST"]\n'
        'headers = { Authorization = "Bearer x" }\n'
    )
    policy = policy_from_env(
        {
            "TOOLWIRE_HTTP_CONFIG": str(config),
            "TOOLWIRE_HTTP_ALLOW": "docs.python.org, GET|PUT@*.example.net",
            "TOOLWIRE_HTTP_ALLOW_PRIVATE": "127.0.0.1",
            "TOOLWIRE_HTTP_TIMEOUT": "3",
        }
    )
    assert ["https://api.example.org/*", "docs.python.org", "*.example.net"] == [
        r.pattern for r in policy.rules
    ]
    assert frozenset({"GET", "PUT"}) == policy.rules[2].methods
    assert ("10.0.0.0/8", "127.0.0.1") == policy.allow_private
    assert (5000, 3.0) == (policy.max_bytes, policy.timeout)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("allow = 3", "allow must be a list"),
        ("allow = [3]", "each \\[\\[allow\\]\\] must be a table"),
        ("[[allow]]\nurl = ''", "non-empty pattern"),
        ("[[allow]]\nurl = 'x'\nmethods = ['FETCH']", "unknown method"),
        ("[[allow]]\nurl = 'x'\nheaders = { A = 1 }", "map strings to strings"),
        ("allow_private = ['10.0.0.0/33']", "not an address or network"),
        ("colour = 'red'", "unknown key"),
        ("max_bytes = 0", "at least 1"),
        ("timeout = -1", "timeout must be"),
        ("this is = not toml", "not valid TOML"),
    ],
)
def test_a_malformed_configuration_is_a_clear_error(tmp_path: Path, text: str, match: str) -> None:
    config = tmp_path / "http.toml"
    config.write_text(text)
    with pytest.raises(HttpConfigError, match=match):
        policy_from_env({"TOOLWIRE_HTTP_CONFIG": str(config)})


def test_a_huge_configuration_is_refused_without_being_read(tmp_path: Path) -> None:
    # Reproducer: read_bytes() read all of it before the size check (a 64 MiB file into
    # memory; TOOLWIRE_HTTP_CONFIG=/dev/zero for ever).
    config = tmp_path / "http.toml"
    with config.open("wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: nothing is written
    tracemalloc.start()
    try:
        with pytest.raises(HttpConfigError, match="larger than 256 KiB"):
            policy_from_env({"TOOLWIRE_HTTP_CONFIG": str(config)})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_bad_environment_values_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(HttpConfigError, match="TOOLWIRE_HTTP_MAX_BYTES must be a number"):
        policy_from_env({"TOOLWIRE_HTTP_MAX_BYTES": "lots"})
    with pytest.raises(HttpConfigError, match="cannot read"):
        policy_from_env({"TOOLWIRE_HTTP_CONFIG": str(tmp_path / "missing.toml")})


# -- the tools ----------------------------------------------------------------------------------


def test_the_toolset_reads_by_default_and_writes_only_when_asked(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    policy = HttpPolicy(
        rules=(Rule(f"http://127.0.0.1:{port}/*", frozenset({"GET", "HEAD", "POST"})),),
        allow_private=("127.0.0.1",),
    )
    tools = http_toolset(policy)
    fetch_url, request = tools.get("fetch_url"), tools.get("http_request")
    assert fetch_url is not None
    assert request is not None
    assert "read_only" == fetch_url.metadata.effect.value
    assert tw.Capability.NETWORK in fetch_url.metadata.capabilities
    assert "mutating" == request.metadata.effect.value
    assert ["fetch_url"] == [t.name for t in tools.default_tools()]
    executor = tw.Executor(tools=tools, plugins=False)
    got = executor.execute(tw.ToolCall("c1", "fetch_url", json.dumps({"url": f"{server}/json"})))
    assert got.content.startswith("HTTP 200 OK\nURL: ")
    denied = executor.execute(
        tw.ToolCall("c2", "fetch_url", json.dumps({"url": "http://169.254.169.254/"}))
    )
    assert denied.is_error
    assert "169.254.169.254 is not on the allow-list" in denied.content
    posted = executor.execute(
        tw.ToolCall(
            "c3",
            "http_request",
            json.dumps({"url": f"{server}/echo", "method": "POST", "body": "{}"}),
        )
    )
    executor.close()
    assert not posted.is_error, posted.content
    assert "POST" == _Handler.seen[-1]["method"]


def test_the_pack_is_discovered_through_its_entry_point() -> None:
    host = tw.PluginHost()
    toolset = host.assemble()
    assert "fetch_url" in toolset
    assert "tools/http/http" == toolset.source("fetch_url")


def test_html_to_text_survives_broken_markup() -> None:
    assert "a b" == html_to_text("<p>a <b>b</p></div></span>")
    assert "" == html_to_text("<script>x</script>")
    # html.parser raises on some malformed declarations: a hostile page must not break
    # the tool (the text read before it is kept).
    assert "before" == html_to_text("<p>before</p><![a broken")


# -- #25.8 and #25.11: paths, redirects, addresses, bodies and deadlines -------------------


def _mock(handler: Any) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


PUBLIC = names({"api.example.com": "93.184.216.34"})


def test_an_encoded_dot_segment_does_not_pass_a_url_glob() -> None:
    # Attack (#25.8): /v1/public/%2e%2e/admin/users passed https://api.example.com/v1/public/*
    policy = HttpPolicy(rules=(Rule("https://api.example.com/v1/public/*"),))
    ok = _mock(lambda request: httpx.Response(200, text="fine"))
    for url in (
        "https://api.example.com/v1/public/%2e%2e/admin/users",
        "https://api.example.com/v1/public/%2E%2E/admin/users",
        "https://api.example.com/v1/public/..%2fadmin/users",
        "https://api.example.com/v1/public/%5c..%5cadmin",
    ):
        with pytest.raises(HttpDenied, match="not on the allow-list"):
            fetch(url, "GET", policy, resolver=PUBLIC, transport=ok)
    assert (
        b"fine"
        == fetch(
            "https://api.example.com/v1/public/./docs", "GET", policy, resolver=PUBLIC, transport=ok
        ).body
    )


def test_a_credential_is_not_sent_after_a_redirect_from_https_to_http() -> None:
    # Attack (#25.8): a host rule's Authorization header was re-sent in the clear after an
    # https -> http redirect.
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.scheme == "https":
            return httpx.Response(302, headers={"location": "http://api.example.com/plain"})
        return httpx.Response(200, text="plain")

    policy = HttpPolicy(rules=(Rule("api.example.com", headers={"Authorization": "Bearer s"}),))
    fetch("https://api.example.com/x", "GET", policy, resolver=PUBLIC, transport=_mock(handler))
    assert ["Bearer s", None] == [r.headers.get("authorization") for r in seen]


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("64:ff9b::7f00:1", "loopback (inside IPv6)"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata (inside IPv6)"),
        ("64:ff9b:1::a00:1", "private (inside IPv6)"),
        ("::7f00:1", "loopback (inside IPv6)"),
        ("::a00:1", "private (inside IPv6)"),
    ],
)
def test_ipv4_inside_nat64_and_ipv4_compatible_addresses_is_checked(
    address: str, reason: str
) -> None:
    # Attack (#25.11): these reached 127.0.0.1 and the private network through a NAT64
    # gateway or a stack that still routes IPv4-compatible addresses.
    assert reason == _not_public(ipaddress.ip_address(address))
    assert _not_public(ipaddress.ip_address("64:ff9b::808:808")) is None  # public via NAT64


def test_a_compressed_body_is_limited_as_it_is_decompressed(server: str) -> None:
    # Attack (#25.11): a small gzip (or zstd) body was decompressed a whole chunk at a
    # time before the limit applied: 32 KB of zstd grew the process by about 2 GiB.
    policy = HttpPolicy(allow_private=("127.0.0.1",), timeout=10.0, max_bytes=1024 * 1024)
    tracemalloc.start()
    try:
        result = fetch(f"{server}/bomb", "GET", policy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (1024 * 1024, True, b"\0" * 16) == (len(result.body), result.truncated, result.body[:16])
    assert peak < 16 * 1024 * 1024
    assert "gzip, deflate" == _Handler.seen[-1]["headers"]["Accept-Encoding"]
    with pytest.raises(HttpError, match="encoded as zstd, which was not asked for"):
        fetch(f"{server}/zstd", "GET", policy)


def test_a_server_dripping_its_headers_hits_the_whole_deadline(server: str) -> None:
    # Attack (#25.11): a header line every 0.5 s held a 2 s deadline for 20 s (each read
    # was within its own timeout).
    policy = HttpPolicy(allow_private=("127.0.0.1",), timeout=1.0)
    start = time.monotonic()
    with pytest.raises(HttpError, match=r"longer than 1 s"):
        fetch(f"{server}/drip", "GET", policy)
    assert time.monotonic() - start < 3.5  # the drip takes 6 s


def test_a_gzip_body_under_the_limit_is_whole(server: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = gzip.compress(b"hello " * 1000)
        return httpx.Response(
            200, headers={"content-encoding": "gzip"}, stream=httpx.ByteStream(body)
        )

    result = fetch("https://api.example.com/x", "GET", HttpPolicy(), resolver=PUBLIC,
                   transport=_mock(handler))  # fmt: skip
    assert (b"hello " * 1000, False) == (result.body, result.truncated)
