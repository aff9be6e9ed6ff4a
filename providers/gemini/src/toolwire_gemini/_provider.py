"""GeminiProvider: configuration, the one Transport per instance, and the request loop."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, ClassVar, Literal, TypeVar
from urllib.parse import quote

import httpx

from toolwire._compile import CompiledTool, CompileOptions, compile_tool
from toolwire._errors import AuthenticationError, ProviderError, StreamError
from toolwire._http import (
    ApiKey,
    AuthStyle,
    RetryPolicy,
    SSEEvent,
    Transport,
    redact_url,
    resolve_api_key,
)
from toolwire._provider import Provider, ReplyCompleted, StreamEvent
from toolwire._round import AssistantReply
from toolwire._transcript import Session
from toolwire._turn import ResolvedTool, ResolvedTurn
from toolwire_gemini._decode import ReplyBuilder, no_candidates
from toolwire_gemini._encode import (
    encode_contents,
    function_declaration,
    system_instruction,
    tool_config,
)

__all__ = ["GeminiProvider", "SchemaTarget"]

SchemaTarget = Literal["auto", "parameters", "parametersJsonSchema"]
"""Which declaration field carries the schema: ``"auto"`` lets toolwire's compiler pick
(``parametersJsonSchema`` unless the subset is less lossy); ``"parameters"`` for APIs that
take only the OpenAPI subset (the Live API)."""

_P = TypeVar("_P", bound="GeminiProvider")
_WIRE_CACHE = "toolwire_gemini.wire"
_MIN_SECRET = 4  # as core's transport: shorter placeholder keys are not scrubbed
_SNIPPET = 200
_DECODE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "****")
    return text


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"


class GeminiProvider(Provider):
    """Google Gemini ``generateContent`` / ``streamGenerateContent`` (Developer API or Vertex).

    Developer API (default): ``POST {base_url}/{api_version}/models/{model}:generateContent``
    with the key in ``x-goog-api-key`` (``key_in_query=True`` sends ``?key=`` instead;
    it is masked in every log line and error). The key comes from ``api_key``, else
    ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``; a missing key is reported on the first
    request, so the provider can still render tools. ``base_url`` defaults to
    ``GOOGLE_GEMINI_BASE_URL`` or ``https://generativelanguage.googleapis.com``.

    Vertex AI: pass ``project`` (and ``location``, default ``us-central1``): the path
    becomes ``v1/projects/{project}/locations/{location}/publishers/google/models/{model}``
    and the default host ``https://{location}-aiplatform.googleapis.com``. Authenticate
    with ``access_token=`` (an OAuth token, sent as ``Authorization: Bearer``; tokens
    expire, so create a new provider with a fresh one) or an express-mode ``api_key``.

    Requirements map to ``functionCallingConfig``: optional -> ``AUTO``, at least one ->
    ``ANY``, a specific tool -> ``ANY`` with ``allowedFunctionNames``. Gemini has no
    "one call at a time" switch: with ``parallel_calls=False`` only the first call of
    a reply is kept (the rest are dropped before anything is committed).
    """

    name: ClassVar[str] = "gemini"
    default_model: ClassVar[str] = "gemini-2.5-flash"
    supports_requirement: ClassVar[bool] = True
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com"
    key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_url_env: ClassVar[tuple[str, ...]] = ("GOOGLE_GEMINI_BASE_URL",)

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | ApiKey | None = None,
        base_url: str | None = None,
        api_version: str = "v1beta",
        project: str | None = None,
        location: str | None = None,
        access_token: str | ApiKey | None = None,
        key_in_query: bool = False,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        retry: RetryPolicy | None = None,
        schema_target: SchemaTarget = "auto",
        generation_config: Mapping[str, Any] | None = None,
        safety_settings: list[Mapping[str, Any]] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(model)
        if self.model.startswith("models/"):
            self.model = self.model[len("models/") :]
        if not self.model:
            raise ValueError("GeminiProvider needs a model name, e.g. 'gemini-2.5-flash'")
        if schema_target not in ("auto", "parameters", "parametersJsonSchema"):
            raise ValueError(
                "schema_target must be 'auto', 'parameters' or 'parametersJsonSchema', "
                f"got {schema_target!r}"
            )
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"retry must be a toolwire RetryPolicy, got {type(retry).__name__}")
        self._vertex = project is not None
        auth: AuthStyle
        key: ApiKey | None
        if access_token is not None:
            key = resolve_api_key(access_token, (), provider=self.name, required=True)
            auth = AuthStyle.bearer()
        else:
            key = resolve_api_key(api_key, self.key_env, provider=self.name, required=False)
            auth = AuthStyle.query("key") if key_in_query else AuthStyle.header("x-goog-api-key")
        self._missing_key: str | None = None
        if key is None:
            self._missing_key = (
                f"no API key for {self.name}: pass api_key=... (or access_token=... for Vertex) "
                f"or set the environment variable {' or '.join(self.key_env)}"
            )
        model_path = quote(self.model, safe="-._@")
        if self._vertex:
            loc = location or "us-central1"
            host = (
                "https://aiplatform.googleapis.com"
                if loc == "global"
                else f"https://{loc}-aiplatform.googleapis.com"
            )
            url = base_url or host
            prefix = (
                f"v1/projects/{quote(str(project), safe='')}/locations/{quote(loc, safe='')}"
                f"/publishers/google/models/{model_path}"
            )
        else:
            url = base_url or self._base_url_from_env() or self.default_base_url
            prefix = f"{api_version.strip('/')}/models/{model_path}"
        self._path = f"{prefix}:generateContent"
        self._stream_path = f"{prefix}:streamGenerateContent?alt=sse"
        self._key = key
        self._secrets: tuple[str, ...] = (
            (key.get(),) if key is not None and len(key.get()) >= _MIN_SECRET else ()
        )
        self._compile_options = CompileOptions(gemini_target=schema_target)
        self._generation_config = dict(generation_config or {})
        self._safety_settings = [dict(s) for s in safety_settings or ()]
        self._extra_body = dict(extra_body or {})
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

    @property
    def path(self) -> str:
        """The ``generateContent`` path, relative to ``base_url``."""
        return self._path

    # -- rendering ---------------------------------------------------------------------

    def compiled(self, tool: ResolvedTool) -> CompiledTool:
        """The tool's schema compiled for Gemini (cached on the tool)."""
        return compile_tool(tool.tool, self.name, options=self._compile_options)

    def _declarations(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        out = []
        for rt in turn.tools:
            key = (_WIRE_CACHE, self._compile_options, rt.description)
            wire = rt.tool.cache.get(key)
            if wire is None:
                wire = function_declaration(rt, self.compiled(rt))
                rt.tool.cache[key] = wire
            out.append(wire)
        return out

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The ``tools`` array exactly as sent (a copy: the cached originals stay untouched)."""
        declarations = self._declarations(turn)
        return copy.deepcopy([{"functionDeclarations": declarations}]) if declarations else []

    def build_body(self, session: Session, turn: ResolvedTurn) -> dict[str, Any]:
        """The ``generateContent`` request body for this session and turn."""
        body: dict[str, Any] = dict(self._extra_body)
        body["contents"] = encode_contents(session.messages)
        system = system_instruction(session)
        if system is not None:
            body["systemInstruction"] = system
        declarations = self._declarations(turn)
        if declarations:
            body["tools"] = [{"functionDeclarations": declarations}]
            body["toolConfig"] = tool_config(turn)
        if self._generation_config:
            body["generationConfig"] = self._generation_config
        if self._safety_settings:
            body["safetySettings"] = self._safety_settings
        return body

    # -- decoding ----------------------------------------------------------------------

    def _builder(self, turn: ResolvedTurn, *, stream: bool) -> ReplyBuilder:
        return ReplyBuilder(
            self.name, stream=stream, parallel_calls=turn.parallel_calls, default_model=self.model
        )

    def _malformed(self, what: str, *, stream: bool) -> ProviderError:
        cls = StreamError if stream else ProviderError
        kind = "stream event" if stream else "response"
        return cls(f"malformed {kind}: {_scrub(what, self._secrets)}", provider=self.name)

    def decode(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        """A non-streaming ``GenerateContentResponse`` -> reply."""
        if data.get("error") is not None:
            raise self._transport.error_mapper.map_payload(
                data, provider=self.name, secrets=self._secrets
            )
        builder = self._builder(turn, stream=False)
        try:
            builder.add(data)
            missing = no_candidates(self.name, data)
            if missing is not None:
                raise missing
            return builder.reply()
        except ProviderError:
            raise
        except _DECODE_ERRORS as exc:
            raise self._malformed(str(exc), stream=False) from exc

    def _feed(self, builder: ReplyBuilder, event: SSEEvent) -> list[StreamEvent]:
        try:
            data = json.loads(event.data)
            if isinstance(data, list) or (isinstance(data, dict) and "error" in data):
                raise self._transport.error_mapper.map_payload(
                    data, provider=self.name, secrets=self._secrets, default=StreamError
                )
            return builder.add(data)
        except ProviderError:
            raise
        except _DECODE_ERRORS as exc:
            raise self._malformed(f"{exc} in {_snippet(event.data)!r}", stream=True) from exc

    def _completed(self, builder: ReplyBuilder) -> ReplyCompleted:
        try:
            return ReplyCompleted(builder.reply())
        except ProviderError:
            raise
        except _DECODE_ERRORS as exc:
            raise self._malformed(str(exc), stream=True) from exc

    # -- requests ----------------------------------------------------------------------

    def _check_key(self) -> None:
        if self._missing_key is not None:
            raise AuthenticationError(self._missing_key, provider=self.name)

    def generate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        data = self._transport.post_json(self._path, self.build_body(session, turn))
        return self.decode(data, turn)

    async def agenerate(self, session: Session, turn: ResolvedTurn) -> AssistantReply:
        self._check_key()
        data = await self._transport.apost_json(self._path, self.build_body(session, turn))
        return self.decode(data, turn)

    def stream(self, session: Session, turn: ResolvedTurn) -> Iterator[StreamEvent]:
        self._check_key()
        builder = self._builder(turn, stream=True)
        events = self._transport.stream_sse(self._stream_path, self.build_body(session, turn))
        try:
            for event in events:
                yield from self._feed(builder, event)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        yield self._completed(builder)

    async def astream(self, session: Session, turn: ResolvedTurn) -> AsyncIterator[StreamEvent]:
        self._check_key()
        builder = self._builder(turn, stream=True)
        events = self._transport.astream_sse(self._stream_path, self.build_body(session, turn))
        try:
            async for event in events:
                for out in self._feed(builder, event):
                    yield out
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        yield self._completed(builder)

    # -- resources ---------------------------------------------------------------------

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
