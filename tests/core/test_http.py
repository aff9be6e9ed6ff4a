"""The provider transport: keys, retry policy, error mapping, SSE decoding, and HTTP over
real sockets against the scripted server in ``_servers.py``."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import socket
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from _servers import Reply, ScriptedServer, json_reply, split_every, sse_reply
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire as tw
from toolwire._errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
    StreamError,
)
from toolwire._http import (
    ApiKey,
    AuthStyle,
    ErrorDetail,
    ErrorMapper,
    RetryPolicy,
    SSEDecoder,
    SSEEvent,
    Transport,
    aiter_sse,
    iter_sse,
    parse_retry_after,
    redact_url,
    resolve_api_key,
)

KEY = "sk-test-SECRET-0123456789abcdef"

# Provider wordings live in each adapter's ErrorMapper; these tests exercise the mapping
# mechanism with a mapper configured the way the adapters configure theirs.
VENDORS = ErrorMapper(
    context_length_markers=(
        "context length",
        "context_length",
        "context window",
        "prompt is too long",
        "exceed context limit",
        "exceeds the maximum number of tokens",
    ),
    kind_status={
        "overloaded_error": 529,
        "rate_limit_error": 429,
        "invalid_request_error": 400,
        "resource_exhausted": 429,
        "unavailable": 503,
        "invalid_argument": 400,
        "rate_limit_exceeded": 429,
        "insufficient_quota": 429,
        "server_error": 500,
    },
    auth_failure_markers=("API_KEY_INVALID", "api key not valid"),
    permanent_codes=frozenset({"insufficient_quota"}),
)

OPENAI_429 = {
    "error": {
        "message": "Rate limit reached for gpt-x in organization org-1 on requests per min.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
ANTHROPIC_529 = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
    "request_id": "req_011",
}
GEMINI_400 = {
    "error": {
        "code": 400,
        "message": 'Invalid JSON payload received. Unknown name "additionalProperties" at '
        "'tools[0].function_declarations[0].parameters': Cannot find field.",
        "status": "INVALID_ARGUMENT",
    }
}


class Sleeps:
    """An injected sleeper that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)

    async def asleep(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def make_transport(server: ScriptedServer, sleeps: Sleeps, **kwargs: object) -> Transport:
    options: dict[str, object] = {
        "api_key": KEY,
        "error_mapper": VENDORS,
        "sleep": sleeps,
        "async_sleep": sleeps.asleep,
        "retry": RetryPolicy(jitter=0),
    }
    options.update(kwargs)
    return Transport("openai", server.url + "/v1", **options)  # type: ignore[arg-type]


@pytest.fixture
def transport(server: ScriptedServer, sleeps: Sleeps) -> Iterator[Transport]:
    with make_transport(server, sleeps) as t:
        yield t


@pytest.fixture
async def atransport(server: ScriptedServer, sleeps: Sleeps) -> AsyncIterator[Transport]:
    async with make_transport(server, sleeps) as t:
        yield t


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def assert_no_key(*texts: object) -> None:
    for text in texts:
        assert KEY not in str(text)


def assert_error_clean(error: ProviderError) -> None:
    assert_no_key(error, repr(error), error.message, error.body, error.args)


# ------------------------------------------------------------------------- ApiKey


def test_api_key_never_shows_the_secret() -> None:
    key = ApiKey(KEY)
    assert repr(key) == "ApiKey(****)"
    assert str(key) == "ApiKey(****)"
    assert f"{key}" == "ApiKey(****)"
    assert repr([key]) == "[ApiKey(****)]"
    assert key.get() == KEY


def test_api_key_rejects_empty_and_non_strings() -> None:
    with pytest.raises(ValueError, match="non-empty key"):
        ApiKey("")
    with pytest.raises(TypeError, match="got bytes"):
        ApiKey(b"sk")  # type: ignore[arg-type]


def test_resolve_api_key_prefers_the_argument() -> None:
    key = resolve_api_key(
        "sk-arg", ["OPENAI_API_KEY"], provider="openai", required=True, environ={}
    )
    assert ApiKey("sk-arg") == key
    same = ApiKey("sk-obj")
    assert same is resolve_api_key(same, [], provider="openai", required=True, environ={})


def test_resolve_api_key_reads_the_first_set_variable() -> None:
    environ = {"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "g-key"}
    key = resolve_api_key(
        None,
        ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        provider="gemini",
        required=True,
        environ=environ,
    )
    assert ApiKey("g-key") == key


def test_resolve_api_key_missing_names_the_variables() -> None:
    with pytest.raises(AuthenticationError) as info:
        resolve_api_key(
            None, ["GEMINI_API_KEY", "GOOGLE_API_KEY"], provider="gemini", required=True, environ={}
        )
    assert str(info.value) == (
        "[gemini] no API key for gemini: pass api_key=... or set one of the environment "
        "variables GEMINI_API_KEY, GOOGLE_API_KEY"
    )


def test_resolve_api_key_optional_gives_none() -> None:
    assert None is resolve_api_key(None, ["X_KEY"], provider="ollama", required=False, environ={})


# -------------------------------------------------------------------- RetryPolicy


def test_retry_policy_defaults() -> None:
    policy = RetryPolicy()
    assert (
        policy.max_retries,
        policy.initial_backoff,
        policy.max_backoff,
        policy.jitter,
        policy.respect_retry_after,
        policy.max_retry_after,
    ) == (2, 0.5, 8.0, 0.25, True, 60.0)


def test_retry_delay_is_exponential_and_capped_without_jitter() -> None:
    policy = RetryPolicy(jitter=0)
    assert [policy.delay(n, None) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert policy.delay(10_000, None) == 8.0


def test_retry_delay_jitter_only_shortens() -> None:
    policy = RetryPolicy(jitter=0.25)
    rng = random.Random(7)
    for attempt in range(8):
        base = min(0.5 * 2**attempt, 8.0)
        delay = policy.delay(attempt, None, rng)
        assert base * 0.75 <= delay <= base


def test_retry_after_replaces_the_backoff_and_is_capped() -> None:
    policy = RetryPolicy(max_retry_after=20)
    assert policy.delay(0, 3.0) == 3.0
    assert policy.delay(0, 500.0) == 20.0
    assert policy.delay(3, 0.0) == 0.0
    assert RetryPolicy(jitter=0, respect_retry_after=False).delay(0, 3.0) == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": -1}, "max_retries must be >= 0 (extra attempts), got -1"),
        ({"initial_backoff": -0.1}, "initial_backoff must be a finite number >= 0, got -0.1"),
        ({"max_backoff": float("inf")}, "max_backoff must be a finite number >= 0, got inf"),
        ({"jitter": 1.5}, "jitter must be a fraction between 0 and 1, got 1.5"),
        ({"max_retry_after": -1}, "max_retry_after must be a finite number >= 0, got -1"),
        (
            {"initial_backoff": 4, "max_backoff": 1},
            "max_backoff must be >= initial_backoff, got max_backoff=1 < initial_backoff=4",
        ),
    ],
)
def test_retry_policy_rejects_bad_values(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as info:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert f"RetryPolicy.{message}" == str(info.value)


def test_retry_policy_rejects_wrong_types_and_negative_attempts() -> None:
    with pytest.raises(TypeError, match="max_retries must be an int, got bool"):
        RetryPolicy(max_retries=True)
    with pytest.raises(ValueError, match="attempt must be >= 0"):
        RetryPolicy().delay(-1, None)


# -------------------------------------------------------------- parse_retry_after


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-4"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": ""}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert expected == parse_retry_after(headers, now=NOW)


def test_parse_retry_after_reads_httpx_headers() -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": "2"})) == 2.0


@given(st.dictionaries(st.sampled_from(["retry-after", "retry-after-ms", "x"]), st.text()))
def test_parse_retry_after_never_raises(headers: dict[str, str]) -> None:
    result = parse_retry_after(headers, now=NOW)
    assert result is None or (result >= 0 and result != float("inf"))


def test_redact_url_masks_keys_and_passwords() -> None:
    assert redact_url("https://h/v1/m:gen?alt=sse&key=abc") == "https://h/v1/m:gen?alt=sse&key=****"
    assert redact_url("https://u:pw@h/x") == "https://u:****@h/x"
    assert redact_url("https://h/x?alt=sse") == "https://h/x?alt=sse"


# ---------------------------------------------------------------------- mapping


def mapped(status: int, payload: object = None, **kwargs: object) -> ProviderError:
    if isinstance(payload, (bytes, str)):
        response = httpx.Response(status, content=payload, **kwargs)  # type: ignore[arg-type]
    else:
        response = httpx.Response(status, json=payload, **kwargs)  # type: ignore[arg-type]
    return VENDORS.map_response(response, provider="p", secrets=(KEY,))


def openai_error(
    message: str, code: str | None = None, kind: str = "invalid_request_error"
) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def gemini_error(code: int, status: str, message: str, details: list | None = None) -> dict:
    error: dict = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return {"error": error}


@pytest.mark.parametrize(
    ("status", "payload", "expected_type", "expected_message"),
    [
        (
            401,
            openai_error("Incorrect API key provided: sk-...cdef.", "invalid_api_key"),
            AuthenticationError,
            "Incorrect API key provided: sk-...cdef.",
        ),
        (
            400,
            gemini_error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                    }
                ],
            ),
            AuthenticationError,
            "API key not valid. Please pass a valid API key.",
        ),
        (
            403,
            anthropic_error("permission_error", "Your API key does not have permission."),
            PermissionDeniedError,
            "Your API key does not have permission.",
        ),
        (
            404,
            openai_error("The model `gpt-9` does not exist", "model_not_found"),
            NotFoundError,
            "The model `gpt-9` does not exist",
        ),
        (408, openai_error("Request timed out."), ProviderTimeoutError, "Request timed out."),
        (409, openai_error("Lock timeout."), ServerError, "Lock timeout."),
        (425, openai_error("Too early."), ServerError, "Too early."),
        (429, OPENAI_429, RateLimitError, OPENAI_429["error"]["message"]),  # type: ignore[index]
        (
            429,
            gemini_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted."),
            RateLimitError,
            "Resource has been exhausted.",
        ),
        (529, ANTHROPIC_529, OverloadedError, "Overloaded"),
        (
            503,
            gemini_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
            OverloadedError,
            "The model is overloaded. Please try again later.",
        ),
        (
            503,
            gemini_error(503, "UNAVAILABLE", "The service is currently unavailable."),
            ServerError,
            "The service is currently unavailable.",
        ),
        (
            500,
            anthropic_error("api_error", "Internal server error"),
            ServerError,
            "Internal server error",
        ),
        (
            400,
            openai_error(
                "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9000 tokens. Please reduce the length of the messages.",
                "context_length_exceeded",
            ),
            ContextLengthError,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
        ),
        (
            400,
            openai_error("Your input exceeds the context window of this model.", None),
            ContextLengthError,
            "Your input exceeds the context window of this model.",
        ),
        (
            400,
            anthropic_error(
                "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            ContextLengthError,
            "prompt is too long: 210000 tokens > 200000 maximum",
        ),
        (
            400,
            gemini_error(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1234567) exceeds the maximum number of tokens allowed "
                "(1048576).",
            ),
            ContextLengthError,
            "The input token count (1234567) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        (
            400,
            {
                "error": {
                    "message": "This endpoint's maximum context length is 8192 tokens. However, "
                    "you requested about 9000 tokens.",
                    "code": 400,
                }
            },
            ContextLengthError,
            "This endpoint's maximum context length is 8192 tokens. However, you requested about "
            "9000 tokens.",
        ),
        (400, GEMINI_400, BadRequestError, GEMINI_400["error"]["message"]),  # type: ignore[index]
        (
            413,
            anthropic_error(
                "request_too_large", "Request exceeds the maximum allowed number of bytes."
            ),
            BadRequestError,
            "Request exceeds the maximum allowed number of bytes.",
        ),
        (422, {"detail": "Unprocessable entity"}, BadRequestError, "Unprocessable entity"),
        (
            402,
            {"error": {"message": "Insufficient credits", "code": 402}},
            ProviderError,
            "Insufficient credits",
        ),
        (
            404,
            {"error": "model 'llama9' not found, try pulling it first"},
            NotFoundError,
            "model 'llama9' not found, try pulling it first",
        ),
        (
            400,
            {
                "object": "error",
                "message": "tool_choice auto needs --enable-auto-tool-choice",
                "type": "BadRequestError",
                "code": 400,
            },
            BadRequestError,
            "tool_choice auto needs --enable-auto-tool-choice",
        ),
        (
            400,
            [gemini_error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")],
            BadRequestError,
            "Request contains an invalid argument.",
        ),
    ],
)
def test_error_mapping(
    status: int, payload: object, expected_type: type[ProviderError], expected_message: str
) -> None:
    error = mapped(status, payload)
    assert expected_type is type(error)
    assert expected_message == error.message
    assert f"[p {status}] {expected_message}" == str(error)
    assert status == error.status


