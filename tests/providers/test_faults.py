"""The fault suite: the agent loop against a real adapter and a real local server that is
slow, endless, huge, resets, is cancelled, or whose tools and hooks exit (#11).

Each fault ends the turn with a typed error or an error result within its bound, and
nothing half-done reaches the session: it still saves, loads and sends. ``.ci/run`` runs
this file as its own step under a time budget.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from fakes import Call, FakeOpenAI, openai_chat
from fakes._server import CloseConnection, JSONResponse, SSEResponse

import toolwire as tw
from toolwire.adapters import RetryPolicy
from toolwire.exceptions import (
    DeadlineExceededError,
    ProviderConnectionError,
    ResponseTooLargeError,
    StreamError,
)
from toolwire_openai import OpenAIChatProvider

NO_RETRY = RetryPolicy.none()


@tw.tool_fn
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


TOOLS = tw.Toolset("app", [get_weather])


def _provider(fake: FakeOpenAI, **options: Any) -> OpenAIChatProvider:
    options.setdefault("retry", NO_RETRY)
    return OpenAIChatProvider(
        "gpt-4.1", api_key=fake.default_api_key, base_url=fake.base_url, **options
    )


def _session() -> tw.Session:
    return tw.Session("You are terse.").add_user("Weather in Paris?")


def _unchanged(session: tw.Session, before: int) -> None:
    assert before == len(session)
    tw.Session.from_json(session.to_json())


def _agent(provider: Any, **options: Any) -> tw.Agent:
    return tw.Agent(provider, TOOLS, plugins=False, **options)


def test_slow_a_server_slower_than_the_deadline(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(JSONResponse(openai_chat.text_completion("late"), delay=5.0))
    session = _session()
    with (
        _provider(fake_openai, timeout=10, deadline=0.5) as provider,
        pytest.raises(DeadlineExceededError),
    ):
        _agent(provider).run(session)
    _unchanged(session, 2)
    fake_openai.reset()


def test_endless_a_stream_of_keep_alives_that_never_ends(fake_openai: FakeOpenAI) -> None:
    keep_alives = (b": keep-alive\n\n",) * 2000
    fake_openai.enqueue(SSEResponse(chunks=keep_alives, chunk_delay=0.01))
    session = _session()
    with (
        _provider(fake_openai, timeout=10, deadline=0.5) as provider,
        pytest.raises(DeadlineExceededError),
    ):
        _agent(provider).run(session, stream=True)
    _unchanged(session, 2)
    fake_openai.reset()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_huge_a_body_past_the_size_limit(fake_openai: FakeOpenAI, stream: bool) -> None:
    text = "x" * (4 * 1024 * 1024)
    if stream:
        fake_openai.enqueue_chat_stream(openai_chat.text_stream(text, size=64 * 1024))
    else:
        fake_openai.enqueue_chat(openai_chat.text_completion(text))
    session = _session()
    with (
        _provider(fake_openai, max_response_bytes=1024 * 1024) as provider,
        pytest.raises(ResponseTooLargeError),
    ):
        _agent(provider).run(session, stream=stream)
    _unchanged(session, 2)


def test_reset_a_connection_closed_mid_stream_commits_nothing(fake_openai: FakeOpenAI) -> None:
    chunks = openai_chat.tool_calls_stream(Call.of("get_weather", {"city": "Paris"}), size=2)
    fake_openai.enqueue_chat_stream(chunks, drop_after=3)
    session = _session()
    with _provider(fake_openai) as provider, pytest.raises((StreamError, ProviderConnectionError)):
        _agent(provider).run(session, stream=True)
    _unchanged(session, 2)


def test_reset_every_attempt_is_a_connection_error_after_the_retries(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.enqueue(CloseConnection(), CloseConnection(), CloseConnection())
    retry = RetryPolicy(max_retries=2, initial_backoff=0.0, jitter=0.0)
    session = _session()
    with _provider(fake_openai, retry=retry) as provider, pytest.raises(ProviderConnectionError):
        _agent(provider).run(session)
    assert 3 == len(fake_openai.requests)
    _unchanged(session, 2)


async def test_cancelled_by_the_caller_mid_request_leaves_the_session_as_it_was(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.enqueue(JSONResponse(openai_chat.text_completion("late"), delay=5.0))
    session = _session()
    provider = _provider(fake_openai, timeout=10)
    try:
        task = asyncio.ensure_future(_agent(provider).arun(session))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await provider.aclose()
    _unchanged(session, 2)
    fake_openai.reset()


async def test_cancelled_a_tool_that_swallows_cancellation_still_times_out(
    fake_openai: FakeOpenAI,
) -> None:
    @tw.tool_fn(timeout=0.2)
    async def stubborn(city: str) -> str:
        """A tool that will not be cancelled."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # swallows it, answers late
        return "late output"

    call = Call.of("stubborn", {"city": "Paris"}, id="call_s")
    fake_openai.enqueue_chat(openai_chat.tool_calls_completion(call))
    fake_openai.enqueue_chat(openai_chat.text_completion("it timed out"))
    session = _session()
    provider = _provider(fake_openai)
    try:
        result = await tw.Agent(provider, tw.Toolset("app", [stubborn]), plugins=False).arun(
            session
        )
    finally:
        await provider.aclose()
    assert "finished" == result.status
    [timed_out] = session.messages[-2].results  # type: ignore[union-attr]
    assert timed_out.is_error
    assert "late output" not in timed_out.content
    tw.Session.from_json(session.to_json())


def test_exiting_a_tool_and_a_hook_that_call_sys_exit_are_failures_not_the_end(
    fake_openai: FakeOpenAI,
) -> None:
    @tw.tool_fn
    def quitter(city: str) -> str:
        """A tool that exits the process."""
        sys.exit(3)

    hooks = tw.HookSet()

    def leave(call: Any) -> None:
        raise SystemExit(4)

    hooks.on(get_weather, leave)
    calls = (
        Call.of("quitter", {"city": "Paris"}, id="call_q"),
        Call.of("get_weather", {"city": "Paris"}, id="call_w"),
    )
    fake_openai.enqueue_chat(openai_chat.tool_calls_completion(*calls))
    fake_openai.enqueue_chat(openai_chat.text_completion("both failed"))
    session = _session()
    toolset = tw.Toolset("app", [quitter, get_weather], hooks=hooks)
    with _provider(fake_openai) as provider:
        result = tw.Agent(provider, toolset, plugins=False).run(session)
    assert "finished" == result.status
    quit_result, hooked = session.messages[-2].results  # type: ignore[union-attr]
    assert quit_result.is_error
    assert hooked.is_error
    assert tw.adapters.rejection_reason(hooked) is not None
    tw.Session.from_json(session.to_json())
