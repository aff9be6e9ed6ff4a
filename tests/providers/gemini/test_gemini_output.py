"""Structured output and model settings through the Gemini adapter, over real HTTP.

The answer's schema goes into ``generationConfig`` as ``responseSchema`` (the OpenAPI
subset) when it compiles to it losslessly and as ``responseJsonSchema`` otherwise;
every request body is checked against google-genai's request models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pytest
from _gemini_support import enqueue_generate, enqueue_stream, validate_requests
from fakes import FakeGemini, gemini
from pydantic import BaseModel

import toolwire as tw
from toolwire_gemini import GeminiProvider


class Forecast(BaseModel):
    """A forecast."""

    city: str
    sky: Literal["sunny", "cloudy", "rain"]
    high: float


class Node(BaseModel):
    """A tree (recursive: the OpenAPI subset cannot say it)."""

    label: str
    children: list[Node] = []


ANSWER = '{"city": "Turin", "sky": "sunny", "high": 21.5}'


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_output_goes_into_generation_config(
    fake_gemini: FakeGemini,
    make: Callable[..., GeminiProvider],
    toolset: tw.Toolset,
    stream: bool,
) -> None:
    provider = make(generation_config={"candidateCount": 1})
    if stream:
        enqueue_stream(fake_gemini, gemini.stream_chunks([gemini.text_part(ANSWER)]))
    else:
        enqueue_generate(fake_gemini, gemini.response([gemini.text_part(ANSWER)]))

    result = tw.Agent(provider, toolset, output_type=Forecast, plugins=False).run(
        tw.Session(), "Turin tomorrow?", stream=stream
    )

    assert Forecast(city="Turin", sky="sunny", high=21.5) == result.output
    (body,) = validate_requests(fake_gemini)
    config = body["generationConfig"]
    assert 1 == config["candidateCount"]  # the provider's own config is kept
    assert "application/json" == config["responseMimeType"]
    schema = config.get("responseSchema") or config["responseJsonSchema"]
    assert {"city", "sky", "high"} == set(schema["properties"])
    assert "tools" in body  # tools and a structured answer in one request


def test_a_schema_the_subset_cannot_say_goes_as_json_schema(
    make: Callable[..., GeminiProvider], toolset: tw.Toolset
) -> None:
    provider = make()
    turn = tw.resolve_turn(toolset, output_type=Node)
    config = provider.build_body(tw.Session().add_user("x"), turn)["generationConfig"]
    assert "responseSchema" not in config
    assert "$defs" in config["responseJsonSchema"] or "$ref" in str(config["responseJsonSchema"])
    assert "parametersJsonSchema" == provider.output_compiled(turn).target


def test_schema_target_parameters_forces_response_schema(
    make: Callable[..., GeminiProvider], toolset: tw.Toolset
) -> None:
    provider = make(schema_target="parameters")
    turn = tw.resolve_turn(toolset, output_type=Forecast)
    config = provider.build_body(tw.Session().add_user("x"), turn)["generationConfig"]
    assert "object" == config["responseSchema"]["type"].lower()
    assert "responseJsonSchema" not in config


def test_settings_map_onto_generation_config(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider]
) -> None:
    provider = make(generation_config={"temperature": 1.0, "topK": 5})
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part("ok")]))
    settings = tw.ModelSettings(
        temperature=0.4,
        top_p=0.7,
        max_output_tokens=64,
        stop="##",
        seed=11,
        reasoning_effort="high",
    )
    tw.Agent(provider, tw.Toolset("t", []), plugins=False, settings=settings).run(
        tw.Session(), "hi"
    )
    (body,) = validate_requests(fake_gemini)
    config = body["generationConfig"]
    assert 0.4 == config["temperature"]  # the turn's settings win over the provider's
    assert 5 == config["topK"]
    assert 0.7 == config["topP"]
    assert 64 == config["maxOutputTokens"]
    assert ["##"] == config["stopSequences"]
    assert 11 == config["seed"]
    assert {"thinkingLevel": "HIGH"} == config["thinkingConfig"]


def test_invalid_answer_is_retried(
    fake_gemini: FakeGemini, make: Callable[..., GeminiProvider], toolset: tw.Toolset
) -> None:
    provider = make()
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part('{"city": "Turin"}')]))
    enqueue_generate(fake_gemini, gemini.response([gemini.text_part(ANSWER)]))
    result = tw.Agent(provider, toolset, output_type=Forecast, plugins=False).run(tw.Session(), "?")
    assert "sunny" == result.output.sky
    _, second = validate_requests(fake_gemini)
    assert ["user", "model", "user"] == [c["role"] for c in second["contents"]]
