"""HTTP and stream failures -> toolwire's typed errors; retries; keys never leak."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from _gemini_support import enqueue_generate, enqueue_stream
from fakes import CloseConnection, FakeGemini, JSONResponse, gemini

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
from toolwire._http import RetryPolicy
from toolwire_gemini import GeminiProvider, PromptBlockedError

NO_RETRY = RetryPolicy.none()


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [
        ("auth", AuthenticationError, "API key not valid"),
        ("permission", PermissionDeniedError, "Method doesn't allow unregistered callers"),
        ("not_found", NotFoundError, "models/gemini-fake is not found"),
        ("rate_limit", RateLimitError, "You exceeded your current quota"),
        ("server", ServerError, "An internal error has occurred"),
        ("overloaded", OverloadedError, "The model is overloaded"),
        ("context_length", ContextLengthError, "exceeds the maximum number of tokens"),
        ("bad_request", BadRequestError, ""),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_error_statuses_map_to_typed_errors(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    kind: str,
    error: type[ProviderError],
    message: str,
    stream: bool,
) -> None:
    provider = make(retry=NO_RETRY)
    fake_gemini.enqueue_error(kind)  # type: ignore[arg-type]
    before = session.to_json()

    with pytest.raises(error) as caught:
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert error is type(caught.value)
    assert message in caught.value.message
    assert "gemini" == caught.value.provider
    assert before == session.to_json()


def test_bad_request_keeps_the_providers_message(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    text = "* GenerateContentRequest.tools[0].function_declarations[0].name: Invalid function name."
    provider = make(retry=NO_RETRY)
    fake_gemini.enqueue_error("bad_request", message=text)

    with pytest.raises(BadRequestError) as caught:
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    assert text == caught.value.message
    assert 400 == caught.value.status
    assert f"[gemini 400] {text}" == str(caught.value)


def test_rate_limit_carries_retry_info_delay(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make(retry=NO_RETRY)
    fake_gemini.enqueue_error("rate_limit", retry_after=7)

    with pytest.raises(RateLimitError) as caught:
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    assert 7.0 == caught.value.retry_after
    assert caught.value.transient


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_transient_errors_are_retried_then_succeed(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = make()  # two retries, no sleeping
    fake_gemini.enqueue_error("overloaded")
    fake_gemini.enqueue_error("rate_limit", retry_after=30)
    if stream:
        enqueue_stream(fake_gemini, gemini.stream_chunks([gemini.text_part("Fine.")]))
    else:
        enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Fine.")]))

    outcome = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(outcome, tw.Finished)
    assert "Fine." == outcome.text
    assert 3 == len(fake_gemini.requests)


def test_retries_are_bounded(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make()
    for _ in range(3):
        fake_gemini.enqueue_error("server")

    with pytest.raises(ServerError):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    assert 3 == len(fake_gemini.requests)


def test_bad_request_is_not_retried(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make()
    fake_gemini.enqueue_error("bad_request")

    with pytest.raises(BadRequestError):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    assert 1 == len(fake_gemini.requests)


def test_dropped_connection_is_a_connection_error_after_retries(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make()
    fake_gemini.enqueue(CloseConnection(), CloseConnection(), CloseConnection())

    with pytest.raises(ProviderConnectionError):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    assert 3 == len(fake_gemini.requests)


async def test_timeout_is_a_timeout_error(
    fake_gemini: FakeGemini, amake: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = amake(retry=NO_RETRY, timeout=0.2)
    fake_gemini.enqueue(JSONResponse(gemini.response([gemini.text_part("late")]), delay=2.0))

    with pytest.raises(ProviderTimeoutError):
        await tw.arun_turn(provider, session, tw.resolve_turn(toolset))


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
async def test_stream_dropped_midway_is_a_stream_error_and_commits_nothing(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    use_async: bool,
) -> None:
    provider = make()
    chunks = gemini.stream_chunks([gemini.text_part("A long answer that is cut off.")])
    enqueue_stream(fake_gemini, chunks, drop_after=2)
    before = session.to_json()
    seen: list[tw.adapters.StreamEvent] = []

    turn = tw.resolve_turn(toolset)

    if use_async:
        with pytest.raises(StreamError):
            await tw.arun_turn(provider, session, turn, on_event=seen.append)
    else:
        with pytest.raises(StreamError):
            tw.run_turn(provider, session, turn, on_event=seen.append)

    assert before == session.to_json()
    assert 1 == len(fake_gemini.requests)
    assert not any(isinstance(e, tw.adapters.ReplyCompleted) for e in seen)
    await provider.aclose()


def test_stream_without_finish_reason_is_a_stream_error(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    chunks = gemini.stream_chunks([gemini.text_part("Half of it")])
    chunks[-1]["candidates"][0].pop("finishReason")
    provider = make()
    enqueue_stream(fake_gemini, chunks)
    before = session.to_json()

    with pytest.raises(StreamError, match="without a finishReason"):
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)

    assert before == session.to_json()


def test_error_payload_inside_a_stream_is_mapped(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    chunks = gemini.stream_chunks([gemini.text_part("Starting")])[:1]
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    provider = make()
    enqueue_stream(fake_gemini, [*chunks, error])

    with pytest.raises(OverloadedError, match="The model is overloaded"):
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)


BLOCKED = {
    "promptFeedback": {
        "blockReason": "SAFETY",
        "safetyRatings": [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ],
    },
    "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 5},
    "modelVersion": "gemini-fake-001",
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_blocked_prompt_is_a_prompt_blocked_error(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = make()
    if stream:
        enqueue_stream(fake_gemini, [BLOCKED])
    else:
        enqueue_generate(fake_gemini, BLOCKED)
    before = session.to_json()

    with pytest.raises(PromptBlockedError) as caught:
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert "SAFETY" == caught.value.block_reason
    assert "HARM_CATEGORY_DANGEROUS_CONTENT" in str(caught.value)
    assert not caught.value.transient
    assert before == session.to_json()


def test_missing_key_is_reported_on_the_first_request_without_sending(
    fake_gemini: FakeGemini, toolset: tw.Toolset, session: tw.Session,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with GeminiProvider("gemini-fake", base_url=fake_gemini.base_url) as provider:
        assert provider.render_tools(tw.resolve_turn(toolset))
        with pytest.raises(AuthenticationError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
            tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert [] == fake_gemini.requests


@pytest.mark.parametrize("var", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_key_comes_from_the_environment(
    fake_gemini: FakeGemini, toolset: tw.Toolset, session: tw.Session,
    monkeypatch: pytest.MonkeyPatch, var: str,
) -> None:  # fmt: skip
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv(var, fake_gemini.default_api_key)
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Hi.")]))
    with GeminiProvider("gemini-fake", base_url=fake_gemini.base_url) as provider:
        outcome = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(outcome, tw.Finished)
    assert fake_gemini.default_api_key == fake_gemini.last_request.header("x-goog-api-key")


@pytest.mark.parametrize("key_in_query", [False, True], ids=["header", "query"])
def test_keys_never_in_reprs_logs_or_errors(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    caplog: pytest.LogCaptureFixture,
    key_in_query: bool,
) -> None:
    wrong = "AIzaWRONG-secret-key-987654321"
    caplog.set_level(logging.DEBUG)
    good = make(key_in_query=key_in_query)
    bad = make(api_key=wrong, key_in_query=key_in_query)
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("ok")]))
    fake_gemini.enqueue_error("server")
    fake_gemini.enqueue(CloseConnection())
    fake_gemini.enqueue_error("server")

    tw.run_turn(good, session, tw.resolve_turn(toolset))
    with pytest.raises(ProviderError) as server:
        tw.run_turn(good, session, tw.resolve_turn(toolset))
    with pytest.raises(AuthenticationError) as auth:
        tw.run_turn(bad, session, tw.resolve_turn(toolset))

    secrets = (fake_gemini.default_api_key, wrong)
    texts = [
        repr(good), repr(bad), repr(good.transport), repr(bad.transport),
        str(server.value), repr(server.value), str(server.value.body),
        str(auth.value), repr(auth.value), str(auth.value.body), caplog.text,
    ]  # fmt: skip
    for text in texts:
        for secret in secrets:
            assert secret not in text
    assert "POST" in caplog.text
    if not key_in_query:
        fake_gemini.assert_key_confined()


def test_garbage_json_response_is_a_provider_error(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make()
    fake_gemini.enqueue(JSONResponse({"candidates": [{"content": {"parts": "nope"}}]}))
    fake_gemini.enqueue(JSONResponse({"candidates": []}))

    with pytest.raises(ProviderError, match="malformed response"):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    with pytest.raises(ProviderError, match="no candidates"):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))


# -- Gemini's error bodies (toolwire_gemini._errors) -------------------------------------------


def _gemini_body(code: int, status: str, message: str, details: list[object]) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "status": status, "details": details}}


def test_retry_info_gives_retry_after() -> None:
    import httpx

    from toolwire_gemini._errors import GEMINI_ERRORS

    body = _gemini_body(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded",
        [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34s"}],
    )
    error = GEMINI_ERRORS.map_response(httpx.Response(429, json=body), provider="gemini")
    assert isinstance(error, tw.exceptions.RateLimitError)
    assert 34.0 == error.retry_after


def test_a_bad_key_400_is_an_authentication_error() -> None:
    import httpx

    from toolwire_gemini._errors import GEMINI_ERRORS

    body = _gemini_body(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
    )
    error = GEMINI_ERRORS.map_response(httpx.Response(400, json=body), provider="gemini")
    assert isinstance(error, tw.exceptions.AuthenticationError)


def test_malformed_details_are_ignored() -> None:
    from toolwire_gemini._errors import gemini_error_detail

    for details in (None, "x", [1, None, {"retryDelay": 5}, {"retryDelay": "soon"}]):
        body = _gemini_body(429, "RESOURCE_EXHAUSTED", "slow", details)  # type: ignore[arg-type]
        detail = gemini_error_detail(body, "")
        assert detail is not None
        assert (None, None) == (detail.reason, detail.retry_after)
    assert gemini_error_detail([body], "") is not None
    assert gemini_error_detail("not json", "") is None
