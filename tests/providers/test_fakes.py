"""Tests of the provider fakes themselves.

Three layers: the server core over real sockets (httpx sync and async), the
canned builders parsed by the official SDK types, and the official SDK
clients driven against the fakes on 127.0.0.1 (which proves the fakes speak
the real protocol, and that the request validators accept what the SDKs send).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pydantic
import pytest
from fakes import (
    Call,
    CloseConnection,
    FakeAnthropic,
    FakeGemini,
    FakeOpenAI,
    FakeServer,
    JSONResponse,
    RawResponse,
    RecordedRequest,
    SSEResponse,
    anthropic_messages,
    encode_sse,
    errors,
    gemini,
    openai_chat,
    openai_responses,
    rechunk,
    sse_response,
    validate,
    validate_anthropic_request,
    validate_gemini_request,
    validate_openai_chat_request,
    validate_openai_responses_request,
)
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gtypes

WEATHER = Call.of("get_weather", {"city": "Paris"}, id="call_A")
TIME = Call.of("get_time", {"tz": "Europe/Paris", "format": "24h"}, id="call_B")

WEATHER_TOOL_OPENAI: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "d",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
WEATHER_TOOL_ANTHROPIC: dict[str, Any] = {
    "name": "get_weather",
    "description": "d",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def sse_data(lines: list[str]) -> list[str]:
    return [line[len("data: ") :] for line in lines if line.startswith("data: ")]


# ---------------------------------------------------------------------------
# The server core, over real sockets
# ---------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def test_records_method_path_query_headers_and_json(server: FakeServer) -> None:
    server.enqueue(JSONResponse({"ok": True}, status=201, headers={"x-extra": "1"}))
    with httpx.Client(base_url=server.base_url) as client:
        response = client.post(
            "/v1/things?alt=sse&x=1&x=2", json={"a": [1, 2]}, headers={"X-Custom": "yes"}
        )

    assert (
        response.status_code,
        response.json(),
        response.headers["x-extra"],
    ) == (201, {"ok": True}, "1")
    request = server.last_request
    assert (request.method, request.path) == ("POST", "/v1/things")
    assert request.query == {"alt": ["sse"], "x": ["1", "2"]}
    assert request.header("x-custom") == "yes"
    assert request.json == {"a": [1, 2]}


def test_queue_is_fifo_then_default_applies(server: FakeServer) -> None:
    server.enqueue(JSONResponse({"n": 1}), JSONResponse({"n": 2}))
    server.set_default(JSONResponse({"n": "default"}))
    with httpx.Client(base_url=server.base_url) as client:
        bodies = [client.post("/x").json()["n"] for _ in range(4)]

    assert bodies == [1, 2, "default", "default"]


def test_callable_responder_sees_the_request(server: FakeServer) -> None:
    def echo(request: RecordedRequest) -> JSONResponse:
        return JSONResponse({"you_sent": request.json, "path": request.path})

    server.enqueue(echo)
    with httpx.Client(base_url=server.base_url) as client:
        body = client.post("/echo", json={"k": "v"}).json()

    assert body == {"you_sent": {"k": "v"}, "path": "/echo"}


def test_nothing_enqueued_answers_418_and_is_reported(server: FakeServer) -> None:
    with httpx.Client(base_url=server.base_url) as client:
        response = client.post("/v1/chat/completions", json={})

    assert response.status_code == 418
    assert "nothing enqueued for POST /v1/chat/completions" in response.json()["error"]["message"]
    with pytest.raises(AssertionError) as excinfo:
        server.assert_all_consumed()
    assert "POST /v1/chat/completions arrived with nothing enqueued" in str(excinfo.value)


def test_unrequested_response_is_reported(server: FakeServer) -> None:
    server.enqueue(JSONResponse({}))

    with pytest.raises(AssertionError) as excinfo:
        server.assert_all_consumed()
    assert "1 enqueued response(s) were never requested" in str(excinfo.value)


def test_raw_response_keeps_bytes_and_content_type(server: FakeServer) -> None:
    server.enqueue(
        RawResponse(b"<html>502 Bad Gateway</html>", status=502, content_type="text/html")
    )
    with httpx.Client(base_url=server.base_url) as client:
        response = client.post("/x")

    assert (
        response.status_code,
        response.headers["content-type"],
        response.content,
    ) == (502, "text/html", b"<html>502 Bad Gateway</html>")


def test_sse_chunks_are_flushed_one_by_one(server: FakeServer) -> None:
    events = [encode_sse({"n": i}) for i in range(3)]
    server.enqueue(SSEResponse(chunks=tuple(events), chunk_delay=0.5))
    arrivals = []
    with httpx.Client(base_url=server.base_url) as client, client.stream("POST", "/s") as response:
        start = time.monotonic()
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append(time.monotonic() - start)

    assert len(arrivals) == 3
    assert arrivals[0] < 0.4 <= arrivals[1]
    assert arrivals[2] >= 0.9


def test_drop_after_truncates_the_stream(server: FakeServer) -> None:
    server.enqueue(SSEResponse(chunks=tuple(encode_sse({"n": i}) for i in range(5)), drop_after=2))
    received: list[str] = []
    with (
        httpx.Client(base_url=server.base_url) as client,
        client.stream("POST", "/s") as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        received.extend(response.iter_lines())

    assert sse_data(received) == ['{"n":0}', '{"n":1}']


def test_rechunk_splits_events_mid_line_and_mid_character(server: FakeServer) -> None:
    events = [encode_sse({"text": "héllo wörld"}, "message"), encode_sse("[DONE]")]
    server.enqueue(SSEResponse(chunks=rechunk(events, 1)))
    with httpx.Client(base_url=server.base_url) as client, client.stream("POST", "/s") as response:
        lines = list(response.iter_lines())

    assert sse_data(lines) == ['{"text":"héllo wörld"}', "[DONE]"]
    assert "event: message" in lines


def test_slow_response_makes_the_client_time_out(server: FakeServer) -> None:
    server.enqueue(JSONResponse({}, delay=5))
    with httpx.Client(base_url=server.base_url, timeout=0.2) as client:
        start = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.post("/slow")

    assert time.monotonic() - start < 2
    server.reset()  # wakes the sleeping handler


def test_close_connection_sends_no_response(server: FakeServer) -> None:
    server.enqueue(CloseConnection())
    with httpx.Client(base_url=server.base_url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/x", json={})

    assert len(server.requests) == 1


async def test_async_httpx_client_streams_and_runs_concurrently(server: FakeServer) -> None:
    server.set_default(lambda req: JSONResponse({"echo": req.json}, delay=0.5))
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        start = time.monotonic()
        responses = await asyncio.gather(*(client.post("/e", json=i) for i in range(5)))
        elapsed = time.monotonic() - start
        server.set_default(None)
        server.enqueue(sse_response([{"n": 1}, {"n": 2}], named=False, done=True))
        async with client.stream("POST", "/s") as stream:
            lines = [line async for line in stream.aiter_lines()]

    assert [r.json()["echo"] for r in responses] == [0, 1, 2, 3, 4]
    assert elapsed < 2.0  # served in parallel: one after another takes 2.5 s
    assert sse_data(lines) == ['{"n":1}', '{"n":2}', "[DONE]"]


def test_retry_headers_in_seconds_date_and_milliseconds() -> None:
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)

    assert errors.retry_headers(2) == {"retry-after": "2"}
    assert errors.retry_headers(when) == {"retry-after": "Wed, 02 Jan 2030 03:04:05 GMT"}
    assert errors.retry_headers(0.5, 500) == {"retry-after": "0.5", "retry-after-ms": "500"}


def test_secret_confinement_passes_for_the_auth_header_only(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    with httpx.Client() as client:
        client.post(
            f"{fake_openai.base_url}/chat/completions",
            json={"model": "m", "messages": []},
            headers={"authorization": f"Bearer {fake_openai.api_key}"},
        )

    fake_openai.assert_key_confined()


def test_secret_confinement_names_every_leak(fake_gemini: FakeGemini) -> None:
    key = fake_gemini.api_key
    assert key is not None
    fake_gemini.enqueue_generate(gemini.response([gemini.text_part("hi")]))
    with httpx.Client() as client:
        client.post(
            f"{fake_gemini.base_url}/v1beta/models/m:generateContent?key={key}",
            json={"contents": [], "labels": {"k": key}},
            headers={"x-debug": key},
        )

    with pytest.raises(AssertionError) as excinfo:
        fake_gemini.assert_key_confined()
    message = str(excinfo.value)
    assert "in the query string" in message
    assert "in header 'x-debug'" in message
    assert "in the body" in message


# ---------------------------------------------------------------------------
# Provider routes and credentials
# ---------------------------------------------------------------------------


def _auth(fake: Any, key: str | None) -> dict[str, str]:
    if isinstance(fake, FakeOpenAI):
        return {"authorization": f"Bearer {key}"} if key else {}
    if isinstance(fake, FakeAnthropic):
        return {"x-api-key": key, "anthropic-version": "2023-06-01"} if key else {}
    return {"x-goog-api-key": key} if key else {}


ROUTES = {
    "fake_openai": ["/v1/chat/completions", "/chat/completions", "/v1/responses"],
    "fake_anthropic": ["/v1/messages"],
    "fake_gemini": [
        "/v1beta/models/gemini-fake:generateContent",
        "/v1/models/gemini-fake:streamGenerateContent",
        "/v1/projects/p/locations/us-central1/publishers/google/models/g:generateContent",
    ],
}


@pytest.mark.parametrize(
    ("fixture", "path"), [(f, p) for f, paths in ROUTES.items() for p in paths]
)
def test_provider_routes_are_served(
    request: pytest.FixtureRequest, fixture: str, path: str
) -> None:
    fake = request.getfixturevalue(fixture)
    fake.enqueue(JSONResponse({"ok": True}))
    with httpx.Client(base_url=fake.root_url) as client:
        response = client.post(path, json={}, headers=_auth(fake, fake.api_key))

    assert (response.status_code, response.json()) == (200, {"ok": True})


@pytest.mark.parametrize(
    ("fixture", "error_key"),
    [("fake_openai", "error"), ("fake_anthropic", "error"), ("fake_gemini", "error")],
)
def test_unknown_route_gets_a_provider_404_and_keeps_the_queue(
    request: pytest.FixtureRequest, fixture: str, error_key: str
) -> None:
    fake = request.getfixturevalue(fixture)
    fake.enqueue(JSONResponse({"ok": True}))
    with httpx.Client(base_url=fake.root_url) as client:
        response = client.post("/v1/chat/completion", json={}, headers=_auth(fake, fake.api_key))

    assert response.status_code == 404
    assert error_key in response.json()
    assert fake.pending == 1
    fake.reset()


@pytest.mark.parametrize(
    ("fixture", "path", "status", "marker"),
    [
        ("fake_openai", "/v1/chat/completions", 401, "invalid_api_key"),
        ("fake_anthropic", "/v1/messages", 401, "authentication_error"),
        ("fake_gemini", "/v1beta/models/m:generateContent", 400, "API_KEY_INVALID"),
    ],
)
def test_wrong_api_key_is_rejected_like_the_provider(
    request: pytest.FixtureRequest, fixture: str, path: str, status: int, marker: str
) -> None:
    fake = request.getfixturevalue(fixture)
    with httpx.Client(base_url=fake.root_url) as client:
        response = client.post(path, json={}, headers=_auth(fake, "wrong-key"))

    assert status == response.status_code
    assert marker in response.text


def test_anthropic_requires_the_version_header(fake_anthropic: FakeAnthropic) -> None:
    with httpx.Client(base_url=fake_anthropic.root_url) as client:
        response = client.post(
            "/v1/messages", json={}, headers={"x-api-key": str(fake_anthropic.api_key)}
        )

    assert response.status_code == 400
    assert response.json()["error"]["message"] == "anthropic-version: header is required"


def test_api_key_check_can_be_switched_off(fake_openai: FakeOpenAI) -> None:
    fake_openai.api_key = None
    fake_openai.enqueue_chat(openai_chat.text_completion("hi"))
    with httpx.Client(base_url=fake_openai.base_url) as client:
        response = client.post("/chat/completions", json={})

    assert response.status_code == 200


def test_gemini_stream_without_alt_sse_is_a_json_array(fake_gemini: FakeGemini) -> None:
    chunks = gemini.stream_chunks([gemini.text_part("hello there")])
    fake_gemini.enqueue_generate_stream(chunks)
    with httpx.Client(base_url=fake_gemini.root_url) as client:
        response = client.post(
            "/v1beta/models/m:streamGenerateContent",
            json={},
            headers=_auth(fake_gemini, fake_gemini.api_key),
        )

    assert chunks == response.json()


# ---------------------------------------------------------------------------
# Builders parsed by the official SDK types (and no undeclared fields)
# ---------------------------------------------------------------------------

CHAT_COMPLETIONS = {
    "text": openai_chat.text_completion("Hello."),
    "one_call": openai_chat.tool_calls_completion(WEATHER),
    "parallel_calls": openai_chat.tool_calls_completion(WEATHER, TIME, content="Checking."),
    "length": openai_chat.text_completion("Hel", finish_reason="length"),
}

CHAT_STREAMS = {
    "text": openai_chat.text_stream("Hello there, world.", include_usage=True),
    "calls_split_1": openai_chat.tool_calls_stream(WEATHER, TIME, size=1),
    "calls_interleaved": openai_chat.tool_calls_stream(
        WEATHER, TIME, size=[3, 1, 7], interleave=True, include_usage=True
    ),
    "text_then_calls": openai_chat.tool_calls_stream(WEATHER, content="Let me check."),
    "whole_calls": openai_chat.whole_calls_stream(WEATHER, TIME),
    "whole_calls_one_chunk": openai_chat.whole_calls_stream(WEATHER, TIME, same_chunk=True),
    "shared_index": openai_chat.shared_index_stream(WEATHER, TIME, size=4),
    "no_finish_reason": openai_chat.tool_calls_stream(WEATHER, finish_reason=None),
    "finish_stop_on_tools": openai_chat.tool_calls_stream(WEATHER, finish_reason="stop"),
}


@pytest.mark.parametrize("name", sorted(CHAT_COMPLETIONS))
def test_chat_completion_builders_parse_as_chat_completion(name: str) -> None:
    validate.parse_openai_chat_completion(CHAT_COMPLETIONS[name])


@pytest.mark.parametrize("name", sorted(CHAT_STREAMS))
def test_chat_stream_builders_parse_as_chunks(name: str) -> None:
    for chunk in CHAT_STREAMS[name]:
        validate.parse_openai_chat_chunk(chunk)


def test_stream_ids_and_names_come_only_on_the_first_fragment() -> None:
    deltas = [
        d
        for c in openai_chat.tool_calls_stream(WEATHER, TIME, size=2, interleave=True)
        for choice in c["choices"]
        for d in choice["delta"].get("tool_calls", [])
    ]
    firsts = [d for d in deltas if "id" in d]

    assert [(d["index"], d["id"], d["function"]["name"]) for d in firsts] == [
        (0, "call_A", "get_weather"),
        (1, "call_B", "get_time"),
    ]
    assert all("name" not in d["function"] for d in deltas if "id" not in d)
    rebuilt = {0: "", 1: ""}
    for d in deltas:
        rebuilt[d["index"]] += d["function"]["arguments"]
    assert {0: WEATHER.arguments, 1: TIME.arguments} == rebuilt
    assert [d["index"] for d in deltas[:2]] == [0, 1]  # interleaved from the start


def test_shared_index_stream_reuses_index_zero_with_new_ids() -> None:
    deltas = [
        d
        for c in openai_chat.shared_index_stream(WEATHER, TIME)
        for choice in c["choices"]
        for d in choice["delta"].get("tool_calls", [])
    ]

    assert {0} == {d["index"] for d in deltas}
    assert [d["id"] for d in deltas if "id" in d] == ["call_A", "call_B"]


def test_usage_chunk_has_no_choices() -> None:
    last = openai_chat.text_stream("hi", include_usage=True)[-1]

    assert (last["choices"], last["usage"]["total_tokens"]) == ([], 19)


def test_missing_index_stream_is_outside_the_sdk_types_on_purpose() -> None:
    chunk = openai_chat.missing_index_stream(WEATHER)[1]

    with pytest.raises(pydantic.ValidationError, match="index"):
        validate.parse_openai_chat_chunk(chunk)


RESPONSES_OUTPUTS = {
    "text": openai_responses.text_response("Hello."),
    "calls": openai_responses.tool_calls_response(WEATHER, TIME),
    "reasoning_text_calls": openai_responses.tool_calls_response(
        WEATHER, text="Checking.", reasoning=True
    ),
}


@pytest.mark.parametrize("name", sorted(RESPONSES_OUTPUTS))
def test_responses_builders_parse_as_response(name: str) -> None:
    validate.parse_openai_response(RESPONSES_OUTPUTS[name])


@pytest.mark.parametrize("name", sorted(RESPONSES_OUTPUTS))
def test_responses_stream_events_parse_as_stream_events(name: str) -> None:
    events = openai_responses.stream_events(RESPONSES_OUTPUTS[name]["output"], size=2)

    for event in events:
        validate.parse_openai_response_event(event)
    assert list(range(len(events))) == [e["sequence_number"] for e in events]
    assert (events[0]["type"], events[-1]["type"]) == ("response.created", "response.completed")


def test_responses_argument_deltas_carry_item_id_not_call_id() -> None:
    events = openai_responses.stream_events(RESPONSES_OUTPUTS["calls"]["output"], size=3)
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]

    assert {"fc_fake0", "fc_fake1"} == {e["item_id"] for e in deltas}
    assert all("call_id" not in e for e in deltas)
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert [i["call_id"] for i in added] == ["call_A", "call_B"]


@pytest.mark.parametrize("status", ["incomplete", "failed"])
def test_responses_stream_can_end_incomplete_or_failed(status: str) -> None:
    events = openai_responses.stream_events(
        RESPONSES_OUTPUTS["text"]["output"], final_status=status
    )

    validate.parse_openai_response_event(events[-1])
    assert f"response.{status}" == events[-1]["type"]


def test_responses_error_event_parses() -> None:
    validate.parse_openai_response_event(openai_responses.error_event())


ANTHROPIC_MESSAGES = {
    "text": anthropic_messages.text_message("Hello."),
    "tool_use": anthropic_messages.tool_use_message(("get_weather", {"city": "Paris"})),
    "thinking_text_parallel": anthropic_messages.tool_use_message(
        ("get_weather", {"city": "Paris"}),
        ("get_time", {}),
        text="Checking.",
        thinking="The user wants weather and time.",
    ),
    "redacted": anthropic_messages.message(
        [anthropic_messages.redacted_thinking_block(), anthropic_messages.text_block("Hi")]
    ),
    "max_tokens": anthropic_messages.text_message("Hel", stop_reason="max_tokens"),
}


@pytest.mark.parametrize("name", sorted(ANTHROPIC_MESSAGES))
def test_anthropic_builders_parse_as_message(name: str) -> None:
    validate.parse_anthropic_message(ANTHROPIC_MESSAGES[name])


@pytest.mark.parametrize("name", sorted(ANTHROPIC_MESSAGES))
def test_anthropic_stream_events_parse_as_raw_stream_events(name: str) -> None:
    events = anthropic_messages.stream_events(ANTHROPIC_MESSAGES[name]["content"], size=3)
    events.insert(3, anthropic_messages.ping_event())

    for event in events:
        validate.parse_anthropic_event(event)
    assert (events[0]["type"], events[-1]["type"]) == ("message_start", "message_stop")


def test_anthropic_tool_use_streams_from_empty_input() -> None:
    content = ANTHROPIC_MESSAGES["tool_use"]["content"]
    events = anthropic_messages.stream_events(content, size=4)
    start = next(e for e in events if e["type"] == "content_block_start")
    fragments = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]

    assert start["content_block"]["input"] == {}
    assert fragments[0] == ""
    assert json.loads("".join(fragments)) == {"city": "Paris"}


def test_anthropic_thinking_ends_with_a_signature_delta() -> None:
    content = ANTHROPIC_MESSAGES["thinking_text_parallel"]["content"]
    events = anthropic_messages.stream_events(content)
    thinking = [e["delta"] for e in events if e.get("index") == 0 and "delta" in e]

    assert thinking[-1]["type"] == "signature_delta"
    assert {"thinking_delta"} == {d["type"] for d in thinking[:-1]}


def test_anthropic_error_event_parses() -> None:
    validate.parse_anthropic_event(anthropic_messages.error_event())


GEMINI_RESPONSES = {
    "text": gemini.response([gemini.text_part("Hello.")]),
    "call_with_id_and_signature": gemini.response(
        [
            gemini.function_call_part(
                "get_weather", {"city": "Paris"}, id="fc_1", thought_signature=gemini.SIGNATURE
            )
        ]
    ),
    "parallel_calls_without_ids": gemini.response(
        [
            gemini.function_call_part("get_weather", {"city": "Paris"}),
            gemini.function_call_part("get_weather", {"city": "Rome"}),
        ]
    ),
    "thought_and_text": gemini.response(
        [gemini.thought_part("Thinking..."), gemini.text_part("Hi", thought_signature="c2ln")],
        usage=gemini.usage_metadata(thoughts=5),
    ),
    "malformed_call": gemini.response([], finish_reason="MALFORMED_FUNCTION_CALL"),
}


@pytest.mark.parametrize("name", sorted(GEMINI_RESPONSES))
def test_gemini_builders_parse_as_generate_content_response(name: str) -> None:
    validate.parse_gemini_response(GEMINI_RESPONSES[name])


@pytest.mark.parametrize("name", sorted(GEMINI_RESPONSES))
def test_gemini_stream_chunks_parse(name: str) -> None:
    parts = GEMINI_RESPONSES[name]["candidates"][0]["content"]["parts"]
    for chunk in gemini.stream_chunks(parts, size=2):
        validate.parse_gemini_response(chunk)


def test_gemini_function_call_without_id_has_no_id() -> None:
    parsed = validate.parse_gemini_response(GEMINI_RESPONSES["parallel_calls_without_ids"])

    assert [c.id for c in parsed.function_calls or []] == [None, None]


def test_gemini_validation_rejects_an_unknown_field() -> None:
    bad = copy.deepcopy(GEMINI_RESPONSES["text"])
    bad["candidates"][0]["finishReasn"] = "STOP"

    with pytest.raises(pydantic.ValidationError, match="finishReasn"):
        validate.parse_gemini_response(bad)


def test_no_extra_fields_check_catches_a_typo_in_a_canned_response() -> None:
    bad = copy.deepcopy(CHAT_COMPLETIONS["one_call"])
    bad["choices"][0]["message"]["tool_call"] = bad["choices"][0]["message"].pop("tool_calls")

    with pytest.raises(AssertionError, match="ChatCompletionMessage has no field 'tool_call'"):
        validate.parse_openai_chat_completion(bad)


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
def test_error_bodies_parse_as_sdk_error_types(kind: errors.ErrorKind) -> None:
    validate.parse_openai_error(errors.openai_error(kind).body)
    validate.parse_anthropic_error(errors.anthropic_error(kind).body)
    body = errors.gemini_error(kind).body
    assert {"code", "message", "status"} <= set(body["error"])


def test_unknown_error_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown error kind 'teapot'"):
        errors.openai_error("teapot")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# The official SDK clients against the fakes
# ---------------------------------------------------------------------------


@pytest.fixture
def openai_client(fake_openai: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=fake_openai.base_url, api_key=fake_openai.api_key, max_retries=0
    ) as client:
        yield client


@pytest.fixture
def anthropic_client(fake_anthropic: FakeAnthropic) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=fake_anthropic.base_url, api_key=fake_anthropic.api_key, max_retries=0
    ) as client:
        yield client


@pytest.fixture
def gemini_client(fake_gemini: FakeGemini) -> Iterator[genai.Client]:
    options = gtypes.HttpOptions(
        base_url=fake_gemini.base_url, retry_options=gtypes.HttpRetryOptions(attempts=1)
    )
    with genai.Client(api_key=fake_gemini.api_key, http_options=options) as client:
        yield client


def _chat_kwargs(*, strict: bool = True) -> dict[str, Any]:
    tool = copy.deepcopy(WEATHER_TOOL_OPENAI)
    tool["function"]["strict"] = strict
    return {
        "model": "gpt-fake",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [tool],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }


def test_openai_sdk_reads_a_chat_completion_with_calls(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    fake_openai.enqueue_chat(openai_chat.tool_calls_completion(WEATHER, TIME))

    completion = openai_client.chat.completions.create(**_chat_kwargs())

    calls = completion.choices[0].message.tool_calls or []
    assert [
        ("call_A", "get_weather", WEATHER.arguments),
        ("call_B", "get_time", TIME.arguments),
    ] == [
        (c.id, c.function.name, c.function.arguments)  # type: ignore[union-attr]
        for c in calls
    ]
    request = fake_openai.last_request
    assert request.path == "/v1/chat/completions"
    validate_openai_chat_request(request.json)
    fake_openai.assert_key_confined()


@pytest.mark.parametrize(
    "name", ["calls_split_1", "calls_interleaved", "whole_calls", "whole_calls_one_chunk"]
)
def test_openai_sdk_accumulates_chat_tool_call_streams(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI, name: str
) -> None:
    fake_openai.enqueue_chat_stream(CHAT_STREAMS[name])

    # strict=False: the SDK's stream helper parses a strict tool's arguments
    # as soon as the next index starts, which breaks on interleaved calls (the
    # real OpenAI API never interleaves; other servers do).
    with openai_client.chat.completions.stream(**_chat_kwargs(strict=False)) as stream:
        final = stream.get_final_completion()

    calls = final.choices[0].message.tool_calls or []
    assert [("call_A", WEATHER.arguments), ("call_B", TIME.arguments)] == [
        (c.id, c.function.arguments)  # type: ignore[union-attr]
        for c in calls
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    body = fake_openai.last_request.json
    assert True is body["stream"]
    validate_openai_chat_request(body)


def test_openai_sdk_reads_stream_usage_chunk(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    fake_openai.enqueue_chat_stream(CHAT_STREAMS["text"])

    stream = openai_client.chat.completions.create(
        **_chat_kwargs(), stream=True, stream_options={"include_usage": True}
    )
    with stream:
        chunks = list(stream)

    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        == "Hello there, world."
    )
    assert chunks[-1].usage.total_tokens == 19  # type: ignore[union-attr]
    validate_openai_chat_request(fake_openai.last_request.json)


def test_openai_sdk_raises_on_a_mid_stream_error(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    chunks = [*openai_chat.text_stream("Hel", finish_reason=None)]
    fake_openai.enqueue_chat_stream(
        [openai_chat.OPENROUTER_COMMENT, *chunks, openai_chat.stream_error_event("Upstream died")]
    )

    stream = openai_client.chat.completions.create(**_chat_kwargs(), stream=True)
    with stream, pytest.raises(openai.APIError, match="Upstream died"):
        list(stream)


async def test_async_openai_sdk_streams_against_the_threaded_server(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.enqueue_chat_stream(CHAT_STREAMS["calls_interleaved"], chunk_delay=0.01)

    async with (
        openai.AsyncOpenAI(
            base_url=fake_openai.base_url, api_key=fake_openai.api_key, max_retries=0
        ) as client,
        client.chat.completions.stream(**_chat_kwargs(strict=False)) as stream,
    ):
        final = await stream.get_final_completion()

    assert [
        c.function.name  # type: ignore[union-attr]
        for c in final.choices[0].message.tool_calls or []
    ] == ["get_weather", "get_time"]


def _responses_kwargs() -> dict[str, Any]:
    return {
        "model": "o4-mini",
        "input": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": WEATHER_TOOL_OPENAI["function"]["parameters"],
                "strict": True,
            }
        ],
        "include": ["reasoning.encrypted_content"],
    }


def test_openai_sdk_reads_a_responses_object(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    fake_openai.enqueue_response(RESPONSES_OUTPUTS["reasoning_text_calls"])

    response = openai_client.responses.create(**_responses_kwargs())

    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    assert response.output[0].encrypted_content == "gAAAAABfake-encrypted-reasoning=="  # type: ignore[union-attr]
    assert response.output[2].call_id == "call_A"  # type: ignore[union-attr]
    assert fake_openai.last_request.path == "/v1/responses"
    validate_openai_responses_request(fake_openai.last_request.json)


def test_openai_sdk_accumulates_a_responses_stream(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    output = RESPONSES_OUTPUTS["reasoning_text_calls"]["output"]
    fake_openai.enqueue_response_stream(openai_responses.stream_events(output, size=2))

    with openai_client.responses.stream(**_responses_kwargs()) as stream:
        final = stream.get_final_response()

    call = final.output[2]
    assert ("function_call", "call_A", WEATHER.arguments) == (
        call.type,
        call.call_id,  # type: ignore[union-attr]
        call.arguments,  # type: ignore[union-attr]
    )
    assert final.output_text == "Checking."
    validate_openai_responses_request(fake_openai.last_request.json)


OPENAI_ERRORS = {
    "auth": openai.AuthenticationError,
    "permission": openai.PermissionDeniedError,
    "not_found": openai.NotFoundError,
    "rate_limit": openai.RateLimitError,
    "server": openai.InternalServerError,
    "overloaded": openai.InternalServerError,
    "context_length": openai.BadRequestError,
    "bad_request": openai.BadRequestError,
}


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
def test_openai_sdk_maps_fake_errors(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI, kind: errors.ErrorKind
) -> None:
    fake_openai.enqueue_error(kind)

    with pytest.raises(OPENAI_ERRORS[kind]) as excinfo:
        openai_client.chat.completions.create(**_chat_kwargs())

    assert errors.openai_error(kind).body["error"]["code"] == excinfo.value.code


def test_openai_sdk_honours_retry_after_ms_from_the_fake(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue_error("rate_limit", retry_after_ms=50)
    fake_openai.enqueue_chat(openai_chat.text_completion("Done."))

    with openai.OpenAI(
        base_url=fake_openai.base_url, api_key=fake_openai.api_key, max_retries=1
    ) as client:
        completion = client.chat.completions.create(**_chat_kwargs())

    assert completion.choices[0].message.content == "Done."
    assert len(fake_openai.requests) == 2


def test_openai_sdk_sees_a_dropped_stream_as_an_error(
    fake_openai: FakeOpenAI, openai_client: openai.OpenAI
) -> None:
    fake_openai.enqueue_chat_stream(CHAT_STREAMS["calls_split_1"], drop_after=5)

    stream = openai_client.chat.completions.create(**_chat_kwargs(), stream=True)
    with stream, pytest.raises(openai.APIConnectionError):
        list(stream)


def _anthropic_kwargs() -> dict[str, Any]:
    return {
        "model": "claude-fake",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER_TOOL_ANTHROPIC],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": False},
    }


def test_anthropic_sdk_reads_a_message(
    fake_anthropic: FakeAnthropic, anthropic_client: anthropic.Anthropic
) -> None:
    fake_anthropic.enqueue_message(ANTHROPIC_MESSAGES["thinking_text_parallel"])

    message = anthropic_client.messages.create(**_anthropic_kwargs())

    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert (message.stop_reason, message.content[2].input) == ("tool_use", {"city": "Paris"})  # type: ignore[union-attr]
    request = fake_anthropic.last_request
    assert request.header("anthropic-version")
    validate_anthropic_request(request.json)
    fake_anthropic.assert_key_confined()


def test_anthropic_sdk_accumulates_a_stream(
    fake_anthropic: FakeAnthropic, anthropic_client: anthropic.Anthropic
) -> None:
    content = ANTHROPIC_MESSAGES["thinking_text_parallel"]["content"]
    fake_anthropic.enqueue_message_stream(anthropic_messages.stream_events(content, size=1))

    with anthropic_client.messages.stream(**_anthropic_kwargs()) as stream:
        final = stream.get_final_message()

    assert json.loads(json.dumps(content)) == [
        b.model_dump(exclude_none=True, exclude_unset=False)
        | ({"citations": None} if b.type == "text" else {})
        for b in final.content
    ]
    assert final.stop_reason == "tool_use"
    validate_anthropic_request(fake_anthropic.last_request.json)


def test_anthropic_sdk_raises_on_an_error_event(
    fake_anthropic: FakeAnthropic, anthropic_client: anthropic.Anthropic
) -> None:
    events = anthropic_messages.stream_events(ANTHROPIC_MESSAGES["text"]["content"])
    fake_anthropic.enqueue_message_stream([*events[:3], anthropic_messages.error_event()])

    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        anthropic_client.messages.stream(**_anthropic_kwargs()) as stream,
    ):
        stream.get_final_message()


ANTHROPIC_ERRORS = {
    "auth": anthropic.AuthenticationError,
    "permission": anthropic.PermissionDeniedError,
    "not_found": anthropic.NotFoundError,
    "rate_limit": anthropic.RateLimitError,
    "server": anthropic.InternalServerError,
    "overloaded": anthropic.OverloadedError,
    "context_length": anthropic.BadRequestError,
    "bad_request": anthropic.BadRequestError,
}


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
def test_anthropic_sdk_maps_fake_errors(
    fake_anthropic: FakeAnthropic, anthropic_client: anthropic.Anthropic, kind: errors.ErrorKind
) -> None:
    fake_anthropic.enqueue_error(kind, retry_after=3)

    with pytest.raises(ANTHROPIC_ERRORS[kind]) as excinfo:
        anthropic_client.messages.create(**_anthropic_kwargs())

    assert excinfo.value.response.headers["retry-after"] == "3"
    assert errors.anthropic_error(kind).body["error"]["message"] in str(excinfo.value)


def _gemini_config() -> gtypes.GenerateContentConfig:
    return gtypes.GenerateContentConfig(
        tools=[
            gtypes.Tool(
                function_declarations=[
                    gtypes.FunctionDeclaration(
                        name="get_weather",
                        description="d",
                        parameters_json_schema=WEATHER_TOOL_ANTHROPIC["input_schema"],
                    )
                ]
            )
        ],
        tool_config=gtypes.ToolConfig(
            function_calling_config=gtypes.FunctionCallingConfig(
                mode=gtypes.FunctionCallingConfigMode.ANY,
                allowed_function_names=["get_weather"],
            )
        ),
        automatic_function_calling=gtypes.AutomaticFunctionCallingConfig(disable=True),
    )


def test_gemini_sdk_reads_function_calls(
    fake_gemini: FakeGemini, gemini_client: genai.Client
) -> None:
    fake_gemini.enqueue_generate(GEMINI_RESPONSES["call_with_id_and_signature"])

    response = gemini_client.models.generate_content(
        model="gemini-fake", contents="Weather in Paris?", config=_gemini_config()
    )

    part = response.candidates[0].content.parts[0]  # type: ignore[index,union-attr]
    assert (
        part.function_call.name,  # type: ignore[union-attr]
        part.function_call.args,  # type: ignore[union-attr]
        part.function_call.id,  # type: ignore[union-attr]
    ) == ("get_weather", {"city": "Paris"}, "fc_1")
    assert part.thought_signature == b"signature-fake"
    request = fake_gemini.last_request
    assert request.path.endswith("/models/gemini-fake:generateContent")
    validate_gemini_request(request.json)
    fake_gemini.assert_key_confined()


def test_gemini_sdk_reads_a_stream(fake_gemini: FakeGemini, gemini_client: genai.Client) -> None:
    parts = [
        gemini.text_part("Let me check the weather."),
        gemini.function_call_part("get_weather", {"city": "Paris"}),
        gemini.function_call_part("get_weather", {"city": "Rome"}),
    ]
    fake_gemini.enqueue_generate_stream(gemini.stream_chunks(parts, size=4))

    chunks = list(
        gemini_client.models.generate_content_stream(
            model="gemini-fake", contents="Weather?", config=_gemini_config()
        )
    )

    assert (
        "".join(c.text or "" for c in chunks if not c.function_calls) == "Let me check the weather."
    )
    calls = [fc for c in chunks for fc in c.function_calls or []]
    assert [fc.args for fc in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert chunks[-1].candidates[0].finish_reason == "STOP"  # type: ignore[index]
    request = fake_gemini.last_request
    assert (
        request.query.get("alt"),
        request.path.endswith(":streamGenerateContent"),
    ) == (["sse"], True)
    validate_gemini_request(request.json)


GEMINI_ERRORS: dict[str, tuple[type[Exception], int]] = {
    "auth": (genai_errors.ClientError, 400),
    "permission": (genai_errors.ClientError, 403),
    "not_found": (genai_errors.ClientError, 404),
    "rate_limit": (genai_errors.ClientError, 429),
    "server": (genai_errors.ServerError, 500),
    "overloaded": (genai_errors.ServerError, 503),
    "context_length": (genai_errors.ClientError, 400),
    "bad_request": (genai_errors.ClientError, 400),
}


@pytest.mark.parametrize("kind", errors.ERROR_KINDS)
def test_gemini_sdk_maps_fake_errors(
    fake_gemini: FakeGemini, gemini_client: genai.Client, kind: errors.ErrorKind
) -> None:
    fake_gemini.enqueue_error(kind, retry_after=2 if kind == "rate_limit" else None)
    exc_type, code = GEMINI_ERRORS[kind]

    with pytest.raises(exc_type) as excinfo:
        gemini_client.models.generate_content(
            model="gemini-fake", contents="hi", config=_gemini_config()
        )

    error = excinfo.value
    assert code == error.code  # type: ignore[attr-defined]
    assert errors.gemini_error(kind).body["error"]["status"] == error.status  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# Request validators: good bodies pass, misspelled or mistyped fields fail
# ---------------------------------------------------------------------------

GOOD_CHAT: dict[str, Any] = {
    "model": "gpt-x",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ],
    "tools": [WEATHER_TOOL_OPENAI],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "parallel_tool_calls": False,
}
GOOD_RESPONSES: dict[str, Any] = {
    "model": "gpt-x",
    "input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_0", "output": "sunny"},
    ],
    "tools": [
        {
            "type": "function",
            "name": "get_weather",
            "parameters": WEATHER_TOOL_OPENAI["function"]["parameters"],
            "strict": True,
        }
    ],
    "tool_choice": {"type": "function", "name": "get_weather"},
}
GOOD_ANTHROPIC: dict[str, Any] = {
    "model": "claude-x",
    "max_tokens": 1024,
    "system": "Be brief.",
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15 degrees"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ],
    "tools": [WEATHER_TOOL_ANTHROPIC],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
}
GOOD_GEMINI: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                        "id": "fc_1",
                    },
                    "thoughtSignature": "c2ln",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "id": "fc_1",
                        "response": {"output": "15C"},
                    }
                }
            ],
        },
    ],
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "d",
                    "parameters_json_schema": WEATHER_TOOL_ANTHROPIC["input_schema"],
                }
            ]
        }
    ],
    "toolConfig": {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    },
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "generationConfig": {"temperature": 0.2, "thinkingConfig": {"includeThoughts": True}},
}

VALIDATORS: dict[str, tuple[Callable[[Any], None], dict[str, Any]]] = {
    "openai_chat": (validate_openai_chat_request, GOOD_CHAT),
    "openai_responses": (validate_openai_responses_request, GOOD_RESPONSES),
    "anthropic": (validate_anthropic_request, GOOD_ANTHROPIC),
    "gemini": (validate_gemini_request, GOOD_GEMINI),
}


@pytest.mark.parametrize("name", sorted(VALIDATORS))
def test_validators_accept_a_good_body(name: str) -> None:
    validator, body = VALIDATORS[name]

    validator(copy.deepcopy(body))


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(body: dict[str, Any]) -> None:
        target = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _rename(path: list[Any], new: str) -> Callable[[dict[str, Any]], None]:
    def mutate(body: dict[str, Any]) -> None:
        target = body
        for key in path[:-1]:
            target = target[key]
        target[new] = target.pop(path[-1])

    return mutate


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(body: dict[str, Any]) -> None:
        target = body
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


BAD_BODIES: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    # (validator, case id, mutation, expected fragment of the message)
    (
        "openai_chat",
        "misspelled_top_level",
        _rename(["tool_choice"], "tool_choise"),
        "unknown key 'tool_choise'",
    ),
    (
        "openai_chat",
        "mistyped_flag",
        _set(["parallel_tool_calls"], "yes"),
        "$.parallel_tool_calls: expected a boolean",
    ),
    (
        "openai_chat",
        "misspelled_nested",
        _rename(["tools", 0, "function", "parameters"], "parmeters"),
        "$.tools[0].function: unknown key 'parmeters' for FunctionDefinition",
    ),
    (
        "openai_chat",
        "arguments_as_object",
        _set(["messages", 2, "tool_calls", 0, "function", "arguments"], {"a": 1}),
        "$.messages[2].tool_calls[0].function.arguments: expected a string",
    ),
    (
        "openai_chat",
        "tool_message_without_id",
        _drop(["messages", 3, "tool_call_id"]),
        "$.messages[3]: missing required key 'tool_call_id'",
    ),
    (
        "openai_chat",
        "tool_choice_any",
        _set(["tool_choice"], "any"),
        "'none', 'auto' or 'required'",
    ),
    (
        "openai_responses",
        "chat_shaped_tool",
        _set(["tools", 0], WEATHER_TOOL_OPENAI),
        "$.tools[0]: unknown key 'function' for FunctionToolParam",
    ),
    (
        "openai_responses",
        "output_item_typo",
        _rename(["input", 2, "call_id"], "tool_call_id"),
        "$.input[2]: unknown key 'tool_call_id' for FunctionCallOutput",
    ),
    (
        "anthropic",
        "tool_choice_required",
        _set(["tool_choice"], {"type": "required"}),
        "tool_choice",
    ),
    (
        "anthropic",
        "tool_result_without_id",
        _drop(["messages", 2, "content", 0, "tool_use_id"]),
        "$.messages[2].content[0]: missing required key 'tool_use_id'",
    ),
    (
        "anthropic",
        "input_schema_typo",
        _rename(["tools", 0, "input_schema"], "inputSchema"),
        "$.tools[0]: missing required key 'input_schema' for ToolParam",
    ),
    (
        "anthropic",
        "max_tokens_string",
        _set(["max_tokens"], "1024"),
        "$.max_tokens: expected an integer",
    ),
    (
        "gemini",
        "misspelled_top_level",
        _rename(["toolConfig"], "toolConfg"),
        "unknown key 'toolConfg'",
    ),
    (
        "gemini",
        "declarations_typo",
        _rename(["tools", 0, "functionDeclarations"], "functionDeclaration"),
        "$.tools[0].functionDeclaration",
    ),
    (
        "gemini",
        "bad_mode",
        _set(["toolConfig", "functionCallingConfig", "mode"], "REQUIRED"),
        "$.toolConfig: REQUIRED is not a valid FunctionCallingConfigMode",
    ),
    (
        "gemini",
        "part_typo",
        _rename(["contents", 1, "parts", 0, "functionCall"], "function_cal"),
        "$.contents[1].parts[0].function_cal",
    ),
    ("gemini", "missing_contents", _drop(["contents"]), "missing required key 'contents'"),
]


@pytest.mark.parametrize(
    ("name", "mutate", "fragment"),
    [pytest.param(n, m, f, id=f"{n}-{case}") for n, case, m, f in BAD_BODIES],
)
def test_validators_reject_a_bad_body_with_a_clear_message(
    name: str, mutate: Callable[[dict[str, Any]], None], fragment: str
) -> None:
    validator, good = VALIDATORS[name]
    body = copy.deepcopy(good)
    mutate(body)

    with pytest.raises(AssertionError) as excinfo:
        validator(body)
    assert fragment in str(excinfo.value)


def test_validator_picks_the_streaming_params_when_stream_is_true() -> None:
    body = {**copy.deepcopy(GOOD_CHAT), "stream": True, "stream_options": {"include_usage": True}}

    validate_openai_chat_request(body)
    with pytest.raises(AssertionError, match="stream_options: unknown key 'include_usag'"):
        validate_openai_chat_request({**body, "stream_options": {"include_usag": True}})


def test_fixture_teardown_reports_leftovers_only_when_the_test_passed(tmp_path: Path) -> None:
    here = Path(__file__).parent
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text((here / "conftest.py").read_text())
    (tmp_path / "test_leftover.py").write_text(
        "from fakes import openai_chat\n"
        "\n"
        "def test_passes_but_leaves_a_response(fake_openai):\n"
        "    fake_openai.enqueue_chat(openai_chat.text_completion('never requested'))\n"
        "\n"
        "def test_fails_and_leaves_a_response(fake_openai):\n"
        "    fake_openai.enqueue_chat(openai_chat.text_completion('never requested'))\n"
        "    assert False, 'the real failure'\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        # No third-party plugins: the inner run needs none, and loading them
        # (langsmith, hypothesis...) costs seconds.
        env={**os.environ, "PYTHONPATH": str(here), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert "1 failed, 1 passed, 1 error" in result.stdout, result.stdout
    assert "ERROR at teardown of test_passes_but_leaves_a_response" in result.stdout
    assert "1 enqueued response(s) were never requested" in result.stdout