def test_non_json_error_body_falls_back_to_the_text() -> None:
    error = mapped(502, b"<html><body>\n  <h1>502 Bad Gateway</h1>\n</body></html>")
    assert ServerError is type(error)
    assert (
        error.message
    ) == "HTTP 502 Bad Gateway: <html><body> <h1>502 Bad Gateway</h1> </body></html>"


def test_long_non_json_error_body_is_truncated() -> None:
    error = mapped(500, b"x" * 10_000)
    assert error.message.startswith("HTTP 500 Internal Server Error: xxx")
    assert error.message.endswith("…")
    assert len(error.message) < 400
    assert error.body is not None
    assert len(error.body) <= 4000


def test_empty_error_body() -> None:
    assert mapped(503, b"").message == "HTTP 503 Service Unavailable with an empty body"


def test_transient_flags() -> None:
    assert mapped(429, OPENAI_429).transient
    assert mapped(529, ANTHROPIC_529).transient
    assert mapped(500, b"").transient
    assert not mapped(400, GEMINI_400).transient
    assert not mapped(401, b"").transient


def test_insufficient_quota_is_a_rate_limit_that_is_not_retried() -> None:
    error = mapped(429, openai_error("You exceeded your current quota.", "insufficient_quota"))
    assert RateLimitError is type(error)
    assert not error.transient


