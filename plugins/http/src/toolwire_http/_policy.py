"""Which URLs and addresses the HTTP tools may reach.

Two checks, both on every hop of every request (redirects included):

1. the URL: scheme ``http``/``https``, no credentials in it, and, when an allow-list is
   configured, a rule matching it (host glob or URL glob) that grants the method; with
   no allow-list, any host for GET and HEAD;
2. the address: the host is resolved once, **every** address it resolves to must be
   public (not private, loopback, link-local, multicast, reserved, shared (CGNAT),
   documentation, or a cloud metadata address, IPv4 inside IPv6 included) unless the
   configuration allows it explicitly, and the request is then sent to that checked
   address (the host name goes in ``Host`` and TLS SNI): a second DNS answer (DNS
   rebinding) is never used.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import attrs

from toolwire_http._errors import HttpConfigError, HttpDenied

__all__ = [
    "ALLOW_ENV",
    "ALLOW_PRIVATE_ENV",
    "CONFIG_ENV",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "METADATA_ADDRESSES",
    "HttpPolicy",
    "Rule",
    "policy_from_env",
]

ALLOW_ENV = "TOOLWIRE_HTTP_ALLOW"
ALLOW_PRIVATE_ENV = "TOOLWIRE_HTTP_ALLOW_PRIVATE"
CONFIG_ENV = "TOOLWIRE_HTTP_CONFIG"
MAX_BYTES_ENV = "TOOLWIRE_HTTP_MAX_BYTES"
TIMEOUT_ENV = "TOOLWIRE_HTTP_TIMEOUT"

DEFAULT_MAX_BYTES = 1024 * 1024
_MAX_CONFIG_BYTES = 256 * 1024
DEFAULT_TIMEOUT = 15.0
DEFAULT_MAX_REDIRECTS = 5
READ_METHODS = frozenset({"GET", "HEAD"})
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})

#: Cloud metadata and host-agent addresses, denied even where they are global.
METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
        ipaddress.ip_address("168.63.129.16"),  # Azure WireServer (a public address)
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    }
)

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


@attrs.frozen
class Rule:
    """One allow-list entry: ``pattern`` is a host glob (``api.github.com``,
    ``*.example.org``) or a URL glob (``https://docs.python.org/3/*``); ``methods`` those
    it grants; ``headers`` are sent to URLs this rule matches and nowhere else (a
    credential for one host is never forwarded to another, redirects included)."""

    pattern: str
    methods: frozenset[str] = READ_METHODS
    headers: Mapping[str, str] = attrs.field(factory=dict, hash=False)

    def matches(self, url: Any) -> bool:
        pattern = self.pattern.lower()
        if "://" in pattern:
            path = _normal_path(url.raw_path.decode("ascii"))
            if path is None:
                return False  # an encoded slash or backslash: no URL glob can vouch for it
            text = f"{url.scheme}://{url.host}{_port_part(url)}{path}"
            return fnmatch.fnmatchcase(text.lower(), pattern)
        return fnmatch.fnmatchcase(str(url.host).lower(), pattern)


_ENCODED_SEPARATOR = re.compile(r"%(?:2f|5c)", re.IGNORECASE)
_ENCODED_DOT = re.compile(r"%2e", re.IGNORECASE)


def _normal_path(raw: str) -> str | None:
    """The path (and query) as a server resolves it, for matching a URL glob: encoded
    dots decoded and dot segments removed (RFC 3986 5.2.4), so
    ``/v1/public/%2e%2e/admin`` is matched as ``/v1/admin``. None when the path holds an
    encoded slash or backslash, which servers split on or not as they please."""
    path, sep, query = raw.partition("?")
    if _ENCODED_SEPARATOR.search(path):
        return None
    segments: list[str] = []
    parts = _ENCODED_DOT.sub(".", path).split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == ".":
            if last:
                segments.append("")
        elif part == "..":
            if len(segments) > 1:
                segments.pop()
            if last:
                segments.append("")
        else:
            segments.append(part)
    return "/".join(segments) + sep + query


def _port_part(url: Any) -> str:
    return f":{url.port}" if url.port is not None else ""


@attrs.frozen
class HttpPolicy:
    """Where the HTTP tools may go, and how much they may read.

    ``rules`` empty: any public URL for GET and HEAD; otherwise only what a rule allows.
    ``allow_private``: hosts, addresses or networks allowed although they are not public
    (a service on the same network; the tests' 127.0.0.1). ``max_bytes`` and ``timeout``
    bound each request, redirects included.
    """

    rules: tuple[Rule, ...] = ()
    allow_private: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT
    max_redirects: int = DEFAULT_MAX_REDIRECTS

    def __attrs_post_init__(self) -> None:
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int):
            raise HttpConfigError(f"max_bytes must be an int, got {self.max_bytes!r}")
        if self.max_bytes < 1:
            raise HttpConfigError(f"max_bytes must be at least 1, got {self.max_bytes}")
        if not isinstance(self.timeout, (int, float)) or not 0 < self.timeout <= 600:
            raise HttpConfigError(f"timeout must be in (0, 600] seconds, got {self.timeout!r}")
        for entry in self.allow_private:
            _private_entry(entry)  # raises for a malformed one

    # -- the URL ------------------------------------------------------------------------

    def rule_for(self, url: Any, method: str) -> Rule | None:
        """The rule that lets ``method`` reach ``url`` (None: allowed with no rule, a
        public GET/HEAD without an allow-list); HttpDenied otherwise."""
        if url.scheme not in ("http", "https"):
            raise HttpDenied(f"only http and https URLs can be fetched, not {url.scheme!r}")
        if url.userinfo:
            raise HttpDenied("a URL with credentials in it (user:password@) is refused")
        if not url.host:
            raise HttpDenied("the URL has no host")
        if method not in METHODS:
            raise HttpDenied(f"method {method} is not supported")
        if not self.rules:
            if method in READ_METHODS:
                return None
            raise HttpDenied(
                f"{method} needs an allow-list rule that grants it ({ALLOW_ENV} or the "
                f"config file); only GET and HEAD are allowed without one"
            )
        for rule in self.rules:
            if rule.matches(url):
                if method in rule.methods:
                    return rule
                raise HttpDenied(
                    f"{method} is not allowed for {url.host} (the rule {rule.pattern!r} "
                    f"allows {', '.join(sorted(rule.methods))})"
                )
        raise HttpDenied(f"{url.host} is not on the allow-list")

    # -- the address --------------------------------------------------------------------

    def check_address(self, host: str, address: str) -> None:
        """HttpDenied unless ``address`` (what ``host`` resolved to) may be connected to."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        reason = _not_public(ip)
        if reason is None:
            return
        if self._allowed_private(host, ip):
            return
        raise HttpDenied(
            f"{host} resolves to {ip}, a {reason} address; such addresses are denied "
            f"unless {ALLOW_PRIVATE_ENV} allows them"
        )

    def _allowed_private(self, host: str, ip: IPAddress) -> bool:
        for entry in self.allow_private:
            parsed = _private_entry(entry)
            if isinstance(parsed, str):
                if parsed == host.lower():
                    return True
            elif ip in parsed:
                return True
        return False


def _private_entry(entry: str) -> str | Network:
    text = entry.strip()
    if not text:
        raise HttpConfigError("an empty entry in allow_private")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        if "/" in text or ":" in text:
            raise HttpConfigError(f"allow_private: {text!r} is not an address or network") from None
        return text.lower()


_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a NAT64 address (``64:ff9b::/96``, RFC 6052; the local-use
    ``64:ff9b:1::/48``, RFC 8215) or a deprecated IPv4-compatible one (``::a.b.c.d``)
    reaches: the gateway translates it to that address."""
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _not_public(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be connected to by default, or None when it may."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = (
            ip.ipv4_mapped
            or ip.sixtofour
            or (ip.teredo[1] if ip.teredo else None)
            or _embedded_ipv4(ip)
        )
        if inner is not None:
            reason = _not_public(inner)
            if reason is not None:
                return f"{reason} (inside IPv6)"
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "non-public"
    return None


# -- configuration ------------------------------------------------------------------------


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _rule_from_env(entry: str) -> Rule:
    """``pattern`` or ``METHOD[|METHOD...]@pattern`` (``GET|POST@https://api.x.com/*``)."""
    methods: Iterable[str] = READ_METHODS
    if "@" in entry and "://" not in entry.split("@", 1)[0]:
        head, entry = entry.split("@", 1)
        methods = [m.strip().upper() for m in head.split("|") if m.strip()]
    return _rule(entry, methods, {})


def _rule(pattern: Any, methods: Any, headers: Any) -> Rule:
    if not isinstance(pattern, str) or not pattern.strip():
        raise HttpConfigError(f"an allow rule needs a non-empty pattern, got {pattern!r}")
    if isinstance(methods, str) or not isinstance(methods, Iterable):
        raise HttpConfigError(f"methods must be a list of strings, got {methods!r}")
    wanted = frozenset(str(m).upper() for m in methods)
    unknown = wanted - METHODS
    if unknown:
        raise HttpConfigError(f"unknown method(s) {', '.join(sorted(unknown))} in {pattern!r}")
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise HttpConfigError(f"headers for {pattern!r} must map strings to strings")
    return Rule(pattern.strip(), wanted, dict(headers))


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:  # read no more than the limit: the path may be a device
            data = f.read(_MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise HttpConfigError(f"cannot read {CONFIG_ENV}={path}: {exc.strerror}") from None
    if len(data) > _MAX_CONFIG_BYTES:
        raise HttpConfigError(f"{path} is larger than 256 KiB")
    try:
        loaded: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
        return loaded
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HttpConfigError(f"{path} is not valid TOML: {exc}") from None


def policy_from_env(environ: Mapping[str, str] | None = None) -> HttpPolicy:
    """The policy from ``TOOLWIRE_HTTP_CONFIG`` (a TOML file) and the variables
    ``TOOLWIRE_HTTP_ALLOW``, ``TOOLWIRE_HTTP_ALLOW_PRIVATE``, ``TOOLWIRE_HTTP_MAX_BYTES``
    and ``TOOLWIRE_HTTP_TIMEOUT`` (which add to, or override, the file)."""
    env = os.environ if environ is None else environ
    rules: list[Rule] = []
    private: list[str] = []
    options: dict[str, Any] = {}
    path = env.get(CONFIG_ENV)
    if path:
        data = _load_toml(Path(path))
        unknown = set(data) - {"allow", "allow_private", "max_bytes", "timeout", "max_redirects"}
        if unknown:
            raise HttpConfigError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
        allow = data.get("allow", [])
        if not isinstance(allow, list):
            raise HttpConfigError(f"{path}: allow must be a list of [[allow]] tables")
        for entry in allow:
            if not isinstance(entry, Mapping):
                raise HttpConfigError(f"{path}: each [[allow]] must be a table")
            rules.append(
                _rule(
                    entry.get("url") or entry.get("host"),
                    entry.get("methods", sorted(READ_METHODS)),
                    entry.get("headers", {}),
                )
            )
        extra = data.get("allow_private", [])
        if not isinstance(extra, Sequence) or isinstance(extra, str):
            raise HttpConfigError(f"{path}: allow_private must be a list")
        private.extend(str(p) for p in extra)
        for key in ("max_bytes", "timeout", "max_redirects"):
            if key in data:
                options[key] = data[key]
    rules.extend(_rule_from_env(e) for e in _split(env.get(ALLOW_ENV, "")))
    private.extend(_split(env.get(ALLOW_PRIVATE_ENV, "")))
    for key, name, kind in (
        ("max_bytes", MAX_BYTES_ENV, int),
        ("timeout", TIMEOUT_ENV, float),
    ):
        if env.get(name):
            try:
                options[key] = kind(env[name])
            except ValueError:
                raise HttpConfigError(f"{name} must be a number, got {env[name]!r}") from None
    return HttpPolicy(tuple(rules), tuple(private), **options)
