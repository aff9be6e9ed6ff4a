"""The full tool loop over real HTTP against the fake Gemini server, sync and async,
streaming or not; every request body is checked against google-genai's types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from _gemini_support import enqueue_generate, enqueue_stream, validate_requests
from fakes import FakeGemini, gemini

import toolwire as tw
from toolwire_gemini import GeminiProvider

SIG = "c2lnbmF0dXJlLWZha2U="
SIG2 = "b3RoZXItc2lnbmF0dXJl"

CALL_PARTS = [
    gemini.function_call_part("get_weather", {"city": "Paris"}, id="fc_w", thought_signature=SIG),
    gemini.function_call_part("get_time", {"zone": "Europe/Paris"}, id="fc_t"),
]


def _enqueue(fake: FakeGemini, parts: list[dict[str, Any]], *, stream: bool) -> None:
    if stream:
        enqueue_stream(fake, gemini.stream_chunks(parts))
    else:
        enqueue_generate(fake, gemini.response(parts))


def _results(round_: tw.ToolRound) -> list[tw.ToolResult]:
    return [typed.complete(typed.tool.fn(**dict(typed.input))) for typed in round_.calls]


def _check_second_request(bodies: list[dict[str, Any]]) -> None:
    second = bodies[1]
    assert {"parts": [{"text": "You are terse."}]} == second["systemInstruction"]
    contents = second["contents"]
    assert ["user", "model", "user"] == [c["role"] for c in contents]
    assert CALL_PARTS == contents[1]["parts"]
    assert [
        {
            "functionResponse": {
                "name": "get_weather",
                "id": "fc_w",
                "response": {"output": "sunny in Paris for 1 days"},
            }
        },
        {
            "functionResponse": {
                "name": "get_time",
                "id": "fc_t",
                "response": {"output": "12:00 in Europe/Paris"},
            }
        },
    ] == contents[2]["parts"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_full_tool_loop_sync(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = make()
    _enqueue(fake_gemini, CALL_PARTS, stream=stream)
    _enqueue(fake_gemini, [gemini.text_part("Sunny, and it is noon.")], stream=stream)
    events: list[tw.adapters.StreamEvent] = []
    on_event = events.append if stream else None

    first = tw.run_turn(
        provider, session, tw.resolve_turn(toolset), stream=stream, on_event=on_event
    )
    assert isinstance(first, tw.NeedsTools)
    assert ["fc_w", "fc_t"] == [c.id for c in first.round.tool_calls]
    assert ['{"city":"Paris"}', '{"zone":"Europe/Paris"}'] == [
        c.arguments for c in first.round.tool_calls
    ]
    assert "tool_calls" == first.round.reply.finish_reason
    first.round.commit(_results(first.round))
    second = tw.run_turn(
        provider, session, tw.resolve_turn(toolset), stream=stream, on_event=on_event
    )

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    assert 5 == len(session)
    bodies = validate_requests(fake_gemini)
    _check_second_request(bodies)
    expected_path = ":streamGenerateContent" if stream else ":generateContent"
    assert all(r.path == f"/v1beta/models/gemini-fake{expected_path}" for r in fake_gemini.requests)
    if stream:
        assert all(["sse"] == r.query["alt"] for r in fake_gemini.requests)
        assert "Sunny, and it is noon." == "".join(
            e.text for e in events if isinstance(e, tw.adapters.TextDelta)
        )
    fake_gemini.assert_key_confined()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_full_tool_loop_async(
    fake_gemini: FakeGemini,
    amake: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    provider = amake()
    _enqueue(fake_gemini, CALL_PARTS, stream=stream)
    _enqueue(fake_gemini, [gemini.text_part("Sunny, and it is noon.")], stream=stream)

    first = await tw.arun_turn(provider, session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(first, tw.NeedsTools)
    first.round.commit(_results(first.round))
    second = await tw.arun_turn(provider, session, tw.resolve_turn(toolset), stream=stream)

    assert isinstance(second, tw.Finished)
    assert "Sunny, and it is noon." == second.text
    _check_second_request(validate_requests(fake_gemini))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_same_name_parallel_calls_without_ids_get_distinct_deterministic_ids(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    parts = [
        gemini.function_call_part("get_weather", {"city": "Paris"}),
        gemini.function_call_part("get_weather", {"city": "Paris"}),
        gemini.function_call_part("get_weather", {"city": "Rome"}),
    ]
    provider = make()
    _enqueue(fake_gemini, parts, stream=stream)
    _enqueue(fake_gemini, parts, stream=stream)

    first = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)
    again = tw.run_turn(
        provider, tw.Session(id="other").add_user("x"), tw.resolve_turn(toolset), stream=stream
    )

    assert isinstance(first, tw.NeedsTools)
    assert isinstance(again, tw.NeedsTools)
    ids = [c.id for c in first.round.tool_calls]
    assert 3 == len(set(ids))
    assert ids == [c.id for c in again.round.tool_calls]
    assert 3 == len(first.round.calls)


def test_reused_ids_are_made_distinct_and_sent_back_as_the_model_gave_them(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    parts = [
        gemini.function_call_part("get_weather", {"city": "Paris"}, id="dup"),
        gemini.function_call_part("get_weather", {"city": "Rome"}, id="dup"),
    ]
    provider = make()
    enqueue_generate(fake_gemini, gemini.response(parts))
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("ok")]))

    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    ids = [c.id for c in first.round.tool_calls]
    assert "dup" == ids[0]
    assert "dup" != ids[1]
    first.round.commit(_results(first.round))
    tw.run_turn(provider, session, tw.resolve_turn(toolset))

    sent = validate_requests(fake_gemini)[1]["contents"]
    assert parts == sent[1]["parts"]
    assert ["dup", "dup"] == [p["functionResponse"]["id"] for p in sent[2]["parts"]]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_thought_signatures_survive_session_json_and_are_sent_back_identical(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    stream: bool,
) -> None:
    parts = [
        gemini.thought_part("Thinking about the weather."),
        gemini.text_part("Let me check.", thought_signature=SIG2),
        gemini.function_call_part("get_weather", {"city": "Paris"}, thought_signature=SIG),
        gemini.function_call_part("get_weather", {"city": "Oslo"}),
    ]
    provider = make()
    _enqueue(fake_gemini, parts, stream=stream)
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Done.")]))

    first = tw.run_turn(provider, session, tw.resolve_turn(toolset), stream=stream)
    assert isinstance(first, tw.NeedsTools)
    assert "Let me check." == first.round.message.text
    first.round.commit(_results(first.round))
    restored = tw.Session.from_json(session.to_json())
    assert restored == session
    tw.run_turn(provider, restored, tw.resolve_turn(toolset))

    sent = fake_gemini.requests[1]
    validate_requests(fake_gemini)
    model_turn = sent.json["contents"][1]
    assert parts == model_turn["parts"]
    raw = sent.body.decode()
    assert f'"thoughtSignature":"{SIG}"' in raw
    assert f'"thoughtSignature":"{SIG2}"' in raw
    responses = sent.json["contents"][2]["parts"]
    assert 2 == len(responses)
    assert all("id" not in p["functionResponse"] for p in responses)


def test_one_function_response_per_call_in_call_order_with_error_results(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    parts = [
        gemini.function_call_part("get_time", {"zone": "UTC"}, id="a"),
        gemini.function_call_part("no_such_tool", {}, id="b"),
        gemini.function_call_part("get_weather", {"city": "Paris"}, id="c"),
    ]
    provider = make()
    enqueue_generate(fake_gemini, gemini.response(parts))
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("ok")]))

    first = tw.run_turn(provider, session, tw.resolve_turn(toolset))
    assert isinstance(first, tw.NeedsTools)
    results = list(reversed(_results(first.round)))  # any order: commit restores call order
    first.round.commit(results)
    tw.run_turn(provider, session, tw.resolve_turn(toolset))

    sent = validate_requests(fake_gemini)[1]["contents"]
    responses = [p["functionResponse"] for p in sent[2]["parts"]]
    assert ["a", "b", "c"] == [r["id"] for r in responses]
    assert ["get_time", "no_such_tool", "get_weather"] == [r["name"] for r in responses]
    assert {"output": "12:00 in UTC"} == responses[0]["response"]
    assert ["error"] == list(responses[1]["response"])
    assert responses[1]["response"]["error"].startswith("The call was rejected and did not run: ")


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (tw.Requirement.optional(), {"mode": "AUTO"}),
        (tw.Requirement.at_least_one(), {"mode": "ANY"}),
        (
            tw.Requirement.specific("get_time"),
            {"mode": "ANY", "allowedFunctionNames": ["get_time"]},
        ),
    ],
    ids=["optional", "at_least_one", "specific"],
)
def test_requirement_is_sent_as_function_calling_config(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
    requirement: tw.Requirement,
    expected: dict[str, Any],
) -> None:
    provider = make()
    enqueue_generate(
        fake_gemini, gemini.response([gemini.function_call_part("get_time", {"zone": "UTC"})])
    )

    tw.run_turn(provider, session, tw.resolve_turn(toolset, requirement=requirement))

    body = validate_requests(fake_gemini)[0]
    assert {"functionCallingConfig": expected} == body["toolConfig"]
    assert ["get_weather", "get_time"] == [
        d["name"] for d in body["tools"][0]["functionDeclarations"]
    ]


def test_no_tools_sends_neither_tools_nor_tool_config(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], session: tw.Session
) -> None:
    provider = make()
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Hi.")]))

    outcome = tw.run_turn(provider, session, tw.resolve_turn(tw.Toolset("empty", [])))

    assert isinstance(outcome, tw.Finished)
    body = validate_requests(fake_gemini)[0]
    assert "tools" not in body
    assert "toolConfig" not in body


def test_parallel_calls_off_keeps_only_the_first_call(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    session: tw.Session,
) -> None:
    provider = make()
    enqueue_generate(fake_gemini, gemini.response(CALL_PARTS))
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("ok")]))

    first = tw.run_turn(provider, session, tw.resolve_turn(toolset, parallel_calls=False))
    assert isinstance(first, tw.NeedsTools)
    assert ["fc_w"] == [c.id for c in first.round.tool_calls]
    first.round.commit(_results(first.round))
    tw.run_turn(provider, session, tw.resolve_turn(toolset))

    sent = validate_requests(fake_gemini)[1]["contents"]
    assert CALL_PARTS[:1] == sent[1]["parts"]
    assert 1 == len(sent[2]["parts"])


def test_a_turn_from_another_provider_is_rebuilt_with_the_dummy_signature(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset
) -> None:
    call = tw.ToolCall("call_x", "get_time", '{"zone":"UTC"}')
    session = tw.Session("sys").add_user("time?")
    session.extend(
        [
            tw.AssistantMessage("Checking.", (call,)),
            tw.ToolResultsMessage((call.result("12:00"),)),
        ]
    )
    provider = make()
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Noon.")]))

    tw.run_turn(provider, session, tw.resolve_turn(toolset))

    contents = validate_requests(fake_gemini)[0]["contents"]
    assert [
        {"text": "Checking."},
        {
            "functionCall": {"name": "get_time", "args": {"zone": "UTC"}, "id": "call_x"},
            "thoughtSignature": "skip_thought_signature_validator",
        },
    ] == contents[1]["parts"]
    assert "call_x" == contents[2]["parts"][0]["functionResponse"]["id"]


def test_rendered_declarations_are_cached_per_tool_and_description(
    make: Callable[..., GeminiProvider], toolset: tw.Toolset
) -> None:
    provider = make()
    turn = tw.resolve_turn(toolset)
    first = provider._declarations(turn)
    again = provider._declarations(tw.resolve_turn(toolset))
    overridden = provider._declarations(
        tw.resolve_turn(toolset, description_overrides={"get_time": "Other."})
    )

    assert first[0] is again[0]
    assert first[1] is not overridden[1]
    assert "Other." == overridden[1]["description"]
    rendered = provider.render_tools(turn)
    assert [{"functionDeclarations": first}] == rendered
    assert rendered[0]["functionDeclarations"][0] is not first[0]
    schema_key = "parametersJsonSchema" if "parametersJsonSchema" in first[0] else "parameters"
    assert ["city"] == first[0][schema_key]["required"]
    json.dumps(rendered)


def test_schema_target_parameters_uses_the_subset_and_omits_empty_schemas(
    make: Callable[..., GeminiProvider],
) -> None:
    @tw.tool_fn
    def ping() -> str:
        """Ping."""
        return "pong"

    @tw.tool_fn
    def echo(text: str | None = None) -> str:
        """Echo.

        Args:
            text: What to echo.
        """
        return text or ""

    provider = make(schema_target="parameters")
    decls = provider.render_tools(tw.resolve_turn(tw.Toolset("t", [ping, echo])))[0][
        "functionDeclarations"
    ]

    assert {"name": "ping", "description": "Ping."} == decls[0]
    assert "parameters" in decls[1]
    assert "additionalProperties" not in json.dumps(decls)


def test_vertex_paths_and_bearer_token(
    fake_gemini: FakeGemini, toolset: tw.Toolset, session: tw.Session
) -> None:
    fake_gemini.api_key = None  # the fake checks Developer API keys only
    with GeminiProvider(
        "gemini-fake",
        base_url=fake_gemini.base_url,
        project="my-proj",
        location="europe-west4",
        access_token="ya29.fake-token-value",
    ) as provider:
        enqueue_generate(fake_gemini, gemini.response([gemini.text_part("Hi.")]))
        tw.run_turn(provider, session, tw.resolve_turn(toolset))

    request = fake_gemini.last_request
    assert (
        "/v1/projects/my-proj/locations/europe-west4/publishers/google/models/"
        "gemini-fake:generateContent"
    ) == request.path
    assert "Bearer ya29.fake-token-value" == request.header("authorization")
    assert request.header("x-goog-api-key") is None