def test_request_id_and_retry_after_are_kept() -> None:
    error = mapped(429, OPENAI_429, headers={"x-request-id": "req_a", "retry-after": "7"})
    assert (error.request_id, error.retry_after) == ("req_a", 7.0)
    assert mapped(500, b"", headers={"request-id": "req_b"}).request_id == "req_b"
    assert mapped(529, ANTHROPIC_529).request_id == "req_011"


def test_the_generic_mapping_knows_no_provider_wordings() -> None:
    generic = ErrorMapper()
    overloaded = {"error": {"type": "overloaded_error", "message": "busy"}}
    assert ProviderError is type(generic.map_payload(overloaded, provider="p"))
    long_prompt = httpx.Response(400, json={"error": {"message": "prompt is too long"}})
    assert "BadRequestError" == type(generic.map_response(long_prompt, provider="p")).__name__
    window = httpx.Response(400, json={"error": {"message": "exceeds the context window"}})
    assert "ContextLengthError" == type(generic.map_response(window, provider="p")).__name__


def test_openrouter_upstream_detail_is_kept() -> None:
    payload = {
        "error": {
            "message": "Provider returned error",
            "code": 502,
            "metadata": {"raw": "upstream exploded", "provider_name": "Acme"},
        }
    }
    assert mapped(502, payload).message == "Provider returned error (Acme: upstream exploded)"


def test_echoed_key_is_scrubbed_from_message_and_body() -> None:
    error = mapped(401, openai_error(f"Incorrect API key provided: {KEY}", "invalid_api_key"))
    assert error.message == "Incorrect API key provided: ****"
    assert_error_clean(error)
    raw = mapped(500, f"bad key {KEY} here".encode())
    assert raw.message == "HTTP 500 Internal Server Error: bad key **** here"
    assert_error_clean(raw)


def test_message_extraction_hook_as_a_callable() -> None:
    def extract(payload: object, text: str) -> ErrorDetail | None:
        return ErrorDetail(message=f"custom: {text.strip()}")

    mapper = ErrorMapper(extract=extract)
    error = mapper.map_response(httpx.Response(400, content=b"nope"), provider="p")
    assert error.message == "custom: nope"


def test_message_extraction_hook_as_a_subclass() -> None:
    class MyMapper(ErrorMapper):
        def extract_detail(self, payload: object, text: str) -> ErrorDetail | None:
            assert isinstance(payload, dict)
            return ErrorDetail(message=payload["problem"], code="too_big")

        def is_context_length(self, detail: ErrorDetail) -> bool:
            return detail.code == "too_big"

    error = MyMapper().map_response(httpx.Response(400, json={"problem": "big"}), provider="p")
    assert (ContextLengthError, "big") == (type(error), error.message)


@pytest.mark.parametrize(
    ("payload", "expected_type", "expected_message"),
    [
        (ANTHROPIC_529, OverloadedError, "Overloaded"),
        (anthropic_error("rate_limit_error", "slow down"), RateLimitError, "slow down"),
        ({"error": {"code": 502, "message": "Upstream failed"}}, ServerError, "Upstream failed"),
        (
            [
                gemini_error(
                    400,
                    "INVALID_ARGUMENT",
                    "The input token count (9) exceeds the maximum number of tokens allowed (8).",
                )
            ],
            ContextLengthError,
            "The input token count (9) exceeds the maximum number of tokens allowed (8).",
        ),
        ({"error": {"message": "mystery"}}, StreamError, "mystery"),
        ({"weird": 1}, StreamError, 'error in stream: {"weird": 1}'),
    ],
)
def test_map_payload_for_errors_inside_a_stream(
    payload: object, expected_type: type[ProviderError], expected_message: str
) -> None:
    error = VENDORS.map_payload(payload, provider="p", default=StreamError)
    assert (expected_type, expected_message) == (type(error), error.message)


# ----------------------------------------------------------------------- SSE


def decode(*chunks: bytes) -> tuple[list[SSEEvent], bool]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    events.extend(decoder.finish())
    return events, decoder.truncated


def test_sse_basic_event() -> None:
    assert ([SSEEvent("message", "hi")], False) == decode(b"data: hi\n\n")


def test_sse_named_events_ids_and_multiline_data() -> None:
    stream = (
        b"event: content_block_delta\nid: 1\ndata: a\ndata:  b\n\n"
        b"data: c\n\n"
        b"event: x\nid\ndata: d\n\n"
    )
    assert [
        SSEEvent("content_block_delta", "a\n b", "1"),
        SSEEvent("message", "c", "1"),
        SSEEvent("x", "d", ""),
    ] == decode(stream)[0]


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_sse_line_endings(eol: bytes) -> None:
    stream = eol.join([b"event: e", b"data: 1", b"data: 2", b"", b"data: 3", b"", b""])
    assert ([SSEEvent("e", "1\n2"), SSEEvent("message", "3")], False) == decode(stream)


def test_sse_cr_at_end_of_chunk_and_lf_at_start_of_next_is_one_line_ending() -> None:
    assert [SSEEvent("message", "a\nb")] == decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")[0]


def test_sse_lone_cr_at_end_of_chunk_is_a_line_ending() -> None:
    assert [SSEEvent("message", "a"), SSEEvent("message", "b")] == decode(
        b"data: a\r", b"\rdata: b\r", b"\r"
    )[0]


def test_sse_comments_and_unknown_fields_are_ignored() -> None:
    stream = b": OPENROUTER PROCESSING\n\nfoo: bar\n:data: x\ndata: y\n\n"
    assert [SSEEvent("message", "y")] == decode(stream)[0]


def test_sse_only_one_leading_space_is_stripped_and_field_without_colon() -> None:
    assert [SSEEvent("message", "  two\n\nnospace")] == decode(
        b"data:   two\ndata\ndata:nospace\n\n"
    )[0]


def test_sse_empty_data_is_dispatched_but_no_data_is_not() -> None:
    assert [SSEEvent("message", "")] == decode(b"event: ping\n\ndata:\n\n")[0]


def test_sse_event_type_resets_after_each_dispatch() -> None:
    assert [SSEEvent("a", "1"), SSEEvent("message", "2")] == decode(
        b"event: a\ndata: 1\n\ndata: 2\n\n"
    )[0]


