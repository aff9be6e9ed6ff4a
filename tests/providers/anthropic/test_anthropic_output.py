"""Structured output and model settings through the Anthropic adapter, over real HTTP.

Native (``output_config.format``) for the models that take it, a forced output tool
(``final_result``) otherwise; every request body is checked against the anthropic
SDK's ``MessageCreateParams``.
"""

from __future__ import annotations

import json

import pytest
from _anthropic_support import Make, enqueue, validate_requests
from fakes import FakeAnthropic, anthropic_messages, validate
from pydantic import BaseModel, Field

import toolwire as tw
from toolwire_anthropic import AnthropicProvider
from toolwire_anthropic._provider import supports_native_output
from toolwire_anthropic._schema import compile_anthropic_output


class City(BaseModel):
    """A city."""

    name: str
    population: int = Field(ge=0)


@pytest.mark.parametrize(
    ("model", "native"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-opus-4-1-20250805", False),  # not in the structured-outputs list (#28)
        ("claude-haiku-4-5", True),
        ("claude-opus-4-6", True),
        ("claude-sonnet-5", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-0", False),
        ("claude-3-5-haiku-latest", False),
        ("claude-3-7-sonnet-20250219", False),
        ("my-gateway-alias", False),
    ],
)
def test_which_models_take_native_output(model: str, native: bool) -> None:
    assert native is supports_native_output(model)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_native_output(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset, stream: bool
) -> None:
    provider = make(model="claude-sonnet-4-5")
    enqueue(
        fake_anthropic,
        anthropic_messages.text_message('{"name": "Oslo", "population": 700000}'),
        stream=stream,
    )
    result = tw.Agent(provider, toolset, output_type=City, plugins=False).run(
        tw.Session(), "Capital of Norway?", stream=stream
    )
    assert City(name="Oslo", population=700000) == result.output
    (body,) = validate_requests(fake_anthropic)
    fmt = body["output_config"]["format"]
    assert "json_schema" == fmt["type"]
    schema = fmt["schema"]
    assert schema["additionalProperties"] is False
    # The grammar does not enforce minimum: it is moved into the description.
    assert "minimum" not in schema["properties"]["population"]
    assert "minimum: 0" in schema["properties"]["population"]["description"]
    assert "final_result" not in json.dumps(body.get("tools", []))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_tool_mode_output_without_tools(
    fake_anthropic: FakeAnthropic, make: Make, stream: bool
) -> None:
    provider = make(model="claude-3-5-haiku-latest")
    enqueue(
        fake_anthropic,
        anthropic_messages.tool_use_message(("final_result", {"name": "Bern", "population": 1})),
        stream=stream,
    )
    session = tw.Session()
    result = tw.Agent(provider, tw.Toolset("none", []), output_type=City, plugins=False).run(
        session, "Capital of Switzerland?", stream=stream
    )
    assert City(name="Bern", population=1) == result.output
    (body,) = validate_requests(fake_anthropic)
    assert ["final_result"] == [t["name"] for t in body["tools"]]
    assert {"type": "tool", "name": "final_result"} == body["tool_choice"]
    assert "output_config" not in body
    # The answer is the session's last assistant text; no tool_use waits for a result.
    last = session.last
    assert isinstance(last, tw.AssistantMessage)
    assert not last.tool_calls
    assert {"name": "Bern", "population": 1} == json.loads(last.text)


def test_tool_mode_with_tools_forces_some_tool_then_answers(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset
) -> None:
    provider = make(structured_output="tool", model="claude-sonnet-4-5")
    enqueue(
        fake_anthropic,
        anthropic_messages.tool_use_message(("get_weather", {"city": "Rome"})),
        stream=False,
    )
    enqueue(
        fake_anthropic,
        anthropic_messages.tool_use_message(("final_result", {"name": "Rome", "population": 3})),
        stream=False,
    )
    result = tw.Agent(provider, toolset, output_type=City, plugins=False).run(
        tw.Session(), "Weather in Rome, then the city?"
    )
    assert "Rome" == result.output.name
    assert 1 == result.rounds
    first, second = validate_requests(fake_anthropic)
    assert {"type": "any"} == first["tool_choice"]
    assert "final_result" == first["tools"][-1]["name"]
    assert "get_weather" == first["tools"][0]["name"]
    assert {"type": "any"} == second["tool_choice"]


def test_a_tool_named_like_the_output_tool_is_refused(make: Make) -> None:
    @tw.tool_fn
    def final_result(x: int) -> str:
        """Clash."""
        return ""

    provider = make(structured_output="tool")
    turn = tw.resolve_turn(tw.Toolset("t", [final_result]), output_type=City)
    with pytest.raises(tw.exceptions.UsageError, match="final_result"):
        provider.build_body(tw.Session().add_user("x"), turn, stream=False)


def test_invalid_native_answer_goes_back_with_the_errors(
    fake_anthropic: FakeAnthropic, make: Make, toolset: tw.Toolset
) -> None:
    provider = make(model="claude-opus-4-5")
    enqueue(fake_anthropic, anthropic_messages.text_message('{"name": "X"}'), stream=False)
    enqueue(
        fake_anthropic,
        anthropic_messages.text_message('{"name": "X", "population": 5}'),
        stream=False,
    )
    result = tw.Agent(provider, toolset, output_type=City, plugins=False).run(tw.Session(), "?")
    assert 5 == result.output.population
    _, second = validate_requests(fake_anthropic)
    assert ["user", "assistant", "user"] == [m["role"] for m in second["messages"]]
    assert "population: Field required" in json.dumps(second["messages"][2])


def test_output_compiler_reports_what_the_grammar_cannot_enforce() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "when": {"type": "string", "format": "date-time"},
            "ip": {"type": "string", "format": "ipv4"},
            "odd": {"type": "string", "format": "color"},
            "any": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
            "open": {"type": "object", "properties": {}, "additionalProperties": True},
        },
        "required": ["tags"],
    }
    out, report = compile_anthropic_output(schema, name="T")
    props = out["properties"]
    assert "minItems" not in props["tags"]
    assert "date-time" == props["when"]["format"]
    assert "ipv4" == props["ip"]["format"]
    assert "format" not in props["odd"]
    assert "anyOf" in props["any"]
    assert "oneOf" not in props["any"]
    assert props["open"]["additionalProperties"] is False
    kinds = {(c.path, c.kind, c.severity) for c in report.changes}
    assert ("/properties/tags", "described_keyword", "warning") in kinds
    assert ("/properties/odd", "described_keyword", "warning") in kinds
    assert ("/properties/any", "rewrote_union", "warning") in kinds
    assert ("/properties/open", "closed_object", "warning") in kinds
    assert ("", "closed_object", "info") in kinds
    assert "output_config.format" == report.target


