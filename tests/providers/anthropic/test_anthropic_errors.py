"""HTTP errors, retries, broken streams, in-stream errors and key hygiene."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _anthropic_support import Make, enqueue, enqueue_message, enqueue_stream
from fakes import CloseConnection, FakeAnthropic, anthropic_messages, errors

import toolwire as tw
from toolwire._http import RetryPolicy
from toolwire_anthropic import AnthropicProvider

M = anthropic_messages
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
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


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
@STREAM
def test_error_status_becomes_a_typed_error(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    kind: errors.ErrorKind,
    stream: bool,
) -> None:
    provider = make(retry=RetryPolicy.none())
    fake_anthropic.enqueue_error(kind, retry_after=3 if kind == "rate_limit" else None)
    before = session.to_dict()
    with pytest.raises(EXPECTED[kind]) as info:
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)
    error = info.value
    assert "anthropic" == error.provider
    assert "req_fake01" == error.request_id
    assert before == session.to_dict()
    if kind == "rate_limit":
        assert 3.0 == error.retry_after
    if kind == "bad_request":
        assert "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'" == error.message
    if kind == "context_length":
        assert "prompt is too long: 208310 tokens > 200000 maximum" == error.message


def test_a_wrong_key_is_an_authentication_error(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    with pytest.raises(tw.exceptions.AuthenticationError):
        tw.run_turn(make(api_key="sk-ant-wrong-key"), session, tw.resolve_turn(toolset))


@pytest.mark.parametrize("kind", ["rate_limit", "overloaded", "server"])
@STREAM
def test_transient_errors_are_retried_until_success(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    kind: errors.ErrorKind,
    stream: bool,
) -> None:
    fake_anthropic.enqueue_error(kind, retry_after=1)
    fake_anthropic.enqueue(CloseConnection())
    enqueue(fake_anthropic, M.text_message("finally"), stream=stream)
    outcome = tw.run_turn(make(retry=NO_WAIT), session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(outcome, tw.Finished)
    assert "finally" == outcome.text
    assert 3 == len(fake_anthropic.requests)


@STREAM
async def test_transient_errors_are_retried_async(
    fake_anthropic: FakeAnthropic,
    amake: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    fake_anthropic.enqueue_error("overloaded")
    enqueue(fake_anthropic, M.text_message("ok"), stream=stream)
    provider = amake(retry=NO_WAIT)
    outcome = await tw.arun_turn(provider, session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(outcome, tw.Finished)
    assert 2 == len(fake_anthropic.requests)


def test_retries_are_bounded(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    for _ in range(3):
        fake_anthropic.enqueue_error("overloaded")
    with pytest.raises(tw.exceptions.OverloadedError):
        tw.run_turn(make(retry=NO_WAIT), session, tw.resolve_turn(toolset))
    assert 3 == len(fake_anthropic.requests)


@pytest.mark.parametrize("kind", ["auth", "bad_request", "context_length", "not_found"])
def test_final_errors_are_not_retried(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    kind: errors.ErrorKind,
) -> None:
    fake_anthropic.enqueue_error(kind)
    with pytest.raises(EXPECTED[kind]):
        tw.run_turn(make(retry=NO_WAIT), session, tw.resolve_turn(toolset))
    assert 1 == len(fake_anthropic.requests)


@STREAM
def test_a_dropped_connection_is_a_connection_error(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    fake_anthropic.enqueue(CloseConnection())
    with pytest.raises(tw.exceptions.ProviderConnectionError):
        tw.run_turn(
            make(retry=RetryPolicy.none()), session, tw.resolve_turn(toolset), stream=stream
        )


def test_a_slow_server_times_out(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    fake_anthropic.enqueue_message(M.text_message("late"), delay=2.0)
    provider = make(timeout=0.2, retry=RetryPolicy.none())
    with pytest.raises(tw.exceptions.ProviderTimeoutError):
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    fake_anthropic.reset()


def test_a_stream_dropped_midway_is_a_stream_error_and_commits_nothing(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    events = M.stream_events([M.text_block("partial answer"), M.tool_use_block("get_time", {})])
    enqueue_stream(fake_anthropic, events, drop_after=5)
    before = session.to_json()
    seen: list[tw.adapters.StreamEvent] = []
    with pytest.raises(tw.exceptions.StreamError):
        tw.run_turn(
            make(retry=NO_WAIT), session, tw.resolve_turn(toolset), stream=True,
            on_event=seen.append,
        )  # fmt: skip
    assert before == session.to_json()
    assert 1 == len(fake_anthropic.requests)  # never retried after output was seen
    assert not any(isinstance(e, tw.adapters.ReplyCompleted) for e in seen)


async def test_a_stream_without_message_stop_is_a_stream_error_async(
    fake_anthropic: FakeAnthropic, amake: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    events = M.stream_events([M.text_block("cut")])[:-1]  # a clean end, but no message_stop
    enqueue_stream(fake_anthropic, events)
    with pytest.raises(tw.exceptions.StreamError, match="message_stop"):
        await tw.arun_turn(amake(), session, tw.resolve_turn(toolset), stream=True)
    assert 2 == len(session)


@pytest.mark.parametrize(
    ("error_type", "expected"),
    [
        ("overloaded_error", tw.exceptions.OverloadedError),
        ("rate_limit_error", tw.exceptions.RateLimitError),
        ("api_error", tw.exceptions.ServerError),
        ("invalid_request_error", tw.exceptions.BadRequestError),
        ("something_new", tw.exceptions.StreamError),
    ],
)
def test_an_error_event_in_the_stream_is_typed_and_commits_nothing(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    error_type: str,
    expected: type[tw.ProviderError],
) -> None:
    events = M.stream_events([M.text_block("Hel")])
    events.insert(3, M.error_event(error_type, "It broke."))
    if error_type == "something_new":
        # A type newer than the SDK's: it is sent raw, without the SDK check.
        fake_anthropic.enqueue_message_stream(events)
    else:
        enqueue_stream(fake_anthropic, events)
    with pytest.raises(expected) as info:
        tw.run_turn(make(), session, tw.resolve_turn(toolset), stream=True)
    assert "It broke." == info.value.message
    assert 2 == len(session)


def test_malformed_json_response_is_a_provider_error(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, session: tw.Session
) -> None:
    fake_anthropic.enqueue_message({"type": "message", "content": "not a list"})
    with pytest.raises(tw.ProviderError, match="malformed response"):
        tw.run_turn(make(), session, tw.resolve_turn(toolset))


def test_missing_key_is_an_authentication_error_naming_the_variable(
    fake_anthropic: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with AnthropicProvider("m", base_url=fake_anthropic.base_url) as provider:
        assert provider.render_tools(tw.resolve_turn(toolset))  # rendering needs no key
        with pytest.raises(tw.exceptions.AuthenticationError, match="ANTHROPIC_API_KEY"):
            tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert [] == fake_anthropic.requests


def test_key_and_base_url_come_from_the_environment(
    fake_anthropic: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_anthropic.default_api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    enqueue_message(fake_anthropic, M.text_message("hi"))
    with AnthropicProvider("m") as provider:
        assert isinstance(tw.run_turn(provider, session, tw.resolve_turn(toolset)), tw.Finished)
    fake_anthropic.assert_key_confined()


def test_key_is_never_in_reprs_logs_or_errors(
    fake_anthropic: FakeAnthropic,
    make: Make,
    toolset: tw.Toolset,
    session: tw.Session,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = "sk-ant-secret-" + "9" * 24
    fake_anthropic.api_key = key
    provider = make(api_key=key, retry=NO_WAIT)
    caplog.set_level(logging.DEBUG)
    fake_anthropic.enqueue_error("server")
    enqueue(fake_anthropic, M.text_message("hi"), stream=True)
    tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)
    fake_anthropic.enqueue_error("bad_request", message=f"the key {key} is not valid here")
    with pytest.raises(tw.exceptions.BadRequestError) as http_error:
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    enqueue_stream(fake_anthropic, [M.error_event("api_error", f"upstream saw {key}")])
    with pytest.raises(tw.ProviderError) as stream_error:
        tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)
    texts: list[Any] = [
        repr(provider),
        repr(provider.transport),
        str(http_error.value),
        http_error.value.message,
        http_error.value.body,
        str(stream_error.value),
        stream_error.value.body,
        caplog.text,
    ]
    assert [] == [t for t in texts if t and key in t]
    assert "****" in http_error.value.message
    fake_anthropic.assert_key_confined(key)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tokens": 0}, "max_tokens must be a positive int"),
        ({"thinking": 512}, "thinking budget must be at least 1024"),
        ({"thinking": 4096}, "must be less than max_tokens"),
        ({"thinking": {"budget_tokens": 2048}}, "needs a string 'type'"),
    ],
)
def test_bad_options_are_refused_with_a_message(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnthropicProvider("m", api_key="k", **options)
