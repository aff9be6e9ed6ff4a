"""Provider-shaped fake servers: routes, credentials and enqueue helpers.

Each fake answers only its provider's routes (anything else gets that
provider's 404 body, without consuming the queue) and, when ``api_key`` is
set (the fixtures set it), checks credentials the way the provider does
before looking at the queue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import errors
from ._server import (
    FakeServer,
    JSONResponse,
    RecordedRequest,
    Response,
    SSEResponse,
    encode_sse,
    match_route,
)

__all__ = ["FakeAnthropic", "FakeGemini", "FakeOpenAI", "sse_response"]

SSEItem = Any  # a JSON-able event, or bytes sent verbatim


def sse_response(
    events: Iterable[SSEItem],
    *,
    named: bool,
    done: bool = False,
    chunk_delay: float = 0.0,
    drop_after: int | None = None,
    delay: float = 0.0,
    headers: Mapping[str, str] | None = None,
    status: int = 200,
) -> SSEResponse:
    """Encode events as SSE chunks, one event per chunk.

    ``named=True`` adds ``event: <type>`` lines (Anthropic, Responses).
    ``done=True`` appends ``data: [DONE]`` (Chat Completions). ``bytes`` items
    are sent verbatim, so a test can splice in comments, keep-alives or half
    an event.
    """
    events = list(events)
    chunks = []
    for event in events:
        if isinstance(event, bytes):
            chunks.append(event)
        else:
            name = event.get("type") if named and isinstance(event, dict) else None
            chunks.append(encode_sse(event, name))
    if done:
        chunks.append(encode_sse("[DONE]"))
    return SSEResponse(
        chunks=tuple(chunks),
        status=status,
        headers=dict(headers or {}),
        delay=delay,
        chunk_delay=chunk_delay,
        drop_after=drop_after,
        events=tuple(e for e in events if not isinstance(e, bytes)),
    )


class _ProviderFake(FakeServer):
    name = "provider"
    routes: Sequence[re.Pattern[str]] = ()
    auth_headers: Sequence[str] = ()
    default_api_key = ""

    def __init__(self) -> None:
        super().__init__()
        self.api_key: str | None = self.default_api_key

    def reset(self) -> None:
        super().reset()
        self.api_key = self.default_api_key

    def _preflight(self, request: RecordedRequest) -> Response | None:
        if request.method != "POST" or match_route(request.path, self.routes) is None:
            return self._not_found(request)
        if self.api_key is not None:
            return self._check_auth(request, self.api_key)
        return None

    def _not_found(self, request: RecordedRequest) -> Response:
        raise NotImplementedError

    def _check_auth(self, request: RecordedRequest, key: str) -> Response | None:
        raise NotImplementedError

    def assert_key_confined(self, key: str | None = None) -> None:
        """Fail if the API key appears anywhere but the provider's auth header."""
        secret = key or self.api_key or self.default_api_key
        self.assert_secret_confined(secret, self.auth_headers)


