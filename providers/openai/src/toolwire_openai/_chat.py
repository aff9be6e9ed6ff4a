"""Chat Completions (``POST {base}/chat/completions``) and the servers that speak it.

:class:`OpenAIChatProvider` (OpenAI itself), :class:`OpenRouterProvider` and
:class:`OpenAICompatibleProvider` (vLLM, Ollama, llama.cpp ``llama-server``)
share the encoder, the decoder and the stream assembler; they differ in
defaults and in which optional request fields they send
(``reference/wire-formats.md`` sections 1 and 5).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import httpx

from toolwire import (
    AssistantMessage,
    ModelSettings,
    Session,
    SystemMessage,
    ToolCall,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from toolwire.adapters import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    ApiKey,
    AssistantReply,
    ErrorMapper,
    ResolvedTool,
    ResolvedTurn,
    RetryPolicy,
    SSEEvent,
    StreamEvent,
    TextDelta,
    ToolCallAssembler,
    ToolChoice,
    Transport,
    map_settings,
    synthesize_call_id,
)
from toolwire.exceptions import StreamError, UsageError
from toolwire.media import Audio, File, Image, Part
from toolwire.schema import CompiledTool

from ._common import (
    OPENROUTER_ERRORS,
    OpenAIBase,
    StreamState,
    StrictMode,
    arguments_text,
    as_int,
    chat_media,
    chat_part,
    malformed,
)

__all__ = ["OpenAIChatProvider", "OpenAICompatibleProvider", "OpenRouterProvider"]

_FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


def chat_finish_reason(raw: object, has_calls: bool, refusal: bool) -> str:
    """Normalise ``finish_reason``; any assembled call makes a tool turn (Ollama and
    litellm end tool turns with ``stop``; llama.cpp/vLLM sometimes with null)."""
    if has_calls:
        return "length" if raw == "length" else "tool_calls"
    if refusal:
        return "refusal"
    if raw is None:
        return "stop"
    normal = _FINISH.get(raw) if isinstance(raw, str) else None
    if normal is None or normal == "tool_calls":
        return "other"
    return normal


def chat_usage(usage: object) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    return Usage(
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        cached_tokens=as_int(prompt.get("cached_tokens")) if isinstance(prompt, Mapping) else 0,
        reasoning_tokens=(
            as_int(completion.get("reasoning_tokens")) if isinstance(completion, Mapping) else 0
        ),
    )


def _content_text(content: object) -> str:
    """``content`` is a string, null, or (some servers) a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    raise TypeError(f"message content must be a string or a list, got {type(content).__name__}")


