"""The OpenAI Responses API (``POST {base}/responses``).

Stateless by default (``store: false``): the Session is the conversation's
only record, so a reasoning model's reasoning items come back with
``encrypted_content`` (``include: ["reasoning.encrypted_content"]``), are kept
on the assistant message in ``provider_state["openai-responses"]["items"]``
together with the order of the turn's output items, and are sent back in that
order.

Encrypted reasoning is asked for only where the model reasons: the API answers
400 "Encrypted content is not supported with this model" to any other model
(gpt-4o, gpt-4.1, gpt-5-chat-latest). :func:`is_reasoning_model` is the rule;
``include_encrypted_reasoning=True/False`` overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from toolwire.exceptions import StreamError
from toolwire.profiles import profile_for
from toolwire.schema import CompiledTool

from ._common import (
    RESPONSES_MEDIA,
    OpenAIBase,
    StreamState,
    StrictMode,
    arguments_text,
    as_int,
    malformed,
    responses_part,
)

__all__ = ["OpenAIResponsesProvider"]


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models: a lookup in its profile
    (``toolwire.profiles``, ``thinking``): the o-series, ``gpt-5*`` except ``gpt-5-chat*``,
    ``codex-mini*`` and ``gpt-oss*``, and whatever the application registers.

    The rule the Responses adapter uses to decide whether to ask for encrypted reasoning
    when ``store`` is false. A ``provider/`` prefix (OpenRouter style) and a fine-tune's
    ``ft:`` prefix are ignored. A model no profile knows is treated as not reasoning (a
    request still succeeds; only its reasoning is not carried to the next request): pass
    ``include_encrypted_reasoning=True`` for it, or register its profile.
    """
    return profile_for("openai", model).thinking


_REASONING_KEYS = ("type", "id", "summary", "content", "encrypted_content")
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def responses_usage(usage: object) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None
    inp = usage.get("input_tokens_details")
    out = usage.get("output_tokens_details")
    return Usage(
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        cached_tokens=as_int(inp.get("cached_tokens")) if isinstance(inp, Mapping) else 0,
        reasoning_tokens=as_int(out.get("reasoning_tokens")) if isinstance(out, Mapping) else 0,
    )


def _reasoning_param(item: Mapping[str, Any]) -> dict[str, Any]:
    """A reasoning output item as an input item: only the keys the API takes back."""
    out = {k: item[k] for k in _REASONING_KEYS if k in item and item[k] is not None}
    out.setdefault("summary", [])
    return out


def _error_payload(error: object, fallback: str) -> dict[str, Any]:
    if isinstance(error, Mapping):
        return {"error": {"message": error.get("message") or fallback, "code": error.get("code")}}
    return {"error": {"message": fallback, "code": None}}


def _output(result: ToolResult) -> str | list[dict[str, Any]]:
    """A result's ``output``: its text, or (with media) a list of content items."""
    if not result.rich:
        return result.for_model()[0]
    parts, _ = result.model_parts()
    items = [responses_part(p) for p in parts]
    return [i for i in items if i["type"] != "input_text" or i["text"]]


