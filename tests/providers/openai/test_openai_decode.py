"""Decoding replies: text, refusals, finish reasons, usage, ids, and server quirks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _openai_support import (
    ADAPTERS,
    decode_stream_bytes,
    enqueue_chat,
    enqueue_chat_stream,
    enqueue_response,
    enqueue_response_stream,
    sse_bytes,
    validate_requests,
)
from fakes import Call, FakeOpenAI, openai_chat, openai_responses

import toolwire as tw
from toolwire_openai import (
    OpenAIChatProvider,
    OpenAICompatibleProvider,
    OpenAIResponsesProvider,
    OpenRouterProvider,
)


@pytest.fixture
def chat(fake_openai: FakeOpenAI) -> Iterator[OpenAIChatProvider]:
    with OpenAIChatProvider(
        "m", api_key=fake_openai.default_api_key, base_url=fake_openai.base_url
    ) as provider:
        yield provider


@pytest.fixture
def compatible(fake_openai: FakeOpenAI) -> Iterator[OpenAICompatibleProvider]:
    fake_openai.api_key = None
    with OpenAICompatibleProvider("llama", base_url=fake_openai.base_url) as provider:
        yield provider


@pytest.fixture
def responses(fake_openai: FakeOpenAI) -> Iterator[OpenAIResponsesProvider]:
    with OpenAIResponsesProvider(
        "o4-mini", api_key=fake_openai.default_api_key, base_url=fake_openai.base_url
    ) as provider:
        yield provider


W = Call.of("get_weather", {"city": "Paris"}, id="call_w")
T = Call.of("get_time", {"zone": "UTC"}, id="call_t")


# -- Chat Completions ------------------------------------------------------------------


def test_usage_includes_cached_and_reasoning_tokens(
    fake_openai: FakeOpenAI, chat: OpenAIChatProvider, toolset: tw.Toolset, session: tw.Session
) -> None:
    usage = openai_chat.usage(100, 20)
    usage["prompt_tokens_details"]["cached_tokens"] = 64
    usage["completion_tokens_details"]["reasoning_tokens"] = 12
    enqueue_chat(fake_openai, openai_chat.text_completion("hi", usage=usage))
    reply = chat.generate(session, tw.resolve_turn(toolset))
    assert tw.Usage(100, 20, 64, 12) == reply.usage
    assert "gpt-fake" == reply.model


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [
        ("stop", (), "stop"),
        ("length", (), "length"),
        ("content_filter", (), "content_filter"),
        ("stop", (W,), "tool_calls"),  # Ollama / litellm end tool turns with stop
        ("length", (W,), "length"),
    ],
)
def test_finish_reason_is_normalised(
    fake_openai: FakeOpenAI,
    chat: OpenAIChatProvider,
    toolset: tw.Toolset,
    session: tw.Session,
    raw: str,
    calls: tuple[Call, ...],
    expected: str,
) -> None:
    enqueue_chat(
        fake_openai, openai_chat.completion(content="x", tool_calls=calls, finish_reason=raw)
    )
    assert expected == chat.generate(session, tw.resolve_turn(toolset)).finish_reason


def test_refusal_is_the_text_with_finish_reason_refusal_and_is_sent_back(
    fake_openai: FakeOpenAI, chat: OpenAIChatProvider, toolset: tw.Toolset, session: tw.Session
) -> None:
    body = openai_chat.completion(content=None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    enqueue_chat(fake_openai, body)
    enqueue_chat(fake_openai, openai_chat.text_completion("ok"))
    outcome = tw.run_turn(chat, session, tw.resolve_turn(toolset))
    assert isinstance(outcome, tw.Finished)
    assert "I can't help with that." == outcome.text
    assert "refusal" == outcome.reply.finish_reason
    session.add_user("fine")
    tw.run_turn(chat, session, tw.resolve_turn(toolset))
    sent = validate_requests(fake_openai, ADAPTERS["openai"])[1]["messages"][2]
    assert {"role": "assistant", "refusal": "I can't help with that.", "content": None} == sent


def test_duplicate_ids_are_dropped_and_missing_ids_synthesised(
    fake_openai: FakeOpenAI, chat: OpenAIChatProvider, toolset: tw.Toolset, session: tw.Session
) -> None:
    body = openai_chat.tool_calls_completion(W, W, T)
    del body["choices"][0]["message"]["tool_calls"][2]["id"]  # a server that sends no id
    fake_openai.enqueue_chat(body)  # no id: outside the SDK types, on purpose
    reply = chat.generate(session, tw.resolve_turn(toolset))
    assert ["call_w", "get_time"] == [reply.tool_calls[0].id, reply.tool_calls[1].name]
    assert 2 == len(reply.tool_calls)
    assert reply.tool_calls[1].id.startswith("call_")
    again = chat.decode(body)
    assert reply.tool_calls[1].id == again.tool_calls[2].id  # deterministic


def test_arguments_sent_as_objects_or_empty_are_accepted(
    fake_openai: FakeOpenAI,
    compatible: OpenAICompatibleProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    body = openai_chat.tool_calls_completion(W, T)
    calls = body["choices"][0]["message"]["tool_calls"]
    calls[0]["function"]["arguments"] = {"city": "Paris"}  # outside the SDK types, on purpose
    calls[1]["function"]["arguments"] = ""
    fake_openai.enqueue_chat(body)
    reply = compatible.generate(session, tw.resolve_turn(toolset))
    assert ['{"city":"Paris"}', "{}"] == [c.arguments for c in reply.tool_calls]


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param(
            openai_chat.tool_calls_stream(W, T, size=1, interleave=True), id="interleaved"
        ),
        pytest.param(openai_chat.shared_index_stream(W, T, size=3), id="shared-index"),
        pytest.param(openai_chat.whole_calls_stream(W, T), id="whole-calls"),
        pytest.param(openai_chat.whole_calls_stream(W, T, same_chunk=True), id="one-chunk"),
        pytest.param(openai_chat.tool_calls_stream(W, T, finish_reason=None), id="no-finish"),
        pytest.param(openai_chat.tool_calls_stream(W, T, finish_reason="stop"), id="stop"),
    ],
)
def test_streamed_call_quirks_assemble_to_the_same_calls(
    fake_openai: FakeOpenAI,
    compatible: OpenAICompatibleProvider,
    toolset: tw.Toolset,
    session: tw.Session,
    chunks: list[dict[str, Any]],
) -> None:
    enqueue_chat_stream(fake_openai, chunks)
    outcome = tw.run_turn(compatible, session, tw.resolve_turn(toolset), stream=True)
    assert isinstance(outcome, tw.NeedsTools)
    assert [("call_w", "get_weather", W.arguments), ("call_t", "get_time", T.arguments)] == [
        (c.id, c.name, c.arguments) for c in outcome.round.tool_calls
    ]
    assert "tool_calls" == outcome.round.reply.finish_reason


def test_streamed_calls_without_index_are_accepted(
    fake_openai: FakeOpenAI,
    compatible: OpenAICompatibleProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    # Outside the SDK's ChoiceDeltaToolCall on purpose (Ollama before 0.4.7).
    fake_openai.enqueue_chat_stream(openai_chat.missing_index_stream(W, T))
    outcome = tw.run_turn(compatible, session, tw.resolve_turn(toolset), stream=True)
    assert isinstance(outcome, tw.NeedsTools)
    assert ["call_w", "call_t"] == [c.id for c in outcome.round.tool_calls]


def test_stream_reports_text_and_usage(chat: OpenAIChatProvider, toolset: tw.Toolset) -> None:
    chunks = openai_chat.text_stream("Hello there", size=3, include_usage=True)
    events, reply = decode_stream_bytes(
        chat, tw.resolve_turn(toolset), [sse_bytes([*chunks, "[DONE]"], named=False)]
    )
    assert ["Hel", "lo ", "the", "re"] == [
        e.text for e in events if isinstance(e, tw.adapters.TextDelta)
    ]
    assert "Hello there" == reply.text
    assert tw.Usage(12, 7) == reply.usage


# -- compatible servers and OpenRouter ----------------------------------------------------


def test_compatible_server_switches(
    fake_openai: FakeOpenAI, toolset: tw.Toolset, session: tw.Session
) -> None:
    fake_openai.api_key = None
    with OpenAICompatibleProvider(
        "llama",
        base_url=fake_openai.base_url,
        send_tool_choice=False,
        send_parallel_tool_calls=False,
        stream_usage=False,
    ) as provider:
        assert provider.supports_requirement is False
        enqueue_chat_stream(fake_openai, openai_chat.text_stream("hi"))
        turn = tw.resolve_turn(toolset, parallel_calls=False)
        tw.run_turn(provider, session, turn, stream=True)
    body = validate_requests(fake_openai, ADAPTERS["openai-compatible"])[0]
    assert set() == {"tool_choice", "parallel_tool_calls", "stream_options"} & set(body)
    assert "authorization" not in fake_openai.last_request.headers


def test_a_server_that_ignores_a_requirement_is_caught_after_decoding(
    fake_openai: FakeOpenAI,
    compatible: OpenAICompatibleProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    enqueue_chat(fake_openai, openai_chat.tool_calls_completion(W))
    turn = tw.resolve_turn(toolset, requirement=tw.Requirement.specific("get_time"))
    with pytest.raises(tw.exceptions.RequirementNotMetError, match="get_time"):
        tw.run_turn(compatible, session, turn)
    assert 2 == len(session)


def test_compatible_key_comes_only_from_the_named_variable(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, toolset: tw.Toolset,
    session: tw.Session,
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key-must-not-leak")
    monkeypatch.setenv("VLLM_KEY", fake_openai.default_api_key)
    enqueue_chat(fake_openai, openai_chat.text_completion("hi"))
    with OpenAICompatibleProvider(
        "m", base_url=fake_openai.base_url, api_key_env="VLLM_KEY"
    ) as provider:
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    fake_openai.assert_key_confined()
    fake_openai.assert_secret_confined("sk-real-openai-key-must-not-leak", [])


def test_compatible_needs_model_and_base_url() -> None:
    with pytest.raises(ValueError, match="model="):
        OpenAICompatibleProvider(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="base_url="):
        OpenAICompatibleProvider("llama")


def test_openrouter_headers_routing_and_reasoning_details(
    fake_openai: FakeOpenAI, toolset: tw.Toolset, session: tw.Session
) -> None:
    body = openai_chat.tool_calls_completion(W)
    details = [{"type": "reasoning.encrypted", "data": "abc", "index": 0}]
    body["choices"][0]["message"]["reasoning_details"] = details
    fake_openai.enqueue_chat(body)  # reasoning_details is OpenRouter's, not the SDK's
    enqueue_chat_stream(
        fake_openai, [openai_chat.OPENROUTER_COMMENT, *openai_chat.text_stream("done")]
    )
    with OpenRouterProvider(
        "google/gemini-3",
        api_key=fake_openai.default_api_key,
        base_url=fake_openai.base_url,
        app_url="https://example.org",
        app_name="toolwire tests",
        provider={"require_parameters": True},
    ) as provider:
        first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
        assert isinstance(first, tw.NeedsTools)
        call = first.round.expect_one()
        first.round.commit([call.call.result("sunny")])
        second = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=True)
    assert isinstance(second, tw.Finished)
    assert "done" == second.text
    bodies = validate_requests(fake_openai, ADAPTERS["openrouter"])
    assert {"require_parameters": True} == bodies[0]["provider"]
    assert details == bodies[1]["messages"][2]["reasoning_details"]
    request = fake_openai.requests[0]
    assert ("https://example.org", "toolwire tests") == (
        request.header("http-referer"),
        request.header("x-title"),
    )


# -- Responses -----------------------------------------------------------------------------


def test_responses_usage_and_incomplete_finish_reason(
    fake_openai: FakeOpenAI,
    responses: OpenAIResponsesProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    body = openai_responses.text_response(
        "partial", status="incomplete", usage=openai_responses.usage(50, 9, reasoning_tokens=4)
    )
    body["incomplete_details"] = {"reason": "max_output_tokens"}
    enqueue_response(fake_openai, body)
    reply = responses.generate(session, tw.resolve_turn(toolset))
    assert ("partial", "length") == (reply.text, reply.finish_reason)
    assert tw.Usage(50, 9, 0, 4) == reply.usage


def test_responses_refusal(
    fake_openai: FakeOpenAI,
    responses: OpenAIResponsesProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    item = openai_responses.message_item("")
    item["content"] = [{"type": "refusal", "refusal": "No."}]
    enqueue_response(fake_openai, openai_responses.response([item]))
    reply = responses.generate(session, tw.resolve_turn(toolset))
    assert ("No.", "refusal") == (reply.text, reply.finish_reason)


def test_responses_stream_keeps_reasoning_items_in_order(
    responses: OpenAIResponsesProvider, toolset: tw.Toolset
) -> None:
    resp = openai_responses.tool_calls_response(W, T, text="Checking.", reasoning=True)
    events = openai_responses.stream_events(resp["output"], size=3)
    turn = tw.resolve_turn(toolset)
    streamed, reply = decode_stream_bytes(responses, turn, [sse_bytes(events, named=True)])
    assert reply == responses._finish_reply(turn, responses.decode(resp))
    kinds = [i["type"] for i in reply.provider_state["openai-responses"]["items"]]
    assert ["reasoning", "message", "function_call", "function_call"] == kinds
    assert ["Checking."] == [
        "".join(e.text for e in streamed if isinstance(e, tw.adapters.TextDelta))
    ]


def test_responses_stream_with_an_empty_final_snapshot_is_assembled_from_events(
    responses: OpenAIResponsesProvider, toolset: tw.Toolset
) -> None:
    resp = openai_responses.tool_calls_response(W, T, text="Checking.", reasoning=True)
    events = openai_responses.stream_events(resp["output"], size=2)
    events[-1]["response"]["output"] = []
    turn = tw.resolve_turn(toolset)
    _, reply = decode_stream_bytes(responses, turn, [sse_bytes(events, named=True)])
    expected = responses.decode(resp)
    assert (expected.text, expected.tool_calls, expected.finish_reason) == (
        reply.text,
        reply.tool_calls,
        reply.finish_reason,
    )
    assert ["reasoning"] == [i["type"] for i in reply.provider_state["openai-responses"]["items"]]


def test_responses_streams_over_http(
    fake_openai: FakeOpenAI,
    responses: OpenAIResponsesProvider,
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    resp = openai_responses.tool_calls_response(W)
    enqueue_response_stream(fake_openai, openai_responses.stream_events(resp["output"], size=1))
    outcome = tw.run_turn(responses, session, tw.resolve_turn(toolset), stream=True)
    assert isinstance(outcome, tw.NeedsTools)
    assert [("call_w", W.arguments)] == [(c.id, c.arguments) for c in outcome.round.tool_calls]
    body = validate_requests(fake_openai, ADAPTERS["openai-responses"])[0]
    assert (False, ["reasoning.encrypted_content"], True) == (
        body["store"],
        body["include"],
        body["stream"],
    )


def test_extra_body_is_merged_without_overriding_the_adapter(
    fake_openai: FakeOpenAI, toolset: tw.Toolset, session: tw.Session
) -> None:
    enqueue_chat(fake_openai, openai_chat.text_completion("hi"))
    with OpenAIChatProvider(
        "m",
        api_key=fake_openai.default_api_key,
        base_url=fake_openai.base_url,
        extra_body={"temperature": 0.2, "model": "ignored"},
        system_role="developer",
    ) as provider:
        tw.run_turn(provider, session, tw.resolve_turn(toolset))
    body = validate_requests(fake_openai, ADAPTERS["openai"])[0]
    assert (0.2, "m", "developer") == (
        body["temperature"],
        body["model"],
        body["messages"][0]["role"],
    )
