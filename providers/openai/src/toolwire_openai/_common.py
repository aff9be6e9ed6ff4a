"""What every OpenAI-shaped adapter shares.

Configuration and the one :class:`~toolwire._http.Transport` per instance; tool
rendering through the schema compiler with the final wire dict cached on the
tool; the request loop (sync, async, streaming) around an API-specific body
builder, decoder and stream state; and the fix-ups every reply gets before it
reaches core (duplicate ids dropped, strict-mode nulls removed).
"""

from __future__ import annotations

import abc
import copy
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union

import httpx

from toolwire._compile import CompiledTool, CompileOptions, compile_tool
from toolwire._errors import AuthenticationError, ProviderError, StreamError
from toolwire._http import ApiKey, RetryPolicy, SSEEvent, Transport, redact_url, resolve_api_key
from toolwire._provider import Provider, ReplyCompleted, StreamEvent
from toolwire._round import AssistantReply
from toolwire._tools import ToolCall
from toolwire._transcript import Session
from toolwire._turn import ResolvedTool, ResolvedTurn

__all__ = ["StrictMode", "StreamState", "malformed", "OpenAIBase"]

StrictMode = Union[Literal["auto"], bool]
"""``"auto"``: strict only when lossless; ``True``: always (losses reported); ``False``: never."""

_P = TypeVar("_P", bound="OpenAIBase")
_WIRE_CACHE = "toolwire_openai.wire"
_MIN_SECRET = 4  # as core's transport: shorter placeholder keys ("x") are not scrubbed
_SNIPPET = 200


def secrets_of(key: ApiKey | None) -> tuple[str, ...]:
    """The strings to mask in errors built outside the transport (in-stream errors)."""
    if key is None or len(key.get()) < _MIN_SECRET:
        return ()
    return (key.get(),)


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "****")
    return text


def snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


def malformed(provider: str, what: str, *, stream: bool) -> ProviderError:
    """The error for a reply whose shape is not the API's: StreamError inside a stream."""
    cls = StreamError if stream else ProviderError
    return cls(f"malformed {'stream event' if stream else 'response'}: {what}", provider=provider)


def arguments_text(value: object) -> str | None:
    """Argument text as sent; some servers send an object instead of a JSON string."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    raise TypeError(
        f"tool-call arguments must be a string or an object, got {type(value).__name__}"
    )


def as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class StreamState(abc.ABC):
    """Per-request stream decoder: feed SSE events, get stream events; ``finish`` the reply."""

    done: bool = False

    @abc.abstractmethod
    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Decode one SSE event; raise a ProviderError for an in-stream error."""

    @abc.abstractmethod
    def finish(self) -> AssistantReply:
        """The reply once the stream ended; StreamError if it never completed."""


def _check_retry(value: object) -> None:
    if value is not None and not isinstance(value, RetryPolicy):
        raise TypeError(f"retry must be a toolwire RetryPolicy, got {type(value).__name__}")


