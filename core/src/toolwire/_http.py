"""The provider transport: keys, retries, error mapping, SSE, and one shared httpx client.

Every provider adapter (OpenAI, Anthropic, Gemini, OpenAI-compatible servers) is a
thin layer over :class:`Transport`. The pieces are usable on their own:

- :class:`ApiKey` and :func:`resolve_api_key`: a secret that never shows itself;
- :class:`RetryPolicy` and :func:`parse_retry_after`: bounded exponential backoff
  with jitter that honours the provider's Retry-After;
- :class:`ErrorMapper`: an HTTP response (or an error object inside a stream)
  becomes the right :class:`~toolwire.ProviderError` subclass, with the provider's
  own message, its request id, and never the key;
- :class:`SSEDecoder`, :func:`iter_sse` and :func:`aiter_sse`: an incremental
  server-sent-events decoder that follows the WHATWG rules;
- :class:`Transport`: ``post_json`` / ``apost_json`` and ``stream_sse`` /
  ``astream_sse`` with the mapping and the retries above.
"""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import timezone
from typing import TYPE_CHECKING, Any, Literal, Protocol, final
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import attrs
import httpx

from toolwire._backoff import backoff
from toolwire._errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamError,
    UsageError,
)
from toolwire._exports import publish

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from httpx._client import UseClientDefault

__all__ = [
    "ApiKey",
    "AuthStyle",
    "DEFAULT_CONTEXT_LENGTH_MARKERS",
    "DEFAULT_TIMEOUT",
    "ErrorDetail",
    "ErrorMapper",
    "RandomSource",
    "RetryPolicy",
    "SSEDecoder",
    "SSEEvent",
    "Transport",
    "aiter_sse",
    "extract_error_detail",
    "iter_sse",
    "parse_retry_after",
    "redact_url",
    "resolve_api_key",
]

logger = logging.getLogger("toolwire.http")

#: Connect quickly or fail; allow long generations. Non-streaming requests to
#: reasoning models routinely take minutes (the official SDKs default to 600 s),
#: and for a stream the read timeout is the longest silence between two chunks.
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=30.0)

_MASK = "****"
# Placeholder keys ("x", "ollama" is 6) are not secrets; masking every "x" in a
# message would make it unreadable. Anything 4 characters or longer is scrubbed.
_MIN_SCRUB_LENGTH = 4
_SNIPPET_CHARS = 300
_BODY_CHARS = 4000


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


# -------------------------------------------------------------------------- retry


class RandomSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1), such as :class:`random.Random`."""

    def random(self) -> float: ...


def _non_negative(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"RetryPolicy.{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"RetryPolicy.{name} must be a finite number >= 0, got {value!r}")

    return check


def _check_max_retries(_instance: Any, _attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"RetryPolicy.max_retries must be an int, got {type(value).__name__}")
    if value < 0:
        raise UsageError(f"RetryPolicy.max_retries must be >= 0 (extra attempts), got {value}")


def _check_jitter(_instance: Any, _attribute: Any, value: Any) -> None:
    _non_negative("jitter")(_instance, _attribute, value)
    if value > 1:
        raise UsageError(f"RetryPolicy.jitter must be a fraction between 0 and 1, got {value!r}")


@attrs.frozen
class RetryPolicy:
    """How transient provider errors are retried.

    ``max_retries`` counts *extra* attempts (2 means up to 3 requests). The delay
    before retry ``n`` (from 0) is ``min(initial_backoff * 2**n, max_backoff)``
    reduced by a random fraction of up to ``jitter``, so it never exceeds
    ``max_backoff``. When the provider sends Retry-After and
    ``respect_retry_after`` is on, that value replaces the computed delay,
    capped at ``max_retry_after``.
    """

    max_retries: int = attrs.field(default=2, validator=_check_max_retries)
    initial_backoff: float = attrs.field(default=0.5, validator=_non_negative("initial_backoff"))
    max_backoff: float = attrs.field(default=8.0, validator=_non_negative("max_backoff"))
    jitter: float = attrs.field(default=0.25, validator=_check_jitter)
    respect_retry_after: bool = True
    max_retry_after: float = attrs.field(default=60.0, validator=_non_negative("max_retry_after"))

    def __attrs_post_init__(self) -> None:
        if self.max_backoff < self.initial_backoff:
            raise UsageError(
                "RetryPolicy.max_backoff must be >= initial_backoff, got "
                f"max_backoff={self.max_backoff!r} < initial_backoff={self.initial_backoff!r}"
            )

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_retries=0)

    def delay(
        self, attempt: int, retry_after: float | None = None, rng: RandomSource | None = None
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (0 for the first retry)."""
        if attempt < 0:
            raise UsageError(f"attempt must be >= 0 (0 is the first retry), got {attempt}")
        if (
            self.respect_retry_after
            and retry_after is not None
            and not math.isnan(retry_after)
            and retry_after >= 0
        ):
            return min(float(retry_after), self.max_retry_after)
        return backoff(
            attempt,
            initial=self.initial_backoff,
            maximum=self.max_backoff,
            jitter=self.jitter,
            fraction=(rng or random).random() if self.jitter else 0.0,
        )