def _opt_str(value: object, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{what} must be a string, got {type(value).__name__}")


def _merge_reasoning_details(fragments: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenRouter streams ``reasoning_details`` as pieces; pieces with the same ``index``
    (and type) are one detail whose text fields are concatenated. **Unverified** beyond
    OpenRouter's "preserving reasoning blocks" docs."""
    merged: list[dict[str, Any]] = []
    by_key: dict[tuple[Any, Any], dict[str, Any]] = {}
    for frag in fragments:
        key = (frag.get("index"), frag.get("type"))
        current = by_key.get(key) if key[0] is not None else None
        if current is None:
            current = dict(frag)
            merged.append(current)
            if key[0] is not None:
                by_key[key] = current
            continue
        for name, value in frag.items():
            if name in ("text", "summary", "data") and isinstance(value, str):
                current[name] = str(current.get(name) or "") + value
            elif value is not None:
                current[name] = value
    return merged


class _ChatStream(StreamState):
    def __init__(self, provider: str, transport: Transport) -> None:
        self.provider = provider
        self.transport = transport
        self.asm = ToolCallAssembler(provider)
        self.refusal: list[str] = []
        self.finish_reason: object = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.reasoning: list[Mapping[str, Any]] = []
        self.unindexed = 0
        self.done = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        # Decoded JSON: objects are dicts, checked as such (an ABC check per field costs
        # more than the rest of a small delta).
        data = event.data
        if data == "[DONE]" or data.strip() == "[DONE]":
            self.done = True
            return []
        payload = event.json()
        if not isinstance(payload, dict):
            raise malformed(
                self.provider, f"expected a JSON object, got {data[:80]!r}", stream=True
            )
        if payload.get("error") is not None or event.event == "error":
            raise self.transport.error_from_payload(payload, default=StreamError)
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.model = model
        if payload.get("usage") is not None:
            self.usage = chat_usage(payload["usage"])
        choices = payload.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise TypeError(f"choices must be a list, got {type(choices).__name__}")
        out: list[StreamEvent] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise TypeError(f"a choice must be an object, got {type(choice).__name__}")
            if choice.get("index", 0) not in (0, None):
                continue  # n > 1: only the first choice is used
            delta = choice.get("delta")
            if delta is None:
                delta = {}
            if not isinstance(delta, dict):
                raise TypeError(f"delta must be an object, got {type(delta).__name__}")
            content = delta.get("content")
            if content is not None:
                out.extend(self.asm.text(_content_text(content)))
            refusal = _opt_str(delta.get("refusal"), "refusal")
            if refusal:
                self.refusal.append(refusal)
                out.append(TextDelta(refusal))
            details = delta.get("reasoning_details")
            if isinstance(details, list):
                self.reasoning.extend(d for d in details if isinstance(d, Mapping))
            calls = delta.get("tool_calls")
            if calls is not None:
                if not isinstance(calls, list):
                    raise TypeError(f"tool_calls must be a list, got {type(calls).__name__}")
                for call in calls:
                    out.extend(self._call(call))
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                out.extend(
                    self.asm.fragment(
                        "function_call",
                        name=_opt_str(legacy.get("name"), "function_call.name") or None,
                        arguments=arguments_text(legacy.get("arguments")) or None,
                    )
                )
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]
        return out

    def _call(self, call: object) -> list[StreamEvent]:
        if not isinstance(call, dict):
            raise TypeError(f"a tool-call delta must be an object, got {type(call).__name__}")
        fn = call.get("function")
        if fn is None:
            fn = {}
        if not isinstance(fn, dict):
            raise TypeError(f"tool call function must be an object, got {type(fn).__name__}")
        call_id = _opt_str(call.get("id"), "tool call id") or None
        name = _opt_str(fn.get("name"), "function name") or None
        index = call.get("index")
        key: object
        if isinstance(index, int) and not isinstance(index, bool):
            key = index
        elif index is None:
            # No index (Ollama before 0.4.7): a fragment that names a call starts one.
            if call_id or name:
                self.unindexed += 1
            key = ("unindexed", self.unindexed)
        else:
            raise TypeError(f"tool call index must be an integer, got {type(index).__name__}")
        return self.asm.fragment(
            key, id=call_id, name=name, arguments=arguments_text(fn.get("arguments")) or None
        )

    def finish(self) -> AssistantReply:
        if not self.done:
            raise StreamError(
                "the stream ended without `data: [DONE]`; the reply is incomplete and "
                "nothing was committed",
                provider=self.provider,
            )
        calls = self.asm.calls()
        refusal = "".join(self.refusal)
        text = self.asm.text_so_far + refusal
        state: dict[str, Any] = {}
        if refusal:
            state["refusal"] = refusal
        if self.reasoning:
            state["reasoning_details"] = _merge_reasoning_details(self.reasoning)
        return AssistantReply(
            text=text,
            tool_calls=calls,
            finish_reason=chat_finish_reason(self.finish_reason, bool(calls), bool(refusal)),
            usage=self.usage,
            provider_state={self.provider: state} if state else {},
            model=self.model,
        )


class _ChatProvider(OpenAIBase):
    """Chat Completions request building and decoding (shared by the three chat adapters)."""

    path: ClassVar[str] = "chat/completions"
    wire_kind: ClassVar[str] = "chat"

    def _configure(
        self,
        *,
        system_role: Literal["system", "developer"] = "system",
        send_tool_choice: bool = True,
        send_parallel_tool_calls: bool = True,
        stream_usage: bool = True,
        null_content: bool = True,
        keep_reasoning_details: bool = False,
        result_media: bool = True,
    ) -> None:
        if system_role not in ("system", "developer"):
            raise ValueError(f"system_role must be 'system' or 'developer', got {system_role!r}")
        self._system_role = system_role
        self._send_tool_choice = send_tool_choice
        self._send_parallel = send_parallel_tool_calls
        self._stream_usage = stream_usage
        self._null_content = null_content
        self._keep_reasoning = keep_reasoning_details
        self.result_media = chat_media(self.model, result_media)

    # -- rendering

    def _tool_wire(self, tool: ResolvedTool, compiled: CompiledTool) -> dict[str, Any]:
        fn: dict[str, Any] = {"name": tool.name}
        if tool.description:
            fn["description"] = tool.description
        fn["parameters"] = compiled.schema
        if self._send_strict:
            fn["strict"] = bool(compiled.strict)
        return {"type": "function", "function": fn}

    @staticmethod
    def tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
        if choice.kind == "specific":
            return {"type": "function", "function": {"name": choice.name}}
        return choice.kind

    def _body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self.encode(session)}
        tools = self._wire_tools(turn)
        if tools:
            body["tools"] = tools
            if self._send_tool_choice:
                body["tool_choice"] = self.tool_choice(turn.tool_choice)
            if turn.parallel is not None and self._send_parallel:
                body["parallel_tool_calls"] = turn.parallel
        if turn.settings is not None:
            body.update(self._settings_fields(turn.settings))
        fmt = self._output_format(turn)
        if fmt is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": fmt}
        if stream:
            body["stream"] = True
            if self._stream_usage:
                body["stream_options"] = {"include_usage": True}
        return self._merge_body(body)

    #: Where ModelSettings.max_output_tokens goes: OpenAI's current field; the servers
    #: that speak the OpenAI shape (OpenRouter, vLLM, Ollama, llama.cpp) take max_tokens.
    max_tokens_field: ClassVar[str] = "max_completion_tokens"
    #: How many stop sequences the API takes (None: no limit known).
    max_stop: ClassVar[int | None] = None

    def _settings_fields(self, settings: ModelSettings) -> dict[str, Any]:
        """ModelSettings as Chat Completions fields (parallel_tool_calls is sent with the
        tools, from ``turn.parallel``), as the model's profile allows."""
        settings = self._profiled(settings)
        stop, most = settings.stop, self.max_stop
        if stop is not None and most is not None and len(stop) > most:
            raise UsageError(f"{self.name} takes at most {most} stop sequences, got {len(stop)}")
        fields = {
            "temperature": "temperature",
            "top_p": "top_p",
            "max_output_tokens": self.max_tokens_field,
            "stop": "stop",
            "seed": "seed",
        }
        out = map_settings(self.name, settings, fields)
        if settings.reasoning_effort is not None:
            out.update(self._reasoning_field(settings.reasoning_effort))
        return out

    def _reasoning_field(self, effort: str) -> dict[str, Any]:
        return {"reasoning_effort": effort}

    # -- the session

    def encode(self, session: Session) -> list[dict[str, Any]]:
        """The session as Chat Completions ``messages``."""
        out: list[dict[str, Any]] = []
        for m in session:
            if isinstance(m, SystemMessage):
                if m.text:  # an empty system message is sent by no adapter
                    out.append({"role": self._system_role, "content": m.text})
            elif isinstance(m, UserMessage):
                out.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                out.append(self._assistant(m))
            elif isinstance(m, ToolResultsMessage):
                media: list[dict[str, Any]] = []
                for r in m.results:
                    content = self._result_text(r, media) if r.rich else r.for_model()[0]
                    out.append({"role": "tool", "tool_call_id": r.call_id, "content": content})
                if media:  # after every tool message of the round: they must come first
                    out.append({"role": "user", "content": media})
        return out

    def _result_text(self, r: ToolResult, media: list[dict[str, Any]]) -> str:
        """A result's tool-message text; the media this model takes is added to ``media``
        (the user message after the round), under a line naming the call."""
        support = self.result_media
        parts, _ = r.model_parts()
        texts: list[str] = []
        sent: list[Part] = []
        for p in parts:
            if isinstance(p, (Image, Audio, File)) and support.sends(p):
                texts.append(p.label("sent in the next user message"))
                sent.append(p)
            else:
                texts.append(support.as_text(p))
        if sent:
            media.append(
                {
                    "type": "text",
                    "text": f"Media from the result of tool call {r.call_id} ({r.tool_name}):",
                }
            )
            media.extend(chat_part(p) for p in sent)
        return "\n\n".join(texts)

    def _assistant(self, m: AssistantMessage) -> dict[str, Any]:
        state = self._state_of(m.provider_state)
        raw = self._raw_arguments(m.provider_state)
        msg: dict[str, Any] = {"role": "assistant"}
        text: str | None = m.text
        refusal = state.get("refusal")
        if isinstance(refusal, str) and refusal:
            msg["refusal"] = refusal
            text = m.text[: -len(refusal)] if m.text.endswith(refusal) else m.text
        if m.tool_calls:
            if not text and self._null_content:
                text = None
            msg["content"] = text
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _raw(raw, c)},
                }
                for c in m.tool_calls
            ]
        elif text or not refusal:
            msg["content"] = text
        else:
            msg["content"] = None if self._null_content else ""
        details = state.get("reasoning_details")
        if self._keep_reasoning and isinstance(details, list) and details:
            msg["reasoning_details"] = details
        return msg

    # -- decoding

    def decode(self, data: Mapping[str, Any]) -> AssistantReply:
        if data.get("error") is not None:
            raise self._transport.error_from_payload(data)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise malformed(self.name, "the response has no choices", stream=False)
        choice = next(
            (c for c in choices if isinstance(c, Mapping) and c.get("index", 0) in (0, None)),
            choices[0],
        )
        if not isinstance(choice, Mapping) or not isinstance(choice.get("message"), Mapping):
            raise malformed(self.name, "the first choice has no message", stream=False)
        message: Mapping[str, Any] = choice["message"]
        text = _content_text(message.get("content"))
        refusal = _opt_str(message.get("refusal"), "refusal") or ""
        calls: list[ToolCall] = []
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise TypeError(f"tool_calls must be a list, got {type(raw_calls).__name__}")
        legacy = message.get("function_call")
        if isinstance(legacy, Mapping):
            raw_calls = [*raw_calls, {"function": legacy}]
        for position, tc in enumerate(raw_calls):
            if not isinstance(tc, Mapping) or not isinstance(tc.get("function"), Mapping):
                raise TypeError("a tool call must be an object with a `function` object")
            fn = tc["function"]
            name = fn.get("name")
            if not isinstance(name, str) or not name:
                raise malformed(self.name, f"tool call {position} has no name", stream=False)
            args = arguments_text(fn.get("arguments")) or "{}"
            call_id = _opt_str(tc.get("id"), "tool call id") or synthesize_call_id(
                name, args, position
            )
            calls.append(ToolCall(call_id, name, args))
        state: dict[str, Any] = {}
        if refusal:
            state["refusal"] = refusal
        details = message.get("reasoning_details")
        if isinstance(details, list) and details:
            state["reasoning_details"] = details
        model = data.get("model")
        return AssistantReply(
            text=text + refusal,
            tool_calls=tuple(calls),
            finish_reason=chat_finish_reason(
                choice.get("finish_reason"), bool(calls), bool(refusal)
            ),
            usage=chat_usage(data.get("usage")),
            provider_state={self.name: state} if state else {},
            model=model if isinstance(model, str) else None,
        )

    def _stream_state(self) -> StreamState:
        return _ChatStream(self.name, self._transport)


