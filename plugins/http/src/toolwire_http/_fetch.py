"""One HTTP request under an HttpPolicy: resolve, check, pin, send, follow, read, convert.

Each hop (the first request and every redirect):

1. the URL and method are checked against the policy (allow-list, scheme, no
   credentials in the URL);
2. the host is resolved once and every address is checked (private, loopback,
   link-local, metadata ... are denied unless allowed);
3. the request goes to the checked address itself (``Host`` and TLS SNI carry the
   name), so a second DNS answer cannot redirect it (DNS rebinding);
4. headers a rule grants (a credential) go only to URLs that rule matches: a
   redirect to another host gets none of them, nor does a hop that a redirect took
   from https down to http.

The body is read as a stream up to ``max_bytes`` of *decoded* bytes (only gzip and
deflate are asked for and accepted, and they are decompressed here with the output
bounded, so a small compressed body cannot grow past the limit); the whole request
(redirects and a server that drips its headers included) has one deadline, enforced by
closing the connection when it passes.
"""

from __future__ import annotations

import contextlib
import html.parser
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from toolwire_http._errors import HttpDenied, HttpError
from toolwire_http._policy import HttpPolicy

if TYPE_CHECKING:
    # Imported where a request is made: httpx pulls in its command line (rich, pygments)
    # when those are installed, a quarter of a second this plugin's discovery need not pay.
    import httpx

__all__ = ["FetchResult", "Resolver", "fetch", "html_to_text"]

Resolver = Callable[[str, int], list[str]]
"""``resolve(host, port) -> [address, ...]``: injectable for tests."""

_REDIRECTS = (301, 302, 303, 307, 308)
_USER_AGENT = "toolwire-http/0.1"
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), in the resolver's order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise HttpError(f"cannot resolve {host}: {exc.strerror}") from None
    out: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in out:
            out.append(address)
    return out


@attrs.frozen
class FetchResult:
    """The final response: where it came from, its status, type and (bounded) text."""

    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    truncated: bool
    redirects: tuple[str, ...] = ()

    def text(self, *, max_chars: int | None = None) -> str:
        """The body as the model reads it: JSON pretty-printed, HTML as text, other text
        as it is; a binary body is described, not shown."""
        kind = self.content_type.split(";", 1)[0].strip().lower()
        charset = _charset(self.content_type)
        if not self.body:
            return ""
        if kind and not kind.startswith(_TEXT_TYPES) and not kind.endswith(("+json", "+xml")):
            return f"({kind} content, {len(self.body)} bytes, not shown)"
        text = self.body.decode(charset or "utf-8", errors="replace")
        if kind == "application/json" or kind.endswith("+json"):
            with contextlib.suppress(ValueError, RecursionError):  # cut or malformed: as it is
                text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        elif kind in ("text/html", "application/xhtml+xml"):
            text = html_to_text(text)
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + "\n(... cut)"
        return text


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            name = value.strip().strip('"')
            try:
                "".encode(name)
            except LookupError:
                return None
            return name
    return None