def _header_lookup(headers: Mapping[str, str] | httpx.Headers, name: str) -> str | None:
    if isinstance(headers, httpx.Headers):
        found: str | None = headers.get(name)
        return found
    value = headers.get(name)
    if value is not None:
        return value
    for key, item in headers.items():
        if key.lower() == name:
            return item
    return None


def parse_retry_after(
    headers: Mapping[str, str] | httpx.Headers, *, now: float | None = None
) -> float | None:
    """Seconds the provider asked to wait, or ``None``.

    Reads ``retry-after-ms`` (milliseconds, OpenAI) first, then ``retry-after`` as
    seconds (``"3"``, ``"1.5"``) or an HTTP date (relative to ``now``, a Unix time,
    default the current time; a date in the past gives ``0.0``). Garbage,
    negative and non-finite values give ``None``; this function never raises.
    """
    try:
        raw_ms = _header_lookup(headers, "retry-after-ms")
        if raw_ms is not None:
            ms = _parse_seconds(raw_ms)
            if ms is not None:
                return ms / 1000.0
        raw = _header_lookup(headers, "retry-after")
        if raw is None:
            return None
        seconds = _parse_seconds(raw)
        if seconds is not None:
            return seconds
        when = email.utils.parsedate_to_datetime(raw.strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        reference = time.time() if now is None else now
        return max(0.0, when.timestamp() - reference)
    except Exception:
        return None


def _parse_seconds(text: str) -> float | None:
    text = text.strip()
    if not text or not (text[0].isdigit() or text[0] == "."):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# ------------------------------------------------------------------------- errors


@attrs.frozen
class ErrorDetail:
    """What a provider said in an error body.

    ``type`` is OpenAI's/Anthropic's ``error.type`` or Gemini's ``error.status``;
    ``code`` is ``error.code`` as text; ``reason`` is Gemini's ``ErrorInfo.reason``;
    ``retry_after`` is Gemini's ``RetryInfo.retryDelay`` in seconds.
    """

    message: str
    type: str | None = None
    code: str | None = None
    reason: str | None = None
    retry_after: float | None = None
    request_id: str | None = None


def _text_or_none(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def extract_error_detail(payload: object, text: str) -> ErrorDetail | None:
    """Read the provider's message out of a decoded error body (the default hook).

    Understands the common shapes: ``{"error": {"message", "type" or "status",
    "code"}}`` (also wrapped in a list, as some streaming endpoints send it, and with
    OpenRouter's ``metadata.raw``), ``{"error": "..."}``, a top-level ``{"message",
    "type", "code"}`` and FastAPI's ``{"detail": ...}``. A provider with more to read
    (Gemini's ``details``) wraps this function in its adapter. ``payload`` is
    the decoded JSON (``None`` when the body is not JSON), ``text`` the raw body.
    Returns ``None`` when nothing recognisable is there.
    """
    del text  # the default reads only JSON; the raw text is for custom hooks
    obj = payload
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        obj = obj[0]
    if not isinstance(obj, dict):
        return None
    request_id = _text_or_none(obj.get("request_id"))
    error = obj.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        if not isinstance(message, str) or not message:
            message = json.dumps(error, ensure_ascii=False)[:_SNIPPET_CHARS]
        metadata = error.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
            upstream = metadata.get("provider_name")
            where = f"{upstream}: " if isinstance(upstream, str) else ""
            message = f"{message} ({where}{metadata['raw'][:_SNIPPET_CHARS]})"
        kind = error.get("type") if isinstance(error.get("type"), str) else error.get("status")
        return ErrorDetail(
            message=message,
            type=kind if isinstance(kind, str) else None,
            code=_text_or_none(error.get("code")),
            request_id=request_id,
        )
    if isinstance(error, str) and error:
        return ErrorDetail(message=error, request_id=request_id)
    message = obj.get("message")
    if isinstance(message, str) and message:
        kind = obj.get("type")
        return ErrorDetail(
            message=message,
            type=kind if isinstance(kind, str) else None,
            code=_text_or_none(obj.get("code")),
            request_id=request_id,
        )
    detail = obj.get("detail")
    if isinstance(detail, str) and detail:
        return ErrorDetail(message=detail, request_id=request_id)
    if isinstance(detail, list) and detail:
        return ErrorDetail(
            message=json.dumps(detail, ensure_ascii=False)[:_SNIPPET_CHARS], request_id=request_id
        )
    return None


#: Lower-cased fragments that mean "the request is longer than the context window", in
#: any provider's words; each adapter adds its provider's own wordings.
DEFAULT_CONTEXT_LENGTH_MARKERS: tuple[str, ...] = (
    "context length",
    "context_length",
    "context window",
)


@attrs.frozen
class ErrorMapper:
    """Turns a failed HTTP response (or an error object in a stream) into a ProviderError.

    =======================  ==========================================================
    HTTP status              error
    =======================  ==========================================================
    401                      AuthenticationError (also a 400 ``auth_failure_markers`` match)
    403                      PermissionDeniedError
    404                      NotFoundError
    408                      ProviderTimeoutError (transient)
    409, 425                 ServerError (transient: a lock timeout or "too early";
                             the OpenAI and Anthropic SDKs retry 409 too)
    429                      RateLimitError (transient, unless its code is one of
                             ``permanent_codes``: waiting does not fix those)
    529, 5xx + "overload"    OverloadedError (transient)
    other 5xx                ServerError (transient)
    400, 413, 422            ContextLengthError when the message says the context
                             window was exceeded, else BadRequestError
    anything else            ProviderError (not transient)
    =======================  ==========================================================

    The message is the provider's own, read by ``extract`` (default
    :func:`extract_error_detail`; pass your own callable or subclass and override
    :meth:`extract_detail`), falling back to the raw body, truncated. Occurrences
    of the secrets passed in are masked in the message and the body.
    """

    extract: Callable[[object, str], ErrorDetail | None] = extract_error_detail
    context_length_markers: tuple[str, ...] = DEFAULT_CONTEXT_LENGTH_MARKERS
    #: Error ``type``/``status``/``code`` words (lower case) -> the HTTP status they stand
    #: for, for errors that arrive inside a stream with no status of their own.
    kind_status: Mapping[str, int] = attrs.field(factory=dict, eq=False, hash=False)
    #: Fragments (of the detail's reason or lower-cased message) that make a 400 an
    #: authentication failure (Gemini answers a bad key with 400 ``API_KEY_INVALID``).
    auth_failure_markers: tuple[str, ...] = ()
    #: Error codes that waiting does not fix (OpenAI's ``insufficient_quota`` 429).
    permanent_codes: frozenset[str] = frozenset()

    def extract_detail(self, payload: object, text: str) -> ErrorDetail | None:
        """The provider's error detail from the decoded body (``None`` if not JSON) and text."""
        return self.extract(payload, text)

    def is_context_length(self, detail: ErrorDetail) -> bool:
        """Whether the detail says the request exceeded the model's context window."""
        haystack = " ".join(p for p in (detail.code, detail.type, detail.message) if p).lower()
        return any(marker in haystack for marker in self.context_length_markers)

    def is_auth_failure(self, detail: ErrorDetail, message: str) -> bool:
        """Whether a 400's detail says the API key is wrong (see ``auth_failure_markers``)."""
        reason = detail.reason or ""
        return any(m == reason or m in message for m in self.auth_failure_markers)

    def classify(self, status: int | None, detail: ErrorDetail | None) -> type[ProviderError]:
        """The error class for an HTTP status (or ``None``: inferred from the detail)."""
        kind = ((detail.type or "") if detail else "").lower()
        if status is None and detail is not None:
            status = self.kind_status.get(kind) or self.kind_status.get((detail.code or "").lower())
            if status is None and detail.code and detail.code.isdigit():
                status = int(detail.code)
        if status is None:
            return ProviderError
        message = detail.message.lower() if detail else ""
        if status == 401 or (
            detail is not None and status == 400 and self.is_auth_failure(detail, message)
        ):
            return AuthenticationError
        if status == 403:
            return PermissionDeniedError
        if status == 404:
            return NotFoundError
        if status == 408:
            return ProviderTimeoutError
        if status in (409, 425):
            return ServerError
        if status == 429:
            return RateLimitError
        if status == 529 or (status >= 500 and ("overload" in kind or "overload" in message)):
            return OverloadedError
        if status >= 500:
            return ServerError
        if 400 <= status < 500:
            if detail is not None and self.is_context_length(detail):
                return ContextLengthError
            if status in (400, 413, 422):
                return BadRequestError
        return ProviderError

    def map_response(
        self, response: httpx.Response, *, provider: str, secrets: Sequence[str] = ()
    ) -> ProviderError:
        """The error for a non-success response whose body has been read."""
        status = response.status_code
        try:
            text = response.text
        except Exception:
            text = response.content.decode("utf-8", "replace")
        try:
            payload: object = json.loads(text) if text.strip() else None
        except ValueError:
            payload = None
        detail = self.extract_detail(payload, text)
        headers = response.headers
        request_id = headers.get("x-request-id") or headers.get("request-id")
        retry_after = parse_retry_after(headers)
        if detail is not None:
            request_id = request_id or detail.request_id
            if retry_after is None:
                retry_after = detail.retry_after
        if detail is not None and detail.message:
            message = detail.message
        else:
            reason = response.reason_phrase or "error"
            snippet = _snippet(text)
            message = (
                f"HTTP {status} {reason}: {snippet}"
                if snippet
                else f"HTTP {status} {reason} with an empty body"
            )
        cls = self.classify(status, detail)
        error = cls(
            _scrub(message, secrets),
            provider=provider,
            status=status,
            retry_after=retry_after,
            request_id=request_id,
            body=_scrub(text[:_BODY_CHARS], secrets),
        )
        if detail is not None and detail.code in self.permanent_codes:
            error.transient = False
        return error

    def map_payload(
        self,
        payload: object,
        *,
        provider: str,
        status: int | None = None,
        secrets: Sequence[str] = (),
        default: type[ProviderError] = ProviderError,
    ) -> ProviderError:
        """The error for an error object that arrived inside a stream (after HTTP 200).

        Anthropic ``event: error`` data, an OpenRouter ``{"error": ...}`` chunk, a
        Gemini error list. Without ``status`` the class is inferred from the
        error's type or code; ``default`` is used when nothing says.
        """
        text = json.dumps(payload, ensure_ascii=False, default=str)
        detail = self.extract_detail(payload, text)
        cls = self.classify(status, detail)
        if cls is ProviderError:
            cls = default
        message = detail.message if detail is not None else f"error in stream: {_snippet(text)}"
        error = cls(
            _scrub(message, secrets),
            provider=provider,
            status=status,
            retry_after=detail.retry_after if detail else None,
            request_id=detail.request_id if detail else None,
            body=_scrub(text[:_BODY_CHARS], secrets),
        )
        if detail is not None and detail.code in self.permanent_codes:
            error.transient = False
        return error

    def map_exception(
        self, exc: httpx.HTTPError, *, provider: str, url: str, secrets: Sequence[str] = ()
    ) -> ProviderError:
        """The error for an httpx exception raised while sending or receiving.

        Timeouts become ProviderTimeoutError; connection failures and a peer that
        closed the connection become ProviderConnectionError (both transient);
        anything else (a bad URL scheme, a broken content encoding) is a plain
        ProviderError. The httpx exception is kept as ``__cause__``.
        """
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        where = redact_url(url)
        cls: type[ProviderError]
        if isinstance(exc, httpx.TimeoutException):
            cls, text = ProviderTimeoutError, f"request to {where} timed out ({what})"
        elif isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)):
            cls, text = ProviderConnectionError, f"connection to {where} failed ({what})"
        else:
            cls, text = ProviderError, f"request to {where} failed ({what})"
        error = cls(_scrub(text, secrets), provider=provider)
        error.__cause__ = exc
        return error


