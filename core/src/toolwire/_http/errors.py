"""Error mapping: an HTTP response, or an error object inside a stream, becomes the right
:class:`~toolwire.exceptions.ProviderError` with the provider's own message and never the key."""

from __future__ import annotations

import json
from collections.abc import (
    Callable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING

import attrs
import httpx

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
)
from toolwire._exports import publish
from toolwire._http.keys import _scrub, redact_url
from toolwire._http.retry import parse_retry_after

if TYPE_CHECKING:
    pass


_SNIPPET_CHARS = 300
_BODY_CHARS = 4000


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
        # Scrub first, cut after: a key straddling a cut would survive in part otherwise.
        text = _scrub(text, secrets)
        try:
            payload: object = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):
            payload = None
        detail = self.extract_detail(payload, text)
        headers = response.headers
        request_id = headers.get("x-request-id") or headers.get("request-id")
        retry_after = parse_retry_after(headers)
        if detail is not None:
            request_id = request_id or detail.request_id
            if retry_after is None:
                retry_after = detail.retry_after
        request_id = _clean_id(request_id, secrets)
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
            body=text[:_BODY_CHARS],
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
        text = _scrub(json.dumps(payload, ensure_ascii=False, default=str), secrets)
        if secrets:
            payload = json.loads(text)  # the scrubbed payload: details are cut after this
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
            request_id=_clean_id(detail.request_id if detail else None, secrets),
            body=text[:_BODY_CHARS],
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


_MAX_REQUEST_ID = 200


def _clean_id(request_id: str | None, secrets: Sequence[str]) -> str | None:
    """A request id as the provider sent it, scrubbed and of a sane length."""
    if not request_id:
        return None
    return _scrub(request_id, secrets)[:_MAX_REQUEST_ID]


def _snippet(text: str, limit: int = _SNIPPET_CHARS) -> str:
    collapsed = " ".join(text.split())
    if len(collapsed) > limit:
        return collapsed[:limit] + "…"
    return collapsed


publish(globals())
