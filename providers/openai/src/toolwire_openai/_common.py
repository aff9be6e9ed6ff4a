"""What every OpenAI-shaped adapter shares, on top of core's :class:`HttpProvider`.

Configuration (``strict``, ``extra_body``); tool rendering through the schema
compiler with the final wire dict cached on the tool; the hooks core's request
loop calls around an API-specific body builder, decoder and stream state; and
the fix-ups every reply gets before it reaches core (duplicate ids dropped,
strict-mode nulls removed).
"""

from __future__ import annotations

import abc
import copy
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Union, cast

import attrs
import httpx

from toolwire import ModelSettings, Session, ToolCall
from toolwire.adapters import (
    DEFAULT_CONTEXT_LENGTH_MARKERS,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    ApiKey,
    AssistantReply,
    ErrorMapper,
    HttpProvider,
    ResolvedTool,
    ResolvedTurn,
    RetryPolicy,
    SSEEvent,
    StreamEvent,
    cached_wire,
    malformed,
)
from toolwire.exceptions import UnsupportedSettingError
from toolwire.media import COMMON_IMAGES, TEXT_ONLY, Audio, File, Image, MediaSupport, Part
from toolwire.profiles import ModelProfile, apply_profile, profile_for
from toolwire.schema import CompiledTool, CompileOptions, SchemaCompiler, compile_tool
from toolwire_openai._schema import compiler_for

__all__ = ["StrictMode", "StreamState", "malformed", "OpenAIBase"]

StrictMode = Union[Literal["auto"], bool]
"""``"auto"``: strict only when lossless; ``True``: always (losses reported); ``False``: never."""

_WIRE_CACHE = "toolwire_openai.wire"
# Interned wire configurations (see _wire_tools); a handful per process.
_WIRE_TOKENS: dict[tuple[Any, ...], int] = {}


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


#: OpenAI's error ``type``/``code`` words for errors inside a stream (no HTTP status).
OPENAI_ERROR_KINDS: Mapping[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "api_error": 500,
    "timeout_error": 504,
}

#: OpenAI's and OpenAI-compatible servers' ways of saying the context window is full.
OPENAI_CONTEXT_LENGTH_MARKERS: tuple[str, ...] = (
    *DEFAULT_CONTEXT_LENGTH_MARKERS,
    "context_length_exceeded",  # OpenAI / OpenRouter code
    "maximum context length",  # OpenAI, OpenRouter, vLLM: "This model's maximum context length is"
    "exceed_context_size_error",  # llama.cpp server code
    "exceeds the available context size",  # llama.cpp server message
)

#: OpenAI-shaped errors; ``insufficient_quota`` (a 429) is not fixed by waiting.
OPENAI_ERRORS = ErrorMapper(
    context_length_markers=OPENAI_CONTEXT_LENGTH_MARKERS,
    kind_status=OPENAI_ERROR_KINDS,
    permanent_codes=frozenset({"insufficient_quota"}),
)

#: OpenRouter relays its upstream providers' errors, in their words too.
OPENROUTER_ERRORS = ErrorMapper(
    context_length_markers=(
        *OPENAI_CONTEXT_LENGTH_MARKERS,
        "prompt is too long",  # Anthropic
        "exceed context limit",  # Anthropic
        "exceeds the maximum number of tokens",  # Gemini
    ),
    kind_status={
        **OPENAI_ERROR_KINDS,
        # Anthropic's error types
        "request_too_large": 413,
        "overloaded_error": 529,
        # Gemini's google.rpc statuses
        "invalid_argument": 400,
        "failed_precondition": 400,
        "out_of_range": 400,
        "unauthenticated": 401,
        "permission_denied": 403,
        "not_found": 404,
        "aborted": 409,
        "resource_exhausted": 429,
        "internal": 500,
        "unavailable": 503,
        "deadline_exceeded": 504,
    },
    permanent_codes=frozenset({"insufficient_quota"}),
)