def fetch(
    url: str,
    method: str,
    policy: HttpPolicy,
    *,
    body: bytes | None = None,
    content_type: str | None = None,
    resolver: Resolver = system_resolver,
    transport: httpx.BaseTransport | None = None,
) -> FetchResult:
    """Make the request under ``policy``; HttpDenied before anything is sent when the
    URL, method or address is not allowed; HttpError when it fails."""
    import httpx  # here, not at the top: see the TYPE_CHECKING import

    deadline = time.monotonic() + policy.timeout
    method = method.upper()
    try:
        current = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise HttpDenied(f"not a valid URL: {exc}") from None
    origin_host = current.host
    client = httpx.Client(transport=transport, follow_redirects=False, trust_env=False)
    # The deadline bounds the whole request: httpx's timeouts bound each read, so a server
    # sending a header line every half second would hold it for ever. Closing the client
    # closes its connections, which ends a read in progress.
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        with contextlib.suppress(Exception):  # the request's own thread reports it
            client.close()

    watchdog = threading.Timer(policy.timeout, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        return _hops(client, current, method, policy, body, content_type, resolver, deadline)
    except (httpx.HTTPError, RuntimeError) as exc:
        if expired.is_set():
            raise HttpError(f"the request took longer than {policy.timeout:g} s") from None
        raise HttpError(f"the request to {origin_host} failed: {exc}") from None
    except HttpError:
        if expired.is_set():
            raise HttpError(f"the request took longer than {policy.timeout:g} s") from None
        raise
    finally:
        watchdog.cancel()
        client.close()


def _hops(
    client: httpx.Client,
    current: httpx.URL,
    method: str,
    policy: HttpPolicy,
    body: bytes | None,
    content_type: str | None,
    resolver: Resolver,
    deadline: float,
) -> FetchResult:
    import httpx  # here, not at the top: see the TYPE_CHECKING import

    origin_host = current.host
    redirects: list[str] = []
    was_secure = False
    for _ in range(policy.max_redirects + 1):
        rule = policy.rule_for(current, method)
        port = current.port or (443 if current.scheme == "https" else 80)
        addresses = resolver(current.host, port)
        if not addresses:
            raise HttpError(f"{current.host} resolves to no address")
        for address in addresses:  # every answer must be allowed, not just the first
            policy.check_address(current.host, address)
        pinned = addresses[0]
        headers = {
            "User-Agent": _USER_AGENT,
            "Host": _host_header(current),
            "Accept-Encoding": "gzip, deflate",  # toolwire.adapters.ACCEPT_ENCODING
        }
        was_secure = was_secure or current.scheme == "https"
        if rule is not None and not (was_secure and current.scheme != "https"):
            # This rule's URLs only (never across hosts), and never in the clear once
            # a redirect took the request from https down to http.
            headers.update(rule.headers)
        if body is not None and content_type:
            headers["Content-Type"] = content_type
        target = current.copy_with(host=pinned)
        extensions: dict[str, Any] = {}
        if current.scheme == "https":
            extensions["sni_hostname"] = current.host
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HttpError(f"the request took longer than {policy.timeout:g} s")
        request = client.build_request(
            method,
            target,
            headers=headers,
            content=body,
            timeout=httpx.Timeout(remaining),
            extensions=extensions,
        )
        try:
            response = client.send(request, stream=True)
        except httpx.TimeoutException:
            raise HttpError(f"the request took longer than {policy.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise HttpError(f"the request to {current.host} failed: {exc}") from None
        try:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                nxt = current.join(location)
                redirects.append(str(nxt))
                if response.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
                    method, body, content_type = "GET", None, None
                current = nxt
                continue
            data, truncated = _read(response, policy.max_bytes, deadline, policy.timeout)
            return FetchResult(
                str(current),
                response.status_code,
                response.reason_phrase,
                response.headers.get("content-type", ""),
                data,
                truncated,
                tuple(redirects),
            )
        finally:
            response.close()
    raise HttpError(f"more than {policy.max_redirects} redirects from {origin_host}; stopped")


def _host_header(url: httpx.URL) -> str:
    host = url.host if ":" not in url.host else f"[{url.host}]"
    return f"{host}:{url.port}" if url.port is not None else host


def _read(
    response: httpx.Response, limit: int, deadline: float, timeout: float
) -> tuple[bytes, bool]:
    """(the body, whether it was cut at ``limit``), read by toolwire's one bounded reader:
    decompressed a step at a time (gzip and deflate only), so a small compressed body
    cannot grow past the limit in memory."""
    import httpx  # here, not at the top: see the TYPE_CHECKING import

    from toolwire.adapters import read_body
    from toolwire.exceptions import FetchError

    try:
        return read_body(response, limit, cut=True, what="the response", deadline=deadline)
    except FetchError as exc:
        if exc.reason == "deadline":
            raise HttpError(f"the response took longer than {timeout:g} s to read") from None
        raise HttpError(str(exc)) from None
    except httpx.TimeoutException:
        raise HttpError(f"the response took longer than {timeout:g} s to read") from None
    except httpx.HTTPError as exc:
        raise HttpError(f"reading the response failed: {exc}") from None


# -- HTML to text ---------------------------------------------------------------------------

_BLOCK = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
     "header", "footer", "pre", "table", "ul", "ol", "blockquote", "hr", "title"}
)  # fmt: skip
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.title: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIP:
            self.skipping += 1
        if tag == "title":
            self.in_title = True
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self.skipping:
            self.skipping -= 1
        if tag == "title":
            self.in_title = False
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if not self.skipping:
            self.parts.append(data)


def html_to_text(text: str) -> str:
    """The readable text of an HTML page: scripts, styles and markup dropped, block
    elements on their own lines, runs of blank lines and spaces collapsed."""
    parser = _Text()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError:
        # html.parser still raises on some malformed declarations ("<![a "): a page is
        # untrusted input, so what was read up to there is the text.
        pass
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    body = "\n".join(out).strip()
    title = " ".join("".join(parser.title).split())
    if title and not body.startswith(title):
        body = f"{title}\n\n{body}"
    return body


def describe(result: FetchResult, *, max_chars: int) -> str:
    """The tool's answer: status line, type, where redirects led, then the text."""
    head = f"{result.status} {result.reason}".strip()
    lines = [f"HTTP {head}", f"URL: {result.url}"]
    if result.redirects:
        lines.append(f"redirected {len(result.redirects)} time(s)")
    if result.content_type:
        lines.append(f"Content-Type: {result.content_type}")
    text = result.text(max_chars=max_chars)
    if result.truncated:
        text += f"\n(... the body was cut at {len(result.body)} bytes)"
    return "\n".join(lines) + ("\n\n" + text if text else "")
