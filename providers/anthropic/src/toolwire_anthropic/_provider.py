"""AnthropicProvider: the Messages API (``POST {base}/v1/messages``) over toolwire's transport."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, cast

import attrs
import httpx

from toolwire import ModelSettings, Session
from toolwire.adapters import (
    DEFAULT_CONTEXT_LENGTH_MARKERS,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    ApiKey,
    AssistantReply,
    AuthStyle,
    ErrorMapper,
    HttpProvider,
    ResolvedTurn,
    RetryPolicy,
    SSEEvent,
    StreamEvent,
    map_settings,
)
from toolwire.exceptions import UnsupportedSettingError, UsageError
from toolwire.profiles import ModelProfile, apply_profile, profile_for
from toolwire.schema import CompiledTool, CompileOptions, SchemaChange
from toolwire_anthropic._decode import MessageStream, decode_message
from toolwire_anthropic._encode import (
    MEDIA,
    PROVIDER,
    encode_messages,
    history_tools,
    render_tool,
    tool_choice,
)
from toolwire_anthropic._schema import COMPILER, OUTPUT_COMPILER, is_recursive

__all__ = ["DEFAULT_MAX_TOKENS", "OUTPUT_TOOL", "AnthropicProvider", "supports_native_output"]

OUTPUT_TOOL = "final_result"
"""The name of the tool a structured answer is given through, in ``tool`` mode."""


def supports_native_output(model: str) -> bool:
    """Whether ``model`` takes ``output_config.format`` (structured outputs): a lookup in
    its profile (``toolwire.profiles``): the Claude 4.5 models, and a later Claude the table
    does not know yet (Anthropic's structured outputs guide lists no earlier model). A
    name that is not a Claude's (a gateway's alias) is answered False: the output tool works
    everywhere."""
    if "claude" not in model.lower():
        return False
    return profile_for(PROVIDER, model).native_output


DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` is required by the API; this is sent unless you pass your own."""

_OPTIONS = CompileOptions()
_MIN_THINKING_BUDGET = 1024  # the API's minimum ``budget_tokens``


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


#: Anthropic's error bodies: its error types (also inside a stream) and its wordings for a
#: full context window.
ANTHROPIC_ERRORS = ErrorMapper(
    context_length_markers=(
        *DEFAULT_CONTEXT_LENGTH_MARKERS,
        "prompt is too long",  # "prompt is too long: 210000 tokens > 200000 maximum"
        "exceed context limit",  # "input length and `max_tokens` exceed context limit"
    ),
    kind_status={
        "invalid_request_error": 400,
        "authentication_error": 401,
        "permission_error": 403,
        "not_found_error": 404,
        "request_too_large": 413,
        "rate_limit_error": 429,
        "api_error": 500,
        "timeout_error": 504,
        "overloaded_error": 529,
    },
)


_TOOLS = "anthropic-tools"  # the key of this adapter's per-turn tool list