class StreamState(abc.ABC):
    """Per-request stream decoder: feed SSE events, get stream events; ``finish`` the reply."""

    done: bool = False

    @abc.abstractmethod
    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Decode one SSE event; raise a ProviderError for an in-stream error."""

    @abc.abstractmethod
    def finish(self) -> AssistantReply:
        """The reply once the stream ended; StreamError if it never completed."""


class OpenAIBase(HttpProvider[StreamState]):
    """The shared core of the Chat Completions and Responses adapters (not registered itself)."""

    path: ClassVar[str] = ""
    wire_kind: ClassVar[str] = ""
    error_mapper: ClassVar[ErrorMapper | None] = OPENAI_ERRORS

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
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        _key_required: bool = True,
        _key_env: tuple[str, ...] | None = None,
    ) -> None:
        if strict not in (None, "auto", True, False):
            raise ValueError(f"strict must be 'auto', True, False or None, got {strict!r}")
        if not (base_url or self._base_url_from_env() or self.default_base_url):
            raise ValueError(
                f"{type(self).__name__} needs base_url=... (the server's OpenAI-compatible "
                f"root, e.g. 'http://localhost:11434/v1' for Ollama)"
            )
        # A server of one's own (a base URL that is not the API's own) may need no key:
        # with none, the request goes without an Authorization header, and a 401 says so.
        chosen = (base_url or self._base_url_from_env() or "").rstrip("/")
        if chosen and chosen != self.default_base_url.rstrip("/"):
            _key_required = False
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            retry=retry,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
            key_env=_key_env,
            key_required=_key_required,
        )
        self._strict = strict
        self._send_strict = True
        self._compile_options = CompileOptions(strict=strict)
        self._extra_body = dict(extra_body or {})

    # -- rendering ---------------------------------------------------------------------

    @property
    def schema_compiler(self) -> SchemaCompiler:
        """This provider's schema compiler (OpenAI strict; see ``toolwire_openai._schema``)."""
        return compiler_for(self.name)

    def compiled(self, tool: ResolvedTool) -> CompiledTool:
        """The tool's schema compiled for this provider (cached on the tool)."""
        return compile_tool(tool.tool, self.schema_compiler, options=self._compile_options)

    def _wire_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        # One small int stands for this adapter's wire configuration: hashing the
        # configuration (compile options included) for every tool of every request
        # was a third of the re-render time.
        config = (_WIRE_CACHE, self.wire_kind, self.name, self._compile_options, self._send_strict)
        token = _WIRE_TOKENS.setdefault(config, len(_WIRE_TOKENS))

        def build() -> list[dict[str, Any]]:
            return [
                cached_wire(
                    rt.tool,
                    rt.description,
                    (_WIRE_CACHE, token),
                    lambda rt=rt: self._tool_wire(rt, self.compiled(rt)),  # type: ignore[misc]
                    compiler=self.schema_compiler,
                )
                for rt in turn.tools
            ]

        return self._turn_tools(turn, token, build)

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The tool list exactly as sent (a copy: the cached originals stay untouched)."""
        return copy.deepcopy(self._wire_tools(turn))

    @abc.abstractmethod
    def _tool_wire(self, tool: ResolvedTool, compiled: CompiledTool) -> dict[str, Any]: ...

    # -- one request (the loop itself is HttpProvider's) --------------------------------

    def build_body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The JSON request body for this session and turn (a copy: change it freely; the
        cached tool dicts it is built from stay untouched)."""
        return copy.deepcopy(self._body(session, turn, stream=stream))

    @abc.abstractmethod
    def _body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The request body, sharing the cached tool dicts (for sending, not for callers)."""

    @abc.abstractmethod
    def decode(self, data: Mapping[str, Any]) -> AssistantReply:
        """A non-streaming response body -> reply (before :meth:`_finish_reply`)."""

    @abc.abstractmethod
    def _stream_state(self) -> StreamState: ...

    def _build_request(
        self, session: Session, turn: ResolvedTurn, *, stream: bool
    ) -> dict[str, Any]:
        return self._body(session, turn, stream=stream)

    def _decode_json(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        return self._finish_reply(turn, self.decode(data))

    def _decode_safely(self, data: Mapping[str, Any]) -> AssistantReply:
        """:meth:`decode`, a malformed body raised as a ProviderError."""
        return self._guarded(lambda: self.decode(data), stream=False)

    def _new_stream(self, turn: ResolvedTurn) -> StreamState:
        return self._stream_state()

    def _handle_event(self, state: StreamState, event: SSEEvent) -> list[StreamEvent]:
        return state.feed(event)

    def _feed_safely(self, state: StreamState, event: SSEEvent) -> list[StreamEvent]:
        return self._feed(state, event)

    def _stream_reply(self, state: StreamState, turn: ResolvedTurn) -> AssistantReply:
        return self._finish_reply(turn, state.finish())

    # -- fix-ups on every reply ----------------------------------------------------------

    def _finish_reply(self, turn: ResolvedTurn, reply: AssistantReply) -> AssistantReply:
        """Drop duplicate call ids (first wins) and undo strict mode's nulls (in the
        calls' arguments, and in a structured answer).

        Strict mode sends optional fields as required-and-nullable, so the model
        answers ``null`` where it meant "left out". Those nulls are removed from
        the argument text before core validates it (so defaults apply again); the
        model's own text is kept in ``provider_state[name]["raw_arguments"]`` and
        sent back verbatim on the next request.
        """
        if turn.output is not None:
            reply = self._restore_output(turn, reply)
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
            compiled = compile_tool(tool, self.schema_compiler, options=self._compile_options)
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

    # -- structured output and settings -----------------------------------------------

    def output_compiled(self, turn: ResolvedTurn) -> CompiledTool | None:
        """The turn's output schema compiled for this provider (None without one): its
        ``report`` lists what the provider's form lost, as for a tool."""
        spec = turn.output
        if spec is None:
            return None
        return cast(CompiledTool, spec.compiled(self.schema_compiler, self._compile_options))

    #: Whose model profiles the adapter applies (``toolwire.profiles``): OpenAI's models for
    #: Chat and Responses; None for servers that serve other models under the same shape.
    profile_vendor: ClassVar[str | None] = "openai"

    def profile(self) -> ModelProfile | None:
        """The request's model's profile (the model can change between requests)."""
        vendor = self.profile_vendor
        return None if vendor is None else profile_for(vendor, self.model)

    def _profiled(self, settings: ModelSettings) -> ModelSettings:
        """``settings`` as the model's profile allows (refused, or left out with
        ``strict=False``)."""
        profile = self.profile()
        return settings if profile is None else apply_profile(settings, profile, self.model)

    def _output_format(self, turn: ResolvedTurn) -> dict[str, Any] | None:
        """The ``json_schema`` format object (name, description, schema, strict)."""
        spec = turn.output
        compiled = self.output_compiled(turn)
        if spec is None or compiled is None:
            return None
        profile = self.profile()
        if profile is not None and not profile.native_output:
            raise UnsupportedSettingError(
                f"model `{self.model}` ({profile.family}) takes no json_schema structured "
                f"output; nothing was sent. Ask for the answer as text, or use a model that "
                f"takes it (gpt-4o, gpt-4.1, gpt-5, o3)"
            )
        fmt: dict[str, Any] = {"name": spec.name}
        if spec.description:
            fmt["description"] = spec.description
        fmt["schema"] = compiled.schema
        if self._send_strict:
            fmt["strict"] = bool(compiled.strict)
        return fmt

    def _restore_output(self, turn: ResolvedTurn, reply: AssistantReply) -> AssistantReply:
        compiled = self.output_compiled(turn)
        if compiled is None or reply.tool_calls or not reply.text or turn.output is None:
            return reply
        text = turn.output.restore(compiled, reply.text)
        if text == reply.text:
            return reply
        return reply.replace(text=text)

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