class OpenAIBase(Provider):
    """The shared core of the Chat Completions and Responses adapters (not registered itself)."""

    default_base_url: ClassVar[str] = ""
    key_env: ClassVar[tuple[str, ...]] = ()
    base_url_env: ClassVar[tuple[str, ...]] = ()
    path: ClassVar[str] = ""
    wire_kind: ClassVar[str] = ""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        strict: StrictMode | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        _key_required: bool = True,
        _key_env: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(model)
        if strict not in (None, "auto", True, False):
            raise ValueError(f"strict must be 'auto', True, False or None, got {strict!r}")
        _check_retry(retry)
        env = self.key_env if _key_env is None else _key_env
        key = resolve_api_key(api_key, env, provider=self.name, required=False)
        self._missing_key: str | None = None
        if key is None and _key_required:
            where = (
                f"pass api_key=... or set the environment variable {' or '.join(env)}"
                if env
                else "pass api_key=..."
            )
            self._missing_key = f"no API key for {self.name}: {where}"
        url = base_url or self._base_url_from_env() or self.default_base_url
        if not url:
            raise ValueError(
                f"{type(self).__name__} needs base_url=... (the server's OpenAI-compatible "
                f"root, e.g. 'http://localhost:11434/v1' for Ollama)"
            )
        self._key = key
        self._secrets = secrets_of(key)
        self._strict = strict
        self._send_strict = True
        self._compile_options = CompileOptions(strict_mode=strict)
        self._extra_body = dict(extra_body or {})
        self._transport = Transport(
            self.name,
            url,
            api_key=key,
            headers=headers,
            timeout=timeout,
            retry=retry,
            client=http_client,
            async_client=async_http_client,
        )

    def _base_url_from_env(self) -> str | None:
        import os

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

    # -- rendering ---------------------------------------------------------------------

    def compiled(self, tool: ResolvedTool) -> CompiledTool:
        """The tool's schema compiled for this provider (cached on the tool)."""
        return compile_tool(tool.tool, self.name, options=self._compile_options)

    def _wire_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        out = []
        for rt in turn.tools:
            key = (_WIRE_CACHE, self.wire_kind, self.name, self._compile_options,
                   self._send_strict, rt.description)  # fmt: skip
            wire = rt.tool.cache.get(key)
            if wire is None:
                wire = self._tool_wire(rt, self.compiled(rt))
                rt.tool.cache[key] = wire
            out.append(wire)
        return out

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The tool list exactly as sent (a copy: the cached originals stay untouched)."""
        return copy.deepcopy(self._wire_tools(turn))

    @abc.abstractmethod
    def _tool_wire(self, tool: ResolvedTool, compiled: CompiledTool) -> dict[str, Any]: ...

    # -- one request -------------------------------------------------------------------

    @abc.abstractmethod
    def build_body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The JSON request body for this session and turn."""

    @abc.abstractmethod
    def decode(self, data: Mapping[str, Any]) -> AssistantReply:
        """A non-streaming response body -> reply (before :meth:`_finish_reply`)."""

    @abc.abstractmethod
    def _stream_state(self) -> StreamState: ...

    def _check_key(self) -> None:
        if self._missing_key is not None:
            raise AuthenticationError(self._missing_key, provider=self.name)

    def _decode_safely(self, data: Mapping[str, Any]) -> AssistantReply:
        try:
            return self.decode(data)
        except ProviderError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            raise malformed(self.name, scrub(str(exc), self._secrets), stream=False) from exc

    def _feed_safely(self, state: StreamState, event: SSEEvent) -> list[StreamEvent]:
        try:
            return state.feed(event)
        except ProviderError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            raise malformed(
                self.name, f"{scrub(str(exc), self._secrets)} in {snippet(event.data)!r}",
                stream=True,
            ) from exc  # fmt: skip

    def _finish_stream(self, state: StreamState, turn: ResolvedTurn) -> ReplyCompleted:
        try:
            reply = state.finish()
        except ProviderError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
            raise malformed(self.name, scrub(str(exc), self._secrets), stream=True) from exc
        return ReplyCompleted(self._finish_reply(turn, reply))

    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self.build_body(session, turn, stream=False)
        data = self._transport.post_json(self.path, body)
        return self._finish_reply(turn, self._decode_safely(data))

    async def agenerate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        body = self.build_body(session, turn, stream=False)
        data = await self._transport.apost_json(self.path, body)
        return self._finish_reply(turn, self._decode_safely(data))

    def stream(self, session: Session, turn: ResolvedTurn) -> Iterator[StreamEvent]:
        self._check_key()
        body = self.build_body(session, turn, stream=True)
        state = self._stream_state()
        events = self._transport.stream_sse(self.path, body)
        try:
            for event in events:
                # After the end marker the rest is drained, not fed: the connection then
                # goes back to the pool instead of being torn down.
                if not state.done:
                    yield from self._feed_safely(state, event)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        yield self._finish_stream(state, turn)

    async def astream(self, session: Session, turn: ResolvedTurn) -> AsyncIterator[StreamEvent]:
        self._check_key()
        body = self.build_body(session, turn, stream=True)
        state = self._stream_state()
        events = self._transport.astream_sse(self.path, body)
        try:
            async for event in events:
                if not state.done:
                    for out in self._feed_safely(state, event):
                        yield out
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        yield self._finish_stream(state, turn)

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

    # -- fix-ups on every reply ----------------------------------------------------------

    def _finish_reply(self, turn: ResolvedTurn, reply: AssistantReply) -> AssistantReply:
        """Drop duplicate call ids (first wins) and undo strict mode's nulls.

        Strict mode sends optional fields as required-and-nullable, so the model
        answers ``null`` where it meant "left out". Those nulls are removed from
        the argument text before core validates it (so defaults apply again); the
        model's own text is kept in ``provider_state[name]["raw_arguments"]`` and
        sent back verbatim on the next request.
        """
        calls: list[ToolCall] = []
        raw: dict[str, str] = {}
        seen: set[str] = set()
        for call in reply.tool_calls:
            if call.id in seen:
                continue
            seen.add(call.id)
            restored = self._restore(turn, call)
            if restored != call.arguments:
                raw[call.id] = call.arguments
                call = ToolCall(call.id, call.name, restored)
            calls.append(call)
        if not raw and len(calls) == len(reply.tool_calls):
            return reply
        state = dict(reply.provider_state)
        if raw:
            mine = dict(state.get(self.name) or {})
            mine["raw_arguments"] = raw
            state[self.name] = mine
        return AssistantReply(
            text=reply.text,
            tool_calls=tuple(calls),
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            provider_state=state,
            model=reply.model,
        )

    def _restore(self, turn: ResolvedTurn, call: ToolCall) -> str:
        tool = turn.offered.get(call.name)
        if tool is None:
            return call.arguments
        try:
            compiled = compile_tool(tool, self.name, options=self._compile_options)
        except Exception:  # rendering would have failed first; never fail a decode on it
            return call.arguments
        if not compiled.restores_defaults:
            return call.arguments
        try:
            value = json.loads(call.arguments)
        except (ValueError, RecursionError):
            return call.arguments  # core reports it as InvalidArguments
        if not isinstance(value, dict):
            return call.arguments
        stripped = compiled.restore_arguments(value)
        if stripped == value:
            return call.arguments
        return json.dumps(stripped, ensure_ascii=False, separators=(",", ":"))

    def _state_of(self, provider_state: Mapping[str, Any]) -> Mapping[str, Any]:
        mine = provider_state.get(self.name)
        return mine if isinstance(mine, Mapping) else {}

    def _raw_arguments(self, provider_state: Mapping[str, Any]) -> Mapping[str, Any]:
        raw = self._state_of(provider_state).get("raw_arguments")
        return raw if isinstance(raw, Mapping) else {}

    def _merge_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``extra_body`` first, so the adapter's own keys (messages, tools...) win."""
        if not self._extra_body:
            return body
        return {**self._extra_body, **body}
