"""HttpProvider: what every HTTP adapter shares, around its own encoding and decoding.

One :class:`~toolwire._http.Transport` per instance (key resolution, a missing key
reported on the first request rather than at construction), and the request
loop: ``generate`` / ``agenerate`` post JSON and decode the body, ``stream`` /
``astream`` feed each server-sent event to a per-request stream state, drain
the body once the state has seen the end marker, close the event iterator, and
end with :class:`~toolwire.adapters.ReplyCompleted`. A reply whose shape is not the
API's surfaces as a ``ProviderError`` (``StreamError`` inside a stream) saying
"malformed ...", with the key masked; never as a ``KeyError`` or ``TypeError``.

A subclass sets ``path`` (or overrides :meth:`~HttpProvider._request_path`) and
supplies the hooks :meth:`~HttpProvider._build_request`,
:meth:`~HttpProvider._decode_json`, :meth:`~HttpProvider._new_stream`,
:meth:`~HttpProvider._handle_event` and :meth:`~HttpProvider._stream_reply`.
"""

from __future__ import annotations

import abc
import os
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import httpx

from toolwire._compile import SchemaCompiler
from toolwire._errors import AuthenticationError, ProviderError, StreamError, UsageError
from toolwire._exports import publish
from toolwire._http import (
    ApiKey,
    AuthStyle,
    ErrorMapper,
    RetryPolicy,
    SSEEvent,
    Transport,
    redact_url,
    resolve_api_key,
)
from toolwire._http.errors import _snippet
from toolwire._http.transport import DEFAULT_DEADLINE, DEFAULT_MAX_RESPONSE_BYTES
from toolwire._provider import Provider, ReplyCompleted, StreamEvent
from toolwire._round import AssistantReply
from toolwire._strictjson import _loads_finite
from toolwire._tools import Tool
from toolwire._transcript import Session
from toolwire._turn import ResolvedTurn

__all__ = ["DECODE_ERRORS", "HttpProvider", "arguments_object", "cached_wire", "malformed"]

DECODE_ERRORS: tuple[type[Exception], ...] = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    RecursionError,
)
"""What decoding a body of the wrong shape raises; each becomes a "malformed" ProviderError."""


