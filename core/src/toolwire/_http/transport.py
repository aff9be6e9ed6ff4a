"""The shared transport: ``post_json`` / ``apost_json`` and ``stream_sse`` / ``astream_sse``
over one httpx client, with error mapping and retries. One job, hence the length."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Mapping,
)
from typing import TYPE_CHECKING, Any

import httpx

from toolwire._errors import (
    DeadlineExceededError,
    FetchError,
    ProviderConnectionError,
    ProviderError,
    ResponseTooLargeError,
    StreamError,
    UsageError,
)
from toolwire._exports import publish
from toolwire._http.bounded import ACCEPT_ENCODING, aiter_body, iter_body
from toolwire._http.errors import ErrorMapper, _snippet
from toolwire._http.keys import (
    ApiKey,
    AuthStyle,
    _install_httpx_log_filter,
    _scrub,
    _scrub_list,
    redact_url,
)
from toolwire._http.retry import RandomSource, RetryPolicy
from toolwire._http.sse import SSEDecoder, SSEEvent

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from httpx._client import UseClientDefault

logger = logging.getLogger("toolwire.http")

#: Connect quickly or fail; allow long generations. Non-streaming requests to
#: reasoning models routinely take minutes (the official SDKs default to 600 s),
#: and for a stream the read timeout is the longest silence between two chunks.
DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=30.0)

#: The most a response body (or a whole stream) may hold; a bigger one is refused.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: The longest a request may take in all, every retry and the whole stream included
#: (``timeout`` bounds each read, so a server dripping keep-alives could hold it forever).
DEFAULT_DEADLINE = 900.0
_ERROR_BODY_BYTES = 1024 * 1024  # of an error body; the rest is not read


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
        "_clock",
        "_deadline",
        "_json_headers",
        "_key",
        "_key_auth",
        "_lock",
        "_mapper",
        "_max_bytes",
        "_own_async_client",
        "_own_client",
        "_provider",
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
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: float | None = DEFAULT_DEADLINE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_response_bytes is not None and (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise UsageError(
                f"max_response_bytes must be a positive int or None, got {max_response_bytes!r}"
            )
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0
        ):
            raise UsageError(
                f"deadline must be a positive number of seconds or None, got {deadline!r}"
            )
        self._max_bytes = max_response_bytes
        self._deadline = None if deadline is None else float(deadline)
        self._clock = clock
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
        # The key is added to each request at the moment it is sent (an httpx auth flow),
        # so no header dict or URL held in a local (which error reporters capture) has it.
        self._key_auth: _KeyAuth | None = None
        if self._key is not None:
            self._key_auth = _KeyAuth(self._auth, self._key)
            if self._auth.location != "header":
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
                    client = self._client = httpx.Client(
                        timeout=self._client_timeout, headers=_ACCEPT_ENCODING
                    )
        return client

    def _aclient(self) -> httpx.AsyncClient:
        client = self._async_client
        if client is None:
            with self._lock:
                client = self._async_client
                if client is None:
                    client = self._async_client = httpx.AsyncClient(
                        timeout=self._client_timeout, headers=_ACCEPT_ENCODING
                    )
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
        return url, redact_url(url)

    def _auth_for_request(self) -> Any:
        return self._key_auth if self._key_auth is not None else httpx.USE_CLIENT_DEFAULT

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
            # For whoever shows retries as they happen (the CLI): the same, as data.
            extra={
                "toolwire_retry": {
                    "provider": self._provider,
                    "error": type(error).__name__,
                    "status": error.status,
                    "attempt": attempt + 1,
                    "attempts": self._retry.max_retries + 1,
                    "delay": delay,
                }
            },
        )
        return delay

    def _json_body(self, response: httpx.Response, shown: str) -> dict[str, Any]:
        try:
            data = json.loads(response.content)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
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

    def _end(self) -> float | None:
        return None if self._deadline is None else self._clock() + self._deadline

    def _past(self, end: float | None, shown: str) -> None:
        if end is not None and self._clock() > end:
            raise DeadlineExceededError(
                f"POST {shown} ran past its total deadline of {self._deadline:g} s "
                f"(Transport(deadline=...))",
                provider=self._provider,
            )

    def _too_large(self, shown: str) -> ResponseTooLargeError:
        return ResponseTooLargeError(
            f"the response to POST {shown} is over {self._max_bytes:,} bytes "
            f"(Transport(max_response_bytes=...))",
            provider=self._provider,
        )

    def _take(
        self,
        parts: list[bytes],
        chunk: bytes,
        size: int,
        limit: int | None,
        error_body: bool,
        shown: str,
    ) -> tuple[int, bool]:
        """Keep ``chunk``; (new size, whether to stop reading)."""
        size += len(chunk)
        if error_body:  # cut, never refused: the error itself is what the caller needs
            cap = _ERROR_BODY_BYTES if limit is None else min(limit, _ERROR_BODY_BYTES)
            if size > cap:
                parts.append(chunk[: len(chunk) - (size - cap)])
                return cap, True
        elif limit is not None and size > limit:
            raise self._too_large(shown)
        parts.append(chunk)
        return size, False

    def _pieces(self, response: httpx.Response, shown: str) -> Iterator[bytes]:
        """The body decoded a step at a time by the one bounded reader (``_http.bounded``):
        a size limit counts it as it is decompressed."""
        try:
            yield from iter_body(response, what=f"the response to POST {shown}")
        except FetchError as exc:
            raise ProviderError(str(exc), provider=self._provider) from None

    async def _apieces(self, response: httpx.Response, shown: str) -> AsyncIterator[bytes]:
        try:
            async for piece in aiter_body(response, what=f"the response to POST {shown}"):
                yield piece
        except FetchError as exc:
            raise ProviderError(str(exc), provider=self._provider) from None

    def _check_encoding(self, response: httpx.Response, shown: str) -> None:
        """Only gzip and deflate are asked for: a body encoded otherwise (zstd, br) is
        refused unread. httpx decodes a whole raw chunk at a time, and gzip cannot grow a
        chunk past about 1,000 times (64 KiB -> 64 MiB) where zstd can grow 32 KiB to
        gigabytes before any size check sees it."""
        found = [
            e.strip().lower()
            for e in response.headers.get("content-encoding", "").split(",")
            if e.strip() and e.strip().lower() != "identity"
        ]
        if any(e not in _ENCODINGS for e in found):
            raise ProviderError(
                f"the response to POST {shown} is encoded as {', '.join(found)}, which was "
                f"not asked for (only gzip and deflate are accepted)",
                provider=self._provider,
                status=response.status_code,
            )

    def _read_capped(
        self, streamed: httpx.Response, shown: str, end: float | None
    ) -> httpx.Response:
        """The whole body of a streamed response, under the size limit and the deadline
        (an error body is cut at 1 MiB instead), as a response that is read."""
        self._check_encoding(streamed, shown)
        parts: list[bytes] = []
        size = 0
        error_body = not streamed.is_success
        for chunk in self._pieces(streamed, shown):
            self._past(end, shown)
            size, stop = self._take(parts, chunk, size, self._max_bytes, error_body, shown)
            if stop:
                break
        return _read_response(streamed, b"".join(parts))

    async def _aread_capped(
        self, streamed: httpx.Response, shown: str, end: float | None
    ) -> httpx.Response:
        self._check_encoding(streamed, shown)
        parts: list[bytes] = []
        size = 0
        error_body = not streamed.is_success
        async for chunk in self._apieces(streamed, shown):
            self._past(end, shown)
            size, stop = self._take(parts, chunk, size, self._max_bytes, error_body, shown)
            if stop:
                break
        return _read_response(streamed, b"".join(parts))

    def _retry_delay(
        self,
        error: ProviderError,
        response: httpx.Response | None,
        attempt: int,
        shown: str,
        end: float | None,
    ) -> float | None:
        delay = self._backoff(error, response, attempt, shown)
        if delay is not None and end is not None and self._clock() + delay > end:
            return None  # waiting would run past the deadline: the error stands
        return delay

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
        end = self._end()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            self._log_send(shown, attempt)
            try:
                with client.stream(
                    "POST",
                    url,
                    content=content,
                    headers=request_headers,
                    timeout=request_timeout,
                    auth=self._auth_for_request(),
                ) as streamed:
                    self._log_status(shown, streamed, attempt)
                    response = self._read_capped(streamed, shown, end)
            except httpx.HTTPError as exc:
                error = self._error_for_exception(exc, shown)
            else:
                if response.is_success:
                    return self._json_body(response, shown)
                error = self._error_for(response)
            delay = self._retry_delay(error, response, attempt, shown, end)
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
        end = self._end()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            self._log_send(shown, attempt)
            try:
                async with client.stream(
                    "POST",
                    url,
                    content=content,
                    headers=request_headers,
                    timeout=request_timeout,
                    auth=self._auth_for_request(),
                ) as streamed:
                    self._log_status(shown, streamed, attempt)
                    response = await self._aread_capped(streamed, shown, end)
            except httpx.HTTPError as exc:
                error = self._error_for_exception(exc, shown)
            else:
                if response.is_success:
                    return self._json_body(response, shown)
                error = self._error_for(response)
            delay = self._retry_delay(error, response, attempt, shown, end)
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
        end = self._end()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            yielded = False
            self._log_send(shown, attempt)
            try:
                with client.stream(
                    "POST",
                    url,
                    content=content,
                    headers=request_headers,
                    timeout=request_timeout,
                    auth=self._auth_for_request(),
                ) as response:
                    self._log_status(shown, response, attempt)
                    if not response.is_success:
                        error = self._error_for(self._read_capped(response, shown, end))
                    elif _is_json_content(response):
                        raise self._not_a_stream(self._read_capped(response, shown, end), shown)
                    else:
                        self._check_encoding(response, shown)
                        decoder = SSEDecoder()
                        size = 0
                        for chunk in self._pieces(response, shown):
                            self._past(end, shown)
                            size += len(chunk)
                            if self._max_bytes is not None and size > self._max_bytes:
                                raise self._too_large(shown)
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
            delay = None if yielded else self._retry_delay(error, response, attempt, shown, end)
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
        end = self._end()
        attempt = 0
        while True:
            response: httpx.Response | None = None
            yielded = False
            self._log_send(shown, attempt)
            try:
                async with client.stream(
                    "POST",
                    url,
                    content=content,
                    headers=request_headers,
                    timeout=request_timeout,
                    auth=self._auth_for_request(),
                ) as response:
                    self._log_status(shown, response, attempt)
                    if not response.is_success:
                        error = self._error_for(await self._aread_capped(response, shown, end))
                    elif _is_json_content(response):
                        full = await self._aread_capped(response, shown, end)
                        raise self._not_a_stream(full, shown)
                    else:
                        self._check_encoding(response, shown)
                        decoder = SSEDecoder()
                        size = 0
                        async for chunk in self._apieces(response, shown):
                            self._past(end, shown)
                            size += len(chunk)
                            if self._max_bytes is not None and size > self._max_bytes:
                                raise self._too_large(shown)
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
            delay = None if yielded else self._retry_delay(error, response, attempt, shown, end)
            if delay is None:
                raise error
            await self._async_sleep(delay)
            attempt += 1


class _KeyAuth(httpx.Auth):
    """Adds the API key to a request as it is sent: in a header or as a query parameter.
    Its repr never shows the key."""

    def __init__(self, style: AuthStyle, key: ApiKey) -> None:
        self._style = style
        self._key = key

    def __repr__(self) -> str:
        return f"<key auth: {self._style.location} {self._style.name!r}, key ****>"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self._style.location == "header":
            request.headers[self._style.name] = self._style.prefix + self._key.get()
        else:
            request.url = request.url.copy_merge_params({self._style.name: self._key.get()})
        yield request


#: What every request accepts: encodings whose output the bounded reader can bound.
_ENCODINGS = frozenset({"gzip", "x-gzip", "deflate"})
_ACCEPT_ENCODING = {"Accept-Encoding": ACCEPT_ENCODING}


def _read_response(streamed: httpx.Response, content: bytes) -> httpx.Response:
    """A read response with ``content`` (already decoded) in place of the streamed body."""
    # The raw bytes, as received: decoded values (Latin-1 for a byte outside ASCII, as
    # in `retry-after: é`) could not be encoded back as ASCII header values.
    headers = [
        (k, v)
        for k, v in streamed.headers.raw
        if k.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")
    ]
    return httpx.Response(
        streamed.status_code,
        headers=headers,
        content=content,
        request=streamed.request,
        extensions=streamed.extensions,
    )


publish(globals())
