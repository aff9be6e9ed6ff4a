"""The provider transport: keys, retries, error mapping, SSE, and one shared httpx client.

Every provider adapter (OpenAI, Anthropic, Gemini, OpenAI-compatible servers) is a
thin layer over :class:`Transport`. The pieces are usable on their own, one module each:

- ``keys``: :class:`ApiKey` and :func:`resolve_api_key`, a secret that never shows itself;
  :func:`redact_url`; :class:`AuthStyle`;
- ``retry``: :class:`RetryPolicy` and :func:`parse_retry_after`, bounded exponential
  backoff with jitter that honours the provider's Retry-After;
- ``errors``: :class:`ErrorMapper`, an HTTP response (or an error object inside a stream)
  becomes the right :class:`~toolwire.exceptions.ProviderError` subclass, with the
  provider's own message, its request id, and never the key;
- ``sse``: :class:`SSEDecoder`, :func:`iter_sse` and :func:`aiter_sse`, an incremental
  server-sent-events decoder that follows the WHATWG rules;
- ``transport``: :class:`Transport`, ``post_json`` / ``apost_json`` and ``stream_sse`` /
  ``astream_sse`` with the mapping and the retries above.
"""

from __future__ import annotations

from toolwire._http.errors import (
    DEFAULT_CONTEXT_LENGTH_MARKERS,
    ErrorDetail,
    ErrorMapper,
    extract_error_detail,
)
from toolwire._http.keys import ApiKey, AuthStyle, redact_url, resolve_api_key
from toolwire._http.retry import RandomSource, RetryPolicy, parse_retry_after
from toolwire._http.sse import SSEDecoder, SSEEvent, aiter_sse, iter_sse
from toolwire._http.transport import DEFAULT_TIMEOUT, Transport

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