def _raw(raw: Mapping[str, Any], call: ToolCall) -> str:
    value = raw.get(call.id)
    return value if isinstance(value, str) else call.arguments


class OpenAIChatProvider(_ChatProvider):
    """OpenAI Chat Completions.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``; ``base_url`` from the
    argument, ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. ``strict``
    (default ``"auto"``: on only when the schema compiles losslessly) is always
    sent explicitly. ``system_role="developer"`` for models that want it.
    ``extra_body`` is merged into every request (``temperature``,
    ``max_completion_tokens``, ``reasoning_effort``...). Tool-result media goes in one
    user message after the round's tool messages (``result_media=False``: text only).
    """

    name: ClassVar[str] = "openai"
    default_model: ClassVar[str] = "gpt-4.1"
    max_stop: ClassVar[int | None] = 4
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    base_url_env: ClassVar[tuple[str, ...]] = ("OPENAI_BASE_URL",)

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        strict: StrictMode | None = None,
        system_role: Literal["system", "developer"] = "system",
        stream_usage: bool = True,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        result_media: bool = True,
    ) -> None:
        all_headers = dict(headers or {})
        if organization:
            all_headers["OpenAI-Organization"] = organization
        if project:
            all_headers["OpenAI-Project"] = project
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            headers=all_headers,
            timeout=timeout,
            retry=retry,
            strict=strict,
            extra_body=extra_body,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
        )
        self._configure(
            system_role=system_role, stream_usage=stream_usage, result_media=result_media
        )