# -- media in tool results ------------------------------------------------------------------

#: Responses: ``function_call_output.output`` takes ``input_text``, ``input_image`` (base64
#: data URL or an http URL the API fetches) and ``input_file`` (a PDF, as data or a URL).
RESPONSES_MEDIA = MediaSupport(
    "OpenAI Responses",
    image=COMMON_IMAGES,
    file=frozenset({"application/pdf"}),
    urls=frozenset({"image", "file"}),
)

#: Chat Completions: a tool message takes text only, so media goes in one user message
#: after the round's tool messages (images, PDFs as ``file`` data; audio for audio models).
CHAT_MEDIA = MediaSupport(
    "OpenAI Chat Completions",
    image=COMMON_IMAGES,
    file=frozenset({"application/pdf"}),
    urls=frozenset({"image"}),
    where="in a user message after the tool messages",
)
CHAT_AUDIO_MEDIA = attrs.evolve(
    CHAT_MEDIA, audio=frozenset({"audio/wav", "audio/mpeg"}), api="OpenAI Chat (audio models)"
)


def chat_media(model: str, enabled: bool = True) -> MediaSupport:
    """What a Chat Completions model is sent in place of tool-result media."""
    if not enabled:
        return TEXT_ONLY
    return CHAT_AUDIO_MEDIA if "audio" in model else CHAT_MEDIA


def responses_part(part: Part) -> dict[str, Any]:
    """One part as a ``function_call_output`` content item."""
    if not RESPONSES_MEDIA.sends(part):
        return {"type": "input_text", "text": RESPONSES_MEDIA.as_text(part)}
    assert isinstance(part, (Image, File))
    if isinstance(part, Image):
        return {"type": "input_image", "image_url": part.data_url(), "detail": "auto"}
    item: dict[str, Any] = {"type": "input_file", "detail": "auto"}
    if part.data is None:
        item["file_url"] = part.url
    else:
        item["file_data"] = part.data_url()
        item["filename"] = part.name or "file.pdf"
    return item


def chat_part(part: Part) -> dict[str, Any]:
    """One media part as a Chat Completions user content part."""
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": part.data_url()}}
    if isinstance(part, Audio):
        fmt = "mp3" if part.media_type == "audio/mpeg" else "wav"
        return {"type": "input_audio", "input_audio": {"data": part.base64(), "format": fmt}}
    assert isinstance(part, File)
    return {
        "type": "file",
        "file": {"file_data": part.data_url(), "filename": part.name or "file.pdf"},
    }