class AnthropicProvider(HttpProvider[MessageStream]):
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

    The API version: ``anthropic-version: 2023-06-01`` unless
    ``anthropic_version`` says otherwise. toolwire pins the version whose wire
    format its encoder and decoder are written and tested against (tools,
    ``tool_choice``, thinking, streaming events), so an API update cannot change
    what a request means under a running application. The ``anthropic`` SDK 2.x
    sends ``2026-10-21`` instead; toolwire's requests are valid under both (the
    tests check every body against the 2.x SDK's request types and run the loop
    under each version), and some gateways refuse the newer one (Amazon
    Bedrock, for some models). Pass ``anthropic_version="2026-10-21"`` to opt in.

    A structured answer (a turn's ``output_type``) goes as ``output_config.format``
    where the model takes it (``structured_output="native"``) and otherwise through a
    forced tool, ``final_result``, whose input is the answer (``"tool"``; its call
    comes back as the answer's text, never as a tool call). ``"auto"`` (the default)
    picks native for the models :func:`supports_native_output` names.
    """

    name: ClassVar[str] = PROVIDER
    result_media = MEDIA
    error_mapper: ClassVar[ErrorMapper | None] = ANTHROPIC_ERRORS
    default_model: ClassVar[str] = "claude-sonnet-4-5"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)
    base_url_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_BASE_URL",)
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
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        structured_output: Literal["auto", "native", "tool"] = "auto",
    ) -> None:
        if structured_output not in ("auto", "native", "tool"):
            raise ValueError(
                f"structured_output must be 'auto', 'native' or 'tool', got {structured_output!r}"
            )
        self.structured_output = structured_output
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        thinking_config = _thinking_config(thinking, max_tokens)
        self.anthropic_version = anthropic_version or self.api_version
        all_headers = {"anthropic-version": self.anthropic_version}
        all_headers.update(headers or {})
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            auth=AuthStyle.header("x-api-key"),
            headers=all_headers,
            timeout=timeout,
            retry=retry,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
        )
        self.max_tokens = max_tokens
        self.thinking = thinking_config
        self._extra_body = dict(extra_body or {})

    # -- rendering ---------------------------------------------------------------------

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The ``tools`` list exactly as sent (copies: the cached originals stay untouched)."""
        return copy.deepcopy(self._rendered(turn))

    def _rendered(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        return self._turn_tools(
            turn, _TOOLS, lambda: [render_tool(t.tool, t.description) for t in turn.tools]
        )

    def build_body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The JSON request body for this session and turn (a copy: change it freely, e.g.
        to add cache_control; the cached tool dicts it is built from stay untouched)."""
        return copy.deepcopy(self._body(session, turn, stream=stream))

    def _body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        """The JSON request body for this session and turn."""
        messages = session.messages
        body: dict[str, Any] = {**self._extra_body, "model": self.model}
        body["max_tokens"] = self.max_tokens
        system = session.system_text()
        if system:
            body["system"] = system
        body["messages"] = encode_messages(messages)
        output_tool = self._output_tool(turn)
        thinking = self.thinking is not None
        if turn.tools:
            body["tools"] = self._rendered(turn)
            choice = tool_choice(turn, thinking=thinking)
            if output_tool is not None:
                body["tools"] = [*body["tools"], output_tool]
                if choice is None and not thinking:
                    choice = {"type": "any"}  # a tool, or the answer through final_result
            if choice is not None:
                body["tool_choice"] = choice
        else:
            earlier = history_tools(turn, messages)
            if earlier:
                body["tools"] = [render_tool(t, t.description) for t in earlier]
                body["tool_choice"] = {"type": "none"}
            if output_tool is not None:
                body["tools"] = [*body.get("tools", ()), output_tool]
                body["tool_choice"] = (
                    {"type": "auto"} if thinking else {"type": "tool", "name": OUTPUT_TOOL}
                )
        if self.thinking is not None:
            if self._thinking_on() and not self.profile().thinking:
                profile = self.profile()
                raise UnsupportedSettingError(
                    f"model `{self.model}` ({profile.family}) takes no extended thinking; "
                    f"nothing was sent. Leave thinking unset for it"
                )
            body["thinking"] = self.thinking
        config: dict[str, Any] = {}
        if turn.settings is not None:
            body.update(self._settings_fields(turn.settings, config))
        if turn.output is not None and output_tool is None:
            config["format"] = {"type": "json_schema", "schema": self.output_compiled(turn).schema}
        if config:
            body["output_config"] = {**body.get("output_config", {}), **config}
        if stream:
            body["stream"] = True
        return body

    # -- structured output and settings ---------------------------------------------

    def profile(self) -> ModelProfile:
        """The request's model's profile (the model can change between requests)."""
        return profile_for(PROVIDER, self.model)

    def output_mode(self, turn: ResolvedTurn | None = None) -> Literal["native", "tool"]:
        """How a structured answer is asked for with this model (and, given the turn, this
        answer's schema: a recursive one goes through the output tool)."""
        recursive = (
            turn is not None and turn.output is not None and is_recursive(turn.output.schema)
        )
        if self.structured_output == "native" and recursive:
            raise UsageError(
                "Anthropic's native structured output takes no recursive schema (a $ref to a "
                "schema that encloses it); use structured_output='auto' or 'tool'"
            )
        if self.structured_output != "auto":
            return self.structured_output
        native = "claude" in self.model.lower() and self.profile().native_output
        return "native" if native and not recursive else "tool"

    def output_compiled(self, turn: ResolvedTurn) -> CompiledTool:
        """The turn's output schema as sent (``output_config.format`` or the output tool's
        ``input_schema``), with its loss report (which says when a schema the native mode
        cannot take went through the tool instead)."""
        spec = turn.output
        if spec is None:
            raise UsageError("the turn has no output_type")
        mode = self.output_mode(turn)
        compiler = OUTPUT_COMPILER if mode == "native" else COMPILER
        compiled = cast(CompiledTool, spec.compiled(compiler, _OPTIONS))
        if (
            mode == "tool"
            and self.structured_output == "auto"
            and "claude" in self.model.lower()
            and self.profile().native_output
            and is_recursive(spec.schema)
        ):
            note = SchemaChange(
                "",
                "native_output_fallback",
                "info",
                "the schema is recursive, which native structured output does not take: "
                f"the answer goes through the `{OUTPUT_TOOL}` tool",
            )
            report = attrs.evolve(compiled.report, changes=(note, *compiled.report.changes))
            compiled = attrs.evolve(compiled, report=report)
        return compiled

    def _output_tool(self, turn: ResolvedTurn) -> dict[str, Any] | None:
        spec = turn.output
        if spec is None or self.output_mode(turn) != "tool":
            return None
        if OUTPUT_TOOL in turn.offered:
            raise UsageError(
                f"a tool is named `{OUTPUT_TOOL}`, the name the structured answer is given "
                f"through: rename it, or use structured_output='native'"
            )
        about = "Give your final answer by calling this tool with it."
        if spec.description:
            about += f" The answer: {spec.description}"
        return {
            "name": OUTPUT_TOOL,
            "description": about,
            "input_schema": self.output_compiled(turn).schema,
        }

    def _thinking_on(self) -> bool:
        return self.thinking is not None and self.thinking.get("type") != "disabled"

    def _settings_fields(self, settings: ModelSettings, config: dict[str, Any]) -> dict[str, Any]:
        """ModelSettings as Messages fields (``reasoning_effort`` goes into ``config``, the
        ``output_config``); the API has no seed, and API version 2026-10-21 has no
        ``temperature`` or ``top_p`` (they are sent under 2023-06-01, the default)."""
        profile = self.profile()
        thinking = self._thinking_on()
        extra: list[tuple[str, str]] = []
        if thinking and settings.temperature is not None:
            # "Thinking isn't compatible with temperature or top_k modifications"
            # (docs.claude.com, extended thinking: feature compatibility).
            extra.append(("temperature", "with extended thinking, Claude takes no temperature"))
        if thinking and settings.top_p is not None and settings.top_p < 0.95:
            extra.append(("top_p", "with extended thinking, top_p must be between 0.95 and 1"))
        settings = apply_profile(settings, profile, self.model, extra)
        if settings.temperature is not None and settings.temperature > 1:
            raise UsageError(
                f"Anthropic takes a temperature between 0 and 1, got {settings.temperature}"
            )
        budget = self.thinking.get("budget_tokens") if self.thinking else None
        wanted = settings.max_output_tokens
        if wanted is not None and isinstance(budget, int) and budget >= wanted:
            raise UsageError(
                f"max_output_tokens ({wanted}) must be more than the thinking budget ({budget})"
            )
        # API version 2026-10-21 removed the sampling parameters (a 400 even at defaults).
        sampling = self.anthropic_version == "2023-06-01"
        fields = {
            "temperature": "temperature" if sampling else None,
            "top_p": "top_p" if sampling else None,
            "max_output_tokens": "max_tokens",
            "stop": "stop_sequences",
            "seed": None,
        }
        out = map_settings(f"Anthropic API version {self.anthropic_version}", settings, fields)
        if settings.reasoning_effort is not None:
            if settings.reasoning_effort == "minimal":
                raise UsageError(
                    "Anthropic's effort levels are low, medium and high; got 'minimal'"
                )
            config["effort"] = settings.reasoning_effort
        return out

    def _from_output_tool(self, turn: ResolvedTurn, reply: AssistantReply) -> AssistantReply:
        """In tool mode, a reply whose only call is to ``final_result`` is the answer: its
        input becomes the reply's text (a tool round would need a result for it)."""
        if turn.output is None or len(reply.tool_calls) != 1:
            return reply
        call = reply.tool_calls[0]
        if call.name != OUTPUT_TOOL or OUTPUT_TOOL in turn.offered:
            return reply
        return reply.replace(text=call.arguments, tool_calls=(), finish_reason="stop")

    # -- the request loop's hooks (the loop itself is HttpProvider's) ------------------

    def _build_request(
        self, session: Session, turn: ResolvedTurn, *, stream: bool
    ) -> dict[str, Any]:
        return self._body(session, turn, stream=stream)

    def _decode_json(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        return self._from_output_tool(turn, decode_message(data))

    def _decode(self, data: Mapping[str, Any]) -> AssistantReply:
        """A non-streaming ``Message`` -> reply; a malformed one is a ProviderError."""
        return self._guarded(lambda: decode_message(data), stream=False)

    def _describe_error(self, exc: Exception) -> str:
        return f"{type(exc).__name__}: {exc}"

    def _stream_state(self) -> MessageStream:
        return MessageStream(self._transport)

    def _new_stream(self, turn: ResolvedTurn) -> MessageStream:
        return self._stream_state()

    def _handle_event(self, state: MessageStream, event: SSEEvent) -> list[StreamEvent]:
        return state.feed(event)

    def _stream_reply(self, state: MessageStream, turn: ResolvedTurn) -> AssistantReply:
        return self._from_output_tool(turn, state.finish())