class OpenRouterProvider(_ChatProvider):
    """OpenRouter (``https://openrouter.ai/api/v1``, Chat Completions shape).

    The key comes from ``api_key`` or ``OPENROUTER_API_KEY``. ``app_url`` and
    ``app_name`` become OpenRouter's attribution headers (``HTTP-Referer``,
    ``X-Title``). ``provider`` is OpenRouter's routing object (for example
    ``{"require_parameters": True}`` so only upstreams that honour
    ``tool_choice`` and ``parallel_tool_calls`` are used). ``strict`` defaults to
    off: upstream providers may not honour it. ``reasoning_details`` are kept on
    the assistant turn and sent back (Gemini 3 signatures need them). Mid-stream
    ``error`` chunks and ``: OPENROUTER PROCESSING`` comments are handled.
    """

    name: ClassVar[str] = "openrouter"
    profile_vendor: ClassVar[str | None] = None  # many vendors' models: OpenRouter adapts
    error_mapper: ClassVar[ErrorMapper | None] = OPENROUTER_ERRORS
    max_tokens_field: ClassVar[str] = "max_tokens"
    default_model: ClassVar[str] = "openai/gpt-4.1"
    default_base_url: ClassVar[str] = "https://openrouter.ai/api/v1"
    key_env: ClassVar[tuple[str, ...]] = ("OPENROUTER_API_KEY",)

    def _reasoning_field(self, effort: str) -> dict[str, Any]:
        return {"reasoning": {"effort": effort}}  # OpenRouter's unified reasoning object

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        app_url: str | None = None,
        app_name: str | None = None,
        provider: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        strict: StrictMode | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        result_media: bool = True,
    ) -> None:
        all_headers = dict(headers or {})
        if app_url:
            all_headers["HTTP-Referer"] = app_url
        if app_name:
            all_headers["X-Title"] = app_name
        extra = dict(extra_body or {})
        if provider is not None:
            extra["provider"] = dict(provider)
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            headers=all_headers,
            timeout=timeout,
            retry=retry,
            strict=strict,
            extra_body=extra,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
        )
        self._configure(keep_reasoning_details=True, result_media=result_media)