def arguments_object(text: str) -> dict[str, Any]:
    """A call's argument text as the JSON object an API wants (Anthropic's ``input``,
    Gemini's ``args``): ``{}`` when it is not one.

    Not JSON, not an object, nested past the parser's depth, or holding NaN, infinity or
    a number like 1e400 (which no provider accepts back): the round answered such a call
    with a rejection that carries the explanation, and the session must still send.
    """
    try:
        value = _loads_finite(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


_SNIPPET_CHARS = 200  # of the offending event's data, in a malformed-stream-event message

_S = TypeVar("_S")
_R = TypeVar("_R")
_H = TypeVar("_H", bound="HttpProvider[Any]")


def cached_wire(
    tool: Tool[Any, Any],
    description: str,
    key: Hashable,
    build: Callable[[], dict[str, Any]],
    *,
    compiler: SchemaCompiler,
) -> dict[str, Any]:
    """A tool's rendered wire dict, cached on the tool under ``key``.

    Only the tool's own description is cached: a per-turn description (an
    override, a hook's per-user text) is built each time from the cached
    compile, so the cache cannot grow with every description a hook invents.
    The cached dict is shared: hand out copies. The key includes the schema
    ``compiler`` that ``build`` uses, so two compilers never share a rendering.
    """
    if description != tool.description:
        return build()

    full = (key, compiler)
    wire: dict[str, Any] | None = tool.cache.get(full)
    if wire is None:
        wire = tool.cache[full] = build()
    return wire


def malformed(provider: str, what: str, *, stream: bool) -> ProviderError:
    """The error for a reply whose shape is not the API's: StreamError inside a stream.

    ``what`` is used as is; :meth:`HttpProvider._malformed` masks the key first.
    """
    cls = StreamError if stream else ProviderError
    return cls(f"malformed {'stream event' if stream else 'response'}: {what}", provider=provider)


class HttpProvider(Provider, Generic[_S]):
    """Base class for a provider that talks JSON and server-sent events over HTTP.

    ``_S`` is the adapter's per-request stream state. The constructor resolves
    the key (``api_key``, else the first set variable of ``key_env``, default
    the class's :attr:`key_env`) and the base URL (``base_url``, else the first
    set variable of :attr:`base_url_env`, else :attr:`default_base_url`), and
    builds the transport. With no key and ``key_required``, construction still
    succeeds (tools can be rendered) and the first request raises
    AuthenticationError naming ``key_hint`` and the variables.

    ``deadline`` (seconds, every retry and the whole stream included; default
    900) and ``max_response_bytes`` (default 64 MiB) bound each request:
    :class:`DeadlineExceededError` and :class:`ResponseTooLargeError` past them.

    Subclasses implement the hooks below; errors they raise from the decoding
    hooks that are not ProviderErrors but one of :data:`DECODE_ERRORS` become
    malformed-reply errors (:meth:`_describe_error` words the cause).
    """

    default_base_url: ClassVar[str] = ""
    key_env: ClassVar[tuple[str, ...]] = ()
    base_url_env: ClassVar[tuple[str, ...]] = ()
    #: How this provider's error bodies read (its context-length wordings, its error
    #: type words, ...); None: the generic mapping.
    error_mapper: ClassVar[ErrorMapper | None] = None

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        auth: AuthStyle | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        key_env: Sequence[str] | None = None,
        key_required: bool = True,
        key_hint: str = "pass api_key=...",
    ) -> None:
        super().__init__(model)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise UsageError(f"retry must be a toolwire RetryPolicy, got {type(retry).__name__}")
        env = tuple(self.key_env if key_env is None else key_env)
        key = resolve_api_key(api_key, env, provider=self.name, required=False)
        self._missing_key: str | None = None
        #: Said with a 401 when the request went without a key (a server that may need none).
        self._keyless_note: str | None = None
        if key is None and not key_required:
            self._keyless_note = (
                f"the request was sent without an API key; if this server needs one, "
                f"{key_hint}" + (f" or set {' or '.join(env)}" if env else "")
            )
        if key is None and key_required:
            where = f"{key_hint} or set the environment variable {' or '.join(env)}"
            self._missing_key = f"no API key for {self.name}: {where if env else key_hint}"
        url = base_url or self._base_url_from_env() or self.default_base_url
        if not url:
            raise UsageError(f"{type(self).__name__} needs base_url=...")
        self._transport = Transport(
            self.name,
            url,
            api_key=key,
            auth=auth,
            headers=headers,
            timeout=timeout,
            retry=retry,
            client=http_client,
            async_client=async_http_client,
            error_mapper=self.error_mapper,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
        )
        self._last_tools: tuple[Any, Hashable, list[dict[str, Any]]] | None = None

    def _turn_tools(
        self, turn: ResolvedTurn, key: Hashable, build: Callable[[], list[dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        """The turn's rendered tool list: ``build()``, unless the turn did not change since
        the last call with the same ``key`` (the toolset hands back the same resolved tools,
        descriptions included), which reuses that list. The list is shared: copy it to hand
        it out."""
        last = self._last_tools
        if last is not None and last[0] is turn.tools and last[1] == key:
            return last[2]
        out = build()
        self._last_tools = (turn.tools, key, out)
        return out

    def _base_url_from_env(self) -> str | None:
        for name in self.base_url_env:
            value = os.environ.get(name)
            if value:
                return value
        return None

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.name!r} model={self.model!r} "
            f"base_url={redact_url(self._transport.base_url)!r}>"
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def transport(self) -> Transport:
        """The HTTP transport (one per provider instance)."""
        return self._transport

    # -- hooks -------------------------------------------------------------------------

    def _request_path(self, *, stream: bool) -> str:
        """The path to POST to, relative to ``base_url``: by default the ``path`` attribute.

        Set ``path`` (a class constant or a property); override this when streaming
        uses another path.
        """
        path = getattr(self, "path", None)
        if not isinstance(path, str):
            raise UsageError(f"{type(self).__name__} must set path or override _request_path")
        return path

    @abc.abstractmethod
    def _build_request(
        self, session: Session, turn: ResolvedTurn, *, stream: bool
    ) -> dict[str, Any]:
        """The JSON request body for this session and turn."""

    @abc.abstractmethod
    def _decode_json(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        """A non-streaming response body -> reply (a DECODE_ERRORS error if malformed)."""

    @abc.abstractmethod
    def _new_stream(self, turn: ResolvedTurn) -> _S:
        """A fresh stream state for one streaming request."""

    @abc.abstractmethod
    def _handle_event(self, state: _S, event: SSEEvent) -> list[StreamEvent]:
        """Decode one event; raise a ProviderError for an error the server sent in the stream."""

    @abc.abstractmethod
    def _stream_reply(self, state: _S, turn: ResolvedTurn) -> AssistantReply:
        """The reply once the events ran out; StreamError if the stream never completed."""

    def _stream_done(self, state: _S) -> bool:
        """Whether the end marker was seen: later events are drained, not fed.

        By default the state's ``done`` attribute (False when it has none).
        """
        return getattr(state, "done", False) is True

    def _describe_error(self, exc: Exception) -> str:
        """How a decode error is worded in the malformed-reply message (before masking)."""
        return str(exc)

    # -- decoding, with shape errors mapped --------------------------------------------

    def _malformed(self, what: str, *, stream: bool) -> ProviderError:
        """:func:`malformed` for this provider, with the key masked in ``what``."""
        return malformed(self.name, self._transport.scrub(what), stream=stream)

    def _guarded(self, decode: Callable[[], _R], *, stream: bool, data: str | None = None) -> _R:
        """``decode()``, with a DECODE_ERRORS error raised as a malformed-reply error.

        ``data`` (the raw event text) is quoted, shortened, in the message.
        """
        try:
            return decode()
        except ProviderError:
            raise
        except DECODE_ERRORS as exc:
            raise self._decode_failed(exc, stream=stream, data=data) from exc

    def _decode_failed(self, exc: Exception, *, stream: bool, data: str | None) -> ProviderError:
        what = self._describe_error(exc)
        if data is not None:
            what = f"{what} in {_snippet(data, _SNIPPET_CHARS)!r}"
        return self._malformed(what, stream=stream)

    def _decode_body(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        return self._guarded(lambda: self._decode_json(data, turn), stream=False)

    def _feed(self, state: _S, event: SSEEvent) -> list[StreamEvent]:
        # _guarded, inlined: this runs once per event of every stream.
        try:
            return self._handle_event(state, event)
        except ProviderError:
            raise
        except DECODE_ERRORS as exc:
            raise self._decode_failed(exc, stream=True, data=event.data) from exc

    def _finish_stream(self, state: _S, turn: ResolvedTurn) -> ReplyCompleted:
        return ReplyCompleted(self._guarded(lambda: self._stream_reply(state, turn), stream=True))

    # -- requests ----------------------------------------------------------------------

    def _check_key(self) -> None:
        if self._missing_key is not None:
            raise AuthenticationError(self._missing_key, provider=self.name)

    def _keyless(self, exc: AuthenticationError) -> AuthenticationError:
        """A 401 to a request sent without a key says so (and how to give one)."""
        if self._keyless_note is None:
            return exc
        return AuthenticationError(f"{exc} ({self._keyless_note})", provider=self.name)

    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self._build_request(session, turn, stream=False)
        try:
            data = self._transport.post_json(self._request_path(stream=False), body)
        except AuthenticationError as exc:
            raise self._keyless(exc) from None
        return self._decode_body(data, turn)

    async def agenerate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self._build_request(session, turn, stream=False)
        try:
            data = await self._transport.apost_json(self._request_path(stream=False), body)
        except AuthenticationError as exc:
            raise self._keyless(exc) from None
        return self._decode_body(data, turn)

    def stream(self, session: Session, turn: ResolvedTurn) -> Iterator[StreamEvent]:
        """Stream events, ending with ReplyCompleted; a stream cut short raises StreamError."""
        self._check_key()
        body = self._build_request(session, turn, stream=True)
        state = self._new_stream(turn)
        events = self._transport.stream_sse(self._request_path(stream=True), body)
        try:
            for event in events:
                # After the end marker the rest is drained, not fed: the connection then
                # goes back to the pool instead of being torn down.
                if not self._stream_done(state):
                    yield from self._feed(state, event)
        except AuthenticationError as exc:
            raise self._keyless(exc) from None
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        yield self._finish_stream(state, turn)

    async def astream(self, session: Session, turn: ResolvedTurn) -> AsyncIterator[StreamEvent]:
        self._check_key()
        body = self._build_request(session, turn, stream=True)
        state = self._new_stream(turn)
        events = self._transport.astream_sse(self._request_path(stream=True), body)
        try:
            async for event in events:
                if not self._stream_done(state):
                    for out in self._feed(state, event):
                        yield out
        except AuthenticationError as exc:
            raise self._keyless(exc) from None
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        yield self._finish_stream(state, turn)

    # -- resources ---------------------------------------------------------------------

    def close(self) -> None:
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self: _H) -> _H:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


publish(globals())
