"""Error responses in each provider's own shape.

``kind`` is one of :data:`ERROR_KINDS`:

==============  ======  ==========  ==============  =====================
kind            OpenAI  Anthropic   Gemini          meaning
==============  ======  ==========  ==============  =====================
auth            401     401         400 (!)         bad or missing key
permission      403     403         403             key lacks access
not_found       404     404         404             unknown model
rate_limit      429     429         429             slow down
server          500     500         500             transient server fault
overloaded      503     529         503             overloaded
context_length  400     400         400             prompt too long
bad_request     400     400         400             anything else invalid
==============  ======  ==========  ==============  =====================

Gemini answers an invalid API key with 400 ``INVALID_ARGUMENT`` and an
``ErrorInfo`` detail whose reason is ``API_KEY_INVALID``, not with 401.

Wordings: the context-length messages are the ones users report from the real
APIs (OpenAI ``This model's maximum context length is ...`` with code
``context_length_exceeded``; Anthropic ``prompt is too long: N tokens > M
maximum``, e.g. anthropics/claude-code#12186; Gemini ``The input token count
(N) exceeds the maximum number of tokens allowed (M).``, e.g.
google-gemini/gemini-cli#6678). The other messages follow the same public
reports; adapters should key on status, type and code, never on the wording.

``retry_after`` becomes a ``retry-after`` header: a number of seconds, or an
HTTP date when given an aware ``datetime``. ``retry_after_ms`` becomes
``retry-after-ms`` (read by the openai and anthropic SDKs). Gemini does not
send ``retry-after``; for it ``retry_after`` becomes a ``google.rpc.RetryInfo``
detail (``retryDelay: "2s"``), which is what the API really sends; pass
``headers=`` to add a header anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.utils import format_datetime
from typing import Any, Literal

from ._server import JSONResponse

__all__ = [
    "ERROR_KINDS",
    "ErrorKind",
    "anthropic_error",
    "anthropic_error_body",
    "gemini_error",
    "gemini_error_body",
    "openai_error",
    "openai_error_body",
    "retry_headers",
]

ErrorKind = Literal[
    "auth",
    "permission",
    "not_found",
    "rate_limit",
    "server",
    "overloaded",
    "context_length",
    "bad_request",
]
ERROR_KINDS: tuple[ErrorKind, ...] = (
    "auth",
    "permission",
    "not_found",
    "rate_limit",
    "server",
    "overloaded",
    "context_length",
    "bad_request",
)


def retry_headers(
    retry_after: float | datetime | str | None = None, retry_after_ms: float | None = None
) -> dict[str, str]:
    headers: dict[str, str] = {}
    if isinstance(retry_after, datetime):
        if retry_after.tzinfo is None:
            raise ValueError("retry_after datetime must be timezone-aware (use UTC)")
        headers["retry-after"] = format_datetime(retry_after, usegmt=True)
    elif isinstance(retry_after, str):
        headers["retry-after"] = retry_after
    elif retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    return headers


def _check_kind(kind: str) -> None:
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}; expected one of {ERROR_KINDS}")


# -- OpenAI ----------------------------------------------------------------


def openai_error_body(
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}`` (``openai.types.ErrorObject``)."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


_OPENAI: dict[str, tuple[int, str, str, str | None, str | None]] = {
    # kind: (status, message, type, param, code)
    "auth": (
        401,
        "Incorrect API key provided: sk-fake***************. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        None,
        "invalid_api_key",
    ),
    "permission": (
        403,
        "You are not allowed to sample from this model",
        "invalid_request_error",
        None,
        None,
    ),
    "not_found": (
        404,
        "The model `gpt-fake` does not exist or you do not have access to it.",
        "invalid_request_error",
        None,
        "model_not_found",
    ),
    "rate_limit": (
        429,
        "Rate limit reached for gpt-fake in organization org-fake on tokens per min (TPM): "
        "Limit 30000, Used 29000, Requested 2000. Please try again in 2s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more.",
        "tokens",
        None,
        "rate_limit_exceeded",
    ),
    "server": (
        500,
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
        None,
    ),
    "overloaded": (
        503,
        "The engine is currently overloaded, please try again later.",
        "server_error",
        None,
        None,
    ),
    "context_length": (
        400,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130532 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    ),
    "bad_request": (
        400,
        "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'.",
        "invalid_request_error",
        "tool_choice",
        "invalid_value",
    ),
}


def openai_error(
    kind: ErrorKind,
    *,
    message: str | None = None,
    code: str | None = None,
    retry_after: float | datetime | str | None = None,
    retry_after_ms: float | None = None,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> JSONResponse:
    """An OpenAI error response (Chat Completions and Responses share it)."""
    _check_kind(kind)
    status, default_message, type_, param, default_code = _OPENAI[kind]
    body = openai_error_body(
        message or default_message, type=type_, param=param, code=code or default_code
    )
    all_headers = {**retry_headers(retry_after, retry_after_ms), **(headers or {})}
    return JSONResponse(body, status=status, headers=all_headers, delay=delay)


# -- Anthropic ---------------------------------------------------------------


def anthropic_error_body(
    type: str,
    message: str,
    *,
    request_id: str | None = "req_fake01",
) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
    body: dict[str, Any] = {"type": "error", "error": {"type": type, "message": message}}
    if request_id is not None:
        body["request_id"] = request_id
    return body


_ANTHROPIC: dict[str, tuple[int, str, str]] = {
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "permission": (
        403,
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    "not_found": (404, "not_found_error", "model: claude-fake"),
    "rate_limit": (
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 input tokens "
        "per minute. Please try again later.",
    ),
    "server": (500, "api_error", "Internal server error"),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "context_length": (
        400,
        "invalid_request_error",
        "prompt is too long: 208310 tokens > 200000 maximum",
    ),
    "bad_request": (
        400,
        "invalid_request_error",
        "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
    ),
}


def anthropic_error(
    kind: ErrorKind,
    *,
    message: str | None = None,
    retry_after: float | datetime | str | None = None,
    retry_after_ms: float | None = None,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> JSONResponse:
    """An Anthropic error response; ``overloaded`` is the 529 ``overloaded_error``."""
    _check_kind(kind)
    status, type_, default_message = _ANTHROPIC[kind]
    body = anthropic_error_body(type_, message or default_message)
    all_headers = {
        "request-id": "req_fake01",
        **retry_headers(retry_after, retry_after_ms),
        **(headers or {}),
    }
    return JSONResponse(body, status=status, headers=all_headers, delay=delay)


# -- Gemini ----------------------------------------------------------------


def gemini_error_body(
    code: int, message: str, status: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``{"error": {"code", "message", "status", "details"?}}`` (google.rpc.Status as JSON)."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


_GEMINI: dict[str, tuple[int, str, str]] = {
    "auth": (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
    "permission": (
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.",
    ),
    "not_found": (
        404,
        "NOT_FOUND",
        "models/gemini-fake is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their "
        "supported methods.",
    ),
    "rate_limit": (
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    "server": (
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "context_length": (
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
    ),
    "bad_request": (
        400,
        "INVALID_ARGUMENT",
        'Invalid JSON payload received. Unknown name "additionalProperties" at '
        "'tools[0].function_declarations[0].parameters': Cannot find field.",
    ),
}


def gemini_error(
    kind: ErrorKind,
    *,
    message: str | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> JSONResponse:
    """A Gemini error response; ``retry_after`` becomes a RetryInfo detail."""
    _check_kind(kind)
    code, status, default_message = _GEMINI[kind]
    details: list[dict[str, Any]] = []
    if kind == "auth":
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        )
    if retry_after is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}
        )
    body = gemini_error_body(code, message or default_message, status, details)
    return JSONResponse(body, status=code, headers=dict(headers or {}), delay=delay)
