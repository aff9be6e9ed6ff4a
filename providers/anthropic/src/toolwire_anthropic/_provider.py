"""AnthropicProvider: the Messages API (``POST {base}/v1/messages``) over toolwire's transport."""

from __future__ import annotations

import copy
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import httpx

from toolwire._errors import AuthenticationError, ProviderError
from toolwire._http import ApiKey, AuthStyle, RetryPolicy, SSEEvent, Transport, redact_url
from toolwire._http import resolve_api_key as _resolve_api_key
from toolwire._provider import Provider, ReplyCompleted, StreamEvent
from toolwire._round import AssistantReply
from toolwire._transcript import Session
from toolwire._turn import ResolvedTurn
from toolwire_anthropic._decode import MessageStream, decode_message, malformed
from toolwire_anthropic._encode import (
    PROVIDER,
    encode_messages,
    history_tools,
    render_tool,
    tool_choice,
)

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider"]

_P = TypeVar("_P", bound="AnthropicProvider")

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is sent unless you pass your own."""

_MIN_THINKING_BUDGET = 1024  # the API's minimum ``budget_tokens``
_MIN_SECRET = 4  # as core's transport: shorter placeholder keys are not scrubbed
_SNIPPET = 200
# Malformed bodies surface as one of these while decoding; each becomes a ProviderError.
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "****")
    return text


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


def _thinking_config(
    thinking: int | Mapping[str, Any] | None, max_tokens: int
) -> dict[str, Any] | None:
    if thinking is None:
        return None
    if isinstance(thinking, bool) or not isinstance(thinking, (int, Mapping)):
        raise TypeError(
            "thinking must be a token budget (int), a thinking config mapping such as "
            f"{{'type': 'adaptive'}}, or None; got {type(thinking).__name__}"
        )
    if isinstance(thinking, int):
        if thinking < _MIN_THINKING_BUDGET:
            raise ValueError(
                f"thinking budget must be at least {_MIN_THINKING_BUDGET} tokens, got {thinking}"
            )
        if thinking >= max_tokens:
            raise ValueError(
                f"thinking budget ({thinking}) must be less than max_tokens ({max_tokens}); "
                f"raise max_tokens=..."
            )
        return {"type": "enabled", "budget_tokens": thinking}
    if not isinstance(thinking.get("type"), str):
        raise ValueError(f"a thinking config needs a string 'type', got {dict(thinking)!r}")
    return dict(thinking)


class AnthropicProvider(Provider):
    """Anthropic's Messages API: tools, tool_choice, extended thinking, SSE streaming.

    ``api_key`` defaults to ``ANTHROPIC_API_KEY`` (a missing key is reported
    as AuthenticationError on the first request, so tools can still be
    rendered without one); ``base_url`` to ``ANTHROPIC_BASE_URL``, then
    ``https://api.anthropic.com``. ``max_tokens`` is sent on every request.
    ``thinking`` enables extended thinking: a token budget (``thinking=2048``)
    or a config mapping sent as is (``{"type": "adaptive"}``); with it, a
    forced tool choice is sent as ``auto`` (the API refuses both together)
    and the requirement is checked after decoding. ``extra_body`` keys
    (``temperature``, ``stop_sequences``, ``metadata``...) are added to every
    request; the adapter's own keys win. One transport (one httpx client,
    sync and async) per instance: close it with :meth:`close` / :meth:`aclose`
    or a ``with`` block.
    """

    name: ClassVar[str] = PROVIDER
    default_model: ClassVar[str] = "claude-sonnet-4-5"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    api_version: ClassVar[str] = "2023-06-01"
    path: ClassVar[str] = "/v1/messages"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking: int | Mapping[str, Any] | None = None,
        anthropic_version: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(model)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a toolwire RetryPolicy, got {type(retry).__name__}")
        self.max_tokens = max_tokens
        self.thinking = _thinking_config(thinking, max_tokens)
        key = _resolve_api_key(api_key, ("ANTHROPIC_API_KEY",), provider=PROVIDER, required=False)
        self._missing_key = (
            None
            if key is not None
            else f"no API key for {PROVIDER}: pass api_key=... or set the environment "
            f"variable ANTHROPIC_API_KEY"
        )
        secret = key.get() if key is not None else ""
        self._secrets = (secret,) if len(secret) >= _MIN_SECRET else ()
        self._extra_body = dict(extra_body or {})
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or self.default_base_url
        all_headers = {"anthropic-version": anthropic_version or self.api_version}
        all_headers.update(headers or {})
        self._transport = Transport(
            PROVIDER,
            url,
            api_key=key,
            auth=AuthStyle.header("x-api-key"),
            headers=all_headers,
            timeout=timeout,
            retry=retry,
            client=http_client,
            async_client=async_http_client,
        )

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

    # -- rendering ---------------------------------------------------------------------

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The ``tools`` list exactly as sent (copies: the cached originals stay untouched)."""
        return [copy.deepcopy(render_tool(t.tool, t.description)) for t in turn.tools]

    def build_body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The JSON request body for this session and turn."""
        messages = session.messages
        body: dict[str, Any] = {**self._extra_body, "model": self.model}
        body["max_tokens"] = self.max_tokens
        system = session.system_text()
        if system:
            body["system"] = system
        body["messages"] = encode_messages(messages)
        if turn.tools:
            body["tools"] = [render_tool(t.tool, t.description) for t in turn.tools]
            choice = tool_choice(turn, thinking=self.thinking is not None)
            if choice is not None:
                body["tool_choice"] = choice
        else:
            earlier = history_tools(turn, messages)
            if earlier:
                body["tools"] = [render_tool(t, t.description) for t in earlier]
                body["tool_choice"] = {"type": "none"}
        if self.thinking is not None:
            body["thinking"] = self.thinking
        if stream:
            body["stream"] = True
        return body

    # -- requests ----------------------------------------------------------------------

    def _check_key(self) -> None:
        if self._missing_key is not None:
            raise AuthenticationError(self._missing_key, provider=PROVIDER)

    def _decode(self, data: Mapping[str, Any]) -> AssistantReply:
        try:
            return decode_message(data)
        except _SHAPE_ERRORS as exc:
            what = f"{type(exc).__name__}: {_scrub(str(exc), self._secrets)}"
            raise malformed(what, stream=False) from exc

    def _feed(self, state: MessageStream, event: SSEEvent) -> list[StreamEvent]:
        try:
            return state.feed(event)
        except ProviderError:
            raise
        except _SHAPE_ERRORS as exc:
            what = f"{type(exc).__name__}: {exc} in {_snippet(event.data)!r}"
            raise malformed(_scrub(what, self._secrets), stream=True) from exc

    def _stream_state(self) -> MessageStream:
        return MessageStream(self._transport.error_mapper, self._secrets)

    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self.build_body(session, turn, stream=False)
        return self._decode(self._transport.post_json(self.path, body))

    async def agenerate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self.build_body(session, turn, stream=False)
        return self._decode(await self._transport.apost_json(self.path, body))

    def stream(self, session: Session, turn: ResolvedTurn) -> Iterator[StreamEvent]:
        """Stream events, ending with ReplyCompleted; a stream cut short raises StreamError."""
        self._check_key()
        body = self.build_body(session, turn, stream=True)
        state = self._stream_state()
        events = self._transport.stream_sse(self.path, body)
        try:
            for event in events:
                # After message_stop the rest is drained, not fed, so the connection
                # goes back to the pool instead of being torn down.
                if not state.done:
                    yield from self._feed(state, event)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        yield ReplyCompleted(state.finish())

    async def astream(self, session: Session, turn: ResolvedTurn) -> AsyncIterator[StreamEvent]:
        self._check_key()
        body = self.build_body(session, turn, stream=True)
        state = self._stream_state()
        events = self._transport.astream_sse(self.path, body)
        try:
            async for event in events:
                if not state.done:
                    for out in self._feed(state, event):
                        yield out
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        yield ReplyCompleted(state.finish())

    def close(self) -> None:
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def __enter__(self: _P) -> _P:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self: _P) -> _P:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