class _Decoded:
    """The pieces of one response, from the final object or from stream events."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[ToolCall] = []
        self.items: list[dict[str, Any]] = []
        self.has_reasoning = False

    def add_item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            content = item.get("content") or []
            if not isinstance(content, list):
                raise TypeError("message content must be a list")
            for part in content:
                if not isinstance(part, Mapping):
                    raise TypeError("a content part must be an object")
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    self.text.append(part["text"])
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    self.refusal.append(part["refusal"])
            self.items.append({"type": "message"})
        elif kind == "function_call":
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise TypeError("a function_call item has no name")
            args = arguments_text(item.get("arguments")) or "{}"
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                call_id = synthesize_call_id(name, args, len(self.calls))
            self.calls.append(ToolCall(call_id, name, args))
            self.items.append({"type": "function_call", "call_id": call_id})
        elif kind == "reasoning":
            self.items.append(_reasoning_param(item))
            self.has_reasoning = True

    def reply(self, provider: str, response: Mapping[str, Any]) -> AssistantReply:
        refusal = "".join(self.refusal)
        calls = tuple(self.calls)
        if response.get("status") == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            finish = _INCOMPLETE.get(reason, "other") if isinstance(reason, str) else "other"
        elif calls:
            finish = "tool_calls"
        elif refusal:
            finish = "refusal"
        else:
            finish = "stop"
        model = response.get("model")
        return AssistantReply(
            text="".join(self.text) + refusal,
            tool_calls=calls,
            finish_reason=finish,
            usage=responses_usage(response.get("usage")),
            provider_state={provider: {"items": self.items}} if self.has_reasoning else {},
            model=model if isinstance(model, str) else None,
        )


class _ResponsesStream(StreamState):
    def __init__(
        self,
        provider: str,
        transport: Transport,
        decode: Any,
    ) -> None:
        self.provider = provider
        self.transport = transport
        self.decode = decode
        self.asm = ToolCallAssembler(provider)
        self.refusal: list[str] = []
        self.index_of: dict[str, int] = {}
        self.with_args: set[object] = set()
        self.opened: set[object] = set()
        self.items: dict[int, Mapping[str, Any]] = {}
        self.final: Mapping[str, Any] | None = None
        self.done = False

    def _key(self, output_index: object, item_id: object) -> object:
        if isinstance(output_index, int) and not isinstance(output_index, bool):
            return output_index
        if isinstance(item_id, str) and item_id in self.index_of:
            return self.index_of[item_id]
        if isinstance(item_id, str) and item_id:
            return item_id
        raise TypeError("the event names neither an output_index nor an item_id")

    def _error(self, payload: Mapping[str, Any]) -> Exception:
        return self.transport.error_from_payload(payload, default=StreamError)

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        payload = event.json()
        if not isinstance(payload, dict):
            raise TypeError(f"expected a JSON object, got {type(payload).__name__}")
        kind = payload.get("type") or event.event
        if kind == "error" or event.event == "error":
            raise self._error(_error_payload(payload, "error event in the stream"))
        if kind == "response.failed":
            response = payload.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            raise self._error(_error_payload(error, "the response failed"))
        if kind in ("response.completed", "response.incomplete"):
            response = payload.get("response")
            if not isinstance(response, Mapping):
                raise TypeError(f"{kind} carries no response object")
            self.final = response
            self.done = True
            return []
        if kind == "response.output_text.delta":
            return self.asm.text(_str(payload.get("delta")))
        if kind == "response.refusal.delta":
            delta = _str(payload.get("delta"))
            self.refusal.append(delta)
            return [TextDelta(delta)] if delta else []
        if kind == "response.output_item.added":
            item = _item(payload)
            if isinstance(item.get("id"), str) and isinstance(payload.get("output_index"), int):
                self.index_of[item["id"]] = payload["output_index"]
            if item.get("type") != "function_call":
                return []
            return self._open(self._key(payload.get("output_index"), item.get("id")), item)
        if kind == "response.function_call_arguments.delta":
            key = self._key(payload.get("output_index"), payload.get("item_id"))
            delta = _str(payload.get("delta"))
            if delta:
                self.with_args.add(key)
            return self.asm.fragment(key, arguments=delta or None)
        if kind == "response.function_call_arguments.done":
            key = self._key(payload.get("output_index"), payload.get("item_id"))
            if key in self.with_args:
                return []
            self.with_args.add(key)
            return self.asm.fragment(
                key, arguments=arguments_text(payload.get("arguments")) or None
            )
        if kind == "response.output_item.done":
            item = _item(payload)
            index = payload.get("output_index")
            key = self._key(index, item.get("id"))
            if isinstance(index, int):
                self.items[index] = item
            if item.get("type") == "function_call" and key not in self.opened:
                return self._open(key, item)
        return []

    def _open(self, key: object, item: Mapping[str, Any]) -> list[StreamEvent]:
        self.opened.add(key)
        args = arguments_text(item.get("arguments")) or None
        if args:
            self.with_args.add(key)
        call_id = item.get("call_id")
        name = item.get("name")
        return self.asm.fragment(
            key,
            id=call_id if isinstance(call_id, str) and call_id else None,
            name=name if isinstance(name, str) and name else None,
            arguments=args,
        )

    def finish(self) -> AssistantReply:
        if not self.done or self.final is None:
            raise StreamError(
                "the stream ended before `response.completed`; the reply is incomplete and "
                "nothing was committed",
                provider=self.provider,
            )
        output = self.final.get("output")
        if isinstance(output, list) and output:
            # The final snapshot is authoritative, as in the official SDK.
            reply: AssistantReply = self.decode(self.final)
            return reply
        # A server that streams the items but sends an empty final snapshot.
        decoded = _Decoded()
        for index in sorted(self.items):
            if self.items[index].get("type") == "reasoning":
                decoded.add_item(self.items[index])
        decoded.text.append(self.asm.text_so_far)
        decoded.refusal.extend(self.refusal)
        decoded.calls.extend(self.asm.calls())
        return decoded.reply(self.provider, self.final)


def _str(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _item(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    item = payload.get("item")
    if not isinstance(item, Mapping):
        raise TypeError("the event carries no item object")
    return item


class OpenAIResponsesProvider(OpenAIBase):
    """OpenAI Responses API.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``; ``base_url`` from the
    argument, ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. ``store``
    defaults to False (the Session holds the conversation); a reasoning model's
    reasoning items are then requested with their encrypted content and sent
    back on the next request. ``include_encrypted_reasoning`` defaults to
    :func:`is_reasoning_model` of the model (other models refuse the request
    with a 400); True or False overrides the rule. Reasoning items that came
    back without encrypted content are not sent back while ``store`` is false
    (the API would answer 404: nothing was stored to refer to). ``strict`` is
    always sent explicitly (default ``"auto"``).
    """

    name: ClassVar[str] = "openai-responses"
    result_media = RESPONSES_MEDIA
    default_model: ClassVar[str] = "gpt-4.1"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    base_url_env: ClassVar[tuple[str, ...]] = ("OPENAI_BASE_URL",)
    path: ClassVar[str] = "responses"
    wire_kind: ClassVar[str] = "responses"

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
        store: bool = False,
        include_encrypted_reasoning: bool | None = None,
        system_role: Literal["system", "developer"] = "system",
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
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
        if system_role not in ("system", "developer"):
            raise ValueError(f"system_role must be 'system' or 'developer', got {system_role!r}")
        self._store = store
        self._include_reasoning = include_encrypted_reasoning
        self._system_role = system_role

    # -- rendering

    def _tool_wire(self, tool: ResolvedTool, compiled: CompiledTool) -> dict[str, Any]:
        wire: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description:
            wire["description"] = tool.description
        wire["parameters"] = compiled.schema
        wire["strict"] = bool(compiled.strict)
        return wire

    @staticmethod
    def tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
        if choice.kind == "specific":
            return {"type": "function", "name": choice.name}
        return choice.kind

    def _body(self, session: Session, turn: ResolvedTurn, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": self.encode(session)}
        tools = self._wire_tools(turn)
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.tool_choice(turn.tool_choice)
            if turn.parallel is not None:
                body["parallel_tool_calls"] = turn.parallel
        body["store"] = self._store
        include = self._include_reasoning
        if include is None:  # decided per request: the model can be changed
            include = is_reasoning_model(self.model)
        if include and not self._store:
            body["include"] = ["reasoning.encrypted_content"]
        if turn.settings is not None:
            body.update(self._settings_fields(turn.settings))
        fmt = self._output_format(turn)
        if fmt is not None:
            body["text"] = {"format": {"type": "json_schema", **fmt}}
        if stream:
            body["stream"] = True
        return self._merge_body(body)

    def _settings_fields(self, settings: ModelSettings) -> dict[str, Any]:
        """ModelSettings as Responses fields, as the model's profile allows; it has no stop
        sequences and no seed."""
        settings = self._profiled(settings)
        fields = {
            "temperature": "temperature",
            "top_p": "top_p",
            "max_output_tokens": "max_output_tokens",
            "stop": None,
            "seed": None,
        }
        out = map_settings("OpenAI Responses", settings, fields)
        if settings.reasoning_effort is not None:
            out["reasoning"] = {"effort": settings.reasoning_effort}
        return out

    # -- the session

    def encode(self, session: Session) -> list[dict[str, Any]]:
        """The session as Responses ``input`` items."""
        out: list[dict[str, Any]] = []
        for m in session:
            if isinstance(m, SystemMessage):
                if m.text:  # an empty system message is sent by no adapter
                    out.append({"role": self._system_role, "content": m.text})
            elif isinstance(m, UserMessage):
                out.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                out.extend(self._assistant(m))
            elif isinstance(m, ToolResultsMessage):
                out.extend(
                    {
                        "type": "function_call_output",
                        "call_id": r.call_id,
                        "output": _output(r),
                    }
                    for r in m.results
                )
        return out

    def _assistant(self, m: AssistantMessage) -> list[dict[str, Any]]:
        raw = self._raw_arguments(m.provider_state)
        items = self._state_of(m.provider_state).get("items")
        calls = {c.id: c for c in m.tool_calls}
        sent: set[str] = set()
        out: list[dict[str, Any]] = []
        text_sent = False

        def call_item(c: ToolCall) -> dict[str, Any]:
            value = raw.get(c.id)
            args = value if isinstance(value, str) else c.arguments
            return {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": args}

        if isinstance(items, list):
            # The turn's own order: reasoning items must precede the calls they led to.
            for item in items:
                if not isinstance(item, Mapping):
                    continue
                kind = item.get("type")
                if kind == "reasoning":
                    # With store false, an item without its encrypted content
                    # refers to nothing the API kept: sending it is a 404.
                    if self._store or item.get("encrypted_content"):
                        out.append(dict(item))
                elif kind == "message" and not text_sent and m.text:
                    out.append({"role": "assistant", "content": m.text})
                    text_sent = True
                elif kind == "function_call":
                    cid = item.get("call_id")
                    call = calls.get(cid) if isinstance(cid, str) else None
                    if call is not None and call.id not in sent:
                        out.append(call_item(call))
                        sent.add(call.id)
        if not text_sent and (m.text or not m.tool_calls):
            out.append({"role": "assistant", "content": m.text})
        out.extend(call_item(c) for c in m.tool_calls if c.id not in sent)
        return out

    # -- decoding

    def decode(self, data: Mapping[str, Any]) -> AssistantReply:
        status = data.get("status")
        if status == "failed" or (data.get("error") is not None and not data.get("output")):
            raise self._transport.error_from_payload(
                _error_payload(data.get("error"), "the response failed")
            )
        output = data.get("output")
        if not isinstance(output, list):
            raise malformed(self.name, "the response has no output list", stream=False)
        decoded = _Decoded()
        for item in output:
            if not isinstance(item, Mapping):
                raise TypeError("an output item must be an object")
            decoded.add_item(item)
        return decoded.reply(self.name, data)

    def _stream_state(self) -> StreamState:
        return _ResponsesStream(self.name, self._transport, self._decode_safely)