def _snippet(text: str, limit: int = _SNIPPET_CHARS) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) > limit:
        return collapsed[:limit] + "…"
    return collapsed


# ---------------------------------------------------------------------------- SSE


@attrs.frozen
class SSEEvent:
    """One server-sent event.

    ``event`` is the event type (``"message"`` when the stream named none),
    ``data`` the data lines joined with ``"\\n"``, ``id`` the last event id seen
    on the stream (``""`` if none), ``retry`` the reconnection time in
    milliseconds when this event's block set one.
    """

    event: str
    data: str
    id: str = ""
    retry: int | None = None

    def json(self) -> Any:
        """``data`` decoded as JSON (raises ``json.JSONDecodeError`` if it is not)."""
        return json.loads(self.data)


_EOL = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (WHATWG HTML, "Server-sent events").

    Feed bytes in any fragmentation; get the events completed so far. Lines end
    in CRLF, LF or CR (also a CR at the end of one chunk and the LF at the start
    of the next); UTF-8 may be split anywhere and invalid bytes decode to U+FFFD;
    a leading BOM is dropped; ``:`` lines are comments; one space after the colon
    is stripped; ``data`` lines are joined with ``"\\n"``; ``id`` with a NUL is
    ignored; ``retry`` must be ASCII digits; unknown fields are ignored; an
    event is dispatched on a blank line, and only when it has data.

    The decoder never raises on input. At the end of the stream call
    :meth:`finish`; :attr:`truncated` then says whether an event was cut off
    (data that no blank line completed): the caller decides what that means.
    """

    __slots__ = ("_data", "_decoder", "_event", "_last_id", "_parts", "_retry", "_skip_lf")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._parts: list[str] = []
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._last_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The last ``id`` the stream set (``""`` if none)."""
        return self._last_id

    @property
    def truncated(self) -> bool:
        """True when data (or an unfinished, non-comment line) waits for a blank line."""
        if self._data or self._event:
            return True
        partial = "".join(self._parts)
        return bool(partial) and not partial.startswith(":")

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed (possibly none)."""
        return self._feed_text(self._decoder.decode(chunk))

    def finish(self) -> list[SSEEvent]:
        """Mark the end of the stream; flushes a partial UTF-8 sequence into the last line.

        Returns the events completed by that flush (in practice none: an event
        needs a blank line, and the end of the stream is not one).
        """
        return self._feed_text(self._decoder.decode(b"", final=True))

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\n" not in text and "\r" not in text:
            self._parts.append(text)
            return []
        if self._parts:
            self._parts.append(text)
            text = "".join(self._parts)
            self._parts.clear()
        events: list[SSEEvent] = []
        pos = 0
        end = len(text)
        for match in _EOL.finditer(text):
            line = text[pos : match.start()]
            pos = match.end()
            if pos == end and match.group() == "\r":
                self._skip_lf = True
            event = self._line(line)
            if event is not None:
                events.append(event)
        if pos < end:
            self._parts.append(text[pos:])
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            self._retry = None
            return None
        event = SSEEvent(
            event=self._event or "message",
            data="\n".join(self._data),
            id=self._last_id,
            retry=self._retry,
        )
        self._data.clear()
        self._event = ""
        self._retry = None
        return event


def iter_sse(chunks: Iterable[bytes], decoder: SSEDecoder | None = None) -> Iterator[SSEEvent]:
    """Events from an iterable of byte chunks.

    An event cut off by the end of ``chunks`` is not yielded; pass your own
    ``decoder`` and check ``decoder.truncated`` afterwards to tell.
    """
    decoder = SSEDecoder() if decoder is None else decoder
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.finish()


async def aiter_sse(
    chunks: AsyncIterable[bytes], decoder: SSEDecoder | None = None
) -> AsyncIterator[SSEEvent]:
    """Events from an async iterable of byte chunks (see :func:`iter_sse`)."""
    decoder = SSEDecoder() if decoder is None else decoder
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.finish():
        yield event


# ---------------------------------------------------------------------- transport


def _dumps(body: Mapping[str, Any], provider: str) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except TypeError as exc:
        raise UsageError(
            f"the request body for {provider} must be JSON-serializable: {exc}"
        ) from exc
    except ValueError as exc:
        raise UsageError(
            f"the request body for {provider} must be valid JSON (no NaN or infinity): {exc}"
        ) from exc


def _is_json_content(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


class Transport:
    """HTTP for one provider instance: one lazily created ``httpx.Client`` and ``AsyncClient``.

    ``base_url`` is joined with each request's ``path`` (an absolute ``http(s)://``
    path is used as is). The key (resolve it with :func:`resolve_api_key`) is sent
    as ``auth`` says, by default ``Authorization: Bearer``. ``timeout`` defaults to
    :data:`DEFAULT_TIMEOUT` for the clients this transport creates and to the
    client's own setting for clients you pass; an explicit value applies to every
    request. Clients you pass are never closed by :meth:`close`/:meth:`aclose`.

    Transient failures (rate limit, overload, 5xx, connection, timeout; an
    ``x-should-retry`` response header overrides either way) are retried per
    ``retry``, sleeping through ``sleep`` / ``async_sleep`` (injectable for tests).
    Every error is a :class:`~toolwire.ProviderError`; none contains the key.
    """

    __slots__ = (
        "_async_client",
        "_async_sleep",
        "_auth",
        "_base_url",
        "_client",
        "_client_timeout",
        "_json_headers",
        "_key",
        "_lock",
        "_mapper",
        "_own_async_client",
        "_own_client",
        "_provider",
        "_query_auth",
        "_retry",
        "_rng",
        "_secrets",
        "_sleep",
        "_stream_headers",
        "_timeout",
    )

    def __init__(
        self,
        provider: str,
        base_url: str,
        *,
        api_key: ApiKey | str | None = None,
        auth: AuthStyle | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        error_mapper: ErrorMapper | None = None,
        client: httpx.Client | None = None,
        async_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        self._provider = provider
        self._base_url = base_url.rstrip("/")
        self._key = ApiKey(api_key) if isinstance(api_key, str) else api_key
        self._auth = AuthStyle.bearer() if auth is None else auth
        self._secrets = _scrub_list(self._key)
        self._retry = RetryPolicy() if retry is None else retry
        self._mapper = ErrorMapper() if error_mapper is None else error_mapper
        self._client = client
        self._own_client = client is None
        self._async_client = async_client
        self._own_async_client = async_client is None
        self._sleep: Callable[[float], None] = time.sleep if sleep is None else sleep
        self._async_sleep: Callable[[float], Awaitable[None]] = (
            asyncio.sleep if async_sleep is None else async_sleep
        )
        self._rng = rng
        self._lock = threading.Lock()
        self._client_timeout = DEFAULT_TIMEOUT if timeout is None else httpx.Timeout(timeout)
        self._timeout: httpx.Timeout | UseClientDefault = (
            httpx.USE_CLIENT_DEFAULT if timeout is None else httpx.Timeout(timeout)
        )
        base_headers = {"content-type": "application/json"}
        base_headers.update(headers or {})
        self._query_auth: str | None = None
        if self._key is not None:
            if self._auth.location == "header":
                base_headers[self._auth.name] = self._auth.prefix + self._key.get()
            else:
                self._query_auth = f"{quote(self._auth.name)}={quote(self._key.get(), safe='')}"
                _install_httpx_log_filter()
        self._json_headers = {"accept": "application/json", **base_headers}
        self._stream_headers = {"accept": "text/event-stream", **base_headers}

    @property
    def provider(self) -> str:
        """The provider name used in errors."""
        return self._provider

    @property
    def base_url(self) -> str:
        """The base URL requests are joined to."""
        return self._base_url

    @property
    def auth(self) -> AuthStyle:
        """Where the key is sent."""
        return self._auth

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy."""
        return self._retry

    @property
    def error_mapper(self) -> ErrorMapper:
        """The error mapper."""
        return self._mapper

    def __repr__(self) -> str:
        key = "None" if self._key is None else repr(self._key)
        return (
            f"Transport(provider={self._provider!r}, base_url={redact_url(self._base_url)!r}, "
            f"auth={self._auth.location}:{self._auth.name}, api_key={key})"
        )

    # -- clients

    def _sync_client(self) -> httpx.Client:
        client = self._client
        if client is None:
            with self._lock:
                client = self._client
                if client is None:
                    client = self._client = httpx.Client(timeout=self._client_timeout)
        return client

    def _aclient(self) -> httpx.AsyncClient:
        client = self._async_client
        if client is None:
            with self._lock:
                client = self._async_client
                if client is None:
                    client = self._async_client = httpx.AsyncClient(timeout=self._client_timeout)
        return client

    def close(self) -> None:
        """Close the sync client if this transport created it (use :meth:`aclose` for async)."""
        if self._own_client and self._client is not None:
            client, self._client = self._client, None
            client.close()

    async def aclose(self) -> None:
        """Close every client this transport created, the async one and the sync one."""
        if self._own_async_client and self._async_client is not None:
            client, self._async_client = self._async_client, None
            await client.aclose()
        self.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- errors built outside the transport

    def scrub(self, text: str) -> str:
        """``text`` with this transport's key masked, as in every error the transport raises.

        For messages an adapter builds itself (a malformed reply, an in-stream
        error). Placeholder keys shorter than 4 characters are left alone.
        """
        return _scrub(text, self._secrets)

    def error_from_payload(
        self, payload: object, *, default: type[ProviderError] = ProviderError
    ) -> ProviderError:
        """The error for an error object inside a 200 response or a stream, key masked.

        :meth:`ErrorMapper.map_payload` with this transport's provider and key;
        ``default`` is the class used when the payload names no known error.
        """
        return self._mapper.map_payload(
            payload, provider=self._provider, secrets=self._secrets, default=default
        )

    # -- shared pieces of the request loop

    def _url(self, path: str) -> tuple[str, str]:
        """(the URL to send, the URL to log)."""
        if path.startswith(("http://", "https://")):
            url = path
        else:
            url = f"{self._base_url}/{path.lstrip('/')}" if path else self._base_url
        shown = redact_url(url)
        if self._query_auth is not None:
            url = f"{url}{'&' if '?' in url else '?'}{self._query_auth}"
        return url, shown

    def _prepare(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str] | None, stream: bool
    ) -> tuple[str, str, bytes, Mapping[str, str]]:
        url, shown = self._url(path)
        content = _dumps(body, self._provider)
        base = self._stream_headers if stream else self._json_headers
        return url, shown, content, ({**base, **headers} if headers else base)

    def _request_timeout(
        self, timeout: httpx.Timeout | float | None
    ) -> httpx.Timeout | UseClientDefault:
        return self._timeout if timeout is None else httpx.Timeout(timeout)

    def _error_for(self, response: httpx.Response) -> ProviderError:
        return self._mapper.map_response(response, provider=self._provider, secrets=self._secrets)

    def _error_for_exception(self, exc: httpx.HTTPError, shown: str) -> ProviderError:
        return self._mapper.map_exception(
            exc, provider=self._provider, url=shown, secrets=self._secrets
        )

    def _backoff(
        self, error: ProviderError, response: httpx.Response | None, attempt: int, shown: str
    ) -> float | None:
        """Seconds to sleep before retrying, or None when ``error`` is final."""
        should = error.transient
        if response is not None:
            hint = response.headers.get("x-should-retry")
            if hint == "true":
                should = True
            elif hint == "false":
                should = False
        if not should or attempt >= self._retry.max_retries:
            logger.debug("POST %s failed on attempt %d: %s", shown, attempt + 1, error)
            return None
        delay = self._retry.delay(attempt, error.retry_after, self._rng)
        logger.info(
            "POST %s failed with %s (status %s) on attempt %d of %d; retrying in %.3fs",
            shown,
            type(error).__name__,
            error.status,
            attempt + 1,
            self._retry.max_retries + 1,
            delay,
        )
        return delay

    def _json_body(self, response: httpx.Response, shown: str) -> dict[str, Any]:
        try:
            data = json.loads(response.content)
        except ValueError:
            content_type = response.headers.get("content-type", "none")
            text = _scrub(_snippet(response.content.decode("utf-8", "replace")), self._secrets)
            raise ProviderError(
                f"expected a JSON object in the response to POST {shown}, got a body that is "
                f"not JSON (content-type {content_type}): {text!r}",
                provider=self._provider,
                status=response.status_code,
                request_id=response.headers.get("x-request-id")
                or response.headers.get("request-id"),
            ) from None
        if not isinstance(data, dict):
            raise ProviderError(
                f"expected a JSON object in the response to POST {shown}, "
                f"got a JSON {type(data).__name__}",
                provider=self._provider,
                status=response.status_code,
            )
        return data

    def _not_a_stream(self, response: httpx.Response, shown: str) -> ProviderError:
        error = self._error_for(response)
        return ProviderError(
            f"expected an event stream (text/event-stream) from POST {shown}, got "
            f"application/json: {error.message}",
            provider=self._provider,
            status=response.status_code,
            request_id=error.request_id,
            body=error.body,
        )

    def _broken_stream(
        self, shown: str, yielded: bool, exc: httpx.HTTPError | None
    ) -> ProviderError:
        if exc is None:
            what = "the stream ended in the middle of an event"
        else:
            what = _scrub(f"the stream broke off ({type(exc).__name__}: {exc})", self._secrets)
        if yielded:
            error: ProviderError = StreamError(
                f"{what} from POST {shown}; the events received so far are incomplete",
                provider=self._provider,
            )
        else:
            error = ProviderConnectionError(
                f"{what} from POST {shown} before its first event", provider=self._provider
            )
        if exc is not None:
            error.__cause__ = exc
        return error

    def _log_send(self, shown: str, attempt: int) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("POST %s (attempt %d)", shown, attempt + 1)

    def _log_status(self, shown: str, response: httpx.Response, attempt: int) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("POST %s -> %d (attempt %d)", shown, response.status_code, attempt + 1)

    # -- JSON

    def post_json(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> dict[str, Any]:
        """POST ``body`` as JSON and return the decoded JSON object, retrying transient errors."""
        url, shown, content, request_headers = self._prepare(path, body, headers, stream=False)
        request_timeout = self._request_timeout(timeout)
        client = self._sync_client()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            self._log_send(shown, attempt)
            try:
                response = client.post(
                    url, content=content, headers=request_headers, timeout=request_timeout
                )
            except httpx.HTTPError as exc:
                error = self._error_for_exception(exc, shown)
            else:
                self._log_status(shown, response, attempt)
                if response.is_success:
                    return self._json_body(response, shown)
                error = self._error_for(response)
            delay = self._backoff(error, response, attempt, shown)
            if delay is None:
                raise error
            self._sleep(delay)
            attempt += 1

    async def apost_json(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> dict[str, Any]:
        """Async :meth:`post_json`."""
        url, shown, content, request_headers = self._prepare(path, body, headers, stream=False)
        request_timeout = self._request_timeout(timeout)
        client = self._aclient()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            self._log_send(shown, attempt)
            try:
                response = await client.post(
                    url, content=content, headers=request_headers, timeout=request_timeout
                )
            except httpx.HTTPError as exc:
                error = self._error_for_exception(exc, shown)
            else:
                self._log_status(shown, response, attempt)
                if response.is_success:
                    return self._json_body(response, shown)
                error = self._error_for(response)
            delay = self._backoff(error, response, attempt, shown)
            if delay is None:
                raise error
            await self._async_sleep(delay)
            attempt += 1

    # -- SSE

    def stream_sse(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> Iterator[SSEEvent]:
        """POST ``body`` and iterate over the server-sent events of the response.

        The request is retried like :meth:`post_json` until the first event has
        been yielded; after that a broken connection or a stream that ends in the
        middle of an event raises :class:`~toolwire.exceptions.StreamError`. Exhaust or
        ``close()`` the iterator to release the connection.
        """
        prepared = self._prepare(path, body, headers, stream=True)
        return self._stream(*prepared, self._request_timeout(timeout))

    def _stream(
        self,
        url: str,
        shown: str,
        content: bytes,
        request_headers: Mapping[str, str],
        request_timeout: httpx.Timeout | UseClientDefault,
    ) -> Iterator[SSEEvent]:
        client = self._sync_client()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            yielded = False
            self._log_send(shown, attempt)
            try:
                with client.stream(
                    "POST", url, content=content, headers=request_headers, timeout=request_timeout
                ) as response:
                    self._log_status(shown, response, attempt)
                    if not response.is_success:
                        response.read()
                        error = self._error_for(response)
                    elif _is_json_content(response):
                        response.read()
                        raise self._not_a_stream(response, shown)
                    else:
                        decoder = SSEDecoder()
                        for chunk in response.iter_bytes():
                            for event in decoder.feed(chunk):
                                yielded = True
                                yield event
                        yield from decoder.finish()
                        if not decoder.truncated:
                            return
                        error = self._broken_stream(shown, yielded, None)
            except httpx.HTTPError as exc:
                if yielded:
                    raise self._broken_stream(shown, yielded, exc) from exc
                error = self._error_for_exception(exc, shown)
            delay = None if yielded else self._backoff(error, response, attempt, shown)
            if delay is None:
                raise error
            self._sleep(delay)
            attempt += 1

    def astream_sse(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> AsyncIterator[SSEEvent]:
        """Async :meth:`stream_sse`; ``aclose()`` the iterator if you stop early."""
        prepared = self._prepare(path, body, headers, stream=True)
        return self._astream(*prepared, self._request_timeout(timeout))

    async def _astream(
        self,
        url: str,
        shown: str,
        content: bytes,
        request_headers: Mapping[str, str],
        request_timeout: httpx.Timeout | UseClientDefault,
    ) -> AsyncIterator[SSEEvent]:
        client = self._aclient()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            yielded = False
            self._log_send(shown, attempt)
            try:
                async with client.stream(
                    "POST", url, content=content, headers=request_headers, timeout=request_timeout
                ) as response:
                    self._log_status(shown, response, attempt)
                    if not response.is_success:
                        await response.aread()
                        error = self._error_for(response)
                    elif _is_json_content(response):
                        await response.aread()
                        raise self._not_a_stream(response, shown)
                    else:
                        decoder = SSEDecoder()
                        async for chunk in response.aiter_bytes():
                            for event in decoder.feed(chunk):
                                yielded = True
                                yield event
                        for event in decoder.finish():
                            yield event
                        if not decoder.truncated:
                            return
                        error = self._broken_stream(shown, yielded, None)
            except httpx.HTTPError as exc:
                if yielded:
                    raise self._broken_stream(shown, yielded, exc) from exc
                error = self._error_for_exception(exc, shown)
            delay = None if yielded else self._backoff(error, response, attempt, shown)
            if delay is None:
                raise error
            await self._async_sleep(delay)
            attempt += 1


publish(globals())
