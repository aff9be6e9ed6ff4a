"""HTTP errors, retries, broken streams and key hygiene, against the fake server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from _openai_support import Adapter, enqueue_chat_stream, enqueue_response_stream
from fakes import Call, CloseConnection, FakeOpenAI, errors, openai_chat, openai_responses

import toolwire as tw
from toolwire._http import RetryPolicy
from toolwire_openai import OpenAIChatProvider, OpenAIResponsesProvider, OpenRouterProvider
from toolwire_openai._common import OpenAIBase

NO_WAIT = RetryPolicy(max_retries=2, initial_backoff=0.0, max_backoff=0.0, jitter=0.0,
                      max_retry_after=0.0)  # fmt: skip

EXPECTED: dict[str, type[tw.ProviderError]] = {
    "auth": tw.exceptions.AuthenticationError,
    "permission": tw.exceptions.PermissionDeniedError,
    "not_found": tw.exceptions.NotFoundError,
    "rate_limit": tw.exceptions.RateLimitError,
    "server": tw.exceptions.ServerError,
    "overloaded": tw.exceptions.OverloadedError,
    "context_length": tw.exceptions.ContextLengthError,
    "bad_request": tw.exceptions.BadRequestError,
}


def _turn(toolset: tw.Toolset) -> tw.adapters.ResolvedTurn:
    return tw.resolve_turn(toolset)


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_error_status_becomes_a_typed_error(
    fake_openai: FakeOpenAI,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    kind: errors.ErrorKind,
    stream: bool,
) -> None:
    provider = make(retry=RetryPolicy.none())
    fake_openai.enqueue_error(kind, retry_after=3 if kind == "rate_limit" else None)
    before = session.to_dict()
    with pytest.raises(EXPECTED[kind]) as info:
        tw.run_turn(provider, session, _turn(toolset), stream=stream)
    error = info.value
    assert error.provider == provider.name
    assert before == session.to_dict()
    if kind == "rate_limit":
        assert 3.0 == error.retry_after
    if kind == "bad_request":
        assert "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'." == (
            error.message
        )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_transient_errors_are_retried_until_success(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = make(retry=NO_WAIT)
    fake_openai.enqueue_error("rate_limit", retry_after_ms=5)
    fake_openai.enqueue(CloseConnection())
    adapter.enqueue_text(fake_openai, "finally", stream=stream)
    outcome = tw.run_turn(provider, session, _turn(toolset), stream=stream)
    assert isinstance(outcome, tw.Finished)
    assert "finally" == outcome.text
    assert 3 == len(fake_openai.requests)


async def test_transient_errors_are_retried_async(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    amake: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = amake(retry=NO_WAIT)
    fake_openai.enqueue_error("overloaded")
    fake_openai.enqueue_error("server")
    adapter.enqueue_text(fake_openai, "finally", stream=True)
    outcome = await tw.arun_turn(provider, session, _turn(toolset), stream=True)
    assert isinstance(outcome, tw.Finished)
    assert 3 == len(fake_openai.requests)


def test_retries_are_bounded(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make(retry=NO_WAIT)
    for _ in range(3):
        fake_openai.enqueue_error("server")
    with pytest.raises(tw.exceptions.ServerError):
        tw.run_turn(provider, session, _turn(toolset))
    assert 3 == len(fake_openai.requests)


def test_final_errors_are_not_retried(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make(retry=NO_WAIT)
    fake_openai.enqueue_error("bad_request")
    with pytest.raises(tw.exceptions.BadRequestError):
        tw.run_turn(provider, session, _turn(toolset))
    assert 1 == len(fake_openai.requests)


def test_a_dropped_connection_is_a_connection_error(
    fake_openai: FakeOpenAI, make: Callable[..., OpenAIBase], toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    provider = make(retry=RetryPolicy(max_retries=1, initial_backoff=0.0, jitter=0.0))
    fake_openai.enqueue(CloseConnection(), CloseConnection())
    with pytest.raises(tw.exceptions.ProviderConnectionError):
        tw.run_turn(provider, session, _turn(toolset))
    assert 2 == len(fake_openai.requests)


def test_a_slow_server_times_out(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase],
    toolset: tw.Toolset, session: tw.Session,
) -> None:  # fmt: skip
    provider = make(timeout=0.2, retry=RetryPolicy.none())
    fake_openai.enqueue(errors.openai_error("server", delay=3.0))
    with pytest.raises(tw.exceptions.ProviderTimeoutError):
        tw.run_turn(provider, session, _turn(toolset))


# -- broken streams ------------------------------------------------------------------


def _tool_stream(adapter: Adapter) -> list[dict[str, Any]]:
    calls = (Call.of("get_weather", {"city": "Paris"}, id="call_w"),)
    if adapter.api == "chat":
        return openai_chat.tool_calls_stream(*calls, size=2)
    resp = openai_responses.tool_calls_response(*calls)
    return openai_responses.stream_events(resp["output"], size=2)


def _enqueue(fake: FakeOpenAI, adapter: Adapter, events: list[Any], **kwargs: Any) -> None:
    if adapter.api == "chat":
        enqueue_chat_stream(fake, events, **kwargs)
    else:
        enqueue_response_stream(fake, events, **kwargs)


@pytest.mark.parametrize("how", ["dropped", "truncated"])
def test_a_broken_stream_is_a_stream_error_and_commits_nothing(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    how: str,
) -> None:
    provider = make(retry=NO_WAIT)
    events = _tool_stream(adapter)
    if how == "dropped":
        _enqueue(fake_openai, adapter, events, drop_after=5)
    elif adapter.api == "chat":
        _enqueue(fake_openai, adapter, events, done=False)  # no [DONE]
    else:
        _enqueue(fake_openai, adapter, events[:-1])  # no response.completed
    before = session.to_dict()
    seen: list[tw.adapters.StreamEvent] = []
    with pytest.raises(tw.exceptions.StreamError):
        tw.run_turn(provider, session, _turn(toolset), stream=True, on_event=seen.append)
    assert before == session.to_dict()
    assert seen  # events were delivered before the break...
    assert not any(isinstance(e, tw.adapters.ReplyCompleted) for e in seen)  # ...but no reply
    assert 1 == len(fake_openai.requests)  # a stream that started is never retried


async def test_a_dropped_stream_is_a_stream_error_async(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    amake: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = amake(retry=NO_WAIT)
    _enqueue(fake_openai, adapter, _tool_stream(adapter), drop_after=4)
    before = session.to_dict()
    with pytest.raises(tw.exceptions.StreamError):
        await tw.arun_turn(provider, session, _turn(toolset), stream=True)
    assert before == session.to_dict()


def test_openrouter_mid_stream_error_is_typed_and_commits_nothing(
    fake_openai: FakeOpenAI, toolset: tw.Toolset, session: tw.Session
) -> None:
    chunks: list[Any] = [
        openai_chat.OPENROUTER_COMMENT,
        *openai_chat.text_stream("Hel", finish_reason=None),
        openai_chat.stream_error_event("Provider returned error", code=502),
    ]
    enqueue_chat_stream(fake_openai, chunks, sdk_check=False)
    before = session.to_dict()
    with (
        OpenRouterProvider(
            "x/y", api_key=fake_openai.default_api_key, base_url=fake_openai.base_url
        ) as provider,
        pytest.raises(tw.exceptions.ServerError) as info,
    ):
        tw.run_turn(provider, session, _turn(toolset), stream=True)
    assert "Provider returned error" == info.value.message
    assert before == session.to_dict()


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (openai_responses.error_event(), tw.exceptions.ServerError),
        (
            openai_responses.error_event("slow down", code="rate_limit_exceeded"),
            tw.exceptions.RateLimitError,
        ),
    ],
)
def test_responses_error_event_is_typed(
    fake_openai: FakeOpenAI,
    toolset: tw.Toolset,
    session: tw.Session,
    event: dict[str, Any],
    expected: type[tw.ProviderError],
) -> None:
    events = openai_responses.stream_events([openai_responses.message_item("Hi")])
    enqueue_response_stream(fake_openai, [*events[:3], event])
    with (
        OpenAIResponsesProvider(
            "m", api_key=fake_openai.default_api_key, base_url=fake_openai.base_url
        ) as provider,
        pytest.raises(expected),
    ):
        tw.run_turn(provider, session, _turn(toolset), stream=True)
    assert 2 == len(session)


def test_responses_failed_event_is_typed(
    fake_openai: FakeOpenAI, toolset: tw.Toolset, session: tw.Session
) -> None:
    events = openai_responses.stream_events(
        [openai_responses.message_item("Hi")], final_status="failed"
    )
    events[-1]["response"]["error"] = {"code": "server_error", "message": "boom"}
    enqueue_response_stream(fake_openai, events)
    with (
        OpenAIResponsesProvider(
            "m", api_key=fake_openai.default_api_key, base_url=fake_openai.base_url
        ) as provider,
        pytest.raises(tw.exceptions.ServerError, match="boom"),
    ):
        tw.run_turn(provider, session, _turn(toolset), stream=True)


# -- keys ----------------------------------------------------------------------------


def test_missing_key_is_an_authentication_error_naming_the_variable(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    pairs: list[tuple[type[OpenAIBase], str]] = [
        (OpenAIChatProvider, "OPENAI_API_KEY"),
        (OpenRouterProvider, "OPENROUTER_API_KEY"),
    ]
    for cls, var in pairs:
        provider = cls("m")  # the API's own URL: nothing is sent without a key
        with provider, pytest.raises(tw.exceptions.AuthenticationError, match=var):
            tw.run_turn(provider, session, _turn(toolset))
    assert [] == fake_openai.requests


def test_a_server_of_ones_own_is_asked_without_a_key_and_a_401_says_so(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    # `--provider openai --base-url http://localhost:8000/v1` for a server that needs no key:
    # the request goes without an Authorization header; a 401 says it went without one.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with (
        OpenAIChatProvider("m", base_url=fake_openai.base_url) as provider,
        pytest.raises(tw.exceptions.AuthenticationError) as info,
    ):
        tw.run_turn(provider, session, _turn(toolset))
    assert "the request was sent without an API key" in str(info.value)
    assert "OPENAI_API_KEY" in str(info.value)
    (request,) = fake_openai.requests
    assert "authorization" not in request.headers
    fake_openai.api_key = None  # a server that takes no key
    fake_openai.enqueue_chat(openai_chat.completion(content="hi"))
    with OpenAIChatProvider("m", base_url=fake_openai.base_url) as provider:
        reply = tw.run_turn(provider, session, _turn(toolset))
    assert isinstance(reply, tw.Finished)


def test_keys_come_from_the_environment(
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", fake_openai.default_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    openai_chat_text = openai_chat.text_completion("hi")
    fake_openai.enqueue_chat(openai_chat_text)
    with OpenAIChatProvider("m") as provider:
        assert isinstance(tw.run_turn(provider, session, _turn(toolset)), tw.Finished)
    fake_openai.assert_key_confined()


def test_key_is_never_in_reprs_logs_or_errors(
    fake_openai: FakeOpenAI,
    adapter: Adapter,
    make: Callable[..., OpenAIBase],
    toolset: tw.Toolset,
    session: tw.Session,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = "sk-secret-" + "9" * 24
    fake_openai.api_key = key
    provider = make(api_key=key, retry=NO_WAIT)
    caplog.set_level(logging.DEBUG)
    fake_openai.enqueue_error("server")
    adapter.enqueue_text(fake_openai, "hi", stream=True)
    tw.run_turn(provider, session, _turn(toolset), stream=True)
    fake_openai.enqueue_error("bad_request", message=f"the key {key} is not valid here")
    with pytest.raises(tw.exceptions.BadRequestError) as http_error:
        tw.run_turn(provider, session, _turn(toolset))
    if adapter.api == "chat":
        bad = openai_chat.stream_error_event(f"upstream saw {key}", code=400)
        enqueue_chat_stream(fake_openai, [bad], sdk_check=False)
    else:
        enqueue_response_stream(fake_openai, [openai_responses.error_event(f"saw {key}")])
    with pytest.raises(tw.ProviderError) as stream_error:
        tw.run_turn(provider, session, _turn(toolset), stream=True)
    texts = [
        repr(provider),
        str(provider),
        repr(provider.transport),
        caplog.text,
        *(f"{e.value} {e.value.message} {e.value.body}" for e in (http_error, stream_error)),
    ]
    assert [] == [t for t in texts if key in t]
    assert "****" in str(http_error.value)
    assert "****" in str(stream_error.value)


def test_the_deadline_bounds_the_whole_request_retries_included(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase],
    toolset: tw.Toolset, session: tw.Session,
) -> None:  # fmt: skip
    # Each attempt answers within its read timeout; together they outlast the deadline.
    retry = RetryPolicy(max_retries=5, initial_backoff=0.0, jitter=0.0)
    provider = make(timeout=5, deadline=0.5, retry=retry)
    for _ in range(6):
        fake_openai.enqueue(errors.openai_error("server", delay=0.3))
    with pytest.raises(tw.exceptions.DeadlineExceededError):
        tw.run_turn(provider, session, _turn(toolset))
    assert len(fake_openai.requests) < 6  # without the deadline all six would be asked
    fake_openai.reset()  # the answers the deadline cut off are not waited for


def test_max_response_bytes_bounds_the_body(
    fake_openai: FakeOpenAI, adapter: Adapter, make: Callable[..., OpenAIBase],
    toolset: tw.Toolset, session: tw.Session,
) -> None:  # fmt: skip
    provider = make(max_response_bytes=2048, retry=RetryPolicy.none())
    adapter.enqueue_text(fake_openai, "x" * 10_000, stream=False)
    with pytest.raises(tw.exceptions.ResponseTooLargeError):
        tw.run_turn(provider, session, _turn(toolset))