class FakeOpenAI(_ProviderFake):
    """Chat Completions and Responses, at ``/v1/...`` and at the root.

    ``base_url`` ends in ``/v1``, as ``openai.OpenAI(base_url=...)`` expects.
    Credentials: ``Authorization: Bearer <api_key>``.
    """

    name = "openai"
    routes = (
        re.compile(r"(/v1)?/chat/completions"),
        re.compile(r"(/v1)?/responses"),
    )
    auth_headers = ("authorization",)
    default_api_key = "sk-fake-openai-0123456789abcdef"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    # The API's reasoning models, by prefix (gpt-5-chat* does not reason). Any
    # other model asking for encrypted reasoning gets the 400 the API sends
    # (reported for gpt-4o, gpt-4.1, gpt-4.1-mini, gpt-5-chat-latest).
    _REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex-mini")

    def _preflight(self, request: RecordedRequest) -> Response | None:
        early = super()._preflight(request)
        if early is not None or not request.path.endswith("/responses"):
            return early
        body = request.json if isinstance(request.json, dict) else {}
        model = str(body.get("model", ""))
        reasons = model.startswith(self._REASONING_PREFIXES) and not model.startswith("gpt-5-chat")
        if "reasoning.encrypted_content" in (body.get("include") or ()) and not reasons:
            return JSONResponse(
                errors.openai_error_body(
                    "Encrypted content is not supported with this model.", param="include"
                ),
                status=400,
            )
        if body.get("store") is False:
            for item in body.get("input") or ():
                if (
                    isinstance(item, dict)
                    and item.get("type") == "reasoning"
                    and not item.get("encrypted_content")
                ):
                    message = (
                        f"Item with id '{item.get('id')}' not found. Items are not "
                        "persisted when `store` is set to false. Try again with `store` "
                        "set to true, or remove this item from your input."
                    )
                    return JSONResponse(
                        errors.openai_error_body(message, param="input"), status=404
                    )
        return None

    def _not_found(self, request: RecordedRequest) -> Response:
        body = errors.openai_error_body(f"Invalid URL ({request.method} {request.path})", code=None)
        return JSONResponse(body, status=404)

    def _check_auth(self, request: RecordedRequest, key: str) -> Response | None:
        if request.header("authorization") == f"Bearer {key}":
            return None
        if request.header("authorization") is None:
            return JSONResponse(
                errors.openai_error_body(
                    "You didn't provide an API key. You need to provide your API key in an "
                    "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                ),
                status=401,
            )
        return errors.openai_error("auth")

    # Chat Completions
    def enqueue_chat(self, completion: dict[str, Any], **kwargs: Any) -> None:
        """A non-streaming answer (a dict from ``openai_chat.completion``)."""
        self.enqueue(JSONResponse(completion, **kwargs))

    def enqueue_chat_stream(
        self, chunks: Iterable[SSEItem], *, done: bool = True, **kwargs: Any
    ) -> None:
        """A ``data:``-only stream ending with ``data: [DONE]`` unless ``done=False``.

        kwargs: ``chunk_delay``, ``drop_after``, ``delay``, ``headers``, ``status``.
        """
        self.enqueue(sse_response(chunks, named=False, done=done, **kwargs))

    # Responses
    def enqueue_response(self, response: dict[str, Any], **kwargs: Any) -> None:
        """A non-streaming Responses answer (``openai_responses.response``)."""
        self.enqueue(JSONResponse(response, **kwargs))

    def enqueue_response_stream(self, events: Iterable[SSEItem], **kwargs: Any) -> None:
        """Named SSE events (``openai_responses.stream_events``); no ``[DONE]``."""
        self.enqueue(sse_response(events, named=True, **kwargs))

    def enqueue_error(
        self,
        kind: errors.ErrorKind,
        *,
        retry_after: float | datetime | str | None = None,
        retry_after_ms: float | None = None,
        **kwargs: Any,
    ) -> None:
        self.enqueue(
            errors.openai_error(
                kind, retry_after=retry_after, retry_after_ms=retry_after_ms, **kwargs
            )
        )


class FakeAnthropic(_ProviderFake):
    """Messages API at ``/v1/messages``; ``base_url`` is the root, as
    ``anthropic.Anthropic(base_url=...)`` expects. Credentials: ``x-api-key``
    (or ``Authorization: Bearer`` for auth tokens) and ``anthropic-version``."""

    name = "anthropic"
    routes = (re.compile(r"/v1/messages"),)
    auth_headers = ("x-api-key", "authorization")
    default_api_key = "sk-ant-fake-0123456789abcdef"

    def _not_found(self, request: RecordedRequest) -> Response:
        body = errors.anthropic_error_body("not_found_error", "Not found")
        return JSONResponse(body, status=404)

    def _check_auth(self, request: RecordedRequest, key: str) -> Response | None:
        if request.header("x-api-key") != key and request.header("authorization") != (
            f"Bearer {key}"
        ):
            return errors.anthropic_error("auth")
        if not request.header("anthropic-version"):
            return JSONResponse(
                errors.anthropic_error_body(
                    "invalid_request_error", "anthropic-version: header is required"
                ),
                status=400,
            )
        return None

    def enqueue_message(self, message: dict[str, Any], **kwargs: Any) -> None:
        """A non-streaming answer (``anthropic_messages.message``)."""
        self.enqueue(JSONResponse(message, **kwargs))

    def enqueue_message_stream(self, events: Iterable[SSEItem], **kwargs: Any) -> None:
        """Named SSE events (``anthropic_messages.stream_events``)."""
        self.enqueue(sse_response(events, named=True, **kwargs))

    def enqueue_error(
        self,
        kind: errors.ErrorKind,
        *,
        retry_after: float | datetime | str | None = None,
        retry_after_ms: float | None = None,
        **kwargs: Any,
    ) -> None:
        self.enqueue(
            errors.anthropic_error(
                kind, retry_after=retry_after, retry_after_ms=retry_after_ms, **kwargs
            )
        )


def _empty_object(node: Any, path: str, *, root: bool = False) -> str | None:
    """The path of an OBJECT with no properties in a ``parameters`` schema (what Gemini
    refuses below the root), else None."""
    if not isinstance(node, dict):
        return None
    if str(node.get("type", "")).upper() == "OBJECT" and not node.get("properties") and not root:
        return path
    for name, sub in (node.get("properties") or {}).items():
        found = _empty_object(sub, f"{path}.properties[{name}]")
        if found:
            return found
    found = _empty_object(node.get("items"), f"{path}.items")
    if found:
        return found
    for i, sub in enumerate(node.get("anyOf") or ()):
        found = _empty_object(sub, f"{path}.any_of[{i}]")
        if found:
            return found
    return None


class FakeGemini(_ProviderFake):
    """Gemini Developer API (``/v1beta`` and ``/v1``) and Vertex-style paths.

    ``base_url`` is the root, for ``HttpOptions(base_url=...)``. Credentials:
    ``x-goog-api-key`` (a ``?key=`` query parameter is accepted too, as the
    API does, but :meth:`assert_key_confined` flags it).

    A stream request without ``alt=sse`` gets the chunks as one JSON array,
    which is what the real endpoint does.
    """

    name = "gemini"
    routes = (
        re.compile(r"/(v1|v1beta|v1alpha)/models/[^/:]+:(generateContent|streamGenerateContent)"),
        re.compile(
            r"/v1(beta1)?/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/:]+"
            r":(generateContent|streamGenerateContent)"
        ),
    )
    auth_headers = ("x-goog-api-key",)
    default_api_key = "AIzaFake-gemini-0123456789abcdef"

    def _not_found(self, request: RecordedRequest) -> Response:
        body = errors.gemini_error_body(
            404, f"Method not found: {request.method} {request.path}", "NOT_FOUND"
        )
        return JSONResponse(body, status=404)

    def _check_auth(self, request: RecordedRequest, key: str) -> Response | None:
        keys = request.query.get("key") or []
        given = request.header("x-goog-api-key") or (keys[0] if keys else None)
        if given is None:
            return errors.gemini_error("permission")
        if given != key:
            return errors.gemini_error("auth")
        return None

    def _preflight(self, request: RecordedRequest) -> Response | None:
        early = super()._preflight(request)
        if early is not None:
            return early
        body = request.json if isinstance(request.json, dict) else {}
        for tools in body.get("tools") or ():
            for i, decl in enumerate((tools or {}).get("functionDeclarations") or ()):
                bad = _empty_object(decl.get("parameters"), "parameters", root=True)
                if bad is not None:
                    message = (
                        f"* GenerateContentRequest.tools[0].function_declarations[{i}]."
                        f"{bad}.properties: should be non-empty for OBJECT type\n"
                    )
                    return JSONResponse(
                        errors.gemini_error_body(400, message, "INVALID_ARGUMENT"), status=400
                    )
        return None

    def _adapt(self, request: RecordedRequest, response: Response) -> Response:
        is_stream = request.path.endswith(":streamGenerateContent")
        wants_sse = request.query.get("alt") == ["sse"]
        if (
            isinstance(response, SSEResponse)
            and is_stream
            and not wants_sse
            and response.events is not None
            and response.drop_after is None
        ):
            return JSONResponse(list(response.events), status=response.status, delay=response.delay)
        return response

    def enqueue_generate(self, response: dict[str, Any], **kwargs: Any) -> None:
        """A ``generateContent`` answer (``gemini.response``)."""
        self.enqueue(JSONResponse(response, **kwargs))

    def enqueue_generate_stream(self, chunks: Iterable[SSEItem], **kwargs: Any) -> None:
        """``data:``-only SSE chunks (``gemini.stream_chunks``); no ``[DONE]``."""
        self.enqueue(sse_response(chunks, named=False, **kwargs))

    def enqueue_error(
        self, kind: errors.ErrorKind, *, retry_after: float | None = None, **kwargs: Any
    ) -> None:
        self.enqueue(errors.gemini_error(kind, retry_after=retry_after, **kwargs))
