"""API keys that never show themselves, URL redaction, and how a key is sent."""

from __future__ import annotations

import logging
import threading
from collections.abc import (
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Literal, final
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import attrs
import httpx

from toolwire._errors import (
    AuthenticationError,
    UsageError,
)
from toolwire._exports import publish

if TYPE_CHECKING:
    pass


_MASK = "****"
# Placeholder keys ("x", "ollama" is 6) are not secrets; masking every "x" in a
# message would make it unreadable. Anything 4 characters or longer is scrubbed.
_MIN_SCRUB_LENGTH = 4


# --------------------------------------------------------------------------- keys


@final
class ApiKey:
    """An API key that never shows itself: ``repr`` and ``str`` are ``ApiKey(****)``.

    ``get()`` returns the secret, for the one place that must send it.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise UsageError(f"ApiKey expects the key as a str, got {type(value).__name__}")
        if not value:
            raise UsageError("ApiKey expects a non-empty key, got an empty string")
        self._value = value

    def get(self) -> str:
        """Return the secret itself."""
        return self._value

    def __repr__(self) -> str:
        return "ApiKey(****)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ApiKey):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash((ApiKey, self._value))


def resolve_api_key(
    explicit: str | ApiKey | None,
    env_vars: Sequence[str],
    *,
    provider: str,
    required: bool,
    environ: Mapping[str, str] | None = None,
) -> ApiKey | None:
    """Return the key passed in, else the first of ``env_vars`` that is set and not empty.

    When nothing is found and ``required`` is true, raise
    :class:`~toolwire.exceptions.AuthenticationError` naming the variables to set; otherwise
    return ``None`` (for servers that take no key, such as a local Ollama).
    ``environ`` defaults to ``os.environ``.
    """
    if isinstance(explicit, ApiKey):
        return explicit
    if explicit is not None:
        if not isinstance(explicit, str):
            raise UsageError(
                f"api_key for {provider} must be a str or ApiKey, got {type(explicit).__name__}"
            )
        if explicit:
            return ApiKey(explicit)
    if environ is None:
        import os

        environ = os.environ
    for name in env_vars:
        value = environ.get(name)
        if value:
            return ApiKey(value)
    if not required:
        return None
    if not env_vars:
        where = "pass api_key=..."
    elif len(env_vars) == 1:
        where = f"pass api_key=... or set the environment variable {env_vars[0]}"
    else:
        where = "pass api_key=... or set one of the environment variables " + ", ".join(env_vars)
    given = " (the api_key given was empty)" if explicit == "" else ""
    raise AuthenticationError(f"no API key for {provider}{given}: {where}", provider=provider)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, _MASK)
    return text


def _scrub_list(key: ApiKey | None) -> tuple[str, ...]:
    if key is None or len(key.get()) < _MIN_SCRUB_LENGTH:
        return ()
    value = key.get()
    quoted = quote(value, safe="")
    return (value,) if quoted == value else (value, quoted)


_SECRET_QUERY_NAMES = frozenset(
    {"key", "api_key", "apikey", "api-key", "x-goog-api-key", "access_token", "token", "sig"}
)


def redact_url(url: str | httpx.URL) -> str:
    """Return ``url`` with secrets masked: ``key=`` and similar query values, and passwords.

    Never raises; a URL that cannot be parsed is returned as ``<unparseable url>``.
    """
    text = str(url)
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user = userinfo.partition(":")[0]
            netloc = f"{user}:{_MASK}@{host}" if ":" in userinfo else f"{_MASK}@{host}"
        query = parts.query
        if query:
            pieces = query.split("&")
            for i, piece in enumerate(pieces):
                name, eq, _ = piece.partition("=")
                if eq and unquote(name).lower() in _SECRET_QUERY_NAMES:
                    pieces[i] = f"{name}={_MASK}"
            query = "&".join(pieces)
        if netloc == parts.netloc and query == parts.query:
            return text
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except Exception:
        return "<unparseable url>"


class _RedactHttpxUrls(logging.Filter):
    """Masks ``key=`` in httpx's own request log ("HTTP Request: POST <url> ...")."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, httpx.URL) for a in args):
            record.args = tuple(redact_url(a) if isinstance(a, httpx.URL) else a for a in args)
        return True


_httpx_filter_lock = threading.Lock()
_httpx_filter_installed = False


def _install_httpx_log_filter() -> None:
    """httpx logs every request URL at INFO; with query-parameter auth that URL holds the key."""
    global _httpx_filter_installed
    with _httpx_filter_lock:
        if not _httpx_filter_installed:
            logging.getLogger("httpx").addFilter(_RedactHttpxUrls())
            _httpx_filter_installed = True


@attrs.frozen
class AuthStyle:
    """Where the key goes: a header (``name: prefix + key``) or a query parameter (``?name=key``).

    Use :meth:`bearer` (OpenAI, OpenRouter), :meth:`header` (Anthropic ``x-api-key``,
    Gemini ``x-goog-api-key``) or :meth:`query` (Gemini ``key=``).
    """

    location: Literal["header", "query"] = attrs.field(
        validator=attrs.validators.in_(("header", "query"))
    )
    name: str = attrs.field(validator=attrs.validators.min_len(1))
    prefix: str = ""

    @classmethod
    def bearer(cls) -> AuthStyle:
        """``Authorization: Bearer <key>``."""
        return cls("header", "Authorization", "Bearer ")

    @classmethod
    def header(cls, name: str, prefix: str = "") -> AuthStyle:
        """``<name>: <prefix><key>``."""
        return cls("header", name, prefix)

    @classmethod
    def query(cls, name: str = "key") -> AuthStyle:
        """``?<name>=<key>`` (masked in every log line and error)."""
        return cls("query", name)


publish(globals())