class OpenAICompatibleProvider(_ChatProvider):
    """Any server with an OpenAI-compatible ``/chat/completions``: vLLM, Ollama, llama.cpp.

    ``base_url`` and ``model`` are required. The key is optional: ``api_key``,
    or the variable named by ``api_key_env`` (never ``OPENAI_API_KEY``, so a
    real OpenAI key is not sent to a local server by accident).

    What differs from OpenAI, and the switches for it:

    - ``strict`` is off and left out of the tool unless you set it;
    - ``send_tool_choice=False`` for servers that reject ``tool_choice``
      (Ollama ignores it); either way a requirement is checked after
      decoding (``supports_requirement`` is False);
    - ``send_parallel_tool_calls=False`` for servers that reject it
      (llama.cpp needs it ``True`` to make parallel calls at all);
    - ``stream_usage=False`` for servers that reject ``stream_options``;
    - ``result_media=False`` for servers (or models) that take no images: tool-result
      media is then sent as placeholder lines in the tool message, never as content parts;
    - streamed calls without ``index``, several calls sharing index 0 with
      different ids, whole calls in one chunk, missing ids (synthesised),
      arguments sent as objects, empty arguments (``{}``), and tool turns that
      end with ``finish_reason`` ``stop`` or null are all decoded.
    """

    name: ClassVar[str] = "openai-compatible"
    profile_vendor: ClassVar[str | None] = None  # the server's own models: no profile known
    default_model: ClassVar[str] = ""
    max_tokens_field: ClassVar[str] = "max_tokens"
    supports_requirement: ClassVar[bool] = False

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | ApiKey | None = None,
        api_key_env: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        strict: StrictMode | None = None,
        send_tool_choice: bool = True,
        send_parallel_tool_calls: bool = True,
        stream_usage: bool = True,
        system_role: Literal["system", "developer"] = "system",
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        result_media: bool = True,
    ) -> None:
        if not model:
            raise ValueError(
                "OpenAICompatibleProvider needs model=... (the name the server knows the "
                "model by, e.g. 'llama3.1' for Ollama)"
            )
        if not base_url:
            raise ValueError(
                "OpenAICompatibleProvider needs base_url=... (e.g. 'http://localhost:11434/v1' "
                "for Ollama, 'http://localhost:8000/v1' for vLLM)"
            )
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            headers=headers,
            timeout=timeout,
            retry=retry,
            strict=strict,
            extra_body=extra_body,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
            _key_required=False,
            _key_env=(api_key_env,) if api_key_env else (),
        )
        self._send_strict = strict is not None
        self._configure(
            system_role=system_role,
            send_tool_choice=send_tool_choice,
            send_parallel_tool_calls=send_parallel_tool_calls,
            stream_usage=stream_usage,
            null_content=False,
            result_media=result_media,
        )