def test_sse_id_with_nul_is_ignored_and_retry_needs_digits() -> None:
    events = decode(
        b"id: 7\ndata: a\n\nid: x\x00y\nretry: 1500\ndata: b\n\nretry: 1.5\ndata: c\n\n"
    )
    assert [
        SSEEvent("message", "a", "7"),
        SSEEvent("message", "b", "7", 1500),
        SSEEvent("message", "c", "7"),
    ] == events[0]


def test_sse_final_event_without_blank_line_is_truncated() -> None:
    assert ([SSEEvent("message", "a")], True) == decode(b"data: a\n\ndata: b\n")
    assert decode(b"data: partial") == ([], True)
    assert ([SSEEvent("message", "a")], False) == decode(b"data: a\n\n: keep-alive")


def test_sse_utf8_split_inside_a_character_and_bom() -> None:
    stream = "\ufeffdata: h\u00e9llo \u2603 \U0001f600\n\n".encode()
    assert ([SSEEvent("message", "h\u00e9llo \u2603 \U0001f600")], False) == decode(
        *split_every(stream, 1)
    )


def test_sse_invalid_utf8_becomes_replacement_characters() -> None:
    assert [SSEEvent("message", "a\ufffdb")] == decode(b"data: a\xffb\n\n")[0]


def test_sse_event_json_helper() -> None:
    assert SSEEvent("message", '{"a": [1]}').json() == {"a": [1]}


def test_iter_sse_and_truncation_check() -> None:
    decoder = SSEDecoder()
    events = list(iter_sse([b"data: 1\n", b"\ndata: 2"], decoder))
    assert ([SSEEvent("message", "1")], True) == (events, decoder.truncated)


async def test_aiter_sse() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in (b"event: a\r\nda", b"ta: 1\r\n", b"\r\n"):
            yield chunk

    assert [SSEEvent("a", "1")] == [event async for event in aiter_sse(chunks())]


# hypothesis: valid streams, any fragmentation

_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)),
    max_size=12,
)
_events = st.lists(
    st.tuples(
        st.none() | _text,  # event type
        st.lists(_text, min_size=1, max_size=3),  # data lines
        st.none() | _text,  # id
        st.none() | st.integers(0, 10**6),  # retry
        st.none() | _text,  # comment
    ),
    max_size=6,
)


def encode_stream(events: list, eol: str) -> tuple[bytes, list[SSEEvent]]:
    lines: list[str] = []
    expected: list[SSEEvent] = []
    last_id = ""
    for kind, data, event_id, retry, comment in events:
        if comment is not None:
            lines.append(":" + comment)
        if kind is not None:
            lines.append("event: " + kind)
        if event_id is not None:
            lines.append("id: " + event_id)
            last_id = event_id
        if retry is not None:
            lines.append(f"retry: {retry}")
        lines.extend("data: " + line for line in data)
        lines.append("")
        expected.append(SSEEvent(kind or "message", "\n".join(data), last_id, retry))
    text = "".join(line + eol for line in lines)
    return text.encode(), expected


def fragment(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


@settings(max_examples=300)
@given(_events, st.sampled_from(["\n", "\r\n", "\r"]), st.lists(st.integers(0, 400)))
def test_sse_valid_stream_any_fragmentation(events: list, eol: str, cuts: list[int]) -> None:
    stream, expected = encode_stream(events, eol)
    assert (expected, False) == decode(stream)
    assert (expected, False) == decode(*fragment(stream, cuts))


@settings(max_examples=300)
@given(st.binary(max_size=200), st.lists(st.integers(0, 200)))
def test_sse_random_bytes_never_raise_and_fragmentation_does_not_matter(
    data: bytes, cuts: list[int]
) -> None:
    whole = decode(data)
    assert whole == decode(*fragment(data, cuts))
    assert whole == decode(*split_every(data, 1))


@settings(max_examples=200)
@given(
    st.lists(
        st.sampled_from(
            [
                b"data:",
                b"event:",
                b"id:",
                b"retry:",
                b" ",
                b"1",
                b":",
                b"\r",
                b"\n",
                b"\xe2\x98",
                b"\x83",
                b"x",
            ]
        ),
        max_size=40,
    ),
    st.lists(st.integers(0, 200)),
)
def test_sse_field_soup_fragmentation_does_not_matter(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    assert decode(data) == decode(*fragment(data, cuts))


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            [
                b"data:",
                b"data: ",
                b"event:",
                b"event: ",
                b"id:",
                b"retry:",
                b" ",
                b"1",
                b":",
                b"\n",
                b"\n\n",
                b"x",
                b"\xe2\x98\x83",
                b"data",
                b"event",
            ]
        ),
        max_size=40,
    ),
    st.lists(st.integers(0, 200)),
)
def test_sse_lf_reads_decode_as_the_general_path_does(parts: list[bytes], cuts: list[int]) -> None:
    # Reads with LF line ends only take a faster path (whole read split at once); the
    # same stream with CRLF ends takes the general one: the events must be the same.
    data = b"".join(parts)
    general = decode(data.replace(b"\n", b"\r\n"))
    assert general == decode(data)
    assert general == decode(*fragment(data, cuts))


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_json)
def test_sse_event_json_is_what_json_loads_returns(value: object) -> None:
    text = json.dumps(value)
    assert repr(json.loads(text)) == repr(SSEEvent("message", text).json())


@pytest.mark.parametrize(
    "text",
    [
        '{"x": "\\ud83d"}',  # a lone surrogate escape: pydantic-core refuses, json takes it
        "[" * 300 + "]" * 300,  # deeper than pydantic-core's limit
        '{"a": 1, "a": 2}',
        '{"x": NaN, "y": 1e400, "z": 123456789012345678901234567890}',
    ],
)
def test_sse_event_json_agrees_with_json_loads_where_the_parsers_differ(text: str) -> None:
    assert repr(json.loads(text)) == repr(SSEEvent("message", text).json())


@pytest.mark.parametrize("text", ["", "{", "[1,]", "{'a': 1}", "nope", "[" * 100_000])
def test_sse_event_json_errors_are_json_loads_errors(text: str) -> None:
    with pytest.raises((json.JSONDecodeError, RecursionError)):
        SSEEvent("message", text).json()


# ------------------------------------------------------------ transport: JSON