# -- model settings ---------------------------------------------------------------------


def test_settings_map_onto_messages_fields(fake_anthropic: FakeAnthropic, make: Make) -> None:
    # A model that takes temperature and top_p together and the effort parameter (by the
    # profile an application gives it: the shipped ones take one or the other, #28).
    tw.profiles.register_profile(
        tw.profiles.ModelProfile(
            provider="anthropic",
            family="a test family",
            match=("claude-test-*",),
            reasoning_efforts=("low", "medium", "high"),
            seed=False,
        )
    )
    provider = make(model="claude-test-1")
    enqueue(fake_anthropic, anthropic_messages.text_message("ok"), stream=False)
    settings = tw.ModelSettings(
        temperature=0.2,
        top_p=0.8,
        max_output_tokens=321,
        stop=["STOP", "END"],
        reasoning_effort="medium",
    )
    tw.Agent(provider, tw.Toolset("t", []), plugins=False, settings=settings).run(
        tw.Session(), "hi"
    )
    body = fake_anthropic.requests[0].json
    # Sampling parameters exist under API version 2023-06-01 (the adapter's), not under the
    # 2.x SDK's 2026-10-21: the rest of the body is checked against the SDK's types.
    assert 0.2 == body.pop("temperature")
    assert 0.8 == body.pop("top_p")
    validate.validate_anthropic_request(body)
    assert 321 == body["max_tokens"]
    assert ["STOP", "END"] == body["stop_sequences"]
    assert {"effort": "medium"} == body["output_config"]


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        (tw.ModelSettings(seed=1), "take no seed"),
        (tw.ModelSettings(seed=1, stop="x"), "cannot take ModelSettings.seed"),
        (tw.ModelSettings(temperature=1.5), "between 0 and 1"),
        (tw.ModelSettings(reasoning_effort="minimal"), "take reasoning_effort low, medium, high"),
        (tw.ModelSettings(temperature=0.5), "version 2026-10-21 has no request field"),
        (tw.ModelSettings(top_p=0.5), "version 2026-10-21 has no request field"),
    ],
)
def test_settings_anthropic_cannot_take_are_refused(
    fake_anthropic: FakeAnthropic, make: Make, settings: tw.ModelSettings, match: str
) -> None:
    version = "2026-10-21" if "2026" in match else None
    provider = make(anthropic_version=version)
    turn = tw.resolve_turn(tw.Toolset("t", []), settings=settings)
    with pytest.raises(tw.exceptions.UsageError, match=match):
        tw.run_turn(provider, tw.Session().add_user("hi"), turn)
    assert [] == fake_anthropic.requests


def test_max_output_tokens_must_exceed_the_thinking_budget(make: Make) -> None:
    provider: AnthropicProvider = make(thinking=2048, max_tokens=4096)
    turn = tw.resolve_turn(tw.Toolset("t", []), settings=tw.ModelSettings(max_output_tokens=1000))
    with pytest.raises(tw.exceptions.UsageError, match="thinking budget"):
        provider.build_body(tw.Session().add_user("x"), turn, stream=False)
