"""GeminiProvider: configuration, the one Transport per instance, and the request loop."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, cast
from urllib.parse import quote

import httpx

from toolwire import ModelSettings, Session
from toolwire.adapters import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    ApiKey,
    AssistantReply,
    AuthStyle,
    ErrorMapper,
    HttpProvider,
    ReplyCompleted,
    ResolvedTool,
    ResolvedTurn,
    RetryPolicy,
    SSEEvent,
    StreamEvent,
    cached_wire,
    map_settings,
    resolve_api_key,
)
from toolwire.exceptions import StreamError, UsageError
from toolwire.profiles import ModelProfile, apply_profile, profile_for
from toolwire.schema import CompiledTool, CompileOptions, compile_tool
from toolwire_gemini._decode import ReplyBuilder, no_candidates
from toolwire_gemini._encode import (
    encode_contents,
    function_declaration,
    media_support,
    system_instruction,
    tool_config,
)
from toolwire_gemini._errors import GEMINI_ERRORS
from toolwire_gemini._schema import COMPILER

__all__ = ["GeminiProvider", "SchemaTarget"]

SchemaTarget = Literal["auto", "parameters", "parametersJsonSchema"]
"""Which declaration field carries the schema: ``"auto"`` lets toolwire's compiler pick
(``parametersJsonSchema`` unless the subset is less lossy); ``"parameters"`` for APIs that
take only the OpenAPI subset (the Live API)."""

_WIRE_CACHE = "toolwire_gemini.wire"


def _settings_fields(settings: ModelSettings, model: str) -> dict[str, Any]:
    """ModelSettings as ``generationConfig`` fields, as the model's profile allows;
    ``reasoning_effort`` is Gemini 3's ``thinkingLevel`` (Gemini 2.5 thinks by budget:
    ``generation_config={"thinkingConfig": {"thinkingBudget": N}}``)."""
    profile = profile_for("gemini", model)
    settings = apply_profile(settings, profile, model)
    fields = {
        "temperature": "temperature",
        "top_p": "topP",
        "max_output_tokens": "maxOutputTokens",
        "stop": "stopSequences",
        "seed": "seed",
    }
    out = map_settings("Gemini", settings, fields)
    if settings.reasoning_effort is not None:
        out["thinkingConfig"] = {"thinkingLevel": settings.reasoning_effort.upper()}
    return out


class GeminiProvider(HttpProvider[ReplyBuilder]):
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
    error_mapper: ClassVar[ErrorMapper | None] = GEMINI_ERRORS
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
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        model = model or self.default_model
        if model.startswith("models/"):
            model = model[len("models/") :]
        if not model:
            raise ValueError("GeminiProvider needs a model name, e.g. 'gemini-2.5-flash'")
        if schema_target not in ("auto", "parameters", "parametersJsonSchema"):
            raise ValueError(
                "schema_target must be 'auto', 'parameters' or 'parametersJsonSchema', "
                f"got {schema_target!r}"
            )
        self._vertex = project is not None
        auth: AuthStyle
        key: str | ApiKey | None
        if access_token is not None:
            key = resolve_api_key(access_token, (), provider=self.name, required=True)
            auth = AuthStyle.bearer()
        else:
            key = api_key
            auth = AuthStyle.query("key") if key_in_query else AuthStyle.header("x-goog-api-key")
        loc = location or "us-central1"
        if self._vertex and not base_url:
            base_url = (
                "https://aiplatform.googleapis.com"
                if loc == "global"
                else f"https://{loc}-aiplatform.googleapis.com"
            )
        super().__init__(
            model,
            api_key=key,
            base_url=base_url,
            auth=auth,
            headers=headers,
            timeout=timeout,
            retry=retry,
            http_client=http_client,
            async_http_client=async_http_client,
            deadline=deadline,
            max_response_bytes=max_response_bytes,
            key_hint="pass api_key=... (or access_token=... for Vertex)",
        )
        self.result_media = media_support(self.model)
        model_path = quote(self.model, safe="-._@")
        if self._vertex:
            prefix = (
                f"v1/projects/{quote(str(project), safe='')}/locations/{quote(loc, safe='')}"
                f"/publishers/google/models/{model_path}"
            )
        else:
            prefix = f"{api_version.strip('/')}/models/{model_path}"
        self._path = f"{prefix}:generateContent"
        self._stream_path = f"{prefix}:streamGenerateContent?alt=sse"
        self._compile_options = CompileOptions(target=schema_target)
        self._generation_config = dict(generation_config or {})
        self._safety_settings = [dict(s) for s in safety_settings or ()]
        self._extra_body = dict(extra_body or {})

    @property
    def path(self) -> str:
        """The ``generateContent`` path, relative to ``base_url``."""
        return self._path

    # -- rendering ---------------------------------------------------------------------

    def compiled(self, tool: ResolvedTool) -> CompiledTool:
        """The tool's schema compiled for Gemini (cached on the tool)."""
        return compile_tool(tool.tool, COMPILER, options=self._compile_options)

    def _declarations(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        key = (_WIRE_CACHE, self.name, self._compile_options)

        def build() -> list[dict[str, Any]]:
            return [
                cached_wire(
                    rt.tool,
                    rt.description,
                    key,
                    lambda rt=rt: function_declaration(rt, self.compiled(rt)),  # type: ignore[misc]
                    compiler=COMPILER,
                )
                for rt in turn.tools
            ]

        return self._turn_tools(turn, key, build)

    def render_tools(self, turn: ResolvedTurn) -> list[dict[str, Any]]:
        """The ``tools`` array exactly as sent (a copy: the cached originals stay untouched)."""
        declarations = self._declarations(turn)
        return copy.deepcopy([{"functionDeclarations": declarations}]) if declarations else []

    def profile(self) -> ModelProfile:
        """The request's model's profile (``toolwire.profiles``)."""
        return profile_for("gemini", self.model)

    def build_body(self, session: Session, turn: ResolvedTurn) -> dict[str, Any]:
        """The JSON request body for this session and turn (a copy: change it freely; the
        cached declarations it is built from stay untouched)."""
        return copy.deepcopy(self._body(session, turn))

    def _body(self, session: Session, turn: ResolvedTurn) -> dict[str, Any]:
        """The ``generateContent`` request body for this session and turn."""
        body: dict[str, Any] = dict(self._extra_body)
        body["contents"] = encode_contents(session.messages, self.result_media)
        system = system_instruction(session)
        if system is not None:
            body["systemInstruction"] = system
        declarations = self._declarations(turn)
        if declarations:
            body["tools"] = [{"functionDeclarations": declarations}]
            body["toolConfig"] = tool_config(turn)
        config = self._generation_config
        if turn.settings is not None or turn.output is not None:
            config = dict(config)
            if turn.settings is not None:
                config.update(_settings_fields(turn.settings, self.model))
            if turn.output is not None:
                compiled = self.output_compiled(turn)
                config["responseMimeType"] = "application/json"
                field = (
                    "responseSchema" if compiled.target == "parameters" else "responseJsonSchema"
                )
                config.pop("responseSchema", None)
                config.pop("responseJsonSchema", None)
                config[field] = compiled.schema
        if config:
            body["generationConfig"] = config
        if self._safety_settings:
            body["safetySettings"] = self._safety_settings
        return body

    def output_compiled(self, turn: ResolvedTurn) -> CompiledTool:
        """The turn's output schema compiled as the tools' are (``schema_target``): sent as
        ``responseSchema`` when it compiles to the OpenAPI subset, else as
        ``responseJsonSchema``; its report lists what was lost."""
        spec = turn.output
        if spec is None:
            raise UsageError("the turn has no output_type")
        return cast(CompiledTool, spec.compiled(COMPILER, self._compile_options))

    # -- decoding ----------------------------------------------------------------------

    def _builder(self, turn: ResolvedTurn, *, stream: bool) -> ReplyBuilder:
        return ReplyBuilder(
            self.name, stream=stream, parallel_calls=turn.parallel, default_model=self.model
        )

    def decode(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        """A non-streaming ``GenerateContentResponse`` -> reply."""
        return self._decode_body(data, turn)

    def _completed(self, builder: ReplyBuilder) -> ReplyCompleted:
        return ReplyCompleted(self._guarded(builder.reply, stream=True))

    # -- the request loop's hooks (the loop itself is HttpProvider's) ------------------

    def _request_path(self, *, stream: bool) -> str:
        return self._stream_path if stream else self._path

    def _build_request(
        self, session: Session, turn: ResolvedTurn, *, stream: bool
    ) -> dict[str, Any]:
        return self._body(session, turn)

    def _decode_json(self, data: Mapping[str, Any], turn: ResolvedTurn) -> AssistantReply:
        if data.get("error") is not None:
            raise self._transport.error_from_payload(data)
        builder = self._builder(turn, stream=False)
        builder.add(data)
        missing = no_candidates(self.name, data)
        if missing is not None:
            raise missing
        return builder.reply()

    def _new_stream(self, turn: ResolvedTurn) -> ReplyBuilder:
        return self._builder(turn, stream=True)

    def _handle_event(self, state: ReplyBuilder, event: SSEEvent) -> list[StreamEvent]:
        data = event.json()
        if isinstance(data, list) or (isinstance(data, dict) and "error" in data):
            raise self._transport.error_from_payload(data, default=StreamError)
        return state.add(data)

    def _stream_reply(self, state: ReplyBuilder, turn: ResolvedTurn) -> AssistantReply:
        return state.reply()