def test_post_json_sends_json_with_auth_and_returns_the_object(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(json_reply(200, {"id": "chatcmpl-1", "choices": []}))
    result = transport.post_json("/chat/completions", {"model": "m", "messages": ["é"]})
    assert result == {"id": "chatcmpl-1", "choices": []}
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert f"Bearer {KEY}" == request.headers["authorization"]
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "application/json"
    assert request.json() == {"model": "m", "messages": ["é"]}


def test_default_and_per_request_headers(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(200, {}))
    with make_transport(
        server,
        sleeps,
        auth=AuthStyle.header("x-api-key"),
        headers={"anthropic-version": "2023-06-01"},
    ) as transport:
        transport.post_json("messages", {}, headers={"anthropic-beta": "b1"})
    headers = server.requests[0].headers
    assert (
        headers["x-api-key"],
        headers["anthropic-version"],
        headers["anthropic-beta"],
    ) == (KEY, "2023-06-01", "b1")
    assert "authorization" not in headers


def test_no_key_sends_no_auth(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(200, {}))
    with make_transport(server, sleeps, api_key=None) as transport:
        transport.post_json("x", {})
    assert "authorization" not in server.requests[0].headers


def test_query_auth_keeps_the_query_and_is_redacted_in_logs_and_errors(
    server: ScriptedServer, sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(
        json_reply(500, {"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}}),
        json_reply(400, GEMINI_400),
    )
    with make_transport(server, sleeps, auth=AuthStyle.query()) as transport:
        with pytest.raises(BadRequestError) as info:
            transport.post_json("/models/g:streamGenerateContent?alt=sse", {})
        assert_no_key(repr(transport))
    assert [f"/v1/models/g:streamGenerateContent?alt=sse&key={KEY}"] * 2 == [
        r.path for r in server.requests
    ]
    assert "authorization" not in server.requests[0].headers
    assert_error_clean(info.value)
    messages = [record.getMessage() for record in caplog.records]
    assert any("key=****" in message for message in messages)
    assert any(record.name == "httpx" for record in caplog.records)
    assert_no_key(*messages)


def test_retry_on_429_honours_retry_after(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    server.script(json_reply(429, OPENAI_429, {"retry-after": "2"}), json_reply(200, {"ok": True}))
    assert transport.post_json("x", {}) == {"ok": True}
    assert len(server.requests) == 2
    assert sleeps.delays == [2.0]


def test_retry_after_as_http_date(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.script(json_reply(503, {"error": "busy"}, {"retry-after": when}), json_reply(200, {}))
    transport.post_json("x", {})
    [delay] = sleeps.delays
    assert 28.0 <= delay <= 30.0


def test_retry_after_ms(server: ScriptedServer, transport: Transport, sleeps: Sleeps) -> None:
    server.script(json_reply(529, ANTHROPIC_529, {"retry-after-ms": "1250"}), json_reply(200, {}))
    transport.post_json("x", {})
    assert sleeps.delays == [1.25]


@pytest.mark.parametrize("status", [200, 400, 429, 503])
def test_a_header_value_outside_ascii_is_no_crash(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps, status: int
) -> None:
    # #25.14 (found by the decoder fuzzer): `retry-after: é` (any status) crashed with a
    # bare UnicodeEncodeError instead of an answer or a ProviderError.
    odd = {"retry-after": "\u00e9", "x-request-id": "\u00ff\u00fe"}
    server.script(*[json_reply(status, OPENAI_429 if status != 200 else {"ok": 1}, odd)] * 3)
    if status == 200:
        assert {"ok": 1} == transport.post_json("x", {})
        return
    with pytest.raises(ProviderError):
        transport.post_json("x", {})


def test_only_bounded_encodings_are_asked_for_and_accepted(
    server: ScriptedServer, transport: Transport
) -> None:
    # The pattern of #25.11 in the provider transport: httpx decodes a whole raw chunk at a
    # time, and a zstd chunk of 32 KiB can grow to gigabytes before the size limit sees it.
    server.script(
        Reply(
            200, b"(zstd frame)", {"content-type": "application/json", "content-encoding": "zstd"}
        )
    )
    with pytest.raises(ProviderError, match="encoded as zstd, which was not asked for"):
        transport.post_json("x", {})
    assert "gzip, deflate" == server.requests[-1].headers["accept-encoding"]


def test_retry_after_is_capped(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(429, OPENAI_429, {"retry-after": "3600"}), json_reply(200, {}))
    with make_transport(server, sleeps, retry=RetryPolicy(max_retry_after=5)) as transport:
        transport.post_json("x", {})
    assert sleeps.delays == [5.0]


def test_server_errors_are_retried_with_backoff_then_raised(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    body = {"error": {"message": "The server had an error", "type": "server_error"}}
    server.script(*[json_reply(500, body, {"x-request-id": "req_9"})] * 3)
    with pytest.raises(ServerError) as info:
        transport.post_json("x", {})
    assert len(server.requests) == 3
    assert sleeps.delays == [0.5, 1.0]
    assert str(info.value) == "[openai 500] The server had an error"
    assert info.value.request_id == "req_9"


def test_jittered_delays_come_from_the_injected_rng(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(500, {}), json_reply(500, {}), json_reply(200, {}))
    with make_transport(
        server, sleeps, retry=RetryPolicy(jitter=0.5), rng=random.Random(3)
    ) as transport:
        transport.post_json("x", {})
    rng = random.Random(3)
    assert [0.5 * (1 - 0.5 * rng.random()), 1.0 * (1 - 0.5 * rng.random())] == sleeps.delays


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (400, GEMINI_400, BadRequestError),
        (401, openai_error("bad key", "invalid_api_key"), AuthenticationError),
        (404, openai_error("no model"), NotFoundError),
        (
            429,
            openai_error("You exceeded your current quota.", "insufficient_quota"),
            RateLimitError,
        ),
    ],
)
def test_final_errors_are_not_retried(
    server: ScriptedServer,
    transport: Transport,
    sleeps: Sleeps,
    status: int,
    payload: object,
    expected: type[ProviderError],
) -> None:
    server.script(json_reply(status, payload))
    with pytest.raises(expected):
        transport.post_json("x", {})
    assert (len(server.requests), sleeps.delays) == (1, [])


def test_x_should_retry_header_overrides(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    server.script(json_reply(500, {}, {"x-should-retry": "false"}))
    with pytest.raises(ServerError):
        transport.post_json("x", {})
    server.script(json_reply(400, GEMINI_400, {"x-should-retry": "true"}), json_reply(200, {}))
    assert transport.post_json("x", {}) == {}
    assert (len(server.requests), sleeps.delays) == (3, [0.5])


def test_no_retry_policy(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(503, {}))
    with (
        make_transport(server, sleeps, retry=RetryPolicy.none()) as transport,
        pytest.raises(ServerError),
    ):
        transport.post_json("x", {})
    assert (len(server.requests), sleeps.delays) == (1, [])


def test_echoed_key_never_reaches_errors_reprs_or_logs(
    server: ScriptedServer, transport: Transport, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = openai_error(
        f"Incorrect API key provided: {KEY}. Find your key at ...", "invalid_api_key"
    )
    server.script(json_reply(500, echo), json_reply(401, echo, {"x-request-id": "req_k"}))
    with pytest.raises(AuthenticationError) as info:
        transport.post_json("x", {})
    error = info.value
    assert str(error) == "[openai 401] Incorrect API key provided: ****. Find your key at ..."
    assert error.request_id == "req_k"
    assert_error_clean(error)
    assert_no_key(repr(transport), *(r.getMessage() for r in caplog.records))
    assert_no_key(*(r.args for r in caplog.records))
    assert "ApiKey(****)" in repr(transport)


def test_non_json_success_body_is_a_clear_error(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(Reply(200, b"<html>captive portal</html>", {"content-type": "text/html"}))
    with pytest.raises(ProviderError) as info:
        transport.post_json("x", {})
    assert ProviderError is type(info.value)
    assert (
        f"[openai 200] expected a JSON object in the response to POST {server.url}/v1/x, got a "
        "body that is not JSON (content-type text/html): '<html>captive portal</html>'"
    ) == str(info.value)
    assert len(server.requests) == 1


def test_json_that_is_not_an_object_is_a_clear_error(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(json_reply(200, [1, 2]))
    with pytest.raises(ProviderError, match=r"expected a JSON object .* got a JSON list"):
        transport.post_json("x", {})


def test_timeout_is_retried_then_raised(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(Reply(200, b"{}", delay=0.5), Reply(200, b"{}", delay=0.5))
    retry = RetryPolicy(max_retries=1, jitter=0)
    with (
        make_transport(server, sleeps, timeout=0.1, retry=retry) as t,
        pytest.raises(ProviderTimeoutError) as info,
    ):
        t.post_json("x", {})
    assert f"[openai] request to {server.url}/v1/x timed out (ReadTimeout: timed out)" == str(
        info.value
    )
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)
    assert (len(server.requests), sleeps.delays) == (2, [0.5])


def test_connection_refused_is_a_connection_error(sleeps: Sleeps) -> None:
    url = closed_port_url()
    with (
        Transport("openai", url, api_key=KEY, sleep=sleeps) as transport,
        pytest.raises(ProviderConnectionError) as info,
    ):
        transport.post_json("x", {})
    assert str(info.value).startswith(f"[openai] connection to {url}/x failed (ConnectError:")
    assert len(sleeps.delays) == 2
    assert_error_clean(info.value)


def test_body_that_is_not_json_serializable_fails_before_sending(
    server: ScriptedServer, transport: Transport
) -> None:
    with pytest.raises(TypeError, match="request body for openai must be JSON-serializable"):
        transport.post_json("x", {"a": object()})
    with pytest.raises(ValueError, match="no NaN or infinity"):
        transport.post_json("x", {"a": float("nan")})
    assert server.requests == []


def test_transport_reuses_one_client(server: ScriptedServer, transport: Transport) -> None:
    server.script(json_reply(200, {}), json_reply(200, {}))
    transport.post_json("x", {})
    client = transport._client
    transport.post_json("x", {})
    assert client is transport._client is not None


def test_close_only_closes_clients_it_created(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(200, {}))
    with httpx.Client() as client:
        transport = make_transport(server, sleeps, client=client)
        transport.post_json("x", {})
        transport.close()
        assert not client.is_closed
    own = make_transport(server, sleeps)
    server.script(json_reply(200, {}))
    own.post_json("x", {})
    created = own._client
    own.close()
    assert created is not None
    assert created.is_closed


def test_explicit_timeout_applies_to_a_supplied_client(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    server.script(Reply(200, b"{}", delay=0.4))
    with httpx.Client(timeout=30) as client:
        transport = make_transport(
            server, sleeps, client=client, timeout=0.1, retry=RetryPolicy.none()
        )
        with pytest.raises(ProviderTimeoutError):
            transport.post_json("x", {})


def test_repr_shows_provider_and_hides_key(transport: Transport) -> None:
    assert repr(transport).startswith("Transport(provider='openai', base_url='http://127.0.0.1:")
    assert repr(transport).endswith("auth=header:Authorization, api_key=ApiKey(****))")


def test_retry_logging(
    server: ScriptedServer, transport: Transport, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.http")
    server.script(json_reply(429, OPENAI_429, {"retry-after": "1"}), json_reply(200, {}))
    transport.post_json("chat/completions", {})
    [record] = [r for r in caplog.records if r.name == "toolwire.http"]
    assert (
        f"POST {server.url}/v1/chat/completions failed with RateLimitError (status 429) on "
        "attempt 1 of 3; retrying in 1.000s"
    ) == record.getMessage()


# ----------------------------------------------------------- transport: async


async def test_apost_json_retries_and_returns(
    server: ScriptedServer, atransport: Transport, sleeps: Sleeps
) -> None:
    server.script(json_reply(529, ANTHROPIC_529), json_reply(200, {"ok": 1}))
    assert await atransport.apost_json("x", {"q": 1}) == {"ok": 1}
    assert (len(server.requests), sleeps.delays) == (2, [0.5])
    assert server.requests[1].json() == {"q": 1}


async def test_apost_json_maps_errors(server: ScriptedServer, atransport: Transport) -> None:
    server.script(json_reply(400, GEMINI_400))
    with pytest.raises(BadRequestError) as info:
        await atransport.apost_json("x", {})
    assert GEMINI_400["error"]["message"] == info.value.message  # type: ignore[index]


async def test_apost_json_timeout(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(Reply(200, b"{}", delay=0.5))
    async with make_transport(server, sleeps, timeout=0.1, retry=RetryPolicy.none()) as t:
        with pytest.raises(ProviderTimeoutError):
            await t.apost_json("x", {})


async def test_apost_json_connection_refused(sleeps: Sleeps) -> None:
    async with Transport("openai", closed_port_url(), async_sleep=sleeps.asleep) as transport:
        with pytest.raises(ProviderConnectionError):
            await transport.apost_json("x", {})
    assert len(sleeps.delays) == 2


async def test_cancellation_during_backoff_propagates(server: ScriptedServer) -> None:
    sleeping = asyncio.Event()

    async def slow_sleep(delay: float) -> None:
        sleeping.set()
        await asyncio.sleep(3600)

    server.script(json_reply(429, OPENAI_429, {"retry-after": "30"}))
    async with Transport("openai", server.url, api_key=KEY, async_sleep=slow_sleep) as transport:
        task = asyncio.ensure_future(transport.apost_json("x", {}))
        await asyncio.wait_for(sleeping.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(server.requests) == 1


async def test_async_default_sleep_is_asyncio_sleep(server: ScriptedServer) -> None:
    server.script(json_reply(503, {}, {"retry-after": "0"}), json_reply(200, {"done": True}))
    async with Transport("openai", server.url) as transport:
        assert await transport.apost_json("x", {}) == {"done": True}


# ---------------------------------------------------------- transport: SSE

ANTHROPIC_STREAM = (
    "event: message_start\r\n"
    'data: {"type":"message_start","message":{"content":[]}}\r\n'
    "\r\n"
    ": keep-alive comment\r\n"
    "event: content_block_delta\r\n"
    'data: {"index":1,"delta":{"type":"input_json_delta",\r\n'
    'data: "partial_json":"{\\"city\\": \\"Zürich ☃ 😀\\"}"}}\r\n'
    "\r\n"
    "event: message_stop\r\n"
    'data: {"type":"message_stop"}\r\n'
    "\r\n"
).encode()
ANTHROPIC_EVENTS = [
    SSEEvent("message_start", '{"type":"message_start","message":{"content":[]}}'),
    SSEEvent(
        "content_block_delta",
        '{"index":1,"delta":{"type":"input_json_delta",\n'
        '"partial_json":"{\\"city\\": \\"Zürich ☃ 😀\\"}"}}',
    ),
    SSEEvent("message_stop", '{"type":"message_stop"}'),
]


def awkward_chunks(stream: bytes) -> list[bytes]:
    """Cuts between CR and LF, inside 'ü' and inside the 4-byte emoji, and elsewhere."""
    cuts = {stream.index(b"\r\n") + 1, stream.index("ü".encode()) + 1}
    emoji = stream.index("😀".encode())
    cuts |= {emoji + 1, emoji + 3, 7, 60, 61}
    return [
        stream[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(stream)], strict=True)
    ]


def test_stream_sse_over_awkward_tcp_writes(server: ScriptedServer, transport: Transport) -> None:
    server.script(sse_reply(awkward_chunks(ANTHROPIC_STREAM)))
    assert list(transport.stream_sse("messages", {"stream": True})) == ANTHROPIC_EVENTS
    request = server.requests[0]
    assert (request.headers["accept"], request.json()) == ("text/event-stream", {"stream": True})


def test_stream_sse_byte_by_byte(server: ScriptedServer, transport: Transport) -> None:
    server.script(sse_reply(list(split_every(ANTHROPIC_STREAM, 1)), pause=0))
    assert list(transport.stream_sse("messages", {})) == ANTHROPIC_EVENTS


def test_stream_sse_retries_the_request_before_events(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    server.script(
        json_reply(429, OPENAI_429, {"retry-after": "3"}),
        sse_reply([b"data: {}\n\n", b"data: [DONE]\n\n"]),
    )
    events = list(transport.stream_sse("chat/completions", {}))
    assert [event.data for event in events] == ["{}", "[DONE]"]
    assert (len(server.requests), sleeps.delays) == (2, [3.0])


def test_stream_sse_error_status_reads_the_body(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(
        json_reply(400, anthropic_error("invalid_request_error", "prompt is too long: 9 > 8"))
    )
    with pytest.raises(ContextLengthError) as info:
        list(transport.stream_sse("messages", {}))
    assert str(info.value) == "[openai 400] prompt is too long: 9 > 8"


def test_stream_sse_dropped_connection_after_events_is_a_stream_error(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    server.script(sse_reply([b"data: 1\n\n", b"data: 2\n"], abort=True))
    stream = transport.stream_sse("x", {})
    assert next(stream).data == "1"
    with pytest.raises(StreamError) as info:
        next(stream)
    assert str(info.value).startswith("[openai] the stream broke off (RemoteProtocolError:")
    assert isinstance(info.value.__cause__, httpx.RemoteProtocolError)
    assert (len(server.requests), sleeps.delays) == (1, [])


def test_stream_sse_ending_mid_event_is_a_stream_error(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(sse_reply([b"data: 1\n\n", b"data: 2\n"]))
    stream = transport.stream_sse("x", {})
    assert SSEEvent("message", "1") == next(stream)
    with pytest.raises(StreamError) as info:
        next(stream)
    assert (
        f"[openai] the stream ended in the middle of an event from POST {server.url}/v1/x; "
        "the events received so far are incomplete"
    ) == str(info.value)


def test_stream_sse_dropped_before_the_first_event_is_retried(
    server: ScriptedServer, transport: Transport, sleeps: Sleeps
) -> None:
    server.script(
        sse_reply([b": hello\n", b"data: par"], abort=True),
        sse_reply([b"data: par"]),
        sse_reply([b"data: whole\n\n"]),
    )
    assert [SSEEvent("message", "whole")] == list(transport.stream_sse("x", {}))
    assert (len(server.requests), sleeps.delays) == (3, [0.5, 1.0])


def test_stream_sse_json_instead_of_a_stream(server: ScriptedServer, transport: Transport) -> None:
    server.script(json_reply(200, {"error": {"message": "streaming unsupported"}}))
    with pytest.raises(ProviderError) as info:
        list(transport.stream_sse("x", {}))
    assert (
        f"[openai 200] expected an event stream (text/event-stream) from POST {server.url}/v1/x, "
        "got application/json: streaming unsupported"
    ) == str(info.value)


def test_stream_sse_closed_early_releases_the_connection(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(
        sse_reply([b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]), json_reply(200, {"next": 1})
    )
    stream = transport.stream_sse("x", {})
    assert next(stream).data == "1"
    stream.close()  # type: ignore[attr-defined]
    assert transport.post_json("y", {}) == {"next": 1}


def test_stream_sse_timeout_between_events_is_a_stream_error(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    server.script(sse_reply([b"data: 1\n\n", b"data: 2\n\n"], pause=0.5))
    with make_transport(server, sleeps, timeout=0.2) as transport:
        stream = transport.stream_sse("x", {})
        assert next(stream).data == "1"
        with pytest.raises(StreamError, match=r"broke off \(ReadTimeout"):
            next(stream)


async def test_astream_sse_over_awkward_tcp_writes(
    server: ScriptedServer, atransport: Transport, sleeps: Sleeps
) -> None:
    server.script(json_reply(500, {}), sse_reply(awkward_chunks(ANTHROPIC_STREAM)))
    assert [event async for event in atransport.astream_sse("messages", {})] == ANTHROPIC_EVENTS
    assert (len(server.requests), sleeps.delays) == (2, [0.5])


async def test_astream_sse_dropped_connection_is_a_stream_error(
    server: ScriptedServer, atransport: Transport
) -> None:
    server.script(sse_reply([b"event: a\ndata: 1\n\n", b'data: {"par'], abort=True))
    stream = atransport.astream_sse("x", {})
    assert await stream.__anext__() == SSEEvent("a", "1")
    with pytest.raises(StreamError, match="the stream broke off"):
        await stream.__anext__()


async def test_astream_sse_error_status(server: ScriptedServer, atransport: Transport) -> None:
    server.script(json_reply(401, anthropic_error("authentication_error", "invalid x-api-key")))
    with pytest.raises(AuthenticationError, match="invalid x-api-key"):
        async for _ in atransport.astream_sse("x", {}):
            pass


async def test_astream_sse_ending_mid_event(server: ScriptedServer, atransport: Transport) -> None:
    server.script(sse_reply([b"data: 1\n\ndata: 2"]))
    stream = atransport.astream_sse("x", {})
    assert (await stream.__anext__()).data == "1"
    with pytest.raises(StreamError, match="ended in the middle of an event"):
        await stream.__anext__()


async def test_astream_sse_closed_early_releases_the_connection(
    server: ScriptedServer, atransport: Transport
) -> None:
    server.script(
        sse_reply([b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]), json_reply(200, {"next": 1})
    )
    stream = atransport.astream_sse("x", {})
    assert (await stream.__anext__()).data == "1"
    await stream.aclose()  # type: ignore[attr-defined]
    assert await atransport.apost_json("y", {}) == {"next": 1}


def test_user_supplied_async_client_is_not_closed(server: ScriptedServer, sleeps: Sleeps) -> None:
    async def run() -> bool:
        server.script(json_reply(200, {}))
        async with httpx.AsyncClient() as client:
            async with make_transport(server, sleeps, async_client=client) as transport:
                await transport.apost_json("x", {})
            return client.is_closed

    assert asyncio.run(run()) is False


def _deep(n: int = 100_000) -> bytes:
    return b"[" * n + b"]" * n


def test_a_success_body_nested_past_the_parser_is_a_provider_error(
    server: ScriptedServer, transport: Transport
) -> None:
    # Attack (#11.14): 100k brackets in a body raised RecursionError, not a ProviderError.
    server.script(Reply(status=200, body=_deep(), headers={"content-type": "application/json"}))
    with pytest.raises(ProviderError, match="not JSON"):
        transport.post_json("/chat/completions", {"model": "m"})


def test_an_error_body_nested_past_the_parser_is_still_mapped(
    server: ScriptedServer, transport: Transport
) -> None:
    server.script(Reply(status=400, body=_deep(), headers={"content-type": "application/json"}))
    with pytest.raises(BadRequestError):
        transport.post_json("/chat/completions", {"model": "m"})


# -- total deadline and size limit (#11 items 16 and 17) ------------------------------------


def test_a_server_dripping_keep_alives_cannot_outlast_the_deadline(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    # Attack (#11.16): `timeout` bounds each read, so a body sent a byte at a time held a
    # turn far past it. The total deadline bounds the whole request.
    server.script(
        Reply(
            status=200,
            chunks=[b" "] * 200,
            chunk_pause=0.05,
            headers={"content-type": "application/json"},
        )
    )
    with make_transport(server, sleeps, timeout=2.0, deadline=0.3) as transport:
        started = time.monotonic()
        with pytest.raises(tw.exceptions.DeadlineExceededError, match=r"total deadline of 0\.3 s"):
            transport.post_json("/chat/completions", {"model": "m"})
    assert time.monotonic() - started < 3


def test_an_endless_stream_cannot_outlast_the_deadline(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    server.script(sse_reply([b": keep-alive\n\n"] * 400, pause=0.02))
    with make_transport(server, sleeps, deadline=0.3) as transport:
        started = time.monotonic()
        with pytest.raises(tw.exceptions.DeadlineExceededError):
            for _ in transport.stream_sse("/chat/completions", {"model": "m"}):
                pass
    assert time.monotonic() - started < 4


async def test_the_async_stream_has_the_deadline_too(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    server.script(sse_reply([b": keep-alive\n\n"] * 400, pause=0.02))
    async with make_transport(server, sleeps, deadline=0.3) as transport:
        with pytest.raises(tw.exceptions.DeadlineExceededError):
            async for _ in transport.astream_sse("/chat/completions", {"model": "m"}):
                pass


def test_a_retry_that_would_run_past_the_deadline_is_not_waited_for(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    server.script(json_reply(503, {"error": "busy"}, {"retry-after": "30"}), json_reply(200, {}))
    with make_transport(server, sleeps, deadline=5.0) as transport:  # noqa: SIM117
        with pytest.raises(ServerError):
            transport.post_json("/chat/completions", {"model": "m"})
    assert sleeps.delays == []


def test_a_body_over_the_size_limit_is_refused(server: ScriptedServer, sleeps: Sleeps) -> None:
    # Attack (#11.17): a 200 MB body was read whole.
    server.script(json_reply(200, {"pad": "x" * 2_000_000}))
    with make_transport(server, sleeps, max_response_bytes=1_000_000) as transport:  # noqa: SIM117
        with pytest.raises(tw.exceptions.ResponseTooLargeError, match="over 1,000,000 bytes"):
            transport.post_json("/chat/completions", {"model": "m"})


def test_a_stream_over_the_size_limit_is_refused(server: ScriptedServer, sleeps: Sleeps) -> None:
    event = b'data: {"pad": "' + b"x" * 10_000 + b'"}\n\n'
    server.script(sse_reply([event] * 20, pause=0.0))
    with make_transport(server, sleeps, max_response_bytes=50_000) as transport:  # noqa: SIM117
        with pytest.raises(tw.exceptions.ResponseTooLargeError):
            for _ in transport.stream_sse("/chat/completions", {"model": "m"}):
                pass


def test_a_huge_error_body_is_cut_not_read_whole(server: ScriptedServer, sleeps: Sleeps) -> None:
    server.script(json_reply(400, {"error": {"message": "bad " + "x" * 3_000_000}}))
    with make_transport(server, sleeps, max_response_bytes=1_000_000) as transport:  # noqa: SIM117
        with pytest.raises(BadRequestError):
            transport.post_json("/chat/completions", {"model": "m"})


def test_limits_are_checked(server: ScriptedServer, sleeps: Sleeps) -> None:
    for bad in ({"deadline": 0}, {"deadline": True}, {"max_response_bytes": 0}):
        with pytest.raises(tw.exceptions.UsageError):
            make_transport(server, sleeps, **bad)


def test_a_key_straddling_a_cut_is_scrubbed_before_the_cut() -> None:
    # Attack (#11.23): scrubbing ran after truncation, so a key straddling the cut survived
    # in part; and request_id was copied unscrubbed from x-request-id.
    for inside in range(4, len(KEY)):  # how many of the key's characters fall before the cut
        body = ("x" * (4000 - inside) + KEY + "y" * 50).encode()
        error = mapped(400, body, headers={"x-request-id": f"req-{KEY}"})
        assert_error_clean(error)
        assert KEY[:inside] not in (error.body or "")
        assert KEY not in (error.request_id or "")


def test_a_key_in_a_stream_error_payload_is_scrubbed_before_any_cut() -> None:
    payload = {"error": {"message": {"detail": "z" * 290 + KEY}}, "request_id": KEY}
    error = VENDORS.map_payload(payload, provider="p", secrets=(KEY,))
    assert_error_clean(error)
    assert KEY not in (error.request_id or "")
    assert "sk-test" not in error.message


def test_the_key_is_in_no_header_dict_or_url_until_the_request_is_sent(
    server: ScriptedServer, sleeps: Sleeps
) -> None:
    # Attack (#11.24): the key sat in plain header dicts held in locals; error reporters
    # that capture frame locals recorded it.
    server.script(json_reply(200, {}), json_reply(200, {}))
    with make_transport(server, sleeps) as transport:
        url, shown, _, headers = transport._prepare("/x", {"a": 1}, None, stream=False)
        assert_no_key(url, shown, headers, transport._json_headers, transport._stream_headers)
        assert_no_key(repr(transport._key_auth))
        transport.post_json("/x", {"a": 1})
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    query = Transport("gemini", server.url, api_key=KEY, auth=AuthStyle.query("key"), sleep=sleeps)
    with query:
        url, _, _, headers = query._prepare("/y", {}, None, stream=False)
        assert_no_key(url, headers)
        query.post_json("/y", {})
    assert f"key={KEY}" in server.requests[1].path
